"""What one message of a request counts, before the framing profile weighs it: its text,
tool-call arguments and names, calls, attachments (see :mod:`ctxbudget.request`). Also the
counter a request is counted with, and what tells a value from the one counted before.
"""

from __future__ import annotations

import copy
import json
import operator
import os
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from ctxbudget._core import same_value
from ctxbudget.counting import Accuracy, TokenCounter, counter_for
from ctxbudget.embedded_media import split_media
from ctxbudget.formats.common import _json_problem, json_text, public_fields, shown
from ctxbudget.media import media_tokens
from ctxbudget.messages import Message, MessageFormatError, Part

Counter = Callable[[str], int]


def _as_counter(counter: Any) -> tuple[Counter, bool]:
    """(count function, exact) from a ``TokenCounter``, a ``tiktoken.Encoding``, a
    ``tokenizers.Tokenizer`` or any ``Callable[[str], int]``.

    A ``TokenCounter`` says itself whether it is exact; a plain callable is taken as exact
    unless it has ``exact = False``; a tokenizer is wrapped as
    :func:`~ctxbudget.counting.counter_for` wraps it (exact). Every count is checked as a
    ``TokenCounter`` checks it: a callable that returns the tokens instead of their number, a
    float, a bool or a negative number is refused by name, not added into the totals.
    """
    if isinstance(counter, str | os.PathLike) or type(counter).__module__.startswith(
        ("tiktoken", "tokenizers")
    ):
        # an encoding or model name, a tokenizer.json: what counter_for makes of it (a name
        # had its str.count taken for a counter, and every text counted 0)
        counter = counter_for(counter)
    if isinstance(counter, TokenCounter):
        return counter.tokens, counter.accuracy is Accuracy.EXACT
    accuracy = getattr(counter, "accuracy", None)
    if accuracy is not None:
        exact = getattr(accuracy, "value", accuracy) == "exact"
    else:
        exact = bool(getattr(counter, "exact", True))
    label = Accuracy.EXACT if exact else Accuracy.ESTIMATE
    name = str(getattr(counter, "__name__", None) or type(counter).__name__)
    if callable(counter):
        return TokenCounter(counter, label, name).tokens, exact
    # an object with a count(text) method; not a container's count(item)
    containers = (bytes, bytearray, Sequence, Set, Mapping)
    count = None if isinstance(counter, containers) else getattr(counter, "count", None)
    if count is None:
        raise TypeError(
            "counter must be a TokenCounter, a callable, a tokenizer or an encoding, model"
            f" or tokenizer.json name, not {type(counter).__name__}"
        )

    def count_tokens(text: str) -> Any:
        value = count(text)
        return getattr(value, "tokens", value)  # a TokenCount-like result: its number

    return TokenCounter(count_tokens, label, name).tokens, exact


#: Raw counts of one message, before profile factors:
#: (system, text, args, calls, named, attachments, attachments exact).
_Counted = tuple[bool, int, int, int, bool, int, bool]
#: One message weighed by the profile: (system, body, framing, attachments, total, exact).
_Weighed = tuple[bool, float, float, int, int, bool]

_CHAT_KNOWN_PART = frozenset({"text", "refusal"})
_FAST_KEYS: dict[str, tuple[str, ...]] = {
    "openai_chat": (
        "content", "tool_calls", "reasoning_content", "role", "name", "function_call",
        "tool_call_id", "refusal",
    ),
    "openai_responses": (
        "content", "arguments", "output", "summary", "type", "role", "name", "call_id", "input",
    ),
    "anthropic": ("content", "role"),
    "gemini": ("parts", "role"),
}  # fmt: skip


#: Chat Completions roles (``function``: the result of a legacy ``function_call``).
_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _call_fields(call: Any, index: int, path: str) -> tuple[str, str]:
    """Arguments and name of a Chat Completions call ``{"function": {"name", "arguments"}}``."""
    try:
        fn = call["function"] if isinstance(call, Mapping) else None
        a, name = fn["arguments"], fn["name"]  # type: ignore[index]
        if type(a) is not str or type(name) is not str:
            raise TypeError
    except (TypeError, KeyError, IndexError):
        field = f"{path}.function" if path else "function_call"
        raise MessageFormatError(
            "expected {'name': str, 'arguments': str}", index, field, "openai_chat"
        ) from None
    return a, name


def _count_chat_fast(m: Any, index: int, count: Counter, rule: str) -> _Counted | None:
    """Chat Completions dict with string content: count without building the view."""
    if type(m) is not dict:
        return None
    content = m.get("content")
    role = m.get("role")
    if type(role) is not str or role not in _CHAT_ROLES:
        raise MessageFormatError(f"unknown role {shown(role)}", index, "role", "openai_chat")
    if content is None:
        text = 0
    elif type(content) is str:
        text = count(content) if content else 0
    else:
        return None
    name = m.get("name")
    named = name is not None  # None, as a dump of an SDK object writes it: no name
    if named:
        if type(name) is not str:
            return None  # the reader says what is wrong with it
        text += count(name) if name else 0
    args = calls = 0
    if role == "assistant":
        reasoning = m.get("reasoning_content")
        if reasoning:
            if type(reasoning) is not str:
                raise MessageFormatError(
                    "expected a string", index, "reasoning_content", "openai_chat"
                )
            text += count(reasoning)
        refusal = m.get("refusal")  # an assistant's refusal, sent back as it came
        if refusal is not None:
            if not isinstance(refusal, str):
                raise MessageFormatError("expected a string", index, "refusal", "openai_chat")
            text += count(refusal) if refusal else 0
        tool_calls = m.get("tool_calls")
        if tool_calls:
            if type(tool_calls) is not list:
                raise MessageFormatError("expected a list", index, "tool_calls", "openai_chat")
            for j, call in enumerate(tool_calls):
                if type(call) is dict and call.get("type") == "custom":
                    return None  # a custom tool call (free-form input): the reader takes it
                a, name = _call_fields(call, index, f"tool_calls[{j}]")
                if type(call.get("id")) is not str:
                    raise MessageFormatError(
                        "missing or not a string", index, f"tool_calls[{j}].id", "openai_chat"
                    )
                args += count(a) + count(name)
            calls = len(tool_calls)
        legacy = m.get("function_call")  # the call field before tool_calls
        if legacy:
            a, name = _call_fields({"function": legacy}, index, "")
            args += count(a) + count(name)
            calls += 1
    elif role == "tool" and type(m.get("tool_call_id")) is not str:
        raise MessageFormatError("missing or not a string", index, "tool_call_id", "openai_chat")
    return (role in ("system", "developer"), text, args, calls, named, 0, True)


def _count_parts(
    parts: Sequence[Part], count: Counter, rule: str
) -> tuple[int, int, int, int, bool]:
    text = args = calls = attach = 0
    exact = True
    for p in parts:
        kind = p.kind
        if kind == "text" or kind == "reasoning":
            if p.text:
                text += count(p.text)
        elif kind == "tool_call":
            calls += 1
            raw = p.raw_arguments
            if raw is None:
                raw = json_text(p.arguments) if p.arguments else ""
            args += (count(raw) if raw else 0) + (count(p.name) if p.name else 0)
        elif kind == "tool_result":
            t, a, _, at, ex = _count_parts(p.content, count, rule)
            text += t + a
            attach += at
            exact = exact and ex
            # a Gemini function response's media (FunctionResponse.parts), kept as they came
            fr = p.extra.get("_fr") if p.provider == "gemini" else None
            for found in split_media(fr.get("parts"))[1] if isinstance(fr, Mapping) else ():
                tokens, ex = media_tokens(found, rule, count)
                attach += tokens
                exact = exact and ex
        elif kind == "other":
            extra = public_fields(p.extra)
            if extra:
                problem = _json_problem(extra, strict=False)  # too deep, no UTF-8 form
                if problem is not None:
                    raise MessageFormatError(problem[1], None, problem[0] or "content", None)
                # an image or a document inside (a screenshot, a fetched PDF) costs what
                # one does, not the tokens of its base64 text
                shown, media = split_media(extra)
                text += count(json.dumps(shown, ensure_ascii=False, default=str))
                for found in media:
                    tokens, ex = media_tokens(found, rule, count)
                    attach += tokens
                    exact = exact and ex
        else:
            tokens, ex = media_tokens(p, rule, count)
            attach += tokens
            exact = exact and ex
    return text, args, calls, attach, exact


def _count_message(message: Message, count: Counter, rule: str) -> _Counted:
    text, args, calls, attach, exact = _count_parts(message.parts, count, rule)
    if message.name:  # a participant name is sent as text (and framed: ``per_name``)
        text += count(message.name)
    chat = message.provider == "openai_chat"
    refusal = message.extra.get("refusal") if chat and message.role == "assistant" else None
    if isinstance(refusal, str) and refusal:  # an assistant's refusal, sent back as it came
        text += count(refusal)
    legacy = message.extra.get("function_call") if chat else None
    if isinstance(legacy, Mapping):  # the call field before tool_calls
        calls += 1
        for key in ("arguments", "name"):
            value = legacy.get(key)
            args += count(value) if isinstance(value, str) and value else 0
    return (
        message.role in ("system", "developer"),
        text,
        args,
        calls,
        message.name is not None,
        attach,
        exact,
    )


def _surrogate_field(value: Any, path: str = "") -> str:
    """Path of the first string in a message that has no UTF-8 form ("" when none is found)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "content"
        return ""
    if isinstance(value, Mapping):
        for k, v in value.items():
            # A key without a UTF-8 form is named escaped: the error must be printable.
            name = k.encode("utf-8", "backslashreplace").decode() if isinstance(k, str) else k
            p = f"{path}.{name}" if path else str(name)
            key = _surrogate_field(k, p) if isinstance(k, str) else ""
            if found := key or _surrogate_field(v, p):
                return found
        return ""
    if isinstance(value, list | tuple):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
        return next((f for p, v in items if (f := _surrogate_field(v, p))), "")
    return ""


#: What a value that could not be copied is compared with: only itself.
_UNCOPIED: Any = object()


def _snapshot(value: Any) -> Any:
    """A deep copy of a system prompt or tools list, to tell later whether it changed (edits in
    place included); :data:`_UNCOPIED` for what cannot be copied."""
    try:
        return copy.deepcopy(value)
    except Exception:  # anything uncopyable is compared by identity instead
        return _UNCOPIED


def _unchanged(value: Any, ref: Any, snapshot: Any) -> bool:
    """Whether ``value`` is what was counted: the same as its snapshot (equal, with the same
    types throughout: ``1 == 1.0``, but their JSON differs), or the very object when it could
    not be copied."""
    if snapshot is _UNCOPIED:
        return value is ref
    try:
        return same_value(value, snapshot)
    except Exception:  # a value that cannot be compared counts as changed
        return False


def _same_refs(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))
