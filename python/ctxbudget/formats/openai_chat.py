"""OpenAI Chat Completions ``messages``, read into the internal view and written back.

Roles ``system``/``developer``/``user``/``assistant``/``tool``, ``tool_calls`` (function calls,
and custom tool calls: free-form ``input`` text, kept as the call's raw arguments), content
parts with images, audio and files, and ``reasoning_content`` as DeepSeek, vLLM and LiteLLM send
it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from ctxbudget.formats.common import (
    _args_string,
    _call_id,
    _data_url,
    _extra,
    _message_loss,
    _parse_args,
    _parse_data_url,
    _read_content,
    _Reader,
    _rest,
    _same,
    _signature,
    _url_kind,
    _Writer,
    shown,
)
from ctxbudget.formats.model import Message, Part

_CHAT_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


# --------------------------------------------------------------------------- reading


def _chat_part(r: _Reader, raw: object, path: str) -> Part:
    block = r.mapping(raw, path)
    kind = block.get("type")
    if kind == "text":
        return Part(
            "text", text=r.str_(block, "text", f"{path}."), extra=_rest(block, ("type", "text"))
        )
    if kind == "image_url":
        image = r.mapping(block.get("image_url"), f"{path}.image_url")
        url = r.str_(image, "url", f"{path}.image_url.")
        media, data = _parse_data_url(url)
        return Part(
            "image",
            url=url,
            media_type=media,
            data=data,
            detail=image.get("detail"),
            extra=_rest(block, ("type", "image_url")) | {"_image": _rest(image, ("url", "detail"))},
        )
    if kind == "input_audio":
        audio = r.mapping(block.get("input_audio"), f"{path}.input_audio")
        return Part(
            "audio",
            data=r.str_(audio, "data", f"{path}.input_audio."),
            media_type=f"audio/{audio.get('format', 'wav')}",
        )
    if kind == "file":
        info = r.mapping(block.get("file"), f"{path}.file")
        file_data = r.str_(info, "file_data", f"{path}.file.", required=False)
        media, data = _parse_data_url(file_data or "")
        return Part(
            "document",
            media_type=media or ("application/pdf" if file_data else None),
            data=data if data is not None else file_data,
            url=r.str_(info, "file_id", f"{path}.file.", required=False),
            name=r.str_(info, "filename", f"{path}.file.", required=False),
        )
    if kind == "refusal":
        return Part("text", text=r.str_(block, "refusal", f"{path}."), extra={"_refusal": True})
    raise r.fail(f"{path}.type", f"unknown content part type {shown(kind)}")


def _chat_call(r: _Reader, raw: object, path: str) -> Part:
    """One entry of ``tool_calls``: a function call, or a custom tool call (its free-form
    ``input`` is the raw arguments; it is no JSON, so it is never parsed)."""
    call = r.mapping(raw, path)
    if call.get("type") == "custom":
        custom = r.mapping(call.get("custom"), f"{path}.custom")
        return Part(
            "tool_call",
            call_id=r.str_(call, "id", f"{path}."),
            name=r.str_(custom, "name", f"{path}.custom."),
            raw_arguments=r.str_(custom, "input", f"{path}.custom."),
            extra=_rest(call, ("id", "type", "custom"))
            | {"_custom": _rest(custom, ("name", "input"))},
        )
    fn = r.mapping(call.get("function"), f"{path}.function")
    arguments = r.str_(fn, "arguments", f"{path}.function.")
    return Part(
        "tool_call",
        call_id=r.str_(call, "id", f"{path}."),
        name=r.str_(fn, "name", f"{path}.function."),
        raw_arguments=arguments,
        arguments=_parse_args(r, arguments, f"{path}.function.arguments"),
        extra=_rest(call, ("id", "type", "function")),
    )


def _chat_content(r: _Reader, content: object, path: str) -> tuple[tuple[Part, ...], str]:
    if content is None:
        return (), "none"
    return _read_content(r, content, path, _chat_part)


def _read_chat(message: object, index: int) -> Message:
    r = _Reader("openai_chat", index)
    m = r.mapping(message, "")
    role = m.get("role")
    if not isinstance(role, str) or role not in _CHAT_ROLES:
        raise r.fail("role", f"expected one of {sorted(_CHAT_ROLES)}, got {shown(role)}")
    if "content" in m:
        parts, style = _chat_content(r, m["content"], "content")
    else:
        parts, style = (), "absent"
    known = ["role", "content", "name"]
    extra_parts: list[Part] = []
    if role == "assistant":
        known += ["tool_calls", "reasoning_content"]
        reasoning = m.get("reasoning_content")
        if reasoning is not None:
            if not isinstance(reasoning, str):
                raise r.fail("reasoning_content", "expected a string")
            extra_parts.append(Part("reasoning", text=reasoning, provider="openai_chat"))
        refusal = m.get("refusal")  # kept among the message's own fields, counted as text
        if refusal is not None and not isinstance(refusal, str):
            raise r.fail("refusal", "expected a string")
        calls = m.get("tool_calls")
        if calls is not None:
            for j, raw_call in enumerate(r.list_(calls, "tool_calls")):
                extra_parts.append(_chat_call(r, raw_call, f"tool_calls[{j}]"))
        elif "tool_calls" in m:
            extra_parts.append(Part("other", extra={"_tool_calls_null": True}))
        parts = (
            tuple(extra_parts[:1] if reasoning is not None else ())
            + parts
            + tuple(p for p in extra_parts if p.kind != "reasoning")
        )
    elif role == "tool":
        known.append("tool_call_id")
        call_id = r.str_(m, "tool_call_id", "")
        parts = (Part("tool_result", call_id=call_id, content=parts, extra={"_style": style}),)
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise r.fail("name", "expected a string")
    return Message(
        role=role,
        parts=tuple(p if p.provider else replace(p, provider="openai_chat") for p in parts),
        name=name,
        style=style,
        provider="openai_chat",
        extra=_rest(m, known),
        source=message,
    )


# --------------------------------------------------------------------------- writing


def _chat_block(part: Part, w: _Writer, path: str) -> dict[str, Any] | None:
    if part.kind == "text":
        if part.extra.get("_refusal"):
            return {"type": "refusal", "refusal": part.text}
        return {"type": "text", "text": part.text} | _extra(part, "openai_chat")
    if part.kind == "image":
        if (
            part.url
            and not _same(part, "openai_chat")
            and _url_kind(part, "openai_chat", w, path) != "url"
        ):
            w.lossy(path, "Chat Completions takes an image as a URL, not a file id")
            return None
        image: dict[str, Any] = {"url": part.url or _data_url(part.media_type, part.data)}
        if part.detail is not None and (part.detail != "auto" or _same(part, "openai_chat")):
            image["detail"] = part.detail  # "auto" is the default: written only if it was
        if _same(part, "openai_chat"):
            image |= part.extra.get("_image", {})
        return {"type": "image_url", "image_url": image} | _extra(part, "openai_chat")
    if part.kind == "audio" and part.data is not None:
        fmt = (part.media_type or "audio/wav").split("/", 1)[1]
        return {"type": "input_audio", "input_audio": {"data": part.data, "format": fmt}}
    if part.kind == "document" and (part.data is not None or part.url):
        info: dict[str, Any] = {}
        if part.text and part.data is None:
            w.lossy(path, "a text document has no Chat Completions file form")
            return None
        if part.data is not None:
            info["file_data"] = _data_url(part.media_type, part.data)
        elif _same(part, "openai_chat") or _url_kind(part, "openai_chat", w, path) == "file":
            info["file_id"] = part.url
        else:  # a file id of another store (lossy above), or a URL
            w.lossy(path, "a Chat Completions file part takes a file id or data, not a URL")
            return None
        if part.name is not None:
            info["filename"] = part.name
        return {"type": "file", "file": info}
    if part.kind == "document" and part.text:
        return {"type": "text", "text": part.text}
    w.lossy(path, f"a {part.kind} part has no Chat Completions form")
    return None


def _chat_content_out(
    parts: Sequence[Part], style: str, w: _Writer, path: str
) -> str | list[dict[str, Any]] | None:
    blocks = [b for i, p in enumerate(parts) if (b := _chat_block(p, w, f"{path}[{i}]"))]
    if style == "none" and not blocks:
        return None
    simple = all(b.get("type") == "text" and len(b) == 2 for b in blocks)
    if style != "list" and simple and len(blocks) <= 1:
        return blocks[0]["text"] if blocks else ""
    return blocks


def _write_chat(messages: Sequence[Message], w: _Writer) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        w.index = index
        _message_loss(message, "openai_chat", w)
        same = _same(message, "openai_chat")
        results = [p for p in message.parts if p.kind == "tool_result"]
        others = [p for p in message.parts if p.kind != "tool_result"]
        for result in results:
            msg: dict[str, Any] = {"role": "tool", "tool_call_id": _call_id(result, w)}
            msg["content"] = _tool_result_chat(result, w)
            if same and message.role == "tool":
                msg = {"role": "tool"} | (
                    {"content": msg["content"]} if message.style != "absent" else {}
                )
                msg["tool_call_id"] = _call_id(result, w)
                msg |= dict(message.extra)
            out.append(msg)
        if results and not others:
            continue
        role = message.role
        if role == "tool":
            continue
        calls = [p for p in others if p.kind == "tool_call"]
        reasoning = [p for p in others if p.kind == "reasoning"]
        body = [p for p in others if p.kind not in ("tool_call", "reasoning", "other")]
        for p in others:
            if p.kind == "other" and not p.extra.get("_tool_calls_null"):
                w.lossy("content", "a provider-specific item has no Chat Completions form")
        msg = {"role": role}
        style = message.style if same else ("none" if calls and not body else "str")
        if style != "absent":
            msg["content"] = _chat_content_out(body, style, w, "content")
        if reasoning:
            for p in reasoning:
                _signature(p, "openai_chat", w, "reasoning_content")
            msg["reasoning_content"] = "\n\n".join(p.text for p in reasoning)
        if calls:
            msg["tool_calls"] = [_chat_call_out(c, w) for c in calls]
            if same:  # original key order: content, role, tool_calls ... is irrelevant to JSON
                for call, c in zip(msg["tool_calls"], calls, strict=True):
                    call.update(_extra(c, "openai_chat"))
        elif any(p.extra.get("_tool_calls_null") for p in others):
            msg["tool_calls"] = None
        if message.name is not None:
            msg["name"] = message.name
        if same:
            msg |= dict(message.extra)
        out.append(msg)
    return out


def _chat_call_out(call: Part, w: _Writer) -> dict[str, Any]:
    custom = call.extra.get("_custom")
    if custom is not None:  # a custom tool call: only Chat Completions reads them
        fields = {"name": call.name, "input": call.raw_arguments or ""}
        return (
            {"id": _call_id(call, w), "type": "custom"}
            | {"custom": fields | (dict(custom) if _same(call, "openai_chat") else {})}
            | _extra(call, "openai_chat")
        )
    return (
        {"id": _call_id(call, w), "type": "function"}
        | {"function": {"name": call.name, "arguments": _args_string(call)}}
        | _extra(call, "openai_chat")
    )


def _tool_result_chat(result: Part, w: _Writer) -> str | list[dict[str, Any]]:
    style = result.extra.get("_style", "str") if _same(result, "openai_chat") else "str"
    blocks: list[dict[str, Any]] = []
    for i, p in enumerate(result.content):
        if p.kind != "text":
            w.lossy(f"content[{i}]", f"a {p.kind} in a tool result has no Chat Completions form")
            continue
        blocks.append({"type": "text", "text": p.text})
    if style == "list":
        return blocks
    if len(blocks) == 1:
        return cast(str, blocks[0]["text"])
    return blocks if blocks else ""
