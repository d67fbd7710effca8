"""A compaction remembered across turns, so that a guarded conversation is summarized once.

The caller keeps its whole history and appends to it; the guard compacts what it sends. The
next turn, :class:`SummaryMemory` swaps the part the summary replaced for the summary again,
instead of asking the summarizer for a new one (an LLM call, and a new prefix the provider's
prompt cache has never seen).

What the summary replaced is the caller's messages between its leading system messages and
the recent ones the compaction kept: the leading system messages are always the caller's
current ones (a system prompt rebuilt every turn does not undo the summary), and the
replaced messages are recognised as equal to what they were when summarized (the same
objects with the same fields, or equal ones: a history reloaded from storage each turn still
matches). A history that no longer starts with them (rewound, edited, another conversation)
drops the memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxbudget.compact import CompactResult
from ctxbudget.turns import scan_one

__all__ = ["SummaryMemory"]


class SummaryMemory:
    """The last compaction of one conversation (not thread-safe: the owner serialises)."""

    def __init__(self) -> None:
        self._replaced: list[Any] = []
        self._summary: list[Any] = []

    def remember(self, fmt: str, caller: Sequence[Any], result: CompactResult) -> None:
        """Remember ``result``, a compaction of ``caller`` (the caller's history, with an
        earlier summary swapped in or not)."""
        msgs, out = list(caller), result.messages
        lead_in, lead_out = _leading_system(fmt, msgs), _leading_system(fmt, out)
        kept = 0  # the recent messages kept verbatim: the same objects at the end of both
        room = min(len(msgs) - lead_in, len(out) - lead_out)
        while kept < room and out[len(out) - 1 - kept] is msgs[len(msgs) - 1 - kept]:
            kept += 1
        self._replaced = [_snapshot(m) for m in msgs[lead_in : len(msgs) - kept]]
        self._summary = out[lead_out : len(out) - kept] if self._replaced else []

    def apply(self, fmt: str, messages: Sequence[Any]) -> list[Any]:
        """``messages`` with the remembered part swapped for the summary, when they still
        hold that part right after their leading system messages."""
        msgs = list(messages)
        if not self._replaced:
            return msgs
        lead = _leading_system(fmt, msgs)
        part = msgs[lead : lead + len(self._replaced)]
        if len(part) == len(self._replaced) and all(
            a is b or a == b for a, b in zip(part, self._replaced, strict=True)
        ):
            return [*msgs[:lead], *self._summary, *msgs[lead + len(part) :]]
        self.forget()
        return msgs

    def forget(self) -> None:
        self._replaced, self._summary = [], []

    def __getstate__(self) -> dict[str, Any]:
        """Lists of its own (a copy learns on apart); the messages are matched by equality, so
        an unpickled memory applies to equal messages."""
        return {"_replaced": list(self._replaced), "_summary": list(self._summary)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._replaced, self._summary = state["_replaced"], state["_summary"]


def _snapshot(message: Any) -> Any:
    """What :meth:`SummaryMemory.apply` compares the caller's message with: a shallow copy of
    a dict, so that a field the caller replaced since (``history[3]["content"] = ...``, an
    edit the guard notices without ``invalidate``) no longer matches and the summary of the
    old text is not sent in place of the new one. Its values are the caller's objects, so
    an unchanged message compares equal at the cost of its keys. Other message objects are
    kept as they are."""
    return dict(message) if isinstance(message, dict) else message


def _leading_system(fmt: str, msgs: Sequence[Any]) -> int:
    """How many system or developer messages the list starts with."""
    n = 0
    for m in msgs:
        try:
            if scan_one(m, fmt).kind != "system":
                break
        except (TypeError, AttributeError, KeyError, IndexError):
            break
        n += 1
    return n
