"""Stubbing the largest tool results of a request until it fits (SPEC F3).

When pruning old output is not enough (a single huge result, fresh results of a run whose
request overflowed), :func:`stub_largest` replaces the fewest, largest results by stubs:
chosen in Rust by :func:`~ctxbudget.selection.select_largest`, the results before the fresh
tail first. A stub keeps the call id and the result's place, names the tool and says how to
read the data in parts, so the model can carry on; the caller's messages are never modified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbudget.prune import PruneConfig
from ctxbudget.result_size import ResultSizer
from ctxbudget.selection import select_largest
from ctxbudget.stubs import (
    in_history_type,
    is_stub,
    replace_results,
    result_refs,
    same_refs,
    stub_text,
)
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import MessageInfo, check_pairing, resolve_ids

__all__ = ["StubCandidates", "stub_largest"]


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One result that a stub would shrink."""

    index: int
    slot: int
    stub: str
    gain: int


class StubCandidates:
    """Size and stub of every tool result, kept per message object from call to call.

    A guarded conversation shows the same messages every turn, so each result is measured
    and its stub written once (the same stub text each time: the provider's prompt cache
    stays valid). Only the results of the latest view are kept.

    It also knows which messages of a view are its own stubbed copies, and of which message:
    stubs made in a copy (a second round on the same request) are then reported against
    the message the caller holds.
    """

    def __init__(self, sizer: ResultSizer, config: PruneConfig) -> None:
        self.encoding = sizer.encoding
        self.config = config
        self._sizer = sizer
        self._seen: dict[tuple[int, int], tuple[Any, tuple[Any, ...], tuple[str, int] | None]] = {}
        self._copies: dict[int, tuple[Any, Any]] = {}  # id(copy) -> (copy, message it stands for)

    def origin(self, message: Any) -> Any:
        """The message ``message`` stands for: itself, or what a stubbed copy was made of."""
        hit = self._copies.get(id(message))
        return hit[1] if hit is not None and hit[0] is message else message

    def made(self, copy: Any, message: Any) -> None:
        """Record ``copy`` as ``message`` with more results stubbed."""
        self._copies[id(copy)] = (copy, self.origin(message))

    def find(self, fmt: str, view: list[Any], infos: Sequence[MessageInfo]) -> list[_Candidate]:
        """Every result of ``view`` that is not a stub already and that its stub shrinks."""
        names = {cid: name for info in infos for cid, name in info.calls if cid is not None}
        seen: dict[tuple[int, int], tuple[Any, tuple[Any, ...], tuple[str, int] | None]] = {}
        found = []
        if self._copies:  # only the copies this view still holds
            present = set(map(id, view))
            self._copies = {k: v for k, v in self._copies.items() if k in present}
        for i, info in enumerate(infos):
            m = view[i]
            for cid, tool, slot in info.results:
                key = (id(m), slot)
                refs = result_refs(fmt, m, (slot,))
                hit = self._seen.get(key)
                if hit is not None and hit[0] is m and same_refs(hit[1], refs):
                    stubbed = hit[2]
                else:
                    name = tool or (names.get(cid) if cid is not None else None)
                    stubbed = self._stub(fmt, m, slot, name)
                seen[key] = (m, refs, stubbed)
                if stubbed is not None:
                    found.append(_Candidate(i, slot, *stubbed))
        self._seen = seen
        return found

    def _stub(self, fmt: str, m: Any, slot: int, tool: str | None) -> tuple[str, int] | None:
        """(stub text, tokens it saves) of one result; ``None`` when it saves nothing."""
        size, text, media = self._sizer.size(fmt, m, slot)
        if not size or is_stub(text, self.config.head_chars):
            return None
        stub = stub_text(
            tool, text, size, head_chars=self.config.head_chars,
            head_lines=self.config.head_lines, media=media,
        )  # fmt: skip
        gain = size - estimate_tokens(stub, self.encoding)
        return (stub, gain) if gain > 0 else None


def stub_largest(
    fmt: str,
    view: list[Any],
    infos: Sequence[MessageInfo],
    need: int,
    *,
    candidates: StubCandidates,
    rescan: Callable[[list[Any]], Sequence[MessageInfo]],
    fresh_from: int | None = None,
) -> tuple[list[Any], list[tuple[Any, int, str]]]:
    """``view`` with the fewest, largest tool results stubbed that free ``need`` tokens.

    Args:
        fmt: The messages' format.
        view: The messages (not modified).
        infos: Their :class:`~ctxbudget.turns.MessageInfo`.
        need: Tokens to free.
        candidates: Sizes and stubs of the results (kept across calls).
        rescan: Reads the infos of a list of messages (to check the new list's pairing).
        fresh_from: When given, only results of messages before this index are stubbed,
            and only if they can free ``need`` on their own.

    Returns:
        The new list and the ``(message, slot, stub)`` of each result stubbed (none:
        ``view`` itself, unchanged); ``message`` is the object of ``view`` it replaced or,
        when that is a copy an earlier call made, the message the copy was made of.

    Raises:
        PairingError: The stubs would break tool-call pairing (cannot happen: ids are kept).
    """
    found = candidates.find(fmt, view, infos)
    none: list[tuple[Any, int, str]] = []
    protected = [k for k, c in enumerate(found) if fresh_from is not None and c.index >= fresh_from]
    selection = select_largest([c.gain for c in found], need, protected=protected)
    if not selection.indices or (selection.shortfall > 0 and fresh_from is not None):
        return view, none
    by_message: dict[int, dict[int, str]] = {}
    for k in selection.indices:
        c = found[k]
        by_message.setdefault(c.index, {})[c.slot] = c.stub
    out = list(view)
    drop_media = candidates.config.prune_media
    for i, slots in by_message.items():
        out[i] = replace_results(fmt, view[i], slots, drop_media=drop_media)
    out = in_history_type(out, view)
    check_pairing(_resolved(fmt, infos), _resolved(fmt, rescan(out)), "stubbing")
    made = [
        (candidates.origin(view[found[k].index]), found[k].slot, found[k].stub)
        for k in selection.indices
    ]
    for i in by_message:
        candidates.made(out[i], view[i])
    return out, made


def _resolved(fmt: str, infos: Sequence[MessageInfo]) -> list[MessageInfo]:
    return resolve_ids(infos) if fmt == "gemini" else list(infos)
