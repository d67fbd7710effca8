"""Tool-call pairing of a changing list of messages, checked call after call (SPEC G2).

A request's messages change little from one call to the next: messages are appended, and
now and then one in the middle is replaced (a tool output turned into a stub). Pairing
violations of one call id depend only on that id's events, so :class:`GrowingPairing` keeps
each id's events and violations, and on each call reads only the messages after the part
that is unchanged (the same objects as last time), re-judging just the ids they touch: the
answer is the one validating the whole list gives.

A message is unchanged when it is the same object with the same content fields (as for
:class:`~ctxbudget.turns.ScanCache`: a ``tool_calls`` or ``content`` list replaced by a new
one is read again; a nested list edited in place is not). The ids a Gemini list's id-less
calls and results are given depend only on the messages up to theirs: the unchanged part
keeps them, as it keeps its events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ctxbudget._core import DictVersions, unchanged_prefix
from ctxbudget.formats.common import field_refs, unreadable_refs
from ctxbudget.messages import FORMATS
from ctxbudget.pairing import EventKind, PairingViolation, validate_pairing
from ctxbudget.turns import (
    MessageInfo,
    ScanCache,
    content_keys,
    scan_error,
    scan_one,
)

__all__ = ["GrowingPairing"]

_CALL, _RESULT = int(EventKind.CALL), int(EventKind.RESULT)
#: The order of violations at one position (as :func:`validate_pairing` sorts them).
_KIND_ORDER = {
    "missing_result": 0,
    "orphaned_result": 1,
    "duplicate_call": 2,
    "result_before_call": 3,
    "duplicate_result": 4,
}


class GrowingPairing:
    """Pairing violations of successive versions of one list of messages (not thread-safe:
    the owner serialises calls)."""

    def __init__(self) -> None:
        self._fmt: str | None = None
        self._msgs: list[Any] = []
        self._refs: list[list[Any]] = []  # per content field, its object in each of _msgs
        self._versions = DictVersions()  # of _msgs, when their fields last matched _refs
        self._events: dict[str, list[tuple[int, int]]] = {}  # call id -> (position, kind)
        self._found: dict[str, list[PairingViolation]] = {}  # call id -> its violations
        self._gemini = ScanCache("gemini")  # the messages of Gemini lists, read once each

    def violations(self, fmt: str, messages: Sequence[Any]) -> list[PairingViolation]:
        """Every pairing violation of ``messages`` (read in ``fmt``).

        Raises:
            ValueError: An unknown format.
            MessageFormatError: A message that cannot be read, named with its index and field.
        """
        if fmt not in FORMATS:
            raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
        msgs = list(messages)
        try:
            return self._violations(fmt, msgs)
        except BaseException as exc:
            # Events were half dropped or half read: the next list is read whole, as if new.
            self._reset()
            if isinstance(exc, TypeError | AttributeError | KeyError | IndexError):
                raise scan_error(msgs, fmt, exc) from exc
            raise

    def _violations(self, fmt: str, msgs: list[Any]) -> list[PairingViolation]:
        start = self._unchanged(fmt, msgs)
        touched = self._drop_from(start)
        new = _events(fmt, msgs, start, self._gemini if fmt == "gemini" else None)
        for _, _, cid in new:
            touched.add(cid)
        earlier = sorted(
            (pos, kind, cid) for cid in touched for pos, kind in self._events.get(cid, ())
        )
        for cid in touched:
            self._found.pop(cid, None)
        for violation in validate_pairing(earlier + new):
            self._found.setdefault(violation.call_id, []).append(violation)
        for pos, kind, cid in new:
            self._events.setdefault(cid, []).append((pos, kind))
        keys = content_keys(fmt)
        new_refs = [_refs(m, keys) for m in msgs[start:]]
        if len(self._refs) != len(keys):
            self._refs = [[] for _ in keys]
        for j, column in enumerate(self._refs):
            del column[start:]
            column.extend(r[j] for r in new_refs)
        self._fmt, self._msgs = fmt, msgs
        found = [v for vs in self._found.values() for v in vs]
        return sorted(found, key=lambda v: (v.positions[0], _KIND_ORDER[v.kind], v.call_id))

    def _reset(self) -> None:
        """Forget every list read: the next one is read whole."""
        self._fmt, self._msgs, self._refs = None, [], []
        self._versions = DictVersions()
        self._gemini = ScanCache("gemini")
        self._events.clear()
        self._found.clear()

    def _unchanged(self, fmt: str, msgs: list[Any]) -> int:
        """How many leading messages are the ones read last time (0: read them all)."""
        if fmt != self._fmt:
            self._reset()
            return 0
        n = len(self._msgs)
        keys = content_keys(fmt)
        if n and unchanged_prefix(msgs, self._msgs, self._refs, keys, self._versions) == n:
            return n  # the common case, in one pass over the dicts: the list grew
        k = 0
        for i, (a, b) in enumerate(zip(msgs, self._msgs, strict=False)):
            if a is not b or not _same(_refs(a, keys), tuple(c[i] for c in self._refs)):
                break
            k += 1
        return k

    def _drop_from(self, start: int) -> set[str]:
        """Forget the events at positions ``start`` and after; the ids that had some."""
        if start >= len(self._msgs):
            return set()
        touched = set()
        for cid, events in list(self._events.items()):
            if events[-1][0] >= start:
                touched.add(cid)
                kept = [e for e in events if e[0] < start]
                if kept:
                    self._events[cid] = kept
                else:
                    del self._events[cid]
        return touched


def _refs(message: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    """The message's content fields (the objects, not copies): an SDK object's from its
    ``__dict__``, as the core's ``unchanged_prefix`` reads them."""
    if type(message) is dict:
        return tuple(map(message.get, keys))
    refs = field_refs(message, keys)
    return refs if refs is not None else unreadable_refs(keys)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(x is y for x, y in zip(a, b, strict=True))


def _events(
    fmt: str, msgs: list[Any], start: int, gemini: ScanCache | None
) -> list[tuple[int, int, str]]:
    """The pairing events of ``msgs[start:]``, at their positions in ``msgs``. A Gemini list
    is read through ``gemini``: its id-less calls and results are given ids by their
    positions and the calls before them (:func:`~ctxbudget.turns.resolve_ids`), which the
    messages before ``start`` keep."""
    if gemini is not None:
        resolved = gemini.resolved(gemini.scan(msgs))
        infos: Iterator[MessageInfo] = (resolved[pos] for pos in range(start, len(msgs)))
    else:
        infos = (scan_one(msgs[pos], fmt) for pos in range(start, len(msgs)))
    events: list[tuple[int, int, str]] = []
    for pos, info in enumerate(infos, start):
        for cid, _ in info.calls:
            events.append((pos, _CALL, cid or ""))
        for rid, _, _ in info.results:
            events.append((pos, _RESULT, rid or ""))
    return events
