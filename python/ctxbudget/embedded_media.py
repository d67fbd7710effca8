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

from collections.abc import Mapping
from typing import Any

from ctxbudget.formats.common import _parse_data_url
from ctxbudget.formats.model import Part, PartKind

__all__ = ["readable", "split_media"]

#: Keys whose values are opaque to the model as text (encrypted context, signatures): the
#: summarizer is not shown them (:func:`readable`).
_OPAQUE_KEYS = frozenset({"encrypted_content", "signature", "thought_signature"})


def split_media(value: Any) -> tuple[Any, list[Part]]:
    """(``value`` with every embedded media payload emptied, the media as parts).

    Media found: a ``data:...;base64,`` URL in any string field; a ``{"type": "base64",
    "media_type", "data"}`` source (Anthropic's); Gemini's ``inline_data`` (``mime_type``,
    ``data``); the ``result`` of an ``image_generation_call`` (a base64 image). ``value`` is
    not changed: what holds media is copied.
    """
    media: list[Part] = []
    return _split(value, media, ""), media


def _split(value: Any, media: list[Part], left: str) -> Any:
    """``value`` with its payloads replaced by ``left`` (each added to ``media``)."""
    if isinstance(value, str):
        if value.startswith("data:"):
            media_type, payload = _parse_data_url(value)
            if payload:
                media.append(_part(media_type, payload))
                return left
        return value
    if isinstance(value, list | tuple):
        items = [_split(v, media, left) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if not isinstance(value, Mapping):
        return value
    found = _payload(value)
    if found is not None:
        key, media_type, payload = found
        media.append(_part(media_type, payload))
        return {k: (left if k == key else _split(v, media, left)) for k, v in value.items()}
    fields = {k: _split(v, media, left) for k, v in value.items()}
    return fields if any(fields[k] is not v for k, v in value.items()) else value


def _payload(value: Mapping[Any, Any]) -> tuple[str, str | None, str] | None:
    """(key, media type, base64) of the payload a mapping holds itself, if it holds one."""
    kind = value.get("type")
    data = value.get("data")
    if kind == "base64" and isinstance(data, str) and data:
        media_type = value.get("media_type")
        return "data", media_type if isinstance(media_type, str) else None, data
    mime = value.get("mime_type", value.get("mimeType"))
    if isinstance(mime, str) and isinstance(data, str) and data and "type" not in value:
        return "data", mime, data  # Gemini inline_data (in its dict form)
    result = value.get("result")
    if kind == "image_generation_call" and isinstance(result, str) and result:
        fmt = value.get("output_format")
        return "result", f"image/{fmt if isinstance(fmt, str) else 'png'}", result
    return None


def _part(media_type: str | None, payload: str) -> Part:
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


def readable(value: Any) -> Any:
    """``value`` as a summarizer may be shown it: media payloads marked as not shown, opaque
    fields (encrypted content, signatures) left out."""
    return _without_opaque(_split(value, [], "(not shown)"))


def _without_opaque(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_opaque(v) for k, v in value.items() if k not in _OPAQUE_KEYS}
    if isinstance(value, list | tuple):
        return [_without_opaque(v) for v in value]
    return value
