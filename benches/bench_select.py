"""select_largest on a million sizes: few chosen, half chosen, everything chosen."""

from __future__ import annotations

import numpy as np
import pytest

from ctxbudget import select_largest

N = 1_000_000


@pytest.fixture(scope="module")
def sizes() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 50_000, size=N, dtype=np.int64)


@pytest.mark.parametrize("fraction", [0.01, 0.5, 1.5])
def test_select_largest_numpy(benchmark, sizes: np.ndarray, fraction: float) -> None:
    benchmark.group = "select-1e6"
    need = int(sizes.sum() * fraction)
    selection = benchmark(select_largest, sizes, need)
    assert (selection.shortfall > 0) == (fraction > 1)


def test_select_largest_list(benchmark, sizes: np.ndarray) -> None:
    benchmark.group = "select-1e6"
    as_list = sizes.tolist()
    benchmark(select_largest, as_list, int(sizes.sum() * 0.01))


def test_numpy_argsort_baseline(benchmark, sizes: np.ndarray) -> None:
    """What a caller would write in numpy: a stable sort of every size, descending."""
    benchmark.group = "select-1e6"
    benchmark(lambda: np.argsort(-sizes, kind="stable"))
