"""Stubs kept from one turn to the next (SPEC F3, F5).

A result stubbed in a request the provider accepted is stubbed again in every later request
while its message stays in the history: the model never saw it whole, and sent whole it
would overflow again (a result the estimate under-counts). :class:`StickyStubs` keeps, per
message, which results were stubbed and a fingerprint of each as it was when its stub was
made, so that a result the agent changed since (edited in place, redacted, replaced, even
while the request was in flight) is sent as it is now, never as the stub of what it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ctxbudget.stubs import in_history_type, replace_results, results_ref, same_refs
from ctxbudget.turns import as_mapping, scan_one

__all__ = ["StickyStubs"]

# slot -> what tells a tool result from another: its call id and the fields of its output
Results = dict[int, tuple[Any, ...]]
# (message, slot, stub) of a result stubbed, and the fingerprint of the result when the stub
# was made (None: read when remembered)
Made = tuple[Any, int, str, tuple[Any, ...] | None]

# the results field of a message edited in place: read again on the next apply
_STALE = object()


class _Kept(NamedTuple):
    """What :class:`StickyStubs` keeps of a message with stubbed results."""

    message: Any
    field: Any  # its results field (the object), or _STALE
    items: tuple[Any, ...] | None  # that field's blocks when it was read (None: not a list)
    top: tuple[tuple[Any, Any], ...] | None  # the message's fields, as objects (_top)
    slots: dict[int, str]  # slot -> stub
    stubbed: Any  # the stubbed copy sent in its place
    results: Results  # slot -> the fingerprint of the result stubbed there, as it was


class _Loose(NamedTuple):
    """Stubs of a message not found in a view yet: a copied or unpickled state, a history
    loaded anew."""

    message: Any
    slots: dict[int, str]
    at: int | None  # where it was in the last view
    results: Results | None  # None: a state pickled before fingerprints were kept (read anew)


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

    def noted(self, fmt: str, made: Iterable[tuple[Any, int, str]]) -> list[Made]:
        """The ``(message, slot, stub)`` of results just stubbed, each with the fingerprint of
        its result now (for :meth:`remember`: a result changed while its request is in flight
        is not kept stubbed)."""
        return [(m, slot, stub, _snapshot(fmt, m, [slot]).get(slot)) for m, slot, stub in made]

    def remember(self, fmt: str, made: Sequence[Made | tuple[Any, int, str]]) -> None:
        """Add the results stubbed in an accepted request: ``(message, slot, stub)``, with the
        fingerprint :meth:`noted` took when the stub was made. A result that is not what it
        was then (the agent redacted it while the request was in flight) is left out: its
        stub quotes what it was."""
        for m, slot, stub, *then in made:
            copied = self._origin.get(id(m))
            original = copied[1] if copied is not None and copied[0] is m else m
            now = _snapshot(fmt, original, [slot]).get(slot)
            if now is None or (then and then[0] is not None and not _equal(now, then[0])):
                continue
            old = self._by_id.get(id(original))
            if old is None or old.message is not original:
                old = None
            slots = dict(old.slots) if old is not None else {}
            results = dict(old.results) if old is not None else {}
            slots[slot], results[slot] = stub, now
            kept = self._kept(fmt, original, slots, results)
            if old is not None and old.field is _STALE:  # invalidated meanwhile: read again
                kept = kept._replace(field=_STALE)
            self._keep(kept)

    def apply(self, fmt: str, view: list[Any]) -> list[Any]:
        """``view`` with the remembered stubs in place (``view`` itself when none apply);
        forgets those whose message left or whose results changed."""
        previous, self._view = self._view, view
        self.changed = []
        if self._loose:
            self._bind(fmt, view, None)  # (a copy's or an unpickled state's: positions of then)
        if not self._by_id:
            return view
        found = self._find(view)
        if len(found) < len(self._by_id):
            # not the same objects: a history rebuilt from storage each turn holds equal ones
            self._loose = [self._loosened(k) for k in self._by_id if k not in found]
            self._by_id = {k: self._by_id[k] for k in found}
            self._bind(fmt, view, _cut(previous, view))
            found = self._find(view)
        out = list(view)
        kept: dict[int, _Kept] = {}
        for key, i in found.items():
            hit = self._by_id[key]
            field = results_ref(fmt, view[i])
            same = (
                hit.field is field
                and _same_items(_items(field), hit.items)
                and _same_top(_top(view[i]), hit.top)
            )
            now, dropped = (hit, False) if same else self._renewed(fmt, hit)
            if now is not None:
                out[i] = now.stubbed
                kept[key] = now
            if dropped and field is hit.field:  # a result changed in place, in the same field
                self.changed.append(hit.message)
        self._by_id = kept
        self._origin = {id(v.stubbed): (v.stubbed, v.message) for v in kept.values()}
        self._at = {key: found[key] for key in kept}
        return in_history_type(out, view) if kept else view

    def kept(self) -> set[int]:
        """The ids of the messages stubs are kept for (the objects of the last view)."""
        return set(self._by_id)

    def invalidate(self, message: Any = None) -> None:
        """After ``message`` (every message, when it is None) was edited in place: on the next
        :meth:`apply` its results are compared with the fingerprints kept, its stubs kept for
        those unchanged (wherever they moved to in it) and its stubbed copy made again from
        what it holds now (a copy made before the edit would send the old message)."""
        for key, hit in list(self._by_id.items()):
            if message is None or key == id(message):
                self._by_id[key] = hit._replace(field=_STALE)

    def __getstate__(self) -> dict[str, Any]:
        """The stubs kept, each with the message it stands for and its results' fingerprints
        (a copy of the state holds those messages, unpickled as other objects): the next
        :meth:`apply` finds each message in its view, the same object or an equal one, and
        keeps the stubs of the results found there unchanged."""
        loose = [self._loosened(k) for k in self._by_id] + self._loose
        return {"loose": [tuple(entry) for entry in loose], "drop_media": self.drop_media}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(drop_media=state.get("drop_media", True))  # type: ignore[misc]
        # (a state pickled by an older version has no copies, or no positions either)
        loose = [_Loose(*entry, *(None,) * (4 - len(entry))) for entry in state["loose"]]
        # (an older version kept copies of the results: their fingerprints now)
        self._loose = [
            e if e.results is None else e._replace(results=_refingerprinted(e.results))
            for e in loose
        ]

    def _renewed(
        self, fmt: str, hit: _Kept, moved: dict[int, tuple[int, Any]] | None = None
    ) -> tuple[_Kept | None, bool]:
        """The stubs of ``hit.message`` once its results field holds a new object or other
        blocks, another field of it was replaced, or it was edited in place: kept for the
        results still there unchanged, wherever they moved to in it (a block list rebuilt
        each turn, as code moving ``cache_control`` does; a note added to it), its stubbed
        copy made again from what it holds now (``None`` when no stubbed result is left: it
        is sent as it is); and whether the stub of a result that changed or went was
        dropped. ``moved``: what :func:`_moved` gives for it, when already read."""
        if moved is None:
            moved = _moved(_results(fmt, hit.message), hit.slots, hit.results, same=True)
        dropped = len(moved) < len(hit.slots)
        if not moved:
            return None, dropped
        slots = {k: hit.slots[s] for s, (k, _) in moved.items()}
        # (the fingerprints of the results as the message holds them: a string kept is then
        # the message's own, not that of a history loaded before it)
        return self._kept(fmt, hit.message, slots, dict(moved.values())), dropped

    def _kept(self, fmt: str, message: Any, slots: dict[int, str], results: Results) -> _Kept:
        """What is kept of ``message`` with the results at ``slots`` stubbed: its stubbed copy
        in the history's own type (a google-genai Content stays one; the view holds this
        very object, which a later stub in the same message is recorded against)."""
        new = replace_results(fmt, message, slots, drop_media=self.drop_media)
        stubbed = in_history_type([new], [message])[0]
        field = results_ref(fmt, message)
        return _Kept(message, field, _items(field), _top(message), slots, stubbed, results)

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

    def _bind(self, fmt: str, view: list[Any], cut: int | None) -> None:
        """Keep the loose stubs again for the messages of ``view`` they stand for, when the
        results stubbed are there unchanged; ``cut``: how many messages the list lost at its
        front since the positions they hold (a stub whose message went with them goes too:
        the same output after them, under a reused id, is the tool run again)."""
        loose, self._loose = self._loose, []
        present = {id(m): i for i, m in enumerate(view)}
        for original, slots, at, then in loose:
            if then is None:
                then = _snapshot(fmt, original, slots)
            if id(original) not in present and at is not None and cut is not None:
                at -= cut
                if at < 0:
                    continue
            # the same object when it is still there (an equal one before it is another
            # message: the same output twice), else one not kept yet: the one where it was
            # when it holds the same results (its other blocks may differ: code moving
            # ``cache_control``), else the first equal one, else the first that holds those
            # outputs (under other call ids: a history cut from the front, whose reused ids
            # the guard no longer renames, holds the caller's message in place of the renamed
            # copy the stubs were kept for). (Ids tell: ``original`` is alive, held here.)
            matched: dict[int, dict[int, tuple[int, Any]]] = {}  # index -> _moved there
            i = present.get(id(original))
            if i is None and at is not None and at < len(view):
                # (where the list was cut from the front, the message now at its place is it
                # under the ids the guard renumbered: call_0_3 becomes call_0_2)
                base = cut is not None
                i = at if self._holds(fmt, view, at, slots, then, matched, base=base) else None
            if i is None:
                i = next(
                    (
                        k
                        for k, m in enumerate(view)
                        if id(m) not in self._by_id and _equal(m, original)
                    ),
                    None,
                )
            if i is None:
                i = next(
                    (
                        k
                        for k in range(len(view))
                        if self._holds(fmt, view, k, slots, then, matched)
                    ),
                    None,
                )
            if i is None or id(view[i]) in self._by_id:
                continue
            stale = _Kept(view[i], _STALE, None, None, slots, None, then)
            kept, _ = self._renewed(fmt, stale, matched.get(i))
            if kept is not None:
                self._keep(kept, at=i)

    def _holds(
        self,
        fmt: str,
        view: list[Any],
        k: int,
        slots: dict[int, str],
        then: Results,
        matched: dict[int, dict[int, tuple[int, Any]]],
        *,
        base: bool = False,
    ) -> bool:
        """Whether ``view[k]``, not kept yet, holds some of the results ``then`` had at
        ``slots`` (what :func:`_moved` found there goes in ``matched``; ``base``: under ids
        of the same base too, see :func:`_moved`)."""
        if id(view[k]) in self._by_id:
            return False
        if k not in matched:
            matched[k] = _moved(_results(fmt, view[k]), slots, then, base=base)
        return bool(matched[k])

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


def _cut(previous: Sequence[Any], view: Sequence[Any]) -> int | None:
    """How many messages ``previous`` had before the first of ``view`` (the same object):
    those cut from the front of the list; ``None`` when it is not there (a summary in their
    place, a history loaded anew)."""
    if not view:
        return None
    first = view[0]
    return next((k for k, m in enumerate(previous) if m is first), None)


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
    """The fingerprints of the results of ``message`` at ``slots`` (see :func:`_fingerprint`)."""
    found = _results(fmt, message)
    return {slot: _fingerprinted(found[slot]) for slot in slots if slot in found}


def _fingerprinted(result: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(map(_fingerprint, result))


def _refingerprinted(results: Results) -> Results:
    """``results`` with every field a fingerprint (a digest stays as it is)."""
    return {slot: _fingerprinted(r) for slot, r in results.items()}


class _Digest(bytes):
    """A 16-byte digest of a value: equal only to the digest of an equal value."""


def _fingerprint(value: Any) -> Any:
    """What a field of a result is compared by later: the value itself when it cannot change
    (a string: shared, not copied), else a digest of it (:func:`_json_digest`), which an edit
    in place of the caller's container (a redacted row of a structured output) does not
    reach, and which costs little to keep however large the value (a deep copy kept doubled
    the memory of a large structured output, and made a recovery turn 1.3-2x slower). A value
    neither digest reads is kept as the object itself (an edit in place of it is then seen
    only by ``==``)."""
    if value is None or isinstance(value, str | bytes | int | float):
        return value
    for digest in (_json_digest, _pickle_digest):
        try:
            return _Digest(digest(value))
        except Exception:  # (the next way; a caller's object of its own)
            continue
    return value


def _json_digest(value: Any) -> bytes:
    """The digest of ``value``'s JSON with its keys sorted: the same for the value loaded
    anew from storage that orders keys its own way (PostgreSQL ``jsonb``), with other
    objects, or with numpy floats turned into floats; objects JSON has no form for by their
    ``repr`` (a function's tells the very object)."""
    text = json.dumps(value, sort_keys=True, default=_described)
    return hashlib.blake2b(text.encode("ascii"), digest_size=16).digest()


def _described(o: object) -> str:
    return f"<{type(o).__module__}.{type(o).__qualname__} {o!r}>"


def _pickle_digest(value: Any) -> bytes:
    """The digest of ``value``'s pickle, written without a memo (equal values give equal
    bytes whether or not they share objects): for what JSON cannot write with its keys
    sorted (keys of several types)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True  # (a value holding itself raises)
    pickler.dump(value)
    return hashlib.blake2b(out.getbuffer(), digest_size=16).digest()


def _moved(
    now: Results, slots: Iterable[int], then: Results, *, same: bool = False, base: bool = False
) -> dict[int, tuple[int, Any]]:
    """Old slot -> the slot of ``now`` holding the result whose fingerprint ``then`` had
    there, and its fingerprint now: the same call id and output (the same slot first), else
    the same output under the call's id renamed (:func:`_renamed_from`) or, in the ``same``
    message, at the same slot under another id once the old one is gone from it (the caller
    renamed it), or with ``base`` under an id of the same base (:func:`_id_base`: a message
    known by its place); the slots whose result is gone or changed are left out."""
    prints: dict[int, tuple[Any, ...]] = {}

    def printed(k: int) -> tuple[Any, ...]:
        if k not in prints:
            prints[k] = _fingerprinted(now[k])
        return prints[k]

    taken: dict[int, tuple[int, Any]] = {}
    renamed = []
    for slot in slots:
        result = then.get(slot)
        if result is None:
            continue
        order = ([slot] if slot in now else []) + [k for k in now if k != slot]
        used = {k for k, _ in taken.values()}
        k = next((k for k in order if k not in used and _equal(printed(k), result)), None)
        if k is None:
            renamed.append(slot)
        else:
            taken[slot] = (k, printed(k))
    ids = {r[0] for r in now.values()}
    for slot in renamed:
        used = {k for k, _ in taken.values()}
        cid, output = then[slot][0], then[slot][1:]
        k = next(
            (
                k
                for k in now
                if k not in used
                and (
                    _renamed_from(now[k][0], cid)
                    or (same and k == slot and cid not in ids)
                    or (base and _id_base(now[k][0]) == _id_base(cid) is not None)
                )
                and _equal(printed(k)[1:], output)
            ),
            None,
        )
        if k is not None:
            taken[slot] = (k, printed(k))
    return taken


def _renamed_from(a: Any, b: Any) -> bool:
    """Whether call ids ``a`` and ``b`` are one call's, one of them as the guard renamed a
    reused id (``call_0`` and ``call_0_2``, :mod:`ctxbudget.call_ids`): not another call's
    result with the same output (the model running the tool again, as a stub tells it to)."""
    if not isinstance(a, str) or not isinstance(b, str) or a == b:
        return False
    long, short = (a, b) if len(a) > len(b) else (b, a)
    rest = long[len(short) :]
    return long.startswith(short) and rest[:1] == "_" and rest[1:].isdigit()


def _id_base(cid: Any) -> str | None:
    """A call id without the ``_<n>`` suffixes the guard gives reused ids (``call_0_3`` ->
    ``call``); ``None`` for an id that is no string."""
    return _SUFFIXES.sub("", cid) if isinstance(cid, str) else None


_SUFFIXES = re.compile(r"(?:_\d+)+$")


def _top(message: Any) -> tuple[tuple[Any, Any], ...] | None:
    """The fields of a message (a dict's items, an object's ``__dict__``'s) as the objects
    they hold: another one replaced (an id renamed, a field added) makes its stubbed copy
    again."""
    fields = message if isinstance(message, dict) else getattr(message, "__dict__", None)
    return tuple(fields.items()) if isinstance(fields, dict) else None


def _same_top(a: tuple[tuple[Any, Any], ...] | None, b: tuple[tuple[Any, Any], ...] | None) -> bool:
    if a is None or b is None:
        return a is b
    if len(a) != len(b):
        return False
    return all(x[0] == y[0] and x[1] is y[1] for x, y in zip(a, b, strict=True))


def _items(field: Any) -> tuple[Any, ...] | None:
    """The blocks of a results field that is a list (``None`` for any other)."""
    return tuple(field) if isinstance(field, list) else None


def _same_items(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """Whether two :func:`_items` hold the same block objects in the same places."""
    return a is b if a is None or b is None else same_refs(a, b)


def _equal(a: Any, b: Any) -> bool:
    """``a == b``, false when comparing them raised (objects of a caller's own)."""
    try:
        return bool(a == b)
    except Exception:
        return False
