"""Tool-call ids reused across rounds, made unique so the conversation can be sent.

Some models number their tool calls per response (``search_web:0``, ``call_0``): the same id
comes back in every round of an agent loop. Each round is paired on its own (the call, then its
result), but providers that check ids across the whole request refuse it ("Duplicate value for
'tool_call_id'", "Duplicate function_call_output for call_id"), and ctxbudget's pairing check
(SPEC G2) reports a ``duplicate_call``; pruning and compaction, which pair calls by id, cannot
tell the rounds apart either. :func:`unique_call_ids` gives every later round of an id a new
one (``call_0_2``, ``call_0_3``, ...: the id with a suffix no other id in the list has), in its
calls and in their results; the first round keeps its id.

Only rounds that are already closed are renamed: those with a result, and those of an earlier
turn (their result was lost; the guard gives them one). An id called twice in one message, or
again in the same turn before its result, stays as it is (which call a result answers cannot
be told), and the pairing check reports it. Gemini pairs calls and responses turn by turn; its
ids, where a history has them, are renamed the same way (the pairing check reads them).

The caller's messages are never modified: a renamed message is a shallow copy with new id
fields (and new copies of the blocks or calls that hold them); everything else in it is the
caller's own, and the other messages are the caller's objects.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from ctxbudget._core import DictVersions, unchanged_prefix
from ctxbudget.formats.common import as_mapping, field_columns, plain_model
from ctxbudget.messages import FORMATS, detect_format
from ctxbudget.stubs import in_history_type
from ctxbudget.turns import MessageInfo, ScanCache, scan_error

__all__ = ["CallIdRenamer", "unique_call_ids"]

#: {old id: new id} for the calls and results of one message.
Renames = dict[str, str]

#: The fields a renamed copy carries that a caller may replace, per format: what the list's
#: unchanged-prefix check compares (a field outside them, replaced, needs ``invalidate``; at
#: most sixteen, which the core's check skips for a dict not changed since it last matched).
_COPIED: dict[str, tuple[str, ...]] = {
    "openai_chat": (
        "content", "tool_calls", "role", "tool_call_id", "name", "reasoning_content",
        "reasoning", "reasoning_details", "thinking_blocks", "refusal", "function_call",
        "audio", "annotations",
    ),
    "openai_responses": (
        "content", "output", "call_id", "type", "role", "name", "id", "arguments", "input",
        "summary", "status", "action", "operation", "encrypted_content", "namespace",
    ),
    "anthropic": ("content", "role"),
    "gemini": ("parts", "role"),
}  # fmt: skip


class _Round:
    """The current round of a call id: the id it is sent under, whether it has a result, and
    the turn it was called in (see :attr:`_Plan.turn`)."""

    __slots__ = ("answered", "count", "name", "original", "turn")

    def __init__(self, original: str, turn: int, name: str | None = None, count: int = 1) -> None:
        self.original, self.name, self.count = original, name or original, count
        self.turn = turn
        self.answered = False


class _Plan:
    """The renames of a list of messages, read message by message (so that a list that grew
    is read from where the last one ended)."""

    def __init__(self, fmt: str, taken: set[str]) -> None:
        self.read = 0  # messages read
        self.taken = taken  # every id of the list, and those made
        self.made: set[str] = set()
        self.rounds: dict[str, _Round] = {}
        self.renames: dict[int, Renames] = {}
        # Turns seen: a user message, a text reply, or (where one message holds all of a
        # response's calls) any model message starts one; a call left without a result in
        # an earlier turn was lost, and its id may be called anew.
        self.turn = 0
        self.calls_close = fmt in ("openai_chat", "anthropic", "gemini")

    def feed(self, i: int, info: MessageInfo) -> None:
        if info.kind == "user" or (
            info.kind == "assistant" and (self.calls_close or not (info.calls or info.reasoning))
        ):
            self.turn += 1
        ids = [cid for cid, _ in info.calls if cid is not None]
        for cid in ids:
            current = self.rounds.get(cid)
            if current is None:
                self.rounds[cid] = _Round(cid, self.turn)
            elif (current.answered or current.turn < self.turn) and ids.count(cid) == 1:
                self.rounds[cid] = new = self._next(current)
                self.renames.setdefault(i, {})[cid] = new.name
            else:
                current.answered = False  # still open: results after it stay ambiguous
        for rid, _, _ in info.results:
            answered = self.rounds.get(rid) if rid is not None else None
            if rid is None or answered is None:
                continue
            if answered.name != rid:
                self.renames.setdefault(i, {})[rid] = answered.name
            answered.answered = True
        self.read = i + 1

    def _next(self, current: _Round) -> _Round:
        """The next round of ``current``'s id, under an id no message of the list has."""
        count = current.count + 1
        while f"{current.original}_{count}" in self.taken:
            count += 1
        name = f"{current.original}_{count}"
        self.taken.add(name)
        self.made.add(name)
        return _Round(current.original, self.turn, name, count)


def _ids(infos: Sequence[MessageInfo]) -> set[str]:
    calls = {cid for info in infos for cid, _ in info.calls if cid is not None}
    return calls | {rid for info in infos for rid, _, _ in info.results if rid is not None}


def renamed(message: Any, fmt: str, renames: Renames) -> dict[str, Any]:
    """``message`` (not modified) with the ids of its calls and results renamed: a shallow
    copy (an SDK object's fields), with new copies of the calls or blocks that hold them."""
    m = dict(as_mapping(message) or {})
    if fmt == "openai_chat":
        m = _with_id(m, "tool_call_id", renames)
        calls = m.get("tool_calls")
        if isinstance(calls, list):
            m["tool_calls"] = [_with_id(call, "id", renames) for call in calls]
    elif fmt == "openai_responses":
        # a local_shell_call_output names its call in "id"; every other item in "call_id"
        m = _with_id(m, "id" if m.get("type") == "local_shell_call_output" else "call_id", renames)
    elif fmt == "anthropic":
        content = m.get("content")
        if isinstance(content, list):
            m["content"] = [_anthropic_block(block, renames) for block in content]
    elif fmt == "gemini":
        parts = m.get("parts")
        if isinstance(parts, list):
            m["parts"] = [_gemini_part(part, renames) for part in parts]
    return m


def _with_id(item: Any, key: str, renames: Renames) -> Any:
    """``item`` with its ``key`` renamed, copied (itself when that id is not renamed)."""
    fields = as_mapping(item)
    value = fields.get(key) if fields is not None else None
    if fields is None or not isinstance(value, str) or value not in renames:
        return item
    return {**fields, key: renames[value]}


def _anthropic_block(block: Any, renames: Renames) -> Any:
    fields = as_mapping(block)
    kind = fields.get("type") if fields is not None else None
    if kind == "tool_use":
        return _with_id(block, "id", renames)
    if kind == "tool_result":
        return _with_id(block, "tool_use_id", renames)
    return block


#: Where a Gemini part holds an id: google-genai's spelling, then the REST API's.
_GEMINI_ID_HOLDERS = ("function_call", "function_response", "functionCall", "functionResponse")


def _gemini_part(part: Any, renames: Renames) -> Any:
    fields = as_mapping(part)
    if fields is None:
        return part
    for key in _GEMINI_ID_HOLDERS:
        holder = fields.get(key)
        if holder is not None:
            new = _with_id(holder, "id", renames)
            return part if new is holder else {**fields, key: new}
    return part


def _field_refs(message: Any) -> tuple[Any, ...]:
    """The objects in the message's fields (its keys too) and in those that are lists: a
    replaced field or block shows as another object there. An edit inside a block does not
    (see :meth:`CallIdRenamer.invalidate`).
    A pydantic model's from its ``__dict__`` and its extra fields (``reasoning_content`` on an
    openai message); anything else is copied anew every turn."""
    if isinstance(message, Mapping):
        return (*message.keys(), *message.values(), *_blocks(message.values()))
    fields = getattr(message, "__dict__", None)
    if not plain_model(type(message)) or not isinstance(fields, dict):
        return (object(),)
    extra = getattr(message, "__pydantic_extra__", None) or {}
    values = (*fields.values(), *extra.values())
    return (*fields.keys(), *extra.keys(), *values, *_blocks(values))


def _blocks(values: Any) -> list[Any]:
    """The items of the values that are lists (an Anthropic message's blocks, a Gemini
    content's parts): a block put in place of another in the list is another object there
    (a redacted tool result the renamed copy would otherwise keep the old one of)."""
    return [item for value in values if isinstance(value, list) for item in value]


def _same_objects(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class CallIdRenamer:
    """:func:`unique_call_ids` for one conversation sent turn after turn. A list that grew
    is read from where the last one ended; a renamed message is the same object every turn
    while its original, the objects in its fields and its new ids stay the same (the caches
    keyed on message objects keep working, and the provider's prompt cache sees the same
    prefix). Not thread-safe: the owner serialises."""

    def __init__(self) -> None:
        self._scans: dict[str, ScanCache] = {}
        self._plan: _Plan | None = None
        # id(original) -> (original, its field objects, renames, renamed copy)
        self._made: dict[int, tuple[Any, tuple[Any, ...], Renames, Any]] = {}
        self._out: list[Any] | None = None  # the last list made
        # the caller's last list and, per field a copy carries (_COPIED), its objects: a list
        # that starts with it unchanged keeps the copies made for it, unchecked
        self._seen: list[Any] = []
        self._seen_refs: list[list[Any]] = []
        self._versions = DictVersions()

    def invalidate(self) -> None:
        """Forget everything read (after editing a message in place below its fields)."""
        self._scans, self._plan, self._made, self._out = {}, None, {}, None
        self._seen, self._seen_refs, self._versions = [], [], DictVersions()

    def apply(self, fmt: str, messages: list[Any], recheck: Container[int] = ()) -> list[Any]:
        """``messages`` with reused call ids renamed; ``messages`` itself when there are none.

        A list that starts with the last one (the same messages, with the same content
        fields, which hold the ids) keeps that list's copies; the messages after it are
        checked one by one, and so are the copies whose ids are in ``recheck`` (those the
        guard keeps stubs in: a block put in place of another in their list is seen, and
        the copy made again).
        """
        scans = self._scans.get(fmt)
        if scans is None:
            scans = self._scans[fmt] = ScanCache(fmt)
        before = self._plan
        try:
            infos = scans.scan(messages)
            plan = self._plan_of(fmt, infos, scans.prefix)
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            # runs before validation: an id that is no string (a list is unhashable) or a
            # malformed message is reported as the validator would, naming message and field
            self.invalidate()
            raise scan_error(messages, fmt, exc) from exc
        if not plan.renames:
            self._made, self._out, self._seen, self._seen_refs = {}, None, [], []
            return messages
        last = self._out if plan is before else None
        if last is None:  # read from the start: no copy is kept
            self._seen, self._seen_refs = [], []
        kept = min(self._kept(fmt, messages), len(last or ()))
        # the caller's own objects, but for the renamed ones: the last copies while their
        # originals are unchanged, new ones after
        out = list(messages)
        made = self._made if kept else {}
        for i, renames in plan.renames.items():
            out[i] = (
                last[i]
                if last is not None and i < kept and id(last[i]) not in recheck
                else self._copy(fmt, messages[i], renames, made)
            )
        self._made, self._out = made, out
        return out

    def _kept(self, fmt: str, messages: list[Any]) -> int:
        """How many leading messages are the last list's with every field a copy carries
        unchanged (the scan's prefix compares only the fields it reads: an edit of the
        reasoning sent back, or of a Responses call's arguments, would keep a stale copy);
        0 when not all of them are. Remembers ``messages`` for the next call."""
        keys = _COPIED[fmt]
        k = unchanged_prefix(messages, self._seen, self._seen_refs, keys, self._versions)
        columns = field_columns(messages[k:], keys) if k else None
        if columns is not None:
            for refs, column in zip(self._seen_refs, columns, strict=True):
                refs.extend(column)
        else:
            self._seen_refs = field_columns(messages, keys) or []
        self._seen = list(messages) if self._seen_refs else []
        return k

    def _copy(
        self,
        fmt: str,
        original: Any,
        renames: Renames,
        made: dict[int, tuple[Any, tuple[Any, ...], Renames, Any]],
    ) -> Any:
        """The renamed copy of ``original``: the one made before while its fields are the
        same objects and its renames the same, else a new one (recorded in ``made``)."""
        refs = _field_refs(original)
        hit = self._made.get(id(original))
        if (
            hit is not None
            and hit[0] is original
            and _same_objects(hit[1], refs)
            and hit[2] == renames
        ):
            copy = hit[3]
        else:
            # in the original's own type: a google-genai Content stays one
            copy = in_history_type([renamed(original, fmt, renames)], [original])[0]
        made[id(original)] = (original, refs, renames, copy)
        return copy

    def _plan_of(self, fmt: str, infos: list[MessageInfo], unchanged: int) -> _Plan:
        """The plan of ``infos``: the last one read on, when its messages are the first of
        these unchanged and no new id is one it made; else read from the start."""
        plan = self._plan
        new_ids = _ids(infos[plan.read :]) if plan is not None else set()
        if plan is None or unchanged < plan.read or new_ids & plan.made:
            plan = _Plan(fmt, _ids(infos))
        else:
            plan.taken |= new_ids
        for i in range(plan.read, len(infos)):
            plan.feed(i, infos[i])
        self._plan = plan
        return plan


def unique_call_ids(messages: Sequence[Any], format: str | None = None) -> list[Any]:
    """``messages`` with tool-call ids reused across rounds made unique (see the module).

    Args:
        messages: The conversation, in any format.
        format: Its format; detected when ``None``.

    Returns:
        A new list: renamed messages are new dicts, the others the caller's own objects.

    >>> def call(i): return {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "call_0", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}
    >>> def result(text): return {"role": "tool", "tool_call_id": "call_0", "content": text}
    >>> history = [call(0), result("a.py"), call(1), result("b.py")]
    >>> [m.get("tool_call_id") or m["tool_calls"][0]["id"] for m in unique_call_ids(history)]
    ['call_0', 'call_0', 'call_0_2', 'call_0_2']
    """
    msgs = list(messages)
    fmt = format or detect_format(msgs)
    if fmt not in FORMATS:
        raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
    return CallIdRenamer().apply(fmt, msgs)
