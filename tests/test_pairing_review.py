"""Review round on tool-call pairing and on choosing what to stub: the cases found wrong."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget import Selection, select_largest, validate_pairing
from ctxbudget.largest import StubCandidates, stub_largest
from ctxbudget.messages import MessageFormatError
from ctxbudget.pairing_cache import GrowingPairing
from ctxbudget.prune import PruneConfig
from ctxbudget.request import RequestEstimator
from ctxbudget.result_size import ResultSizer
from ctxbudget.sticky_stubs import StickyStubs
from ctxbudget.turns import pairing_events, result_text, scan
from tests import reference


def call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def whole(messages: list[Any]) -> list[Any]:
    return validate_pairing(pairing_events(scan(messages, "openai_chat")))


def two_tool_turns() -> list[Any]:
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "out"},
        {"role": "assistant", "content": None, "tool_calls": [call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "out"},
    ]


# -- GrowingPairing


def test_a_list_that_failed_to_read_leaves_nothing_stale() -> None:
    """A list whose reading raised dropped the events after its unchanged part; the next
    list, the earlier one grown, was then checked without them (a duplicate result was
    reported as an orphan)."""
    history = two_tool_turns()
    checker = GrowingPairing()
    assert checker.violations("openai_chat", history) == []
    with pytest.raises(MessageFormatError):
        checker.violations("openai_chat", [*history[:2], "not a message"])
    grown = [*history, {"role": "tool", "tool_call_id": "b", "content": "again"}]
    assert checker.violations("openai_chat", grown) == whole(grown)
    assert [v.kind for v in whole(grown)] == ["duplicate_result"]


def test_an_id_that_is_not_a_string_is_named_by_message_and_field() -> None:
    """The error named the pairing event ("event 4: call_id must be a str"), which the
    caller cannot map back to a message."""
    history = [*two_tool_turns(), {"role": "tool", "tool_call_id": 5, "content": "out"}]
    checker = GrowingPairing()
    with pytest.raises(MessageFormatError) as caught:
        checker.violations("openai_chat", history)
    assert (caught.value.index, caught.value.field) == (5, "tool_call_id")
    # and the checker still answers for the corrected list
    fixed = [*history[:5], {"role": "tool", "tool_call_id": "b", "content": "out"}]
    assert checker.violations("openai_chat", fixed) == whole(fixed)


def test_an_interrupted_read_leaves_nothing_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only the errors of a malformed message: any exception (a KeyboardInterrupt in the
    middle of a read) resets what was read."""
    import ctxbudget.pairing_cache as module

    history = two_tool_turns()
    checker = GrowingPairing()
    checker.violations("openai_chat", history)

    def interrupted(events: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(module, "validate_pairing", interrupted)
        with pytest.raises(KeyboardInterrupt):
            checker.violations("openai_chat", [*history[:3], {"role": "user", "content": "x"}])
    grown = [*history, {"role": "tool", "tool_call_id": "b", "content": "again"}]
    assert checker.violations("openai_chat", grown) == whole(grown)


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown message format 'chat'"):
        GrowingPairing().violations("chat", two_tool_turns())


# -- validate_pairing with ids that have no UTF-8 form


def test_an_id_with_a_lone_surrogate_does_not_pair_with_its_escape() -> None:
    """Ids with a lone surrogate were compared by their backslash escape, which a different
    id can be written as: the call of one and the result of the other paired."""
    events = [(0, 0, "a\ud800"), (1, 1, "a\\ud800")]
    got = [(v.kind, v.call_id, list(v.positions)) for v in validate_pairing(events)]
    assert got == reference.validate_pairing(events)
    assert [v[0] for v in got] == ["missing_result", "orphaned_result"]


def test_violations_with_a_lone_surrogate_keep_the_id_order() -> None:
    events = [(0, 0, "\ud800"), (0, 0, "a"), (0, 0, "\\")]
    got = [(v.kind, v.call_id, list(v.positions)) for v in validate_pairing(events)]
    assert got == reference.validate_pairing(events)


@st.composite
def surrogate_conversations(draw: st.DrawFn) -> list[tuple[int, int, str]]:
    alphabet = ["a", "\\", "\ud800", "\udc80", "u", "d"]
    ids = draw(st.lists(st.text(alphabet=alphabet, max_size=4), max_size=10))
    kinds = draw(st.lists(st.integers(0, 1), min_size=len(ids), max_size=len(ids)))
    steps = draw(st.lists(st.integers(0, 1), min_size=len(ids), max_size=len(ids)))
    position, events = 0, []
    for call_id, kind, step in zip(ids, kinds, steps, strict=True):
        position += step
        events.append((position, kind, call_id))
    return events


@given(surrogate_conversations())
def test_ids_with_surrogates_and_backslashes_match_the_reference(
    events: list[tuple[int, int, str]],
) -> None:
    got = [(v.kind, v.call_id, list(v.positions)) for v in validate_pairing(events)]
    assert got == reference.validate_pairing(events)


# -- select_largest


@pytest.mark.parametrize("need", [-(2**63), -(2**63) - 1, -(2**200)])
def test_any_need_at_or_below_zero_selects_nothing(need: int) -> None:
    """A need below int64 raised OverflowError; the docstring says ``need <= 0`` selects
    nothing."""
    assert select_largest([5, 1, 9], need) == Selection(indices=[], freed=0, shortfall=0)


def test_a_need_below_int64_still_checks_the_sizes() -> None:
    with pytest.raises(ValueError, match="negative"):
        select_largest([5, -1], -(2**70))


# -- stubbing the largest results, and keeping them stubbed


def _lines(n: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta"]
    return "\n".join(" ".join(rng.choice(words) for _ in range(10)) for _ in range(n))


def test_a_stub_made_in_a_second_round_stays_in_later_requests() -> None:
    """The guard stubs in rounds until the estimate fits; a second round on the same message
    works on the first round's copy. That stub was recorded against the copy, which the
    next request's view does not hold: the next request sent the output whole again."""
    fmt = "anthropic"
    view: list[Any] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"t{k}", "name": "read", "input": {}} for k in range(3)
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": _lines(300, 1)},
                {"type": "tool_result", "tool_use_id": "t1", "content": _lines(200, 2)},
                {"type": "tool_result", "tool_use_id": "t2", "content": "small"},
            ],
        },
    ]
    candidates = StubCandidates(ResultSizer(RequestEstimator(encoding="o200k")), PruneConfig())

    def one_round(messages: list[Any]) -> tuple[list[Any], list[tuple[Any, int, str]]]:
        return stub_largest(
            fmt, messages, scan(messages, fmt), 100, candidates=candidates,
            rescan=lambda out: scan(out, fmt),
        )  # fmt: skip

    first, made_first = one_round(view)
    sent, made_second = one_round(first)
    assert [slot for _, slot, _ in made_first] == [0]
    assert [slot for _, slot, _ in made_second] == [1]
    sticky = StickyStubs()
    sticky.remember(fmt, made_first + made_second)
    following = sticky.apply(fmt, [*view, {"role": "assistant", "content": "Done."}])
    for slot in range(3):
        assert result_text(fmt, following[2], slot) == result_text(fmt, sent[2], slot)
    assert view[2]["content"][1]["content"] == _lines(200, 2)  # the caller's message kept
