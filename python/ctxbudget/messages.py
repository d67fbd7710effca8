"""Conversations in every major provider format: detection, validation, one internal view.

Four wire formats are understood, each as the plain ``dict``/``list`` JSON the provider's SDK
accepts:

- ``"openai_chat"``: OpenAI Chat Completions ``messages`` (``system``/``developer``/``user``/
  ``assistant``/``tool`` roles, ``tool_calls``, content parts with images, audio and files;
  ``reasoning_content`` as DeepSeek, vLLM and LiteLLM send it back).
- ``"openai_responses"``: OpenAI Responses ``input`` items (``message``, ``function_call``,
  ``function_call_output``, ``reasoning``; easy ``{"role", "content"}`` messages too).
- ``"anthropic"``: Anthropic Messages ``messages`` (blocks ``text``, ``image``, ``document``,
  ``tool_use``, ``tool_result``, ``thinking``, ``redacted_thinking``); the system prompt is a
  separate parameter.
- ``"gemini"``: google-genai ``contents`` (parts ``text``, ``inline_data``, ``file_data``,
  ``function_call``, ``function_response``, thoughts), as dicts in snake_case or camelCase, or
  ``google.genai.types.Content`` objects when that package is installed (it is not required).

LangChain message lists go through :func:`from_langchain` / :func:`to_langchain` when
``langchain-core`` is installed.

Everything is read into one internal view (:class:`Message` made of :class:`Part`) and written
back out with :func:`convert_messages`. Conversions are lossless: a field the target format
cannot carry (an Anthropic thinking signature sent to Chat Completions, audio sent to
Anthropic, ...) raises :class:`MessageFormatError` naming the message and field, unless
``strict=False`` asks to drop it. "Same request" is judged the way the provider sees it: a
string ``content`` and a list holding one text part are the same; tool-call arguments keep their
JSON value (a string form is re-serialised with :func:`json.dumps` where the target wants a
string); tool-call ids that Gemini did not give are made up as ``ctxb_call_<n>`` and dropped
again on the way back to Gemini.

>>> msgs = [{"role": "user", "content": "What is 2+2?"}]
>>> detect_format(msgs)
'openai_chat'
>>> out = convert_messages(msgs, "anthropic")
>>> out.messages
[{'role': 'user', 'content': 'What is 2+2?'}]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from ctxbudget.formats.anthropic import _anth_block, _read_anthropic, _write_anthropic
from ctxbudget.formats.common import (
    _genai_to_dict,
    _is_genai_object,
    _Reader,
    _Writer,
    json_text,
)
from ctxbudget.formats.detect import fitting_formats, pick_format
from ctxbudget.formats.gemini import _gemini_ids, _read_gemini, _write_gemini
from ctxbudget.formats.langchain import _is_langchain, _langchain, _plain_openai_dict
from ctxbudget.formats.model import (
    FORMATS,
    ConvertedMessages,
    Message,
    MessageFormat,
    MessageFormatError,
    Part,
    PartKind,
    ToolSpec,
)
from ctxbudget.formats.openai_chat import _CHAT_PART_TYPES, _read_chat, _write_chat
from ctxbudget.formats.openai_responses import _merge_items, _read_responses, _write_responses
from ctxbudget.formats.tools import _read_tools, _write_tools

__all__ = [
    "FORMATS",
    "ConvertedMessages",
    "Message",
    "MessageFormat",
    "MessageFormatError",
    "Part",
    "PartKind",
    "ToolSpec",
    "convert_messages",
    "convert_tools",
    "detect_format",
    "from_langchain",
    "normalize_messages",
    "normalize_tools",
    "to_langchain",
    "validate_messages",
]


_READERS = {
    "openai_chat": _read_chat,
    "openai_responses": _read_responses,
    "anthropic": _read_anthropic,
    "gemini": _read_gemini,
}


def detect_format(messages: Sequence[Any], *, default: str = "openai_chat") -> str:
    """Tell which wire format a message list is in.

    The answer is a format that every message fits. A list that several formats fit alike
    (plain ``{"role", "content": str}`` messages) gets ``default`` when it is one of them,
    else the first that fits of Chat Completions, Anthropic, Responses and Gemini: a list
    with a ``system`` message is never read as Anthropic or Gemini, whatever the default.

    Args:
        messages: The caller's messages (dicts or google-genai ``Content`` objects).
        default: The answer when several formats fit (or the list is empty).

    Returns:
        ``"openai_chat"``, ``"openai_responses"``, ``"anthropic"`` or ``"gemini"``.

    >>> detect_format([{"role": "user", "parts": [{"text": "hi"}]}])
    'gemini'
    >>> detect_format([{"type": "function_call_output", "call_id": "c1", "output": "ok"}])
    'openai_responses'
    >>> detect_format([{"role": "system", "content": "Be brief."}], default="anthropic")
    'openai_chat'
    """
    _check_list(messages, None)
    return pick_format(fitting_formats(messages), default)


def _check_list(messages: object, fmt: str | None) -> None:
    """Reject what is not a list of messages, before anything iterates it.

    A generator or other one-shot iterator would be used up by format detection and then read
    as an empty conversation, so it is refused rather than silently emptied.
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise MessageFormatError(
            f"expected a list of messages, got {type(messages).__name__}", None, "messages", fmt
        )


def _langchain_error(message: Any, index: int, fmt: str) -> MessageFormatError | None:
    """LangChain messages are no wire format: an error that says how to read them, rather
    than the reader's (a dict without a role); ``None`` for any other message."""
    if not _is_langchain(message):
        return None
    return MessageFormatError(
        f"a LangChain {type(message).__name__}: read LangChain messages with "
        "from_langchain() first (estimate_request takes them as they are)",
        index,
        "message",
        fmt,
    )


def refuse_langchain(messages: Sequence[Any]) -> None:
    """Raise :func:`_langchain_error` when a list of messages is LangChain's (its first or
    last message is: each call stays cheap on a long history); for callers that take wire
    formats only (pruning and the guard; compaction's reading of the messages says the same)."""
    for index in {0, len(messages) - 1} if messages else ():
        if isinstance(messages[index], Mapping):  # a dict is read as one, whatever its class
            continue
        error = _langchain_error(messages[index], index, "openai_chat")
        if error is not None:
            raise error


def _check_format(fmt: str | None, messages: Sequence[Any]) -> MessageFormat:
    _check_list(messages, fmt)
    found = detect_format(messages) if fmt is None else fmt
    for known in FORMATS:
        if found == known:
            return known
    raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")


def normalize_messages(messages: Sequence[Any], format: str | None = None) -> tuple[Message, ...]:
    """Read a provider message list into the internal view, validating it.

    Args:
        messages: The caller's messages, in one of :data:`FORMATS` (or google-genai
            ``Content`` objects).
        format: The format; detected when ``None``.

    Returns:
        One :class:`Message` per input message (Responses items included).

    Raises:
        MessageFormatError: A malformed message; the error names its index and field.

    >>> [m.role for m in normalize_messages([{"role": "model", "parts": [{"text": "hi"}]}])]
    ['assistant']
    """
    fmt = _check_format(format, messages)
    read = _READERS[fmt]
    out = tuple(_read_one(read, m, i, fmt) for i, m in enumerate(messages))
    return _gemini_ids(out) if fmt == "gemini" else out


def _read_one(read: Callable[[Any, int], Message], message: Any, index: int, fmt: str) -> Message:
    try:
        return read(message, index)
    except MessageFormatError as exc:
        better = _langchain_error(message, index, fmt)
        if better is None:
            raise
        raise better from exc


def validate_messages(messages: Sequence[Any], format: str | None = None) -> str:
    """Check every message against its format; return the format.

    Beyond each message's own shape this checks tool-call ids: every tool result must answer
    a tool call made earlier (see :func:`ctxbudget.validate_pairing` for the full pairing
    rules).

    Raises:
        MessageFormatError: The first problem, naming the message index and field.

    >>> validate_messages([{"role": "user", "content": "hi"}])
    'openai_chat'
    >>> validate_messages([{"role": "robot", "content": "hi"}])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ctxbudget.messages.MessageFormatError: message 0, field 'role': expected one of [...]...
    """
    fmt = _check_format(format, messages)
    normalized = normalize_messages(messages, fmt)
    seen: set[str] = set()
    for index, message in enumerate(normalized):
        for j, part in enumerate(message.parts):
            if part.kind == "tool_call" and part.call_id:
                seen.add(part.call_id)
            elif part.kind == "tool_result" and part.call_id and part.call_id not in seen:
                raise MessageFormatError(
                    f"tool result {part.call_id!r} answers no earlier tool call",
                    index,
                    _result_field(fmt, j),
                    fmt,
                )
    return fmt


def _result_field(fmt: str, j: int) -> str:
    return {
        "openai_chat": "tool_call_id",
        "openai_responses": "call_id",
        "anthropic": f"content[{j}].tool_use_id",
        "gemini": f"parts[{j}].function_response.id",
    }[fmt]


def convert_messages(
    messages: Sequence[Any] | Sequence[Message],
    to: str,
    *,
    source: str | None = None,
    system: Any = None,
    strict: bool = True,
) -> ConvertedMessages:
    """Write a conversation in another provider's format (or the same one).

    Args:
        messages: The messages, in any of :data:`FORMATS`, or already-normalized
            :class:`Message` objects.
        to: Target format.
        source: The source format; detected when ``None``.
        system: A system prompt kept outside the messages (Anthropic ``system``: a string or
            text blocks; Gemini ``system_instruction``: a string or a content dict). It is put
            where the target wants it: a leading system message for the OpenAI formats.
        strict: Raise :class:`MessageFormatError` when something cannot be written without
            loss (the default); ``False`` drops it instead.

    Returns:
        The converted messages, and the system prompt when the target keeps it apart.

    >>> chat = [
    ...     {"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "List files"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ... ]
    >>> out = convert_messages(chat, "anthropic")
    >>> out.system, out.messages[1]["content"][0]["input"], out.messages[2]["content"][0]["type"]
    ('Be brief.', {'command': 'ls'}, 'tool_result')
    >>> convert_messages(out.messages, "openai_chat", system=out.system).messages == chat
    True
    """
    if to not in FORMATS:
        raise ValueError(f"unknown message format {to!r}; expected one of {FORMATS}")
    _check_list(messages, source)
    if messages and all(isinstance(m, Message) for m in messages):
        normalized = list(cast(Sequence[Message], messages))
    else:
        normalized = list(normalize_messages(messages, source))
    if to != "openai_responses" and any(m.provider == "openai_responses" for m in normalized):
        normalized = _merge_items(normalized)
    sys_messages = _system_messages(system)
    normalized = sys_messages + normalized
    w = _Writer(to, strict, len(sys_messages))
    if to == "openai_chat":
        return ConvertedMessages("openai_chat", _write_chat(normalized, w))
    if to == "openai_responses":
        return ConvertedMessages("openai_responses", _write_responses(normalized, w))
    if to == "anthropic":
        out, sys_out = _write_anthropic(normalized, w)
        return ConvertedMessages("anthropic", out, sys_out)
    out, sys_out = _write_gemini(normalized, w)
    return ConvertedMessages("gemini", out, sys_out)


def _system_messages(system: Any) -> list[Message]:
    if system is None:
        return []
    if isinstance(system, str):
        return [Message("system", (Part("text", text=system),), style="str")]
    try:
        if _is_genai_object(system) or (isinstance(system, Mapping) and "parts" in system):
            content = _read_gemini(_genai_to_dict(system), 0)
            return [Message("system", content.parts, style="list", provider="gemini")]
        if isinstance(system, list):
            r = _Reader("anthropic", 0)
            parts = tuple(_anth_block(r, b, f"system[{i}]") for i, b in enumerate(system))
            return [Message("system", parts, style="list", provider="anthropic")]
    except MessageFormatError as e:
        # Read as message 0 of its format; it is the request's system prompt.
        field = e.field if e.field.startswith("system") else f"system.{e.field}"
        raise MessageFormatError(e.reason, None, field, e.format) from None
    raise MessageFormatError(
        f"expected a string, text blocks or a content, got {type(system).__name__}",
        None,
        "system",
        None,
    )


def normalize_tools(tools: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """Read tool definitions in any provider's shape.

    Accepted: Chat Completions ``{"type": "function", "function": {...}}``, Responses
    ``{"type": "function", "name", "parameters"}``, Anthropic ``{"name", "input_schema"}``,
    Gemini ``{"function_declarations": [...]}`` (or ``types.Tool`` objects), and provider
    built-in tools (kept whole, ``parameters=None``).

    Raises:
        MessageFormatError: A tool that fits no shape (``index`` is the tool's position).

    >>> normalize_tools([{"name": "bash", "input_schema": {"type": "object"}}])[0].name
    'bash'
    """
    return _read_tools(tools)


def convert_tools(tools: Sequence[Any], to: str) -> list[Any]:
    """Write function tools in a provider's schema shape.

    Built-in tools of a provider (web search, code execution, ...) cannot move to another
    provider and raise :class:`MessageFormatError`.

    >>> tools = [{"name": "bash", "description": "Run", "input_schema": {"type": "object"}}]
    >>> convert_tools(tools, "openai_chat")  # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'function',
      'function': {'name': 'bash', 'description': 'Run', 'parameters': {'type': 'object'}}}]
    """
    return _write_tools(tools, to)


def from_langchain(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """LangChain ``BaseMessage`` objects → OpenAI Chat Completions dicts.

    Uses ``langchain_core.messages.convert_to_openai_messages`` (plain messages, string
    content of the four common classes, are written the same way without it, which is about
    ten times faster), and adds what it leaves out: an AI message's invalid tool calls (as
    tool calls with their raw arguments, as ``langchain-openai`` sends them) and its reasoning
    (Anthropic ``thinking``, ``reasoning`` blocks, ``additional_kwargs["reasoning_content"]``)
    as ``reasoning_content``; tool-call blocks of LangChain v1 content, which repeat the
    message's tool calls, are left out of the content. Blocks Chat Completions has no part for
    (a server tool's call or result, ...) are kept as given: :func:`convert_messages` refuses
    them. Needs ``langchain-core``.

    >>> from langchain_core.messages import HumanMessage  # doctest: +SKIP
    >>> from_langchain([HumanMessage("hi")])  # doctest: +SKIP
    [{'role': 'user', 'content': 'hi'}]
    """
    lc = _langchain()
    converted: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        try:
            converted.extend(_langchain_chat(message, lc))
        except Exception as exc:
            if isinstance(exc, ValueError | TypeError):
                # LangChain names the message by its index in the list it was given: give
                # it the whole list, so that its error names the right one.
                lc.convert_to_openai_messages(list(messages))
                raise
            # not an error of LangChain's about the message (a KeyError from a content block
            # it took without a type): say which message
            raise MessageFormatError(
                f"LangChain could not convert it ({type(exc).__name__}: {exc})",
                index,
                "content",
                "openai_chat",
            ) from exc
    return converted


def _langchain_one(message: Any, lc: Any) -> list[dict[str, Any]]:
    """One LangChain message (or a dict) as the Chat Completions dicts a request estimate
    walks; ``lc`` is ``langchain_core.messages``.

    As :func:`from_langchain` writes it, except for the blocks with no Chat Completions part,
    which the Chat reader would refuse, failing the whole estimate: an Anthropic document
    becomes a Chat file (base64) or text (plain text source), any other block a text part
    holding its JSON, which is about what it costs when sent to the provider.
    """
    written = _langchain_chat(message, lc)
    for m in written:
        content = m.get("content")
        if isinstance(content, list) and any(_foreign(p) for p in content):
            m["content"] = [_chat_part_of(p) if _foreign(p) else p for p in content]
    return written


def _langchain_chat(message: Any, lc: Any) -> list[dict[str, Any]]:
    """One LangChain message (or a dict) as Chat Completions dicts (see
    :func:`from_langchain`): a plain one written directly, any other through LangChain's
    converter."""
    plain = _plain_openai_dict(message, lc)
    if plain is not None:
        return [plain]
    written = cast(list[dict[str, Any]], lc.convert_to_openai_messages([message]))
    for m in written:
        if m.get("role") == "assistant":
            _add_invalid_calls(m, message)
            _call_blocks_to_calls(m)
            _thinking_to_reasoning(m)
            _kwargs_reasoning(m, message)
    return written


def _foreign(part: object) -> bool:
    return not isinstance(part, Mapping) or part.get("type") not in _CHAT_PART_TYPES


def _chat_part_of(block: Any) -> dict[str, Any]:
    """A content block with no Chat Completions part, as the Chat part that costs the same."""
    source = block.get("source") if isinstance(block, Mapping) else None
    if isinstance(source, Mapping) and block.get("type") == "document":
        data, media = source.get("data"), source.get("media_type")
        if source.get("type") == "base64" and isinstance(data, str) and isinstance(media, str):
            return {"type": "file", "file": {"file_data": f"data:{media};base64,{data}"}}
        if source.get("type") == "text" and isinstance(data, str):
            return {"type": "text", "text": data}
    return {"type": "text", "text": json.dumps(block, ensure_ascii=False, default=str)}


def _raw_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A Chat Completions tool call whose arguments are sent as the string they are."""
    args = arguments if isinstance(arguments, str) else _json_args(arguments)
    return {"type": "function", "id": call_id, "function": {"name": name or "", "arguments": args}}


def _json_args(arguments: Any) -> str:
    return "" if arguments is None else json_text(arguments)


def _add_invalid_calls(message: dict[str, Any], source: Any) -> None:
    """An AI message's invalid tool calls (arguments that are no JSON object: a reply cut off
    mid-call, say), which LangChain's converter drops: ``langchain-openai`` sends them as tool
    calls with their raw arguments, and the tool messages answering them need their ids."""
    invalid = getattr(source, "invalid_tool_calls", None) or []
    calls = [_raw_call(c.get("id"), c.get("name"), c.get("args")) for c in invalid]
    if calls:
        message["tool_calls"] = [*message.get("tool_calls", []), *calls]


#: LangChain v1 content blocks holding a tool call (as the message's own fields do).
_CALL_BLOCKS = ("tool_call", "invalid_tool_call", "tool_call_chunk")


def _call_blocks_to_calls(message: dict[str, Any]) -> None:
    """Takes LangChain v1 tool-call blocks out of an assistant message's content (no Chat
    Completions part): a call the message's ``tool_calls`` already hold is dropped, any other
    added to them. ``message`` is a fresh dict of the conversion."""
    content = message.get("content")
    if not isinstance(content, list):
        return
    blocks = [p for p in content if isinstance(p, Mapping) and p.get("type") in _CALL_BLOCKS]
    if not blocks:
        return
    message["content"] = [p for p in content if not any(p is b for b in blocks)]
    calls = list(message.get("tool_calls", []))
    known = {c.get("id") for c in calls}
    for b in blocks:
        if b.get("id") is None or b.get("id") not in known:
            calls.append(_raw_call(b.get("id"), b.get("name"), b.get("args")))
            known.add(b.get("id"))
    if calls:
        message["tool_calls"] = calls


def _thinking_to_reasoning(message: dict[str, Any]) -> None:
    """Moves the reasoning blocks LangChain leaves in a converted assistant message's content
    (Chat Completions has no such part: Anthropic ``thinking``, v1 ``reasoning`` and the
    Responses API's ``reasoning`` with its summary) into its ``reasoning_content``; redacted
    thinking carries no text and is dropped. ``message`` is a fresh dict of the conversion."""
    content = message.get("content")
    if not isinstance(content, list) or message.get("role") != "assistant":
        return
    kinds = ("thinking", "redacted_thinking", "reasoning")
    thinking = [p for p in content if isinstance(p, Mapping) and p.get("type") in kinds]
    if not thinking:
        return
    message["content"] = [p for p in content if not any(p is t for t in thinking)]
    texts = [text for t in thinking for text in _reasoning_texts(t)]
    if texts:
        message["reasoning_content"] = "\n".join(texts)


def _reasoning_texts(block: Mapping[str, Any]) -> list[str]:
    text = block.get("thinking", block.get("reasoning"))
    if isinstance(text, str):
        return [text]
    summary = block.get("summary")
    if not isinstance(summary, list):
        return []
    return [s["text"] for s in summary if isinstance(s, Mapping) and isinstance(s.get("text"), str)]


def _kwargs_reasoning(message: dict[str, Any], source: Any) -> None:
    """An AI message's ``additional_kwargs["reasoning_content"]`` (where ``to_langchain`` and
    DeepSeek's integration keep it), which LangChain's converter drops, when its content held
    no reasoning."""
    extra = getattr(source, "additional_kwargs", None) or {}
    text = extra.get("reasoning_content")
    if isinstance(text, str) and "reasoning_content" not in message:
        message["reasoning_content"] = text


def to_langchain(
    messages: Sequence[Any], format: str | None = None, *, strict: bool = False
) -> list[Any]:
    """Any supported format → LangChain ``BaseMessage`` objects (via Chat Completions dicts).

    A tool result's error flag (Anthropic ``is_error``) becomes the ``ToolMessage``'s
    ``status="error"``, and tool-call arguments that are no JSON object (a reply cut off
    mid-call) an ``invalid_tool_calls`` entry, as LangChain's own parsers write them. Fields
    Chat Completions has no place for (an Anthropic ``cache_control``, a thinking signature)
    are dropped, as LangChain's own converters drop them; ``strict=True`` raises
    :class:`MessageFormatError` for them instead (see :func:`convert_messages`).
    """
    lc = _langchain()
    _check_list(messages, format)
    if messages and all(isinstance(m, Message) for m in messages):
        normalized = list(cast(Sequence[Message], messages))
    else:
        normalized = list(normalize_messages(messages, format))
    failed = {
        p.call_id
        for m in normalized
        for p in m.parts
        if p.kind == "tool_result" and p.is_error and p.call_id
    }
    if failed:  # carried as the status below, so no loss for the writer to refuse
        normalized = [_without_error_flags(m) for m in normalized]
    chat = convert_messages(normalized, "openai_chat", strict=strict).messages
    return [_langchain_message(m, lc, failed) for m in chat]


def _without_error_flags(message: Message) -> Message:
    parts = tuple(replace(p, is_error=False) if p.is_error else p for p in message.parts)
    return replace(message, parts=parts)


def _langchain_message(chat: dict[str, Any], lc: Any, failed: set[str]) -> Any:
    """One Chat Completions dict as a LangChain message (``lc`` is
    ``langchain_core.messages``); ``failed``: the ids of tool calls whose result is an error.

    LangChain's ``convert_to_messages`` raises on tool-call arguments that are no JSON object;
    those calls become the AI message's ``invalid_tool_calls`` instead.
    """
    if chat.get("role") == "tool" and chat.get("tool_call_id") in failed:
        chat = {**chat, "status": "error"}
    calls = chat.get("tool_calls") if chat.get("role") == "assistant" else None
    invalid = [c for c in calls or [] if _invalid_call(c)]
    if not invalid:
        return lc.convert_to_messages([chat])[0]
    valid = [c for c in calls or [] if not any(c is i for i in invalid)]
    message = lc.convert_to_messages([{**chat, "tool_calls": valid}])[0]
    message.invalid_tool_calls = [
        {
            "type": "invalid_tool_call",
            "name": c["function"].get("name"),
            "args": c["function"]["arguments"],
            "id": c.get("id"),
            "error": "arguments are not a JSON object",
        }
        for c in invalid
    ]
    return message


def _invalid_call(call: Any) -> bool:
    """A Chat tool call whose arguments LangChain cannot read into a tool call's ``args``."""
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("arguments"), str):
        return False
    try:
        return not isinstance(json.loads(fn["arguments"], strict=False), dict)
    except ValueError:
        return True
