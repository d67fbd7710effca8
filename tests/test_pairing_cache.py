"""GrowingPairing gives, turn after turn, what validating the whole list gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget import validate_pairing
from ctxbudget.pairing_cache import GrowingPairing
from ctxbudget.turns import ScanCache, pairing_events, resolve_ids, scan

IDS = ["a", "b", "c", "d", "e", "f"]

#: One appended message: an assistant message with calls, a tool result, or a user message.
message = st.one_of(
    st.lists(st.sampled_from(IDS), min_size=1, max_size=3).map(
        lambda ids: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids
            ],
        }
    ),
    st.sampled_from(IDS).map(lambda i: {"role": "tool", "tool_call_id": i, "content": "out"}),
    st.just({"role": "user", "content": "next"}),
)


def whole(messages: list[dict[str, Any]]) -> list[Any]:
    return validate_pairing(pairing_events(scan(messages, "openai_chat")))


@given(st.lists(message, max_size=14), st.lists(st.integers(0, 14), min_size=1, max_size=6))
def test_random_lists_equal_the_whole_list(pool: list[dict[str, Any]], lengths: list[int]) -> None:
    messages = [dict(m) for m in pool]  # distinct objects, as a real history has
    checker = GrowingPairing()
    for n in sorted(lengths) + lengths:  # growing, then rewinding and jumping around
        assert checker.violations("openai_chat", messages[:n]) == whole(messages[:n])


def call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


@st.composite
def agent_run(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    """A run of valid tool turns with a fault now and then, and the turn boundaries."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    ends = [1]
    for turn in range(draw(st.integers(1, 12))):
        fault = draw(st.sampled_from(["none"] * 6 + ["dup_result", "reuse", "orphan", "skip"]))
        ids = [f"t{turn}_{k}" for k in range(draw(st.integers(1, 3)))]
        if fault == "reuse" and turn:
            ids[0] = "t0_0"
        messages.append({"role": "assistant", "content": None, "tool_calls": list(map(call, ids))})
        for cid in ids[1:] if fault == "skip" else ids:
            messages.append({"role": "tool", "tool_call_id": cid, "content": "out"})
        if fault == "dup_result":
            messages.append({"role": "tool", "tool_call_id": "t0_0", "content": "again"})
        if fault == "orphan":
            messages.append({"role": "tool", "tool_call_id": "nobody", "content": "out"})
        ends.append(len(messages))
    return messages, ends


@given(agent_run(), st.data())
def test_growing_runs_equal_the_whole_list(
    run: tuple[list[dict[str, Any]], list[int]], data: st.DataObject
) -> None:
    messages, ends = run
    checker = GrowingPairing()
    picks = data.draw(st.lists(st.sampled_from(ends), min_size=1, max_size=8))
    for n in sorted(picks) + picks:
        assert checker.violations("openai_chat", messages[:n]) == whole(messages[:n])


def test_appended_messages_are_checked_against_the_earlier_ones() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    checker = GrowingPairing()
    for i in range(50):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "out"},
        ]
        assert checker.violations("openai_chat", history) == []
    history += [
        {"role": "tool", "tool_call_id": "c0", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": [call("c7")]},
        {"role": "tool", "tool_call_id": "c7", "content": "out"},
    ]
    found = checker.violations("openai_chat", history)
    assert found == whole(history)
    assert [(v.kind, v.call_id) for v in found] == [
        ("duplicate_result", "c0"),
        ("duplicate_call", "c7"),
        ("duplicate_result", "c7"),
    ]


def test_a_replaced_history_is_read_whole() -> None:
    checker = GrowingPairing()
    first = [
        {"role": "assistant", "content": None, "tool_calls": [call("x")]},
        {"role": "tool", "tool_call_id": "x", "content": "out"},
    ]
    assert checker.violations("openai_chat", first) == []
    second = [dict(first[0]), {"role": "tool", "tool_call_id": "y", "content": "out"}]
    assert [v.kind for v in checker.violations("openai_chat", second)] == [
        "missing_result",
        "orphaned_result",
    ]


@given(agent_run(), st.lists(st.tuples(st.integers(0, 60), message), max_size=8), st.data())
def test_replaced_messages_equal_the_whole_list(
    run: tuple[list[dict[str, Any]], list[int]],
    edits: list[tuple[int, dict[str, Any]]],
    data: st.DataObject,
) -> None:
    """Between calls, messages in the middle are replaced (a stub, another result) and the
    list grows or shrinks; every answer is the whole list's."""
    messages, ends = run
    checker = GrowingPairing()
    current = list(messages)
    assert checker.violations("openai_chat", current) == whole(current)
    for index, replacement in edits:
        current = list(current)
        if current:
            current[index % len(current)] = dict(replacement)
        n = data.draw(st.sampled_from(ends))
        current = current[:n] + [dict(m) for m in messages[len(current[:n]) : n]]
        assert checker.violations("openai_chat", current) == whole(current)


def test_an_old_violation_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call left without a result stays a violation, reported every turn, while only
    the appended messages are read."""
    import ctxbudget.pairing_cache as module

    reads: list[Any] = []
    real = module.scan_one
    monkeypatch.setattr(module, "scan_one", lambda m, fmt: reads.append(m) or real(m, fmt))
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("lost")]},
        {"role": "user", "content": "never mind"},
    ]
    checker = GrowingPairing()
    checker.violations("openai_chat", history)
    for i in range(30):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "out"},
        ]
        reads.clear()
        found = checker.violations("openai_chat", history)
        assert reads == history[-2:]
        assert [(v.kind, v.call_id) for v in found] == [("missing_result", "lost")]
        assert found == whole(history)


def gemini(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` (of :data:`message`) in Gemini's shape, its calls and results without ids:
    paired by position, so every answer depends on the whole list."""
    if message["role"] == "assistant":
        calls = [{"function_call": {"name": c["id"], "args": {}}} for c in message["tool_calls"]]
        return {"role": "model", "parts": calls}
    if message["role"] == "tool":
        response = {"name": message["tool_call_id"], "response": {"output": "out"}}
        return {"role": "user", "parts": [{"function_response": response}]}
    return {"role": "user", "parts": [{"text": "next"}]}


@given(st.lists(message, max_size=14), st.lists(st.integers(0, 14), min_size=1, max_size=6))
def test_gemini_lists_without_ids_equal_the_whole_list(
    pool: list[dict[str, Any]], lengths: list[int]
) -> None:
    """Gemini lists keep what they read of each message; the ids its id-less calls are given
    depend on positions, and every answer is still the whole list's."""
    messages = [gemini(m) for m in pool]
    checker = GrowingPairing()
    for n in sorted(lengths) + lengths:
        expected = validate_pairing(pairing_events(resolve_ids(scan(messages[:n], "gemini"))))
        assert checker.violations("gemini", messages[:n]) == expected


@given(
    st.lists(message, max_size=14),
    st.lists(
        st.tuples(
            st.integers(0, 14),
            st.integers(0, 14),
            st.none() | message,
            st.lists(message, max_size=4),
        ),
        max_size=6,
    ),
)
def test_gemini_lists_edited_between_calls_equal_the_whole_list(
    pool: list[dict[str, Any]],
    steps: list[tuple[int, int, dict[str, Any] | None, list[dict[str, Any]]]],
) -> None:
    """Between calls a Gemini list without ids grows, shrinks or has a message replaced in the
    middle (a call moved, an answer dropped): the ids given to the rest move with them, and
    every answer, and every resolution of the ids, is the whole list's."""
    current = [gemini(m) for m in pool]
    checker = GrowingPairing()
    scanner = ScanCache("gemini")
    for keep, index, replacement, grown in [(len(current), 0, None, []), *steps]:
        current = current[:keep] + [gemini(m) for m in grown]
        if replacement is not None and current:
            current[index % len(current)] = gemini(replacement)
        whole_infos = resolve_ids(scan(current, "gemini"))
        assert scanner.resolved(scanner.scan(current)) == whole_infos
        assert checker.violations("gemini", current) == validate_pairing(
            pairing_events(whole_infos)
        )
