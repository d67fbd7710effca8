"""Tool-call ids reused across rounds (models that number calls per response): renamed in what
is sent, so that the request pairs every call, without touching the caller's history."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from ctxbudget import ContextGuard, GuardedRequest, validate_pairing
from ctxbudget.call_ids import unique_call_ids
from ctxbudget.turns import pairing_events, resolve_ids, scan


def chat_round(cid: str, output: str, reasoning: str | None = None) -> list[dict[str, Any]]:
    """A call and its result; with ``reasoning``, the call carries it (``reasoning_content``,
    as DeepSeek's and vLLM's replies do)."""
    fn = {"name": "ls", "arguments": "{}"}
    call: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": fn}],
    }
    if reasoning is not None:
        call["reasoning_content"] = reasoning
    return [call, {"role": "tool", "tool_call_id": cid, "content": output}]


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
    # Twice in one message, or again in the same response before a result (Responses items):
    # which call a result answers cannot be told, and the pairing check reports it.
    twice = copy.deepcopy(chat_round("c", "a"))
    twice[0]["tool_calls"].append(dict(twice[0]["tool_calls"][0]))
    same_response = responses_round("c", "a")[:1] + responses_round("c", "b")
    for fmt, history in (("openai_chat", twice), ("openai_responses", same_response)):
        out = unique_call_ids(history, fmt)
        assert all(a is b for a, b in zip(out, history, strict=True))
        assert "duplicate_call" in violations(out, fmt)


@pytest.mark.parametrize("fmt", list(ROUNDS))
def test_a_round_whose_result_was_lost_is_closed_by_the_next_turn(fmt: str) -> None:
    # The first call_0 never got its result; the user spoke, and call_0 came again: the guard
    # raised duplicate_call. Renamed, the lost call is given a result like any other.
    history: list[Any] = [{"role": "user", "content": "go"}, ROUNDS[fmt]("call_0", "a")[0]]
    history += [{"role": "user", "content": "again"}, *ROUNDS[fmt]("call_0", "b")]
    history += [{"role": "user", "content": "ok?"}]
    assert ids(unique_call_ids(history, fmt), fmt) == ["call_0", "call_0_2", "call_0_2"]
    sent = ContextGuard("gpt-4o", window=16_000).send(_send([]), history).request.messages
    assert violations(sent, fmt) == []
    assert ids(sent, fmt).count("call_0") == 2  # the lost call and the result it was given


def test_compaction_cuts_between_rounds_of_a_reused_id() -> None:
    # Every call_0 seemed one pair from its first call to its last result: no cut inside it,
    # so compaction could not run and the guard refused the request.
    history: list[Any] = []
    for n in range(30):  # long turns, small outputs: pruning cannot make room
        history.append({"role": "user", "content": f"question {n}: " + "lorem ipsum " * 200})
        history += chat_round("call_0", "ok")
        history.append({"role": "assistant", "content": "answer: " + "dolor sit amet " * 150})
    history += [{"role": "user", "content": "sum it up"}]
    calls: list[str] = []

    def summarize(prompt: str, max_tokens: int) -> str:
        calls.append(prompt)
        return "## Goal\nList files.\n## Next steps\nSum up."

    guard = ContextGuard("gpt-4o", window=16_000, summarize=summarize)
    sent = guard.send(_send([]), history).request.messages
    assert len(calls) == 1 and violations(sent, "openai_chat") == []


def gemini_round(cid: str, output: str, spelling: str) -> list[Any]:
    """One Gemini round: google-genai dicts (``snake``), REST JSON (``camel``) or SDK objects."""
    call = {"id": cid, "name": "ls", "args": {}}
    response = {"id": cid, "name": "ls", "response": {"output": output}}
    if spelling == "camel":
        return [
            {"role": "model", "parts": [{"functionCall": call}]},
            {"role": "user", "parts": [{"functionResponse": response}]},
        ]
    rounds = [
        {"role": "model", "parts": [{"function_call": call}]},
        {"role": "user", "parts": [{"function_response": response}]},
    ]
    if spelling == "objects":
        from google.genai import types

        return [types.Content.model_validate(m) for m in rounds]
    return rounds


@pytest.mark.parametrize("spelling", ["snake", "camel", "objects"])
def test_gemini_ids_reused_are_renamed_and_sent(spelling: str) -> None:
    # Gemini pairs turn by turn, but a history with ids reused round after round was refused
    # by the guard's pairing check (duplicate_call, duplicate_result) on every turn.
    history: list[Any] = [{"role": "user", "parts": [{"text": "go"}]}]
    for n in range(3):
        history += gemini_round("call_0", f"output {n}", spelling)
    before = copy.deepcopy(history)
    assert "duplicate_call" in violations(history, "gemini")

    out = unique_call_ids(history, "gemini")
    sent = ContextGuard("gemini-2.5-pro").send(_send([]), history).request.messages

    renamed = ["call_0", "call_0", "call_0_2", "call_0_2", "call_0_3", "call_0_3"]
    assert ids(out, "gemini") == ids(sent, "gemini") == renamed
    assert violations(sent, "gemini") == []
    assert history == before
    assert all(out[i] is history[i] for i in range(3))
    # the renamed copies keep the history's type (google-genai Content objects stay objects)
    assert [type(m) for m in sent] == [type(m) for m in out] == [type(m) for m in history]


def test_gemini_calls_with_reused_ids_and_responses_without_ids_are_sent() -> None:
    # Part.from_function_response takes no id: the responses pair by turn, but the calls'
    # reused ids were duplicates, and the rounds were never closed to rename them.
    from google.genai import types

    history: list[Any] = [types.Content(role="user", parts=[types.Part(text="go")])]
    for n in range(3):
        call = types.FunctionCall(id="call_0", name="ls", args={})
        response = types.Part.from_function_response(name="ls", response={"output": n})
        history += [
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="user", parts=[response]),
        ]
    sent = ContextGuard("gemini-2.5-pro").send(_send([]), history).request.messages
    calls = [p.function_call.id for m in sent for p in m.parts if p.function_call]
    assert calls == ["call_0", "call_0_2", "call_0_3"]
    # responses without ids answer the calls of the model turn before them
    events = pairing_events(resolve_ids(scan(sent, "gemini")))
    assert [v.kind for v in validate_pairing(events)] == []


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


def test_renaming_changes_the_ids_and_nothing_else() -> None:
    # A renamed message went through the format converter: a Responses custom output became
    # a function_call_output, a Chat tool message lost its name.
    custom = [
        {"type": "custom_tool_call", "call_id": "c", "name": "patch", "input": "*** Begin"},
        {"type": "custom_tool_call_output", "call_id": "c", "output": "ok"},
    ]
    chat = [*chat_round("c", "a"), {"role": "user", "content": "more"}, *chat_round("c", "b")]
    chat[-1]["name"] = "ls"
    for fmt, history in (("openai_responses", custom + custom), ("openai_chat", chat)):
        out = unique_call_ids(history, fmt)
        for before, after in zip(history, out, strict=True):
            if after is before:
                continue
            flat_before, flat_after = json.dumps(before), json.dumps(after)
            assert flat_after == flat_before.replace('"c"', '"c_2"'), fmt


def test_a_renamed_message_follows_the_callers_edits() -> None:
    # The renamed copy was kept while the message's content field stayed the same object:
    # a replaced tool_calls list was not sent.
    history: list[Any] = [{"role": "user", "content": "go"}]
    history += [*chat_round("call_0", "a"), *chat_round("call_0", "b")]
    guard = ContextGuard("gpt-4o", window=16_000)
    guard.send(_send([]), history)
    fn = {"name": "cat", "arguments": '{"path": "x"}'}
    history[3]["tool_calls"] = [{"id": "call_0", "type": "function", "function": fn}]
    sent = guard.send(_send([]), history).request.messages
    assert sent[3]["tool_calls"][0]["function"] == fn
    assert sent[3]["tool_calls"][0]["id"] == "call_0_2"
    history[3]["tool_calls"][0]["function"]["name"] = "grep"  # nested, in place
    guard.invalidate(history[3])
    assert guard.send(_send([]), history).request.messages[3]["tool_calls"][0]["function"] == fn


def test_a_renamed_message_sends_an_edit_of_a_field_the_scan_does_not_read() -> None:
    # The copies of the unchanged prefix were reused whole: reasoning sent back (DeepSeek
    # refuses it) after the caller cleared it, 28,000 characters
    history: list[Any] = [
        {"role": "user", "content": "go"},
        *chat_round("call_0", "a", reasoning="first"),
        *chat_round("call_0", "b", reasoning="second " * 4_000),
    ]
    guard, sent = ContextGuard("deepseek-reasoner", window=64_000), []
    guard.send(_send(sent), history, max_tokens=1_000)
    history[3]["reasoning_content"] = None
    guard.send(_send(sent), history, max_tokens=1_000)
    assert sent[-1].messages[3]["tool_calls"][0]["id"] == "call_0_2"
    assert sent[-1].messages[3]["reasoning_content"] is None


def test_a_message_replaced_by_an_equal_copy_and_then_edited_sends_the_edit() -> None:
    # The list's copies were kept for an equal message, and later edits of the caller's new
    # object (a field the scan does not read) were never sent
    history: list[Any] = [
        {"role": "user", "content": "go"},
        *chat_round("call_0", "a", reasoning="first " * 4_000),
        *chat_round("call_0", "b", reasoning="second"),
    ]
    guard, sent = ContextGuard("deepseek-reasoner", window=64_000), []
    guard.send(_send(sent), history, max_tokens=1_000)
    history[1] = copy.deepcopy(history[1])  # reloaded: equal, another object
    guard.send(_send(sent), history, max_tokens=1_000)
    history[1]["reasoning_content"] = None
    guard.send(_send(sent), history, max_tokens=1_000)
    assert sent[-1].messages[1]["reasoning_content"] is None


def test_a_shorter_list_then_the_whole_one_again_sends_every_message() -> None:
    # After a side call on the first turns (or an undo), the renamer compared the next list
    # with an older one than its last: three messages went missing, then an IndexError
    history: list[Any] = [{"role": "user", "content": "go"}]
    history += chat_round("call_0", "a") + chat_round("call_0", "b")
    guard, sent = ContextGuard("gpt-4o", window=64_000), []
    guard.send(_send(sent), history)
    history += [{"role": "user", "content": "more"}, *chat_round("call_0", "c")]
    guard.send(_send(sent), history)
    guard.send(_send(sent), history[:5])
    history.append({"role": "user", "content": "next"})
    guard.send(_send(sent), history)
    assert len(sent[-1].messages) == len(history) == 9
    history += chat_round("call_0", "d")
    guard.send(_send(sent), history)
    assert ids(sent[-1].messages, "openai_chat")[-2:] == ["call_0_4", "call_0_4"]


def test_messages_kept_are_the_callers_and_renamed_copies_follow_their_fields() -> None:
    # A message replaced by an equal copy was sent as the renamer's old object (an edit of it
    # was lost), and a renamed item's status edit was never sent
    history: list[Any] = [
        {"role": "assistant", "content": "ok", "reasoning_details": [{"type": "reasoning.text"}]},
        *responses_round("call_0", "a"),
        *responses_round("call_0", "b"),
    ]
    history[3]["status"] = "in_progress"
    guard, sent = ContextGuard("gpt-4o", window=64_000, format="openai_responses"), []
    guard.send(_send(sent), history)
    history[0] = copy.deepcopy(history[0])
    guard.send(_send(sent), history)
    history[0].pop("reasoning_details")
    history[3]["status"] = "completed"
    guard.send(_send(sent), history)
    assert sent[-1].messages[0] is history[0]
    assert sent[-1].messages[3]["call_id"] == "call_0_2"
    assert sent[-1].messages[3]["status"] == "completed"
