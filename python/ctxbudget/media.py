"""What attachments cost: images, documents, audio and files, by each provider's rule.

The rule of a request (:func:`media_rule`) comes from its model's family, else its message
format; :func:`media_tokens` costs one attachment part by it. An attachment whose size or
page count cannot be read costs what the largest one may (leaning high keeps a budget safe).
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Callable

from ctxbudget.formats.model import Part

__all__ = [
    "DOCUMENT_PAGE_TOKENS",
    "UNKNOWN_DOCUMENT_PAGES",
    "UNKNOWN_IMAGE_TOKENS",
    "image_size",
    "image_tokens",
    "media_rule",
    "media_tokens",
]

Counter = Callable[[str], int]

#: The rule of a model the profiles do not know, by message format.
_FORMAT_IMAGE_RULE = {
    "openai_chat": "openai",
    "openai_responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


def media_rule(fmt: str, profile: str, profile_rule: str, model: str | None) -> str:
    """The attachment rule of a request in format ``fmt`` for ``model``: its framing
    profile's (``profile_rule``), or its format's when the profile is ``default`` (a model
    the profiles do not know)."""
    return _FORMAT_IMAGE_RULE[fmt] if profile == "default" else profile_rule


#: Cost of an image whose size is unknown, per rule: the largest an image can cost for OpenAI
#: and Anthropic; for Gemini, an image at Gemini 3's default (high) media resolution, which
#: Gemini 2.x tiling exceeds only for images over 1536 pixels a side.
UNKNOWN_IMAGE_TOKENS = {"openai": 1_445, "anthropic": 1_600, "gemini": 1_120}
#: Tokens per document page, per rule (OpenAI and Anthropic send text + a page image).
DOCUMENT_PAGE_TOKENS = {"openai": 1_500, "anthropic": 3_000, "gemini": 560}
#: Pages assumed when a document's page count cannot be read (URL, file id).
UNKNOWN_DOCUMENT_PAGES = 10


def image_tokens(
    width: int | None, height: int | None, rule: str, detail: str | None = None
) -> int:
    """Tokens for one image by a provider's published rule.

    - ``openai``: ``detail="low"`` is 85; otherwise fit in 2048x2048, shortest side to 768,
      85 + 170 per 512-pixel tile.
    - ``anthropic``: long edge at most 1568, then ``w*h/750``, at most 1600.
    - ``gemini``: 258 when both sides are at most 384, else 258 per 768x768 tile.

    An unknown size costs :data:`UNKNOWN_IMAGE_TOKENS` (the most an image can cost, except
    Gemini 2.x images over 1536 pixels a side).

    >>> image_tokens(1024, 1024, "openai"), image_tokens(1000, 750, "anthropic")
    (765, 1000)
    >>> image_tokens(300, 300, "gemini"), image_tokens(None, None, "openai", "low")
    (258, 85)
    """
    if rule == "openai" and detail == "low":
        return 85
    if not width or not height:
        return UNKNOWN_IMAGE_TOKENS.get(rule, 1_600)
    w, h = float(width), float(height)
    if rule == "anthropic":
        scale = min(1.0, 1568 / max(w, h))
        return min(1_600, math.ceil(w * scale * h * scale / 750))
    if rule == "gemini":
        if w <= 384 and h <= 384:
            return 258
        return 258 * math.ceil(w / 768) * math.ceil(h / 768)
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _head_bytes(data: str | bytes, limit: int = 65_536) -> bytes:
    if isinstance(data, bytes):
        return data[:limit]
    chunk = data[: limit // 3 * 4]
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk, validate=False)
    except ValueError:
        return b""


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header, or ``None``."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return int(w), int(h)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = int.from_bytes(data[24:27], "little") + 1
            h = int.from_bytes(data[27:30], "little") + 1
            return w, h
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return int(w) & 0x3FFF, int(h) & 0x3FFF
        if chunk == b"VP8L":
            b = data[21:25]
            w = 1 + (((b[1] & 0x3F) << 8) | b[0])
            h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
            return w, h
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                i += 1 if marker == 0xFF else 2
                continue
            length = int.from_bytes(data[i + 2 : i + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(w), int(h)
            i += 2 + length
    return None


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _document_pages(data: str | bytes | None) -> int:
    if data is None:
        return UNKNOWN_DOCUMENT_PAGES
    raw = data if isinstance(data, bytes) else _head_bytes(data, limit=1 << 62)
    pages = len(_PDF_PAGE.findall(raw))
    return pages or UNKNOWN_DOCUMENT_PAGES


def media_tokens(part: Part, rule: str, count: Counter) -> tuple[int, bool]:
    """(tokens, exact) of an image/document/audio/file part."""
    if part.kind == "image":
        size = image_size(_head_bytes(part.data)) if part.data is not None else None
        if size is None:
            return image_tokens(None, None, rule, part.detail), part.detail == "low"
        return image_tokens(size[0], size[1], rule, part.detail), True
    if part.kind == "document":
        if part.text and part.data is None:
            return count(part.text), True
        media = part.media_type or ""
        if part.data is not None and media.startswith("text/"):
            raw = part.data if isinstance(part.data, bytes) else _head_bytes(part.data, 1 << 62)
            return count(raw.decode("utf-8", "replace")), True
        return _document_pages(part.data) * DOCUMENT_PAGE_TOKENS.get(rule, 3_000), False
    # audio and other files: about one token per KB of encoded data, at least 100
    nbytes = len(part.data) * 3 // 4 if isinstance(part.data, str) else len(part.data or b"")
    return max(100, nbytes // 1_000), False
