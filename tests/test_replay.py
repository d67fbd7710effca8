"""The replay of the real runs in ../shared/data/trajectories meets SPEC A6 targets."""

from __future__ import annotations

import pytest

from benches.replay_trajectories import SHARED_TRAJECTORIES as DATA
from benches.replay_trajectories import load_runs, main, replay

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(),
    reason=f"shared trajectories not found at {DATA} (CI keeps shared/ beside the checkout)",
)


@pytest.fixture(scope="module")
def result() -> dict[str, object]:
    return replay(load_runs(DATA))


def test_turns(result: dict[str, object]) -> None:
    assert result["turns"] == 2498


def test_anchored_targets(result: dict[str, object]) -> None:
    anchored = result["anchored"]
    assert isinstance(anchored, dict)
    assert anchored["mean_abs"] <= 0.005
    assert anchored["p95_abs"] <= 0.015
    assert anchored["worst_under"] >= -0.05


def test_cold_target(result: dict[str, object]) -> None:
    cold = result["cold"]
    assert isinstance(cold, dict)
    assert cold["mean_abs"] <= 0.08


def test_chars4_reproduces_quoted_numbers(result: dict[str, object]) -> None:
    chars4 = result["chars4"]
    assert isinstance(chars4, dict)
    assert 0.23 <= chars4["mean_abs"] < 0.24  # "23% under on average"
    assert round(chars4["worst_under"], 2) == -0.51  # "worst -51%"
    assert chars4["worst_over"] == 0.0  # always under
    later = result["_later"]
    assert isinstance(later, dict)
    plus = later["usage_plus_chars4"]
    assert plus["mean_abs"] < 0.01 and round(plus["worst_under"], 2) == -0.17  # "-17% worst"


def test_json_output_shape(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main([str(DATA), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["turns", "cold", "anchored", "chars4", "usage_plus_chars4"]
    for method in ("cold", "anchored", "chars4", "usage_plus_chars4"):
        assert list(out[method]) == ["mean_abs", "p95_abs", "worst_under", "worst_over"]
