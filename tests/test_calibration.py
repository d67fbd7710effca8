"""CalibrationTracker: usage parsing, anchored estimates, fallbacks, robustness, threads."""

from __future__ import annotations

import copy
import pickle
import random
from types import SimpleNamespace
from typing import Any

import pytest

from ctxbudget.calibration import CalibrationTracker, reported_input_tokens
from ctxbudget.request import RequestEstimator, estimate_request

from .test_request import text_chat


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (1234, 1234),
        ({"prompt_tokens": 900, "completion_tokens": 10}, 900),
        ({"input_tokens": 80, "output_tokens": 5}, 80),
        (
            {
                "input_tokens": 80,
                "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 1000,
            },
            1100,
        ),
        ({"prompt_token_count": 777}, 777),
        ({"promptTokenCount": 778}, 778),
        (SimpleNamespace(prompt_tokens=55, completion_tokens=1), 55),
        ({"completion_tokens": 3}, None),
        (None, None),
    ],
)
def test_reported_input_tokens(usage: Any, expected: int | None) -> None:
    assert reported_input_tokens(usage) == expected


def test_reported_from_sdk_objects() -> None:
    openai_types = pytest.importorskip("openai.types")
    usage = openai_types.CompletionUsage(prompt_tokens=321, completion_tokens=5, total_tokens=326)
    assert reported_input_tokens(usage) == 321
    anthropic_types = pytest.importorskip("anthropic.types")
    au = anthropic_types.Usage(input_tokens=10, output_tokens=2, cache_read_input_tokens=90)
    assert reported_input_tokens(au) == 100


def test_overflow_info_is_an_exact_measurement() -> None:
    from ctxbudget.overflow import classify_overflow

    tracker = CalibrationTracker("gpt-4o")
    history = text_chat(3)
    counted = int(tracker.estimate(history).raw.total * 1.1)  # a count of this request
    info = classify_overflow(
        f"This model's maximum context length is 128 tokens. However, your messages "
        f"resulted in {counted} tokens. Please reduce the length of the messages."
    )
    assert info is not None
    assert reported_input_tokens(info) == counted
    assert tracker.observe_overflow(history, info)
    est = tracker.estimate([*history, {"role": "user", "content": "x"}])
    assert est.anchored and est.anchor_tokens == counted
    vague = SimpleNamespace(measured_input_tokens=None)
    assert not tracker.observe_overflow(history, vague)
    with pytest.raises(TypeError):
        reported_input_tokens(True)


def test_cold_then_anchored() -> None:
    tracker = CalibrationTracker("gpt-4o")
    history = text_chat(4)
    raw = estimate_request(history, model="gpt-4o").total
    first = tracker.estimate(history)
    assert not first.anchored
    assert first.total == round(raw * 1.05)  # cold margin before any usage
    assert tracker.observe(history, {"prompt_tokens": raw + 500})
    grown = [*history, {"role": "user", "content": "next question " * 20}]
    est = tracker.estimate(grown)
    added = sum(est.raw.per_message[len(history) :])
    assert est.anchored and est.anchor_tokens == raw + 500
    assert est.total == raw + 500 + round(added * est.factor)
    state = tracker.state()
    assert state.observations == 1 and state.last_reported == raw + 500
    assert state.cold_samples == 1 and state.delta_samples == 0


def test_learns_delta_factor_robustly() -> None:
    tracker = CalibrationTracker("gpt-4o", prior_weight=0)
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    reported = 100
    tracker.observe(history, reported)
    for i in range(30):
        history = [*history, {"role": "user", "content": f"message number {i} " * 30}]
        added = estimate_request(history, model="gpt-4o").per_message[-1]
        factor = 1.2 if i != 7 else 5.0  # one wild outlier
        reported += round(added * factor)
        tracker.observe(history, reported)
    assert tracker.delta_factor == pytest.approx(1.2, abs=0.02)
    nxt = [*history, {"role": "user", "content": "final " * 50}]
    est = tracker.estimate(nxt)
    truth = reported + round(est.raw.per_message[-1] * 1.2)
    assert abs(est.total - truth) <= 2


def _taught(tracker: CalibrationTracker) -> list[dict[str, Any]]:
    """A history ``tracker`` learned a delta factor of 1.3 from, anchored on its last turn."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    reported = 400
    tracker.observe(history, reported)
    for i in range(6):
        history = [*history, {"role": "user", "content": f"message number {i} " * 30}]
        reported += round(estimate_request(history, model="gpt-4o").per_message[-1] * 1.3)
        assert tracker.observe(history, reported)
    return history


def test_a_pickled_tracker_goes_on_where_it_was() -> None:
    # An agent saved and resumed in another process keeps what the tracker learned, and its
    # anchor: the resumed history holds equal messages, not the same objects.
    tracker = CalibrationTracker("gpt-4o", prior_weight=0, window=16)
    history = _taught(tracker)
    nxt = [*history, {"role": "user", "content": "and then " * 40}]
    expected = tracker.estimate(nxt)
    restored = pickle.loads(pickle.dumps(tracker))
    assert restored.state() == tracker.state()
    assert restored.clamp == tracker.clamp and restored.prior_weight == 0
    got = restored.estimate(pickle.loads(pickle.dumps(nxt)))
    assert got.anchored and got.total == expected.total
    assert restored._delta.maxlen == 16
    # And it is thread-safe again.
    restored.observe(nxt, expected.total)
    assert restored.state().observations == tracker.state().observations + 1


def test_a_copy_learns_apart_from_its_original() -> None:
    tracker = CalibrationTracker("gpt-4o", prior_weight=0)
    history = _taught(tracker)
    before = tracker.state()
    for twin in (copy.copy(tracker), copy.deepcopy(tracker)):
        assert twin.state() == before
        nxt = [*history, {"role": "user", "content": "more " * 200}]
        added = twin.estimate(nxt).raw.per_message[-1]
        assert twin.observe(nxt, before.last_reported + 3 * added)  # (1.3 learned, 3 seen)
        twin.observe([{"role": "user", "content": "other"}], 50, conversation="b")
        assert twin.state() != before
        assert tracker.state() == before
        assert tracker.estimate(nxt).anchor_tokens == before.last_reported


def test_factors_follow_every_change_of_samples_and_settings() -> None:
    # The factors are kept between estimates; each read must still see what changed since.
    tracker = CalibrationTracker("gpt-4o", prior_weight=0)
    assert tracker.cold_factor == pytest.approx(1.05)
    tracker.cold_margin = 0.2
    assert tracker.cold_factor == pytest.approx(1.2)
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    reported = 100
    tracker.observe(history, reported)
    assert tracker.cold_factor != pytest.approx(1.2)  # a cold sample now decides it
    for i in range(5):
        history = [*history, {"role": "user", "content": f"message number {i} " * 30}]
        reported += round(estimate_request(history, model="gpt-4o").per_message[-1] * 1.6)
        tracker.observe(history, reported)
    assert tracker.delta_factor == pytest.approx(1.6, abs=0.02)
    tracker.clamp = (0.5, 1.3)
    assert tracker.delta_factor == 1.3 and tracker.state().delta_factor == 1.3
    tracker.clamp = (0.5, 2.0)
    tracker.prior_weight = 1e9  # the prior (the profile's own 1.0) outweighs every delta sample
    assert tracker.delta_factor == 1.0 and tracker.cold_factor != pytest.approx(1.0)
    tracker.reset()
    assert tracker.delta_factor == 1.0 and tracker.cold_factor == pytest.approx(1.2)


def test_clamp_edited_in_place_and_zero_min_delta() -> None:
    tracker = CalibrationTracker("gpt-4o", clamp=[0.5, 2.0], min_delta=0)  # type: ignore[arg-type]
    msgs = [{"role": "user", "content": "hi there"}]
    raw = estimate_request(msgs, model="gpt-4o").total
    tracker.observe(msgs, round(raw * 1.8))
    assert tracker.cold_factor == pytest.approx(round(raw * 1.8) / raw)
    assert tracker.cold_factor > 1.1
    tracker.clamp[1] = 1.1  # type: ignore[index]
    assert tracker.cold_factor == 1.1
    # The same request reported again: nothing was added, which teaches nothing (and must
    # not divide by zero).
    assert tracker.observe(msgs, round(raw * 1.9))
    assert tracker.state().delta_samples == 0


def test_compaction_falls_back_to_scaled_cold() -> None:
    tracker = CalibrationTracker("gpt-4o")
    history = text_chat(6)
    raw = estimate_request(history, model="gpt-4o").total
    tracker.observe(history, int(raw * 1.1))
    compacted = [{"role": "user", "content": "Summary of the work so far."}, *history[-3:]]
    est = tracker.estimate(compacted)
    assert not est.anchored
    assert est.factor == pytest.approx(tracker.cold_factor)
    assert est.total == round(est.raw.total * est.factor)
    edited = [dict(m) for m in history]
    edited[1]["content"] = "edited"
    assert not tracker.estimate([*edited, {"role": "user", "content": "more"}]).anchored
    other_tools = [{"name": "t", "input_schema": {"type": "object"}}]
    assert not tracker.estimate(
        [*history, {"role": "user", "content": "x"}], tools=other_tools
    ).anchored


def test_edits_in_place_do_not_anchor_on_a_stale_report() -> None:
    tracker = CalibrationTracker("gpt-4o")
    history = text_chat(2)
    tracker.observe(history, 500)
    history[0]["content"] = "a file inlined into the first message " * 200  # same dict, edited
    history.append({"role": "user", "content": "and now?"})
    assert not tracker.estimate(history).anchored

    tools = [{"type": "function", "function": {"name": "ls", "description": "List files."}}]
    history = text_chat(2)
    tracker.observe(history, 500, tools=tools)
    tools.append({"type": "function", "function": {"name": "docs", "description": "Docs. " * 300}})
    assert not tracker.estimate(history, tools=tools).anchored

    system = [{"type": "text", "text": "Be terse."}]
    claude = CalibrationTracker("claude-sonnet-4-5")
    history = [{"role": "user", "content": "hi"}]
    claude.observe(history, 20, system=system)
    system.append({"type": "text", "text": "Repository map: " + "src/a.py " * 500})
    assert not claude.estimate(history, system=system).anchored


def test_invalidate_after_a_nested_edit() -> None:
    tracker = CalibrationTracker("gpt-4o")
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    tracker.observe(history, 50)
    history[0]["content"].append({"type": "text", "text": "pasted log line\n" * 300})
    history.append({"role": "assistant", "content": "ok"})
    assert tracker.estimate(history).anchored  # a nested in-place edit is not seen...
    tracker.invalidate(history[0])
    est = tracker.estimate(history)  # ...until invalidated: the count changed, so no anchor
    assert not est.anchored
    assert est.raw == estimate_request(history, model="gpt-4o")
    assert tracker.state().observations == 1  # what was learned stays


def test_estimators_are_kept_for_as_many_conversations_as_anchors() -> None:
    tracker = CalibrationTracker("gpt-4o", max_conversations=3)
    for key in range(20):
        tracker.estimate(text_chat(1), conversation=key)
    assert len(tracker._estimators) == 3


def test_equal_but_rebuilt_dicts_still_anchor() -> None:
    tracker = CalibrationTracker("gpt-4o")
    history = text_chat(2)
    tracker.observe(history, 500)
    rebuilt = [dict(m) for m in history] + [{"role": "user", "content": "hi"}]
    assert tracker.estimate(rebuilt).anchored


def test_conversations_are_kept_apart() -> None:
    tracker = CalibrationTracker("gpt-4o", max_conversations=2)
    a, b = text_chat(2), text_chat(3)
    tracker.observe(a, 400, conversation="a")
    tracker.observe(b, 600, conversation="b")
    assert (
        tracker.estimate([*a, {"role": "user", "content": "x"}], conversation="a").anchor_tokens
        == 400
    )
    assert (
        tracker.estimate([*b, {"role": "user", "content": "x"}], conversation="b").anchor_tokens
        == 600
    )
    tracker.observe(a, 400, conversation="c")
    assert tracker.state().conversations == 2
    assert not tracker.estimate(a, conversation="a").anchored
    tracker.reset()
    assert tracker.state().observations == 0


@pytest.mark.parametrize(
    ("usage", "count"),
    [
        ({"prompt_tokens": 2106.0}, 2106),  # JSON decoded as floats
        ({"prompt_tokens": pytest.importorskip("numpy").int64(2106)}, 2106),
        (2106.0, 2106),
        ({"prompt_tokens": None, "input_tokens": 2000, "cache_read_input_tokens": 106}, 2106),
        (SimpleNamespace(usage=SimpleNamespace(prompt_tokens=2106)), 2106),  # the response
        (SimpleNamespace(usage_metadata=SimpleNamespace(prompt_token_count=2106)), 2106),
    ],
)
def test_usage_counts_of_any_whole_number_type_are_read(usage: Any, count: int) -> None:
    # Floats and numpy integers were dropped (observe returned False); a whole response was
    # not looked into.
    assert reported_input_tokens(usage) == count


@pytest.mark.parametrize(
    ("usage", "named"),
    [
        ({"prompt_tokens": True}, "prompt_tokens"),
        ({"input_tokens": 2000, "cache_read_input_tokens": False}, "cache_read_input_tokens"),
        ({"prompt_tokens": "2106"}, "prompt_tokens"),
        ({"prompt_tokens": 2106.5}, "prompt_tokens"),
        (2.5, "usage report"),
    ],
)
def test_a_usage_count_that_is_no_whole_number_is_refused(usage: Any, named: str) -> None:
    # {"prompt_tokens": True} was recorded as 1 token: the next estimate anchored on it.
    with pytest.raises(TypeError, match=named):
        reported_input_tokens(usage)


def _cached_request(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request a prompt-caching client builds each turn: fresh copies, the cache
    breakpoint on the last block of the newest message only (Anthropic's multi-turn recipe)."""
    out = []
    for i, m in enumerate(history):
        blocks = [dict(b) for b in m["content"]]
        if i == len(history) - 1:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
        out.append({"role": m["role"], "content": blocks})
    return out


def test_a_moving_cache_breakpoint_keeps_the_anchor() -> None:
    # The breakpoint moved to the newest message each turn, so the earlier messages were
    # never equal to the anchored ones: the tracker never anchored again.
    history = [{"role": "user", "content": [{"type": "text", "text": "Fix the parser. " * 40}]}]
    tracker = CalibrationTracker("claude-sonnet-4-5")
    anchored = []
    for turn in range(4):
        request = _cached_request(history)
        est = tracker.estimate(request)
        anchored.append(est.anchored)
        tracker.observe(request, {"input_tokens": 5, "cache_read_input_tokens": est.raw.total})
        history += [
            {"role": "assistant", "content": [{"type": "text", "text": f"step {turn} " * 30}]},
            {"role": "user", "content": [{"type": "text", "text": f"result {turn} " * 30}]},
        ]
    assert anchored == [False, True, True, True]


def test_an_edit_of_the_same_size_drops_the_anchor() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "Fix the parser. " * 40}]}]
    tracker = CalibrationTracker("claude-sonnet-4-5")
    request = _cached_request(history)
    tracker.observe(request, {"input_tokens": tracker.estimate(request).raw.total})
    edited = _cached_request(
        [{"role": "user", "content": [{"type": "text", "text": "Fix the lexer. " * 40}]}]
    )
    assert tracker.estimate(edited).raw.per_message == tracker.estimate(request).raw.per_message
    assert not tracker.estimate([*edited, history[0]]).anchored
    assert tracker.estimate([*request, history[0]]).anchored


def test_a_langchain_message_of_several_results_counts_once() -> None:
    # A HumanMessage with two tool results becomes two tool dicts: the estimate had one count
    # more than the caller's messages, and the tracker could not anchor on them.
    lc = pytest.importorskip("langchain_core.messages")
    calls = [{"id": f"t{i}", "name": "bash", "args": {"c": "ls"}} for i in (1, 2)]
    results = [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"out {i} " * 50} for i in (1, 2)
    ]
    msgs = [lc.HumanMessage("hi"), lc.AIMessage(content="", tool_calls=calls)]
    msgs.append(lc.HumanMessage(content=results))
    est = estimate_request(msgs, model="gpt-4o")
    assert len(est.per_message) == len(msgs)
    assert est.per_message[2] > estimate_request(msgs[2:], model="gpt-4o").total / 2
    tracker = CalibrationTracker("gpt-4o")
    tracker.observe(msgs, {"prompt_tokens": est.total})
    assert tracker.estimate([*msgs, lc.AIMessage("done")]).anchored


def test_a_cache_control_key_in_data_is_data() -> None:
    # Only marks on messages and content blocks are ignored: a tool input that has a key of
    # that name (an HTTP header, say) changed, and the request is another one.
    def request(max_age: str) -> list[dict[str, Any]]:
        call = {"type": "tool_use", "id": "t1", "name": "fetch"}
        call["input"] = {"headers": {"cache_control": f"max-age={max_age}"}}
        return [
            {"role": "user", "content": [{"type": "text", "text": "Fetch it. " * 40}]},
            {"role": "assistant", "content": [call]},
        ]

    tracker = CalibrationTracker("claude-sonnet-4-5")
    first = request("60")
    tracker.observe(first, {"input_tokens": tracker.estimate(first).raw.total})
    follow = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    assert tracker.estimate([*first, follow]).anchored
    assert not tracker.estimate([*request("90"), follow]).anchored


def test_bedrock_converse_usage_counts_the_cached_prompt_too() -> None:
    # boto3 bedrock-runtime converse(): response["usage"]; inputTokens leaves out the tokens
    # read from or written to the prompt cache (as Anthropic's input_tokens does).
    response = {
        "output": {"message": {"role": "assistant", "content": [{"text": "done"}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": 40,
            "outputTokens": 12,
            "totalTokens": 3052,
            "cacheReadInputTokens": 2800,
            "cacheWriteInputTokens": 200,
        },
    }
    assert reported_input_tokens(response) == 3040
    assert reported_input_tokens(response["usage"]) == 3040


_WORDS = ["alpha", "beta", "gamma", "delta", "def", "foo(x):", "return", "x+1", "error", "line"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def test_one_wrong_first_report_is_replaced_when_the_next_two_agree() -> None:
    """A first report of 0.4x the request passes as plausible; the true reports after it are
    each off that anchor, but agree with one another: the second of them re-anchors."""
    rng = random.Random(0)
    tracker = CalibrationTracker("gpt-4o")
    oracle = RequestEstimator("gpt-4o")

    def truth(msgs: list[dict[str, Any]]) -> int:
        return round(1.07 * oracle.estimate(msgs).total)

    msgs = [{"role": "user", "content": _words(rng, 5_000)} for _ in range(7)]
    assert tracker.observe(msgs, {"prompt_tokens": int(truth(msgs) * 0.4)})
    believed = []
    for _ in range(4):
        msgs = [
            *msgs,
            {"role": "assistant", "content": _words(rng, 60)},
            {"role": "user", "content": _words(rng, 60)},
        ]
        believed.append(tracker.observe(msgs, {"prompt_tokens": truth(msgs)}))
    assert believed == [False, True, True, True]
    msgs = [*msgs, {"role": "user", "content": "next"}]
    assert tracker.estimate(msgs).total == pytest.approx(truth(msgs), rel=0.01)


def test_reasoning_the_provider_leaves_out_teaches_no_factor() -> None:
    """Claude drops earlier turns' thinking blocks from its count: those turns' ratios (a
    fifth) must not pin the factors at the clamp for the next large tool output."""
    rng = random.Random(0)
    tracker = CalibrationTracker("claude-sonnet-4-5")
    oracle = RequestEstimator("claude-sonnet-4-5")

    def truth(msgs: list[dict[str, Any]]) -> int:
        kept = [
            {**m, "content": [b for b in m["content"] if b["type"] != "thinking"]}
            if isinstance(m["content"], list)
            else m
            for m in msgs
        ]
        return oracle.estimate(kept).total

    msgs: list[dict[str, Any]] = [{"role": "user", "content": _words(rng, 2_000)}]
    for _ in range(8):
        tracker.observe(msgs, {"input_tokens": truth(msgs)})
        thinking = {"type": "thinking", "thinking": _words(rng, 1_500), "signature": "s"}
        msgs = [
            *msgs,
            {"role": "assistant", "content": [thinking, {"type": "text", "text": "Done."}]},
            {"role": "user", "content": _words(rng, 200)},
        ]
    tracker.observe(msgs, {"input_tokens": truth(msgs)})
    big = [*msgs, {"role": "assistant", "content": "Reading."}]
    big.append({"role": "user", "content": _words(rng, 15_000)})
    assert tracker.estimate(big).total >= 0.95 * truth(big)
    compacted = [{"role": "user", "content": "Summary: " + _words(rng, 3_000)}]
    assert tracker.estimate(compacted).total >= 0.95 * truth(compacted)


def test_the_delta_factor_starts_from_the_profile_not_from_whole_request_ratios() -> None:
    """A provider adding 300 tokens out of sight makes whole requests' ratios high; short
    turns added to an anchor are counted 1.07x, and the factor for them says about that."""
    rng = random.Random(1)
    tracker = CalibrationTracker("gpt-4o")
    oracle = RequestEstimator("gpt-4o")
    msgs: list[dict[str, Any]] = [{"role": "user", "content": _words(rng, 40)}]
    for _ in range(4):
        tracker.observe(msgs, {"prompt_tokens": round(1.07 * oracle.estimate(msgs).total) + 300})
        msgs = [*msgs, {"role": "assistant", "content": _words(rng, 20)}]
    assert 1.0 <= tracker.delta_factor <= 1.15


def _skewed_truth(oracle: RequestEstimator) -> Any:
    """A provider counting 7% more than our estimate, plus 300 tokens out of sight."""
    return lambda msgs: round(1.07 * oracle.estimate(msgs).total) + 300


def _turn(rng: random.Random, words: int = 60) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": _words(rng, 40)},
        {"role": "user", "content": _words(rng, words)},
    ]


def test_cumulative_usage_is_not_taken_for_a_doubted_anchor() -> None:
    """A run's cumulative usage (each report the sum of every request so far) moves further
    from the anchor each turn: two such reports in a row do not agree, even when the second
    turn adds a large tool output."""
    rng = random.Random(0)
    truth = _skewed_truth(RequestEstimator("gpt-4o"))
    tracker = CalibrationTracker("gpt-4o")
    m0 = [{"role": "system", "content": _words(rng, 2_000)}]
    m0.append({"role": "user", "content": _words(rng, 100)})
    m1 = [*m0, *_turn(rng)]
    m2 = [*m1, *_turn(rng, 1_300)]
    t0, t1, t2 = truth(m0), truth(m1), truth(m2)
    assert tracker.observe(m0, {"prompt_tokens": t0})
    assert not tracker.observe(m1, {"prompt_tokens": t0 + t1})
    assert not tracker.observe(m2, {"prompt_tokens": t0 + t1 + t2})


def test_a_doubted_report_seen_twice_confirms_nothing() -> None:
    rng = random.Random(0)
    truth = _skewed_truth(RequestEstimator("gpt-4o"))
    tracker = CalibrationTracker("gpt-4o")
    m0 = [{"role": "system", "content": _words(rng, 8_000)}]
    m0.append({"role": "user", "content": _words(rng, 100)})
    m1 = [*m0, *_turn(rng)]
    assert tracker.observe(m0, {"prompt_tokens": truth(m0)})
    bad = {"prompt_tokens": int(truth(m1) * 0.45)}
    assert not tracker.observe(m1, bad)
    assert not tracker.observe(m1, bad)


def test_an_anchor_later_reports_agreed_with_is_not_displaced_by_two_bad_ones() -> None:
    rng = random.Random(0)
    truth = _skewed_truth(RequestEstimator("gpt-4o"))
    tracker = CalibrationTracker("gpt-4o")
    msgs = [{"role": "system", "content": _words(rng, 8_000)}]
    msgs.append({"role": "user", "content": _words(rng, 300)})
    for kind in "GGGGGGBB":
        count = truth(msgs) if kind == "G" else int(truth(msgs) * 0.45)
        tracker.observe(msgs, {"prompt_tokens": count})
        msgs = [*msgs, *_turn(rng, 200)]
    assert tracker.estimate(msgs).total >= 0.95 * truth(msgs)


def test_reasoning_a_provider_counts_teaches_the_delta_factor() -> None:
    """Anthropic counts thinking inside a tool-use loop: such turns teach as any other."""
    rng = random.Random(1)
    oracle = RequestEstimator("claude-sonnet-4-5")
    tracker = CalibrationTracker("claude-sonnet-4-5")
    msgs: list[dict[str, Any]] = [{"role": "user", "content": _words(rng, 3_000)}]
    for i in range(12):
        tracker.observe(msgs, {"input_tokens": round(1.3 * oracle.estimate(msgs).total)})
        thinking = {"type": "thinking", "thinking": _words(rng, 100), "signature": "s"}
        call = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"cmd": "ls"}}
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": _words(rng, 800)}
        msgs = [
            *msgs,
            {"role": "assistant", "content": [thinking, call]},
            {"role": "user", "content": [result]},
        ]
    assert tracker.delta_factor > 1.2


def _pattern_run(pattern: str, bad: Any) -> tuple[CalibrationTracker, list[Any], Any]:
    """A tracker fed one report a turn: true ("G") or ``bad(true)`` ("B"), on a conversation
    with a large system prompt; the tracker, the next request, and the truth."""
    rng = random.Random(0)
    truth = _skewed_truth(RequestEstimator("gpt-4o"))
    tracker = CalibrationTracker("gpt-4o")
    msgs: list[Any] = [{"role": "system", "content": _words(rng, 8_000)}]
    msgs.append({"role": "user", "content": _words(rng, 300)})
    for kind in pattern:
        count = truth(msgs) if kind == "G" else bad(truth(msgs))
        tracker.observe(msgs, {"prompt_tokens": count})
        msgs = [*msgs, *_turn(rng, 200)]
    return tracker, msgs, truth


def test_two_agreeing_bad_reports_do_not_displace_a_true_first_one() -> None:
    tracker, msgs, truth = _pattern_run("GBB", lambda true: int(0.45 * true))
    assert tracker.estimate(msgs).total >= 0.95 * truth(msgs)
    assert tracker.cold_factor > 0.9  # shared by every conversation's cold estimate


def test_a_cached_prefix_left_out_from_the_second_report_on_does_not_re_anchor() -> None:
    """Request 2 is the first that can read a cache: a proxy reporting only the uncached
    input then sends reports that agree with one another, further from their estimate."""
    cached = _skewed_truth(RequestEstimator("gpt-4o"))(
        [{"role": "system", "content": _words(random.Random(0), 8_000)}]
    )
    tracker, msgs, truth = _pattern_run("GBBBBBBB", lambda true: true - cached)
    assert tracker.estimate(msgs).total >= 0.95 * truth(msgs)


def test_a_bad_first_report_seen_twice_is_still_replaced() -> None:
    """A report repeated (duplicate bookkeeping, a request sent again) confirms nothing."""
    rng = random.Random(0)
    truth = _skewed_truth(RequestEstimator("gpt-4o"))
    tracker = CalibrationTracker("gpt-4o")
    msgs: list[Any] = [{"role": "system", "content": _words(rng, 8_000)}]
    msgs.append({"role": "user", "content": _words(rng, 300)})
    bad = {"prompt_tokens": int(0.45 * truth(msgs))}
    tracker.observe(msgs, bad)
    tracker.observe(msgs, bad)
    for _ in range(5):
        msgs = [*msgs, *_turn(rng, 200)]
        tracker.observe(msgs, {"prompt_tokens": truth(msgs)})
    msgs = [*msgs, *_turn(rng, 200)]
    assert tracker.estimate(msgs).total >= 0.95 * truth(msgs)
