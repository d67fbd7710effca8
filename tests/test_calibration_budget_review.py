"""Review of calibration and the budget: each test failed on the code before its fix."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.calibration import CalibrationTracker
from ctxbudget.request import estimate_request

CLAUDE = "claude-sonnet-4-5"
PDF = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}


def chat(n: int, words: int = 1) -> list[dict[str, Any]]:
    """``n`` alternating user/assistant messages of ``words`` words each."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": "ok " * words} for i in range(n)]


# -- the budget


def test_many_short_messages_blame_the_conversation() -> None:
    # 2,000 short messages: ~8k of their ~10k tokens is per-message framing. It was counted
    # with the system prompt and tools, and the violation blamed "system" (of 0 tokens) or
    # "tools" (of 33): compacting the conversation is what makes the request fit.
    budget = ContextWindowBudget(10_000)
    tools = [{"type": "function", "function": {"name": "t", "description": "d"}}]
    for request_tools in (None, tools):
        est = estimate_request(chat(2_000), model="gpt-4o", tools=request_tools)
        violation = budget.check(est)
        assert violation is not None and violation.component == "conversation"
        calibrated = CalibrationTracker("gpt-4o").estimate(chat(2_000), tools=request_tools)
        violation = budget.check(calibrated)
        assert violation is not None and violation.component == "conversation"


def test_the_request_framing_still_tips_system_over() -> None:
    # What the fix must keep: the request's own framing (not the messages') beside a system
    # prompt that nearly fills the room is the system prompt's fault.
    est = estimate_request([], model="gpt-4o", system="word " * 7_000)
    assert est.framing > 1
    window = 1_000 + est.system + est.framing - 1  # the system prompt alone fits
    budget = ContextWindowBudget(window, 1_000, margin=0, max_reserve_fraction=None)
    violation = budget.check(est)
    assert violation is not None and violation.component == "system"


def test_input_fits_only_below_the_input_cap() -> None:
    # gpt-5 takes at most 272k of input in its 400k window: an input of 300k does not fit
    # whatever the output reserve, so lowering the reserve cannot help.
    budget = ContextWindowBudget.for_model("gpt-5")
    violation = budget.check(300_000)
    assert violation is not None and not violation.input_fits
    violation = budget.check(272_000, max_tokens=130_000)
    assert violation is not None and violation.input_fits


# -- usage reports


def test_a_whole_response_dict_is_read_through_its_usage() -> None:
    # A response as a dict (the JSON body, or an SDK response's model_dump()) was "no count":
    # observe() returned False and nothing was calibrated.
    chat_types = pytest.importorskip("openai.types.chat")
    openai_types = pytest.importorskip("openai.types")
    anthropic_types = pytest.importorskip("anthropic.types")
    genai_types = pytest.importorskip("google.genai.types")
    openai_response = chat_types.ChatCompletion(
        id="c1",
        object="chat.completion",
        created=0,
        model="gpt-4o",
        choices=[],
        usage=openai_types.CompletionUsage(
            prompt_tokens=1_200,
            completion_tokens=5,
            total_tokens=1_205,
            prompt_tokens_details={"cached_tokens": 1_000},
        ),
    )
    anthropic_response = anthropic_types.Message(
        id="m1",
        type="message",
        role="assistant",
        model=CLAUDE,
        content=[],
        stop_reason="end_turn",
        usage=anthropic_types.Usage(
            input_tokens=10,
            output_tokens=5,
            cache_read_input_tokens=1_000,
            cache_creation_input_tokens=190,
        ),
    )
    gemini_response = genai_types.GenerateContentResponse(
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1_200, cached_content_token_count=1_000
        )
    )
    for body in (
        openai_response.model_dump(),
        anthropic_response.model_dump(),
        gemini_response.model_dump(),
        gemini_response.model_dump(mode="json", by_alias=True),  # usageMetadata
    ):
        tracker = CalibrationTracker("gpt-4o")
        assert tracker.observe(chat(2), body)
        assert tracker.estimate([*chat(2), {"role": "user", "content": "x"}]).anchor_tokens == 1_200


# -- robust factors


def test_one_large_delta_does_not_set_the_factor() -> None:
    # Turns of ~300 tokens at ratio 1.0, then one delta of ~24k at 0.6: weighted by its size,
    # it outweighed all the others and the prior, and every later delta was counted at 60%.
    tracker = CalibrationTracker("gpt-4o")
    history = chat(1, 200)
    reported = estimate_request(history, model="gpt-4o").total
    tracker.observe(history, reported)
    for i in range(10):
        history = [*history, {"role": "user", "content": f"step {i} of the plan " * 60}]
        reported += estimate_request(history, model="gpt-4o").per_message[-1]
        tracker.observe(history, reported)
    history = [*history, {"role": "user", "content": "0a1b2c3d " * 6_000}]
    reported += round(estimate_request(history, model="gpt-4o").per_message[-1] * 0.6)
    tracker.observe(history, reported)
    assert tracker.delta_factor == pytest.approx(1.0, abs=0.02)


def test_a_document_charged_at_its_maximum_does_not_shrink_later_text() -> None:
    # A PDF of unknown size is charged 30k; the provider counted 8k. The ratio 0.27 became the
    # cold factor and the delta prior (clamped to 0.5): the next 40k of text was estimated at
    # half, 40% under the real count.
    tracker = CalibrationTracker(CLAUDE)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [PDF, {"type": "text", "text": "Summarise."}]}
    ]
    tracker.observe(history, 8_000)
    history += [
        {"role": "assistant", "content": "Reading the clauses."},
        {"role": "user", "content": "clause text line\n" * 6_000},
    ]
    est = tracker.estimate(history)
    truth = 8_000 + sum(est.raw.per_message[1:])
    assert est.anchored and est.total >= truth


def test_a_document_among_text_turns_does_not_set_the_factor() -> None:
    # The same PDF arriving as one delta among text turns outweighed them all.
    tracker = CalibrationTracker(CLAUDE)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Review the contract. " * 20}]
    reported = estimate_request(history, model=CLAUDE).total
    tracker.observe(history, reported)
    for _ in range(20):
        history = [*history, *chat(2, 60)]
        reported += sum(estimate_request(history, model=CLAUDE).per_message[-2:])
        tracker.observe(history, reported)
    history = [*history, {"role": "user", "content": [PDF]}]
    reported += 8_000
    tracker.observe(history, reported)
    assert tracker.delta_factor == pytest.approx(1.0, abs=0.02)
    assert tracker.cold_factor == pytest.approx(1.0, abs=0.02)


# -- settings and threads


@pytest.mark.parametrize(
    "settings",
    [{"max_conversations": 0}, {"window": 0}, {"clamp": (2.0, 0.5)}, {"clamp": (0.0, 2.0)}],
)
def test_settings_that_break_the_tracker_are_refused(settings: dict[str, Any]) -> None:
    # max_conversations=0 made every estimate raise KeyError; window=0 learned nothing; a
    # swapped clamp pinned every factor to 0.5, halving the estimates.
    with pytest.raises(ValueError, match=next(iter(settings))):
        CalibrationTracker("gpt-4o", **settings)


def test_ten_threads_share_one_tracker() -> None:
    # Ten agent loops, more conversations than the tracker keeps (anchors are dropped while
    # others read them), estimating and reporting at once.
    tracker = CalibrationTracker("gpt-4o", max_conversations=4)
    start = threading.Barrier(10)
    errors: list[BaseException] = []
    wrong: list[tuple[int, int]] = []

    def loop(k: int) -> None:
        try:
            start.wait()
            history = chat(1, 20 + k)
            reported = 100
            for _ in range(40):
                est = tracker.estimate(history, conversation=k)
                if est.anchored and est.anchor_tokens != reported - 45:
                    wrong.append((k, est.total))
                tracker.observe(history, reported, conversation=k)
                tracker.state()
                history = [*history, {"role": "user", "content": f"step {k} " * 10}]
                reported += 45
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong
    state = tracker.state()
    assert state.observations == 400 and state.conversations == 4
    assert 0.5 <= state.delta_factor <= 2.0 and 0.5 <= state.cold_factor <= 2.0


def test_a_system_prompt_given_as_a_message_is_fixed_too() -> None:
    # Counted in the per-message totals, the system message was taken for conversation: a
    # window that system, tools and the request framing already fill blamed the conversation.
    messages = [{"role": "system", "content": "word " * 3_000}, {"role": "user", "content": "hi"}]
    schema = {"type": "object", "properties": {}}
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "description": "d " * 2_000, "parameters": schema},
        }
    ]
    est = estimate_request(messages, tools=tools, model="gpt-4o")
    available = est.system + est.tools + 1  # under system + tools + their framing
    violation = ContextWindowBudget(available + 100, reserved_output=100, margin=0).check(est)
    assert violation is not None and violation.component == "tools"
