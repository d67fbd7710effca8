"""Reading a corpus laid out as ``DIR/<class>/*.txt`` (UTF-8), for ``accuracy.py`` and
``speed.py --corpus``: every class folder that is not hidden, every ``.txt`` file in it, read
as stored (CRLF line ends kept: they are part of what is counted). A file that cannot be read
as UTF-8 text stops the run with its path and the reason, not a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sized
from pathlib import Path
from typing import TypeVar

T = TypeVar("T", bound=Sized)


class CorpusError(Exception):
    """A corpus that cannot be read: the path at fault and why."""


def read_corpus(root: Path) -> list[tuple[str, str, str]]:
    """(class, ``class/file`` name, text) for every ``root/<class>/*.txt``, sorted; empty
    files included (callers that cannot use them say so).

    Raises:
        CorpusError: ``root`` is no directory, or a ``.txt`` file is not readable UTF-8.
    """
    if not root.is_dir():
        raise CorpusError(f"{root}: no such directory")
    docs = []
    for cls_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(cls_dir.glob("*.txt")):
            try:
                text = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path}: not UTF-8 at byte {exc.start}") from exc
            except OSError as exc:
                raise CorpusError(f"{path}: {exc.strerror or exc}") from exc
            docs.append((cls_dir.name, f"{cls_dir.name}/{path.name}", text))
    return docs


def loaded(load: Callable[[], T], where: Path | None) -> T | None:
    """``load()``, or ``None`` when it raised :class:`CorpusError` or found no non-empty file
    (said on stderr: the command then exits with 2)."""
    try:
        found = load()
    except CorpusError as exc:
        print(exc, file=sys.stderr)
        return None
    if not found:
        print(f"no non-empty DIR/<class>/*.txt files under {where}", file=sys.stderr)
        return None
    return found
