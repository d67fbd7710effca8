from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget import EventKind, PairingViolation, validate_pairing
from tests import reference

CALL, RESULT = EventKind.CALL, EventKind.RESULT


def kinds(events: list[tuple[int, EventKind, str]]) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(v.kind, v.call_id, v.positions) for v in validate_pairing(events)]


def test_valid_conversation_has_no_violation() -> None:
    events = [(1, CALL, "a"), (1, CALL, "b"), (2, RESULT, "a"), (3, RESULT, "b")]
    assert validate_pairing(events) == []


def test_empty() -> None:
    assert validate_pairing([]) == []


def test_missing_result() -> None:
    assert kinds([(0, CALL, "a")]) == [("missing_result", "a", (0,))]


def test_orphaned_result() -> None:
    assert kinds([(3, RESULT, "x")]) == [("orphaned_result", "x", (3,))]


def test_duplicate_call() -> None:
    got = kinds([(0, CALL, "a"), (1, RESULT, "a"), (2, CALL, "a")])
    assert ("duplicate_call", "a", (0, 2)) in got


def test_result_before_call_is_position_aware() -> None:
    # [result, call]: the result comes first, and the call is then left unanswered
    assert kinds([(0, RESULT, "a"), (1, CALL, "a")]) == [
        ("result_before_call", "a", (0, 1)),
        ("missing_result", "a", (1,)),
    ]


def test_duplicate_result() -> None:
    assert kinds([(0, CALL, "a"), (1, RESULT, "a"), (2, RESULT, "a")]) == [
        ("duplicate_result", "a", (1, 2))
    ]


def test_result_in_the_same_message_as_its_call_is_before_it() -> None:
    assert kinds([(4, CALL, "a"), (4, RESULT, "a")]) == [
        ("missing_result", "a", (4,)),
        ("result_before_call", "a", (4, 4)),
    ]


def test_kind_spellings() -> None:
    a = validate_pairing([(0, 0, "a"), (1, 1, "a")])
    b = validate_pairing([(0, "call", "a"), (1, "result", "a")])
    assert a == b == []


def test_violation_is_a_value() -> None:
    (v,) = validate_pairing([(0, CALL, "a")])
    assert v == PairingViolation(kind="missing_result", call_id="a", positions=(0,))
    with pytest.raises(AttributeError):
        v.kind = "other"  # type: ignore[misc]


def test_decreasing_positions_are_refused() -> None:
    with pytest.raises(ValueError, match="non-decreasing"):
        validate_pairing([(2, CALL, "a"), (1, RESULT, "a")])


@pytest.mark.parametrize(
    "events",
    [
        [(0, 2, "a")],
        [(0, "answer", "a")],
    ],
)
def test_bad_kind(events: list[tuple[int, object, str]]) -> None:
    with pytest.raises(ValueError):
        validate_pairing(events)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "events",
    [[(0, CALL)], [(0, CALL, 7)], ["abc"], [None], [("x", CALL, "a")]],
)
def test_malformed_events_are_type_errors(events: list[object]) -> None:
    with pytest.raises(TypeError):
        validate_pairing(events)  # type: ignore[arg-type]


def test_not_iterable() -> None:
    with pytest.raises(TypeError):
        validate_pairing(5)  # type: ignore[arg-type]


def test_generator_input() -> None:
    assert validate_pairing((p, k, "a") for p, k in [(0, CALL), (1, RESULT)]) == []


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[int, int, str]]:
    ids = draw(st.lists(st.sampled_from("abcdef"), max_size=12))
    kinds_ = draw(st.lists(st.integers(0, 1), min_size=len(ids), max_size=len(ids)))
    steps = draw(st.lists(st.integers(0, 2), min_size=len(ids), max_size=len(ids)))
    position, events = 0, []
    for call_id, kind, step in zip(ids, kinds_, steps, strict=True):
        position += step
        events.append((position, kind, call_id))
    return events


@given(conversations())
def test_matches_the_reference(events: list[tuple[int, int, str]]) -> None:
    got = [(v.kind, v.call_id, list(v.positions)) for v in validate_pairing(events)]
    assert got == reference.validate_pairing(events)
