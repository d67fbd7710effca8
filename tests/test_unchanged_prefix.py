"""The caches' unchanged-prefix check (Rust) against the Python reference.

Every per-turn cache (request estimate, scans, pairing) trusts this check to say that the
messages it counted last time are still there, unchanged: a wrong "unchanged" would keep a
stale count, so the cases where a caller replaced something are the ones that matter.
"""

from __future__ import annotations

import random
from itertools import repeat
from typing import Any

import pytest

from ctxbudget._core import unchanged_prefix
from tests import reference

KEYS = ("content", "tool_calls", "reasoning_content")


def _history(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 3 == 1:
            out.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]})
        else:
            out.append({"role": "user", "content": f"message {i}"})
    return out


def _refs(msgs: list[Any]) -> list[list[Any]]:
    return [list(map(dict.get, msgs, repeat(key))) for key in KEYS]


def _both(messages: list[Any], previous: list[Any], refs: list[list[Any]]) -> int:
    got = unchanged_prefix(messages, previous, refs, KEYS)
    assert got == reference.unchanged_prefix(messages, previous, refs, KEYS)
    return got


def test_appended_list_keeps_the_prefix() -> None:
    previous = _history(30)
    assert _both([*previous, {"role": "user", "content": "next"}], previous, _refs(previous)) == 30
    assert _both(list(previous), previous, _refs(previous)) == 30


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.__setitem__("content", "replaced"),
        lambda m: m.__setitem__("tool_calls", [{"id": "other"}]),
        lambda m: m.__setitem__("reasoning_content", "new thought"),
        lambda m: m.pop("content"),
    ],
    ids=["content", "tool_calls", "added-field", "removed-field"],
)
def test_a_replaced_field_is_noticed(edit: Any) -> None:
    previous = _history(30)
    refs = _refs(previous)
    messages = [dict(m) for m in previous]  # equal copies: still the same prefix
    assert _both(messages, previous, refs) == 30
    edit(messages[17])
    assert _both(messages, previous, refs) == 0


def test_equal_but_new_objects_count_as_unchanged() -> None:
    previous = _history(10)
    refs = _refs(previous)
    messages = [
        {**m, "content": "".join(m["content"] or "")} if m["content"] else m for m in previous
    ]
    assert _both(messages, previous, refs) == 10


def test_shapes_that_are_not_known_give_zero() -> None:
    previous = _history(5)
    refs = _refs(previous)
    assert _both(previous[:4], previous, refs) == 0  # shorter
    assert _both(previous, previous, refs[:2]) == 0  # refs for fewer keys
    assert _both(previous, previous, [r[:4] for r in refs]) == 0  # short columns
    assert _both([], [], []) == 0
    odd = [("not", "a dict")] * 3
    assert _both(odd, odd, [[None] * 3 for _ in KEYS]) == 0


class _Mutating:
    """A content whose ``==`` empties the lists being compared."""

    def __init__(self, victims: list[list[Any]]) -> None:
        self.victims = victims

    def __eq__(self, other: object) -> bool:
        for victim in self.victims:
            victim.clear()
        return True

    __hash__ = None  # type: ignore[assignment]


def test_an_eq_that_mutates_the_lists_is_survived() -> None:
    previous = _history(6)
    messages = [dict(m) for m in previous]
    refs = _refs(previous)
    messages[2]["content"] = _Mutating([messages, previous, *refs])
    # The reference would index the emptied lists; the core must neither crash nor claim
    # an unchanged prefix it could not check.
    assert unchanged_prefix(messages, previous, refs, KEYS) == 0


def test_a_key_whose_eq_mutates_the_lists_during_the_lookup_is_survived() -> None:
    class Colliding:
        """A dict key with the hash of "content": the lookup of "content" calls its ``==``."""

        def __init__(self, victims: list[list[Any]]) -> None:
            self.victims = victims

        def __hash__(self) -> int:
            return hash("content")

        def __eq__(self, other: object) -> bool:
            for victim in self.victims:
                victim.clear()
            return False

    previous = _history(6)
    odd_key = Colliding([])
    odd = {odd_key: 0, **previous[3]}
    messages = list(previous)
    messages[3] = previous[3] = odd
    refs = _refs(previous)
    assert unchanged_prefix(messages, previous, refs, KEYS) == 6
    odd_key.victims = [*refs, messages]
    assert unchanged_prefix(messages, previous, refs, KEYS) == 0
    assert refs == [[], [], []]  # the lookup did call that key's ==


def test_a_saved_reference_freed_during_the_lookup_is_not_used() -> None:
    """A colliding key's ``==`` replaces the saved reference (its last reference) while the
    "content" lookup runs: a saved reference read before the lookup would be freed memory."""
    armed = False

    class Colliding:
        def __hash__(self) -> int:
            return hash("content")

        def __eq__(self, other: object) -> bool:
            nonlocal armed
            if armed:
                armed = False
                refs[0][0] = "y" * 300
                _ = [str(i) * 50 for i in range(5000)]  # reuse the freed memory
            return False

    message: dict[Any, Any] = {Colliding(): 1}  # probed before "content"
    message["content"] = "x" * 300
    refs = [["".join(["x"] * 300)]]  # equal to the content, and a distinct object
    assert unchanged_prefix([message], [message], refs, ("content",)) == 1
    refs = [["".join(["x"] * 300)]]
    armed = True
    assert unchanged_prefix([message], [message], refs, ("content",)) == 0


def test_an_eq_that_raises_propagates() -> None:
    class Broken:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no compare")

        __hash__ = None  # type: ignore[assignment]

    previous = _history(4)
    messages = [dict(m) for m in previous]
    refs = _refs(previous)
    messages[0]["content"] = Broken()
    with pytest.raises(RuntimeError, match="no compare"):
        unchanged_prefix(messages, previous, refs, KEYS)


def test_random_edits_match_the_reference() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        previous = _history(rng.randrange(0, 12))
        refs = _refs(previous)
        messages = [m if rng.random() < 0.7 else dict(m) for m in previous]
        for _ in range(rng.randrange(0, 3)):
            if not messages:
                break
            i = rng.randrange(len(messages))
            action = rng.randrange(5)
            if action == 0:
                messages[i] = {**messages[i], "content": "edited"}
            elif action == 1:
                messages[i] = {**messages[i], "role": "system"}
            elif action == 2:
                messages.insert(i, {"role": "user", "content": "inserted"})
            elif action == 3:
                del messages[i]
            else:
                messages.append({"role": "user", "content": "appended"})
        _both(messages, previous, refs)
