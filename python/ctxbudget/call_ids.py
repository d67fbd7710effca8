"""Tool-call ids reused across rounds, made unique so the conversation can be sent.

Some models number their tool calls per response (``search_web:0``, ``call_0``): the same id
comes back in every round of an agent loop. Each round is paired on its own (the call, then its
result), but providers that check ids across the whole request refuse it ("Duplicate value for
'tool_call_id'", "Duplicate function_call_output for call_id"), and ctxbudget's pairing check
(SPEC G2) reports a ``duplicate_call``. :func:`unique_call_ids` gives every later round of an id
a new one (``call_0_2``, ``call_0_3``, ...: the id with a suffix no other id in the list has),
in its calls and in their results; the first round keeps its id.

Only rounds that are already closed are renamed: an id called again before its earlier call
has a result, or twice in one message, stays as it is (which call a result answers cannot be
told), and the pairing check reports it. Gemini contents are left alone: Gemini pairs calls and
responses turn by turn, not by id.

The caller's messages are never modified: a renamed message is a new one (the same format,
written by :func:`ctxbudget.messages.convert_messages`); the others are the caller's own
objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxbudget.formats.model import Message
from ctxbudget.messages import FORMATS, convert_messages, detect_format, normalize_messages
from ctxbudget.stubs import results_ref
from ctxbudget.turns import MessageInfo, scan

__all__ = ["CallIdRenamer", "unique_call_ids"]

#: {old id: new id} for the calls and results of one message.
Renames = dict[str, str]


def plan_renames(infos: Sequence[MessageInfo]) -> dict[int, Renames]:
    """The new ids of the calls and results of reused ids, by message index (empty when no
    id is reused after its round closed)."""
    taken = {cid for info in infos for cid, _ in info.calls if cid is not None}
    taken |= {cid for info in infos for cid, _, _ in info.results if cid is not None}
    rounds: dict[str, _Round] = {}
    plan: dict[int, Renames] = {}
    for i, info in enumerate(infos):
        ids = [cid for cid, _ in info.calls if cid is not None]
        for cid in ids:
            current = rounds.get(cid)
            if current is None:
                rounds[cid] = _Round(cid)
            elif current.answered and ids.count(cid) == 1:
                rounds[cid] = new = current.next(taken)
                plan.setdefault(i, {})[cid] = new.name
            else:
                current.answered = False  # still open: results after it stay ambiguous
        for rid, _, _ in info.results:
            answered = rounds.get(rid) if rid is not None else None
            if rid is None or answered is None:
                continue
            if answered.name != rid:
                plan.setdefault(i, {})[rid] = answered.name
            answered.answered = True
    return plan


class _Round:
    """The current round of a call id: the id it is sent under, whether it has a result."""

    __slots__ = ("answered", "count", "name", "original")

    def __init__(self, original: str, name: str | None = None, count: int = 1) -> None:
        self.original, self.name, self.count = original, name or original, count
        self.answered = False

    def next(self, taken: set[str]) -> _Round:
        """The next round, under an id no message of the list has (added to ``taken``)."""
        count = self.count + 1
        while f"{self.original}_{count}" in taken:
            count += 1
        name = f"{self.original}_{count}"
        taken.add(name)
        return _Round(self.original, name, count)


def renamed(message: Any, fmt: str, renames: Renames) -> Any:
    """``message`` (not modified) with the call ids of its calls and results renamed."""
    (normalized,) = normalize_messages([message], fmt)
    parts = tuple(
        replace(p, call_id=renames[p.call_id])
        if p.kind in ("tool_call", "tool_result") and p.call_id in renames
        else p
        for p in normalized.parts
    )
    out = convert_messages([replace(normalized, parts=parts)], fmt).messages
    if len(out) != 1:  # pragma: no cover - a same-format message is written as one
        raise AssertionError(f"a {fmt} message was written as {len(out)}")
    return out[0]


class CallIdRenamer:
    """:func:`unique_call_ids` for one conversation sent turn after turn: a renamed message
    is the same object every turn while its original and its new ids stay the same (the
    caches keyed on message objects keep working, and the provider's prompt cache sees the
    same prefix). Not thread-safe: the owner serialises."""

    def __init__(self) -> None:
        # id(original) -> (original, its content field, renames, renamed copy)
        self._made: dict[int, tuple[Any, Any, Renames, Any]] = {}

    def apply(self, fmt: str, messages: list[Any], infos: Sequence[MessageInfo]) -> list[Any]:
        """``messages`` (their ``infos`` read by :func:`ctxbudget.turns.scan`) with reused
        call ids renamed; ``messages`` itself when there are none."""
        if fmt == "gemini":
            return messages
        plan = plan_renames(infos)
        if not plan:
            self._made = {}
            return messages
        out = list(messages)
        made: dict[int, tuple[Any, Any, Renames, Any]] = {}
        for i, renames in plan.items():
            original = messages[i]
            ref = results_ref(fmt, original) if isinstance(original, Mapping) else None
            hit = self._made.get(id(original))
            if hit is not None and hit[0] is original and hit[1] is ref and hit[2] == renames:
                copy = hit[3]
            else:
                copy = renamed(original, fmt, renames)
            made[id(original)] = (original, ref, renames, copy)
            out[i] = copy
        self._made = made
        return out


def unique_call_ids(messages: Sequence[Any], format: str | None = None) -> list[Any]:
    """``messages`` with tool-call ids reused across rounds made unique (see the module).

    Args:
        messages: The conversation, in any format but Gemini's (returned as it is).
        format: Its format; detected when ``None``.

    Returns:
        A new list: renamed messages are new objects, the others the caller's own.

    >>> def call(i): return {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "call_0", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}
    >>> def result(text): return {"role": "tool", "tool_call_id": "call_0", "content": text}
    >>> history = [call(0), result("a.py"), call(1), result("b.py")]
    >>> [m.get("tool_call_id") or m["tool_calls"][0]["id"] for m in unique_call_ids(history)]
    ['call_0', 'call_0', 'call_0_2', 'call_0_2']
    """
    msgs = list(messages)
    if isinstance(messages, Message) or (msgs and all(isinstance(m, Message) for m in msgs)):
        raise TypeError("pass the messages in their provider format, not Message objects")
    fmt = format or detect_format(msgs)
    if fmt not in FORMATS:
        raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
    return CallIdRenamer().apply(fmt, msgs, scan(msgs, fmt))
