"""google-genai ``contents``, read into the internal view and written back.

Parts ``text``, ``inline_data``, ``file_data``, ``function_call``, ``function_response`` and
thoughts, as dicts in snake_case or camelCase or as ``google.genai.types.Content`` objects.
Gemini may leave call ids out: reading makes them up (``ctxb_call_<n>``) and writing drops them.
"""

from __future__ import annotations

import json
import mimetypes
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxbudget.formats.common import (
    _SYNTH_ID,
    _args_object,
    _check_json,
    _genai_to_dict,
    _message_loss,
    _parts_text,
    _Reader,
    _rest,
    _same,
    _signature,
    _too_deep,
    _url_kind,
    _Writer,
    json_text,
    public_fields,
    shown,
)
from ctxbudget.formats.model import Message, Part, PartKind

_CAMEL = {
    "inlineData": "inline_data",
    "fileData": "file_data",
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "thoughtSignature": "thought_signature",
    "mimeType": "mime_type",
    "fileUri": "file_uri",
    "displayName": "display_name",
    "executableCode": "executable_code",
    "codeExecutionResult": "code_execution_result",
    "videoMetadata": "video_metadata",
    # tools, as the REST API spells them
    "functionDeclarations": "function_declarations",
    "parametersJsonSchema": "parameters_json_schema",
}


def _snake(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {_CAMEL.get(k, k): v for k, v in obj.items()}


def _result_text(response: Any) -> str:
    """A Gemini ``function_response.response`` as tool-result text: ``{"result": text}`` is
    the text alone (what the model reads, and what the core counts: ``rust/py_gemini.rs``),
    any other response its JSON. :func:`_result_obj` reads it back; where that would give
    another response (``{"result": '{"a": 1}'}`` comes back as ``{"a": 1}``, the same JSON
    value), the reader keeps the original for a Gemini to Gemini conversion."""
    if isinstance(response, Mapping) and set(response) == {"result"}:
        value = response["result"]
        if isinstance(value, str):
            return value
    return json_text(response)


def _result_obj(text: str) -> Any:
    """Tool-result text as a Gemini ``response`` object: the object it is the JSON of, else
    ``{"result": text}``."""
    if not text.startswith("{"):  # no JSON object text: a long tool output is not parsed
        return {"result": text}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or too deep to be an object we rewrite
        value = None
    if (
        isinstance(value, dict)
        and json.dumps(value, ensure_ascii=False) == text
        and not (set(value) == {"result"} and isinstance(value["result"], str))
    ):
        return value
    return {"result": text}


def _kept_response(text: str, response: Any) -> dict[str, Any]:
    """``{"response": response}`` when the text read from it would be written back as another
    response (see :func:`_result_text`), else nothing."""
    if response is None or _result_obj(text) == response:
        return {}
    return {"response": response}


# --------------------------------------------------------------------------- reading


def _gem_part(r: _Reader, raw: object, path: str) -> Part:
    block = _snake(r.mapping(raw, path))
    sig = block.get("thought_signature")
    if "text" in block:
        text = r.str_(block, "text", f"{path}.")
        if block.get("thought"):
            return Part(
                "reasoning",
                text=text,
                signature=sig,
                provider="gemini",
                extra=_rest(block, ("text", "thought", "thought_signature")),
            )
        return Part(
            "text",
            text=text,
            signature=sig,
            provider="gemini",
            extra=_rest(block, ("text", "thought_signature")),
        )
    if "inline_data" in block:
        blob = _snake(r.mapping(block["inline_data"], f"{path}.inline_data"))
        media = r.str_(blob, "mime_type", f"{path}.inline_data.")
        data = blob.get("data")
        if not isinstance(data, str | bytes):
            raise r.fail(f"{path}.inline_data.data", "expected base64 text or bytes")
        return Part(
            _media_kind(media),
            media_type=media,
            data=data,
            signature=sig,
            provider="gemini",
            extra=_rest(block, ("inline_data", "thought_signature"))
            | {"_blob": _rest(blob, ("mime_type", "data"))},
        )
    if "file_data" in block:
        fd = _snake(r.mapping(block["file_data"], f"{path}.file_data"))
        media = r.str_(fd, "mime_type", f"{path}.file_data.", required=False)
        uri = r.str_(fd, "file_uri", f"{path}.file_data.")
        return Part(
            _media_kind(media or _guessed_type(uri) or ""),
            url=uri,
            media_type=media,
            signature=sig,
            provider="gemini",
            extra=_rest(block, ("file_data", "thought_signature"))
            | {"_blob": _rest(fd, ("mime_type", "file_uri"))},
        )
    if "function_call" in block:
        fc = r.mapping(block["function_call"], f"{path}.function_call")
        return Part(
            "tool_call",
            call_id=r.str_(fc, "id", f"{path}.function_call.", required=False),
            name=r.str_(fc, "name", f"{path}.function_call."),
            arguments=_check_json(
                r,
                dict(r.mapping(fc.get("args") or {}, f"{path}.function_call.args")),
                f"{path}.function_call.args",
            ),
            signature=sig,
            provider="gemini",
            extra=_rest(block, ("function_call", "thought_signature"))
            | {"_fc": _rest(fc, ("id", "name", "args"))},
        )
    if "function_response" in block:
        fr = r.mapping(block["function_response"], f"{path}.function_response")
        response = fr.get("response")
        where = f"{path}.function_response.response"
        try:
            text = _result_text(response if response is not None else {})
        except RecursionError:
            raise _too_deep(r, where) from None
        except (TypeError, ValueError) as e:  # a value JSON cannot write (bytes, a set, NaN...)
            raise r.fail(where, f"not a JSON value: {e}") from None
        return Part(
            "tool_result",
            call_id=r.str_(fr, "id", f"{path}.function_response.", required=False),
            name=r.str_(fr, "name", f"{path}.function_response."),
            content=(Part("text", text=text),),
            signature=sig,
            provider="gemini",
            extra=_rest(block, ("function_response", "thought_signature"))
            | {"_fr": _rest(fr, ("id", "name", "response")) | _kept_response(text, response)},
        )
    return Part(
        "other", signature=sig, provider="gemini", extra=_check_json(r, block, path, strict=False)
    )


def _guessed_type(url: str) -> str | None:
    """The MIME type of a file URI by its name's extension (``cat.png``, ``a.pdf?v=2``)."""
    return mimetypes.guess_type(urllib.parse.urlsplit(url).path, strict=False)[0]


def _media_kind(media_type: str) -> PartKind:
    if media_type.startswith("image/"):
        return "image"
    if media_type.startswith("audio/"):
        return "audio"
    if media_type.startswith(("application/pdf", "text/")):
        return "document"
    return "file"


def _read_gemini(content: object, index: int) -> Message:
    r = _Reader("gemini", index)
    m = r.mapping(_genai_to_dict(content), "")
    role = m.get("role", "user")
    if role not in ("user", "model", "function"):
        raise r.fail("role", f"expected 'user' or 'model', got {shown(role)}")
    items = r.list_(m.get("parts"), "parts")
    parts = tuple(_gem_part(r, b, f"parts[{i}]") for i, b in enumerate(items))
    return Message(
        role="assistant" if role == "model" else "user",
        parts=parts,
        provider="gemini",
        extra=_rest(m, ("role", "parts")) | ({"_role": role} if role != "model" else {}),
        source=content,
    )


def _gemini_ids(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Give Gemini calls without ids stable ids, and their responses the matching one.

    Gemini pairs calls and responses turn by turn: a response without an id answers the
    first unanswered call of its name in the model turn right before it (the model messages
    just before the run of response messages), never a call of an earlier turn.
    """
    pending: dict[str, list[str]] = {}
    out: list[Message] = []
    previous: str | None = None
    for index, message in enumerate(messages):
        answers = any(p.kind == "tool_result" for p in message.parts)
        kind = "model" if message.role == "assistant" else "results" if answers else "user"
        if kind == "user" or (kind == "model" and previous != "model"):
            pending = {}  # a new turn: the calls before it stay unanswered
        previous = kind
        parts: list[Part] = []
        for j, p in enumerate(message.parts):
            name = p.name
            if p.kind == "tool_call" and name:
                call_id = p.call_id or f"{_SYNTH_ID}{index}_{j}"
                if p.call_id is None:
                    p = replace(p, call_id=call_id)
                pending.setdefault(name, []).append(call_id)
            elif p.kind == "tool_result" and name:
                queue = pending.get(name) or []
                if p.call_id is None:
                    p = replace(p, call_id=queue.pop(0) if queue else f"{_SYNTH_ID}{index}_{j}")
                elif p.call_id in queue:
                    queue.remove(p.call_id)
            parts.append(p)
        out.append(replace(message, parts=tuple(parts)))
    return tuple(out)


# --------------------------------------------------------------------------- writing


def _gem_part_out(part: Part, w: _Writer, path: str, ids: dict[str, str]) -> dict[str, Any] | None:
    same = _same(part, "gemini")
    out: dict[str, Any]
    if part.kind == "text":
        out = {"text": part.text}
    elif part.kind == "reasoning":
        if part.extra.get("_redacted"):
            w.lossy(path, "redacted thinking has no Gemini form")
            return None
        out = {"text": part.text, "thought": True}
    elif part.kind in ("image", "audio", "document", "file"):
        if part.kind == "document" and part.text and part.data is None:
            out = {"text": part.text}
        elif part.data is not None:
            blob = {"mime_type": part.media_type or "application/octet-stream", "data": part.data}
            if same:
                blob = {"data": part.data, "mime_type": part.media_type} | part.extra.get(
                    "_blob", {}
                )
            out = {"inline_data": blob}
        elif part.url and not same and _url_kind(part, "gemini", w, path) != "url":
            return None  # a file id of another provider's store (lossy)
        elif part.url:
            fd: dict[str, Any] = {"file_uri": part.url}
            media_type = part.media_type if same else part.media_type or _guessed_type(part.url)
            if media_type:
                fd["mime_type"] = media_type  # (required by Vertex AI)
            if same:
                fd |= part.extra.get("_blob", {})
            out = {"file_data": fd}
        else:
            w.lossy(path, f"an empty {part.kind} part")
            return None
    elif part.kind == "tool_call":
        fc: dict[str, Any] = {"name": part.name, "args": _args_object(part, w, f"{path}.args")}
        if part.call_id and not part.call_id.startswith(_SYNTH_ID):
            fc = {"id": part.call_id} | fc
        if same:
            fc |= part.extra.get("_fc", {})
        out = {"function_call": fc}
    elif part.kind == "tool_result":
        non_text = [p for p in part.content if p.kind != "text"]
        if non_text:
            w.lossy(path, "Gemini function responses take JSON only, not media")
        fr: dict[str, Any] = {
            "name": part.name or ids.get(part.call_id or "", ""),
            "response": _result_obj(_parts_text(part.content)),
        }
        if not fr["name"]:
            w.lossy(path, "a Gemini function response needs the tool name; no call names it")
        if part.call_id and not part.call_id.startswith(_SYNTH_ID):
            fr = {"id": part.call_id} | fr
        if same:
            fr |= part.extra.get("_fr", {})
        out = {"function_response": fr}
    elif part.kind == "other" and same:
        return dict(part.extra)
    elif part.kind == "other" and part.extra.get("_tool_calls_null"):
        return None
    else:
        w.lossy(path, f"a {part.kind} part has no Gemini form")
        return None
    sig = _signature(part, "gemini", w, path)
    if sig is not None:
        out["thought_signature"] = sig
    if same:
        out |= public_fields(part.extra)
    return out


def _write_gemini(messages: Sequence[Message], w: _Writer) -> tuple[list[dict[str, Any]], Any]:
    out: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        w.index = index
        if _message_loss(message, "gemini", w):
            continue
        for p in message.parts:
            if p.kind == "tool_call" and p.call_id and p.name:
                names[p.call_id] = p.name
        parts = [
            b
            for i, p in enumerate(message.parts)
            if (b := _gem_part_out(p, w, f"parts[{i}]", names))
        ]
        if message.role in ("system", "developer"):
            if out:
                w.lossy("role", "Gemini takes the system instruction only before the conversation")
            system.extend(parts)
            continue
        same = _same(message, "gemini")
        role = "model" if message.role == "assistant" else "user"
        if same:
            role = message.extra.get("_role", role)
        merge = message.role == "tool" and out and out[-1].get("_ctxb_tool")
        if merge:
            out[-1]["parts"].extend(parts)
            continue
        content: dict[str, Any] = {"role": role, "parts": parts}
        if same:
            content |= public_fields(message.extra)
        if message.role == "tool":
            content["_ctxb_tool"] = True
        out.append(content)
    for content in out:
        content.pop("_ctxb_tool", None)
    return out, ({"parts": system} if system else None)
