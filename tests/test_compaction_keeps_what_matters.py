"""Compaction keeps what the next request cannot do without (each failed before).

- A Responses model response with a reasoning item travels whole: OpenAI rejects a
  ``function_call`` (or ``message``) item sent without its response's ``reasoning`` item.
- The user's request, the agent's task, never vanishes: not left out of a reduced
  transcript, and copied into the summary clipped when it is too long to copy whole.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from ctxbudget import ContextBudgetError, ContextGuard, GuardedRequest, estimate_tokens
from ctxbudget.compact import LATEST_REQUEST_MAX_TOKENS, compact
from ctxbudget.messages import FORMATS
from ctxbudget.turns import SUMMARY_MARKER, first_text, safe_cuts, scan
from tests.test_prune import in_format

# --------------------------------------------------------------------------- helpers


class Recorder:
    """A summarizer that records its prompts and answers with a short summary."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str, max_tokens: int) -> str:
        self.prompts.append(prompt)
        return "## Goal\n(unknown)\n## Progress\nRan the tests."


def gpt5_response(i: int, words: int, output_words: int) -> list[dict[str, Any]]:
    """One GPT-5 step: the output items ``[reasoning, message, function_call]`` of one
    response, then the caller's ``function_call_output``."""
    text = "Next: " + "x " * words
    return [
        {"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": "gAAAA"},
        {
            "type": "message",
            "id": f"msg_{i}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text}],
        },
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": "bash",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": f"call_{i}", "output": "w " * output_words},
    ]


def without_reasoning(items: list[Any]) -> list[str]:
    """Ids of the response items sent without their response's reasoning item."""
    ids = {m.get("id") for m in items}
    return [
        m["id"]
        for m in items
        if m.get("type") in ("message", "function_call")
        and str(m.get("id", "")).startswith(("msg_", "fc_"))
        and "rs_" + m["id"].split("_", 1)[1] not in ids
    ]


#: A long task: about 3,500 tokens, with a start and an end that tell it apart.
TASK = (
    "TASK-START Implement the following spec exactly. "
    + " ".join(f"requirement{i} must hold;" for i in range(700))
    + " TASK-END never touch vendor/."
)


def agent_run(steps: int, lines: int) -> list[dict[str, Any]]:
    """An OpenAI Chat agent loop: the task, then ``steps`` tool calls and outputs."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
    ]
    for i in range(steps):
        function = {"name": "bash", "arguments": '{"cmd": "pytest -x"}'}
        call = {"id": f"c{i}", "type": "function", "function": function}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "line of output\n" * lines})
    return out


def summary_of(messages: list[Any], fmt: str = "openai_chat") -> str:
    return next(t for m in messages if (t := first_text(fmt, m) or "").startswith(SUMMARY_MARKER))


# --------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("keep", [100, 300, 700, 1_200])
def test_a_function_call_keeps_its_reasoning_item(keep: int) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(6):
        items += gpt5_response(i, 5, 600)
    result = compact(items, Recorder(), window=16_000, format="openai_responses", keep_tokens=keep)
    kept = result.messages[1:]
    assert kept[0]["type"] == "reasoning"  # the kept part starts with a whole response
    assert without_reasoning(kept) == []


def test_the_guard_never_sends_a_function_call_without_its_reasoning_item() -> None:
    for seed in range(4):  # seed 1 cut inside a response before
        rng = random.Random(seed)
        items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
        for i in range(120):
            items += gpt5_response(i, rng.randint(5, 400), rng.randint(50, 1_500))
        guard = ContextGuard("gpt-5", window=16_000, summarize=Recorder())
        result = guard.send(lambda r: {"usage": {"input_tokens": 100}}, items)
        assert without_reasoning(result.request.messages) == [], f"seed {seed}"


def test_responses_without_reasoning_and_other_formats_cut_as_before() -> None:
    # Without reasoning items a cut between a message and a function_call stays safe.
    plain = [
        {"role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": "I'll run it."},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "assistant", "content": "Done."},
    ]
    assert safe_cuts(scan(plain, "openai_responses")) == [True, True, True, False, True, True]
    chat = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]  # fmt: skip
    assert safe_cuts(scan(chat, "openai_chat")) == [True, True, False, True, True]


def test_a_response_with_reasoning_is_cut_only_at_its_ends() -> None:
    # [user, reasoning, message, function_call, function_call_output, user]
    items = [{"role": "user", "content": "go"}, *gpt5_response(0, 5, 5)]
    items.append({"role": "user", "content": "and then?"})
    safe = safe_cuts(scan(items, "openai_responses"))
    assert safe == [True, True, False, False, False, True, True]
    # a response still open at the end (no input after it) is not cut either
    open_ = items[:4]
    assert safe_cuts(scan(open_, "openai_responses")) == [True, True, False, False, False]


# --------------------------------------------------------------------------- the task


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_long_task_survives_a_reduced_transcript(fmt: str) -> None:
    messages, system = in_format(agent_run(60, 400), fmt)
    at = next(i for i, m in enumerate(messages) if "TASK-START" in first_text(fmt, m))
    rec = Recorder()
    result = compact(messages, rec, window=16_000, system=system, format=fmt)
    (prompt,) = rec.prompts
    assert result.events[0].dropped > 0  # the transcript was reduced
    assert f"[{at}] user: TASK-START" in prompt  # but the summarizer sees the task
    assert "other than the user's request were left out" in prompt
    assert f"[{at + 1}] assistant" not in prompt  # the oldest steps did go
    summary = summary_of(result.messages, fmt)
    assert "TASK-START" in summary and "TASK-END never touch vendor/." in summary
    assert "characters omitted" in summary  # clipped, start and end kept
    copy = summary.split("<request>\n", 1)[1]
    assert estimate_tokens(copy) <= LATEST_REQUEST_MAX_TOKENS + 10
    assert result.fits


def test_the_guard_keeps_the_task() -> None:
    rec = Recorder()
    guard = ContextGuard("gpt-4o", window=32_000, summarize=rec)
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        return {"usage": {"prompt_tokens": 100}}

    guard.send(send, agent_run(250, 150))
    assert rec.prompts and all("TASK-START" in p for p in rec.prompts)
    assert "TASK-START" in summary_of(sent[-1].messages)
    assert "TASK-END" in summary_of(sent[-1].messages)


def test_the_task_survives_an_overflow_retry() -> None:
    prompts: list[str] = []

    def flaky(prompt: str, max_tokens: int) -> str:
        prompts.append(prompt)
        if len(prompts) == 1:
            raise ContextBudgetError("m", 16_000, 20_000, "too long")
        return "## Progress\nok"

    history = agent_run(20, 40)
    result = compact(history, flaky, window=200_000, keep_tokens=300)
    assert len(prompts) == 2 and len(prompts[1]) < len(prompts[0])
    assert result.events[0].dropped > 0
    assert all("[1] user: TASK-START" in p for p in prompts)


def test_a_task_too_big_to_show_whole_is_clipped_in_the_transcript() -> None:
    # Shown whole (max_item_chars is large) the task alone would not fit the request.
    task = "HUGE-TASK " + "spec words " * 6_000
    history = agent_run(30, 200)
    history[1] = {"role": "user", "content": task}
    rec = Recorder()
    result = compact(history, rec, window=16_000, max_item_chars=100_000)
    (prompt,) = rec.prompts
    assert "[1] user: HUGE-TASK" in prompt and "characters omitted" in prompt
    assert "HUGE-TASK" in summary_of(result.messages)


def test_a_long_task_survives_condensing_summaries() -> None:
    history = agent_run(0, 0)
    levels = []
    for round_ in range(5):
        for i in range(20 * round_, 20 * round_ + 20):
            function = {"name": "bash", "arguments": "{}"}
            call = {"id": f"c{i}", "type": "function", "function": function}
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"c{i}", "content": "out\n" * 600})
        result = compact(history, Recorder(), window=32_000)
        levels.append(result.level)
        history = list(result.messages)
        summaries = [str(m["content"]) for m in history if m["role"] == "user"]
        assert any("TASK-START" in s and "TASK-END" in s for s in summaries), round_
    assert max(levels) >= 2  # a condensing compaction happened


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_task_survives_a_continue_after_it(fmt: str) -> None:
    # "task, steps, 'continue', steps": only the latest request ('continue') was kept in a
    # reduced transcript, and the task went with the oldest steps.
    task = "Port the parser to the new AST; never touch vendor/. " * 8
    run = agent_run(30, 400)
    run[1] = {"role": "user", "content": task}
    later = agent_run(30, 400)[2:]
    for m in later:  # ids of their own
        for call in m.get("tool_calls") or []:
            call["id"] = "d" + call["id"]
        if m["role"] == "tool":
            m["tool_call_id"] = "d" + m["tool_call_id"]
    history = [*run, {"role": "user", "content": "continue"}, *later]
    messages, system = in_format(history, fmt)
    rec = Recorder()
    result = compact(messages, rec, window=16_000, system=system, format=fmt)
    (prompt,) = rec.prompts
    assert result.events[0].dropped > 0  # the transcript was reduced
    assert "never touch vendor/." in prompt  # the task is still there
    assert result.fits
