"""A Pruner kept across turns: what it re-uses from the last call never changes the answer.

The tail start is checked against a message-by-message reference; the kept Pruner against a
fresh one-shot :func:`~ctxbudget.prune.prune` after random appends, edits, removals, lost
results and a call added after the result it answers.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbudget.messages import FORMATS, MessageFormatError
from ctxbudget.prune import PruneConfig, Pruner, fresh_tail, prune
from ctxbudget.turns import PairingError
from tests import reference
from tests.test_prune import chat_conversation, in_format, text_turns

KINDS = ["user", "assistant", "results", "system"]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3_000), st.sampled_from(KINDS)), max_size=60),
    usable=st.integers(0, 60_000),
    min_turns=st.integers(0, 3),
    fraction=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fresh_tail_matches_the_reference(
    rows: list[tuple[int, str]], usable: int, min_turns: int, fraction: float | None
) -> None:
    cfg = PruneConfig(min_turns=min_turns, turn_floor_fraction=fraction)
    sizes = [size for size, _ in rows]
    kinds = [kind for _, kind in rows]
    users = [i for i, kind in enumerate(kinds) if kind == "user"]
    cap = float("inf") if fraction is None else usable * fraction
    expected = reference.fresh_tail(sizes, kinds, cfg.tail_tokens(usable), min_turns, cap)
    assert fresh_tail(sizes, users, cfg, usable) == expected


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(-200, 3_000), max_size=60),
    usable=st.integers(0, 60_000),
)
def test_token_tail_matches_the_reference_with_any_counts(sizes: list[int], usable: int) -> None:
    """The tokens-only tail (no turn floor), also for counts a custom framing profile could
    make negative, where the running sums are not ordered."""
    cfg = PruneConfig(min_turns=0)
    kinds = ["assistant"] * len(sizes)
    expected = reference.fresh_tail(sizes, kinds, cfg.tail_tokens(usable), 0, float("inf"))
    assert fresh_tail(sizes, [], cfg, usable) == expected


@pytest.mark.parametrize("fraction", [0.57, 0.58, 0.29])
def test_fresh_tail_cap_just_below_a_whole_number(fraction: float) -> None:
    # usable * fraction is 56999.999... and the like: the floor must not protect one token
    # more than the cap because a difference of large numbers rounded it up.
    cfg = PruneConfig(turn_floor_fraction=fraction, min_turns=1)
    usable = 100_000
    cap = usable * fraction
    sizes = [143_000, int(cap) - 8_000 + 1, 8_000]  # the last two are one token over the cap
    kinds = ["user", "results", "assistant"]
    expected = reference.fresh_tail(sizes, kinds, cfg.tail_tokens(usable), 1, cap)
    assert fresh_tail(sizes, [0], cfg, usable) == expected == 2


def _edited(message: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of ``message`` with other text wherever its content is a string."""
    copy = dict(message)
    if isinstance(copy.get("content"), str):
        copy["content"] = f"edited {rng.random()}\n" * rng.choice([3, 900])
    elif isinstance(copy.get("output"), str):
        copy["output"] = f"edited {rng.random()}\n" * rng.choice([3, 900])
    return copy


def _without_ids(messages: list[Any]) -> list[Any]:
    """Gemini messages with no ids in their calls and responses (paired by position)."""
    out = copy.deepcopy(messages)
    for m in out:
        for part in m.get("parts") or []:
            for key in ("function_call", "function_response"):
                if isinstance(part.get(key), dict):
                    part[key].pop("id", None)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    fmt=st.sampled_from([*FORMATS, "gemini without ids"]),
)
def test_kept_pruner_equals_one_shot_through_appends_and_edits(seed: int, fmt: str) -> None:
    rng = random.Random(seed)
    chat = chat_conversation(
        seed, turns=5, steps=4, abandoned=seed % 3 == 0, unanswered_call=seed % 2 == 0
    )
    messages, system = in_format(chat, fmt.split()[0])
    if fmt == "gemini without ids":
        messages, fmt = _without_ids(messages), "gemini"
    if seed % 5 == 0:  # some results lost: calls without one mid-history
        messages = [m for m in messages if rng.random() > 0.1]
    kept = Pruner(16_000, format=fmt)
    history: list[Any] = []
    for message in messages:
        history.append(message)
        roll = rng.random()
        if roll < 0.1 and len(history) > 3:  # an old message edited (a new object)
            i = rng.randrange(len(history) - 1)
            history[i] = _edited(history[i], rng)
        elif roll < 0.15 and len(history) > 3:  # the last message taken back
            history.pop()
        view = kept.prune(history, system=system, run_start=roll > 0.9)
        one_shot = prune(history, window=16_000, system=system, format=fmt, run_start=roll > 0.9)
        assert view.messages == one_shot.messages
        assert view.pruned == one_shot.pruned
        assert (view.tokens_after, view.fits, view.tail_start) == (
            one_shot.tokens_after,
            one_shot.fits,
            one_shot.tail_start,
        )


def test_appending_keeps_the_stub_objects_of_the_last_view() -> None:
    messages, _ = in_format(chat_conversation(3, turns=5, steps=4), "openai_chat")
    kept = Pruner(8_000, format="openai_chat")
    first = kept.prune(messages[:-4])
    second = kept.prune(messages)
    assert first.pruned
    for p in first.pruned:
        assert second.messages[p.index] is first.messages[p.index]
    assert second.pruned[: len(first.pruned)] == first.pruned


def test_a_call_added_after_its_result_renames_the_stub() -> None:
    # The result comes first (a history pasted out of order): the stub names no tool until a
    # call with its id appears, and then it names that call's tool, as a fresh prune does.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "c1", "content": "row\n" * 20_000},
        *text_turns(6),
    ]
    kept = Pruner(window=16_000, model="gpt-4o")
    before = kept.prune(history)
    assert before.pruned[0].tool is None
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    after = kept.prune(history)
    assert after.pruned[0].tool == "grep"
    assert after.messages == prune(history, window=16_000, model="gpt-4o").messages


def test_a_call_that_failed_after_reading_the_list_is_not_built_on() -> None:
    # The failed call read a list with its last message replaced; the next list extends
    # that one, not the list of the last call that succeeded.
    def tool_step(i: int, size: int) -> list[dict[str, Any]]:
        call = {"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"row {i}\n" * size},
        ]

    start = [{"role": "user", "content": "go"}, *tool_step(1, 30_000)]
    kept = Pruner(window=16_000, model="gpt-4o")
    kept.prune([*start, *tool_step(2, 10)])
    replaced = [*start, *tool_step(2, 30_000)]  # same length, a new last result
    with pytest.raises(MessageFormatError):
        kept.prune(replaced, tools=["not a tool"])
    history = [*replaced, *text_turns(6)]
    view = kept.prune(history)
    assert view.messages == prune(history, window=16_000, model="gpt-4o").messages
    assert [p.call_id for p in view.pruned] == ["c1", "c2"]


def test_a_call_id_lost_twice_is_checked_when_its_second_result_is_added() -> None:
    # Two calls with one id, neither answered: the second added result breaks pairing, and a
    # kept Pruner that added the first one earlier must see it, as a fresh prune does.
    def call(cid: str) -> dict[str, Any]:
        fn = {"name": "bash", "arguments": "{}"}
        return {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": fn}]}

    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}, call("c1"), call("c1")]
    kept = Pruner(window=16_000, format="openai_chat")
    kept.prune(history)
    history.append({"role": "user", "content": "still there?"})
    with pytest.raises(PairingError):
        prune(history, window=16_000, format="openai_chat")
    with pytest.raises(PairingError):
        kept.prune(history)


def _old_stub_map(old: list[tuple[int, int, int, str]]) -> dict[int, dict[int, Any]]:
    built: dict[int, dict[int, Any]] = {}
    for i, slot, tokens, text in old:
        built.setdefault(i, {})[slot] = ("old", tokens, text)
    return built


def test_the_old_stub_map_builds_on_the_last_one_without_changing_it() -> None:
    """Turn after turn the old outputs are the last turn's and a few more: the map of what to
    stub is the last one plus those, and the dicts handed out last turn stay as they were
    (the stubs made then hold them), even when a message gains a result."""
    pruner = Pruner(16_000)
    first = [(1, 0, 500, "a" * 2000), (3, 0, 600, "b" * 2000)]
    made = pruner._old_stubs(first)
    before = copy.deepcopy(made)
    second = [*first, (3, 1, 700, "c" * 2000), (5, 0, 800, "d" * 2000)]
    grown = pruner._old_stubs(second)
    assert made == before
    assert grown == _old_stub_map(second)
    assert grown[1] is made[1]  # built on, not rebuilt
    edited = [(1, 0, 500, "z" * 2000), *second[1:]]
    assert pruner._old_stubs(edited) == _old_stub_map(edited)
    assert pruner._old_stubs(first[:1]) == _old_stub_map(first[:1])  # fewer: rebuilt
