"""Pruning (SPEC D1-D4): fresh tail by tokens, stubs, run-start handling, never mutating."""

from __future__ import annotations

import copy
import doctest
import importlib
import json
import logging
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbudget import validate_pairing
from ctxbudget.budget import ContextWindowBudget
from ctxbudget.events import ContextEvent
from ctxbudget.messages import FORMATS, convert_messages, normalize_messages
from ctxbudget.prune import PruneConfig, Pruner, prune
from ctxbudget.request import estimate_request
from ctxbudget.stubs import STUB_PREFIX, missing_text, stub_text
from ctxbudget.turns import SUMMARY_MARKER, scan, turn_starts

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
    "rkJggg=="
)
WORDS = ["alpha", "beta", "gamma", "delta", "error", "warning", "line", "file", "path"]
WORDS += ["value", "return", "def", "class"]


# --------------------------------------------------------------------------- generators


def _text(rng: random.Random, n_words: int) -> str:
    lines = []
    for _ in range(max(1, n_words // 10)):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(10)))
    return "\n".join(lines)


def chat_conversation(
    seed: int,
    *,
    turns: int = 3,
    steps: int = 4,
    big: int = 1_500,
    abandoned: bool = False,
    unanswered_call: bool = False,
) -> list[dict[str, Any]]:
    """A random OpenAI Chat agent conversation: turns of user text (some with an image),
    tool steps with 1-3 parallel calls and outputs of 0..``big`` words, answers.
    ``abandoned``: the last step's results get no reply and a new user turn follows.
    ``unanswered_call``: the last call of the run gets no result, then a new user turn.
    """
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    call = 0
    for t in range(turns):
        text = f"Turn {t}: " + _text(rng, rng.randint(5, 60))
        if rng.random() < 0.4:
            url = f"data:image/png;base64,{PNG}"
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": url}},
                    ],
                }
            )
        else:
            out.append({"role": "user", "content": text})
        for _ in range(rng.randint(1, steps)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                call += 1
                name = rng.choice(["bash", "read_file", "grep"])
                args = json.dumps({"command": f"cmd {call}"})
                calls.append(
                    {
                        "id": f"call_{call}",
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                )
            out.append({"role": "assistant", "content": _text(rng, 8), "tool_calls": calls})
            for c in calls:
                size = rng.choice([0, 5, 50, big, big * 2])
                out.append({"role": "tool", "tool_call_id": c["id"], "content": _text(rng, size)})
        out.append({"role": "assistant", "content": "Done: " + _text(rng, 20)})
    if abandoned or unanswered_call:
        call += 1
        calls = [
            {
                "id": f"call_{call}",
                "type": "function",
                "function": {"name": "bash", "arguments": "{}"},
            }
        ]
        out.append({"role": "assistant", "content": "Running it.", "tool_calls": calls})
        if abandoned:
            content = _text(rng, big * 3)
            out.append({"role": "tool", "tool_call_id": f"call_{call}", "content": content})
        out.append({"role": "user", "content": "Are you still there?"})
    return out


def in_format(chat: list[dict[str, Any]], fmt: str) -> tuple[list[Any], Any]:
    """(messages, system) of a chat conversation written in ``fmt``."""
    if fmt == "openai_chat":
        return chat, None
    converted = convert_messages(chat, fmt)
    return converted.messages, converted.system


def pairing_violations(messages: list[Any], fmt: str) -> list[Any]:
    """Pairing violations of the full normalised view (independent of our scanner)."""
    events: list[tuple[int, int, str]] = []
    for pos, message in enumerate(normalize_messages(messages, fmt)):
        for part in message.parts:
            if part.kind == "tool_call":
                events.append((pos, 0, part.call_id or ""))
            elif part.kind == "tool_result":
                events.append((pos, 1, part.call_id or ""))
    return validate_pairing(events)


def attachments(obj: Any) -> Iterator[str]:
    """Every base64 payload inside ``obj`` (image data and data URLs)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("data", "url", "image_url") and isinstance(value, str) and PNG in value:
                yield value
            else:
                yield from attachments(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from attachments(value)


def texts(obj: Any) -> Iterator[str]:
    """Every string inside ``obj``."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from texts(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from texts(value)


# --------------------------------------------------------------------------- doctests


@pytest.mark.parametrize(
    "name",
    ["ctxbudget.prune", "ctxbudget.stubs", "ctxbudget.turns", "ctxbudget.events"],
)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    fmt=st.sampled_from(FORMATS),
    window=st.sampled_from([8_000, 16_000, 32_000, 128_000]),
    abandoned=st.booleans(),
    unanswered=st.booleans(),
    run_start=st.booleans(),
)
def test_prune_properties(
    seed: int, fmt: str, window: int, abandoned: bool, unanswered: bool, run_start: bool
) -> None:
    chat = chat_conversation(seed, abandoned=abandoned, unanswered_call=unanswered)
    messages, system = in_format(chat, fmt)
    snapshot = copy.deepcopy(messages)
    result = prune(messages, window=window, system=system, format=fmt, run_start=run_start)

    # D1: the caller's history is untouched; unchanged messages shared, changed ones new
    assert messages == snapshot
    assert result.messages is not messages
    changed = {p.index for p in result.pruned if p.kind != "missing"}
    receivers = {p.index + 1 for p in result.pruned if p.kind == "missing"}
    ids_out = {id(m) for m in result.messages}
    not_shared = {i for i, m in enumerate(messages) if id(m) not in ids_out}
    assert changed <= not_shared <= changed | receivers
    # attachments survive, bytes-identical
    assert sorted(attachments(result.messages)) == sorted(attachments(messages))
    # pairing valid after pruning (the generated input is valid, or D4 makes it so)
    assert pairing_violations(result.messages, fmt) == []
    # the numbers are honest
    check = estimate_request(result.messages, system=system, format=fmt)
    assert result.tokens_after == check.total
    budget = ContextWindowBudget(window)
    assert result.fits == budget.fits(check)
    if not any(p.kind == "missing" for p in result.pruned):
        assert result.tokens_after <= result.tokens_before
    # stubs keep their call id and the tool name
    for p in result.pruned:
        assert p.call_id
        if p.kind != "missing":
            assert p.tokens >= PruneConfig().min_output_tokens
    # pruning again adds nothing (stubs are never stubbed)
    again = prune(result.messages, window=window, system=system, format=fmt, run_start=run_start)
    assert again.pruned == () or all(p.kind == "old" for p in again.pruned)
    if not again.fits or again.pruned:
        assert again.tokens_after <= result.tokens_after


# --------------------------------------------------------------------------- unit tests


def _two_turns(big_words: int = 3_000) -> list[dict[str, Any]]:
    rng = random.Random(1)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug."}]
    for i in range(6):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "x"}'},
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": _text(rng, big_words)})
    msgs.append({"role": "assistant", "content": "Found it."})
    msgs.append({"role": "user", "content": "Fix it."})
    msgs.append({"role": "assistant", "content": "Fixed."})
    msgs.append({"role": "user", "content": "Thanks, and the tests?"})
    return msgs


def test_old_outputs_stubbed_oldest_first_and_tail_kept() -> None:
    msgs = _two_turns()
    result = prune(msgs, window=64_000)  # 8000-token tail: the last two outputs are in it
    assert [p.call_id for p in result.pruned] == ["c0", "c1", "c2", "c3"]
    result = prune(msgs, window=64_000, config=PruneConfig(tail_max=2_000))
    assert [p.call_id for p in result.pruned] == ["c0", "c1", "c2", "c3", "c4", "c5"]
    assert all(p.kind == "old" for p in result.pruned)
    stub = result.messages[2]["content"]
    assert stub.startswith(f"{STUB_PREFIX}tool output pruned] bash returned ")
    assert "It began:\n" in stub and "narrower request" in stub and "read the data in parts" in stub
    assert f"{result.pruned[0].tokens:,} tokens" in stub
    assert result.messages[2]["tool_call_id"] == "c0"
    # the last messages (fresh tail, last 2 turns) are the caller's objects
    for i in range(13, 17):
        assert result.messages[i] is msgs[i]
    assert result.tail_start <= 13


def test_invalidate_after_a_nested_edit_matches_a_fresh_pruner() -> None:
    msgs = _two_turns()
    msgs[2]["content"] = [{"type": "text", "text": msgs[2]["content"]}]
    pruner = Pruner(window=64_000)
    first = pruner.prune(msgs)
    assert first.pruned[0].call_id == "c0"
    msgs[2]["content"].append({"type": "text", "text": "more output " * 500})  # in place
    stale = pruner.prune(msgs)
    assert stale.pruned[0].tokens == first.pruned[0].tokens  # not seen, as documented
    pruner.invalidate(msgs[2])
    again = pruner.prune(msgs)
    fresh = Pruner(window=64_000).prune(copy.deepcopy(msgs))
    assert again.pruned[0].tokens > first.pruned[0].tokens
    assert again.pruned == fresh.pruned
    assert (again.tokens_before, again.tokens_after) == (fresh.tokens_before, fresh.tokens_after)
    assert again.messages == fresh.messages
    pruner.invalidate()  # everything: the same again
    assert pruner.prune(msgs).messages == fresh.messages


def test_threshold_gates_pruning_when_the_request_fits() -> None:
    no_tail = {"tail_min": 0, "tail_max": 0, "min_turns": 0}
    small = _two_turns(big_words=60)  # outputs under min_output_tokens: never stubbed
    assert prune(small, window=64_000, config=PruneConfig(threshold=0, **no_tail)).pruned == ()
    msgs = _two_turns(big_words=400)  # 6 outputs of ~450 tokens
    quiet = prune(msgs, window=64_000, config=PruneConfig(threshold=10_000, **no_tail))
    assert quiet.pruned == () and quiet.fits and quiet.event is None
    assert all(a is b for a, b in zip(quiet.messages, msgs, strict=True))
    loud = prune(msgs, window=64_000, config=PruneConfig(threshold=1_000, **no_tail))
    assert len(loud.pruned) == 6  # past the threshold: every prunable output at once
    assert loud.event is not None and loud.event.stubbed == 6


def test_threshold_ignored_when_the_request_does_not_fit() -> None:
    msgs = _two_turns(big_words=3_000)
    result = prune(msgs, window=16_000, config=PruneConfig(threshold=10**9))
    assert len(result.pruned) == 6
    assert result.tokens_after < result.tokens_before


def test_default_threshold_and_tail() -> None:
    cfg = PruneConfig()
    assert cfg.tail_tokens(1_000) == 2_000
    assert cfg.tail_tokens(20_000) == 5_000
    assert cfg.tail_tokens(1_000_000) == 8_000
    assert cfg.threshold_tokens(5_000) == 2_000
    assert cfg.threshold_tokens(1_000_000) == 20_000
    with pytest.raises(ValueError):
        PruneConfig(tail_min=10, tail_max=5)


def test_turn_floor_protects_last_two_turns_within_its_cap() -> None:
    msgs = _two_turns(big_words=300)
    # the last 2 turns start at "Fix it." (index 14); everything after is protected
    turn_cfg = PruneConfig(tail_min=0, tail_max=0, threshold=0)
    result = prune(msgs, window=200_000, config=turn_cfg)
    assert result.tail_start == 14
    # one turn only: the floor would cover everything, but it is capped at half the usable
    one_turn = _two_turns()[:13]
    result = prune(one_turn, window=16_000, config=PruneConfig(threshold=0))
    assert result.pruned  # outputs of the single long turn are prunable beyond the cap
    literal = prune(
        one_turn, window=16_000, config=PruneConfig(threshold=0, turn_floor_fraction=None)
    )
    assert literal.pruned == () and literal.tail_start == 0


def test_turns_per_format() -> None:
    chat = _two_turns(big_words=5)
    expected = [0, 14, 16]
    for fmt in FORMATS:
        messages, _ = in_format(chat, fmt)
        infos = scan(messages, fmt)
        starts = turn_starts(infos)
        assert len(starts) == 3, fmt
        # tool-result user messages (Anthropic, Gemini) do not start turns
        for i in starts:
            assert "tool" not in json.dumps(messages[i]), (fmt, messages[i])
    assert turn_starts(scan(chat, "openai_chat")) == expected


@pytest.mark.parametrize("prune_media", [True, False])
def test_anthropic_keeps_other_blocks_and_result_images(prune_media: bool) -> None:
    big = _text(random.Random(3), 4_000)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Look at the screen."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Taking a screenshot."},
                {"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "cat", "input": {"path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": big}, image],
                },
                {"type": "tool_result", "tool_use_id": "t2", "content": "short", "is_error": True},
                {
                    "type": "text",
                    "text": "Also note the clock.",
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
        {"role": "assistant", "content": "I see it."},
        {"role": "user", "content": "Next."},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "Go on."},
    ]
    snapshot = copy.deepcopy(messages)
    cfg = PruneConfig(threshold=0, tail_min=0, tail_max=10, prune_media=prune_media)
    result = prune(messages, window=64_000, config=cfg)
    assert messages == snapshot
    assert [(p.call_id, p.tool) for p in result.pruned] == [("t1", "screenshot")]
    new = result.messages[2]
    assert new is not messages[2]
    blocks = new["content"]
    assert blocks[1] is messages[2]["content"][1]  # the other result: same object
    assert blocks[2] is messages[2]["content"][2]  # the text block with cache_control
    stubbed = blocks[0]
    assert stubbed["tool_use_id"] == "t1"
    if prune_media:  # the screenshot went with the stub, which says so
        assert stubbed["content"].startswith(STUB_PREFIX)
        assert "(1 image or file" not in stubbed["content"]
        assert ", 1 image or file)" in stubbed["content"]
    else:
        assert stubbed["content"][0]["text"].startswith(STUB_PREFIX)
        assert stubbed["content"][1] is image  # the screenshot survives, the same object
    assert pairing_violations(result.messages, "anthropic") == []


def test_gemini_stub_and_calls_without_ids() -> None:
    big = _text(random.Random(4), 3_000)
    contents = [
        {"role": "user", "parts": [{"text": "Read the log."}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"p": "log"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": big}}}]},
        {"role": "model", "parts": [{"text": "Read."}]},
        {"role": "user", "parts": [{"text": "Now?"}]},
        {"role": "model", "parts": [{"text": "Ok."}]},
        {"role": "user", "parts": [{"text": "Go."}]},
    ]  # fmt: skip
    result = prune(contents, window=16_000, format="gemini", config=PruneConfig(threshold=0))
    assert [(p.tool, p.kind) for p in result.pruned] == [("read", "old")]
    fr = result.messages[2]["parts"][0]["functionResponse"]
    assert fr["name"] == "read" and "id" not in fr
    assert fr["response"]["result"].startswith(f"{STUB_PREFIX}tool output pruned] read")
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {"output": big}
    assert pairing_violations(result.messages, "gemini") == []


def test_responses_stub_keeps_call_id() -> None:
    chat = _two_turns()
    messages, _ = in_format(chat, "openai_responses")
    cfg = PruneConfig(tail_max=2_000)
    result = prune(messages, window=32_000, format="openai_responses", config=cfg)
    outputs = [m for m in result.messages if m.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == [f"c{i}" for i in range(6)]
    assert all(o["output"].startswith(STUB_PREFIX) for o in outputs)


# --------------------------------------------------------------------------- D4


@pytest.mark.parametrize("fmt", FORMATS)
def test_abandoned_results_are_stubbed_at_run_start(fmt: str) -> None:
    chat = chat_conversation(7, turns=1, steps=1, big=200, abandoned=True)
    messages, system = in_format(chat, fmt)
    result = prune(messages, window=200_000, system=system, format=fmt, run_start=True)
    interrupted = [p for p in result.pruned if p.kind == "interrupted"]
    assert len(interrupted) == 1
    start = f"{STUB_PREFIX}tool output not"
    stub = next(t for t in texts(result.messages) if t.startswith(start))
    assert "the run stopped before the model read them" in stub
    assert "bash" in stub
    assert pairing_violations(result.messages, fmt) == []
    # without run_start, a user message after a result is read with it, fitting or not
    total = estimate_request(messages, system=system, format=fmt).total
    over = ContextWindowBudget(total + 100, 200, margin=0)
    for budget in (over, ContextWindowBudget(200_000)):
        kept = prune(messages, budget=budget, system=system, format=fmt)
        assert not [p for p in kept.pruned if p.kind == "interrupted"]
    # not abandoned yet: mid-run, the results end the history and the model is about to read
    mid, system = in_format(chat[:-1], fmt)
    assert prune(mid, window=200_000, system=system, format=fmt).pruned == ()
    # ... unless the caller says a new run starts
    assert prune(mid, window=200_000, system=system, format=fmt, run_start=True).pruned


@pytest.mark.parametrize("fmt", FORMATS)
def test_unanswered_call_gets_an_interrupted_result(fmt: str) -> None:
    chat = chat_conversation(8, turns=1, steps=1, big=10, unanswered_call=True)
    messages, system = in_format(chat, fmt)
    assert pairing_violations(messages, fmt)  # invalid as it stands
    snapshot = copy.deepcopy(messages)
    result = prune(messages, window=200_000, system=system, format=fmt)
    assert messages == snapshot
    assert [p.kind for p in result.pruned] == ["missing"]
    assert pairing_violations(result.messages, fmt) == []
    assert missing_text("bash") in list(texts(result.messages))
    assert len(result.messages) >= len(messages)
    # the new user message is still there, after the added result
    last = result.messages[-1]
    assert "Are you still there?" in json.dumps(last)


def test_a_result_read_with_a_user_message_after_it_is_kept() -> None:  # fits or not
    # Chat tool messages cannot hold images: browser agents send the screenshot as a user
    # message right after the result, and the model reads both.
    page = "\n".join(f"<div id='row{i}'>order #{1000 + i} status=shipped</div>" for i in range(120))
    call = {"id": "c1", "type": "function", "function": {"name": "get_page", "arguments": "{}"}}
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    live = [
        {"role": "system", "content": "You drive a browser."},
        {"role": "user", "content": "Which orders are still pending?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": page},
        {"role": "user", "content": [{"type": "text", "text": "Screenshot:"}, image]},
    ]
    assert prune(live, window=200_000).pruned == ()
    answered = [*live, {"role": "assistant", "content": "None is pending."}]
    later = [*answered, {"role": "user", "content": "And the total of row 7?"}]
    assert prune(later, window=200_000).pruned == ()


def call_then_assistant(fmt: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    chat: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "I could not run it."},
    ]
    return convert_messages(chat, fmt, source="openai_chat").messages


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic"])
def test_call_followed_by_another_assistant_message_gets_a_result(fmt: str) -> None:
    messages = call_then_assistant(fmt)
    assert pairing_violations(messages, fmt)
    result = prune(messages, window=200_000, format=fmt)
    assert [p.kind for p in result.pruned] == ["missing"]
    assert pairing_violations(result.messages, fmt) == []


def test_partial_results_mid_run_are_left_alone() -> None:
    calls = [
        {"id": f"p{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        for i in range(2)
    ]
    msgs = [
        {"role": "user", "content": "Run both."},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "p0", "content": "one"},
    ]
    assert prune(msgs, window=16_000).pruned == ()


# --------------------------------------------------------------------------- Pruner, events


def test_pruner_reuses_stub_objects_and_emits_only_on_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[ContextEvent] = []
    pruner = Pruner(16_000, on_event=events.append)
    msgs = _two_turns()
    with caplog.at_level(logging.INFO, logger="ctxbudget.prune"):
        first = pruner.prune(msgs)
    assert len(events) == 1 and events[0].stubbed == 6 and events[0].reason == "proactive"
    assert events[0].components is not None  # the view's breakdown (SPEC G4)
    assert events[0].components.messages == first.estimate.per_message
    assert any(getattr(r, "ctxbudget_event", None) is events[0] for r in caplog.records)
    again = pruner.prune([*msgs, {"role": "assistant", "content": "Checking."}], reason="retry")
    assert len(events) == 1  # same stubs: no event, the view did not change
    assert all(a is b for a, b in zip(first.messages, again.messages, strict=False))
    assert again.estimate.total > first.estimate.total


def test_callback_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def boom(event: ContextEvent) -> None:
        raise RuntimeError("observer bug")

    with caplog.at_level(logging.ERROR, logger="ctxbudget.prune"):
        result = prune(_two_turns(), window=16_000, on_event=boom)
    assert result.pruned
    assert "on_event callback failed" in caplog.text


def test_bad_reason_and_missing_window() -> None:
    with pytest.raises(ValueError, match="reason"):
        prune(_two_turns(), window=16_000, reason="because")
    with pytest.raises(TypeError, match="window"):
        prune(_two_turns())


def test_stub_text_shape() -> None:
    text = stub_text("grep", "x\n" * 10, 5_000, head_lines=3)
    assert "grep returned 5,000 tokens (10 lines)" in text
    assert "x\nx\nx\n[...]" in text
    assert SUMMARY_MARKER not in text
    assert stub_text(None, "", 0).count("the tool") == 2


@pytest.mark.parametrize("prune_media", [True, False])
def test_a_screenshot_output_is_stubbed_as_a_blank_one(prune_media: bool) -> None:
    """A ``computer_call_output`` holds a screenshot and nothing else: stubbed, it holds a
    blank one (its pairing intact); with ``prune_media=False`` it is left alone."""
    screenshot = {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"}
    items = [
        {"role": "user", "content": "Click it."},
        {"type": "computer_call", "call_id": "k1", "action": {"type": "screenshot"}},
        {"type": "computer_call_output", "call_id": "k1", "output": screenshot},
        {"type": "message", "role": "assistant", "content": "Clicked."},
        {"role": "user", "content": "Again."},
        {"type": "message", "role": "assistant", "content": "Ok."},
        {"role": "user", "content": "Once more."},
    ]
    cfg = PruneConfig(
        threshold=0, min_output_tokens=0, tail_min=0, tail_max=0, min_turns=0,
        prune_media=prune_media,
    )  # fmt: skip
    result = prune(items, window=16_000, format="openai_responses", config=cfg)
    if not prune_media:
        assert result.pruned == ()
        assert result.messages[2] is items[2]
        return
    assert [(p.call_id, p.kind) for p in result.pruned] == [("k1", "old")]
    stubbed = result.messages[2]
    assert stubbed["call_id"] == "k1" and stubbed["output"]["type"] == "computer_screenshot"
    assert stubbed["output"]["image_url"] != screenshot["image_url"]
    assert pairing_violations(result.messages, "openai_responses") == []


def test_gemini_bytes_attachment_beside_a_stubbed_response() -> None:
    raw = bytes(range(256)) * 10
    big = _text(random.Random(9), 3_000)
    blob = {"inline_data": {"mime_type": "image/png", "data": raw}}
    contents = [
        {"role": "user", "parts": [{"text": "Read it."}]},
        {"role": "model", "parts": [{"function_call": {"id": "g1", "name": "read", "args": {}}}]},
        {"role": "user", "parts": [
            {"function_response": {"id": "g1", "name": "read", "response": {"result": big}}},
            blob]},
        {"role": "model", "parts": [{"text": "Done."}]},
        {"role": "user", "parts": [{"text": "Next."}]},
        {"role": "model", "parts": [{"text": "Ok."}]},
        {"role": "user", "parts": [{"text": "Go on."}]},
    ]  # fmt: skip
    result = prune(contents, window=16_000, format="gemini", config=PruneConfig(threshold=0))
    assert len(result.pruned) == 1
    parts = result.messages[2]["parts"]
    assert parts[1] is blob and parts[1]["inline_data"]["data"] == raw
    assert contents[2]["parts"][0]["function_response"]["response"] == {"result": big}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), fmt=st.sampled_from(FORMATS))
def test_pruner_turn_after_turn_equals_one_shot(seed: int, fmt: str) -> None:
    """The caches of a Pruner kept across turns never change the answer."""
    chat = chat_conversation(seed, turns=4, steps=4, abandoned=seed % 2 == 0)
    messages, system = in_format(chat, fmt)
    pruner = Pruner(16_000, format=fmt)
    for k in range(1, len(messages) + 1, 3):
        prefix = messages[:k]
        kept = pruner.prune(prefix, system=system)
        fresh = prune(prefix, window=16_000, system=system, format=fmt)
        assert kept.messages == fresh.messages
        assert kept.pruned == fresh.pruned
        assert kept.tokens_after == fresh.tokens_after and kept.fits == fresh.fits


def genai_history(results: int = 12) -> list[Any]:
    """A google-genai ``Content`` history: a user turn, then tool calls with large results."""
    from google.genai import types

    history = [types.Content(role="user", parts=[types.Part(text="Find the failing test.")])]
    for i in range(results):
        call = types.FunctionCall(name="bash", args={"cmd": f"cat log{i}.txt"}, id=f"c{i}")
        reply = types.FunctionResponse(
            name="bash", response={"result": "ok line\n" * 800}, id=f"c{i}"
        )
        history.append(types.Content(role="model", parts=[types.Part(function_call=call)]))
        history.append(types.Content(role="user", parts=[types.Part(function_response=reply)]))
    history.append(types.Content(role="user", parts=[types.Part(text="And now?")]))
    return history


def test_genai_content_history_stays_content_objects() -> None:
    history = genai_history()
    before = copy.deepcopy(history)
    result = prune(history, window=8_000, model="gemini-2.5-pro")
    assert result.pruned and result.fits
    assert all(type(m) is type(history[0]) for m in result.messages)
    stubbed = result.messages[result.pruned[0].index]
    assert stubbed is not history[result.pruned[0].index]
    response = stubbed.parts[0].function_response
    assert response.id == f"c{(result.pruned[0].index - 2) // 2}"
    assert response.response["result"].startswith(STUB_PREFIX)
    assert sum(m is h for m, h in zip(result.messages, history, strict=True)) == (
        len(history) - len(result.pruned)
    )
    assert history == before


def test_gemini_without_ids_keeps_later_calls_when_a_result_is_added() -> None:
    # Made-up Gemini ids name message indices; the result added for the lost call goes after
    # the model's turn (its two contents), into the user's next message, and the unanswered
    # call at the end must still read as the same call (left for the caller to run).
    def call(name: str) -> dict[str, Any]:
        return {"role": "model", "parts": [{"function_call": {"name": name, "args": {}}}]}

    history = [
        {"role": "user", "parts": [{"text": "go"}]},
        call("ls"),
        {"role": "model", "parts": [{"text": "I could not run it."}]},
        {"role": "user", "parts": [{"text": "try again"}]},
        call("cat"),
    ]
    result = prune(history, window=200_000, format="gemini")
    assert [(p.index, p.kind) for p in result.pruned] == [(1, "missing")]
    assert result.messages[:3] == history[:3] and result.messages[4] is history[4]
    added, words = result.messages[3]["parts"]
    assert added["function_response"]["name"] == "ls" and words == {"text": "try again"}


def test_kept_pruner_notices_replaced_parts_of_genai_content() -> None:
    types = pytest.importorskip("google.genai.types")

    def call(i: int) -> Any:
        fn = types.FunctionCall(id=f"c{i}", name="read", args={"p": i})
        return types.Content(role="model", parts=[types.Part(function_call=fn)])

    def result(i: int, text: str) -> Any:
        fn = types.FunctionResponse(id=f"c{i}", name="read", response={"result": text})
        return types.Content(role="user", parts=[types.Part(function_response=fn)])

    history = [types.Content(role="user", parts=[types.Part(text="task")])]
    for i in range(10):
        history += [call(i), result(i, f"{i}:" + "some output line\n" * 800)]
    history += [
        types.Content(role="model", parts=[types.Part(text="done")]),
        types.Content(role="user", parts=[types.Part(text="next")]),
    ]
    kept = Pruner(window=16_000, model="gemini-2.5-pro", format="gemini")
    assert kept.prune(history).pruned
    history[4].parts = result(1, "OTHER TOOL OUTPUT\n" * 3000).parts  # a new parts list
    one_shot = prune(history, window=16_000, model="gemini-2.5-pro", format="gemini")
    again = kept.prune(history)
    assert (again.messages, again.pruned) == (one_shot.messages, one_shot.pruned)


def test_kept_pruner_names_the_tool_the_call_has_now() -> None:
    def history(tool: str) -> list[dict[str, Any]]:
        call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "row\n" * 20_000},
            *text_turns(6),
        ]

    kept = Pruner(window=16_000, model="gpt-4o")
    first = history("Bash ")
    kept.prune(first)
    fixed = [first[0], history("bash")[1], *first[2:]]  # the call message replaced
    assert kept.prune(fixed).messages == prune(fixed, window=16_000, model="gpt-4o").messages


def test_an_event_callback_may_call_the_same_pruner() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "row\n" * 20_000},
        *text_turns(4),
    ]
    seen: list[int] = []

    def on_event(event: ContextEvent) -> None:
        seen.append(len(pruner.prune(messages).messages))

    pruner = Pruner(window=16_000, model="gpt-4o", on_event=on_event)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (pruner.prune(messages), done.set()), daemon=True)
    worker.start()
    assert done.wait(30), "the callback deadlocked on the Pruner's lock"
    assert seen == [len(messages)]


def text_turns(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant" if i % 2 == 0 else "user", "content": f"turn {i}"} for i in range(n)
    ]


def test_an_overflowing_browser_run_keeps_the_results_the_model_read() -> None:
    # Every page comes with a screenshot as a user message; the request is over budget.
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Find the pending orders."}]
    for i in range(12):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "get_page", "arguments": "{}"},
        }
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"<div>page {i}</div>\n" * 400},
            {"role": "user", "content": [{"type": "text", "text": "Screenshot:"}, image]},
        ]
    total = estimate_request(history, model="gpt-4o").total
    result = prune(history, budget=ContextWindowBudget(total, 2_000, margin=0), model="gpt-4o")
    assert result.pruned and result.fits
    assert all(p.kind == "old" for p in result.pruned)  # older pages, as old outputs
    assert result.messages[-2] is history[-2]  # the page the model is about to read


def test_kept_pruner_on_a_list_no_message_decides_then_one_does() -> None:
    plain: list[dict[str, Any]] = []
    for i in range(30):
        plain += [
            {"role": "user", "content": f"question {i} " + "detail " * 200},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    pruner = Pruner(window=16_000, model="gpt-4.1")
    for n in (40, 50, 60):  # appended turn by turn, undecided all along
        assert pruner.prune(plain[:n]) == prune(plain[:n], window=16_000, model="gpt-4.1")
    assert pruner.format is None
    call = {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "a.py\n" * 3000}
    decided = [*plain, call, output, {"role": "user", "content": "and now?"}]
    assert pruner.prune(decided) == prune(decided, window=16_000, model="gpt-4.1")
    assert pruner.format == "openai_responses"
