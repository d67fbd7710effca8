"""Stubs kept from one turn to the next (SPEC F3, F5).

A result stubbed in a request the provider accepted is stubbed again in every later request
while its message stays in the history: the model never saw it whole, and sent whole it
would overflow again (a result the estimate under-counts). :class:`StickyStubs` keeps, per
message, which results were stubbed and a copy of each as it was, so that a result the agent
changed since (edited in place, redacted, replaced) is sent as it is now, never as the stub
of what it was.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ctxbudget.stubs import in_history_type, replace_results, results_ref
from ctxbudget.turns import as_mapping, scan_one

__all__ = ["StickyStubs"]

# slot -> what tells a tool result from another: its call id and the fields of its output
Results = dict[int, tuple[Any, ...]]

# the results field of a message edited in place: read again on the next apply
_STALE = object()


class _Kept(NamedTuple):
    """What :class:`StickyStubs` keeps of a message with stubbed results."""

    message: Any
    field: Any  # its results field (the object), or _STALE
    items: tuple[Any, ...] | None  # that field's blocks when it was read (None: not a list)
    slots: dict[int, str]  # slot -> stub
    stubbed: Any  # the stubbed copy sent in its place
    results: Results  # slot -> a copy of the result stubbed there, as it was


class _Loose(NamedTuple):
    """Stubs of a message not found in a view yet: a copied or unpickled state, a history
    loaded anew."""

    message: Any
    slots: dict[int, str]
    at: int | None  # where it was in the last view
    results: Results | None  # None: a state pickled before results were kept (read anew)


class StickyStubs:
    """Results stubbed in a request the provider accepted, stubbed again in the requests
    after it while their messages stay in the history and the results in them are unchanged.
    The stubbed message is the same object every time (a stable view)."""

    def __init__(self, *, drop_media: bool = True) -> None:
        self.drop_media = drop_media  # as the stubs were made (PruneConfig.prune_media)
        self._by_id: dict[int, _Kept] = {}  # id(message) -> what is kept of it
        # id(stubbed message) -> the message it stands for (a later stub in the same
        # message is recorded against the stubbed copy the view held)
        self._origin: dict[int, tuple[Any, Any]] = {}
        self._at: dict[int, int] = {}  # id(message) -> where it was in the last view
        self._view: Sequence[Any] = ()  # the last view given to apply
        self._loose: list[_Loose] = []
        # the messages of the last view whose stubs the last apply dropped because a result
        # in them changed in place (what was read of them before is stale)
        self.changed: list[Any] = []

    def remember(self, fmt: str, made: Sequence[tuple[Any, int, str]]) -> None:
        """Add the ``(message, slot, stub)`` of results stubbed in an accepted request."""
        for m, slot, stub in made:
            copied = self._origin.get(id(m))
            original = copied[1] if copied is not None and copied[0] is m else m
            old = self._by_id.get(id(original))
            if old is None or old.message is not original:
                old = None
            slots = dict(old.slots) if old is not None else {}
            results = dict(old.results) if old is not None else {}
            slots[slot] = stub
            results.update(_snapshot(fmt, original, [slot]))
            self._keep(self._kept(fmt, original, slots, results))

    def apply(self, fmt: str, view: list[Any]) -> list[Any]:
        """``view`` with the remembered stubs in place (``view`` itself when none apply);
        forgets those whose message left or whose results changed."""
        self._view = view
        self.changed = []
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
            now = hit if same else self._renewed(fmt, hit.message, hit.slots, hit.results)
            if now is not None:
                out[i] = now.stubbed
                kept[key] = now
            elif field is hit.field:  # the same field, a result in it changed: in place
                self.changed.append(hit.message)
        self._by_id = kept
        self._origin = {id(v.stubbed): (v.stubbed, v.message) for v in kept.values()}
        self._at = {key: found[key] for key in kept}
        return in_history_type(out, view) if kept else view

    def invalidate(self, message: Any = None) -> None:
        """After ``message`` (every message, when it is None) was edited in place: on the next
        :meth:`apply` its results are compared with the copies kept, its stubs kept for those
        unchanged (wherever they moved to in it) and its stubbed copy made again from what it
        holds now (a copy made before the edit would send the old message)."""
        for key, hit in list(self._by_id.items()):
            if message is None or key == id(message):
                self._by_id[key] = hit._replace(field=_STALE)

    def __getstate__(self) -> dict[str, Any]:
        """The stubs kept, each with the message it stands for and the copies of its results
        (a copy of the state holds those messages, unpickled as other objects): the next
        :meth:`apply` finds each message in its view, the same object or an equal one, and
        keeps the stubs of the results found there unchanged."""
        loose = [self._loosened(k) for k in self._by_id] + self._loose
        return {"loose": [tuple(entry) for entry in loose], "drop_media": self.drop_media}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(drop_media=state.get("drop_media", True))  # type: ignore[misc]
        # (a state pickled by an older version has no copies, or no positions either)
        self._loose = [_Loose(*entry, *(None,) * (4 - len(entry))) for entry in state["loose"]]

    def _renewed(
        self, fmt: str, message: Any, slots: dict[int, str], then: Results
    ) -> _Kept | None:
        """The stubs of ``message`` once its results field holds a new object or other blocks,
        or it was edited in place: kept, its stubbed copy made again from what it holds now,
        when the results stubbed are all there unchanged, wherever they moved to in it (a
        block list rebuilt each turn, as code moving ``cache_control`` does; a note added to
        it); ``None`` when one of them changed or went (sent as it is now)."""
        moved = _moved(_results(fmt, message), slots, then)
        if moved is None:
            return None
        new_slots = {moved[s]: stub for s, stub in slots.items()}
        return self._kept(fmt, message, new_slots, {moved[s]: then[s] for s in slots})

    def _kept(self, fmt: str, message: Any, slots: dict[int, str], results: Results) -> _Kept:
        """What is kept of ``message`` with the results at ``slots`` stubbed: its stubbed copy
        in the history's own type (a google-genai Content stays one; the view holds this
        very object, which a later stub in the same message is recorded against)."""
        new = replace_results(fmt, message, slots, drop_media=self.drop_media)
        stubbed = in_history_type([new], [message])[0]
        field = results_ref(fmt, message)
        return _Kept(message, field, _items(field), slots, stubbed, results)

    def _keep(self, kept: _Kept, at: int | None = None) -> None:
        """Record ``kept``, its message at ``at`` in the last view (searched when not given)."""
        key = id(kept.message)
        self._by_id[key] = kept
        self._origin[id(kept.stubbed)] = (kept.stubbed, kept.message)
        if at is None and key not in self._at:  # (where a history loaded anew has it next)
            at = next((i for i, v in enumerate(self._view) if v is kept.message), None)
        if at is not None:
            self._at[key] = at

    def _loosened(self, key: int) -> _Loose:
        """The loose form of the stubs kept for the message ``key``."""
        kept = self._by_id[key]
        return _Loose(kept.message, dict(kept.slots), self._at.get(key), kept.results)

    def _bind(self, fmt: str, view: list[Any]) -> None:
        """Keep the loose stubs again for the messages of ``view`` they stand for, when the
        results stubbed are there unchanged."""
        loose, self._loose = self._loose, []
        present = {id(m): i for i, m in enumerate(view)}
        for original, slots, at, then in loose:
            if then is None:
                then = _snapshot(fmt, original, slots)
            # the same object when it is still there (an equal one before it is another
            # message: the same output twice), else one not kept yet: the one where it was
            # when it holds the same results (its other blocks may differ: code moving
            # ``cache_control``), else the first equal one. (Ids tell: ``original`` is alive,
            # held here.)
            i = present.get(id(original))
            if i is None and at is not None and at < len(view):
                there = view[at]
                free = id(there) not in self._by_id
                i = at if free and _moved(_results(fmt, there), slots, then) is not None else None
            if i is None:
                i = next(
                    (
                        k
                        for k, m in enumerate(view)
                        if id(m) not in self._by_id and _equal(m, original)
                    ),
                    None,
                )
            if i is None or id(view[i]) in self._by_id:
                continue
            kept = self._renewed(fmt, view[i], slots, then)
            if kept is not None:
                self._keep(kept, at=i)

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


def _results(fmt: str, message: Any) -> Results:
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
        out: Results = {}
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


def _snapshot(fmt: str, message: Any, slots: Iterable[int]) -> Results:
    """Copies of the results of ``message`` at ``slots``, apart from its own objects: an edit
    of them in place (a redacted output) must not reach the copy it is compared with."""
    found = _results(fmt, message)
    out: Results = {}
    for slot in slots:
        if slot in found:
            try:
                out[slot] = copy.deepcopy(found[slot])
            except Exception:  # an object of the caller's own that cannot be copied
                out[slot] = found[slot]
    return out


def _moved(now: Results, slots: Iterable[int], then: Results) -> dict[int, int] | None:
    """Old slot -> the slot of ``now`` holding the result ``then`` had there (the same slot
    when it still does, else the first equal one not taken); ``None`` when one is missing."""
    taken: dict[int, int] = {}
    for slot in slots:
        result = then.get(slot)
        if result is None:
            return None
        used = taken.values()
        if slot in now and slot not in used and _equal(now[slot], result):
            taken[slot] = slot
            continue
        k = next((k for k, r in now.items() if k not in used and _equal(r, result)), None)
        if k is None:
            return None
        taken[slot] = k
    return taken


def _items(field: Any) -> tuple[Any, ...] | None:
    """The blocks of a results field that is a list (``None`` for any other)."""
    return tuple(field) if isinstance(field, list) else None


def _same_items(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """Whether two :func:`_items` hold the same block objects in the same places."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _equal(a: Any, b: Any) -> bool:
    """``a == b``, false when comparing them raised (objects of a caller's own)."""
    try:
        return bool(a == b)
    except Exception:
        return False
