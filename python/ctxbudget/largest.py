"""Stubbing the largest tool results of a request until it fits (SPEC F3).

When pruning old output is not enough (a single huge result, fresh results of a run whose
request overflowed), :func:`stub_largest` replaces the fewest, largest results by stubs:
chosen in Rust by :func:`~ctxbudget.selection.select_largest`, the results before the fresh
tail first. A stub keeps the call id and the result's place, names the tool and says how to
read the data in parts, so the model can carry on; the caller's messages are never modified.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ctxbudget.prune import PruneConfig
from ctxbudget.result_size import ResultSizer
from ctxbudget.selection import select_largest
from ctxbudget.stubs import in_history_type, is_stub, replace_results, results_ref, stub_text
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import MessageInfo, as_mapping, check_pairing, resolve_ids, scan_one

__all__ = ["StickyStubs", "StubCandidates", "stub_largest"]


class _Kept(NamedTuple):
    """What :class:`StickyStubs` keeps of a message with stubbed results."""

    message: Any
    field: Any  # its results field (the object)
    items: tuple[Any, ...] | None  # that field's blocks when it was read (None: not a list)
    slots: dict[int, str]  # slot -> stub
    stubbed: Any  # the stubbed copy sent in its place
    results: dict[int, tuple[Any, ...]]  # slot -> the result there when it was stubbed


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
        self._seen: dict[tuple[int, int], tuple[Any, Any, tuple[str, int] | None]] = {}
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
        seen: dict[tuple[int, int], tuple[Any, Any, tuple[str, int] | None]] = {}
        found = []
        if self._copies:  # only the copies this view still holds
            present = set(map(id, view))
            self._copies = {k: v for k, v in self._copies.items() if k in present}
        for i, info in enumerate(infos):
            m = view[i]
            ref = results_ref(fmt, m) if info.results else None
            for cid, tool, slot in info.results:
                key = (id(m), slot)
                hit = self._seen.get(key)
                if hit is not None and hit[0] is m and hit[1] is ref:
                    stubbed = hit[2]
                else:
                    name = tool or (names.get(cid) if cid is not None else None)
                    stubbed = self._stub(fmt, m, slot, name)
                seen[key] = (m, ref, stubbed)
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


class StickyStubs:
    """Results stubbed in a request the provider accepted, stubbed again in the requests
    after it while their messages stay in the history: the model never saw them whole,
    and sent whole they would overflow again (a result the estimate under-counts). The
    stubbed message is the same object every time (a stable view)."""

    def __init__(self, *, drop_media: bool = True) -> None:
        self.drop_media = drop_media  # as the stubs were made (PruneConfig.prune_media)
        # id(message) -> what is kept of it (_Kept)
        self._by_id: dict[int, _Kept] = {}
        # id(stubbed message) -> the message it stands for (a later stub in the same
        # message is recorded against the stubbed copy the view held)
        self._origin: dict[int, tuple[Any, Any]] = {}
        self._at: dict[int, int] = {}  # id(message) -> where it was in the last view
        self._view: Sequence[Any] = ()  # the last view given to apply
        # (message, slot -> stub, where it was in the last view) of a copy, an unpickled
        # state or a history loaded anew, not yet found in a view
        self._loose: list[tuple[Any, dict[int, str], int | None]] = []

    def remember(self, fmt: str, made: Sequence[tuple[Any, int, str]]) -> None:
        """Add the ``(message, slot, stub)`` of results stubbed in an accepted request."""
        for m, slot, stub in made:
            copy = self._origin.get(id(m))
            original = copy[1] if copy is not None and copy[0] is m else m
            old = self._by_id.get(id(original))
            slots = dict(old.slots) if old is not None and old.message is original else {}
            slots[slot] = stub
            kept = self._kept(fmt, original, slots)
            self._by_id[id(original)] = kept
            self._origin[id(kept.stubbed)] = (kept.stubbed, original)
            if id(original) not in self._at:  # (where a history loaded anew has it next)
                at = next((i for i, v in enumerate(self._view) if v is original), None)
                if at is not None:
                    self._at[id(original)] = at

    def apply(self, fmt: str, view: list[Any]) -> list[Any]:
        """``view`` with the remembered stubs in place (``view`` itself when none apply);
        forgets those whose message left or changed."""
        self._view = view
        if self._loose:
            self._bind(fmt, view)
        if not self._by_id:
            return view
        found = self._find(view)
        if len(found) < len(self._by_id):
            # not the same objects: a history rebuilt from storage each turn holds equal ones
            self._loose = [self._loosened(k) for k in self._by_id if k not in found]
            self._by_id = {k: self._by_id[k] for k in found}
            self._bind(fmt, view)
            found = self._find(view)
        out = list(view)
        kept: dict[int, _Kept] = {}
        for key, i in found.items():
            hit = self._by_id[key]
            field = results_ref(fmt, view[i])
            same = hit.field is field and _same_items(_items(field), hit.items)
            now = hit if same else self._renewed(fmt, hit)
            if now is not None:
                out[i] = now.stubbed
                kept[key] = now
        self._by_id = kept
        self._origin = {id(v.stubbed): (v.stubbed, v.message) for v in kept.values()}
        self._at = {key: found[key] for key in kept}
        return in_history_type(out, view) if kept else view

    def _renewed(self, fmt: str, hit: _Kept) -> _Kept | None:
        """The stubs of a message whose results field holds a new object, or other blocks
        (a block added, removed or replaced in place): kept, its stubbed copy made again
        from what the field holds now,
        when the results it had are all there unchanged, wherever they moved to in it (a
        block list rebuilt each turn, as code moving ``cache_control`` does; a note added
        to it); ``None`` when one of them changed or went (sent as it is now)."""
        now, then = _results(fmt, hit.message), hit.results
        slots: dict[int, str] = {}
        for slot, stub in hit.slots.items():
            result = then.get(slot)
            same = (
                [slot]
                if slot in now and _equal(now[slot], result)
                else [k for k, r in now.items() if k not in slots and _equal(r, result)]
            )
            if result is None or not same:
                return None
            slots[same[0]] = stub
        return self._kept(fmt, hit.message, slots, now)

    def _kept(
        self,
        fmt: str,
        message: Any,
        slots: dict[int, str],
        results: dict[int, tuple[Any, ...]] | None = None,
    ) -> _Kept:
        """What is kept of ``message`` with the results at ``slots`` stubbed: its stubbed copy
        in the history's own type (a google-genai Content stays one; the view holds this
        very object, which a later stub in the same message is recorded against)."""
        new = replace_results(fmt, message, slots, drop_media=self.drop_media)
        stubbed = in_history_type([new], [message])[0]
        field = results_ref(fmt, message)
        found = _results(fmt, message) if results is None else results
        return _Kept(message, field, _items(field), slots, stubbed, found)

    def invalidate(self, message: Any = None) -> None:
        """After ``message`` (every message, when it is None) was edited in place: its stubs
        stay, and its stubbed copy is made again from what it holds on the next :meth:`apply`
        (a copy made before the edit would send the old message)."""
        for key in [k for k in self._by_id if message is None or k == id(message)]:
            self._loose.append(self._loosened(key))
            del self._by_id[key]
        self._origin = {id(v.stubbed): (v.stubbed, v.message) for v in self._by_id.values()}

    def __getstate__(self) -> dict[str, Any]:
        """The stubs kept, each with the message it stands for (a copy of the state holds those
        messages, unpickled as other objects): the next :meth:`apply` finds each message in its
        view, the same object or an equal one, and keeps the stubs of those it found."""
        kept = [self._loosened(k) for k in self._by_id]
        loose = kept + [(m, dict(slots), at) for m, slots, at in self._loose]
        return {"loose": loose, "drop_media": self.drop_media}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(drop_media=state.get("drop_media", True))  # type: ignore[misc]
        # (a state pickled before positions were kept has pairs)
        self._loose = [(*entry, None) if len(entry) == 2 else entry for entry in state["loose"]]

    def _loosened(self, key: int) -> tuple[Any, dict[int, str], int | None]:
        """The loose form of the stubs kept for the message ``key``."""
        kept = self._by_id[key]
        return kept.message, dict(kept.slots), self._at.get(key)

    def _bind(self, fmt: str, view: list[Any]) -> None:
        """Remember the loose stubs again for the messages of ``view`` they stand for."""
        loose, self._loose = self._loose, []
        present = {id(m): i for i, m in enumerate(view)}
        for original, slots, at in loose:
            # the same object when it is still there (an equal one before it is another
            # message: the same output twice), else one not bound yet: the one where it was
            # when it holds the same results there (its other blocks may differ: code moving
            # ``cache_control``), else the first equal one. (Ids tell: ``original`` is alive,
            # held here.)
            i = present.get(id(original))
            if i is None and at is not None and at < len(view):
                there = view[at]
                same = id(there) not in self._by_id and _same_results(fmt, there, original, slots)
                i = at if same else None
            if i is None:
                i = next(
                    (
                        k
                        for k, m in enumerate(view)
                        if id(m) not in self._by_id and _equal(m, original)
                    ),
                    None,
                )
            if i is not None:
                self._at[id(view[i])] = i
                self.remember(fmt, [(view[i], slot, stub) for slot, stub in slots.items()])

    def _find(self, view: list[Any]) -> dict[int, int]:
        """id -> index in ``view`` of the remembered messages it holds: where they were
        last time when they are still there (the common case: the list grew), else found
        by a pass over the list."""
        n = len(view)
        at = {
            key: i
            for key, i in self._at.items()
            if i < n and (kept := self._by_id.get(key)) is not None and view[i] is kept.message
        }
        if len(at) == len(self._by_id):
            return at
        return {
            id(m): i
            for i, m in enumerate(view)
            if id(m) in self._by_id and self._by_id[id(m)].message is m
        }


def _results(fmt: str, message: Any) -> dict[int, tuple[Any, ...]]:
    """slot -> what tells each tool result of ``message`` from another: its call id and the
    fields holding its output (the objects themselves: compared, not copied); empty when the
    message cannot be read."""
    try:
        info = scan_one(message, fmt)
        m = as_mapping(message)
        if fmt == "openai_chat":
            return {slot: (cid, m.get("content")) for cid, _, slot in info.results}
        if fmt == "openai_responses":
            return {slot: (cid, m.get("type"), m.get("output")) for cid, _, slot in info.results}
        out: dict[int, tuple[Any, ...]] = {}
        for cid, tool, slot in info.results:
            if fmt == "anthropic":
                block = as_mapping(m["content"][slot])
                out[slot] = (cid, block.get("content"), block.get("is_error"))
            else:
                part = as_mapping(m["parts"][slot])
                fr = part.get("function_response") or part.get("functionResponse") or {}
                out[slot] = (cid, tool, fr.get("response"), fr.get("parts"))
        return out
    except Exception:
        return {}


def _items(field: Any) -> tuple[Any, ...] | None:
    """The blocks of a results field that is a list (``None`` for any other)."""
    return tuple(field) if isinstance(field, list) else None


def _same_items(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """Whether two :func:`_items` hold the same block objects in the same places."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _same_results(fmt: str, a: Any, b: Any, slots: Iterable[int]) -> bool:
    """Whether messages ``a`` and ``b`` hold the same tool results at ``slots``."""
    ours, theirs = _results(fmt, a), _results(fmt, b)
    return all(s in ours and s in theirs and _equal(ours[s], theirs[s]) for s in slots)


def _equal(a: Any, b: Any) -> bool:
    """``a == b``, false when comparing them raised (objects of a caller's own)."""
    try:
        return bool(a == b)
    except Exception:
        return False


def _resolved(fmt: str, infos: Sequence[MessageInfo]) -> list[MessageInfo]:
    return resolve_ids(infos) if fmt == "gemini" else list(infos)
