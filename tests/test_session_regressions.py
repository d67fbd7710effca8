"""Regressions of the changes since d17eed5 found in the second-pass review: each test fails
on HEAD and passes with the proposed fix."""

from __future__ import annotations

from typing import Any

from ctxbudget import CalibrationTracker, estimate_request

MODEL = "claude-sonnet-4-5"
SYSTEM = "You are helpful."
#: A long extended-thinking block (~13k tokens), as Claude writes with a large budget_tokens.
THINKING = " ".join(f"step {i}: compare x{i} with the bound, note it" for i in range(600))


def _visible(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as Anthropic counts it in a later turn: thinking blocks of earlier turns
    are stripped by the API and do not count toward the input."""
    content = message["content"]
    if isinstance(content, str):
        return message
    text = " ".join(b["text"] for b in content if b["type"] == "text")
    return {"role": message["role"], "content": text}


def _reported(history: list[dict[str, Any]]) -> int:
    visible = [_visible(m) for m in history]
    return estimate_request(visible, model=MODEL, system=SYSTEM).total


def test_reports_of_a_thinking_conversation_are_not_ignored() -> None:
    """Anthropic leaves earlier turns' thinking out of ``input_tokens``: the report is far
    below an estimate that counts it, and the plausibility check (6ee8578) ignored every
    such report, so the anchor froze at the first turn and the estimate grew by a whole
    thinking block each turn (13k here) instead of following the provider's count."""
    tracker = CalibrationTracker(MODEL)
    history: list[dict[str, Any]] = [{"role": "user", "content": "What is the bound?"}]
    recorded = []
    for turn in range(4):
        recorded.append(
            tracker.observe(history, {"input_tokens": _reported(history)}, system=SYSTEM)
        )
        history = [
            *history,
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": THINKING, "signature": "c2ln"},
                    {"type": "text", "text": "The bound is 3."},
                ],
            },
            {"role": "user", "content": f"And for case {turn}?"},
        ]
    assert recorded == [True] * 4
    thinking = estimate_request(
        [{"role": "assistant", "content": THINKING}], model=MODEL
    ).per_message[0]
    # At most the newest thinking block over the provider's count, not one per turn.
    assert tracker.estimate(history, system=SYSTEM).total < _reported(history) + 1.5 * thinking
