"""Compaction review: each test failed before its fix.

- Condensing earlier summaries shows them whole to the summarizer: their middles were clipped
  at ``max_item_chars`` (4,000 characters), so the facts there were lost for good.
- A summary remembered by the guard is not swapped in for messages the caller has edited
  since (a field replaced in place), which the guard notices without ``invalidate``.
- A cut with only a kept system message before it does not call the summarizer to replace
  nothing (it did, then failed "not smaller than the 0 tokens it would replace").
"""

from __future__ import annotations

from typing import Any

import pytest

from ctxbudget import ContextGuard
from ctxbudget.compact import CompactionError, compact
from ctxbudget.turns import SUMMARY_MARKER

# --------------------------------------------------------------------------- helpers


class Recorder:
    """A summarizer that records its prompts and answers with a short summary."""

    def __init__(self, text: str = "## Goal\nKeep going.") -> None:
        self.prompts: list[str] = []
        self.text = text

    def __call__(self, prompt: str, max_tokens: int) -> str:
        self.prompts.append(prompt)
        return self.text


def summary(level: int, tag: str, facts: int = 1_200) -> dict[str, Any]:
    """An earlier summary message holding ``facts`` identifiers ``<tag>-0000`` ...
    (about 9,000 characters for the default: longer than ``max_item_chars``)."""
    body = "## Facts and identifiers\n" + " ".join(f"{tag}-{i:04d}" for i in range(facts))
    return {"role": "user", "content": f"{SUMMARY_MARKER} level={level}]\nintro\n\n{body}"}


def chat(turns: int, words: int = 300) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"question {i} " + "word " * words})
        out.append({"role": "assistant", "content": f"answer {i} " + "ok " * words})
    return out


def no_response(request: Any) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


# --------------------------------------------------------------------------- condensing


def test_condensing_shows_every_earlier_summary_whole() -> None:
    system = {"role": "system", "content": "You fix bugs."}
    earlier = [summary(1, "AAA"), summary(1, "BBB"), summary(2, "CCC")]
    history = [system, *earlier, *chat(8)]
    recorder = Recorder()
    result = compact(history, recorder, window=200_000, keep_tokens=500)
    assert result.level == 3 and result.events[0].condensed == 3
    (prompt,) = recorder.prompts
    for tag in ("AAA", "BBB", "CCC"):  # the middle and the end of each, not only the start
        assert f"{tag}-0600" in prompt and f"{tag}-1199" in prompt
    assert "characters omitted" not in prompt.split("question 0", 1)[0]


def test_summaries_too_big_to_show_whole_are_clipped_rather_than_failing() -> None:
    system = {"role": "system", "content": "You fix bugs."}
    earlier = [summary(1, "AAA", 2_400), summary(1, "BBB", 2_400), summary(1, "CCC", 2_400)]
    history = [system, *earlier, *chat(2, words=100)]
    recorder = Recorder()
    result = compact(history, recorder, window=24_000, keep_tokens=100)
    assert result.level == 2
    (prompt,) = recorder.prompts
    assert "AAA-0000" in prompt and "characters omitted" in prompt


# --------------------------------------------------------------------------- memory


def test_the_guard_does_not_reuse_a_summary_of_a_message_edited_since() -> None:
    recorder = Recorder()
    sent: list[list[Any]] = []

    def send(request: Any) -> dict[str, Any]:
        sent.append(request.messages)
        return no_response(request)

    guard = ContextGuard("gpt-4o", window=16_000, summarize=recorder, calibration=False)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(22):
        history.append({"role": "user", "content": f"question {i} " + "word " * 300})
        guard.send(send, history)
        history.append({"role": "assistant", "content": f"answer {i} " + "ok " * 300})
    assert len(recorder.prompts) == 1  # compacted once, the summary re-used since
    history[1]["content"] = "EDITED: the task is a poem " + "word " * 300  # a summarized one
    history.append({"role": "user", "content": "next"})
    guard.send(send, history)
    assert len(recorder.prompts) == 2
    assert "EDITED" in recorder.prompts[-1]


def test_the_guard_still_reuses_the_summary_of_unchanged_or_reloaded_messages() -> None:
    recorder = Recorder()
    guard = ContextGuard("gpt-4o", window=16_000, summarize=recorder, calibration=False)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(24):
        history.append({"role": "user", "content": f"question {i} " + "word " * 300})
        reloaded = [dict(m) for m in history]  # a history read from storage every turn
        result = guard.send(no_response, reloaded if i % 2 else history)
        history.append({"role": "assistant", "content": f"answer {i} " + "ok " * 300})
    assert len(recorder.prompts) == 1
    assert result.request.messages[1]["content"].startswith(SUMMARY_MARKER)


# --------------------------------------------------------------------------- progress


def test_a_kept_system_message_alone_is_not_summarized() -> None:
    system = {"role": "system", "content": "You fix bugs."}
    rule = {"role": "system", "content": "From now on, never touch vendor/."}
    request = {"role": "user", "content": "Now run the tests. " + "please " * 100}
    answer = {"role": "assistant", "content": "Running them. " + "ok " * 100}
    history = [system, summary(1, "AAA", 300), rule, request, answer]
    recorder = Recorder("## Goal\nRun the tests.")
    result = compact(history, recorder, window=16_000)
    assert len(recorder.prompts) == 1
    assert "Now run the tests" in recorder.prompts[0]
    assert result.summarized == 1 and result.kept == 2
    assert result.messages[3] is rule and result.messages[4] is answer
    assert history[3] not in result.messages


def test_only_kept_system_messages_after_the_summary_is_nothing_to_compact() -> None:
    system = {"role": "system", "content": "You fix bugs."}
    rule = {"role": "system", "content": "From now on, never touch vendor/."}
    last = {"role": "user", "content": "Go on."}
    recorder = Recorder()
    with pytest.raises(CompactionError, match="nothing to compact"):
        compact([system, summary(1, "AAA", 300), rule, last], recorder, window=16_000)
    assert recorder.prompts == []
