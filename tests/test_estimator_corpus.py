"""The estimator's corpus (benches/estimator/corpus.py) is the same however we are installed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches" / "estimator"))
import corpus


def test_files_leave_ctxbudget_itself_out(tmp_path: Path) -> None:
    # A site-packages whose own path has our name in it: only what lies under it counts.
    root = tmp_path / "ctxbudget-venv" / "site-packages"
    for rel in (
        "ctxbudget/__init__.py",  # a wheel's modules
        "ctxbudget/samples/notes.py",
        "ctxbudget-0.1.0.dist-info/METADATA",  # any install's metadata, with our README
        "other/mod.py",
        "other-1.0.dist-info/METADATA",
        "ctxbudget_contrib/mod.py",  # someone else's package
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    found = corpus._files(root, ("*.py", "METADATA"))
    assert sorted(p.relative_to(root).as_posix() for p in found) == [
        "ctxbudget_contrib/mod.py",
        "other-1.0.dist-info/METADATA",
        "other/mod.py",
    ]
