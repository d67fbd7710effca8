"""Compaction (SPEC E1-E4): prompt, kept turns by tokens, hierarchy, progress or failure."""

from __future__ import annotations

import asyncio
import copy
import doctest
import importlib
import logging
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.compact import CompactionError, acompact, compact
from ctxbudget.errors import ContextBudgetError
from ctxbudget.events import ContextEvent
from ctxbudget.messages import FORMATS
from ctxbudget.request import estimate_request
from ctxbudget.summary_prompt import INSTRUCTIONS, summary_level, summary_max_tokens
from ctxbudget.turns import SUMMARY_MARKER, first_text, scan
from tests.test_prune import (
    _text,
    attachments,
    chat_conversation,
    in_format,
    pairing_violations,
)


def short_summary(prompt: str, max_tokens: int) -> str:
    return "## Goal\nFix the failing test.\n## Progress\nRead the code; found the bug in x.py."


class Recorder:
    """A summarizer that records its calls and answers with a short summary."""

    def __init__(self, answer: str = "## Goal\nShip it.\n## Next steps\nRun the tests.") -> None:
        self.calls: list[tuple[str, int]] = []
        self.answer = answer

    def __call__(self, prompt: str, max_tokens: int) -> str:
        self.calls.append((prompt, max_tokens))
        return self.answer


def long_chat(turns: int = 12, words: int = 400, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    for t in range(turns):
        out.append({"role": "user", "content": f"Task {t}: " + _text(rng, words)})
        out.append({"role": "assistant", "content": f"Answer {t}: " + _text(rng, 30)})
    return out


@pytest.mark.parametrize("name", ["ctxbudget.compact", "ctxbudget.summary_prompt"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------- the prompt


def test_prompt_transcript_first_then_structured_instructions() -> None:
    rec = Recorder()
    history = long_chat()
    compact(history, rec, window=16_000)
    ((prompt, max_tokens),) = rec.calls
    assert prompt.startswith("<transcript>\n[1] user: Task 0: ")
    transcript, instructions = prompt.split("</transcript>", 1)
    assert "[2] assistant: Answer 0: " in transcript
    for section in (
        "## Goal",
        "## Constraints and preferences",
        "## Decisions",
        "## Facts and identifiers",
        "## Files and artifacts",
        "## Progress",
        "## Next steps",
    ):
        assert section in instructions
    assert "verbatim" in instructions
    assert "do not continue it" in instructions
    assert f"at most {max_tokens * 3 // 5} words" in instructions
    assert instructions.rstrip().endswith("Write only the summary.")
    assert max_tokens == 800  # 5% of 16k: the cap wins over the 2000 floor


def test_max_tokens_rule() -> None:
    assert summary_max_tokens(1_000, 1_000_000) == 2_000
    assert summary_max_tokens(30_000, 1_000_000) == 6_000
    assert summary_max_tokens(1_000_000, 1_000_000) == 12_000
    assert summary_max_tokens(1_000_000, 100_000) == 5_000
    assert summary_max_tokens(10_000, 32_000) == 1_600
    assert "{words}" in INSTRUCTIONS


def test_tool_outputs_and_attachments_in_the_transcript() -> None:
    chat = chat_conversation(3, turns=4, steps=3, big=2_000)
    rec = Recorder()
    compact(chat, rec, window=32_000, max_item_chars=500)
    prompt = rec.calls[0][0]
    assert "called " in prompt and " returned:\n" in prompt
    assert "characters omitted" in prompt  # long outputs clipped
    if any(isinstance(m.get("content"), list) for m in chat[: len(chat) // 2]):
        assert "[image: image/png" in prompt


# --------------------------------------------------------------------------- the result


@pytest.mark.parametrize("fmt", FORMATS)
def test_summary_message_per_format(fmt: str) -> None:
    chat = chat_conversation(11, turns=6, steps=3, big=1_000)
    messages, system = in_format(chat, fmt)
    snapshot = copy.deepcopy(messages)
    result = compact(messages, short_summary, window=16_000, system=system, format=fmt)
    assert messages == snapshot
    infos = scan(result.messages, fmt)
    summaries = [i for i, info in enumerate(infos) if info.summary]
    assert len(summaries) == 1
    index = summaries[0]
    assert first_text(fmt, result.messages[index]).startswith(f"{SUMMARY_MARKER} level=1]")
    head = 1 if fmt in ("openai_chat", "openai_responses") else 0
    assert index == head
    assert result.messages[:head] == messages[:head]
    # kept messages are the caller's objects, in order, at the end
    kept = result.messages[index + 1 :]
    assert len(kept) == result.kept
    assert all(a is b for a, b in zip(kept, messages[len(messages) - result.kept :], strict=False))
    assert pairing_violations(result.messages, fmt) == []
    assert result.tokens_after < result.tokens_before
    assert result.summary == short_summary("", 0)
    assert result.fits


def test_kept_messages_sized_by_tokens_not_turns() -> None:
    history = long_chat(turns=12, words=400)
    result = compact(history, short_summary, window=200_000, keep_tokens=1_200)
    per_message = estimate_request(history).per_message
    kept = sum(per_message[len(history) - result.kept :])
    assert kept <= 1_200
    assert kept + per_message[len(history) - result.kept - 1] > 1_200
    # at least the last message, however big it is
    result = compact(history, short_summary, window=200_000, keep_tokens=1)
    assert result.kept == 1 and result.messages[-1] is history[-1]


def test_cut_never_splits_a_call_from_its_results() -> None:
    chat = chat_conversation(21, turns=2, steps=4, big=1_500)
    done = 0
    for keep in range(50, 6_000, 150):
        try:
            result = compact(chat, short_summary, window=200_000, keep_tokens=keep)
        except CompactionError as exc:  # too little left to summarize: a clear refusal
            assert "not smaller" in str(exc)
            continue
        done += 1
        first_kept = result.messages[2]
        assert first_kept["role"] != "tool"
        assert pairing_violations(result.messages, "openai_chat") == []
    assert done >= 10


def test_hierarchical_condensation() -> None:
    history = long_chat(turns=30, words=300)
    levels: list[int] = []
    summaries_seen: list[int] = []
    prompts: list[str] = []
    current = history
    for step in range(5):
        current = [*current, *long_chat(turns=4, words=300, seed=step)[1:]]

        def summarize(prompt: str, max_tokens: int) -> str:
            prompts.append(prompt)
            return f"## Progress\nSummary number {len(prompts)}."

        result = compact(current, summarize, window=32_000, max_summaries=3)
        current = result.messages
        levels.append(result.level)
        summaries_seen.append(sum(1 for i in scan(current, "openai_chat") if i.summary))
    assert summaries_seen == [1, 2, 3, 1, 2]
    assert levels == [1, 1, 1, 2, 1]
    assert "earlier summary" in prompts[3] and "fold all of them" in prompts[3]
    assert "earlier summary" not in prompts[2]
    texts = [first_text("openai_chat", m) for m in current]
    assert [summary_level(t) for t in texts if t.startswith(SUMMARY_MARKER)] == [2, 1]


# --------------------------------------------------------------------------- failures


def test_summarizer_error_is_chained_and_history_untouched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = long_chat()
    snapshot = copy.deepcopy(history)

    def broken(prompt: str, max_tokens: int) -> str:
        raise ConnectionError("provider down")

    with (
        caplog.at_level(logging.WARNING, logger="ctxbudget.compact"),
        pytest.raises(CompactionError, match="ConnectionError: provider down") as info,
    ):
        compact(history, broken, window=16_000)
    assert isinstance(info.value.__cause__, ConnectionError)
    assert info.value.attempts == 1 and info.value.reason == "proactive"
    assert history == snapshot
    assert "compaction failed" in caplog.text


@pytest.mark.parametrize("answer", ["", "   \n", None])
def test_empty_summary_fails(answer: Any) -> None:
    with pytest.raises(CompactionError, match=r"empty|not str"):
        compact(long_chat(), lambda p, n: answer, window=16_000)


def test_summary_not_smaller_fails() -> None:
    history = long_chat(turns=3, words=40)
    bloated = "## Goal\n" + "very long summary " * 2_000
    with pytest.raises(CompactionError, match="not smaller"):
        compact(history, lambda p, n: bloated, window=16_000, keep_tokens=10)


def test_nothing_to_compact_fails() -> None:
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    with pytest.raises(CompactionError, match="nothing to compact"):
        compact(history, short_summary, window=16_000)


def test_history_that_cannot_fit_fails_before_calling_the_summarizer() -> None:
    budget = ContextWindowBudget(16_000)
    log = "2024-01-01 INFO request ok\n" * budget.available()  # a line is several tokens
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Read the log."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": log},
    ]
    snapshot = copy.deepcopy(history)
    per_message = estimate_request(history).per_message
    assert per_message[3] > budget.available()
    rec = Recorder()
    with pytest.raises(CompactionError, match="cannot fit the window") as info:
        compact(history, rec, budget=budget)
    assert rec.calls == [] and info.value.attempts == 0
    assert f"message [3], is {per_message[3]:,} tokens" in str(info.value)
    assert f"the {budget.available():,} tokens available" in str(info.value)
    assert history == snapshot


def test_oversized_summarization_request_is_reduced_first() -> None:
    history = long_chat(turns=40, words=800)  # ~40k tokens of transcript, a 16k window
    rec = Recorder()
    result = compact(history, rec, window=16_000)
    ((prompt, max_tokens),) = rec.calls
    budget = ContextWindowBudget(16_000)
    assert budget.fits(
        estimate_request([{"role": "user", "content": prompt}]).total, max_tokens=max_tokens
    )
    assert "were left out so that this request fits" in prompt
    assert result.events[0].dropped > 0
    assert "[1] user: Task 0" not in prompt  # the oldest went first
    assert result.fits


def test_overflow_from_the_summarizer_is_retried_with_less() -> None:
    history = long_chat(turns=60, words=200)
    sizes: list[int] = []

    def flaky(prompt: str, max_tokens: int) -> str:
        sizes.append(len(prompt))
        if len(sizes) == 1:
            raise ContextBudgetError("m", 16_000, 20_000, "too long")
        return "## Progress\nok"

    result = compact(history, flaky, window=32_000)
    assert len(sizes) == 2 and sizes[1] < sizes[0]
    assert result.events[0].attempts == 2 and result.events[0].dropped > 0

    def always(prompt: str, max_tokens: int) -> str:
        sizes.append(len(prompt))
        raise ValueError("This model's maximum context length is 8192 tokens")

    sizes.clear()
    with pytest.raises(CompactionError, match="maximum context length"):
        compact(history, always, window=32_000, max_attempts=3)
    assert len(sizes) == 3  # bounded: no loop


def test_events_and_reason(caplog: pytest.LogCaptureFixture) -> None:
    events: list[ContextEvent] = []
    with caplog.at_level(logging.INFO, logger="ctxbudget.compact"):
        result = compact(
            long_chat(), short_summary, window=16_000, reason="overflow", on_event=events.append
        )
    assert result.events == tuple(events)
    (event,) = events
    assert event.action == "compact" and event.reason == "overflow"
    assert event.tokens_before == result.tokens_before and event.tokens_after == result.tokens_after
    assert event.summarized == result.summarized and event.kept == result.kept
    assert event.attempts == 1 and event.summary_tokens > 0
    # The breakdown after it (SPEC G4), which adds up to its tokens.
    parts = event.components
    assert parts is not None and len(parts.messages) == event.messages_after
    assert parts.system + parts.conversation + parts.tools + parts.framing == event.tokens_after
    assert f"conversation {parts.conversation:,}" in str(event)
    assert "compact (overflow)" in caplog.text
    with pytest.raises(ValueError, match="reason"):
        compact(long_chat(), short_summary, window=16_000, reason="later")


def test_acompact_async_and_sync_summarizers() -> None:
    async def summarize(prompt: str, max_tokens: int) -> str:
        await asyncio.sleep(0)
        return "## Goal\nAsync."

    history = long_chat()
    result = asyncio.run(acompact(history, summarize, window=16_000))
    assert result.summary == "## Goal\nAsync."
    result = asyncio.run(acompact(history, short_summary, window=16_000))
    assert result.fits

    async def broken(prompt: str, max_tokens: int) -> str:
        raise TimeoutError("slow")

    with pytest.raises(CompactionError) as info:
        asyncio.run(acompact(history, broken, window=16_000))
    assert isinstance(info.value.__cause__, TimeoutError)


# --------------------------------------------------------------------------- properties


def _first_words(prompt: str, max_tokens: int) -> str:
    transcript = prompt.split("<transcript>\n", 1)[1].split("\n</transcript>", 1)[0]
    words = transcript.split()[: max_tokens // 3]
    return "## Progress\n" + " ".join(words)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    fmt=st.sampled_from(FORMATS),
    window=st.sampled_from([16_000, 32_000, 128_000]),
    keep=st.one_of(st.none(), st.integers(1, 5_000)),
)
def test_compact_properties(seed: int, fmt: str, window: int, keep: int | None) -> None:
    chat = chat_conversation(seed, turns=4, steps=4)
    messages, system = in_format(chat, fmt)
    snapshot = copy.deepcopy(messages)
    try:
        result = compact(
            messages, _first_words, window=window, system=system, format=fmt, keep_tokens=keep
        )
    except CompactionError as exc:  # a clear error, history untouched
        assert messages == snapshot
        assert str(exc)
        return
    assert messages == snapshot
    assert pairing_violations(result.messages, fmt) == []
    assert result.tokens_after < result.tokens_before
    check = estimate_request(result.messages, system=system, format=fmt)
    assert result.tokens_after == check.total
    assert result.fits == ContextWindowBudget(window).fits(check)
    kept = result.messages[len(result.messages) - result.kept :]
    assert all(a is b for a, b in zip(kept, messages[len(messages) - result.kept :], strict=False))
    # attachments in kept messages survive, bytes-identical
    assert sorted(attachments(kept)) == sorted(attachments(messages[len(messages) - result.kept :]))


def test_summaries_alone_are_condensed_or_refused() -> None:
    def summary(level: int, text: str) -> dict[str, Any]:
        body = "## Progress\n" + text * 200
        return {"role": "user", "content": f"{SUMMARY_MARKER} level={level}]\nintro\n\n{body}"}

    system = {"role": "system", "content": "s"}
    last = {"role": "user", "content": "What next?"}
    two = [system, summary(1, "first "), summary(2, "second "), last]
    result = compact(two, short_summary, window=16_000)
    assert result.level == 3 and result.summarized == 2 and result.kept == 1
    assert result.events[0].condensed == 2
    assert result.messages[0] is system and result.messages[-1] is last
    with pytest.raises(CompactionError, match="nothing to compact"):
        compact([system, summary(1, "only "), last], short_summary, window=16_000)


def test_genai_content_history_stays_content_objects() -> None:
    from google.genai import types

    history = [
        types.Content(
            role="user" if i % 2 == 0 else "model",
            parts=[types.Part(text=f"turn {i}: " + "words and more words " * 60)],
        )
        for i in range(30)
    ]
    result = compact(
        history, lambda p, n: "Goal: keep going.", window=6_000, model="gemini-2.5-pro"
    )
    assert all(type(m) is types.Content for m in result.messages)
    assert result.messages[0].parts[0].text.startswith("[ctxbudget summary v1")
    assert result.messages[-1] is history[-1]


def grep_steps(first: int, count: int) -> list[dict[str, Any]]:
    """``count`` agent steps (a grep call and its long output), call ids from ``first``."""
    out: list[dict[str, Any]] = []
    for i in range(first, first + count):
        function = {"name": "bash", "arguments": '{"command": "grep -rn parse_cfg"}'}
        call = {"id": f"c{i}", "type": "function", "function": function}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        result = "src/x.py:1: parse_cfg()\n" * 300
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_latest_user_request_survives_verbatim_when_summarized(fmt: str) -> None:
    # One user turn, many tool steps (an agent loop): the summary replaces the only request.
    request = "Rename `parse_cfg` to `load_config` everywhere, but do NOT touch vendor/."
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": request},
    ]
    chat += grep_steps(0, 20)
    messages, system = in_format(chat, fmt)
    result = compact(messages, short_summary, window=32_000, system=system, format=fmt)
    texts = [first_text(fmt, m) or "" for m in result.messages]
    summary = next(t for t in texts if t.startswith(SUMMARY_MARKER))
    assert request in summary
    assert "Fix the failing test." in summary  # the summarizer's text is there too
    if fmt == "anthropic":  # the new text would join the tool results' user message
        return
    # a request still in the kept part is not copied
    chat.append({"role": "user", "content": "Also update the docs."})
    chat.append({"role": "assistant", "content": "Will do."})
    messages, system = in_format(chat, fmt)
    kept = compact(
        messages, short_summary, window=32_000, system=system, format=fmt, keep_tokens=50
    )
    texts = [first_text(fmt, m) or "" for m in kept.messages]
    summary = next(t for t in texts if t.startswith(SUMMARY_MARKER))
    assert request not in summary


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_a_mid_run_instruction_is_kept_verbatim(fmt: str) -> None:
    big = "traceback line\n" * 600
    instruction = "IMPORTANT: from now on never run `rm`."
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "step 1 " + big},
        {"role": "assistant", "content": "ok"},
        {"role": "system", "content": instruction},
        {"role": "user", "content": "step 2 " + big},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "step 3"},
    ]
    messages, system = in_format(chat, fmt)
    result = compact(
        messages, short_summary, window=16_000, keep_tokens=200, system=system, format=fmt
    )
    texts = [first_text(fmt, m) or "" for m in result.messages]
    at = texts.index(instruction)
    assert texts[at - 1].startswith(SUMMARY_MARKER)  # right after the summary
    assert result.messages[at] is messages[3]  # the caller's own message
    assert 1 + result.summarized + result.kept == len(messages)  # 1: the leading system


def test_the_latest_request_survives_condensing_summaries() -> None:
    request = "Rename parse_cfg to load_config everywhere, but do NOT touch vendor/."
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": request},
    ]

    levels = []
    for round_ in range(5):
        history += grep_steps(20 * round_, 20)
        result = compact(history, short_summary, window=32_000)
        levels.append(result.level)
        history = list(result.messages)
        summaries = [m["content"] for m in history if str(m["content"]).startswith(SUMMARY_MARKER)]
        assert any(request in s for s in summaries), f"lost at compaction {round_ + 1}"
    assert max(levels) >= 2  # a condensing compaction happened


def test_a_history_many_windows_long_is_reduced_in_few_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One unit was left out per try, each try estimating the whole transcript again: a history
    # of 4,000 messages over a 16k window took over a thousand tries (quadratic; 72 s at 16k
    # messages and 128k). The request that goes out still fills the window.
    compact_module = importlib.import_module("ctxbudget.compact")
    built: list[int] = []
    real = compact_module.build_prompt

    def counting(*args: Any, **kwargs: Any) -> str:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compact_module, "build_prompt", counting)
    history = long_chat(turns=2_000, words=60)
    rec = Recorder()
    compact(history, rec, window=16_000)
    ((prompt, max_tokens),) = rec.calls
    budget = ContextWindowBudget(16_000)
    used = estimate_request([{"role": "user", "content": prompt}]).total
    assert len(built) <= 40
    assert budget.fits(used, max_tokens=max_tokens)
    assert used >= 0.9 * budget.available(max_tokens)
