"""Slow, obviously-correct reference implementations that the Rust core is checked against."""

from __future__ import annotations

import itertools
import struct
from collections import defaultdict
from typing import Any

from ctxbudget.formats.common import plain_model


def min_items_to_reach(sizes: list[int], need: int, protected: set[int]) -> int | None:
    """Smallest number of allowed items whose sizes can sum to ``need`` (brute force)."""
    allowed = [i for i in range(len(sizes)) if i not in protected and sizes[i] > 0]
    if need <= 0:
        return 0
    for k in range(1, len(allowed) + 1):
        if any(
            sum(sizes[i] for i in combo) >= need for combo in itertools.combinations(allowed, k)
        ):
            return k
    return None


def select_largest(sizes: list[int], need: int, protected: set[int]) -> tuple[list[int], int, int]:
    """Largest first, oldest first on ties, skipping protected and empty items."""
    order = sorted(
        (i for i in range(len(sizes)) if i not in protected and sizes[i] > 0),
        key=lambda i: (-sizes[i], i),
    )
    chosen: list[int] = []
    freed = 0
    for i in order:
        if freed >= need:
            break
        chosen.append(i)
        freed += sizes[i]
    return chosen, freed, max(0, need - freed)


KIND_ORDER = [
    "missing_result",
    "orphaned_result",
    "duplicate_call",
    "result_before_call",
    "duplicate_result",
]


def validate_pairing(events: list[tuple[int, int, str]]) -> list[tuple[str, str, list[int]]]:
    """The pairing rules of ``ctxbudget.validate_pairing``, written out one by one."""
    calls: dict[str, list[int]] = defaultdict(list)
    results: dict[str, list[int]] = defaultdict(list)
    for position, kind, call_id in events:
        (calls if kind == 0 else results)[call_id].append(position)
    found: list[tuple[str, str, list[int]]] = []
    for call_id in set(calls) | set(results):
        its_calls, its_results = calls[call_id], results[call_id]
        if len(its_calls) >= 2:
            found.append(("duplicate_call", call_id, its_calls))
        if not its_calls:
            found.append(("orphaned_result", call_id, its_results))
            continue
        first = its_calls[0]
        early = [p for p in its_results if p <= first]
        answering = [p for p in its_results if p > first]
        if early:
            found.append(("result_before_call", call_id, [*early, first]))
        if not answering:
            found.append(("missing_result", call_id, [first]))
        elif len(answering) >= 2:
            found.append(("duplicate_result", call_id, answering))
    found.sort(key=lambda v: (v[2][0], KIND_ORDER.index(v[0]), v[1]))
    return found


def fresh_tail(
    per_message: list[int],
    kinds: list[str],
    tail_budget: int,
    min_turns: int,
    cap: float,
) -> int:
    """Start of the fresh tail, message by message: the last ``tail_budget`` tokens, extended
    back to the ``min_turns``-th last user message while what it protects stays within ``cap``
    (the floor moves forward one message at a time until it does)."""
    n = len(per_message)
    tail, acc = n, 0
    for i in range(n - 1, -1, -1):
        acc += per_message[i]
        if acc > tail_budget and tail < n:
            break
        tail = i
    if min_turns <= 0 or tail == 0:
        return tail
    seen, floor = 0, 0
    for i in range(n - 1, -1, -1):
        if kinds[i] == "user":
            seen += 1
            if seen == min_turns:
                floor = i
                break
    if floor >= tail:
        return tail
    protected = sum(per_message[floor:])
    while floor < tail and protected > cap:
        protected -= per_message[floor]
        floor += 1
    return floor


def same_value(a: Any, b: Any, depth: int = 100) -> bool:
    """Equal with the same types throughout (dicts, lists, tuples and their subclasses item by
    item, dicts in order; floats and their subclasses by their bits), identity first; past
    ``depth`` levels of nesting: not the same."""
    if a is b:
        return True
    if type(a) is not type(b) or depth == 0:
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same_value(ka, kb, depth - 1) and same_value(va, vb, depth - 1)
            for (ka, va), (kb, vb) in zip(dict.items(a), dict.items(b), strict=True)
        )
    if isinstance(a, list | tuple):
        return _same_items(a, b, depth)
    return bool(a == b)


def _same_items(a: Any, b: Any, depth: int) -> bool:
    return len(a) == len(b) and all(same_value(x, y, depth - 1) for x, y in zip(a, b, strict=True))


def unchanged_prefix(
    messages: list[Any], previous: list[Any], refs: list[list[Any]], keys: tuple[str, ...]
) -> int:
    """``len(previous)`` when ``messages`` starts with ``previous`` (:func:`same_value`) and
    each message's ``dict.get(keys[j])`` (a pydantic model's from its ``__dict__``, then its
    extra fields) is the same as ``refs[j][i]``; else 0. Neither a dict nor a pydantic model
    without computed fields: 0."""
    k = len(previous)
    if k == 0 or len(messages) < k or len(refs) != len(keys):
        return 0
    if any(len(column) != k for column in refs):
        return 0
    for i in range(k):
        m, p = messages[i], previous[i]
        if not same_value(m, p):
            return 0
        if isinstance(m, dict):
            fields, extra = m, {}
        elif not plain_model(type(m)):
            return 0  # no pydantic model, or one whose dump is not its instance's fields
        else:
            fields = getattr(m, "__dict__", None)
            extra = getattr(m, "__pydantic_extra__", None) or {}
        if not isinstance(fields, dict):
            return 0
        for key, column in zip(keys, refs, strict=True):
            value = fields[key] if key in fields else extra.get(key)
            if not same_value(value, column[i]):
                return 0
    return k
