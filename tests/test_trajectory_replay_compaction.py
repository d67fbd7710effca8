"""Every shared real run, replayed at 16k and 32k windows through prune + compact (SPEC I2).

Before every model call the request must fit the budget and have valid tool-call pairing,
with at most two compactions per call (no loop). The table is printed with ``pytest -s``;
``python -m benches.replay_compaction ../shared/data/trajectories`` prints the same.
"""

from __future__ import annotations

import copy

import pytest

from benches.replay_compaction import MAX_COMPACTIONS_PER_TURN, replay, table
from benches.replay_trajectories import SHARED_TRAJECTORIES as DATA
from benches.replay_trajectories import load_runs

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(),
    reason=f"shared trajectories not found at {DATA} (CI keeps shared/ beside the checkout)",
)


@pytest.mark.parametrize("window", [16_000, 32_000])
def test_every_run_fits_at_small_windows(window: int) -> None:
    runs = load_runs(DATA)
    assert runs, f"no runs in {DATA}"
    snapshot = copy.deepcopy([run.messages for run in runs])
    reports = replay(runs, (window,))
    assert [run.messages for run in runs] == snapshot  # the agent's stored messages untouched
    print()
    print(table(reports))
    failures = [f"{r.name}: {f}" for r in reports for f in r.failures]
    assert failures == []
    assert sum(r.requests for r in reports) == 2498
    assert max(r.max_compactions_per_turn for r in reports) <= MAX_COMPACTIONS_PER_TURN
    assert all(r.peak_fill <= 1.0 for r in reports)
    # the replay really exercises both: runs outgrow these windows
    assert sum(r.prunes for r in reports) > 0
    assert sum(r.compactions for r in reports) > 0
