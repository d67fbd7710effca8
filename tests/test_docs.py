"""The ``>>>`` examples in the public docstrings hold as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ctxbudget",
    "ctxbudget.call_ids",
    "ctxbudget.counting",
    "ctxbudget.errors",
    "ctxbudget.guard",
    "ctxbudget.overflow",
    "ctxbudget.pairing",
    "ctxbudget.result_placement",
    "ctxbudget.selection",
    "ctxbudget.tokens",
    "ctxbudget.text",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
