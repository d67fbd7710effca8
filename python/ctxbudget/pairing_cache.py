"""Tool-call pairing of a growing history, checked turn by turn (SPEC G2).

An agent's history grows by appending. :class:`GrowingPairing` keeps what it learned of the
part it already validated (each call id's call and result positions), so a turn reads only
the messages appended since, and asks :func:`~ctxbudget.pairing.validate_pairing` about them
plus the earlier events of the ids they mention: the answer is the one the whole list would
get. A list that does not start with the messages validated last (the caller rewound or
replaced its history) is read whole again.

The earlier messages are recognised by identity: a message edited in place after it was
validated is not read again. Gemini histories, whose id-less calls pair by position, are
always read whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxbudget.pairing import EventKind, PairingViolation, validate_pairing
from ctxbudget.turns import pairing_events, resolve_ids, scan, scan_one

__all__ = ["GrowingPairing"]

_CALL, _RESULT = int(EventKind.CALL), int(EventKind.RESULT)


class GrowingPairing:
    """Pairing violations of successive versions of one history (not thread-safe: the
    owner serialises calls)."""

    def __init__(self) -> None:
        self._fmt: str | None = None
        self._msgs: list[Any] = []
        # call id -> (position of its call, position of its result)
        self._pairs: dict[str, tuple[int, int]] = {}

    def violations(self, fmt: str, messages: Sequence[Any]) -> list[PairingViolation]:
        """Every pairing violation of ``messages`` (read in ``fmt``)."""
        msgs = list(messages)
        start = self._validated_prefix(fmt, msgs)
        events = _events(fmt, msgs, start)
        mentioned = {cid for _, _, cid in events}
        earlier: list[tuple[int, int, str]] = []
        for cid in mentioned & self._pairs.keys():
            call, result = self._pairs[cid]
            earlier += [(call, _CALL, cid), (result, _RESULT, cid)]
        found = validate_pairing(sorted(earlier) + events)
        if found:
            self._forget()
            return found
        for pos, kind, cid in events:
            if kind == _CALL:
                self._pairs[cid] = (pos, -1)
            else:
                self._pairs[cid] = (self._pairs[cid][0], pos)
        self._fmt, self._msgs = fmt, msgs
        return []

    def _validated_prefix(self, fmt: str, msgs: list[Any]) -> int:
        """How many leading messages of ``msgs`` were validated last (0: read them all)."""
        n = len(self._msgs)
        if (
            fmt == self._fmt
            and fmt != "gemini"
            and len(msgs) >= n
            and all(a is b for a, b in zip(msgs, self._msgs, strict=False))
        ):
            return n
        self._forget()
        return 0

    def _forget(self) -> None:
        self._fmt, self._msgs = None, []
        self._pairs.clear()


def _events(fmt: str, msgs: list[Any], start: int) -> list[tuple[int, int, str]]:
    """The pairing events of ``msgs[start:]``, at their positions in ``msgs``."""
    if fmt == "gemini":  # id-less calls pair by position: read the whole list
        return pairing_events(resolve_ids(scan(msgs, fmt)))
    events: list[tuple[int, int, str]] = []
    for pos in range(start, len(msgs)):
        info = scan_one(msgs[pos], fmt)
        for cid, _ in info.calls:
            events.append((pos, _CALL, cid or ""))
        for rid, _, _ in info.results:
            events.append((pos, _RESULT, rid or ""))
    return events
