"""validate_pairing on 100,000 events (50,000 call/result pairs, a few violations)."""

from __future__ import annotations

import pytest

from ctxbudget import EventKind, validate_pairing
from tests import reference


@pytest.fixture(scope="module")
def events() -> list[tuple[int, EventKind, str]]:
    out: list[tuple[int, EventKind, str]] = []
    for i in range(50_000):
        out.append((2 * i, EventKind.CALL, f"call_{i:06d}"))
        if i % 10_000 != 3:  # a few calls left unanswered
            out.append((2 * i + 1, EventKind.RESULT, f"call_{i:06d}"))
    return out


def test_validate_pairing_1e5(benchmark, events) -> None:
    benchmark.group = "pairing-1e5"
    violations = benchmark(validate_pairing, events)
    assert len(violations) == 5


def test_python_reference_baseline(benchmark, events) -> None:
    benchmark.group = "pairing-1e5"
    raw = [(p, int(k), c) for p, k, c in events]
    benchmark.pedantic(reference.validate_pairing, args=(raw,), rounds=3)
