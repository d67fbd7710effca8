"""Pruning review, second round: in-place edits after ``invalidate`` reach the view (messages
carrying added results, results stubbed to recover), and the results added for a Gemini
turn's lost calls go after the whole turn and after its real responses."""

from __future__ import annotations

import copy
from typing import Any

from ctxbudget import ContextGuard, GuardedRequest
from ctxbudget.prune import Pruner, prune
from ctxbudget.stubs import STUB_PREFIX
from ctxbudget.turns import resolve_ids, scan


def texts(message: dict[str, Any]) -> list[str]:
    """The block types of an Anthropic message, its text blocks by their text."""
    return [b.get("text") or b["type"] for b in message["content"]]


def anthropic_with_a_lost_call() -> list[dict[str, Any]]:
    """The call ``a`` was lost: its result is added to the user message after it."""
    return [
        {"role": "user", "content": "start"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}],
        },
        {"role": "user", "content": [{"type": "text", "text": "never mind, do X"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go on"},
    ]


def test_a_message_carrying_an_added_result_is_read_again_after_invalidate() -> None:
    history = anthropic_with_a_lost_call()
    pruner = Pruner(window=32_000, format="anthropic")
    assert texts(pruner.prune(history).messages[2]) == ["tool_result", "never mind, do X"]

    history[2]["content"][0]["text"] = "do Y instead"  # in place, below the fields
    pruner.invalidate(history[2])
    assert texts(pruner.prune(history).messages[2]) == ["tool_result", "do Y instead"]

    history[2]["content"].append({"type": "text", "text": "and Z"})
    pruner.invalidate(history[2])
    assert texts(pruner.prune(history).messages[2]) == ["tool_result", "do Y instead", "and Z"]

    history[2]["content"].append({"type": "text", "text": "then stop"})
    pruner.invalidate()
    view = pruner.prune(history).messages
    assert view == Pruner(window=32_000, format="anthropic").prune(history).messages
    assert texts(view[2])[-1] == "then stop"


def test_the_guard_sends_an_edit_of_a_message_carrying_an_added_result() -> None:
    history = anthropic_with_a_lost_call()[:3]
    sent: list[list[Any]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request.messages)
        return {"usage": {"input_tokens": request.input_tokens, "output_tokens": 1}}

    guard = ContextGuard(window=32_000, format="anthropic")
    guard.send(send, history)
    history[2]["content"].append({"type": "text", "text": "and also Z"})
    guard.invalidate(history[2])
    guard.send(send, history)

    assert texts(sent[-1][2]) == ["tool_result", "never mind, do X", "and also Z"]


def test_a_result_stubbed_to_recover_keeps_words_added_in_place_after_invalidate() -> None:
    """The words a user sends beside a tool result, added to the results message in place:
    the message was stubbed (the result alone overflows the window), and its stubbed copy
    is made again from what it holds after ``invalidate``; the result stays stubbed."""
    big = "".join(f"row {i}: value {i * 37} status ok\n" for i in range(4_000))
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "read the file"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": big}]},
    ]
    sent: list[list[Any]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request.messages)
        return {"usage": {"input_tokens": request.input_tokens, "output_tokens": 1}}

    guard = ContextGuard(window=16_000, format="anthropic")
    guard.send(send, history)
    assert sent[-1][2]["content"][0]["content"].startswith(STUB_PREFIX)
    history[2]["content"].append({"type": "text", "text": "stop, use Rust instead"})
    guard.invalidate(history[2])
    guard.send(send, history)

    last = sent[-1][2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[0]["content"].startswith(STUB_PREFIX)
    assert last[1]["text"] == "stop, use Rust instead"
    assert history[2]["content"][0]["content"] == big


def fc(name: str, cmd: str = "") -> dict[str, Any]:
    return {"function_call": {"name": name, "args": {"cmd": cmd}}}


def fr(name: str, text: str) -> dict[str, Any]:
    return {"function_response": {"name": name, "response": {"result": text}}}


def answers(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(the response's text, the ``cmd`` of the call it answers) of every Gemini function
    response, paired as Gemini and ``resolve_ids`` pair responses without ids."""
    infos = resolve_ids(scan(messages, "gemini"))
    calls = {cid: (i, k) for i, info in enumerate(infos) for k, (cid, _) in enumerate(info.calls)}
    out = []
    for i, info in enumerate(infos):
        for rid, _, slot in info.results:
            text = messages[i]["parts"][slot]["function_response"]["response"]["result"]
            at = calls.get(rid)
            cmd = None if at is None else messages[at[0]]["parts"][at[1]]["function_call"]
            out.append((text[:26], None if cmd is None else cmd["args"]["cmd"]))
    return out


def test_gemini_results_added_for_lost_calls_do_not_take_over_a_real_response() -> None:
    history = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [fc("read", "a.txt"), fc("bash", "ls"), fc("bash", "rm")]},
        {"role": "user", "parts": [fr("read", "A")]},
        {"role": "user", "parts": [fr("bash", "a.txt b.txt")]},  # the output of `ls`
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"text": "go on"}]},
    ]
    before = copy.deepcopy(history)

    view = prune(history, window=32_000, format="gemini").messages

    assert answers(view) == [
        ("A", "a.txt"),
        ("a.txt b.txt", "ls"),
        ("[ctxbudget: no tool output", "rm"),
    ]
    assert history == before


def test_a_gemini_turn_in_two_contents_with_a_lost_call_is_sent() -> None:
    """A model turn stored as two contents (as streamed), one of its calls lost: the added
    results go after the whole turn, which stays one turn (inserted between its two
    contents, they paired the real response with the other call and the guard refused)."""
    history = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [fc("read", "first"), fc("bash", "ls")]},
        {"role": "model", "parts": [fc("read", "second")]},
        {"role": "user", "parts": [fr("read", "file text")]},
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"text": "go on"}]},
    ]
    for run_start in (False, True):
        view = prune(history, window=32_000, format="gemini", run_start=run_start).messages
        assert [m["role"] for m in view] == [m["role"] for m in history]
        assert answers(view) == [
            ("file text", "first"),
            ("[ctxbudget: no tool output", "ls"),
            ("[ctxbudget: no tool output", "second"),
        ]
    sent: list[Any] = []
    guard = ContextGuard(window=32_000, format="gemini")
    guard.send(lambda r: sent.append(r) or {"usage_metadata": {"prompt_token_count": 9}}, history)
    assert answers(sent[0].messages) == answers(view)


def test_a_gemini_turn_whose_lost_calls_are_in_two_of_its_contents() -> None:
    """Both calls of a turn in four contents lost (the model wrote on without results): their
    results go after the whole turn, together, in call order."""
    history = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [{"text": "Let me look."}]},
        {"role": "model", "parts": [fc("bash", "ls")]},
        {"role": "model", "parts": [fc("read", "a.txt")]},
        {"role": "model", "parts": [{"text": "Nothing came back."}]},
    ]
    view = prune(history, window=32_000, format="gemini").messages
    assert view[:5] == history and len(view) == 6
    assert answers(view) == [
        ("[ctxbudget: no tool output", "ls"),
        ("[ctxbudget: no tool output", "a.txt"),
    ]
