"""OpenAI Responses ``input`` items, read into the internal view and written back.

Items ``message`` (and easy ``{"role", "content"}`` messages), ``function_call``,
``function_call_output`` and ``reasoning``; other item types are kept whole. One assistant turn
is several items here, so :func:`_merge_items` joins them before writing another format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxbudget.formats.common import (
    _args_string,
    _call_id,
    _check_json,
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

_RESP_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "item_reference",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "compaction",
        "compaction_trigger",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "configuration_update",
        "program",
        "program_output",
    }
)
#: Item types that pair by ``call_id`` and whose ``call_id`` is required (else optional).
_CALL_ID_REQUIRED = frozenset({"program", "program_output"})
_CALL_ID_OPTIONAL = frozenset({"tool_search_call", "tool_search_output"})
#: Item types that carry tool definitions in ``tools`` (a list).
_TOOLS_ITEMS = frozenset({"additional_tools", "tool_search_output"})
_RESP_PART_TYPES = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "input_audio", "refusal"}
)


# --------------------------------------------------------------------------- reading


def _resp_part(r: _Reader, raw: object, path: str) -> Part:
    block = r.mapping(raw, path)
    kind = block.get("type")
    if kind in ("input_text", "output_text", "text"):
        return Part(
            "text",
            text=r.str_(block, "text", f"{path}."),
            provider="openai_responses",
            extra=_rest(block, ("text",)),
        )
    if kind == "refusal":
        return Part("text", text=r.str_(block, "refusal", f"{path}."), extra={"_refusal": True})
    if kind == "input_image":
        url = r.str_(block, "image_url", f"{path}.", required=False)
        media, data = _parse_data_url(url or "")
        return Part(
            "image",
            url=url or _image_file_id(r, block, path),
            media_type=media,
            data=data,
            detail=block.get("detail"),
            provider="openai_responses",
            extra=_rest(block, ("type", "image_url", "file_id", "detail")),
        )
    if kind == "input_file":
        file_data = r.str_(block, "file_data", f"{path}.", required=False)
        media, data = _parse_data_url(file_data or "")
        return Part(
            "document",
            media_type=media or ("application/pdf" if file_data else None),
            data=data if data is not None else file_data,
            url=r.str_(block, "file_id", f"{path}.", required=False)
            or r.str_(block, "file_url", f"{path}.", required=False),
            name=r.str_(block, "filename", f"{path}.", required=False),
            provider="openai_responses",
            extra=_rest(block, ("type", "file_data", "file_id", "file_url", "filename")),
        )
    if kind == "input_audio":
        audio = r.mapping(block.get("input_audio"), f"{path}.input_audio")
        data = r.str_(audio, "data", f"{path}.input_audio.", required=False)
        return Part("audio", data=data, media_type=f"audio/{audio.get('format')}")
    raise r.fail(f"{path}.type", f"unknown content part type {shown(kind)}")


def _image_file_id(r: _Reader, block: Mapping[str, Any], path: str) -> str:
    """The ``file_id`` of an ``input_image`` without ``image_url``: it needs one of the two."""
    if block.get("file_id") is None:
        raise r.fail(f"{path}.image_url", "missing (an input_image takes image_url or file_id)")
    return str(r.str_(block, "file_id", f"{path}."))


def _read_responses(item: object, index: int) -> Message:
    r = _Reader("openai_responses", index)
    m = r.mapping(item, "")
    kind = m.get("type")
    if kind is None and is_item_reference(m):
        kind = "item_reference"
    if kind is None or kind == "message":
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant"):
            raise r.fail("role", f"expected system/developer/user/assistant, got {shown(role)}")
        parts, style = _read_content(r, m.get("content"), "content", _resp_part)
        return Message(
            role=role,
            parts=parts,
            style=style,
            provider="openai_responses",
            extra=_rest(m, ("role", "content")),
            source=item,
        )
    if kind == "function_call":
        arguments = r.str_(m, "arguments", "")
        part = Part(
            "tool_call",
            call_id=r.str_(m, "call_id", ""),
            name=r.str_(m, "name", ""),
            raw_arguments=arguments,
            arguments=_parse_args(r, arguments, "arguments"),
            provider="openai_responses",
            extra=_rest(m, ("type", "call_id", "name", "arguments")),
        )
        return Message("assistant", (part,), provider="openai_responses", source=item)
    if kind == "custom_tool_call":  # free-form text input, as a Chat custom tool call's
        part = Part(
            "tool_call",
            call_id=r.str_(m, "call_id", ""),
            name=r.str_(m, "name", ""),
            raw_arguments=r.str_(m, "input", ""),
            provider="openai_responses",
            extra=_rest(m, ("type", "call_id", "name", "input")) | {"_custom": {}},
        )
        return Message("assistant", (part,), provider="openai_responses", source=item)
    if kind in ("function_call_output", "custom_tool_call_output"):
        result, style = _read_content(r, m.get("output"), "output", _resp_part)
        part = Part(
            "tool_result",
            call_id=r.str_(m, "call_id", ""),
            content=result,
            provider="openai_responses",
            extra=_rest(m, ("type", "call_id", "output")) | {"_style": style},
        )
        return Message("tool", (part,), provider="openai_responses", source=item)
    if kind == "reasoning":
        summary = r.list_(m.get("summary", []), "summary")
        texts = []
        for i, s in enumerate(summary):
            texts.append(r.str_(r.mapping(s, f"summary[{i}]"), "text", f"summary[{i}]."))
        # The reasoning itself (`reasoning_text` parts: gpt-oss and other open models served
        # through Responses send it back), after its summary: counted and converted with it.
        raw = _reasoning_texts(r, m)
        part = Part(
            "reasoning",
            text="\n\n".join(texts + raw),
            signature=m.get("encrypted_content"),
            provider="openai_responses",
            extra=_rest(m, ("type", "summary", "encrypted_content"))
            | {"_summary": tuple(texts), "_reasoning": tuple(raw)},
        )
        return Message("assistant", (part,), provider="openai_responses", source=item)
    if isinstance(kind, str) and kind in _RESP_ITEM_TYPES:
        _check_linked_item(r, m, kind)
        part = Part(
            "other",
            provider="openai_responses",
            extra=_check_json(r, dict(m), "", strict=False),
        )
        return Message("assistant", (part,), provider="openai_responses", source=item)
    raise r.fail("type", f"unknown input item type {shown(kind)}")


def is_item_reference(item: Mapping[str, Any]) -> bool:
    """An ``item_reference``: an earlier item the server stored, named by its id (the SDK's
    ``ItemReference``, whose ``type`` may be left out: ``{"id": "msg_123"}``)."""
    kind = item.get("type")
    if kind == "item_reference":
        return True
    # (``{"id": ..., "type": None}``: a model_dump that kept the None)
    keys = len(item) - ("type" in item)
    return kind is None and keys == 1 and isinstance(item.get("id"), str)


def _check_linked_item(r: _Reader, m: Mapping[str, Any], kind: str) -> None:
    """The fields pruning reads of an item kept whole: the ``call_id`` that pairs a program
    or tool search with its output (a string: an id of another type would be read as none,
    and the pair split), and the ``tools`` list of the items that load tool definitions."""
    if kind in _CALL_ID_REQUIRED or kind in _CALL_ID_OPTIONAL:
        r.str_(m, "call_id", "", required=kind in _CALL_ID_REQUIRED)
    if kind in _TOOLS_ITEMS:
        r.list_(m.get("tools"), "tools")


def _merge_items(messages: list[Message]) -> list[Message]:
    """Responses items → messages: calls and reasoning join the assistant turn they belong to."""
    out: list[Message] = []
    for message in messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.role == "assistant"
            and message.role == "assistant"
            and not any(p.kind == "tool_call" for p in prev.parts)
            and (
                all(p.kind == "reasoning" for p in prev.parts)
                or all(p.kind == "tool_call" for p in message.parts)
            )
        ) or (
            prev is not None
            and prev.role == "assistant"
            and message.role == "assistant"
            and all(p.kind == "tool_call" for p in message.parts)
            and all(p.kind == "tool_call" for p in prev.parts[-1:])
        ):
            style = message.style if all(p.kind == "reasoning" for p in prev.parts) else prev.style
            extra = {**prev.extra, **message.extra}
            out[-1] = replace(prev, parts=prev.parts + message.parts, style=style, extra=extra)
        else:
            out.append(message)
    return out


# --------------------------------------------------------------------------- writing


def _resp_block(part: Part, role: str, w: _Writer, path: str) -> dict[str, Any] | None:
    same = _same(part, "openai_responses")
    if part.kind == "text":
        if part.extra.get("_refusal"):
            return {"type": "refusal", "refusal": part.text}
        kind = part.extra.get("type") if same else None
        kind = kind or ("output_text" if role == "assistant" else "input_text")
        return {"type": kind, "text": part.text} | {
            k: v for k, v in _extra(part, "openai_responses").items() if k != "type"
        }
    if part.kind == "image":
        block = {"type": "input_image"} | _resp_source(part, "image_url", w, path)
        if len(block) == 1:
            return None
        block["detail"] = part.detail if part.detail is not None else "auto"
        if same and part.detail is None:
            del block["detail"]
        return block | _extra(part, "openai_responses")
    if part.kind == "document":
        if part.data is None and not part.url:
            return {"type": "input_text", "text": part.text} if part.text else None
        source = _resp_source(part, "file_data", w, path)
        if not source:
            return None
        block = {"type": "input_file"} | source
        if part.name is not None:
            block["filename"] = part.name
        return block | _extra(part, "openai_responses")
    if part.kind == "audio":
        fmt = (part.media_type or "audio/wav").split("/", 1)[1]
        return {"type": "input_audio", "input_audio": {"data": part.data, "format": fmt}}
    w.lossy(path, f"a {part.kind} part has no Responses content form")
    return None


def _resp_source(part: Part, inline: str, w: _Writer, path: str) -> dict[str, Any]:
    """Where an image or file part's bytes are: ``{inline: data URL}`` for inline data (or a
    data URL), ``file_url``/``image_url`` for a URL, ``file_id`` for an OpenAI file id; empty
    when it is a file id of another provider (lossy)."""
    if part.data is not None:
        url = part.url if part.url and part.url.startswith("data:") else None
        return {inline: url or _data_url(part.media_type, part.data)}
    kind = _url_kind(part, "openai_responses", w, path)
    if kind == "file":
        return {"file_id": part.url}
    if kind == "url":
        return {"image_url" if inline == "image_url" else "file_url": part.url}
    return {}


def _write_responses(messages: Sequence[Message], w: _Writer) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    custom_calls: set[str] = set()  # ids of custom tool calls: their outputs are custom too
    for index, message in enumerate(messages):
        w.index = index
        if _message_loss(message, "openai_responses", w):
            continue
        same = _same(message, "openai_responses")
        pending: list[Part] = []

        def flush(
            message: Message = message, same: bool = same, pending: list[Part] = pending
        ) -> None:
            if not pending:
                return
            role = "user" if message.role == "tool" else message.role
            style = message.style if same else "str"
            blocks = [
                b for i, p in enumerate(pending) if (b := _resp_block(p, role, w, f"content[{i}]"))
            ]
            simple = len(blocks) == 1 and blocks[0]["type"] in ("input_text", "output_text")
            content: Any = blocks[0]["text"] if style == "str" and simple else blocks
            item: dict[str, Any] = {"role": role, "content": content}
            if same:
                item |= dict(message.extra)
            elif role == "assistant":
                item = {"type": "message"} | item
            out.append(item)
            pending.clear()

        for j, part in enumerate(message.parts):
            path = f"parts[{j}]"
            if part.kind == "tool_call" and "_custom" in part.extra:
                flush()
                call_id = _call_id(part, w)
                custom_calls.add(call_id)
                out.append(
                    {
                        "type": "custom_tool_call",
                        "call_id": call_id,
                        "name": part.name,
                        "input": part.raw_arguments or "",
                    }
                    | _extra(part, "openai_responses")
                )
            elif part.kind == "tool_call":
                flush()
                out.append(
                    {
                        "type": "function_call",
                        "call_id": _call_id(part, w),
                        "name": part.name,
                        "arguments": _args_string(part),
                    }
                    | _extra(part, "openai_responses")
                )
            elif part.kind == "tool_result":
                flush()
                style = (
                    part.extra.get("_style", "str") if _same(part, "openai_responses") else "str"
                )
                blocks = [
                    b
                    for i, p in enumerate(part.content)
                    if (b := _resp_block(p, "user", w, f"{path}.content[{i}]"))
                ]
                simple = all(b["type"] == "input_text" for b in blocks) and len(blocks) <= 1
                output: Any = (
                    (blocks[0]["text"] if blocks else "") if style == "str" and simple else blocks
                )
                call_id = _call_id(part, w)
                kind = (
                    "custom_tool_call_output" if call_id in custom_calls else "function_call_output"
                )
                out.append(
                    {"type": kind, "call_id": call_id, "output": output}
                    | _extra(part, "openai_responses")
                )
            elif part.kind == "reasoning":
                flush()
                item: dict[str, Any] = {"type": "reasoning"}
                texts = _summary_texts(part)
                item["summary"] = [{"type": "summary_text", "text": t} for t in texts]
                sig = _signature(part, "openai_responses", w, path)
                if sig is not None:
                    item["encrypted_content"] = sig
                out.append(item | _extra(part, "openai_responses"))
            elif part.kind == "other":
                flush()
                if _same(part, "openai_responses"):
                    out.append(dict(part.extra))
                elif not part.extra.get("_tool_calls_null"):
                    w.lossy(path, "a provider-specific item has no Responses form")
            else:
                pending.append(part)
        flush()
        if not message.parts and message.role != "tool":
            content: Any = "" if message.style == "str" or not same else []
            item = {"role": message.role, "content": content}
            out.append(item | (dict(message.extra) if same else {}))
    return out


def _summary_texts(part: Part) -> list[str]:
    """A reasoning part's summary texts: those it was read from while its text is still
    their join with its reasoning texts (a summary text may hold blank lines itself, so
    splitting the join at them would make more texts; the reasoning texts go back in the
    item's ``content``, kept as it came); else its text as one."""
    read = part.extra.get("_summary") if _same(part, "openai_responses") else None
    raw = part.extra.get("_reasoning", ())
    if read is not None and "\n\n".join((*read, *raw)) == part.text:
        return list(read)
    return [part.text] if part.text else []


def _reasoning_texts(r: _Reader, m: Mapping[str, Any]) -> list[str]:
    """The texts of a reasoning item's ``content`` (its ``reasoning_text`` parts)."""
    content = m.get("content")
    if content is None:
        return []
    texts = []
    for i, c in enumerate(r.list_(content, "content")):
        c = r.mapping(c, f"content[{i}]")
        if c.get("type") == "reasoning_text":
            texts.append(r.str_(c, "text", f"content[{i}]."))
    return texts
