"""ContextGuard over random agent loops (SPEC I2): whatever the window, the provider's skew,
the wording of its errors and the summarizer, the guard never changes the caller's history,
never sends a request that breaks tool-call pairing or that its own estimate puts over the
window, sends at most twice per call, and either gets a response or raises one of its own
errors.

The provider is a plain function that counts the tool outputs ``skew`` times what the estimate
does (what calibration learns then changes with the mix of the request) and refuses input +
``max_tokens`` over the window, saying the counts or not.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbudget import (
    CompactionError,
    ContextBudgetError,
    ContextGuard,
    ContextOverflowError,
    ContextWindowBudget,
    GuardedRequest,
    estimate_tokens,
)

#: What the guard may raise instead of sending.
OWN_ERRORS = (ContextBudgetError, ContextOverflowError, CompactionError)


def output(tag: str, lines: int) -> str:
    return "".join(f"{tag} line {i}: value={i * 31 % 997} status=ok\n" for i in range(lines))


@dataclass(frozen=True)
class Loop:
    """One random agent loop: the provider, the summarizer and the turns."""

    window: int
    margin: int
    skew: float
    stated: bool
    summarizer: str
    turns: list[tuple[str, list[int], int | None, bool]]


# A turn: (kind, sizes of its tool outputs or of its text, max_tokens, run_start).
turns = st.lists(
    st.tuples(
        st.sampled_from(["tools", "talk", "ask"]),
        st.lists(st.sampled_from([5, 50, 300, 1_500, 6_000]), min_size=1, max_size=3),
        st.sampled_from([None, 500, 2_000]),
        st.sampled_from([False] * 9 + [True]),  # a run start after a failed run, now and then
    ),
    min_size=3,
    max_size=14,
)
loops = st.builds(
    Loop,
    window=st.sampled_from([8_000, 16_000, 32_000]),
    margin=st.sampled_from([0, 1_000, 20_000]),
    skew=st.sampled_from([0.9, 1.0, 1.2, 1.4, 1.8]),
    stated=st.booleans(),
    summarizer=st.sampled_from(["none", "good", "same", "raises", "long"]),
    turns=turns,
)


def summarizer(mode: str) -> Any:
    if mode == "none":
        return None

    def summarize(prompt: str, max_tokens: int) -> str:
        if mode == "raises":
            raise RuntimeError("summarizer down")
        if mode == "same":
            return prompt  # not smaller
        if mode == "long":
            return "word " * (max_tokens * 3)
        return "## Goal\nKeep going.\n## Progress\n" + "done " * min(50, max_tokens // 4)

    return summarize


def pairing_broken(messages: list[dict[str, Any]]) -> str | None:
    """What breaks Chat Completions pairing in ``messages`` (an independent check)."""
    waiting: set[str] = set()
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m["tool_call_id"] not in waiting:
                return f"result {m['tool_call_id']} at {i} answers no waiting call"
            waiting.discard(m["tool_call_id"])
            continue
        if waiting:
            return f"message {i} ({m['role']}) before the results of {sorted(waiting)}"
        for call in m.get("tool_calls") or []:
            if call["id"] in seen:
                return f"call id {call['id']} twice"
            seen.add(call["id"])
            waiting.add(call["id"])
    return f"no results for {sorted(waiting)}" if waiting else None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loops, st.randoms(use_true_random=False))
def test_random_agent_loops_keep_the_guard_s_invariants(loop: Loop, rnd: Any) -> None:
    budget = ContextWindowBudget(loop.window, margin=loop.margin, model="gpt-4o")
    guard = ContextGuard("gpt-4o", budget=budget, summarize=summarizer(loop.summarizer))
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Task: fix it."},
    ]
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        outputs = sum(
            estimate_tokens(m["content"]) for m in request.messages if m["role"] == "tool"
        )
        n = request.estimate.raw.total + int((loop.skew - 1) * outputs)
        asked = request.max_tokens or 0
        if n + asked > loop.window:
            if loop.stated:
                raise RuntimeError(
                    f"This model's maximum context length is {loop.window} tokens. However, you"
                    f" requested {n + asked} tokens ({n} in the messages, {asked} in the"
                    " completion)."
                )
            raise RuntimeError("Error code: 400 - {'error': {'code': 'context_length_exceeded'}}")
        return {"usage": {"prompt_tokens": n}}

    calls = 0
    for k, (kind, sizes, max_tokens, run_start) in enumerate(loop.turns):
        if kind == "tools":
            ids = [f"call_{k}_{j}" for j in range(len(sizes))]
            history.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": "bash", "arguments": "{}"},
                        }
                        for cid in ids
                    ],
                }
            )
            history += [
                {"role": "tool", "tool_call_id": cid, "content": output(cid, size)}
                for cid, size in zip(ids, sizes, strict=True)
            ]
        elif kind == "talk":
            history += [
                {"role": "assistant", "content": "Thinking. " + output("a", sizes[0] // 10)},
                {"role": "user", "content": "ok " + output("u", sizes[-1] // 10)},
            ]
        elif history[-1]["role"] != "user":
            history.append({"role": "user", "content": "next?"})
        before = copy.deepcopy(history)
        sent.clear()
        with contextlib.suppress(OWN_ERRORS):
            guard.send(send, history, max_tokens=max_tokens, run_start=run_start)
        calls += 1
        assert history == before
        assert len(sent) <= 2
        for request in sent:
            assert pairing_broken(request.messages) is None
            assert request.input_tokens + (request.max_tokens or 0) <= loop.window
        if sent and rnd.random() < 0.3:
            history += [
                {"role": "assistant", "content": "Answer."},
                {"role": "user", "content": "more"},
            ]
    assert calls == len(loop.turns)
