"""Cost of the guard per turn: everything ContextGuard does around one ``send``.

The conversation is the 600-message, ~1.4 MB OpenAI Chat one of ``bench_request.py``. The
``send`` is a function returning a usage report at once (no network): what is measured is
the guard's own work, at two windows:

- ``fits``: a 1M window, the request fits: estimate, calibration, pairing, usage recorded;
- ``pruned``: a 128k window, the history (~350k tokens) does not fit, most old outputs are
  stubs (the :class:`~ctxbudget.prune.Pruner` inside the guard re-applies them each turn);
- ``without_tool_calls``: the same texts as plain turns at 1M, which no message tells the
  format of (it is narrowed from the appended messages, not detected from all of them);
- ``lost-fits`` / ``lost-pruned``: the conversation with one tool result missing in the
  middle (a call the conversation moved on from): each turn's view carries a result added
  for it.

Each guard has seen the conversation at 598 and 600 messages (a loop under way, calibrated);
the timed call sends it with one message appended.
Measured in the same run, as baselines: a :class:`~ctxbudget.request.RequestEstimator` and a
:class:`~ctxbudget.prune.Pruner` after the same append (the guard runs both, and more).

Run: ``python -m pytest benches/bench_guard.py`` (the table at the end gives medians).
"""

from __future__ import annotations

from typing import Any

import pytest

from benches.bench_request import CONVERSATION, TOOLS
from ctxbudget import ContextGuard, GuardedRequest, Pruner, RequestEstimator

MODEL = "gpt-4.1"
NEXT = {"role": "assistant", "content": "The tests pass now; submitting the patch."}
APPENDED = [*CONVERSATION, NEXT]
_LOST_AT = next(i for i, m in enumerate(CONVERSATION) if i > 100 and m["role"] == "tool")
#: The conversation with one tool result missing in the middle.
LOST = CONVERSATION[:_LOST_AT] + CONVERSATION[_LOST_AT + 1 :]
#: case -> (window, conversation before the append)
CASES = {
    "fits": (1_000_000, CONVERSATION),
    "pruned": (128_000, CONVERSATION),
    "lost-fits": (1_000_000, LOST),
    "lost-pruned": (128_000, LOST),
}
#: The same texts as plain user/assistant turns: no message tells the format.
PLAIN = [
    {"role": "user" if i % 2 else "assistant", "content": m.get("content") or ""}
    for i, m in enumerate(CONVERSATION)
]


def send(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


@pytest.mark.parametrize("case", list(CASES))
def test_guard_append(benchmark: Any, case: str) -> None:
    guard: ContextGuard | None = None
    window, history = CASES[case]

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        nonlocal guard
        guard = ContextGuard(MODEL, window=window)
        guard.send(send, history[:-2], tools=TOOLS)  # a loop under way: two turns seen
        guard.send(send, history, tools=TOOLS)
        return (send, [*history, NEXT]), {"tools": TOOLS}

    def turn(*args: Any, **kwargs: Any) -> Any:
        assert guard is not None
        return guard.send(*args, **kwargs)

    benchmark.group = f"guard-600msg-{case}"
    result = benchmark.pedantic(turn, setup=setup, rounds=50, iterations=1)
    assert result.usage_recorded
    benchmark.extra_info["input_tokens"] = result.request.input_tokens


@pytest.mark.parametrize("case", list(CASES))
def test_pruner_append_baseline(benchmark: Any, case: str) -> None:
    window, history = CASES[case]
    pruner = Pruner(window, model=MODEL)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        pruner.prune(history, tools=TOOLS)
        return ([*history, NEXT],), {"tools": TOOLS}

    benchmark.group = f"guard-600msg-{case}"
    result = benchmark.pedantic(pruner.prune, setup=setup, rounds=50, iterations=1)
    assert result.fits


def test_guard_append_without_tool_calls(benchmark: Any) -> None:
    """The plain conversation at 1M: the format is narrowed from what was appended."""
    guard: ContextGuard | None = None

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        nonlocal guard
        guard = ContextGuard(MODEL, window=CASES["fits"][0])
        guard.send(send, PLAIN[:-2])
        guard.send(send, PLAIN)
        return (send, [*PLAIN, NEXT]), {}

    def turn(*args: Any) -> Any:
        assert guard is not None
        return guard.send(*args)

    benchmark.group = "guard-600msg-plain"
    result = benchmark.pedantic(turn, setup=setup, rounds=50, iterations=1)
    assert result.usage_recorded


def test_estimator_append_baseline(benchmark: Any) -> None:
    estimator = RequestEstimator(MODEL)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        estimator.estimate(CONVERSATION, tools=TOOLS)
        return (APPENDED,), {"tools": TOOLS}

    benchmark.group = "guard-600msg-fits"
    benchmark.pedantic(estimator.estimate, setup=setup, rounds=50, iterations=1)
