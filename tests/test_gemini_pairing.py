"""Gemini without call ids: calls and responses pair turn by turn, and in order (SPEC D4, E3).

The Gemini Developer API usually leaves call ids out. It then pairs the responses of a user
message with the calls of the model turn right before it, by name and in order; ctxbudget
reads (``normalize_messages``), repairs (``prune``) and compacts (``compact``) the same way.
"""

from __future__ import annotations

import random
from typing import Any

from ctxbudget import compact, prune
from ctxbudget.messages import normalize_messages
from ctxbudget.request import estimate_request
from ctxbudget.stubs import missing_text
from tests.test_prune import _text, pairing_violations


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def call(name: str, **args: str) -> dict[str, Any]:
    return {"function_call": {"name": name, "args": args}}


def response(name: str, result: str) -> dict[str, Any]:
    return {"function_response": {"name": name, "response": {"result": result}}}


def answers(contents: list[Any]) -> dict[str, str]:
    """The text each call gets, by the call's ``path`` argument, as ctxbudget pairs them."""
    messages = normalize_messages(contents, "gemini")
    paths = {p.call_id: p.arguments["path"] for m in messages for p in m.parts if p.arguments}
    return {
        paths[p.call_id]: p.content[0].text
        for m in messages
        for p in m.parts
        if p.kind == "tool_result"
    }


def test_missing_response_goes_after_the_recorded_ones() -> None:
    calls = [call("read_file", path="a.txt"), call("read_file", path="b.txt")]
    contents = [
        {"role": "user", "parts": [text("Read both files.")]},
        {"role": "model", "parts": calls},
        {"role": "user", "parts": [response("read_file", "contents of a.txt")]},
    ]
    result = prune(contents, window=16_000, run_start=True)
    assert [(p.index, p.kind) for p in result.pruned] == [(1, "missing")]
    assert answers(result.messages) == {
        "a.txt": "contents of a.txt",
        "b.txt": missing_text("read_file"),
    }
    assert pairing_violations(result.messages, "gemini") == []


def crashed_then_retried() -> list[dict[str, Any]]:
    """A call whose run crashed (no response), then a retry answered in the next message."""
    return [
        {"role": "user", "parts": [text("List the repo.")]},
        {"role": "model", "parts": [call("bash", path=".")]},
        {"role": "user", "parts": [text("That crashed, try again.")]},
        {"role": "model", "parts": [call("bash", path="./")]},
        {"role": "user", "parts": [response("bash", "a.py b.py")]},
        {"role": "model", "parts": [text("Two files.")]},
        {"role": "user", "parts": [text("Thanks.")]},
    ]


def test_a_response_answers_the_model_turn_right_before_it() -> None:
    contents = crashed_then_retried()
    assert answers(contents) == {"./": "a.py b.py"}
    violations = pairing_violations(contents, "gemini")
    assert [(v.kind, v.positions) for v in violations] == [("missing_result", (1,))]


def test_unanswered_call_is_repaired_in_its_own_turn() -> None:
    contents = crashed_then_retried()
    result = prune(contents, window=16_000)
    assert [(p.index, p.kind) for p in result.pruned] == [(1, "missing")]
    assert result.messages[2]["parts"] == [
        response("bash", missing_text("bash")),
        *contents[2]["parts"],
    ]
    assert result.messages[3:] == contents[3:]
    assert answers(result.messages) == {".": missing_text("bash"), "./": "a.py b.py"}
    assert pairing_violations(result.messages, "gemini") == []


def test_compaction_keeps_an_unanswered_call_it_does_not_touch() -> None:
    rng = random.Random(6)
    contents = [
        {"role": "user", "parts": [text("Part 1: " + _text(rng, 1_500))]},
        {"role": "model", "parts": [text("Noted.")]},
        {"role": "user", "parts": [text("Part 2: " + _text(rng, 1_500))]},
        {"role": "model", "parts": [text("Noted.")]},
        {"role": "user", "parts": [text("Now run the tests.")]},
        {"role": "model", "parts": [call("bash", path="tests")]},
        {"role": "user", "parts": [text("The tool crashed; tell me what you know.")]},
        {"role": "model", "parts": [text("Ok.")]},
        {"role": "user", "parts": [text("Go.")]},
    ]
    recent = 4  # from "Now run the tests." on, the unanswered call included
    per_message = estimate_request(contents, format="gemini").per_message
    result = compact(
        contents,
        lambda prompt, max_tokens: "## Goal\nRun the tests.",
        window=16_000,
        keep_tokens=sum(per_message[recent:]),
    )
    assert (result.summarized, result.kept) == (recent, len(contents) - recent)
    assert all(a is b for a, b in zip(result.messages[1:], contents[recent:], strict=True))
    before = pairing_violations(contents, "gemini")
    after = pairing_violations(result.messages, "gemini")
    assert [v.kind for v in after] == [v.kind for v in before] == ["missing_result"]
