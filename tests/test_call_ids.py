"""Tool-call ids reused across rounds (models that number calls per response): renamed in what
is sent, so that the request pairs every call, without touching the caller's history."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ctxbudget import ContextGuard, GuardedRequest, validate_pairing
from ctxbudget.call_ids import unique_call_ids
from ctxbudget.turns import pairing_events, scan


def chat_round(cid: str, output: str) -> list[dict[str, Any]]:
    fn = {"name": "ls", "arguments": "{}"}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": cid, "type": "function", "function": fn}],
        },
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def responses_round(cid: str, output: str) -> list[dict[str, Any]]:
    return [
        {"type": "function_call", "call_id": cid, "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": cid, "output": output},
    ]


def anthropic_round(cid: str, output: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": cid, "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": cid, "content": output}],
        },
    ]


ROUNDS: dict[str, Callable[[str, str], list[dict[str, Any]]]] = {
    "openai_chat": chat_round,
    "openai_responses": responses_round,
    "anthropic": anthropic_round,
}


def ids(messages: list[Any], fmt: str) -> list[str | None]:
    """The call id of each call and result, in order."""
    return [cid for _, _, cid in pairing_events(scan(messages, fmt))]


def violations(messages: list[Any], fmt: str) -> list[str]:
    return [v.kind for v in validate_pairing(pairing_events(scan(messages, fmt)))]


@pytest.mark.parametrize("fmt", list(ROUNDS))
def test_later_rounds_of_an_id_get_new_ids(fmt: str) -> None:
    history = [{"role": "user", "content": "go"}]
    for n in range(3):
        history += ROUNDS[fmt]("call_0", f"output {n}")
    before = copy.deepcopy(history)
    assert "duplicate_call" in violations(history, fmt)

    out = unique_call_ids(history, fmt)

    assert ids(out, fmt) == ["call_0", "call_0", "call_0_2", "call_0_2", "call_0_3", "call_0_3"]
    assert violations(out, fmt) == []
    assert history == before  # the caller's messages are untouched
    assert all(out[i] is history[i] for i in range(3))  # the first round is the caller's own
    assert unique_call_ids(out, fmt) == out  # nothing left to rename


def test_a_new_id_is_one_no_message_has() -> None:
    history = chat_round("call_0", "a") + chat_round("call_0", "b") + chat_round("call_0_2", "c")
    out = unique_call_ids(history)
    assert ids(out, "openai_chat") == [
        "call_0",
        "call_0",
        "call_0_3",
        "call_0_3",
        "call_0_2",
        "call_0_2",
    ]
    assert violations(out, "openai_chat") == []


def test_a_round_still_open_is_left_as_it_is() -> None:
    # Called again before its result, or twice in one message: which call a result answers
    # cannot be told, and the pairing check reports it.
    again = chat_round("c", "a")[:1] + chat_round("c", "b")
    twice = copy.deepcopy(chat_round("c", "a"))
    twice[0]["tool_calls"].append(dict(twice[0]["tool_calls"][0]))
    for history in (again, twice):
        out = unique_call_ids(history)
        assert all(a is b for a, b in zip(out, history, strict=True))
        assert "duplicate_call" in violations(out, "openai_chat")


def test_gemini_contents_are_left_alone() -> None:
    call = {"role": "model", "parts": [{"function_call": {"id": "g", "name": "ls", "args": {}}}]}
    result = {
        "role": "user",
        "parts": [{"function_response": {"id": "g", "name": "ls", "response": {}}}],
    }
    history = [call, result, call, result]
    assert unique_call_ids(history, "gemini") == history


def _send(sent: list[GuardedRequest]) -> Callable[[GuardedRequest], dict[str, Any]]:
    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        return {"usage": {"prompt_tokens": request.input_tokens}}

    return send


@pytest.mark.parametrize("fmt", list(ROUNDS))
def test_a_guard_sends_a_history_whose_ids_repeat(fmt: str) -> None:
    # The guard refused such a history with a PairingError (duplicate_call) on every turn.
    history: list[Any] = [{"role": "user", "content": "go"}]
    for n in range(6):
        history += ROUNDS[fmt]("call_0", f"output {n}\n" * 3_000)
    history += [{"role": "user", "content": "and now?"}]
    before = copy.deepcopy(history)
    guard, sent = ContextGuard("gpt-4o", window=16_000), []

    first = guard.send(_send(sent), history)
    history += ROUNDS[fmt]("call_0", "new\n")
    second = guard.send(_send(sent), history)

    assert violations(first.request.messages, fmt) == violations(second.request.messages, fmt) == []
    assert ids(second.request.messages, fmt)[-2:] == ["call_0_7", "call_0_7"]
    assert history[: len(before)] == before
    # a renamed message is the same object from one request to the next
    shared = len(first.request.messages)
    assert all(
        a is b
        for a, b in zip(first.request.messages, second.request.messages[:shared], strict=True)
    )
