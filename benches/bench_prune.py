"""Cost of pruning per turn (issue 7: ``prune`` on a 600-message conversation <= 2 ms).

The conversation is the 600-message, ~1.4 MB OpenAI Chat one of ``bench_request.py`` (real
tool calls and outputs from ``../shared/data/trajectories`` when present). At a 128k window
it does not fit (~350k tokens), so most old outputs become stubs. Measured in the same run:

- ``pruner_append``: the per-turn cost in an agent loop: a :class:`ctxbudget.prune.Pruner`
  that pruned the 600 messages is given one more message each round (its caches make
  this cost about the new message: the stubs are the same objects, the view's estimate
  re-counts only what changed);
- ``pruner_same``: the same list again (nothing new);
- ``prune_cold``: the one-shot :func:`ctxbudget.prune.prune`, nothing cached (two cold
  estimates: the history and the pruned view, plus a size per tool output);
- ``estimate_cold`` (baseline): one cold :func:`ctxbudget.estimate_request` of the history.

Run: ``python -m pytest benches/bench_prune.py`` (the table at the end gives medians).
"""

from __future__ import annotations

from typing import Any

from benches.bench_request import CONVERSATION, TOOLS, growing
from ctxbudget.prune import Pruner, prune
from ctxbudget.request import estimate_request

WINDOW = 128_000
MODEL = "gpt-4o"


def test_shape() -> None:
    assert len(CONVERSATION) == 600
    result = prune(CONVERSATION, window=WINDOW, tools=TOOLS, model=MODEL)
    assert result.fits and len(result.pruned) > 100


def test_pruner_append(benchmark: Any) -> None:
    pruner = Pruner(WINDOW, model=MODEL)
    pruner.prune(CONVERSATION, tools=TOOLS)
    turns = growing(CONVERSATION)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (turns(),), {"tools": TOOLS}

    benchmark.group = "prune-600msg"
    result = benchmark.pedantic(pruner.prune, setup=setup, rounds=200, iterations=1)
    assert result.fits
    benchmark.extra_info["stubs"] = len(result.pruned)


def test_pruner_same(benchmark: Any) -> None:
    pruner = Pruner(WINDOW, model=MODEL)
    pruner.prune(CONVERSATION, tools=TOOLS)
    benchmark.group = "prune-600msg"
    result = benchmark(pruner.prune, CONVERSATION, tools=TOOLS)
    assert result.fits


def test_prune_cold(benchmark: Any) -> None:
    benchmark.group = "prune-600msg"
    result = benchmark.pedantic(
        prune, (CONVERSATION,), {"window": WINDOW, "tools": TOOLS, "model": MODEL}, rounds=20
    )
    assert result.fits


def test_estimate_cold_baseline(benchmark: Any) -> None:
    benchmark.group = "prune-600msg"
    benchmark.pedantic(
        estimate_request, (CONVERSATION,), {"tools": TOOLS, "model": MODEL}, rounds=20
    )
