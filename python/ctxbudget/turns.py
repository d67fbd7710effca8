"""The shape of a conversation: turns, tool-call pairs and where it may be cut.

Pruning and compaction need the same few facts about every message, in every format, and
need them fast (every turn, on histories of hundreds of messages): what kind of message it is,
which tool calls it makes, which tool results it carries. :func:`scan` reads them from the
caller's raw dicts without building the full normalised view (which costs ~30 us a message);
:class:`ScanCache` keeps them per message object across calls.

A **turn** is a user message and everything up to the next user message. Messages that only
carry tool results are not user messages here, whatever their role (Anthropic and Gemini put
tool results in ``user`` messages; those continue the turn). A conversation summary written
by :mod:`ctxbudget.compact` is a user message and so starts a turn.

A **safe cut** at index ``c`` splits no tool call from its results: no call before ``c`` has
a result at or after ``c``. For the Responses format a cut inside a model response that has a
``reasoning`` item is not safe either: its items travel together, up to the next input item
(a user, system or developer message, or a tool result); nor is a cut inside a group of items
the server ran (a ``program``, the tool calls it makes and its ``program_output``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ctxbudget._core import DictVersions, same_value, unchanged_prefix
from ctxbudget.formats.common import as_mapping as _as_mapping
from ctxbudget.formats.common import field_columns, field_refs
from ctxbudget.messages import FORMATS, MessageFormatError, validate_messages
from ctxbudget.pairing import PairingViolation, validate_pairing

__all__ = [
    "SUMMARY_MARKER",
    "MessageInfo",
    "PairingError",
    "ScanCache",
    "pairing_events",
    "resolve_ids",
    "safe_cuts",
    "scan",
    "turn_starts",
]

Kind = Literal["system", "user", "assistant", "results", "other"]

#: First characters of every summary message written by :mod:`ctxbudget.compact`.
SUMMARY_MARKER = "[ctxbudget summary v1"

_SYNTH_ID = "ctxb_call_"


class PairingError(ValueError):
    """A rewrite would break tool-call pairing; it was rejected, nothing was changed.

    Attributes:
        what: The rewrite that was rejected (``"pruning"``, ``"compaction"``, ...).
        violations: The new violations the rewrite would have introduced.
    """

    def __init__(self, what: str, violations: Sequence[PairingViolation]) -> None:
        detail = ", ".join(f"{v.kind} {v.call_id!r} at {list(v.positions)}" for v in violations)
        super().__init__(f"{what} would break tool-call pairing: {detail}")
        self.what = what
        self.violations = tuple(violations)

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls ``cls(message)``, which this signature refuses: a worker
        # process's error would fail to reach its parent.
        return (PairingError, (self.what, self.violations), self.__dict__)


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """What pruning and compaction need to know about one message.

    Attributes:
        kind: ``system``, ``user`` (starts a turn), ``assistant``, ``results`` (carries tool
            results only, or tool results first) or ``other``.
        calls: ``(call_id, tool name)`` of the tool calls it makes (Gemini calls without an id
            have ``None``; :func:`resolve_ids` gives them one).
        results: ``(call_id, tool name, slot)`` of the tool results it carries; ``slot`` is
            the block/part index inside the message (0 for one-result messages).
        summary: A summary written by :mod:`ctxbudget.compact` (its first text starts with
            :data:`SUMMARY_MARKER`).
        reasoning: A Responses ``reasoning`` item (must stay with the rest of its response).
        says: A ``results`` message that carries the user's own text too (Anthropic text
            blocks, Gemini text parts beside the results): how a user's word reaches an agent
            in the middle of its tool steps ("stop, use Rust instead").
        group: The id of a group of Responses items the server ran and that travel together,
            which this item belongs to: a ``program`` and its ``program_output`` (and the
            tool calls it makes, which name it in ``caller``), or a server-executed tool
            search and its output. The client never answers these, so they are no calls
            (a program still running has no output, and that is valid), but a cut must not
            split them.
    """

    kind: Kind
    calls: tuple[tuple[str | None, str], ...] = ()
    results: tuple[tuple[str | None, str | None, int], ...] = ()
    summary: bool = False
    reasoning: bool = False
    group: str | None = None
    says: bool = False


_SYSTEM = MessageInfo("system")
_USER = MessageInfo("user")
_ASSISTANT = MessageInfo("assistant")
_OTHER = MessageInfo("other")
_SUMMARY = MessageInfo("user", summary=True)


def as_mapping(message: Any) -> Mapping[str, Any]:
    """The message as a mapping (:func:`ctxbudget.formats.common.as_mapping`), or TypeError."""
    found = _as_mapping(message)
    if found is None:
        raise TypeError(f"expected a message dict, got {type(message).__name__}")
    return found


def _mappings(items: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """(index, mapping) of the items of a list that read as mappings: dicts, and the block
    objects of the provider SDKs (appended to a history as the response gave them)."""
    if not isinstance(items, list):
        return []
    out = []
    for i, item in enumerate(items):
        found = item if isinstance(item, Mapping) else _as_mapping(item)
        if found is not None:
            out.append((i, found))
    return out


def _is_summary_text(content: Any) -> bool:
    if isinstance(content, str):
        return content.startswith(SUMMARY_MARKER)
    if isinstance(content, list) and content:
        first = content[0]
        if isinstance(first, Mapping):
            text = first.get("text")
            return isinstance(text, str) and text.startswith(SUMMARY_MARKER)
    return False


def first_text(fmt: str, message: Any) -> str:
    """The first text of a message ("" when it has none)."""
    m = as_mapping(message)
    if fmt == "gemini":
        parts = m.get("parts") or []
        text = parts[0].get("text") if parts and isinstance(parts[0], Mapping) else None
        return text if isinstance(text, str) else ""
    content = m.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        text = content[0].get("text")
        return text if isinstance(text, str) else ""
    return ""


def _scan_chat(m: Mapping[str, Any]) -> MessageInfo:
    role = m.get("role")
    if role == "assistant":
        calls = m.get("tool_calls")
        if not calls:
            return _ASSISTANT
        out = []
        for _, call in _mappings(calls):
            fn = _as_mapping(call.get("function") or call.get("custom")) or {}
            out.append((call.get("id"), fn.get("name") or ""))
        return MessageInfo("assistant", calls=tuple(out))
    if role == "tool":
        return MessageInfo("results", results=((m.get("tool_call_id"), None, 0),))
    if role == "user":
        return _SUMMARY if _is_summary_text(m.get("content")) else _USER
    if role in ("system", "developer"):
        return _SYSTEM
    return _OTHER


def _scan_responses(m: Mapping[str, Any]) -> MessageInfo:
    kind = m.get("type")
    if kind is None or kind == "message":
        role = m.get("role")
        if role == "user":
            return _SUMMARY if _is_summary_text(m.get("content")) else _USER
        if role in ("system", "developer"):
            return _SYSTEM
        return _ASSISTANT
    if not isinstance(kind, str):
        return _OTHER
    if kind in _RESPONSES_KINDS:
        return _RESPONSES_KINDS[kind]
    # a local_shell_call_output holds its call's id in "id" (it has no "call_id")
    call_id = m.get("id") if kind == "local_shell_call_output" else m.get("call_id")
    if kind in _SERVER_PAIRS or (kind in _TOOL_SEARCH and m.get("execution") == "server"):
        return MessageInfo("assistant", group=call_id) if call_id is not None else _ASSISTANT
    if kind == "tool_search_output" and call_id is not None:  # client-executed
        return MessageInfo("results", results=((call_id, None, 0),))
    if kind.endswith("_call_output") and call_id is not None:
        return MessageInfo("results", results=((call_id, None, 0),))
    if kind.endswith("_call") and call_id is not None:
        name = "tool_search" if kind == "tool_search_call" else str(m.get("name") or kind)
        return MessageInfo("assistant", calls=((call_id, name),), group=_program_caller(m))
    if kind == "reasoning":
        return MessageInfo("assistant", reasoning=True)
    return _ASSISTANT


#: Responses items of a fixed kind: tool definitions added mid-conversation and response
#: settings stay in effect for the rest of it (compaction keeps them whole, as it does
#: instructions: a summary in their place would drop tools the model may call, or revert
#: the output format), and so does the context a server compaction left (its
#: ``encrypted_content``, which no summarizer can read); a ``compaction_trigger`` is neither
#: input to answer nor the model's.
_RESPONSES_KINDS = {
    "additional_tools": _SYSTEM,
    "configuration_update": _SYSTEM,
    "compaction": _SYSTEM,
    "compaction_trigger": _OTHER,
}
#: Item types the server writes both halves of, paired by ``call_id`` (see
#: :attr:`MessageInfo.group`).
_SERVER_PAIRS = frozenset({"program", "program_output"})
_TOOL_SEARCH = frozenset({"tool_search_call", "tool_search_output"})


def _program_caller(m: Mapping[str, Any]) -> str | None:
    """The call id of the ``program`` that made a tool call (its ``caller``), if one did."""
    caller = m.get("caller")
    found = caller if isinstance(caller, Mapping) else _as_mapping(caller)
    if found is None or found.get("type") != "program":
        return None
    caller_id = found.get("caller_id")
    return caller_id if isinstance(caller_id, str) else None


def _scan_anthropic(m: Mapping[str, Any]) -> MessageInfo:
    role = m.get("role")
    content = m.get("content")
    if role == "assistant":
        if not isinstance(content, list):
            return _ASSISTANT
        calls = tuple(
            (b.get("id"), b.get("name") or "")
            for _, b in _mappings(content)
            if b.get("type") == "tool_use"
        )
        return MessageInfo("assistant", calls=calls) if calls else _ASSISTANT
    if role == "system":
        return _SYSTEM
    if role != "user":
        return _OTHER
    if isinstance(content, list):
        results = tuple(
            (b.get("tool_use_id"), None, i)
            for i, b in _mappings(content)
            if b.get("type") == "tool_result"
        )
        if results:
            says = any(
                b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip()
                for _, b in _mappings(content)
            )
            return MessageInfo("results", results=results, says=says)
    return _SUMMARY if _is_summary_text(content) else _USER


def _gem_get(part: Mapping[str, Any], snake: str, camel: str) -> Any:
    value = part.get(snake)
    return part.get(camel) if value is None else value


def _scan_gemini(m: Mapping[str, Any]) -> MessageInfo:
    role = m.get("role", "user")
    parts = m.get("parts") or []
    if role == "model":
        calls = []
        for _, p in _mappings(parts):
            fc = _gem_get(p, "function_call", "functionCall")
            if isinstance(fc, Mapping):
                calls.append((fc.get("id"), fc.get("name") or ""))
        return MessageInfo("assistant", calls=tuple(calls)) if calls else _ASSISTANT
    results = []
    for i, p in _mappings(parts):
        fr = _gem_get(p, "function_response", "functionResponse")
        if isinstance(fr, Mapping):
            results.append((fr.get("id"), fr.get("name"), i))
    if results:
        says = any(
            isinstance(p.get("text"), str) and p["text"].strip() and not p.get("thought")
            for _, p in _mappings(parts)
        )
        return MessageInfo("results", results=tuple(results), says=says)
    if parts and isinstance(parts[0], Mapping):
        text = parts[0].get("text")
        if isinstance(text, str) and text.startswith(SUMMARY_MARKER):
            return _SUMMARY
    return _USER


_SCANNERS = {
    "openai_chat": _scan_chat,
    "openai_responses": _scan_responses,
    "anthropic": _scan_anthropic,
    "gemini": _scan_gemini,
}
#: Fields whose replacement (a new object) means the message changed, per format: every
#: field its scanner reads (a result's call id edited in place must not leave the pairing
#: checked against the old one).
_CONTENT_KEYS = {
    "openai_chat": ("content", "tool_calls", "role", "tool_call_id"),
    "openai_responses": ("content", "output", "call_id", "type", "role", "name", "id"),
    "anthropic": ("content", "role"),
    "gemini": ("parts", "role"),
}


def content_keys(fmt: str) -> tuple[str, ...]:
    """The fields of a message in ``fmt`` whose replacement means the message changed."""
    return _CONTENT_KEYS[fmt]


def scan_one(message: Any, fmt: str) -> MessageInfo:
    """Read one message's :class:`MessageInfo`."""
    return _SCANNERS[fmt](as_mapping(message))


class ScanCache:
    """Per-message :class:`MessageInfo`, kept across calls for the same message objects.

    A list that starts with the previous call's messages (the same objects, with the same
    content fields) costs only its new messages; otherwise each message is looked up by
    identity. A message is re-read when it is a different object, or when one of its content
    fields (``content``, ``tool_calls``, ``output``, ``parts``) was replaced by a new
    object. Editing a nested list in place is not noticed (as in
    :class:`~ctxbudget.request.RequestEstimator`): pass a new message instead. Not
    thread-safe on its own; its owners serialise access.

    Attributes:
        scans: How many lists it has read.
        prefix: How many leading messages of the last list were the list before it, unchanged
            (the same objects, with the same content fields); 0 when not known.
    """

    __slots__ = (
        "_by_id",
        "_infos",
        "_msgs",
        "_refs",
        "_resolution",
        "_versions",
        "fmt",
        "prefix",
        "scans",
    )

    def __init__(self, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
        self.fmt = fmt
        self._by_id: dict[int, tuple[Any, tuple[Any, ...], MessageInfo]] = {}
        self._msgs: list[Any] = []
        self._refs: list[list[Any]] = []
        self._versions = DictVersions()  # of _msgs, when their fields last matched _refs
        self._infos: list[MessageInfo] = []
        # (scans when made, the resolution of that list's ids: see resolved)
        self._resolution: tuple[int, _Resolution] | None = None
        self.scans = 0
        self.prefix = 0

    def scan(self, messages: Sequence[Any]) -> list[MessageInfo]:
        """Infos of ``messages``, in order; forgets messages no longer present."""
        msgs = list(messages)
        keys = _CONTENT_KEYS[self.fmt]
        k = unchanged_prefix(msgs, self._msgs, self._refs, keys, self._versions)
        self.scans += 1
        self.prefix = k
        if k:
            out = self._infos[:k]
            new = msgs[k:]
        else:
            out = []
            new = msgs
        scanner = _SCANNERS[self.fmt]
        old = self._by_id
        for m in new:
            # a dict, or an SDK object's fields (read once per object, not dumped every turn)
            refs = tuple(map(m.get, keys)) if type(m) is dict else field_refs(m, keys)
            if refs is not None:
                hit = old.get(id(m))
                info = (
                    hit[2]
                    if hit is not None and hit[0] is m and same_value(hit[1], refs)
                    else scanner(m if type(m) is dict else as_mapping(m))
                )
                old[id(m)] = (m, refs, info)
            else:
                info = scanner(as_mapping(m))
            out.append(info)
        if not k and len(old) > 2 * len(msgs) + 64:
            present = set(map(id, msgs))
            self._by_id = {i: v for i, v in old.items() if i in present}
        columns = field_columns(new if k else msgs, keys)
        if columns is not None:
            if k:
                for key_refs, column in zip(self._refs, columns, strict=True):
                    key_refs.extend(column)
            else:
                self._refs = columns
            self._msgs = msgs
            self._infos = list(out)
        else:
            self._msgs, self._refs, self._infos = [], [], []
        return out

    def resolved(self, infos: list[MessageInfo]) -> list[MessageInfo]:
        """:func:`resolve_ids` of ``infos``, what :meth:`scan` just gave: when the list before
        was resolved too, only the messages after the part of it that is unchanged (their
        ids depend only on the messages up to theirs)."""
        kept = self._resolution
        if kept is None or kept[0] != self.scans - 1 or self.prefix != len(kept[1].out):
            resolution = _Resolution()
        else:
            resolution = kept[1]
        resolution.extend(infos)
        self._resolution = (self.scans, resolution)
        return list(resolution.out)


def scan(messages: Sequence[Any], fmt: str) -> list[MessageInfo]:
    """Infos of ``messages`` (no cache)."""
    return ScanCache(fmt).scan(messages)


def resolve_ids(
    infos: Sequence[MessageInfo], *, positions: Sequence[int | None] | None = None
) -> list[MessageInfo]:
    """Give Gemini calls and results without ids the ids :mod:`ctxbudget.messages` gives them.

    A call without an id gets ``ctxb_call_<message>_<part>``. Gemini pairs calls and responses
    turn by turn (the user message right after a model turn answers that turn's calls), so a
    result without an id takes the first unanswered call of the same tool name in the model
    turn just before it (the model messages right before the run of result messages it is
    in); with none, it is an orphan and gets an id of its own. Other formats are returned
    unchanged.

    ``positions[k]``, when given, is the index that message ``k`` had in an earlier version
    of the list (``None`` for a message that is new): made-up ids then name the earlier
    indices, so that a rewrite which moves messages (a summary in place of many) keeps the
    ids of the calls it did not touch, and :func:`check_pairing` can compare both versions.
    """
    if not any(c[0] is None for i in infos for c in i.calls) and not any(
        r[0] is None for i in infos for r in i.results
    ):
        return list(infos)
    resolution = _Resolution()
    resolution.extend(infos, positions)
    return resolution.out


class _Resolution:
    """Where :func:`resolve_ids` is after the first messages of a list: the infos it gave
    them, and the calls of the current model turn not answered yet. The ids of a message
    depend only on the messages up to it, so a list that grew is resolved on from here."""

    __slots__ = ("out", "pending", "previous")

    def __init__(self) -> None:
        self.out: list[MessageInfo] = []
        self.pending: dict[str, list[str]] = {}
        self.previous: Kind | None = None

    def extend(
        self, infos: Sequence[MessageInfo], positions: Sequence[int | None] | None = None
    ) -> None:
        """Resolve ``infos[len(self.out):]`` (``positions`` as for :func:`resolve_ids`)."""
        out, pending, previous = self.out, self.pending, self.previous
        for index in range(len(out), len(infos)):
            info = infos[index]
            # a new model turn, or a message that is neither: earlier calls stay unanswered
            if info.kind not in ("assistant", "results") or (
                info.kind == "assistant" and previous != "assistant"
            ):
                pending = {}
            previous = info.kind
            if not info.calls and not info.results:
                out.append(info)
                continue
            where = index if positions is None else positions[index]
            tag = f"{where}" if where is not None else f"new{index}"
            calls = []
            for j, (cid, name) in enumerate(info.calls):
                call_id = cid if cid is not None else f"{_SYNTH_ID}{tag}_{j}"
                pending.setdefault(name, []).append(call_id)
                calls.append((call_id, name))
            results = []
            for rid, rname, slot in info.results:
                queue = pending.get(rname or "") or []
                if rid is None:
                    rid = queue.pop(0) if queue else f"{_SYNTH_ID}{tag}_{slot}"
                elif rid in queue:
                    queue.remove(rid)
                results.append((rid, rname, slot))
            out.append(replace(info, calls=tuple(calls), results=tuple(results)))
        self.pending, self.previous = pending, previous


def pairing_events(infos: Sequence[MessageInfo]) -> list[tuple[int, int, str]]:
    """``(position, kind, call_id)`` events for :func:`ctxbudget.validate_pairing`."""
    events: list[tuple[int, int, str]] = []
    for pos, info in enumerate(infos):
        for cid, _ in info.calls:
            events.append((pos, 0, cid or ""))
        for rid, _, _ in info.results:
            events.append((pos, 1, rid or ""))
    return events


def check_pairing(before: Sequence[MessageInfo], after: Sequence[MessageInfo], what: str) -> None:
    """Raise :class:`PairingError` if ``after`` has pairing violations ``before`` did not."""
    new = validate_pairing(pairing_events(after))
    if not new:
        return
    old = {(v.kind, v.call_id) for v in validate_pairing(pairing_events(before))}
    introduced = [v for v in new if (v.kind, v.call_id) not in old]
    if introduced:
        raise PairingError(what, introduced)


def turn_starts(infos: Sequence[MessageInfo]) -> list[int]:
    """Indices of the messages that start a turn (user messages that are not tool results)."""
    return [i for i, info in enumerate(infos) if info.kind == "user"]


def safe_cuts(infos: Sequence[MessageInfo]) -> list[bool]:
    """``safe[c]`` for ``c`` in ``0..len``: cutting before message ``c`` splits no pair,
    nor (Responses format) a model response that has a reasoning item, nor a group of items
    the server ran (:attr:`MessageInfo.group`: a program and its output).

    Calls without any result do not constrain the cut (they are already unpaired).
    """
    n = len(infos)
    diff = [0] * (n + 2)
    first_call: dict[str, int] = {}
    last_result: dict[str, int] = {}
    for pos, info in enumerate(infos):
        for cid, _ in info.calls:
            if cid is not None:
                first_call.setdefault(cid, pos)
        for rid, _, _ in info.results:
            if rid is not None:
                last_result[rid] = pos
    _spans(diff, first_call, last_result)
    _spans(diff, *_group_spans(infos))
    safe = [True] * (n + 1)
    depth = 0
    for c in range(n + 1):
        depth += diff[c]
        if depth > 0:
            safe[c] = False
    _keep_responses_whole(infos, safe)
    return safe


def _spans(diff: list[int], first: dict[str, int], last: dict[str, int]) -> None:
    """Count the cuts inside each id's span (after its first message, up to its last) in
    ``diff``, the differences of the number of spans a cut is inside."""
    for key, start in first.items():
        end = last.get(key)
        if end is not None and end > start:
            diff[start + 1] += 1
            diff[end + 1] -= 1


def _group_spans(infos: Sequence[MessageInfo]) -> tuple[dict[str, int], dict[str, int]]:
    """The first and last message of each group of items (:attr:`MessageInfo.group`)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for pos, info in enumerate(infos):
        if info.group is not None:
            first.setdefault(info.group, pos)
            last[info.group] = pos
    return first, last


#: Kinds of the items that are input to the model: a model response ends before them.
_INPUT_KINDS = ("user", "system", "results")


def _keep_responses_whole(infos: Sequence[MessageInfo], safe: list[bool]) -> None:
    """Mark unsafe every cut inside a Responses model response that has a reasoning item.

    The items of one response (``reasoning``, then ``message`` and ``function_call`` items)
    travel together: OpenAI rejects a ``function_call`` or ``message`` sent without its
    response's reasoning item (400 "... was provided without its required 'reasoning'
    item"), and a reasoning item without the item after it. A response ends at the next
    input item (a user, system or developer message, or a tool result), so a cut is unsafe
    from right after a reasoning item up to, not including, the next input item; with none,
    up to the end.
    """
    n = len(infos)
    open_response = False
    for c in range(1, n + 1):
        before = infos[c - 1]
        if before.reasoning:
            open_response = True
        elif before.kind in _INPUT_KINDS:
            open_response = False
        if open_response and (c == n or infos[c].kind not in _INPUT_KINDS):
            safe[c] = False


def result_text(fmt: str, message: Any, slot: int) -> tuple[str, int]:
    """The text of one tool result, and how many non-text parts (images, files) it has."""
    m = as_mapping(message)
    if fmt == "openai_chat":
        return _texts(m.get("content"), ("text",))
    if fmt == "openai_responses":
        if m.get("type") == "shell_call_output":
            return _shell_texts(m.get("output"))
        return _texts(m.get("output"), ("input_text", "output_text", "text"))
    if fmt == "anthropic":
        block = as_mapping(m["content"][slot])
        content = block.get("content")
        if not isinstance(content, list):
            return _texts(content, ("text",))
        texts = [t for b in content if (t := anthropic_block_text(b)) is not None]
        return "\n".join(texts), len(content) - len(texts)
    part = as_mapping(m["parts"][slot])
    fr = _gem_get(part, "function_response", "functionResponse") or {}
    response = fr.get("response")
    if isinstance(response, Mapping) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value, 0
    return json.dumps(response, ensure_ascii=False, default=str), 0


def result_payload(fmt: str, message: Any, slot: int) -> Any:
    """What one tool result holds beside its text, where media would be: a Chat tool
    message's content, a Responses output, an Anthropic ``tool_result``'s content, a Gemini
    function response's ``parts``."""
    m = as_mapping(message)
    if fmt == "openai_chat":
        return m.get("content")
    if fmt == "openai_responses":
        return m.get("output")
    if fmt == "anthropic":
        return as_mapping(m["content"][slot]).get("content")
    part = as_mapping(m["parts"][slot])
    fr = _gem_get(part, "function_response", "functionResponse") or {}
    return fr.get("parts")


def anthropic_block_text(block: Any) -> str | None:
    """The text of a block of an Anthropic tool result, when it is text: a text block, a
    ``search_result`` (retrieval hits: its text blocks), a document of plain text; ``None``
    for the others (an image, a PDF)."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "search_result":
        inner = block.get("content")
        parts = inner if isinstance(inner, list) else []
        texts = [str(p.get("text") or "") for p in parts if isinstance(p, Mapping)]
        return "\n".join(filter(None, [str(block.get("title") or ""), *texts]))
    source = block.get("source")
    if kind == "document" and isinstance(source, Mapping) and source.get("type") == "text":
        return str(source.get("data") or "")
    return None


def _texts(content: Any, text_types: tuple[str, ...]) -> tuple[str, int]:
    """Text of a result's content; "" for content that is not text (a screenshot object)."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return "", 0
    texts: list[str] = []
    other = 0
    for block in content:
        if isinstance(block, Mapping) and block.get("type") in text_types:
            texts.append(str(block.get("text") or ""))
        else:
            other += 1
    return "\n".join(texts), other


def _shell_texts(chunks: Any) -> tuple[str, int]:
    """Text of a ``shell_call_output``: its chunks' stdout and stderr (they have no ``type``,
    unlike content parts; read as parts they would be no text, and never pruned)."""
    texts: list[str] = []
    other = 0
    for chunk in chunks if isinstance(chunks, list) else ():
        found = chunk if isinstance(chunk, Mapping) else _as_mapping(chunk)
        if found is None:
            other += 1
            continue
        texts += [t for t in (found.get("stdout"), found.get("stderr")) if isinstance(t, str) and t]
    return "\n".join(texts), other


def scan_error(messages: Sequence[Any], fmt: str, exc: Exception) -> MessageFormatError:
    """The error for messages the fast scanners could not read.

    The scanners skip validation for speed; when one trips over a malformed message, the full
    validator says which message and field are wrong. Only if it finds nothing is the error
    a general one.
    """
    try:
        validate_messages(messages, fmt)
    except MessageFormatError as precise:
        return precise
    return MessageFormatError(f"malformed message ({exc})", None, "messages", fmt)
