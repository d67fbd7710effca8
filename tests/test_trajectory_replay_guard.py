"""Every shared real run, replayed through ContextGuard at small windows (SPEC G1, I2).

The provider is simulated from each run's own reported counts (see
``benches/replay_guard.py``); with ``skew`` it counts 30% more than that, as a model whose
tokenizer the estimate does not know would. Every request the provider receives must have
valid pairing and fit its window, the stored history must stay as it was, and no call may
fail. The table is printed with ``pytest -s``; ``python -m benches.replay_guard
../shared/data/trajectories [--skew 1.3]`` prints the same.
"""

from __future__ import annotations

import pytest

from benches.replay_guard import replay, table
from benches.replay_trajectories import SHARED_TRAJECTORIES as DATA
from benches.replay_trajectories import load_runs

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(),
    reason=f"shared trajectories not found at {DATA} (CI keeps shared/ beside the checkout)",
)


@pytest.mark.parametrize(("window", "skew"), [(16_000, 1.0), (32_000, 1.0), (16_000, 1.3)])
def test_every_run_goes_through_the_guard(window: int, skew: float) -> None:
    runs = load_runs(DATA)
    assert runs, f"no runs in {DATA}"
    reports = replay(runs, (window,), skew)
    print()
    print(table(reports))
    failures = [f"{r.name}: {f}" for r in reports for f in r.failures]
    assert failures == []
    requests = sum(r.requests for r in reports)
    assert requests == 2498
    assert sum(r.dispatches for r in reports) == requests + sum(r.overflows for r in reports)
    assert all(r.peak_fill <= 1.0 for r in reports)
    # the runs outgrow these windows: both pruning and compaction are exercised
    assert sum(r.prunes for r in reports) > 0
    assert sum(r.compactions for r in reports) > 0
