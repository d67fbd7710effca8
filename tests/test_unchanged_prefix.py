"""The caches' unchanged-prefix check (Rust) against the Python reference.

Every per-turn cache (request estimate, scans, pairing) trusts this check to say that the
messages it counted last time are still there, unchanged: a wrong "unchanged" would keep a
stale count, so the cases where a caller replaced something are the ones that matter.
"""

from __future__ import annotations

import copy
import pickle
import random
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from itertools import repeat
from typing import Any, ClassVar

import pytest

from ctxbudget._core import DictVersions, same_value, unchanged_prefix
from ctxbudget.request import RequestEstimator
from ctxbudget.turns import ScanCache
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


#: Edits that replace, add or remove a content field of a message dict, by name.
FIELD_EDITS: dict[str, Callable[[dict[str, Any]], object]] = {
    "content": lambda m: m.__setitem__("content", "replaced"),
    "tool_calls": lambda m: m.__setitem__("tool_calls", [{"id": "other"}]),
    "added-field": lambda m: m.__setitem__("reasoning_content", "new thought"),
    "removed-field": lambda m: m.pop("content"),
}
#: The same, and dict methods that change several fields at once.
IN_PLACE_EDITS = {
    **FIELD_EDITS,
    "update": lambda m: m.update(content="updated"),
    "clear": lambda m: m.clear(),
}


def test_appended_list_keeps_the_prefix() -> None:
    previous = _history(30)
    assert _both([*previous, {"role": "user", "content": "next"}], previous, _refs(previous)) == 30
    assert _both(list(previous), previous, _refs(previous)) == 30


@pytest.mark.parametrize("edit", list(FIELD_EDITS.values()), ids=list(FIELD_EDITS))
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


#: Values Python calls equal whose JSON, and so whose count, differs.
EQUAL_BUT_WRITTEN_APART: list[tuple[Any, Any]] = [
    (1, 1.0),
    (1, True),
    (0.0, -0.0),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({1: "x"}, {True: "x"}),
    ([1, [2, {"n": 3}]], [1, [2, {"n": 3.0}]]),
    ((1, 2), (1, 2.0)),
]


@pytest.mark.parametrize(("a", "b"), EQUAL_BUT_WRITTEN_APART)
def test_values_equal_but_written_apart_count_as_changed(a: Any, b: Any) -> None:
    assert a == b and not same_value(a, b) and not same_value(b, a)
    assert same_value(a, copy.deepcopy(a)) and same_value(b, copy.deepcopy(b))
    previous = _history(6)
    refs = _refs(previous)
    messages = [dict(m) for m in previous]
    previous[2]["content"], refs[0][2] = a, a
    assert _both([*messages[:2], {**previous[2]}, *messages[3:]], previous, refs) == 6
    assert _both([*messages[:2], {**previous[2], "content": b}, *messages[3:]], previous, refs) == 0


def test_subclasses_of_containers_and_floats_are_compared_as_they_are_written() -> None:
    """JSON writes a dict subclass as a dict, a namedtuple as a list, a float subclass as a
    float: compared item by item and by bits, not by their ``==``."""
    import collections

    np = pytest.importorskip("numpy")

    class Fields(dict):  # type: ignore[type-arg]
        pass

    class Items(list):  # type: ignore[type-arg]
        pass

    pair = collections.namedtuple("pair", "x y")
    cases = [
        (collections.OrderedDict(n=1), collections.OrderedDict(n=True)),
        (Fields(n=1), Fields(n=1.0)),
        (Items([1]), Items([1.0])),
        (pair(1, 2), pair(1, 2.0)),
        (np.float64(0.0), np.float64(-0.0)),
    ]
    for a, b in cases:
        assert a == b and not same_value(a, b), (a, b)
        assert same_value(a, copy.deepcopy(a))


def test_a_comparison_reentered_from_an_eq_stops_at_the_recursion_limit() -> None:
    """An ``__eq__`` that compares nested values again: a RecursionError, as with ``==``, not
    a crash (run apart: a crash would end the test run)."""
    script = """
from ctxbudget._core import same_value

def nested(n, leaf):
    for _ in range(n):
        leaf = [leaf]
    return leaf

class Again:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        a, b = nested(95, Again(self.n - 1)), nested(95, Again(other.n - 1))
        return self.n == 0 or same_value(a, b)

    __hash__ = object.__hash__

try:
    same_value([Again(500)], [Again(500)])
except RecursionError:
    print("RecursionError")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "RecursionError"), done.stderr


def test_values_too_deep_to_compare_count_as_changed() -> None:
    def nested(levels: int) -> Any:
        value: Any = "leaf"
        for _ in range(levels):
            value = [value]
        return value

    deep = nested(5_000)
    assert same_value(deep, deep)
    assert not same_value(deep, nested(5_000))
    assert same_value(nested(90), nested(90))
    shallow = [[["leaf"]]]
    assert same_value(shallow, copy.deepcopy(shallow))


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
    previous[0]["content"] = Broken()
    messages = [dict(m) for m in previous]
    refs = _refs(previous)
    messages[0]["content"] = Broken()  # of the same type: compared with its __eq__
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
            action = rng.randrange(6)
            if action == 5:  # equal by ==, written apart
                messages[i] = {**messages[i], "content": rng.choice([1, 1.0, True, None])}
            elif action == 0:
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


def test_dict_versions_are_read_where_cpython_keeps_them() -> None:
    kept = (
        sys.implementation.name == "cpython"
        and (3, 10) <= sys.version_info[:2] <= (3, 13)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )
    assert DictVersions.supported is kept


class _CountedKey:
    """A dict key with the hash of "content": each lookup of "content" in a dict holding it
    calls its ``==``, which is counted."""

    calls = 0

    def __hash__(self) -> int:
        return hash("content")

    def __eq__(self, other: object) -> bool:
        type(self).calls += 1
        return False


def test_versions_skip_the_lookups_of_dicts_not_changed_since() -> None:
    previous = _history(8)
    previous[5] = {_CountedKey(): 0, **previous[5]}
    refs = _refs(previous)
    _CountedKey.calls = 0
    previous[5].get("content")
    lookup = _CountedKey.calls  # 1, or 2 where the probe sequence meets the key twice
    assert lookup >= 1
    seen = DictVersions()
    _CountedKey.calls = 0
    for _ in range(3):
        assert unchanged_prefix(previous, previous, refs, KEYS, seen) == 8
    assert len(seen) == 8
    looked_up = 1 if DictVersions.supported else 3  # again only without versions
    assert _CountedKey.calls == looked_up * lookup
    previous[5]["role"] = "system"  # a change to the dict, not to its fields: looked up again
    assert unchanged_prefix(previous, previous, refs, KEYS, seen) == 8
    assert _CountedKey.calls == (looked_up + 1) * lookup
    assert unchanged_prefix(previous, previous, refs, KEYS) == 8  # without: every time
    assert _CountedKey.calls == (looked_up + 2) * lookup
    # A saved field equal to the message's but not the same object: compared every time.
    refs[0][5] = "".join(["message ", "5"])
    for n in range(2):
        assert unchanged_prefix(previous, previous, refs, KEYS, seen) == 8
        assert _CountedKey.calls == (looked_up + 3 + n) * lookup


def test_a_field_matched_by_equality_and_then_edited_in_place_is_noticed() -> None:
    m: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    refs = [[m["content"]], [None], [None]]
    seen = DictVersions()
    assert unchanged_prefix([m], [m], refs, KEYS, seen) == 1
    m["content"] = copy.deepcopy(m["content"])  # equal, not the same list
    assert unchanged_prefix([m], [m], refs, KEYS, seen) == 1
    m["content"].append({"type": "text", "text": "b"})  # no longer equal to the saved one
    assert reference.unchanged_prefix([m], [m], refs, KEYS) == 0
    assert unchanged_prefix([m], [m], refs, KEYS, seen) == 0


def test_one_dict_versions_shared_by_two_caches_gives_each_its_own_answer() -> None:
    """Two caches (a shallow copy of one shares its DictVersions) whose saved fields differ:
    marks made against one's saved references are not used for the other's."""
    m: dict[str, Any] = {"role": "user", "content": "old " * 10}
    old_refs = [[m["content"]], [None], [None]]
    seen = DictVersions()
    assert unchanged_prefix([m], [m], old_refs, KEYS, seen) == 1
    m["content"] = "new " * 10
    new_refs = [[m["content"]], [None], [None]]
    assert unchanged_prefix([m], [m], new_refs, KEYS, seen) == 1  # marks m as it is now
    assert unchanged_prefix([m], [m], old_refs, KEYS, seen) == 0  # the other cache's view
    assert unchanged_prefix([m], [m], new_refs, KEYS, seen) == 1
    assert unchanged_prefix([m], [m], old_refs, KEYS, seen) == 0


def test_a_shallow_copy_of_an_estimator_counts_an_edit_as_a_fresh_one_does() -> None:
    m = {"role": "user", "content": "hi"}
    a = RequestEstimator("gpt-4o", format="openai_chat")
    a.estimate([m])
    b = copy.copy(a)
    m["content"] = "word " * 2000
    a.estimate([m])
    a.estimate([m])
    fresh = RequestEstimator("gpt-4o", format="openai_chat").estimate([m]).total
    assert b.estimate([m]).total == fresh


def test_marks_made_for_other_keys_are_not_used() -> None:
    m: dict[str, Any] = {"role": "user", "content": "a" * 20, "parts": "x" * 20}
    saved = [[m["content"]]]
    seen = DictVersions()
    for _ in range(2):
        assert unchanged_prefix([m], [m], saved, ("content",), seen) == 1
    # The same dict, version and saved object, asked about another field: "parts" is not
    # the saved object, whatever was found for "content".
    assert unchanged_prefix([m], [m], saved, ("parts",), seen) == 0
    assert unchanged_prefix([m], [m], [[m["parts"]]], ("parts",), seen) == 1


def test_an_instance_dict_edited_through_its_attributes_is_noticed() -> None:
    """An object's ``__dict__`` as a message: on Python 3.13 setting an attribute changes
    it without a new version, so such dicts are never marked."""

    class Holder:
        pass

    holder = Holder()
    holder.role = "user"  # type: ignore[attr-defined]
    holder.content = "a"  # type: ignore[attr-defined]
    m = vars(holder)
    refs = _refs([m])
    seen = DictVersions()
    for _ in range(2):
        assert unchanged_prefix([m], [m], refs, KEYS, seen) == 1
    holder.content = "edited"  # type: ignore[attr-defined]
    assert unchanged_prefix([m], [m], refs, KEYS, seen) == 0


@pytest.mark.parametrize("edit", list(IN_PLACE_EDITS.values()), ids=list(IN_PLACE_EDITS))
def test_a_dict_edited_in_place_is_noticed_after_versions_were_kept(edit: Any) -> None:
    previous = _history(30)
    refs = _refs(previous)
    seen = DictVersions()
    messages = list(previous)  # the same dicts: the case versions speed up
    for _ in range(2):
        assert _both(messages, previous, refs) == 30
        assert unchanged_prefix(messages, previous, refs, KEYS, seen) == 30
    edit(messages[17])
    assert unchanged_prefix(messages, previous, refs, KEYS, seen) == 0
    assert len(seen) == 0
    assert _both(messages, previous, refs) == 0


def test_random_edits_in_place_match_the_reference_across_turns() -> None:
    """A cache's life: each turn checks the list against what it saved, with one
    DictVersions kept throughout, then saves the list as it is; between turns, messages are
    appended, replaced, or edited in place (the same dict objects)."""
    rng = random.Random(11)
    for _ in range(200):
        messages = _history(rng.randrange(1, 10))
        previous, refs, seen = list(messages), _refs(messages), DictVersions()
        for _ in range(12):
            for _ in range(rng.randrange(0, 3)):
                i = rng.randrange(len(messages))
                action = rng.randrange(6)
                if action == 0:
                    messages[i]["content"] = f"edited {rng.random()}"
                elif action == 1:
                    messages[i]["role"] = "system"
                elif action == 2:
                    messages[i].pop("tool_calls", None)
                elif action == 3:
                    messages[i] = {**messages[i]}
                elif action == 4:
                    messages[i]["content"] = "".join(["message ", str(i)])  # equal, new
                else:
                    messages.append({"role": "user", "content": "appended"})
            want = reference.unchanged_prefix(messages, previous, refs, KEYS)
            assert unchanged_prefix(messages, previous, refs, KEYS, seen) == want
            previous, refs = list(messages), _refs(messages)


def test_a_cache_copies_and_pickles_with_its_versions_left_behind() -> None:
    previous = _history(5)
    seen = DictVersions()
    assert unchanged_prefix(previous, previous, _refs(previous), KEYS, seen) == 5
    assert len(seen) == 5
    for twin in (copy.copy(seen), copy.deepcopy(seen), pickle.loads(pickle.dumps(seen))):
        assert type(twin) is DictVersions and len(twin) == 0
    cache = ScanCache("openai_chat")
    cache.scan(previous)
    again = pickle.loads(pickle.dumps(copy.deepcopy(cache)))
    assert again.scan(previous) == cache.scan(previous)


def test_same_value_is_the_reference_on_random_values() -> None:
    """Nested dicts, lists and tuples of values Python calls equal across types."""
    rng = random.Random(11)
    leaves = [1, 1.0, True, False, None, 0.0, -0.0, "a", "b", 2, float("nan")]

    def value(depth: int) -> Any:
        r = rng.random()
        if depth > 4 or r < 0.3:
            return rng.choice(leaves)
        if r < 0.6:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        if r < 0.8:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        return {rng.choice(["k", "j", 1, True]): value(depth + 1) for _ in range(rng.randrange(3))}

    same = 0
    for _ in range(20_000):
        a, b = value(0), value(0)
        for x, y in ((a, b), (a, copy.deepcopy(a))):
            assert same_value(x, y) == reference.same_value(x, y), (x, y)
            same += same_value(x, y)
    assert same > 20_000  # the copies, and some of the pairs


# -- messages that are SDK objects (a response's message appended as it came)


def _sdk_message(i: int) -> Any:
    from openai.types.chat import ChatCompletionMessage

    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    return ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": f"step {i}", "tool_calls": calls}
    )


def _object_refs(msgs: list[Any]) -> list[list[Any]]:
    from ctxbudget.formats.common import field_columns

    columns = field_columns(msgs, KEYS)
    assert columns is not None
    return columns


def test_sdk_objects_are_read_from_their_fields() -> None:
    # An SDK object made every cache count the whole list again each turn (the check said 0)
    previous = [*_history(4), _sdk_message(4), _sdk_message(5)]
    refs = _object_refs(previous)
    assert _both([*previous, _sdk_message(6)], previous, refs) == 6
    previous[4].content = "replaced"  # an attribute set: the field is another object
    assert _both(previous, previous, refs) == 0
    refs = _object_refs(previous)
    previous[5].tool_calls = None
    assert _both(previous, previous, refs) == 0
    refs = _object_refs(previous)
    assert _both(previous, previous, refs) == 6
    previous[5].reasoning_content = "thinking"  # an extra field, kept outside __dict__
    assert _both(previous, previous, refs) == 0
    refs = _object_refs(previous)
    assert _both(previous, previous, refs) == 6
    previous[5].reasoning_content = "more thinking"
    assert _both(previous, previous, refs) == 0


def test_objects_without_a_dict_give_zero() -> None:
    class Slotted:
        __slots__ = ("content",)

        def __init__(self) -> None:
            self.content = "x"

    m = Slotted()
    assert _both([m], [m], [[None] for _ in KEYS]) == 0


def test_sdk_objects_edited_between_turns_are_counted_as_a_fresh_cache_counts_them() -> None:
    rng = random.Random(7)
    history: list[Any] = [{"role": "user", "content": "go"}]
    estimator, scans = RequestEstimator("gpt-4o"), ScanCache("openai_chat")
    grown: list[int] = []  # the prefix read on the turns the list only grew
    for turn in range(60):
        history.append(_sdk_message(turn) if turn % 2 else {"role": "user", "content": "ok"})
        edited = rng.random() < 0.4
        if edited:  # replace a field of an earlier SDK message
            objects = [m for m in history if not isinstance(m, dict)]
            if objects:
                victim, edit = rng.choice(objects), rng.randrange(4)
                if edit == 0:
                    victim.content = f"edited at {turn} " * rng.randint(1, 40)
                elif edit == 1:
                    victim.tool_calls = None
                elif edit == 2:  # an extra field (DeepSeek's, vLLM's): not in __dict__
                    victim.reasoning_content = f"thought at {turn} " * rng.randint(0, 40)
                else:
                    victim.name = f"agent_{turn}"
        assert (
            estimator.estimate(history).total == RequestEstimator("gpt-4o").estimate(history).total
        )
        assert scans.scan(history) == ScanCache("openai_chat").scan(history)
        if not edited:
            grown.append(scans.prefix)
    assert grown and all(grown[1:])  # a list that only grew is read from where it ended


def test_mappings_and_computed_fields_are_read_anew_each_turn() -> None:
    # Their fields are not in an instance __dict__: read from it, they never changed
    from collections import UserDict

    from pydantic import BaseModel, computed_field

    class Reply(BaseModel):
        text: str

        @computed_field  # type: ignore[prop-decorator]
        @property
        def content(self) -> str:
            return self.text

        role: str = "assistant"

    result = UserDict({"role": "tool", "tool_call_id": "c1", "content": "short"})
    reply = Reply(text="short")
    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    history: list[Any] = [{"role": "assistant", "content": None, "tool_calls": calls}, result]
    history.append(reply)
    estimator, scans = RequestEstimator("gpt-4o"), ScanCache("openai_chat")
    estimator.estimate(history), scans.scan(history)
    result.data["content"] = "long " * 5_000
    reply.text = "long " * 7_000
    fresh = RequestEstimator("gpt-4o").estimate(history).total
    assert estimator.estimate(history).total == fresh > 10_000
    assert scans.scan(history) == ScanCache("openai_chat").scan(history)


def test_models_whose_dump_is_not_their_fields_are_read_anew_each_turn() -> None:
    # A root model, a serializer or aliases in the dump: read from __dict__, an edit of the
    # text was never seen (a 30k-token message counted as 18 tokens)
    from pydantic import BaseModel, RootModel, model_serializer

    class Dumped(BaseModel):
        body: str

        @model_serializer
        def _dump(self) -> dict[str, Any]:
            return {"role": "user", "content": self.body}

    class Overridden(BaseModel):
        body: str

        def model_dump(self, **_: Any) -> dict[str, Any]:  # type: ignore[override]
            return {"role": "user", "content": self.body}

    root = RootModel[dict[str, Any]]({"role": "user", "content": "short"})
    dumped, overridden = Dumped(body="short"), Overridden(body="short")
    history: list[Any] = [root, dumped, overridden]
    estimator = RequestEstimator("gpt-4o")
    estimator.estimate(history)
    root.root["content"] = "long " * 5_000
    dumped.body = "long " * 6_000
    overridden.body = "long " * 3_000
    fresh = RequestEstimator("gpt-4o").estimate(history).total
    assert estimator.estimate(history).total == fresh > 10_000


def test_the_pairing_cache_reads_a_mapping_that_is_no_dict_anew() -> None:
    from collections import UserDict

    from ctxbudget.pairing_cache import GrowingPairing

    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    history: list[Any] = [
        {"role": "assistant", "content": None, "tool_calls": calls},
        UserDict({"role": "tool", "tool_call_id": "c1", "content": "a b c"}),
    ]
    pairing = GrowingPairing()
    assert pairing.violations("openai_chat", history) == []
    history[1]["tool_call_id"] = "c9"  # answers no call now
    kinds = [v.kind for v in pairing.violations("openai_chat", history)]
    assert kinds == ["missing_result", "orphaned_result"]


def test_classes_asked_about_are_not_kept_alive() -> None:
    import gc
    import weakref

    from openai.types.chat import ChatCompletionMessage
    from pydantic import create_model

    from ctxbudget.formats.common import plain_model

    cls = create_model("Made", __base__=ChatCompletionMessage)
    assert plain_model(cls)
    ref = weakref.ref(cls)
    del cls
    gc.collect()
    assert ref() is None


def test_a_class_whose_attributes_raise_is_read_anew_not_refused() -> None:
    from ctxbudget.formats.common import plain_model

    class Meta(type):
        @property
        def model_config(cls) -> Any:
            raise RuntimeError("config not loaded")

    class Odd(metaclass=Meta):
        __pydantic_fields__: ClassVar[dict[str, Any]] = {}

    assert plain_model(Odd) is False
