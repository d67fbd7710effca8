"""Media inside items kept whole: a computer-use screenshot (``computer_call_output``), an
image a server tool generated (``image_generation_call.result``), a PDF a server tool fetched
(Anthropic ``web_fetch_tool_result``).

Their fields are counted as the JSON text they are sent as, but a base64 payload is not read
as text by the model: it is an image or a document, and costs what one does (a 256 x 256
screenshot is some 200 tokens as an image and 180,000 as base64 text). :func:`split_media`
takes the payloads out of such a value, as parts the media rules price, and leaves the rest
to be counted as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ctxbudget.formats.common import _parse_data_url
from ctxbudget.formats.model import Part, PartKind

__all__ = ["has_media", "readable", "split_media"]

#: Keys whose values are opaque to the model as text (encrypted context, signatures): the
#: summarizer is not shown them (:func:`readable`).
_OPAQUE_KEYS = frozenset({"encrypted_content", "signature", "thought_signature"})


#: Fields providers read a data URL in as media: an image's (``image_url``, as a string or
#: ``{"url": ...}``), a file's (``file_data``). A data URL anywhere else (a command's stdout,
#: a log line) is text the model reads, and counts as text.
_MEDIA_URL_KEYS = frozenset({"image_url", "url", "file_data"})
#: Gemini's blob fields, holding ``mime_type`` and ``data``.
_BLOB_KEYS = frozenset({"inline_data", "inlineData"})
_MEDIA_TYPE = re.compile(r"[a-z]+/[\w.+-]+", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/=_\-\s]+")
#: Characters of a payload's start and end checked to be base64.
_ENDS = 256


def split_media(value: Any) -> tuple[Any, list[Part]]:
    """(``value`` with every embedded media payload emptied, the media as parts).

    Media found: a ``data:<type>;base64,`` URL in an ``image_url``, ``url`` or ``file_data``
    field; a ``{"type": "base64", "media_type", "data"}`` source (Anthropic's); Gemini's
    ``inline_data`` (``mime_type``, ``data``); the ``result`` of an ``image_generation_call``
    (a base64 image). Each has a media type and a base64 payload, else it is text. ``value``
    is not changed: what holds media is copied.
    """
    media: list[Part] = []
    return _split(value, media, "", None), media


def _split(value: Any, media: list[Part], left: str, key: object) -> Any:
    """``value`` (the field ``key`` of its parent) with its payloads replaced by ``left``
    (each added to ``media``)."""
    if isinstance(value, str):
        if key in _MEDIA_URL_KEYS and value.startswith("data:"):
            media_type, encoded = _parse_data_url(value)
            if encoded and _is_media(media_type, encoded):
                media.append(_part(media_type, encoded))
                return left
        return value
    if isinstance(value, list | tuple):
        items = [_split(v, media, left, key) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if not isinstance(value, Mapping):
        return value
    found = _payload(value, key)
    if found is not None:
        field, media_type, payload = found
        media.append(_part(media_type, payload))
        return {k: (left if k == field else _split(v, media, left, k)) for k, v in value.items()}
    fields = {k: _split(v, media, left, k) for k, v in value.items()}
    return fields if any(fields[k] is not v for k, v in value.items()) else value


def _payload(value: Mapping[Any, Any], key: object) -> tuple[str, str | None, str | bytes] | None:
    """(field, media type, base64) of the payload a mapping (the field ``key`` of its parent)
    holds itself, if it holds one."""
    kind = value.get("type")
    data = value.get("data")
    if kind == "base64" and isinstance(data, str):
        media_type = value.get("media_type")
        if isinstance(media_type, str) and _is_media(media_type, data):
            return "data", media_type, data
        return None
    if key in _BLOB_KEYS:
        mime = value.get("mime_type", value.get("mimeType"))
        if isinstance(mime, str) and isinstance(data, bytes) and data:
            return "data", mime, data  # a google-genai object's dump
        if isinstance(mime, str) and isinstance(data, str) and _is_media(mime, data):
            return "data", mime, data
        return None
    result = value.get("result")
    if kind == "image_generation_call" and isinstance(result, str) and _is_media("image/", result):
        fmt = value.get("output_format")
        return "result", f"image/{fmt if isinstance(fmt, str) else 'png'}", result
    return None


def _is_media(media_type: str | None, payload: object) -> bool:
    """A payload of media: a media type (``image/png``; ``image/`` for one implied) and
    base64 text (its ends checked: a whole screenshot's check cost 2 ms a megabyte, every
    turn)."""
    return (
        isinstance(payload, str)
        and bool(payload)
        and media_type is not None
        and (media_type.endswith("/") or _MEDIA_TYPE.fullmatch(media_type) is not None)
        and payload.isascii()
        and _BASE64.fullmatch(payload[:_ENDS]) is not None
        and _BASE64.fullmatch(payload[-_ENDS:]) is not None
    )


def _part(media_type: str | None, payload: str | bytes) -> Part:
    media = (media_type or "").lower()
    kind: PartKind
    if media.startswith("image/"):
        kind = "image"
    elif media == "application/pdf" or media.startswith("text/"):
        kind = "document"
    elif media.startswith("audio/"):
        kind = "audio"
    else:
        kind = "file"
    return Part(kind, media_type=media_type, data=payload)


def has_media(value: Any) -> bool:
    """Whether ``value`` holds an embedded media payload (see :func:`split_media`)."""
    return bool(split_media(value)[1])


def readable(value: Any) -> Any:
    """``value`` as a summarizer may be shown it: media payloads marked as not shown, opaque
    fields (encrypted content, signatures) left out."""
    return _without_opaque(_split(value, [], "(not shown)", None))


def _without_opaque(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_opaque(v) for k, v in value.items() if k not in _OPAQUE_KEYS}
    if isinstance(value, list | tuple):
        return [_without_opaque(v) for v in value]
    return value
