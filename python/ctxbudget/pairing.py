"""Tool-call / tool-result pairing checks, aware of where each message sits."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ctxbudget import _core

__all__ = ["EventKind", "PairingViolation", "validate_pairing"]

#: Violation kinds in the order the core sorts those at one position.
_KINDS = (
    "missing_result",
    "orphaned_result",
    "duplicate_call",
    "result_before_call",
    "duplicate_result",
)


class EventKind(enum.IntEnum):
    """What a pairing event is: a tool call requested, or a tool result returned."""

    CALL = 0
    RESULT = 1


@dataclass(frozen=True, slots=True)
class PairingViolation:
    """One broken tool-call pairing.

    Attributes:
        kind: ``"missing_result"``, ``"orphaned_result"``, ``"duplicate_call"``,
            ``"result_before_call"`` or ``"duplicate_result"``.
        call_id: The tool-call id concerned.
        positions: Message positions involved, in conversation order (for
            ``result_before_call``: the early results, then the call).
    """

    kind: str
    call_id: str
    positions: tuple[int, ...]


def validate_pairing(
    events: Iterable[tuple[int, EventKind | int | str, str]],
) -> list[PairingViolation]:
    """Report every tool-call pairing violation in a conversation.

    Each event is ``(position, kind, call_id)``: the message index, ``EventKind.CALL``
    or ``EventKind.RESULT`` (``0``/``1`` and ``"call"``/``"result"`` also work), and the
    tool-call id. Events come in conversation order; several may share a position (parallel
    calls in one assistant message, several results in one user message).

    Per call id: two or more calls are a ``duplicate_call``; results without any call are an
    ``orphaned_result``; results at or before the first call are a ``result_before_call``;
    with no result after the call it is a ``missing_result``; two or more results after it
    are a ``duplicate_result``. Violations are sorted by their first position.

    Raises:
        ValueError: Positions that decrease, or an unknown kind.
        TypeError: An event that is not a ``(int, kind, str)`` tuple.

    >>> validate_pairing([(0, EventKind.CALL, "a"), (1, EventKind.RESULT, "a")])
    []
    >>> [v.kind for v in validate_pairing([(0, "result", "a"), (1, "call", "a")])]
    ['result_before_call', 'missing_result']
    """
    events = events if isinstance(events, list | tuple) else list(events)
    try:
        found = _core.validate_pairing(events)
    except UnicodeEncodeError:
        # An id with a lone surrogate (no UTF-8 form): compared by an escaped form that no
        # other id has, and reported as the caller wrote it, in the order of the written ids.
        written = {_escaped(e[2]): e[2] for e in events if _is_event(e)}
        escaped = [(e[0], e[1], _escaped(e[2])) if _is_event(e) else e for e in events]
        found = sorted(
            (
                (kind, written.get(cid, cid), positions)
                for kind, cid, positions in _core.validate_pairing(escaped)
            ),
            key=lambda v: (v[2][0], _KINDS.index(v[0]), v[1]),
        )
    return [
        PairingViolation(kind=kind, call_id=call_id, positions=tuple(positions))
        for kind, call_id, positions in found
    ]


def _is_event(event: Any) -> bool:
    return isinstance(event, tuple) and len(event) == 3 and isinstance(event[2], str)


def _escaped(call_id: str) -> str:
    """A UTF-8 form of ``call_id``, distinct for distinct ids: backslashes are doubled
    before surrogates become ``\\udXXX`` escapes (``"a\\udc80"`` written out stays apart)."""
    return call_id.replace("\\", "\\\\").encode("utf-8", "backslashreplace").decode()
