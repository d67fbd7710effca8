"""The ``ctxbudget`` command line."""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ctxbudget.demo import print_demo
from ctxbudget.errors import BinaryContentError
from ctxbudget.messages import MessageFormatError
from ctxbudget.report import (
    DEFAULT_MODEL,
    inspect_conversation,
    load_conversation,
    print_inspection,
)
from ctxbudget.tokens import DEFAULT_ENCODING, ENCODINGS, estimate_tokens
from ctxbudget.tool_output import validate_text

__all__ = ["main"]


@dataclass(frozen=True, slots=True)
class _Counted:
    name: str
    size: int
    tokens: dict[str, int]


def _sample_paths() -> list[Path]:
    root = resources.files("ctxbudget") / "samples"
    return sorted(Path(str(entry)) for entry in root.iterdir() if entry.is_file())


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    return Path(name).read_bytes()


def _display(name: str) -> str:
    """``name`` printable on any stdout: undecodable file-name bytes shown as ``\\xff``, and
    characters the output's encoding lacks (an ASCII or cp1252 stdout) as ``\\xe9``."""
    text = os.fsencode(name).decode(sys.getfilesystemencoding(), "backslashreplace")
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding Python does not know: the name as it is
        return text


def _cut_character(data: bytes, err: BinaryContentError) -> bool:
    """True when ``err`` is only an incomplete UTF-8 character at the very end of ``data``.

    ``head -c`` and other byte limits cut text mid-character; that is still text.
    """
    if err.reason != "invalid_utf8":
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(memoryview(data)[err.offset :], final=False)
    except UnicodeDecodeError:
        return False
    return True


def _count_one(name: str, data: bytes, encodings: Sequence[str]) -> _Counted:
    try:
        validate_text(data)
    except BinaryContentError as err:
        if not _cut_character(data, err):
            raise
        print(
            f"ctxbudget: {name}: note: ends in an incomplete UTF-8 character "
            f"({len(data) - err.offset} of its bytes), counted as it is",
            file=sys.stderr,
        )
    return _Counted(name, len(data), {enc: estimate_tokens(data, enc) for enc in encodings})


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
            rows.append(_count_one(label, _read(name), encodings))
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
    inspect.add_argument("file", nargs="?", help="JSON: a list of messages, or a request body")
    inspect.add_argument("--sample", action="store_true", help="the bundled agent session")
    inspect.add_argument("--model", help=f"model (default: the file's, else {DEFAULT_MODEL})")
    inspect.add_argument("--window", type=int, help="context window (default: the model's)")
    inspect.add_argument("--max-tokens", type=int, help="the request's output cap")
    inspect.set_defaults(run=_inspect)
    demo = commands.add_parser(
        "demo", help="replay a bundled agent run through ContextGuard and show each decision"
    )
    demo.add_argument("--window", type=int, default=16_000, help="context window (16000)")
    demo.add_argument("--model", default="gpt-4o", help="model (gpt-4o)")
    demo.set_defaults(run=lambda args: print_demo(args.window, args.model))
    return parser


def _inspect(args: argparse.Namespace) -> int:
    if args.sample == bool(args.file):
        print("ctxbudget inspect: give a FILE or --sample", file=sys.stderr)
        return 2
    path = _sample_paths_named("agent_session.json") if args.sample else Path(args.file)
    name = "samples/agent_session.json" if args.sample else _display(args.file)
    try:
        conv = load_conversation(path, args.model)
        ins = inspect_conversation(conv, window=args.window, max_tokens=args.max_tokens)
    except (OSError, ValueError, KeyError, TypeError, RecursionError, MessageFormatError) as err:
        # A file that is not a request (tools: 5, JSON nested past what Python reads, ...).
        print(f"ctxbudget inspect: {name}: {err}", file=sys.stderr)
        return 1
    print_inspection(ins, name)
    return 0


def _sample_paths_named(name: str) -> Path:
    return next(p for p in _sample_paths() if p.name == name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (1 when a file could not be counted)."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
