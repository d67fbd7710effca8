"""Tool results moved next to their calls, where a provider requires them there.

Chat Completions refuses a request in which an assistant message's ``tool_calls`` are not
followed at once by the ``tool`` messages answering them ("An assistant message with
'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"); Anthropic
refuses one whose ``tool_use`` blocks are not answered in the very next message ("`tool_use`
ids were found without `tool_result` blocks immediately after"), with the ``tool_result``
blocks first in it; Gemini wants the function responses in the content right after the
model's turn ("function response turn comes immediately after a function call turn"), as
many as its calls. OpenAI's Responses API pairs items by ``call_id`` wherever they are, but
DeepSeek's refuses an item between a call and its output ("No tool output found for tool
call"), and so do gateways that turn the items into Chat messages. Agent loops break that
order without meaning to: a user's note typed while a tool ran is appended before its
result, a late result after the next turn. The provider then refuses every later request of
the conversation alike: the agent is stuck, although every call has its result.

:func:`place_results` moves each such result to where the provider looks for it: a Chat
``tool`` message to the end of the tool messages right after its call (before the note), a
Responses output to the end of the calls and outputs right after its call, an
Anthropic ``tool_result`` block into the user message after the call's turn (first in it),
a Gemini function response into the content of responses after the call's turn (in the
order of the calls). Where no such message follows the turn (a Gemini note, a mid-list
system message), one is added. Nothing is dropped but a message all of whose blocks moved.
Results that cannot be told apart are left where they are for the pairing check to report
(a result before its call, a second result for one call, a result of no call). A Gemini
response without an id answers the first call of its tool in the turn its run of responses
follows, else the first of its tool in the latest turn that has one waiting.

The caller's messages are never modified: a Chat or Responses list is reordered (the
caller's own objects), an Anthropic or Gemini message that gains or loses blocks is a shallow
copy with a new ``content`` or ``parts`` list (of the caller's block objects), the same
object turn after turn while the original and its blocks stay the same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbudget.formats.common import as_mapping
from ctxbudget.messages import FORMATS, detect_format
from ctxbudget.stubs import history_model
from ctxbudget.turns import MessageInfo, ScanCache, scan_error

__all__ = ["MOVED_NOTE", "ResultPlacement", "place_results"]

#: The formats whose results each are a message (or item) of their own.
_WHOLE = ("openai_chat", "openai_responses")
#: The text of the user message that ends a request whose last results moved back before
#: the model's last message.
MOVED_NOTE = (
    "[ctxbudget: tool results that came after your last message are placed above, right after"
    " their calls]"
)
#: Where a message of each format holds its blocks or parts.
_CONTENT_KEY = {"anthropic": "content", "gemini": "parts"}


@dataclass(slots=True)
class _Round:
    """One call: the message holding it, the assistant turn it belongs to, and whether a
    result answered it yet."""

    at: int
    turn: int
    order: int = 0
    answered: bool = False


@dataclass
class _Plan:
    """Where the results of a list sit, read message by message (a list that grew is read
    on from where the last one ended)."""

    fmt: str
    read: int = 0
    #: The latest call of each id.
    rounds: dict[str, _Round] = field(default_factory=dict)
    #: Gemini calls by tool name, in order (for results without an id).
    by_name: dict[str, list[_Round]] = field(default_factory=dict)
    #: The assistant turns: a run of assistant messages is one (Anthropic joins them).
    turn: int = 0
    last_kind: str = ""
    #: Chat: the last message that is not a tool message; Responses: the last item that is
    #: neither a call nor an output.
    anchor: int = -1
    #: Gemini: the turn whose calls the run of result messages the list is in answers.
    run: int | None = None
    #: Gemini: the place of each result's call among all calls, by (message, slot): the
    #: responses a message gains go in the order of their calls.
    orders: dict[tuple[int, int], int] = field(default_factory=dict)
    calls: int = 0
    #: (message, slot, call message) of each result not where its provider wants it.
    moves: list[tuple[int, int, int]] = field(default_factory=list)
    #: Anthropic user messages with a block before their tool results.
    reorder: list[int] = field(default_factory=list)

    def feed(self, i: int, info: MessageInfo) -> None:
        if info.kind == "assistant":
            if self.last_kind != "assistant":
                self.turn += 1
            self.run = self.turn
            for cid, name in info.calls:
                self.calls += 1
                call = _Round(i, self.turn, self.calls)
                if cid is not None:
                    self.rounds[cid] = call
                if self.fmt == "gemini":
                    self.by_name.setdefault(name, []).append(call)
        elif info.kind == "results":
            self._results(i, info)
        else:
            self.run = None
        if info.kind != "results" and not (self.fmt == "openai_responses" and info.calls):
            self.anchor = i
        self.last_kind = info.kind
        self.read = i + 1

    def _results(self, i: int, info: MessageInfo) -> None:
        fmt = self.fmt
        after_turn = self.last_kind == "assistant"
        for rid, name, slot in info.results:
            found = self._call_of(rid, name)
            if found is None:
                continue  # no call, or answered already: the pairing check reports it
            found.answered = True
            if fmt == "gemini":
                self.orders[i, slot] = found.order
            if fmt in _WHOLE:  # among the results (and calls) right after the call
                placed = self.anchor <= found.at
            else:  # in the message right after the call's turn (Gemini: all of the turn's
                # responses in one, as many as its calls)
                placed = after_turn and found.turn == self.turn
            if not placed:
                self.moves.append((i, slot, found.at))
        slots = sorted(slot for _, _, slot in info.results)
        if fmt == "anthropic" and slots != list(range(len(slots))):
            self.reorder.append(i)

    def _call_of(self, rid: str | None, name: str | None) -> _Round | None:
        """The unanswered call a result answers: by its id; a Gemini result without one, the
        first call of its tool in the turn its run of results answers, else the first call of
        its tool in the latest turn that has one waiting (as
        :func:`~ctxbudget.turns.resolve_ids` pairs them once placed)."""
        if rid is not None:
            found = self.rounds.get(rid)
            return found if found is not None and not found.answered else None
        if self.fmt != "gemini":
            return None
        waiting = [c for c in self.by_name.get(name or "", ()) if not c.answered]
        self.by_name[name or ""] = waiting
        if not waiting:
            return None
        # first come, first served within one turn (as Gemini and resolve_ids pair them)
        turn = self.run if any(c.turn == self.run for c in waiting) else waiting[-1].turn
        return next(c for c in waiting if c.turn == turn)


class ResultPlacement:
    """:func:`place_results` for one conversation sent turn after turn: a list that grew is
    read from where the last one ended, and a copy it made is the same object every turn
    while its original and the blocks moved stay the same objects (the caches keyed on
    message objects keep working, and the provider's prompt cache sees the same prefix).
    Not thread-safe: the owner serialises."""

    def __init__(self) -> None:
        self._scans: dict[str, ScanCache] = {}
        self._plan: _Plan | None = None
        # key of a copy (its original's id, or None for an added message, and its blocks'
        # ids) -> (original, blocks, copy)
        self._made: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...], Any]] = {}
        # id(text content) -> (the text, the block it reads as): one block object per text
        self._texts: dict[int, tuple[str, dict[str, Any]]] = {}
        self._notes: dict[str, Any] = {}  # format -> the note of _note

    def invalidate(self) -> None:
        """Forget everything read (after editing a message in place below its fields)."""
        self._scans, self._plan, self._made, self._texts, self._notes = {}, None, {}, {}, {}

    def apply(self, fmt: str, messages: list[Any]) -> list[Any]:
        """``messages`` with each result where its provider wants it; ``messages`` itself
        when every result is there already."""
        scans = self._scans.get(fmt)
        if scans is None:
            scans = self._scans[fmt] = ScanCache(fmt)
        try:
            infos = scans.scan(messages)
            plan = self._plan
            if plan is None or plan.fmt != fmt or scans.prefix < plan.read:
                plan = _Plan(fmt)
            for i in range(plan.read, len(infos)):
                plan.feed(i, infos[i])
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            # runs before validation: an id that is no string (a list is unhashable) or a
            # malformed message is reported as the validator would, naming message and field
            self.invalidate()
            raise scan_error(messages, fmt, exc) from exc
        self._plan = plan
        if not plan.moves and not plan.reorder:
            self._made, self._texts = {}, {}
            return messages
        validate = history_model(messages)
        if fmt in _WHOLE:
            out = _whole_placed(fmt, messages, infos, plan.moves)
        else:
            made: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...], Any]] = {}
            texts: dict[int, tuple[str, dict[str, Any]]] = {}

            def copy(original: Any, blocks: list[Any]) -> Any:
                return self._copy(made, validate, _CONTENT_KEY[fmt], original, blocks)

            def content(m: Any) -> list[Any]:
                return self._content(texts, _CONTENT_KEY[fmt], m)

            out = _blocks_placed(fmt, messages, infos, plan, copy, content)
            self._made, self._texts = made, texts
        if _ends_with_model(out, messages, infos):
            out.append(self._note(fmt, validate))
        return out

    def _note(self, fmt: str, validate: Any) -> Any:
        """The user message that ends a list whose last results moved back before the model's
        last message (a request must not end with the model's words: the model would go on
        from them, and newer Claude models refuse it), the same object every turn."""
        note = self._notes.get(fmt)
        if note is None:
            text: Any = [{"text": MOVED_NOTE}] if fmt == "gemini" else MOVED_NOTE
            made = {"role": "user", _CONTENT_KEY.get(fmt, "content"): text}
            note = self._notes[fmt] = validate(made) if validate is not None else made
        return note

    def _copy(
        self,
        made: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...], Any]],
        validate: Any,
        field: str,
        original: Any,
        blocks: list[Any],
    ) -> Any:
        """``original`` (None: a new user message) with ``blocks`` in its ``field``: the copy
        made before while the original and the blocks are the same objects. In the history's
        message class when it is one (see :func:`~ctxbudget.stubs.history_model`)."""
        key = (None if original is None else id(original), *map(id, blocks))
        hit = self._made.get(key)
        if hit is not None and hit[0] is original and _same(hit[1], blocks):
            copy = hit[2]
        else:
            fields = dict(as_mapping(original) or {}) if original is not None else {}
            copy = {"role": "user", **fields, field: list(blocks)}
            if validate is not None:
                copy = validate(copy)
        made[key] = (original, tuple(blocks), copy)
        return copy

    def _content(
        self, texts: dict[int, tuple[str, dict[str, Any]]], field: str, m: Any
    ) -> list[Any]:
        """A user message's blocks (its ``field``): Anthropic text given as a string is one,
        the same block object every turn."""
        # an SDK object's own blocks (its dump would be copies, new every turn)
        content = m.get(field) if isinstance(m, Mapping) else getattr(m, field, None)
        if isinstance(content, list):
            return list(content)
        if not isinstance(content, str) or not content:
            return []
        hit = self._texts.get(id(content))
        if hit is None or hit[0] is not content:
            hit = (content, {"type": "text", "text": content})
        texts[id(content)] = hit
        return [hit[1]]


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _whole_placed(
    fmt: str, messages: list[Any], infos: list[MessageInfo], moves: list[tuple[int, int, int]]
) -> list[Any]:
    """The Chat or Responses list with each moved result at the end of the results right
    after its call (Responses: of the calls and outputs right after it)."""
    moved = {k for k, _, _ in moves}
    over_calls = fmt == "openai_responses"
    before: dict[int, list[int]] = {}  # index -> the moved messages that go before it
    for k, _, call in moves:
        end = call + 1
        while end < len(infos) and (
            (infos[end].kind == "results" and end not in moved)
            or (over_calls and infos[end].kind == "assistant" and bool(infos[end].calls))
        ):
            end += 1
        before.setdefault(end, []).append(k)
    out: list[Any] = []
    done = 0  # messages[:done] are in out
    for i in sorted(before.keys() | moved):
        out += messages[done:i]
        out += [messages[k] for k in before.get(i, ())]
        done = i + 1 if i in moved else i
    out += messages[done:]
    return out


def _blocks_placed(
    fmt: str,
    messages: list[Any],
    infos: list[MessageInfo],
    plan: _Plan,
    copy: Callable[[Any, list[Any]], Any],
    content: Callable[[Any], list[Any]],
) -> list[Any]:
    """The Anthropic or Gemini list with each moved result block in the user message right
    after its call's turn (Anthropic: any user message, its results first; Gemini: a message
    of responses, else one of their own), and Anthropic's tool results first in every user
    message holding some."""
    takes = ("user", "results") if fmt == "anthropic" else ("results",)
    n = len(messages)
    taken: dict[int, set[int]] = {}  # message -> the slots moved out of it
    # message -> the blocks moved into it (or before it), with where they came from
    into: dict[int, list[tuple[tuple[int, int], Any]]] = {}
    for k, slot, call in plan.moves:
        target = call + 1
        while target < n and infos[target].kind == "assistant":
            target += 1
        taken.setdefault(k, set()).add(slot)
        into.setdefault(target, []).append(((k, slot), content(messages[k])[slot]))
    order = plan.orders if fmt == "gemini" else None
    out: list[Any] = []
    done = 0  # messages[:done] are in out
    for i in sorted(taken.keys() | into.keys() | set(plan.reorder)):
        out += messages[done:i]
        done = i
        gained = into.get(i, [])
        user = i < n and infos[i].kind in takes
        if gained and not user:  # a user message of their own, before the model's
            out.append(copy(None, [b for _, b in _in_call_order(gained, plan, fmt)]))
            gained = []
        if user:  # rebuilt: a message all of whose blocks moved is dropped
            blocks = _placed_blocks(
                content(messages[i]), i, infos[i], taken.get(i, set()), gained, order
            )
            if blocks:
                out.append(copy(messages[i], blocks))
            done = i + 1
    out += messages[done:]
    return out


def _ends_with_model(out: list[Any], messages: list[Any], infos: list[MessageInfo]) -> bool:
    """Whether ``out`` ends with a message that is not the user's where ``messages`` ended
    with the user's (their results moved back before the model's last message)."""
    if not out or not infos or infos[-1].kind not in ("user", "results"):
        return False
    last = out[-1]
    for j in range(len(messages) - 1, -1, -1):
        if messages[j] is last:
            return infos[j].kind not in ("user", "results")
    return False  # a message made here: the user's


def _placed_blocks(
    content: list[Any],
    at: int,
    info: MessageInfo,
    taken: set[int],
    gained: list[tuple[tuple[int, int], Any]],
    orders: dict[tuple[int, int], int] | None,
) -> list[Any]:
    """The blocks of user message ``at`` (``content``): its own tool results left and those
    moved into it (Gemini: in the order of their calls), then the rest of its blocks."""
    results = {slot for _, _, slot in info.results}
    own = [((at, s), b) for s, b in enumerate(content) if s in results and s not in taken]
    placed = [*own, *gained]
    if orders is not None:
        placed.sort(key=lambda item: orders.get(item[0], 0))
    rest = [b for s, b in enumerate(content) if s not in results]
    return [*(b for _, b in placed), *rest]


def _in_call_order(
    blocks: list[tuple[tuple[int, int], Any]], plan: _Plan, fmt: str
) -> list[tuple[tuple[int, int], Any]]:
    """Gemini responses in the order of their calls; other blocks as they came."""
    if fmt != "gemini":
        return blocks
    return sorted(blocks, key=lambda item: plan.orders.get(item[0], 0))


def place_results(messages: Sequence[Any], format: str | None = None) -> list[Any]:
    """``messages`` with each tool result moved next to its call (see the module).

    :class:`~ctxbudget.guard.ContextGuard` does this to every request; call it before
    :func:`~ctxbudget.prune.prune` or a provider call made without the guard.

    Args:
        messages: The conversation, in any format.
        format: Its format; detected when ``None``.

    Returns:
        A new list: moved Chat messages and Responses items are the caller's own objects,
        Anthropic and Gemini
        messages that gained or lost blocks are new (in the history's message class), the
        others the caller's own objects.

    >>> call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
    ...     "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}
    >>> note = {"role": "user", "content": "also check the tests"}
    >>> result = {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    >>> [m["role"] for m in place_results([call, note, result])]
    ['assistant', 'tool', 'user']
    """
    msgs = list(messages)
    fmt = format or detect_format(msgs)
    if fmt not in FORMATS:
        raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
    return ResultPlacement().apply(fmt, msgs)
