"""The ``ctxbudget`` command line."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from ctxbudget._core import TextStream
from ctxbudget._types import BytesLike
from ctxbudget.byte_order import UTF8_BOM, Utf16Decoder, is_utf16
from ctxbudget.demo import MIN_WINDOW, print_demo
from ctxbudget.errors import BinaryContentError
from ctxbudget.messages import MessageFormatError
from ctxbudget.report import (
    DEFAULT_MODEL,
    Conversation,
    inspect_conversation,
    load_conversation,
    parse_conversation,
    print_inspection,
    printable,
)
from ctxbudget.text import cut_at_end
from ctxbudget.tokens import DEFAULT_ENCODING, ENCODINGS
from ctxbudget.tool_output import validate_text

__all__ = ["STREAM_LIMIT", "main"]

#: Most bytes ``inspect`` reads from stdin into memory (``count`` reads any input in chunks,
#: whatever its size).
STREAM_LIMIT = 256 * 2**20
#: Bytes read at a time; each chunk is checked for binary data before more is read.
_CHUNK = 2**20


@dataclass(frozen=True, slots=True)
class _Counted:
    name: str
    size: int
    tokens: dict[str, int]


def _sample_paths() -> list[Path]:
    root = resources.files("ctxbudget") / "samples"
    return sorted(Path(str(entry)) for entry in root.iterdir() if entry.is_file())


class _TooLong(Exception):
    """A stream longer than :data:`STREAM_LIMIT`."""


def _open_input(name: str) -> contextlib.AbstractContextManager[BinaryIO]:
    """File ``name`` opened for reading, or stdin for ``-`` (left open).

    Raises:
        OSError: It cannot be opened (a closed stdin: ``EBADF``).
    """
    if name != "-":
        return open(name, "rb")
    if sys.stdin is None:  # closed (`<&-`): Python then has no stdin at all
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    return contextlib.nullcontext(sys.stdin.buffer)


def _counted(file: BinaryIO, encodings: Sequence[str]) -> tuple[int, list[int], int]:
    """``file`` read to its end in chunks, checked as text and estimated in each of
    ``encodings`` as it comes (:class:`ctxbudget._core.TextStream`): memory stays at a chunk
    and a short tail whatever the size, and binary data is refused from the chunk that shows
    it (``/dev/zero`` at once). Files are read, not mapped: a file truncated meanwhile (a log
    rotated by ``copytruncate``) ends the count early instead of killing the process with
    ``SIGBUS``. What is counted is the text :func:`ctxbudget.read_tool_file` gives the model:
    without a UTF-8 byte order mark, and UTF-16 (with its mark) decoded. Returns ``(bytes of
    the file, tokens per encoding, bytes of an unfinished UTF-8 character at the end)``;
    stdin is left at its end, as ``wc`` leaves it.

    Raises:
        OSError: It cannot be read.
        BinaryContentError: It is not text (the offset counted from where reading began).
    """
    stream = TextStream(list(encodings))
    first = file.read(_CHUNK)
    if is_utf16(first):
        return _counted_utf16(file, first, stream)
    # The text read_tool_file gives the model: a UTF-8 byte order mark is not part of it.
    mark = len(UTF8_BOM) if first.startswith(UTF8_BOM) else 0
    chunk = first[mark:]
    try:
        while chunk:
            stream.feed(chunk)
            chunk = file.read(_CHUNK)
    except BinaryContentError as err:
        raise _moved(err, mark) from None
    size, tokens, cut = stream.finish()
    return size + mark, tokens, cut


def _counted_utf16(file: BinaryIO, first: bytes, stream: TextStream) -> tuple[int, list[int], int]:
    """:func:`_counted` of UTF-16 text: its decoded text, counted as UTF-8."""
    decoder = Utf16Decoder()
    size, chunk = 0, first
    while True:
        stream.feed(decoder.decode(chunk, final=not chunk).encode("utf-8"))
        size += len(chunk)
        if not chunk:
            break
        chunk = file.read(_CHUNK)
    _, tokens, _ = stream.finish()
    return size, tokens, 0


def _moved(err: BinaryContentError, by: int) -> BinaryContentError:
    """``err`` with its offset counted ``by`` bytes further (from the start of the file)."""
    if not by:
        return err
    offset = err.offset + by
    message = err.message.replace(f"byte offset {err.offset}", f"byte offset {offset}")
    return BinaryContentError(message, offset, err.reason, err.detected_type)


def _read_stream(file: BinaryIO) -> bytearray:
    """All of ``file`` (stdin given to ``inspect``), up to :data:`STREAM_LIMIT` bytes; the first
    chunk is checked for binary data before more is read.

    Raises:
        OSError: It cannot be read.
        BinaryContentError: It starts with binary data.
        _TooLong: It is longer than the limit.
    """
    data = bytearray()
    while chunk := file.read(_CHUNK):
        if len(data) + len(chunk) > STREAM_LIMIT:
            raise _TooLong
        data += chunk
        if len(data) == len(chunk):  # the first chunk: refuse binary data before reading on
            _check_text(data)
    return data


def _check_text(data: BytesLike) -> BinaryContentError | None:
    """Raise :class:`BinaryContentError` unless ``data`` is text, or text cut mid-character at
    its end (then returned, for a note)."""
    try:
        validate_text(data)
    except BinaryContentError as err:
        if not cut_at_end(data, err):
            raise
        return err
    return None


def _display(name: str) -> str:
    """``name`` printable on any stdout: undecodable file-name bytes shown as ``\\xff``,
    control characters as ``\\x1b``, ``\\n``, and characters the output's encoding lacks
    (an ASCII or cp1252 stdout) as ``\\xe9``."""
    return printable(os.fsencode(name).decode(sys.getfilesystemencoding(), "backslashreplace"))


def _count_one(name: str, file: BinaryIO, encodings: Sequence[str]) -> _Counted:
    size, tokens, cut = _counted(file, encodings)
    if cut:
        print(
            f"ctxbudget: {name}: note: ends in an incomplete UTF-8 character "
            f"({cut} of its bytes), counted as it is",
            file=sys.stderr,
        )
    return _Counted(name, size, dict(zip(encodings, tokens, strict=True)))


def _print_table(rows: list[_Counted], encodings: Sequence[str]) -> None:
    headers = [*encodings, "bytes", "file"]
    cells = [[*(str(r.tokens[e]) for e in encodings), str(r.size), r.name] for r in rows]
    if len(rows) > 1:
        total = [str(sum(r.tokens[e] for r in rows)) for e in encodings]
        cells.append([*total, str(sum(r.size for r in rows)), "total"])
    widths = [max(len(row[i]) for row in [headers, *cells]) for i in range(len(headers) - 1)]
    for row in [headers, *cells]:
        numbers = "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=False))
        print(f"{numbers}  {row[-1]}")


def _count(args: argparse.Namespace) -> int:
    encodings = list(ENCODINGS) if args.encoding == "all" else [args.encoding]
    if args.samples:
        named = [(str(path), f"samples/{path.name}") for path in _sample_paths()]
    else:
        named = [
            (name, "(stdin)" if name == "-" else _display(name)) for name in args.files or ["-"]
        ]
    rows: list[_Counted] = []
    failed = False
    for name, label in named:
        try:
            with _open_input(name) as file:
                rows.append(_count_one(label, file, encodings))
        except BinaryContentError as err:
            kind = err.detected_type or "binary data"
            print(f"ctxbudget: {label}: skipped, not text ({kind}): {err}", file=sys.stderr)
            failed = True
        except OSError as err:
            print(f"ctxbudget: {label}: {err.strerror or err}", file=sys.stderr)
            failed = True
    if rows:
        _print_table(rows, encodings)
    return 1 if failed else 0


def _whole_number(minimum: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer, ``minimum`` or more."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:,}{why}, not {text}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxbudget", description="Token budgets for LLM agent requests."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    count = commands.add_parser(
        "count", help="estimate tokens per file, like wc for tokens (stdin when no file)"
    )
    count.add_argument("files", nargs="*", help="files to count; '-' or none reads stdin")
    count.add_argument(
        "-e",
        "--encoding",
        default=DEFAULT_ENCODING,
        choices=[*ENCODINGS, "all"],
        help=f"tokenizer encoding to estimate (default {DEFAULT_ENCODING}; 'all' for every one)",
    )
    count.add_argument(
        "--samples", action="store_true", help="count the sample files bundled with ctxbudget"
    )
    count.set_defaults(run=_count)
    inspect = commands.add_parser(
        "inspect", help="a conversation JSON: what it costs, what pruning would make of it"
    )
    inspect.add_argument(
        "file", nargs="?", help="JSON: a list of messages, or a request body ('-': stdin)"
    )
    inspect.add_argument("--sample", action="store_true", help="the bundled agent session")
    inspect.add_argument("--model", help=f"model (default: the file's, else {DEFAULT_MODEL})")
    inspect.add_argument(
        "--window", type=_whole_number(1), help="context window (default: the model's)"
    )
    inspect.add_argument(
        "--max-tokens", type=_whole_number(1), help="the request's output cap (default: the body's)"
    )
    inspect.set_defaults(run=_inspect)
    demo = commands.add_parser(
        "demo", help="replay a bundled agent run through ContextGuard and show each decision"
    )
    demo.add_argument(
        "--window",
        type=_whole_number(MIN_WINDOW, " (the demo's run does not fit a smaller one)"),
        default=16_000,
        help=f"context window (16000; {MIN_WINDOW} or more)",
    )
    demo.add_argument("--model", default="gpt-4o", help="model (gpt-4o)")
    demo.set_defaults(run=lambda args: print_demo(args.window, args.model))
    return parser


def _inspect(args: argparse.Namespace) -> int:
    if args.sample == bool(args.file):
        which = "not both" if args.sample else "one of them"
        print(f"ctxbudget inspect: give a FILE or --sample ({which})", file=sys.stderr)
        return 2
    name = "samples/agent_session.json" if args.sample else _display(args.file)
    if args.file == "-":
        name = "(stdin)"
    try:
        conv = _conversation(args)
        ins = inspect_conversation(conv, window=args.window, max_tokens=args.max_tokens)
    except OSError as err:
        print(f"ctxbudget inspect: {name}: {err.strerror or err}", file=sys.stderr)
        return 1
    except _TooLong:
        print(
            f"ctxbudget inspect: {name}: more than {STREAM_LIMIT:,} bytes, the most read from a"
            " pipe or device: save it to a file and inspect the file",
            file=sys.stderr,
        )
        return 1
    except (ValueError, KeyError, TypeError, RecursionError, MessageFormatError) as err:
        # A file that is not a request (tools: 5, JSON nested past what Python reads, ...).
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"ctxbudget inspect: {name}: {message}", file=sys.stderr)
        return 1
    print_inspection(ins, name)
    return 0


def _conversation(args: argparse.Namespace) -> Conversation:
    """The conversation ``inspect`` was given: the sample, a file, or stdin (``-``, as for
    ``count``: a body piped from ``curl`` or ``jq``)."""
    if args.sample:
        return load_conversation(_sample_paths_named("agent_session.json"), args.model)
    if args.file != "-" and stat.S_ISREG(os.stat(args.file).st_mode):
        return load_conversation(Path(args.file), args.model)
    # stdin, or a pipe or device named (`<(jq ...)`, /dev/zero): read up to the limit, and
    # refused at its first chunk when that is not text
    with _open_input(args.file) as file:
        return parse_conversation(bytes(_read_stream(file)), args.model)


def _sample_paths_named(name: str) -> Path:
    return next(p for p in _sample_paths() if p.name == name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (1 when a file could not be counted or the
    output could not be written, a full disk or a closed stdout; 141,
    as for a tool SIGPIPE stopped, when the output's reader went away; 130 on Ctrl-C)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "count" and args.samples and args.files:
        parser.error("count: --samples counts the bundled samples; give it no FILES")
    if sys.stdout is None:  # closed (`>&-`): refuse, as `wc` does, rather than work for nothing
        return _output_failed(OSError(errno.EBADF, os.strerror(errno.EBADF)))
    try:
        code: int = args.run(args)
        if sys.stdout is not None:
            sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:  # the reader went away (`| head`)
        _silence_stdout()
        if hasattr(signal, "SIGPIPE"):
            return 128 + signal.SIGPIPE  # the status a shell gives `cat`, `wc` stopped by it
        return 1
    except OSError as err:  # the output cannot be written (a full disk: `> /dev/full`)
        return _output_failed(err)
    except KeyboardInterrupt:  # Ctrl-C is the user's choice, not a crash: no traceback
        print(file=sys.stderr)  # end the line the terminal's ^C was echoed on
        return 128 + signal.SIGINT  # 130, the status a shell gives a command Ctrl-C stopped
    return code


def _output_failed(err: OSError) -> int:
    """Say that the output could not be written (the only ``OSError`` the commands leave
    uncaught: they report their input's own), and return the exit code, 1."""
    print(f"ctxbudget: cannot write the output: {err.strerror or err}", file=sys.stderr)
    _silence_stdout()
    return 1


def _silence_stdout() -> None:
    """Point stdout at the null device: what is still buffered for it is then dropped at exit
    instead of failing again (the recipe of Python's `signal` docs)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (replaced, captured)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
