"""The ``>>>`` examples of the tool-output modules hold as written.

(``tests/test_docs.py`` runs ``ctxbudget.tool_output``, whose doctest search skips the
functions re-exported there from these modules.)
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from ctxbudget import spill as spill_module
from ctxbudget.spill import DirectorySpillStore

MODULES = ["ctxbudget.documents", "ctxbudget.truncate", "ctxbudget.spill"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill_module, "_default_store", DirectorySpillStore(tmp_path))
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
