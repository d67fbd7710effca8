"""Tool results that came later than their calls: moved next to them in what is sent.

Chat Completions wants the tool messages right after the message with the calls, Anthropic
the ``tool_result`` blocks in the very next message and first in it; a history in which a
user's note (or the next turn) came between a call and its result was sent as it was, and the
provider refused that request and every later one of the conversation."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget import ContextGuard, GuardedRequest, PairingError
from ctxbudget.result_placement import MOVED_NOTE, ResultPlacement, place_results
from tests.conftest import LoopbackServer
from tests.test_sdk_end_to_end import (
    anthropic_reply,
    anthropic_send,
    chat_completion,
    chat_send,
    check_anthropic_body,
    check_chat_body,
    check_gemini_body,
    check_responses_body,
    gemini_reply,
    gemini_send,
    responses_reply,
    responses_send,
)


def chat_call(*ids: str) -> dict[str, Any]:
    fn = {"name": "bash", "arguments": '{"command": "make"}'}
    calls = [{"id": i, "type": "function", "function": fn} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def chat_result(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": f"{cid}: {text}"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def ant_call(*ids: str) -> dict[str, Any]:
    command = {"command": "make"}
    uses = [{"type": "tool_use", "id": i, "name": "bash", "input": command} for i in ids]
    return {"role": "assistant", "content": [{"type": "text", "text": "Running."}, *uses]}


def ant_result_block(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": f"{cid}: {text}"}


def ant_results(*ids: str, note: str | None = None) -> dict[str, Any]:
    blocks = [ant_result_block(i) for i in ids]
    if note is not None:
        blocks.append({"type": "text", "text": note})
    return {"role": "user", "content": blocks}


def _send(sent: list[GuardedRequest]) -> Any:
    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        return {"usage": {"prompt_tokens": request.input_tokens}}

    return send


def roles(messages: list[Any]) -> list[str]:
    return [m.get("tool_call_id") or m["role"] for m in messages]


# -- what the providers get


def test_chat_note_typed_while_tools_ran_goes_after_their_results(
    fresh_loopback: LoopbackServer,
) -> None:
    server = fresh_loopback
    server.reply(200, chat_completion(100))
    history = [
        user("Why does the build fail?"),
        chat_call("call_a", "call_b"),
        chat_result("call_a"),
        user("Also look at the linker flags."),  # typed while call_b still ran
        chat_result("call_b"),
    ]
    before = copy.deepcopy(history)
    client, send = chat_send(server)
    with client:
        result = ContextGuard("gpt-4o").send(send, history, max_tokens=1_000)

    body = server.bodies[-1]
    check_chat_body(body)
    assert [m.get("tool_call_id") or m["role"] for m in body["messages"]] == [
        "user", "assistant", "call_a", "call_b", "user",
    ]  # fmt: skip
    assert history == before
    # the caller's own message objects, in another order
    assert sorted(map(id, result.request.messages)) == sorted(map(id, history))


def test_chat_result_that_came_after_the_next_turn_goes_back_to_its_call() -> None:
    history = [
        user("go"),
        chat_call("call_a"),
        user("still there?"),
        chat_call("call_b"),
        chat_result("call_a", "late"),
        chat_result("call_b"),
        said("Both ran."),
    ]
    sent: list[GuardedRequest] = []
    ContextGuard("gpt-4o").send(_send(sent), history)
    assert roles(sent[-1].messages) == [
        "user", "assistant", "call_a", "user", "assistant", "call_b", "assistant",
    ]  # fmt: skip


def test_anthropic_results_go_first_in_the_message_after_their_call(
    fresh_loopback: LoopbackServer,
) -> None:
    server = fresh_loopback
    server.reply(200, anthropic_reply(100))
    history = [
        {"role": "user", "content": "Why does the build fail?"},
        ant_call("toolu_a", "toolu_b"),
        {"role": "user", "content": "Also look at the linker flags."},
        ant_results("toolu_a", "toolu_b"),
    ]
    before = copy.deepcopy(history)
    client, send = anthropic_send(server)
    with client:
        ContextGuard("claude-sonnet-4-5").send(send, history, max_tokens=1_000)

    body = server.bodies[-1]
    check_anthropic_body(body)
    assert body["messages"][2]["content"] == [
        ant_result_block("toolu_a"),
        ant_result_block("toolu_b"),
        {"type": "text", "text": "Also look at the linker flags."},
    ]
    assert len(body["messages"]) == 3  # the message whose blocks all moved is gone
    assert history == before


def test_anthropic_result_goes_after_the_whole_model_turn() -> None:
    history = [
        {"role": "user", "content": "go"},
        ant_call("toolu_a"),
        said("Waiting for it."),  # the model's turn goes on without the result
        {"role": "user", "content": "and?"},
        ant_results("toolu_a", note="here it is"),
    ]
    out = place_results(history, "anthropic")
    # the two model messages are one turn: the result goes after both
    assert [m["role"] for m in out] == ["user", "assistant", "assistant", "user", "user"]
    assert out[3]["content"] == [
        ant_result_block("toolu_a"),
        {"type": "text", "text": "and?"},
    ]
    assert out[4]["content"] == [{"type": "text", "text": "here it is"}]

    # the next message is no user message (a system message given mid-conversation)
    history[3] = {"role": "system", "content": "Be brief."}
    out = place_results(history, "anthropic")
    assert [m["role"] for m in out] == ["user", "assistant", "assistant", "user", "system", "user"]
    assert out[3] == {"role": "user", "content": [ant_result_block("toolu_a")]}
    assert out[4] is history[3]


def test_anthropic_text_before_the_results_goes_after_them() -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "done:"}, ant_result_block("toolu_a")],
    }
    history = [{"role": "user", "content": "go"}, ant_call("toolu_a"), message]
    out = place_results(history)
    assert out[2]["content"] == [message["content"][1], message["content"][0]]
    assert out[2]["content"][0] is message["content"][1]  # the caller's blocks themselves


def test_a_history_in_order_is_returned_as_it_is() -> None:
    chat = [user("go"), chat_call("a", "b"), chat_result("b"), chat_result("a"), said("ok")]
    ant = [{"role": "user", "content": "go"}, ant_call("a"), ant_results("a", note="next")]
    placement = ResultPlacement()
    assert placement.apply("openai_chat", chat) is chat
    assert ResultPlacement().apply("anthropic", ant) is ant


def test_responses_output_after_a_note_goes_right_after_the_calls(
    fresh_loopback: LoopbackServer,
) -> None:
    # OpenAI pairs Responses items by call_id wherever they are; DeepSeek's Responses API and
    # gateways that turn the items into Chat messages refuse an item between
    server = fresh_loopback
    server.reply(200, responses_reply(100))
    history: list[Any] = [
        {"role": "user", "content": "Why does the build fail?"},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "two"},
        {"role": "assistant", "content": "Both are running."},
        {"role": "user", "content": "Also look at the linker flags."},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
    ]
    before = copy.deepcopy(history)
    client, send = responses_send(server)
    with client:
        result = ContextGuard("gpt-4o").send(send, history, max_tokens=1_000)

    check_responses_body(server.bodies[-1])
    assert [m.get("call_id") or m["role"] for m in result.request.messages] == [
        "user", "c1", "c2", "c2", "c1", "assistant", "user",
    ]  # fmt: skip
    assert history == before


def test_results_that_cannot_be_told_apart_are_left_for_the_pairing_check() -> None:
    # a second result for one call, and a result before its call: not moved, refused as before
    twice = [user("go"), chat_call("a"), chat_result("a"), user("again"), chat_result("a")]
    assert place_results(twice) == twice
    with pytest.raises(PairingError, match="duplicate_result"):
        ContextGuard("gpt-4o").send(_send([]), twice)
    early = [user("go"), chat_result("a"), chat_call("a"), user("hm")]
    assert place_results(early) == early
    with pytest.raises(PairingError, match="result_before_call"):
        ContextGuard("gpt-4o").send(_send([]), early)


def test_an_id_reused_in_a_later_round_pairs_with_its_own_round() -> None:
    history = [
        user("go"),
        chat_call("call_0"),
        chat_result("call_0", "first"),
        chat_call("call_0"),
        user("note"),
        chat_result("call_0", "second"),
    ]
    sent: list[GuardedRequest] = []
    ContextGuard("gpt-4o").send(_send(sent), history)
    view = sent[-1].messages
    assert [m.get("content") for m in view[3:]] == [None, "call_0: second", "note"]
    assert view[3]["tool_calls"][0]["id"] == view[4]["tool_call_id"] == "call_0_2"


# -- turn after turn


def test_copies_are_the_same_objects_turn_after_turn() -> None:
    history: list[Any] = [
        {"role": "user", "content": "go"},
        ant_call("toolu_a"),
        {"role": "user", "content": "note"},
        ant_results("toolu_a"),
    ]
    placement = ResultPlacement()
    first = placement.apply("anthropic", history)
    history += [said("Done."), {"role": "user", "content": "next?"}]
    second = placement.apply("anthropic", history)
    assert len(second) == len(first) + 2
    assert all(a is b for a, b in zip(first, second, strict=False))
    assert second[-2] is history[-2] and second[-1] is history[-1]


def test_a_result_that_arrives_late_replaces_the_stub_of_a_lost_call() -> None:
    history: list[Any] = [user("go"), chat_call("call_a"), user("hello?")]
    guard, sent = ContextGuard("gpt-4o"), []
    guard.send(_send(sent), history)
    assert roles(sent[-1].messages) == ["user", "assistant", "call_a", "user"]
    assert "no tool output" in sent[-1].messages[2]["content"]  # the pruner's stub

    history.append(chat_result("call_a", "made it"))
    guard.send(_send(sent), history)
    assert roles(sent[-1].messages) == ["user", "assistant", "call_a", "user"]
    assert sent[-1].messages[2] is history[-1]


def test_a_pruned_view_keeps_the_results_next_to_their_calls() -> None:
    history: list[Any] = [user("Why does the build fail?")]
    for i in range(8):
        history += [chat_call(f"c{i}"), user(f"note {i}"), chat_result(f"c{i}", "x\n" * 3_000)]
    history.append(user("and now?"))
    sent: list[GuardedRequest] = []
    result = ContextGuard("gpt-4o", window=16_000).send(_send(sent), history)
    assert any(e.action == "prune" for e in result.events)
    check_chat_body({"messages": [m for m in sent[-1].messages]})


# -- properties


def users(message: dict[str, Any]) -> bool:
    """Whether a message (or Responses item) is the user's side: the user's words or results."""
    return message.get("role") in ("user", "tool") or message.get("type", "").endswith("_output")


def without_note(out: list[dict[str, Any]], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``out`` without the note that ends it when its last results moved back before the
    model's last message; checks that the note is there exactly then."""
    last = out[-1]
    noted = last.get("content") == MOVED_NOTE or last.get("parts") == [{"text": MOVED_NOTE}]
    body = out[:-1] if noted else out
    assert noted == (users(history[-1]) and not users(body[-1])), (history[-1], body[-1])
    return body


@st.composite
def chat_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Chat history whose results each come at some point after their call."""
    history: list[dict[str, Any]] = [user("start")]
    pending: list[str] = []
    for turn in range(draw(st.integers(1, 6))):
        ids = [f"t{turn}_{k}" for k in range(draw(st.integers(0, 3)))]
        history.append(chat_call(*ids) if ids else said(f"thinking {turn}"))
        pending += ids
        for _ in range(draw(st.integers(0, 4))):
            if pending and draw(st.booleans()):
                history.append(chat_result(pending.pop(draw(st.integers(0, len(pending) - 1)))))
            else:
                history.append(user(f"note {len(history)}"))
    history += [chat_result(cid) for cid in pending]
    return history


@settings(max_examples=150, deadline=None)
@given(chat_histories())
def test_chat_placement_property(history: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(history)
    out = without_note(place_results(history, "openai_chat"), history)
    check_chat_body({"messages": out})
    assert Counter(map(id, out)) == Counter(map(id, history))  # the same messages, once each
    not_results = [m for m in history if m["role"] != "tool"]
    assert [m for m in out if m["role"] != "tool"] == not_results  # in their order
    assert history == before


def as_responses(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Chat history as Responses items (each call an item of its own)."""
    items: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": m["content"]})  # fmt: skip
        elif m.get("tool_calls"):
            items += [{"type": "function_call", "call_id": c["id"], "name": "bash",
                       "arguments": "{}"} for c in m["tool_calls"]]  # fmt: skip
        else:
            items.append({"role": m["role"], "content": m["content"]})
    return items


@settings(max_examples=150, deadline=None)
@given(chat_histories())
def test_responses_placement_property(chat: list[dict[str, Any]]) -> None:
    history = as_responses(chat)
    before = copy.deepcopy(history)
    out = without_note(place_results(history, "openai_responses"), history)
    check_responses_body({"input": out})
    assert Counter(map(id, out)) == Counter(map(id, history))
    assert [m for m in out if "call_id" not in m] == [m for m in history if "call_id" not in m]
    calls = [m for m in out if m.get("type") == "function_call"]
    assert calls == [m for m in history if m.get("type") == "function_call"]
    assert history == before


@st.composite
def anthropic_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An Anthropic history whose result blocks each come in some user message after their
    call, beside notes, in any order."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    pending: list[str] = []
    for turn in range(draw(st.integers(1, 6))):
        ids = [f"t{turn}_{k}" for k in range(draw(st.integers(0, 3)))]
        history.append(ant_call(*ids) if ids else said(f"thinking {turn}"))
        pending += ids
        if draw(st.booleans()):
            history.append(said(f"more {turn}"))
        for _ in range(draw(st.integers(1, 3))):
            blocks: list[dict[str, Any]] = []
            while pending and draw(st.booleans()):
                blocks.append(ant_result_block(pending.pop(0)))
            if not blocks or draw(st.booleans()):
                at = draw(st.integers(0, len(blocks)))
                blocks.insert(at, {"type": "text", "text": f"note {len(history)}"})
            history.append({"role": "user", "content": blocks})
    if pending:
        history.append({"role": "user", "content": [ant_result_block(i) for i in pending]})
    return history


def _joined(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role as the API reads them: joined into one."""
    out: list[dict[str, Any]] = []
    for m in messages:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": [*out[-1]["content"], *blocks]}
        else:
            out.append({"role": m["role"], "content": list(blocks)})
    return out


def _blocks(messages: list[dict[str, Any]]) -> Counter[int]:
    out: Counter[int] = Counter()
    for m in messages:
        if isinstance(m["content"], list):
            out.update(map(id, m["content"]))
    return out


@settings(max_examples=150, deadline=None)
@given(anthropic_histories())
def test_anthropic_placement_property(history: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(history)
    out = without_note(place_results(history, "anthropic"), history)
    check_anthropic_body({"max_tokens": 1, "messages": _joined(out)})
    assert _blocks(out) == _blocks(history)  # every block of the caller's, once
    # the assistant messages and the notes' texts, in their order
    texts = [
        b["text"] for m in _joined(history) if m["role"] == "user" for b in m["content"]
        if b["type"] == "text"
    ]  # fmt: skip
    assert [t for t in texts if "note" in t or t == "start"] == [
        b["text"] for m in _joined(out) for b in m["content"] if b["type"] == "text"
        and m["role"] == "user"
    ]  # fmt: skip
    assert [m for m in out if m["role"] == "assistant"] == [
        m for m in history if m["role"] == "assistant"
    ]
    assert history == before


# -- Gemini


def gem_call(*names: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"function_call": {"name": n, "args": {}}} for n in names]}


def gem_response_part(name: str, text: str = "ok") -> dict[str, Any]:
    return {"function_response": {"name": name, "response": {"result": f"{name}: {text}"}}}


def gem_user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


@pytest.mark.parametrize("typed", [False, True], ids=["dicts", "Content"])
def test_gemini_response_after_a_note_goes_right_after_its_call(
    fresh_loopback: LoopbackServer, typed: bool
) -> None:
    # Gemini refused it ("function response turn comes immediately after a function call
    # turn"); the guard refused it first, as an orphaned result, turn after turn
    genai_types = pytest.importorskip("google.genai.types")
    server = fresh_loopback
    server.reply(200, gemini_reply(100))
    history: list[Any] = [
        gem_user("Read the config."),
        gem_call("read", "stat"),
        {"role": "user", "parts": [gem_response_part("stat")]},
        gem_user("It is in /etc."),
        {"role": "user", "parts": [gem_response_part("read")]},
    ]
    if typed:
        history = [genai_types.Content.model_validate(c) for c in history]
    before = copy.deepcopy(history)
    client, send = gemini_send(server)
    with client:
        ContextGuard("gemini-2.5-flash").send(send, history)

    body = server.bodies[-1]
    check_gemini_body(body)
    assert [[next(iter(p)) for p in c["parts"]] for c in body["contents"]] == [
        ["text"], ["functionCall", "functionCall"], ["functionResponse", "functionResponse"],
        ["text"],
    ]  # fmt: skip
    assert history == before


def test_gemini_response_with_an_id_pairs_by_it() -> None:
    def call(cid: str) -> dict[str, Any]:
        return {"role": "model", "parts": [{"function_call": {"name": "ls", "id": cid}}]}

    def response(cid: str) -> dict[str, Any]:
        return {"function_response": {"name": "ls", "id": cid, "response": {"r": cid}}}

    history = [gem_user("go"), call("i1"), gem_user("note"), call("i2")]
    history.append({"role": "user", "parts": [response("i2"), response("i1")]})
    out = place_results(history, "gemini")
    assert out[2] == {"role": "user", "parts": [response("i1")]}
    assert out[3:5] == history[2:4]
    assert out[5] == {"role": "user", "parts": [response("i2")]}


def test_gemini_responses_without_ids_answer_their_calls_in_order() -> None:
    # The first response took the turn's last call of its tool: a.txt's contents were sent
    # as b.txt's, and nothing said so
    def read(path: str) -> dict[str, Any]:
        return {"function_call": {"name": "read", "args": {"path": path}}}

    def content(path: str) -> dict[str, Any]:
        return {"function_response": {"name": "read", "response": {"result": path}}}

    history = [
        gem_user("Read both."),
        {"role": "model", "parts": [read("a.txt"), read("b.txt")]},
        gem_user("Hurry up."),
        {"role": "user", "parts": [content("a.txt"), content("b.txt")]},
    ]
    out = place_results(history, "gemini")
    assert out[2] == {"role": "user", "parts": [content("a.txt"), content("b.txt")]}
    assert out[3] == history[2]


@st.composite
def gemini_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Gemini history without ids whose responses come in some later user message."""
    history: list[dict[str, Any]] = [gem_user("start")]
    pending: list[str] = []
    for turn in range(draw(st.integers(1, 6))):
        names = [f"tool{turn}_{k}" for k in range(draw(st.integers(0, 3)))]
        history.append(gem_call(*names) if names else gem_user(f"note {turn}"))
        pending += names
        for _ in range(draw(st.integers(1, 3))):
            parts = []
            while pending and draw(st.booleans()):
                parts.append(gem_response_part(pending.pop(0)))
            history.append({"role": "user", "parts": parts} if parts else gem_user("note"))
    if pending:
        history.append({"role": "user", "parts": [gem_response_part(n) for n in pending]})
    return history


@settings(max_examples=150, deadline=None)
@given(gemini_histories())
def test_gemini_placement_property(history: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(history)
    out = without_note(place_results(history, "gemini"), history)
    # every response in the user message right after its call's turn, all of them there
    pending: list[str] = []
    for content in (c["parts"] for c in out):
        names = [p["function_response"]["name"] for p in content if "function_response" in p]
        assert names == pending  # in the order of the calls
        pending = [p["function_call"]["name"] for p in content if "function_call" in p]
    assert not pending
    assert _blocks_of(out, "parts") == _blocks_of(history, "parts")
    assert history == before


def _blocks_of(messages: list[dict[str, Any]], key: str) -> Counter[int]:
    return Counter(id(b) for m in messages for b in m[key])


# -- what review found


def test_a_request_whose_last_results_moved_back_ends_with_a_user_message() -> None:
    # The results that ended the history moved back before the model's last message: the
    # request ended with the model's words (a prefill, which newer Claude models refuse)
    history = [
        {"role": "user", "content": "Build it."},
        ant_call("toolu_a"),
        {"role": "user", "content": "Still there?"},
        said("Yes, the build is still running."),
        ant_results("toolu_a"),
    ]
    guard, sent = ContextGuard("claude-opus-4-6"), []
    guard.send(_send(sent), history, max_tokens=1_000)
    view = sent[-1].messages
    assert [m["role"] for m in view] == ["user", "assistant", "user", "assistant", "user"]
    assert view[2]["content"][0] == ant_result_block("toolu_a")
    assert view[-1] == {"role": "user", "content": MOVED_NOTE}
    check_anthropic_body({"max_tokens": 1, "messages": view})

    # the model answers: no note any more, and the rest of the view is the same objects
    history.append(said("The build is done."))
    guard.send(_send(sent), history, max_tokens=1_000)
    assert all(a is b for a, b in zip(view[:-1], sent[-1].messages, strict=False))
    assert sent[-1].messages[-1] is history[-1]


def test_a_lost_calls_stub_goes_after_the_whole_anthropic_turn() -> None:
    # The stub went between the two messages of the model's turn, splitting it: the other
    # call's result no longer followed its tool_use, and Anthropic refused the request
    history = [
        {"role": "user", "content": "Build and test."},
        ant_call("toolu_build", "toolu_test"),
        said("Both started."),
        ant_results("toolu_test"),  # toolu_build never returned
        {"role": "user", "content": "Status?"},
    ]
    sent: list[GuardedRequest] = []
    ContextGuard("claude-sonnet-4-5").send(_send(sent), history, max_tokens=1_000)
    view = sent[-1].messages
    check_anthropic_body({"max_tokens": 1, "messages": _joined(view)})
    assert [m["role"] for m in view] == ["user", "assistant", "assistant", "user", "user"]
    assert [b["tool_use_id"] for b in view[3]["content"]] == ["toolu_test", "toolu_build"]
