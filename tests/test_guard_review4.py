"""Guard review, fourth round: an overflow that states no count, refused again on the retry,
leaves a ceiling under what was refused (every later turn repeated the same two refused
sends), lifted once calibration learns from an accepted request."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from ctxbudget import (
    CalibrationTracker,
    ContextBudgetError,
    ContextEvent,
    ContextGuard,
    ContextOverflowError,
    ContextWindowBudget,
    GuardedRequest,
    PruneConfig,
    classify_overflow,
)

WINDOW = 32_000
#: The Responses API's overflow: no count in it.
COUNTLESS = "Your input exceeds the context window of this model. Please adjust your input."


def countless_overflow() -> openai.BadRequestError:
    body = {
        "error": {
            "message": COUNTLESS,
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }
    request = httpx.Request("POST", "https://api.openai.com/v1/responses")
    response = httpx.Response(400, request=request, json=body)
    return openai.BadRequestError(COUNTLESS, response=response, body=body["error"])


def lines(tag: str, n: int) -> str:
    return "".join(f"{tag} line {i}: some log output value={i * 7919 % 1000}\n" for i in range(n))


def pasted_then_tools() -> list[dict[str, Any]]:
    """Text the user pasted (not prunable), then four large tool outputs (the fresh tail)."""
    history: list[dict[str, Any]] = []
    for i in range(20):
        history += [
            {"role": "user", "content": "Please review this:\n" + lines(f"u{i}", 64)},
            {"role": "assistant", "content": "Reviewed: " + "the code looks fine. " * 20},
        ]
    history.append({"role": "user", "content": "Now check the logs."})
    for i in range(4):
        args = json.dumps({"n": i})
        history += [
            {"type": "function_call", "call_id": f"c{i}", "name": "read_log", "arguments": args},
            {"type": "function_call_output", "call_id": f"c{i}", "output": lines(f"log{i}", 100)},
        ]
    return history


@pytest.mark.parametrize("calibration", [True, False])
def test_a_countless_overflow_refused_twice_is_not_sent_again(calibration: bool) -> None:
    """The provider counts 1.5 times the estimate and says only "too long". The turn that
    meets it fails (two refused sends); the next one is sent under what was refused and
    accepted, at once."""
    sends: list[list[int]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = int(request.estimate.raw.total * 1.5)
        sends[-1].append(request.attempt)
        if count + (request.max_tokens or 0) > WINDOW:
            raise countless_overflow()
        return {"usage": {"input_tokens": count}}

    budget = ContextWindowBudget(WINDOW, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, calibration=calibration)
    history = pasted_then_tools()
    sends.append([])
    with pytest.raises(ContextOverflowError):
        guard.send(send, history, max_tokens=1_000)
    assert sends[-1] == [1, 2]
    for _ in range(3):
        history += [
            {"type": "message", "role": "assistant", "content": "Checked."},
            {"role": "user", "content": "Go on."},
        ]
        sends.append([])
        guard.send(send, history, max_tokens=1_000)
        assert sends[-1] == [1]


def test_a_request_that_cannot_go_under_what_was_refused_is_not_sent() -> None:
    """The provider counts 1.8 times the estimate: nothing but a summary could make the
    request small enough. Once refused at its smallest, it is not sent again: the guard
    says so before any send."""
    sent: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request.attempt)
        if int(request.estimate.raw.total * 1.8) + 1_000 > WINDOW:
            raise countless_overflow()
        return {"usage": {"input_tokens": 1}}

    budget = ContextWindowBudget(WINDOW, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget)
    history = pasted_then_tools()
    for _ in range(2):
        with pytest.raises(ContextOverflowError):
            guard.send(send, history, max_tokens=1_000)
    sent.clear()
    with pytest.raises(ContextBudgetError, match="over what the provider's errors allow"):
        guard.send(send, history, max_tokens=1_000)
    assert sent == []


def test_a_failed_summarizer_is_named_when_recovery_needed_compaction() -> None:
    """Recovery that needed a summary, from a summarizer that is down: the overflow error says
    so (it said only that recovery could not make the request fit)."""

    def summarize(prompt: str, max_tokens: int) -> str:
        raise ConnectionError("summarizer endpoint down (503)")

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = int(request.estimate.raw.total * 1.5)
        if count + 1_000 > 18_000:
            raise RuntimeError(
                "This model's maximum context length is 18000 tokens. However, you requested"
                f" {count + 1_000} tokens ({count} in the messages, 1000 in the completion)."
            )
        return {"usage": {"prompt_tokens": count}}

    history: list[dict[str, Any]] = []
    for i in range(30):
        history += [
            {"role": "user", "content": f"Question {i}: " + "please explain the design. " * 40},
            {"role": "assistant", "content": "Answer: " + "the design is layered. " * 40},
        ]
    budget = ContextWindowBudget(18_000, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, summarize=summarize)

    with pytest.raises(ContextOverflowError) as caught:
        guard.send(send, history, max_tokens=1_000)

    notes = getattr(caught.value, "__notes__", [])
    assert any("compaction was tried and failed" in n and "503" in n for n in notes)


@pytest.mark.parametrize("count", [10**27, 3])
def test_an_overflow_count_no_estimate_can_be_off_by_teaches_nothing(count: int) -> None:
    tracker = CalibrationTracker("gpt-4o")
    history = [{"role": "user", "content": "Summarise: " + "the logs say little. " * 400}]
    before = tracker.estimate(history).total
    error = RuntimeError(
        f"This model's maximum context length is 8192 tokens. However, your messages resulted"
        f" in {count} tokens. Please reduce the length of the messages."
    )
    info = classify_overflow(error)
    assert info is not None and info.measured_input_tokens == count

    assert tracker.observe_overflow(history, info) is False
    assert tracker.estimate(history).total == before


def test_the_ceiling_after_a_countless_overflow_follows_the_output_asked_for() -> None:
    """Refused with ``max_tokens=4000`` (input and output over a 16k window): the same input
    with ``max_tokens=1000`` fits, and is sent (it was refused before any send)."""
    window = 16_000
    sends: list[tuple[int, int | None]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sends.append((request.attempt, request.max_tokens))
        if request.estimate.raw.total + (request.max_tokens or 0) > window:
            raise countless_overflow()
        return {}

    history = [{"role": "user", "content": "Review: " + lines("r", 200)}]
    for i in range(5):
        history += [
            {"role": "assistant", "content": "Noted. " + "fine " * 200},
            {"role": "user", "content": f"And {i}: " + lines(f"p{i}", 150)},
        ]
    guard = ContextGuard("gpt-4o", window=128_000, calibration=False)
    raw = guard.send(lambda r: {}, history, max_tokens=100).request.estimate.raw.total
    assert window - 4_000 < raw <= window - 1_000

    with pytest.raises(ContextOverflowError):
        guard.send(send, history, max_tokens=4_000)
    sends.clear()
    guard.send(send, history, max_tokens=1_000)
    assert sends == [(1, 1_000)]


def test_a_recovery_by_a_lower_max_tokens_is_an_event_with_its_rule() -> None:
    """SPEC G4: the recovery that only lowered ``max_tokens`` made no event at all; events
    of a recovery name the rule that read the provider's error."""
    window = 16_000
    seen: list[ContextEvent] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        n, out = request.input_tokens, request.max_tokens or 0
        if n + out > window:
            raise RuntimeError(
                f"This model's maximum context length is {window} tokens. However, you"
                f" requested {n + out} tokens ({n} in the messages, {out} in the completion)."
            )
        return {"usage": {"prompt_tokens": n}}

    guard = ContextGuard("gpt-4o", window=128_000, on_event=seen.append, calibration=False)
    history = [{"role": "user", "content": "Summarise: " + lines("s", 500)}]
    result = guard.send(send, history, max_tokens=16_000)

    (event,) = result.events
    assert seen == [event]
    assert event.action == "lower_output" and event.reason == "overflow"
    assert event.rule == result.overflow.rule  # type: ignore[union-attr]
    assert (event.max_tokens_before, event.max_tokens_after) == (16_000, result.request.max_tokens)
    assert "max_tokens 16000 ->" in str(event) and "[rule=" in str(event)


def test_a_prune_that_recovers_from_an_overflow_names_its_rule() -> None:
    window = 12_000
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(8):
        args = json.dumps({"n": i})
        history += [
            {"type": "function_call", "call_id": f"c{i}", "name": "read_log", "arguments": args},
            {"type": "function_call_output", "call_id": f"c{i}", "output": lines(f"l{i}", 60)},
        ]

    def send(request: GuardedRequest) -> dict[str, Any]:
        if request.attempt == 1:
            raise countless_overflow()
        return {}

    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, prune=PruneConfig(threshold=10**9))
    result = guard.send(send, history, max_tokens=1_000)

    recovery = [e for e in result.events if e.reason == "overflow"]
    assert recovery and all(e.rule == result.overflow.rule for e in recovery)  # type: ignore[union-attr]
    assert all(e.rule is None for e in result.events if e.reason != "overflow")


def test_the_ceiling_counts_the_output_anthropic_is_sent_by_default() -> None:
    """Without ``max_tokens``, an Anthropic request goes with the guard's default cap (8,192):
    refused so, a shorter input with ``max_tokens=1000`` fits and is sent."""
    history = [{"role": "user", "content": "Review: " + lines("r", 200)}]
    for i in range(5):
        history += [
            {"role": "assistant", "content": "Noted. " + "fine " * 200},
            {"role": "user", "content": f"And {i}: " + lines(f"p{i}", 150)},
        ]
    shorter = [*history[:-1], {"role": "user", "content": "And 4: " + lines("p4", 125)}]
    guard = ContextGuard(
        "claude-sonnet-4-20250514", window=128_000, format="anthropic", calibration=False
    )
    first = guard.send(lambda r: {}, history).request
    window = first.estimate.raw.total + 1_500  # the provider's, for input and output
    sends: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        out = request.kwargs()["max_tokens"]
        sends.append(request.attempt)
        if request.estimate.raw.total + out > window:
            raise countless_overflow()
        return {}

    assert first.kwargs()["max_tokens"] > 1_500
    with pytest.raises(ContextOverflowError):
        guard.send(send, history)
    sends.clear()
    guard.send(send, shorter, max_tokens=1_000)
    assert sends == [1]


@pytest.mark.parametrize(("reference", "sent"), [("fc_68a1", True), ("msg_68a1", False)])
def test_an_orphan_is_waived_only_beside_a_reference_that_may_be_its_call(
    reference: str, sent: bool
) -> None:
    """A stored message (``msg_``) is no call: an output beside a reference to one is an
    orphan the provider refuses, said before sending."""
    from ctxbudget import PairingError

    history = [
        {"role": "user", "content": "hi"},
        {"id": reference},
        {"type": "function_call_output", "call_id": "call_zzz", "output": "x"},
    ]
    guard = ContextGuard("gpt-4.1")
    if sent:
        assert guard.send(lambda r: {}, history).request.messages == history
    else:
        with pytest.raises(PairingError, match="orphaned_result 'call_zzz'"):
            guard.send(lambda r: {}, history)


def openai_error(message: str, code: str) -> openai.BadRequestError:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": code}}  # fmt: skip
    request = httpx.Request("POST", "https://api.openai.com/v1/responses")
    response = httpx.Response(400, request=request, json=body)
    return openai.BadRequestError(message, response=response, body=body["error"])


def test_gpt5s_input_cap_with_its_code_is_learned_as_an_input_cap() -> None:
    """OpenAI words gpt-5's cap "Input tokens exceed the configured limit" under the code
    ``context_length_exceeded``: the code named the rule, and the limit was taken for input
    plus output (a 250k input under the 272k cap was then refused unsent, for good)."""
    cap = 272_000

    def send(request: GuardedRequest) -> dict[str, Any]:
        if request.input_tokens > cap:
            raise openai_error(
                f"Input tokens exceed the configured limit of {cap} tokens. Your messages"
                f" resulted in {request.input_tokens} tokens.",
                "context_length_exceeded",
            )
        return {"usage": {"input_tokens": request.input_tokens}}

    def one_message(tokens: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Read: " + "word " * (tokens - 10)}]

    budget = ContextWindowBudget(400_000, max_output=128_000, model="gpt-5")
    guard = ContextGuard("gpt-5", budget=budget, calibration=False, format="openai_responses")
    with pytest.raises(ContextOverflowError):
        guard.send(send, one_message(300_000), max_tokens=32_000)

    result = guard.send(send, one_message(250_000), max_tokens=32_000)
    assert result.request.input_tokens > 240_000


def test_a_countless_input_cap_leaves_a_ceiling_on_the_input_alone() -> None:
    """Copilot's ``model_max_prompt_tokens_exceeded`` says no count: the next turn's input
    may be up to what was refused, whatever output it asks for (the output was subtracted:
    an input under the cap was refused unsent)."""
    cap = 20_000

    def send(request: GuardedRequest) -> dict[str, Any]:
        if request.estimate.raw.total > cap:
            raise openai_error("The prompt is too long.", "model_max_prompt_tokens_exceeded")
        return {}

    def history(tokens: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Read: " + "word " * (tokens - 10)}]

    guard = ContextGuard("gpt-4.1", window=64_000, calibration=False)
    with pytest.raises(ContextOverflowError):
        guard.send(send, history(cap + 300), max_tokens=4_000)
    result = guard.send(send, history(cap - 2_500), max_tokens=4_000)
    assert result.request.attempt == 1


@pytest.mark.parametrize(
    ("message", "input_cap"),
    [
        ("prompt token count of 130000 exceeds the limit of 128000", True),  # Copilot's
        ("Input tokens exceed the configured limit of 272000 tokens.", True),  # gpt-5's
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted"
            " in 9000 tokens.",
            False,
        ),
    ],
)
def test_an_input_cap_is_told_by_its_wording(message: str, input_cap: bool) -> None:
    """Copilot's prompt limit said in words alone (a wrapper that keeps the message only)
    is an input cap as its code is: taken for input plus output, it was budgeted with the
    output inside it, and a request under the prompt limit refused unsent."""
    info = classify_overflow(RuntimeError(message))
    assert info is not None and info.input_cap is input_cap
