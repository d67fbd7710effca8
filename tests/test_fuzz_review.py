"""Bad inputs found by fuzzing the public API (SPEC I1): each gets a clear exception, or is
read as what it plainly means, never a silent nonsense result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxbudget import (
    CalibrationTracker,
    ContextBudgetError,
    ContextGuard,
    ContextWindowBudget,
    MessageFormatError,
    RequestEstimator,
    estimate_request,
)
from ctxbudget.spill import DirectorySpillStore

BIG = [{"role": "user", "content": "word " * 200_000}]  # about 200k tokens


@pytest.mark.parametrize("name", ["o200k", "gpt-4o", "cl100k_base"])
def test_a_counter_given_by_name_counts_as_that_encoding(name: str) -> None:
    """A name is read as ``counter_for`` reads it (its ``str.count`` was taken for a counter:
    every text counted 0, and the guard sent 200k tokens to a 128k model)."""
    by_name = estimate_request(BIG, model="gpt-4o", counter=name)
    assert by_name.components.conversation > 190_000
    with pytest.raises(ContextBudgetError):
        ContextGuard("gpt-4o", counter=name).send(lambda r: {}, BIG)


def test_a_counter_given_as_a_path_reads_the_tokenizer_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        estimate_request(BIG, counter=tmp_path / "tokenizer.json")
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        estimate_request(BIG, counter=str(tmp_path / "tokenizer.json"))


@pytest.mark.parametrize("counter", [["x"], ("x",), b"o200k", {"x": 1}, {"x"}])
def test_a_container_is_no_counter(counter: Any) -> None:
    with pytest.raises(TypeError, match="counter must be"):
        estimate_request(BIG, counter=counter)
    with pytest.raises(TypeError, match="counter must be"):
        RequestEstimator("gpt-4o", counter=counter)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: CalibrationTracker("gpt-4o", cold_margin=-1), ValueError, "cold_margin"),
        (lambda: CalibrationTracker("gpt-4o", cold_margin=None), TypeError, "cold_margin"),
        (lambda: CalibrationTracker("gpt-4o", min_delta=-5), ValueError, "min_delta"),
        (lambda: CalibrationTracker("gpt-4o", prior_weight=float("nan")), ValueError, "prior"),
        (lambda: CalibrationTracker("gpt-4o", window=2.5), TypeError, "window"),
        (lambda: ContextWindowBudget(1_000, margin=None), TypeError, "margin"),  # type: ignore[arg-type]
        (lambda: ContextWindowBudget(1_000, margin=float("nan")), TypeError, "margin"),  # type: ignore[arg-type]
        (lambda: ContextWindowBudget(1_000, max_input=float("nan")), TypeError, "max_input"),  # type: ignore[arg-type]
        (lambda: ContextWindowBudget(1_000, reserved_output=0.5), TypeError, "reserved_output"),  # type: ignore[arg-type]
        (lambda: ContextWindowBudget(1_000, reserved_output=True), TypeError, "reserved_output"),
        (
            lambda: ContextWindowBudget(1_000, max_reserve_fraction=float("nan")),
            ValueError,
            "max_reserve_fraction",
        ),
    ],
)
def test_numeric_settings_are_checked_by_name(make: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make()


def test_a_negative_cold_margin_no_longer_makes_a_negative_estimate() -> None:
    """``cold_margin=-2`` gave a total of -58; -1 made every cold estimate 0, and the guard
    sent 200k tokens to a 128k model. Margins above -1 still lower the estimate."""
    low = CalibrationTracker("gpt-4o", cold_margin=-0.5).estimate(BIG).total
    assert 0 < low < estimate_request(BIG, model="gpt-4o").total


@pytest.mark.parametrize(
    ("setting", "value", "error"),
    [
        ("max_total_bytes", "10", TypeError),
        ("max_total_bytes", -1, ValueError),
        ("max_age_seconds", float("nan"), ValueError),
        ("max_age_seconds", -3, ValueError),
        ("min_age_seconds", None, TypeError),
    ],
)
def test_spill_store_limits_are_checked_by_name(
    tmp_path: Path, setting: str, value: Any, error: type
) -> None:
    with pytest.raises(error, match=setting):
        DirectorySpillStore(tmp_path, **{setting: value})


def test_langchain_content_blocks_without_a_type_name_the_message() -> None:
    """LangChain takes ``content=[{"text": ...}]``, then fails on it with a bare
    ``KeyError: 'type'`` inside its converter."""
    lc = pytest.importorskip("langchain_core.messages")
    history = [lc.HumanMessage("hi"), lc.AIMessage(content=[{"text": "hello"}])]
    for estimate in (estimate_request, RequestEstimator("gpt-4o").estimate):
        with pytest.raises(MessageFormatError, match="message 1, field 'content'") as caught:
            estimate(history)
        assert isinstance(caught.value.__cause__, KeyError)


def test_whole_numbers_given_as_floats_or_decimals_are_settings() -> None:
    """``margin=2e4`` worked before the checks: a whole number is one, kept as an int."""
    import decimal

    budget = ContextWindowBudget(128_000, margin=2e4, reserved_output=4096.0)  # type: ignore[arg-type]
    assert (budget.margin, budget.reserved_output) == (20_000, 4_096)
    assert isinstance(budget.margin, int) and isinstance(budget.reserved_output, int)
    ContextWindowBudget(128_000, max_reserve_fraction=decimal.Decimal("0.25"))  # type: ignore[arg-type]
    assert CalibrationTracker("gpt-4o", min_delta=16.0).min_delta == 16  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="margin"):
        ContextWindowBudget(128_000, margin=2.5)  # type: ignore[arg-type]


def test_decimal_settings_are_kept_as_floats() -> None:
    """A ``Decimal`` margin was accepted, then failed inside an estimate (float + Decimal)."""
    import decimal

    tracker = CalibrationTracker(
        "gpt-4o",
        cold_margin=decimal.Decimal("0.1"),
        prior_weight=decimal.Decimal("2000"),
        clamp=(decimal.Decimal("0.5"), decimal.Decimal("2")),  # type: ignore[arg-type]
    )
    assert tracker.estimate(BIG).total > 200_000
    budget = ContextWindowBudget(128_000, max_reserve_fraction=decimal.Decimal("0.25"))  # type: ignore[arg-type]
    assert budget.reserve(None) <= 32_000
