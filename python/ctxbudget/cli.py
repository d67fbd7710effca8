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

from ctxbudget.errors import BinaryContentError
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
    """``name`` printable on any stdout: undecodable file-name bytes shown as ``\\xff``."""
    return os.fsencode(name).decode(sys.getfilesystemencoding(), "backslashreplace")


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (1 when a file could not be counted)."""
    args = _parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
