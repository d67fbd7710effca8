"""Compaction review: each test failed before its fix.

- Condensing earlier summaries shows them whole to the summarizer: their middles were clipped
  at ``max_item_chars`` (4,000 characters), so the facts there were lost for good.
- A summary remembered by the guard is not swapped in for messages the caller has edited
  since (a field replaced in place), which the guard notices without ``invalidate``.
- A cut with only a kept system message before it does not call the summarizer to replace
  nothing (it did, then failed "not smaller than the 0 tokens it would replace").
- The cut leaves room for what stays besides the kept messages: a 2,000-token tail beside a
  10k-token system prompt in a 12k budget made the result overflow (and the guard refuse),
  though keeping less fitted.
- A summary far over the cap it was asked for, that makes the result overflow, is refused.
- A word the user sends along with tool results (Anthropic text blocks, Gemini text parts)
  is kept: a reduced transcript dropped it, and the summary's verbatim copy of the request
  left it out.
- (Re-review of the three above.) No room is held for a request copy when a request is kept
  verbatim; a summary at its cap (as ``conservative`` counts it, ~13% over) is not refused;
  a word beside a large tool result is sized by its words, and does not hide the task.
- (Second re-review.) A summary that copied only words (no request in its part) does not
  stand for the request when condensed: the older copy's request stays; the cut reserves the
  attachments a summary carries whole; a summarizer quoting a request block does not corrupt
  the carried copy.
- (Fourth and fifth re-reviews.) A copy whose length changed on the way (line ends turned
  to LF or to CRLF) is still read, a block quoted inside the request not taken for it; a
  summary carrying no copy, whose text ends as a block does, is sealed so that none is read
  from it; a stated length of thousands of digits is no heading.
- (Third re-review.) A words-only copy is marked by its heading, not its first words (an
  image-only request's summary lost the image at the next condensation; a request that
  began with the marker brought an older task back); a copy is read back by its stated
  length (a request quoting a summary's block was cut); Gemini words beside results whose
  calls have no ids are copied (the flag was lost where the ids are made up).
"""

from __future__ import annotations

from typing import Any

import pytest

from ctxbudget import ContextGuard, estimate_tokens
from ctxbudget.compact import CompactionError, compact
from ctxbudget.compact_words import Carried, carried_request, request_block
from ctxbudget.turns import SUMMARY_MARKER, first_text

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


# --------------------------------------------------------------------------- room for the tail


def _big_system_chat() -> list[dict[str, Any]]:
    """A ~9.9k-token system prompt, 20 question/answer turns, a last question."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "Rule: be careful with the repo. " * 1100}
    ]
    for i in range(20):
        msgs += [
            {"role": "user", "content": f"Question {i}: " + "explain this module please " * 60},
            {"role": "assistant", "content": f"Answer {i}: " + "it does things well " * 60},
        ]
    return [*msgs, {"role": "user", "content": "Last question?"}]


def test_the_cut_leaves_room_for_the_system_prompt_and_the_summary() -> None:
    msgs = _big_system_chat()
    result = compact(msgs, Recorder(), window=16_000)
    assert result.fits, (result.tokens_after, result.kept)
    assert result.messages[-1]["content"] == "Last question?"
    assert result.messages[0] is msgs[0]
    # With room to spare, the default tail is kept as before.
    roomy = compact(msgs, Recorder(), window=64_000)
    assert roomy.kept > result.kept


def test_the_guard_sends_after_a_compaction_that_fits() -> None:
    guard = ContextGuard(window=16_000, summarize=Recorder(), calibration=False)
    result = guard.send(lambda request: "ok", _big_system_chat())
    assert result.request.messages[-1]["content"] == "Last question?"
    assert any(e.action == "compact" for e in result.events)


def test_a_summary_far_over_its_cap_that_overflows_is_refused() -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(40):
        msgs += [
            {"role": "user", "content": f"Step {i}: " + "details " * 400},
            {"role": "assistant", "content": f"Done with step {i}."},
        ]
    caps: list[int] = []

    def verbose(prompt: str, max_tokens: int) -> str:
        caps.append(max_tokens)
        return "## Progress\n" + "step done, details follow. " * (1800 if len(caps) == 1 else 450)

    with pytest.raises(CompactionError, match="longer than the 800 tokens asked for"):
        compact(msgs, verbose, window=16_000)  # ~12k tokens
    assert caps == [800]
    # Over its cap but fitting: taken.
    result = compact(msgs, verbose, window=200_000)
    assert estimate_tokens(result.summary) > caps[1] and result.fits


# --------------------------------------------------------------------------- words beside results


def _anthropic_interjection() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Implement the parser in C."}]
    for k in range(30):
        call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"cmd": "ls"}}
        msgs.append({"role": "assistant", "content": [call]})
        blocks: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": "file listing\n" * 300}
        ]
        if k == 10:
            blocks.append({"type": "text", "text": "STOP: use Rust instead of C."})
        msgs.append({"role": "user", "content": blocks})
    return msgs


def _gemini_interjection() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Implement the parser in C."}]}
    ]
    for k in range(30):
        call = {"function_call": {"id": f"t{k}", "name": "bash", "args": {}}}
        msgs.append({"role": "model", "parts": [call]})
        answer = {"id": f"t{k}", "name": "bash", "response": {"result": "file listing\n" * 300}}
        parts: list[dict[str, Any]] = [{"function_response": answer}]
        if k == 10:
            parts.append({"text": "STOP: use Rust instead of C."})
        msgs.append({"role": "user", "parts": parts})
    return msgs


@pytest.mark.parametrize(
    ("fmt", "make"), [("anthropic", _anthropic_interjection), ("gemini", _gemini_interjection)]
)
def test_a_word_sent_with_tool_results_is_copied_after_the_request(fmt: str, make: Any) -> None:
    summarize = Recorder()
    result = compact(make(), summarize, window=16_000, format=fmt)
    # The reduced transcript keeps it, and the summary carries it as the latest request.
    assert "use Rust instead of C" in summarize.prompts[-1]
    summary = first_text(fmt, result.messages[0]) or ""
    assert summary.startswith(SUMMARY_MARKER)
    assert summary.endswith(
        "<request>\nImplement the parser in C.\n\n"
        "Later, with tool results: STOP: use Rust instead of C.\n</request>"
    )


# --------------------------------------------------------------------------- re-review


def test_no_room_is_held_for_a_request_copy_when_a_request_is_kept() -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are careful. " * 1800}]
    for i in range(6):
        msgs += [
            {"role": "user", "content": f"Log {i}: " + "error at line 42 in module x " * 330},
            {"role": "assistant", "content": f"Answer {i}: " + "looks fine " * 100},
        ]
    msgs += [
        {"role": "user", "content": "And this one? " + "warn: disk almost full " * 200},
        {"role": "assistant", "content": "It is the disk."},
        {"role": "user", "content": "Why?"},
    ]
    result = compact(msgs, Recorder(), window=16_000)
    assert result.fits and result.kept == 4  # the log "Why?" is about stays


def _chat_then_big_fresh_result() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for i in range(30):
        msgs += [
            {"role": "user", "content": f"Question {i}: " + "explain this module please " * 60},
            {"role": "assistant", "content": f"Answer {i}: " + "it does things well " * 60},
        ]
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        *msgs,
        {"role": "user", "content": "Read the log."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "log line here ok " * 2500},
    ]


def at_cap(prompt: str, max_tokens: int) -> str:
    """A summary of about ``max_tokens`` o200k tokens (``conservative`` counts ~13% more)."""
    return "## Goal\n" + "done " * max_tokens


def test_a_summary_at_its_cap_is_taken_and_the_guard_sends() -> None:
    result = compact(_chat_then_big_fresh_result(), at_cap, window=16_000)
    assert not result.fits  # the fresh tool output is what is over: the guard stubs it
    guard = ContextGuard(window=16_000, summarize=at_cap, calibration=False)
    sent = guard.send(lambda request: "ok", _chat_then_big_fresh_result())
    assert any(e.action == "compact" for e in sent.events)


def test_a_word_beside_a_large_tool_result_does_not_hide_the_task() -> None:
    def steps(msgs: list[Any], first: int, n: int, word_at: int | None = None) -> None:
        for k in range(first, first + n):
            call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"cmd": "ls"}}
            msgs.append({"role": "assistant", "content": [call]})
            output = "file listing\n" * (1500 if k == word_at else 300)
            blocks: list[Any] = [{"type": "tool_result", "tool_use_id": f"t{k}", "content": output}]
            if k == word_at:
                blocks.append({"type": "text", "text": "Also add tests."})
            msgs.append({"role": "user", "content": blocks})

    msgs: list[Any] = [
        {"role": "user", "content": "Implement the parser in C. Never touch vendor/."}
    ]
    steps(msgs, 0, 30, word_at=20)
    msgs += [{"role": "assistant", "content": "Paused."}, {"role": "user", "content": "continue"}]
    steps(msgs, 30, 10)
    summarize = Recorder()
    compact(msgs, summarize, window=16_000, format="anthropic")
    prompt = summarize.prompts[-1]
    assert "Never touch vendor" in prompt and "Also add tests" in prompt
    assert "file listing\nfile listing" not in prompt.split("Also add tests")[0][-200:]


# --------------------------------------------------------------------------- second re-review


def _tool_steps(msgs: list[Any], first: int, n: int, word_at: int | None = None) -> None:
    for k in range(first, first + n):
        call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"cmd": "ls"}}
        msgs.append({"role": "assistant", "content": [call]})
        output = {"type": "tool_result", "tool_use_id": f"t{k}", "content": "file listing\n" * 300}
        blocks: list[Any] = [output]
        if k == word_at:
            blocks.append({"type": "text", "text": "Also add tests."})
        msgs.append({"role": "user", "content": blocks})


def test_words_alone_in_a_summary_do_not_replace_the_request_when_condensed() -> None:
    def again(msgs: list[Any]) -> list[Any]:
        result = compact(msgs, Recorder(), window=16_000, format="anthropic", max_summaries=2)
        return list(result.messages)

    msgs: list[Any] = [{"role": "user", "content": "Implement the parser. Never touch vendor/."}]
    _tool_steps(msgs, 0, 20)
    msgs = again(msgs)
    _tool_steps(msgs, 100, 20, word_at=105)  # this summary's part holds words, no request
    msgs = again(msgs)
    assert carried_request("anthropic", msgs[1]) == Carried(
        "Later, with tool results: Also add tests.", words_only=True
    )
    _tool_steps(msgs, 200, 20)
    msgs = again(msgs)  # condenses both
    assert carried_request("anthropic", msgs[0]) == Carried(
        "Implement the parser. Never touch vendor/.\n\nLater, with tool results: Also add tests.",
        words_only=False,
    )


def test_the_cut_reserves_the_attachments_the_summary_carries_whole() -> None:
    text = "spec line here " * 3000  # ~10k tokens
    spec = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
    }
    ask = {"type": "text", "text": "Implement the parser in this spec."}
    msgs: list[Any] = [{"role": "user", "content": [ask, spec]}]
    _tool_steps(msgs, 0, 30)
    system = "You are careful and precise. " * 420
    result = compact(msgs, Recorder(), window=20_000, format="anthropic", system=system)
    assert result.fits, (result.kept, result.tokens_after)


def test_a_summarizer_quoting_a_request_block_does_not_corrupt_the_carried_copy() -> None:
    msgs: list[Any] = [{"role": "user", "content": "Implement the parser. Never touch vendor/."}]
    _tool_steps(msgs, 0, 20)

    def quoting(prompt: str, max_tokens: int) -> str:
        return "## Goal\n<request>\nImplement the parser.\n</request>\n## Progress\nok"

    result = compact(msgs, quoting, window=16_000, format="anthropic")
    carried = carried_request("anthropic", result.messages[0])
    assert carried == Carried("Implement the parser. Never touch vendor/.", words_only=False)


# --------------------------------------------------------------------------- third re-review

IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 50},
}


def _short_steps(msgs: list[Any], first: int, n: int, word: str | None = None) -> None:
    for k in range(first, first + n):
        call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {}}
        msgs.append({"role": "assistant", "content": [call]})
        blocks: list[Any] = [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": "out\n" * 400}
        ]
        if word and k == first:
            blocks.append({"type": "text", "text": word})
        msgs.append({"role": "user", "content": blocks})


def test_an_image_only_request_keeps_its_image_through_condensing() -> None:
    def images(message: dict[str, Any]) -> int:
        return sum(1 for b in message["content"] if isinstance(b, dict) and b["type"] == "image")

    msgs: list[Any] = [{"role": "user", "content": [IMAGE]}]
    _short_steps(msgs, 0, 12, "use Rust")
    first = compact(msgs, Recorder(), window=16_000, format="anthropic", max_summaries=1)
    assert images(first.messages[0]) == 1
    again = list(first.messages)
    _short_steps(again, 100, 12, "and add tests")
    second = compact(again, Recorder(), window=16_000, format="anthropic", max_summaries=1)
    assert images(second.messages[0]) == 1
    carried = carried_request("anthropic", second.messages[0])
    assert carried is not None and not carried.words_only
    assert carried.text.endswith("use Rust\n\nLater, with tool results: and add tests")


def test_gemini_words_beside_results_without_call_ids_are_copied() -> None:
    msgs: list[Any] = [{"role": "user", "parts": [{"text": "Fix the parser."}]}]
    for k in range(12):
        parts: list[Any] = [
            {"function_response": {"name": "bash", "response": {"r": "out\n" * 400}}}
        ]
        if k == 1:
            parts.append({"text": "stop, use Rust instead"})
        msgs += [
            {"role": "model", "parts": [{"function_call": {"name": "bash", "args": {}}}]},
            {"role": "user", "parts": parts},
        ]
    result = compact(msgs, Recorder(), window=16_000, format="gemini")
    carried = carried_request("gemini", result.messages[0])
    assert carried == Carried(
        "Fix the parser.\n\nLater, with tool results: stop, use Rust instead", words_only=False
    )


def test_a_request_that_begins_like_the_marker_is_a_request() -> None:
    older = request_block("OLD TASK: port to Go", words_only=False)
    msgs: list[Any] = [
        {"role": "user", "content": f"{SUMMARY_MARKER} level=1]\nearlier{older}"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "Later, with tool results: CI showed X. Now port to Rust."},
    ]
    _short_steps(msgs, 0, 12)
    first = compact(msgs, Recorder(), window=16_000, format="anthropic", max_summaries=2)
    again = list(first.messages)
    _short_steps(again, 100, 12)
    second = compact(again, Recorder(), window=16_000, format="anthropic", max_summaries=2)
    carried = carried_request("anthropic", second.messages[0])
    assert carried == Carried(
        "Later, with tool results: CI showed X. Now port to Rust.", words_only=False
    )


def test_a_request_quoting_a_summarys_block_is_carried_whole() -> None:
    request = (
        "Why did ctxbudget write this?"
        + request_block("foo", words_only=False)
        + "\n\nThe user's latest request, verbatim:\n<request>\nbar\n</request>\nBe brief."
    )
    msgs: list[Any] = [{"role": "user", "content": request}]
    _short_steps(msgs, 0, 12)
    result = compact(msgs, Recorder(), window=16_000, format="anthropic")
    assert carried_request("anthropic", result.messages[0]) == Carried(request, words_only=False)


def test_a_copy_written_before_copies_stated_their_length_is_still_read() -> None:
    def summary(copy: str) -> dict[str, Any]:
        block = f"\n\nThe user's latest request, verbatim:\n<request>\n{copy}\n</request>"
        return {"role": "user", "content": f"{SUMMARY_MARKER} level=1]\nearlier{block}"}

    assert carried_request("anthropic", summary("Port it.")) == Carried("Port it.", False)
    words = "Later, with tool results: stop"
    assert carried_request("anthropic", summary(words)) == Carried(words, True)
    assert carried_request("anthropic", {"role": "user", "content": "no block"}) is None


# --------------------------------------------------------------------------- fourth re-review


def test_a_copy_whose_line_ends_changed_is_still_read() -> None:
    msgs: list[Any] = [{"role": "user", "content": "Fix the parser.\r\nNever touch vendor/."}]
    _short_steps(msgs, 0, 14)
    summary = compact(msgs, Recorder(), window=16_000, format="anthropic").messages[0]
    text = summary["content"][0]["text"].replace("\r\n", "\n")  # a text-mode save and load
    carried = carried_request(
        "anthropic", {"role": "user", "content": [{"type": "text", "text": text}]}
    )
    assert carried == Carried("Fix the parser.\nNever touch vendor/.", words_only=False)


def test_a_summary_ending_with_a_quoted_block_is_not_read_as_a_copy() -> None:
    quoted = request_block("OLD TASK: port everything to Go", words_only=False)

    def quoting(prompt: str, max_tokens: int) -> str:
        return "## Goal\nThe log ended with:" + quoted

    msgs: list[Any] = [{"role": "user", "content": "REAL TASK: fix the parser in C."}]
    _short_steps(msgs, 0, 14)
    kept = compact(msgs, Recorder(), window=16_000, format="anthropic", max_summaries=2).messages
    _short_steps(kept, 100, 14)  # no request nor words in this part: no copy appended
    kept = compact(kept, quoting, window=16_000, format="anthropic", max_summaries=2).messages
    assert carried_request("anthropic", kept[1]) is None
    _short_steps(kept, 200, 14)
    result = compact(kept, Recorder(), window=16_000, format="anthropic", max_summaries=2)
    assert result.level == 2
    carried = carried_request("anthropic", result.messages[0])
    assert carried == Carried("REAL TASK: fix the parser in C.", words_only=False)


def test_a_stated_length_of_thousands_of_digits_is_no_heading() -> None:
    fake = f"\n\nThe user's latest request, verbatim ({'1' * 4301} characters):\n<request>\nx"
    text = f"{SUMMARY_MARKER} level=1]\nlog:{fake}\n</request>"
    summary = {"role": "user", "content": text + request_block("Fix it.", words_only=False)}
    assert carried_request("anthropic", summary) == Carried("Fix it.", words_only=False)


# --------------------------------------------------------------------------- fifth re-review


def _summary_text(result_messages: list[Any]) -> str:
    return str(result_messages[0]["content"][0]["text"])


def _as_summary(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_a_request_quoting_a_block_is_read_whole_after_its_line_ends_changed() -> None:
    pasted = "Summary:\r\n" + request_block("OLD TASK: port to Go", words_only=False)
    request = "Fix compact_words.py.\r\nNever touch vendor/.\r\nIt lost my task:\r\n" + pasted
    msgs: list[Any] = [{"role": "user", "content": request}]
    _short_steps(msgs, 0, 14)
    result = compact(msgs, Recorder(), window=16_000, format="anthropic")
    text = _summary_text(result.messages).replace("\r\n", "\n")
    carried = carried_request("anthropic", _as_summary(text))
    assert carried == Carried(request.replace("\r\n", "\n"), words_only=False)


def test_a_summary_whose_line_ends_became_crlf_still_carries_its_copy() -> None:
    msgs: list[Any] = [{"role": "user", "content": "Fix the parser.\nNever touch vendor/."}]
    _short_steps(msgs, 0, 14)
    result = compact(msgs, Recorder(), window=16_000, format="anthropic")
    text = _summary_text(result.messages).replace("\n", "\r\n")  # (git's autocrlf, say)
    carried = carried_request("anthropic", _as_summary(text))
    assert carried == Carried("Fix the parser.\r\nNever touch vendor/.", words_only=False)
