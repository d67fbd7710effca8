"""Anthropic Messages ``messages``, read into the internal view and written back.

Blocks ``text``, ``image``, ``document``, ``tool_use``, ``tool_result``, ``thinking`` and
``redacted_thinking``; the other block types of the API (server tools and their results, MCP
connector calls and results, ...: :data:`_ANTH_BLOCK_TYPES`) are kept whole. The system prompt
is a separate parameter, returned beside the messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxbudget.formats.common import (
    _args_object,
    _as_b64,
    _call_id,
    _check_json,
    _extra,
    _message_loss,
    _read_content,
    _Reader,
    _rest,
    _same,
    _signature,
    _url_kind,
    _Writer,
    shown,
)
from ctxbudget.formats.model import Message, Part, PartKind

#: Block types kept whole (an ``other`` part, estimated as their JSON text, written back only
#: to Anthropic), beside the ones read into the view. Server tools run inside one assistant
#: turn: a ``server_tool_use``/``mcp_tool_use`` and its result block sit in the same assistant
#: message, so they are not tool calls and results of the view, which pairs a call with a
#: result in a later message.
_ANTH_BLOCK_TYPES = frozenset(
    {
        "tool_use",
        "tool_result",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "search_result",
        "container_upload",
        # server tools, and their results
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        # MCP connector (beta)
        "mcp_tool_use",
        "mcp_tool_result",
        "mcp_tool_listing",
        # context management and tool changes (beta)
        "compaction",
        "fallback",
        "tool_addition",
        "tool_removal",
        # inside a tool_result's content
        "tool_reference",
        "browser_state",
    }
)


# --------------------------------------------------------------------------- reading


def _anth_source(r: _Reader, block: Mapping[str, Any], path: str, kind: PartKind) -> Part:
    source = r.mapping(block.get("source"), f"{path}.source")
    stype = source.get("type")
    # A document's title is its name (a Chat or Responses file's ``filename``).
    title = block.get("title") if kind == "document" else None
    name = title if isinstance(title, str) else None
    extra = _rest(block, ("type", "source", "title") if name is not None else ("type", "source"))
    if stype == "base64":
        return Part(
            kind,
            media_type=r.str_(source, "media_type", f"{path}.source."),
            data=r.str_(source, "data", f"{path}.source."),
            name=name,
            provider="anthropic",
            extra=extra,
        )
    if stype == "url":
        return Part(
            kind,
            url=r.str_(source, "url", f"{path}.source."),
            name=name,
            provider="anthropic",
            extra=extra,
        )
    if stype == "text" and kind == "document":
        return Part(
            "document",
            text=r.str_(source, "data", f"{path}.source."),
            media_type=source.get("media_type", "text/plain"),
            name=name,
            provider="anthropic",
            extra=extra,
        )
    if stype == "file":
        return Part(
            kind,
            url=r.str_(source, "file_id", f"{path}.source."),
            name=name,
            provider="anthropic",
            extra=extra | {"_file": True},
        )
    return Part("other", provider="anthropic", extra=dict(block))


def _anth_block(r: _Reader, raw: object, path: str) -> Part:
    block = r.mapping(raw, path)
    kind = block.get("type")
    if kind == "text":
        return Part(
            "text",
            text=r.str_(block, "text", f"{path}."),
            provider="anthropic",
            extra=_rest(block, ("type", "text")),
        )
    if kind == "image":
        return _anth_source(r, block, path, "image")
    if kind == "document":
        return _anth_source(r, block, path, "document")
    if kind == "tool_use":
        return Part(
            "tool_call",
            call_id=r.str_(block, "id", f"{path}."),
            name=r.str_(block, "name", f"{path}."),
            arguments=_check_json(
                r, r.mapping(block.get("input"), f"{path}.input"), f"{path}.input"
            ),
            provider="anthropic",
            extra=_rest(block, ("type", "id", "name", "input")),
        )
    if kind == "tool_result":
        content = block.get("content")
        if content is None:
            inner: tuple[Part, ...] = ()
            style = "absent" if "content" not in block else "none"
        else:
            inner, style = _read_content(r, content, f"{path}.content", _anth_block)
        return Part(
            "tool_result",
            call_id=r.str_(block, "tool_use_id", f"{path}."),
            content=inner,
            is_error=bool(block.get("is_error", False)),
            provider="anthropic",
            extra=_rest(block, ("type", "tool_use_id", "content", "is_error"))
            | {"_style": style, "_has_is_error": "is_error" in block},
        )
    if kind == "thinking":
        return Part(
            "reasoning",
            text=r.str_(block, "thinking", f"{path}."),
            signature=block.get("signature"),
            provider="anthropic",
            extra=_rest(block, ("type", "thinking", "signature")),
        )
    if kind == "redacted_thinking":
        return Part(
            "reasoning",
            signature=r.str_(block, "data", f"{path}."),
            provider="anthropic",
            extra=_rest(block, ("type", "data")) | {"_redacted": True},
        )
    if isinstance(kind, str) and kind in _ANTH_BLOCK_TYPES:
        return Part(
            "other", provider="anthropic", extra=_check_json(r, dict(block), path, strict=False)
        )
    raise r.fail(f"{path}.type", f"unknown content block type {shown(kind)}")


def _read_anthropic(message: object, index: int) -> Message:
    r = _Reader("anthropic", index)
    m = r.mapping(message, "")
    role = m.get("role")
    if role not in ("user", "assistant", "system"):
        raise r.fail("role", f"expected 'user', 'assistant' or 'system', got {shown(role)}")
    parts, style = _read_content(r, m.get("content"), "content", _anth_block)
    if role == "system":  # an instruction in the conversation (SystemMessageParam): text only
        for i, p in enumerate(parts):
            if p.kind != "text":
                raise r.fail(f"content[{i}].type", "a system message holds text blocks only")
    return Message(
        role=role,
        parts=parts,
        style=style,
        provider="anthropic",
        extra=_rest(m, ("role", "content")),
        source=message,
    )


# --------------------------------------------------------------------------- writing


def _anth_source_out(part: Part, w: _Writer, path: str) -> dict[str, Any] | None:
    """An image or document's ``source``; ``None`` for a file id of another provider's store
    (lossy: Anthropic cannot open it)."""
    if part.data is not None:
        return {"type": "base64", "media_type": part.media_type, "data": _as_b64(part.data)}
    if part.extra.get("_file"):
        return {"type": "file", "file_id": part.url}
    if _same(part, "anthropic") or _url_kind(part, "anthropic", w, path) == "url":
        return {"type": "url", "url": part.url}
    return None


def _anth_block_out(part: Part, w: _Writer, path: str) -> dict[str, Any] | None:
    extra = _extra(part, "anthropic")
    if part.kind == "text":
        return {"type": "text", "text": part.text} | extra
    if part.kind == "image":
        if part.url and part.url.startswith("gs://"):
            w.lossy(path, "a Gemini file URI cannot be read by Anthropic")
        source = _anth_source_out(part, w, path)
        return {"type": "image", "source": source} | extra if source else None
    if part.kind == "document":
        titled = {"title": part.name} if part.name is not None else {}
        if part.text and part.data is None:
            source = {"type": "text", "media_type": part.media_type or "text/plain"}
            return {"type": "document", "source": source | {"data": part.text}} | titled | extra
        doc_source = _anth_source_out(part, w, path)
        if doc_source is None:
            return None
        return {"type": "document", "source": doc_source} | titled | extra
    if part.kind == "tool_call":
        return {
            "type": "tool_use",
            "id": _call_id(part, w),
            "name": part.name,
            "input": _args_object(part, w, f"{path}.input"),
        } | extra
    if part.kind == "tool_result":
        same = _same(part, "anthropic")
        style = part.extra.get("_style", "str") if same else "str"
        inner = [
            b
            for i, p in enumerate(part.content)
            if (b := _anth_block_out(p, w, f"{path}.content[{i}]"))
        ]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _call_id(part, w)}
        if (
            style == "str"
            and all(b["type"] == "text" and len(b) == 2 for b in inner)
            and len(inner) <= 1
        ):
            block["content"] = inner[0]["text"] if inner else ""
        elif style == "none":
            block["content"] = None
        elif style != "absent":
            block["content"] = inner
        if part.is_error or (same and part.extra.get("_has_is_error")):
            block["is_error"] = part.is_error
        return block | extra
    if part.kind == "reasoning":
        sig = _signature(part, "anthropic", w, path)
        if part.extra.get("_redacted"):
            return {"type": "redacted_thinking", "data": sig} | extra
        if sig is None:
            w.lossy(path, "Anthropic needs the signature of a thinking block; this one has none")
            return None
        return {"type": "thinking", "thinking": part.text, "signature": sig} | extra
    if part.kind == "other" and _same(part, "anthropic"):
        return dict(part.extra)
    if part.kind == "other" and part.extra.get("_tool_calls_null"):
        return None
    w.lossy(path, f"a {part.kind} part has no Anthropic form")
    return None


def _anth_system_message(message: Message, w: _Writer) -> dict[str, Any]:
    """A system message in the conversation (``{"role": "system"}``, text blocks only)."""
    texts = [p for p in message.parts if p.kind == "text"]
    if len(texts) != len(message.parts):
        w.lossy("content", "an Anthropic system message takes text only")
    same = _same(message, "anthropic")
    blocks = [{"type": "text", "text": p.text} | _extra(p, "anthropic") for p in texts]
    simple = len(blocks) == 1 and len(blocks[0]) == 2
    content: Any = blocks
    if (message.style if same else "str") == "str" and (simple or not blocks):
        content = blocks[0]["text"] if blocks else ""
    return {"role": "system", "content": content} | (dict(message.extra) if same else {})


def _write_anthropic(messages: Sequence[Message], w: _Writer) -> tuple[list[dict[str, Any]], Any]:
    out: list[dict[str, Any]] = []
    system: list[Part] = []
    system_style = "str"
    merge_user = False  # a user message right after OpenAI tool messages joins their turn
    for index, message in enumerate(messages):
        w.index = index
        if _message_loss(message, "anthropic", w):
            continue
        if message.role in ("system", "developer"):
            if out or _same(message, "anthropic"):  # an instruction in the conversation
                out.append(_anth_system_message(message, w))
                merge_user = False
                continue
            system.extend(message.parts)
            system_style = message.style
            continue
        same = _same(message, "anthropic")
        blocks = [
            b for i, p in enumerate(message.parts) if (b := _anth_block_out(p, w, f"content[{i}]"))
        ]
        role = "user" if message.role == "tool" else message.role
        if message.role == "tool" or (merge_user and role == "user" and not same):
            if out and out[-1]["role"] == "user" and merge_user:
                prev = out[-1]
                if isinstance(prev["content"], str):
                    prev["content"] = [{"type": "text", "text": prev["content"]}]
                prev["content"].extend(blocks)
                merge_user = message.role == "tool"
                continue
            out.append({"role": "user", "content": blocks})
            merge_user = True
            continue
        merge_user = False
        style = message.style if same else "str"
        simple = len(blocks) == 1 and blocks[0]["type"] == "text" and len(blocks[0]) == 2
        content: Any = blocks[0]["text"] if style == "str" and simple else blocks
        if style == "str" and not blocks:
            content = ""
        out.append({"role": role, "content": content} | (dict(message.extra) if same else {}))
    sys_out: Any = None
    if system:
        texts = [p for p in system if p.kind == "text"]
        if len(texts) != len(system):
            w.lossy("system", "the Anthropic system prompt takes text only")
        if system_style == "list" or len(texts) > 1 or any(_extra(p, "anthropic") for p in texts):
            sys_out = [{"type": "text", "text": p.text} | _extra(p, "anthropic") for p in texts]
        else:
            sys_out = texts[0].text if texts else ""
    return out, sys_out
