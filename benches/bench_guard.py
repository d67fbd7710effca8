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
  for it;
- ``sdk-fits`` / ``sdk-pruned``: the conversation with its assistant messages as the openai
  SDK gives them (``completion.choices[0].message`` appended as it came: pydantic objects,
  whose fields the caches read from their ``__dict__``);
- ``gemini-fits`` / ``gemini-pruned``: the conversation as Gemini contents (its tools as
  function declarations); ``gemini-noid-*`` the same without call ids (Gemini's usual
  shape: calls and responses pair by position).

Each guard has seen the conversation at 598 and 600 messages (a loop under way, calibrated);
each timed call sends one message more than the call before (``growing`` in
``bench_request.py``): the cost per turn of a loop, in the state that loop leaves the caches
and the garbage collector in.
Measured in the same run, as baselines: a :class:`~ctxbudget.request.RequestEstimator` and a
:class:`~ctxbudget.prune.Pruner` after the same append (the guard runs both, and more).

Run: ``python -m pytest benches/bench_guard.py`` (the table at the end gives medians).
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from benches.bench_request import CONVERSATION, TOOLS, growing
from ctxbudget import (
    ContextGuard,
    GuardedRequest,
    Pruner,
    RequestEstimator,
    convert_messages,
    convert_tools,
)

MODEL = "gpt-4.1"
#: Timed turns per benchmark.
ROUNDS = 200
_LOST_AT = next(i for i, m in enumerate(CONVERSATION) if i > 100 and m["role"] == "tool")
#: The conversation with one tool result missing in the middle.
LOST = CONVERSATION[:_LOST_AT] + CONVERSATION[_LOST_AT + 1 :]
#: The conversation with its assistant messages as openai SDK objects.
SDK = [
    ChatCompletionMessage.model_validate(m) if m["role"] == "assistant" else m for m in CONVERSATION
]
#: The conversation as Gemini contents.
GEMINI = convert_messages(CONVERSATION, to="gemini").messages
#: The same without call ids.
GEMINI_NOID = [
    {
        **m,
        "parts": [
            {
                k: {f: v for f, v in x.items() if f != "id"} if isinstance(x, dict) else x
                for k, x in part.items()
            }
            for part in m["parts"]
        ],
    }
    for m in GEMINI
]
GEMINI_TOOLS = convert_tools(TOOLS, "gemini")
#: case -> (window, conversation before the append)
CASES: dict[str, tuple[int, list[Any]]] = {
    "fits": (1_000_000, CONVERSATION),
    "pruned": (128_000, CONVERSATION),
    "lost-fits": (1_000_000, LOST),
    "lost-pruned": (128_000, LOST),
    "sdk-fits": (1_000_000, SDK),
    "sdk-pruned": (128_000, SDK),
    "gemini-fits": (1_000_000, GEMINI),
    "gemini-pruned": (128_000, GEMINI),
    "gemini-noid-fits": (1_000_000, GEMINI_NOID),
    "gemini-noid-pruned": (128_000, GEMINI_NOID),
}
#: The same texts as plain user/assistant turns: no message tells the format.
PLAIN = [
    {"role": "user" if i % 2 else "assistant", "content": m.get("content") or ""}
    for i, m in enumerate(CONVERSATION)
]


def send(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


def _guard(window: int, history: list[dict[str, Any]], **kwargs: Any) -> ContextGuard:
    """A guard in a loop under way: it has sent ``history`` without its last two messages,
    then ``history`` (calibrated, caches filled)."""
    guard = ContextGuard(MODEL, window=window)
    guard.send(send, history[:-2], **kwargs)
    guard.send(send, history, **kwargs)
    return guard


def _in_format(case: str) -> tuple[str, Any]:
    """The case's format, and its tools in that format's shape."""
    return ("gemini", GEMINI_TOOLS) if case.startswith("gemini") else ("openai_chat", TOOLS)


@pytest.mark.parametrize("case", list(CASES))
def test_guard_append(benchmark: Any, case: str) -> None:
    window, history = CASES[case]
    fmt, tools = _in_format(case)
    guard = _guard(window, history, tools=tools)
    turns = growing(history, fmt)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (send, turns()), {"tools": tools}

    benchmark.group = f"guard-600msg-{case}"
    result = benchmark.pedantic(guard.send, setup=setup, rounds=ROUNDS, iterations=1)
    assert result.usage_recorded
    benchmark.extra_info["input_tokens"] = result.request.input_tokens


@pytest.mark.parametrize("case", list(CASES))
def test_pruner_append_baseline(benchmark: Any, case: str) -> None:
    window, history = CASES[case]
    fmt, tools = _in_format(case)
    pruner = Pruner(window, model=MODEL)
    pruner.prune(history, tools=tools)
    turns = growing(history, fmt)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (turns(),), {"tools": tools}

    benchmark.group = f"guard-600msg-{case}"
    result = benchmark.pedantic(pruner.prune, setup=setup, rounds=ROUNDS, iterations=1)
    assert result.fits


def test_guard_append_without_tool_calls(benchmark: Any) -> None:
    """The plain conversation at 1M: the format is narrowed from what was appended."""
    guard = _guard(CASES["fits"][0], PLAIN)
    turns = growing(PLAIN)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (send, turns()), {}

    benchmark.group = "guard-600msg-plain"
    result = benchmark.pedantic(guard.send, setup=setup, rounds=ROUNDS, iterations=1)
    assert result.usage_recorded


def test_estimator_append_baseline(benchmark: Any) -> None:
    estimator = RequestEstimator(MODEL)
    estimator.estimate(CONVERSATION, tools=TOOLS)
    turns = growing(CONVERSATION)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (turns(),), {"tools": TOOLS}

    benchmark.group = "guard-600msg-fits"
    benchmark.pedantic(estimator.estimate, setup=setup, rounds=ROUNDS, iterations=1)
