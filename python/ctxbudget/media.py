"""What attachments cost: images, documents, audio and files, by each provider's rule.

The rule of a request (:func:`media_rule`) comes from its model's family, else its message
format, and for OpenAI and Gemini from the model's name: the providers price images differently
per model. :func:`media_tokens` costs one attachment part by it. An attachment whose size or
page count cannot be read costs what the largest one may (leaning high keeps a budget safe).

Sources (checked 2026): OpenAI's "Images and vision" guide, *Calculating costs* and *Model
sizing behavior* (developers.openai.com/api/docs/guides/images-vision); Gemini's "Media
resolution" guide (ai.google.dev/gemini-api/docs/media-resolution); Anthropic's vision guide.
Where a guide gives no number for a model, the comment at the number says what was used.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbudget.formats.model import Part
from ctxbudget.models import _canonical, family_of

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


# --------------------------------------------------------------------------- image rules


@dataclass(frozen=True, slots=True)
class _Tiles:
    """OpenAI tile rule: ``detail="low"`` costs ``base``; otherwise fit in 2048x2048, shortest
    side to at most 768, then ``base + tile`` per 512-pixel square."""

    base: int
    tile: int


@dataclass(frozen=True, slots=True)
class _Patches:
    """OpenAI patch rule: 32-pixel patches, the image first shrunk to fit ``(budget, side)``
    of its ``detail`` (``auto`` for one not listed, ``side=None``: no size limit), times the
    model's multiplier (in hundredths, rounded up)."""

    hundredths: int
    limits: Mapping[str, tuple[int, int | None]]


#: ``gpt-4.1-mini``/``-nano``, ``o4-mini``, GPT-5 mini/nano, ``gpt-5.2``, ``gpt-5.3-codex``, ...:
#: 1,536 patches or a 2048-pixel side. ``low`` is not cheaper for these (the guide: "``low`` is
#: not always fewer tokens than ``high``"; the forum measures low == high), so it is costed so.
_PATCHES_1536 = {"auto": (1_536, 2_048)}
#: ``gpt-5.4``: ``high`` (and ``auto``) 2,500 patches or 2048 px; ``original`` 10,000 or 6000 px.
#: ``low`` is not given: costed as ``high``.
_PATCHES_GPT_54 = {"auto": (2_500, 2_048), "original": (10_000, 6_000)}
#: ``gpt-5.5``: as 5.4, but ``auto`` and an omitted ``detail`` mean ``original``.
_PATCHES_GPT_55 = {"low": (2_500, 2_048), "high": (2_500, 2_048), "auto": (10_000, 6_000)}
#: GPT-5.6: ``original``/``auto``/omitted keep the image's size (the API refuses one over 30,000
#: patches, so that is its largest); ``low``/``high`` "resize under finite limits" the guide does
#: not give: 2,500 as for 5.4/5.5 (the forum measures ``high`` capping at 3,000 = 2,500 x 1.2).
_PATCHES_GPT_56 = {"low": (2_500, 2_048), "high": (2_500, 2_048), "auto": (30_000, None)}

#: Rule name -> rule. A tuple is "the largest of these": for a model whose rule is not
#: published, every plausible one is costed and the highest kept.
_RULES: dict[str, _Tiles | _Patches | tuple[str, ...] | str] = {
    # Tile rules (guide's table: base tokens, tile tokens).
    "openai": _Tiles(85, 170),  # gpt-4o, gpt-4.1, gpt-4.5 (and GPT-4 Turbo / vision)
    "openai-gpt-4o-mini": _Tiles(2_833, 5_667),
    "openai-o-series": _Tiles(75, 150),  # o1, o1-pro, o3
    "openai-computer-use": _Tiles(65, 129),  # computer-use-preview
    "openai-gpt-5": _Tiles(70, 140),  # gpt-5, gpt-5-chat-latest
    # Patch rules (guide's multiplier table: gpt-4.1-mini, gpt-5-mini, gpt-5.4-mini 1.62;
    # the -nano ones 2.46; o4-mini 1.72). The forum measures less on the GPT-5 minis (1.2)
    # and nanos (1.5, 1.2): the guide's higher numbers are kept.
    "openai-mini": _Patches(162, _PATCHES_1536),
    "openai-nano": _Patches(246, _PATCHES_1536),
    "openai-o4-mini": _Patches(172, _PATCHES_1536),
    # The guide lists these with the patch models but gives them no multiplier (1, read
    # literally): 1.2, the higher, measured on gpt-5.2, gpt-5.3-codex and gpt-5.4 (forum) and
    # on a GPT-5.6 model (3000x3000 at original: 10,603 = 8,836 patches x 1.2); assumed for 5.5.
    "openai-patch": _Patches(120, _PATCHES_1536),
    "openai-gpt-5.4": _Patches(120, _PATCHES_GPT_54),
    "openai-gpt-5.5": _Patches(120, _PATCHES_GPT_55),
    "openai-gpt-5.6": _Patches(120, _PATCHES_GPT_56),
    # gpt-5.1 is in neither of the guide's lists: its GPT-5 tiles or its successor's patches.
    "openai-gpt-5.1": ("openai-gpt-5", "openai-patch"),
    # An OpenAI model the table does not know (a newer one, a deployment's own name): the
    # gpt-4o tiles or the newest rule (GPT-5.6 at original size), whichever costs more. Not
    # gpt-4o-mini's 33x pricing rule, a billing device of that one model, recognised by name.
    "openai-unknown": ("openai", "openai-gpt-5.6"),
    # Long edge at most 1568, then w*h/750, at most 1600.
    "anthropic": "anthropic",
    # Claude Opus 4.7 and later: long edge at most 2576 (about 3.75 MP), then w*h/750, at
    # most 5000 (3.75 MP / 750). Anthropic's vision guide gives each model its own "maximal
    # native image resolution" (platform.claude.com/docs/en/build-with-claude/vision); Opus
    # 4.7 raised it from 1568 to 2576 pixels, three times the tokens for a large image
    # (www.claudecodecamp.com/p/images-cost-3x-more-tokens-in-claude-opus-4-7 measures it).
    "anthropic-hires": "anthropic-hires",
    # A Claude name whose version cannot be read: the larger of the two.
    "anthropic-unknown": ("anthropic", "anthropic-hires"),
    # Gemini 1.5 / 2.x: 258 when both sides are at most 384, else 258 per 768x768 tile; an
    # image over 3072 px a side is "scaled down and padded to fit a maximum resolution of 3072
    # x 3072" (Vertex AI / Firebase "input file requirements"): 16 tiles, 4,128 tokens at most.
    "gemini": "gemini",
    # Gemini 3: a set count per image by media resolution (default high: 1120).
    "gemini-3": "gemini-3",
    "gemini-unknown": ("gemini", "gemini-3"),
}

#: OpenAI model (canonical name) -> rule, first match wins; see the guide's two tables.
_OPENAI_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"^gpt-4o-mini", "openai-gpt-4o-mini"),
        # The codex minis have no published multiplier: gpt-5-mini's 1.62, the highest plausible.
        (r"^(?:gpt-4\.1|gpt-5|gpt-5\.4)-mini|^gpt-5(?:\.1)?-codex-mini", "openai-mini"),
        (r"^(?:gpt-4\.1|gpt-5|gpt-5\.4)-nano", "openai-nano"),
        (r"^(?:o4-mini|codex-mini)", "openai-o4-mini"),  # codex-mini-latest: an o4-mini
        (r"^o[13](?![a-z0-9])", "openai-o-series"),
        (r"^computer-use-preview", "openai-computer-use"),
        (r"^gpt-5\.[23](?![0-9])", "openai-patch"),
        (r"^gpt-5\.1(?![0-9])", "openai-gpt-5.1"),
        (r"^gpt-5\.4(?![0-9])", "openai-gpt-5.4"),
        (r"^gpt-5\.5(?![0-9])", "openai-gpt-5.5"),
        (r"^gpt-5\.6(?![0-9])", "openai-gpt-5.6"),
        (r"^gpt-5(?![0-9.])", "openai-gpt-5"),  # also gpt-5-pro and gpt-5-codex (not listed)
        # The tiles of gpt-4o; GPT-4 / 3.5 and gpt-oss take no images.
        (r"^(?:gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-4|gpt-3\.5|gpt-oss)(?![0-9.])", "openai"),
    )
)
_GEMINI_VERSION = re.compile(r"^gemini-(\d+)(?![0-9])")
#: ``claude-opus-4-7``, ``claude-sonnet-4-5-20250929``, ``claude-opus-4`` (minor absent: 0).
_CLAUDE_VERSION = re.compile(r"^claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?![0-9])")
#: ``claude-3-5-sonnet``, ``claude-3-opus``: all before Opus 4.7's larger images.
_CLAUDE_3 = re.compile(r"^claude-\d+(?:-\d)?-(?:opus|sonnet|haiku)")
#: The first Claude version whose images may be 2576 pixels a side (Opus 4.7).
_CLAUDE_HIRES = (4, 7)

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
    the profiles do not know); for OpenAI and Gemini, refined by the model's name.

    An OpenAI name the table does not know costs the larger of the gpt-4o and GPT-5.6 rules;
    a Gemini name without a version, the larger of the 2.x and 3 rules.

    >>> media_rule("openai_chat", "openai", "openai", "gpt-4o-mini-2024-07-18")
    'openai-gpt-4o-mini'
    >>> media_rule("gemini", "gemini", "gemini", "gemini-3-pro-preview")
    'gemini-3'
    """
    rule = _FORMAT_IMAGE_RULE[fmt] if profile == "default" else profile_rule
    if not model or rule not in ("openai", "gemini", "anthropic"):
        return rule
    name = _canonical(model)
    if rule == "anthropic":
        return _anthropic_rule(name, family_of(model) == "anthropic")
    if rule == "gemini":
        version = _GEMINI_VERSION.match(name)
        if version:
            return "gemini-3" if int(version.group(1)) >= 3 else "gemini"
        return "gemini-unknown" if name.startswith("gemini") else rule
    for pattern, named in _OPENAI_NAMES:
        if pattern.match(name):
            return named
    return "openai-unknown" if family_of(model) == "openai" else rule


def _anthropic_rule(name: str, claude: bool) -> str:
    """``anthropic-hires`` from Claude 4.7 on, ``anthropic`` before it; for a Claude name
    without a readable version, the larger of the two (a newer model's images may be large)."""
    version = _CLAUDE_VERSION.match(name)
    if version:
        minor = int(version.group(2) or 0)
        return "anthropic-hires" if (int(version.group(1)), minor) >= _CLAUDE_HIRES else "anthropic"
    if _CLAUDE_3.match(name) or not claude:
        return "anthropic"
    return "anthropic-unknown"


#: Anthropic rule -> (longest side, most tokens an image costs): 1568 px / 1600 (1.15 MP),
#: and from Opus 4.7 on 2576 px / 5000 (3.75 MP).
_ANTHROPIC = {"anthropic": (1_568, 1_600), "anthropic-hires": (2_576, 5_000)}
#: The most 512-pixel tiles an image has after the tile rule's resizing (2048 x 768).
_MAX_TILES = 8
#: Gemini 2.x: the largest side an image keeps (a larger one is padded to 3072 x 3072) and
#: the pixels a tile covers.
_GEMINI_MAX_SIDE, _GEMINI_TILE = 3_072, 768
#: Gemini 3 tokens per image by media resolution (``media_resolution_high`` is the default;
#: ``ultra_high`` can only be set on a part).
_GEMINI_3_IMAGE = {"low": 280, "medium": 560, "high": 1_120, "ultra_high": 2_240}


def image_tokens(
    width: int | None, height: int | None, rule: str, detail: str | None = None
) -> int:
    """Tokens for one image by a provider's published rule.

    - ``openai`` (gpt-4o, 4.1, 4.5) and the other OpenAI tile rules (``openai-gpt-4o-mini``,
      ``openai-o-series``, ``openai-computer-use``, ``openai-gpt-5``): ``detail="low"`` is the
      base; otherwise fit in 2048x2048, shortest side to 768, base + a set count per 512-pixel
      tile (85 + 170 for gpt-4o).
    - OpenAI patch rules (``openai-mini``, ``openai-nano``, ``openai-o4-mini``,
      ``openai-patch``, ``openai-gpt-5.4`` ... ``5.6``): 32-pixel patches after shrinking to
      the model's patch budget, times its multiplier (1.62 for the minis).
    - ``anthropic``: long edge at most 1568, then ``w*h/750``, at most 1600;
      ``anthropic-hires`` (Claude Opus 4.7 on): long edge at most 2576, at most 5000.
    - ``gemini`` (1.5, 2.x): 258 when both sides are at most 384, else 258 per 768x768 tile;
      over 3072 pixels a side, padded to 3072x3072 (16 tiles, 4128).
    - ``gemini-3``: 1120 an image, or by ``detail`` as its media resolution (``low`` 280,
      ``medium`` 560, ``ultra_high`` 2240).

    An unknown size costs the most an image can cost by the rule
    (:data:`UNKNOWN_IMAGE_TOKENS`), except for Gemini 2.x images over 1536 pixels a side. A
    rule this module does not know is costed as ``openai``. Every rule's cost is bounded,
    whatever size a header declares.

    >>> image_tokens(1024, 1024, "openai"), image_tokens(1000, 750, "anthropic")
    (765, 1000)
    >>> image_tokens(300, 300, "gemini"), image_tokens(None, None, "openai", "low")
    (258, 85)
    >>> image_tokens(1024, 1024, "openai-gpt-4o-mini"), image_tokens(1024, 1024, "openai-mini")
    (25501, 1659)
    """
    spec = _RULES.get(rule, _RULES["openai"])
    if isinstance(spec, tuple):
        return max(image_tokens(width, height, r, detail) for r in spec)
    if isinstance(spec, _Tiles):
        if detail == "low":
            return spec.base
        tiles = _tile_count(width, height) if width and height else _MAX_TILES
        return spec.base + spec.tile * tiles
    if isinstance(spec, _Patches):
        budget, side = spec.limits.get(detail or "auto", spec.limits["auto"])
        patches = _patch_count(width, height, budget, side) if width and height else budget
        return -(-patches * spec.hundredths // 100)
    if spec == "gemini-3":
        return _GEMINI_3_IMAGE.get(detail or "high", _GEMINI_3_IMAGE["high"])
    if spec in _ANTHROPIC:
        side, most = _ANTHROPIC[spec]
        if not width or not height:
            return most
        w, h = float(width), float(height)
        scale = min(1.0, side / max(w, h))
        return min(most, math.ceil(w * scale * h * scale / 750))
    if not width or not height:
        return 1_120  # Gemini 2.x: see UNKNOWN_IMAGE_TOKENS
    w, h = float(width), float(height)
    if w <= 384 and h <= 384:
        return 258
    if max(w, h) > _GEMINI_MAX_SIDE:  # scaled down, then padded to the largest square
        w = h = _GEMINI_MAX_SIDE
    return 258 * math.ceil(w / _GEMINI_TILE) * math.ceil(h / _GEMINI_TILE)


def _tile_count(width: int, height: int) -> int:
    w, h = float(width), float(height)
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return math.ceil(w / 512) * math.ceil(h / 512)


def _patch_count(width: int, height: int, budget: int, side: int | None) -> int:
    """32-pixel patches of an image shrunk, keeping its aspect ratio, to at most ``side``
    pixels a side and ``budget`` patches (the guide's steps A-C)."""
    w, h = float(width), float(height)
    if side is not None and max(w, h) > side:
        scale = side / max(w, h)
        w, h = max(1.0, math.floor(w * scale)), max(1.0, math.floor(h * scale))
    patches = math.ceil(w / 32) * math.ceil(h / 32)
    if patches <= budget:
        return patches
    r = math.sqrt(32 * 32 * budget / (w * h))
    fit_w, fit_h = w * r / 32, h * r / 32
    r *= min(max(1, math.floor(fit_w)) / fit_w, max(1, math.floor(fit_h)) / fit_h)
    w, h = max(1.0, math.floor(w * r)), max(1.0, math.floor(h * r))
    return min(budget, math.ceil(w / 32) * math.ceil(h / 32))


#: Cost of an image whose size is unknown, per rule: the most an image can cost by it (an
#: OpenAI rule at its default ``detail``; 1,445 for gpt-4o, 48,169 for gpt-4o-mini). For
#: Gemini 2.x, an image at Gemini 3's default (high) media resolution, which 2.x tiling exceeds
#: only for images over 1536 pixels a side (at most 4,128, for one over 2304).
UNKNOWN_IMAGE_TOKENS = {rule: image_tokens(None, None, rule) for rule in _RULES}
#: Tokens per document page, per provider (OpenAI and Anthropic send text + a page image).
DOCUMENT_PAGE_TOKENS = {"openai": 1_500, "anthropic": 3_000, "gemini": 560}
#: Pages assumed when a document's page count cannot be read (URL, file id, not a PDF).
UNKNOWN_DOCUMENT_PAGES = 10


def _provider(rule: str) -> str:
    return rule.split("-", 1)[0]


# --------------------------------------------------------------------------- image size


def _head_bytes(data: str | bytes, limit: int = 65_536) -> bytes:
    """The first ``limit`` bytes (about) of raw or base64 data. Base64 wrapped in lines
    (``base64.encodebytes``, ``openssl base64``) or led by a space is read as well: the
    whitespace goes before the text is cut to whole 4-character groups."""
    if isinstance(data, bytes):
        return data[:limit]
    chunk = data[: limit // 3 * 4]
    if any(space in chunk for space in "\n\r \t"):
        chunk = "".join(chunk.split())
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk, validate=False)
    except ValueError:
        return b""


def _bytes_at(data: str | bytes, offset: int, size: int) -> bytes:
    """``size`` bytes of raw or (unwrapped) base64 data from ``offset``; fewer at its end."""
    if isinstance(data, bytes):
        return data[offset : offset + size]
    start = offset // 3 * 4
    chunk = data[start : start + (size + offset % 3 + 2) // 3 * 4]
    try:
        raw = base64.b64decode(chunk[: len(chunk) - len(chunk) % 4], validate=False)
    except ValueError:
        return b""
    return raw[offset % 3 : offset % 3 + size]


#: Most JPEG segments walked to find the frame's size (a real file has a dozen or so).
_JPEG_MAX_SEGMENTS = 1_000


def _jpeg_size(data: str | bytes) -> tuple[int, int] | None:
    """A JPEG's width and height, found by walking its segments by their lengths: reading a
    few bytes a segment, where the size sits past the first 64 KB (a large ICC profile or
    thumbnail before the frame header). Base64 wrapped in lines is unwrapped first (offsets
    into it would read the wrong bytes)."""
    if isinstance(data, str) and any(space in data for space in "\n\r \t"):
        data = "".join(data.split())
    at = 2
    for _ in range(_JPEG_MAX_SEGMENTS):
        head = _bytes_at(data, at, 9)
        if len(head) < 2 or head[0] != 0xFF:
            return None
        marker = head[1]
        if marker == 0xFF:  # a fill byte
            at += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # a marker without a length
            at += 2
            continue
        if len(head) < 4:
            return None
        length = int.from_bytes(head[2:4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if len(head) < 9:
                return None
            h, w = struct.unpack(">HH", head[5:9])
            return (int(w), int(h)) if w and h else None  # (a height of 0: set later, DNL)
        if marker == 0xDA or length < 2:  # the scan starts: no frame header before it
            return None
        at += 2 + length
    return None


#: Largest width or height a PNG may declare (the PNG specification, IHDR: "zero is an invalid
#: value", at most 2^31 - 1).
_PNG_MAX_SIDE = (1 << 31) - 1


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header, or ``None`` (also for a PNG
    whose first chunk is not its IHDR, or whose size the PNG specification rules out: bytes
    after a PNG signature are not a size)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        if data[12:16] != b"IHDR" or not (0 < w <= _PNG_MAX_SIDE and 0 < h <= _PNG_MAX_SIDE):
            return None
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
        if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # a key frame's start code
            w, h = struct.unpack("<HH", data[26:30])
            return int(w) & 0x3FFF, int(h) & 0x3FFF
        if chunk == b"VP8L" and data[20] == 0x2F:  # the lossless stream's signature byte
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
                return (int(w), int(h)) if w and h else None
            i += 2 + length
    return None


def _image_size(data: str | bytes) -> tuple[int, int] | None:
    """:func:`image_size` of raw or base64 image data, a JPEG's read past its first 64 KB."""
    head = _head_bytes(data)
    size = image_size(head)
    if size is None and head[:2] == b"\xff\xd8":
        size = _jpeg_size(data)
    return size


# --------------------------------------------------------------------------- PDF pages
#
# The page count is the /Count of the page tree's root (the /Type /Pages node without a
# /Parent), or the number of /Type /Page objects, whichever is larger (an incremental update
# can leave an old root or a deleted page behind: both err high). pdfTeX, Word and qpdf keep
# these objects in compressed object streams, which are inflated here (Flate only). A large PDF
# is read at its two ends first, where producers put the page tree; only if no root is there is
# it read whole, up to _PDF_SCAN_LIMIT; then pypdf, if installed; then its size decides.

#: Bytes read at each end of a PDF before reading it whole (both ends of a 100 MB PDF in
#: base64: 8 ms here, where decoding all of it took the old whole-file scan 390 ms).
_PDF_WINDOW = 1 << 20
#: Largest PDF read whole or handed to pypdf (a 30 MB one: 145 ms in base64, 35 ms as bytes);
#: beyond it, only the two ends are read.
_PDF_SCAN_LIMIT = 32 << 20
#: Most bytes inflated from the object streams of one PDF (a bound on a deflate bomb).
_PDF_INFLATE_LIMIT = 64 << 20
#: A PDF whose pages cannot be counted is costed one page per this many bytes (densely set
#: text compresses to about 2-3 KB a page; pdfTeX manuals here: 7-8 KB), at least
#: UNKNOWN_DOCUMENT_PAGES: high, so that a long document is not costed as a short one.
_PDF_BYTES_PER_PAGE = 2_000

_PDF_PAGES = re.compile(rb"/Type\s*/Pages(?![A-Za-z0-9])")
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z0-9])")
#: Numbers are read up to 18 digits (a longer one is damage, and ``int()`` refuses 4,300).
_PDF_COUNT = re.compile(rb"/Count\s*(\d{1,18})(?![0-9])")
_PDF_OBJSTM = re.compile(rb"/Type\s*/ObjStm(?![A-Za-z0-9])")
_PDF_INT = re.compile(rb"/(N|First|Length)\s+(\d{1,18})(?![0-9]|\s+\d+\s+R)")


@dataclass(slots=True)
class _PageTree:
    """What a scan of PDF bytes found: root /Count values, other node /Count values, leaves."""

    roots: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    leaves: int = 0
    inflated: int = 0
    complete: bool = True

    def pages(self, *, whole: bool) -> int | None:
        if self.roots:
            return max(*self.roots, self.leaves)
        if whole and self.complete and (self.nodes or self.leaves):
            return max(*self.nodes, self.leaves)
        return None

    def node(self, obj: bytes) -> None:
        count = _PDF_COUNT.search(obj)
        if count:
            (self.nodes if b"/Parent" in obj else self.roots).append(int(count.group(1)))


def _scan_pdf(raw: bytes) -> _PageTree:
    """Page-tree nodes and pages in PDF bytes (a whole file or a slice of one)."""
    tree = _PageTree(leaves=len(_PDF_PAGE.findall(raw)))
    for m in _PDF_PAGES.finditer(raw):
        start = raw.rfind(b"obj", 0, m.start())
        end = raw.find(b"endobj", m.end())
        if start >= 3 and raw[start - 3 : start] != b"end" and end >= 0:  # a whole object
            tree.node(raw[start:end])
    for m in _PDF_OBJSTM.finditer(raw):
        _scan_object_stream(raw, m, tree)
    return tree


def _scan_object_stream(raw: bytes, m: re.Match[bytes], tree: _PageTree) -> None:
    """Inflate the object stream whose dictionary holds ``m`` and count what it holds."""
    start = raw.rfind(b"obj", 0, m.start())
    begin = raw.find(b"stream", m.end())
    if start < 0 or begin < 0:
        return
    head = raw[start:begin]
    ints = {k.decode(): int(v) for k, v in _PDF_INT.findall(head)}
    if b"/FlateDecode" not in head or head.count(b"Decode") != 1:
        tree.complete = False  # another filter, a predictor, or a filter chain: not read here
        return
    begin += 6
    begin += 2 if raw[begin : begin + 2] == b"\r\n" else 1
    stop = begin + ints["Length"] if "Length" in ints else raw.find(b"endstream", begin)
    if stop < begin or stop > len(raw) or "N" not in ints or "First" not in ints:
        tree.complete = False  # cut off (a slice of the file) or not a valid object stream
        return
    room = _PDF_INFLATE_LIMIT - tree.inflated
    try:
        body = zlib.decompressobj().decompress(raw[begin:stop], room) if room > 0 else b""
    except zlib.error:
        tree.complete = False  # encrypted, or damaged
        return
    tree.inflated += len(body)
    if not body or len(body) >= room:
        tree.complete = False
        return
    first = ints["First"]
    tree.leaves += len(_PDF_PAGE.findall(body, first))
    if not _PDF_PAGES.search(body, first):
        return
    try:  # the header: object number and offset of each of its N objects
        offsets = [int(x) for x in body[:first].split()[1 : 2 * ints["N"] : 2]]
    except ValueError:
        return
    for i, offset in enumerate(offsets):
        end = first + offsets[i + 1] if i + 1 < len(offsets) else len(body)
        obj = body[first + offset : end]
        if _PDF_PAGES.search(obj):
            tree.node(obj)


def _pdf_slice(data: str | bytes, start: int, stop: int) -> bytes:
    """Bytes ``start:stop`` of a PDF given as bytes or base64 (widened to whole 3-byte groups);
    ``b""`` if the base64 cannot be cut there (line breaks in it)."""
    if isinstance(data, bytes):
        return data[start:stop]
    chars = data[start // 3 * 4 : -(-stop // 3) * 4]
    if start == 0:  # a prefix can be cut anywhere once line breaks are dropped
        chars = "".join(chars.split())
        chars = chars[: len(chars) // 4 * 4]
    try:
        return binascii.a2b_base64(chars)
    except (binascii.Error, ValueError):
        return b""


def _pdf_pages(data: str | bytes, size: int) -> int | None:
    """The page count of a PDF of ``size`` bytes, or ``None`` if it cannot be read."""
    if size > 4 * _PDF_WINDOW:
        ends = _scan_pdf(_pdf_slice(data, 0, _PDF_WINDOW))
        tail = _scan_pdf(_pdf_slice(data, size - _PDF_WINDOW, size + 3))
        if ends.roots or tail.roots:
            return max(*ends.roots, *tail.roots, ends.leaves, tail.leaves)
        if size > _PDF_SCAN_LIMIT:
            return None
    if isinstance(data, bytes):
        raw = data
    else:
        try:
            raw = base64.b64decode(data)
        except ValueError:
            return None
    return _scan_pdf(raw).pages(whole=True) or _pypdf_pages(raw)


def _pypdf_pages(raw: bytes) -> int | None:
    """The root /Count as pypdf reads it (optional: ``ctxbudget[documents]``), or ``None``."""
    try:
        import pypdf
    except ImportError:
        return None
    from ctxbudget.documents import quiet_pypdf  # documents reads files: not at import

    try:
        with quiet_pypdf(pypdf):  # its repair warnings are not the caller's to see
            reader = pypdf.PdfReader(io.BytesIO(raw))
            if reader.is_encrypted:
                reader.decrypt("")
            trailer: Any = reader.trailer  # resolves only the objects on the way (lazy)
            count = int(trailer["/Root"]["/Pages"]["/Count"])
    except Exception:  # pypdf's errors on a damaged or encrypted file are many kinds
        return None
    return count if count > 0 else None


def _document_pages(data: str | bytes | None) -> int:
    """Pages of an inline document: a PDF's page count, else a guess that errs high."""
    if data is None:
        return UNKNOWN_DOCUMENT_PAGES
    if b"%PDF-" not in _pdf_slice(data, 0, 1_024):
        return UNKNOWN_DOCUMENT_PAGES
    size = len(data) if isinstance(data, bytes) else len(data) * 3 // 4
    pages = _pdf_pages(data, size)
    if pages and pages <= size:  # each page takes bytes: a larger /Count is damage
        return pages
    return max(UNKNOWN_DOCUMENT_PAGES, -(-size // _PDF_BYTES_PER_PAGE))


# --------------------------------------------------------------------------- one part


def _gemini_resolution(part: Part) -> str | int | None:
    """A Gemini part's own media resolution: a level (``low`` ... ``ultra_high``), a token
    count it asks for, or ``None``."""
    value: Any = part.extra.get("media_resolution", part.extra.get("mediaResolution"))
    if isinstance(value, Mapping):
        tokens = value.get("num_tokens", value.get("numTokens"))
        if isinstance(tokens, int) and tokens > 0:
            return tokens
        value = value.get("level")
    if isinstance(value, str):
        return value.lower().removeprefix("media_resolution_") or None
    return None


def _page_tokens(part: Part, rule: str) -> int:
    """Tokens a document page costs: the provider's, or on Gemini 3 those of the media
    resolution the part asks for (a PDF page costs what an image does: 280 at ``low``, 560 at
    ``medium``, its default, 1120 at ``high``; ai.google.dev/gemini-api/docs/media-resolution)."""
    if rule == "gemini-3":
        resolution = _gemini_resolution(part)
        if isinstance(resolution, int):
            return resolution
        if resolution in _GEMINI_3_IMAGE:
            return _GEMINI_3_IMAGE[resolution]
    return DOCUMENT_PAGE_TOKENS.get(_provider(rule), 3_000)


def media_tokens(part: Part, rule: str, count: Counter) -> tuple[int, bool]:
    """(tokens, exact) of an image/document/audio/file part."""
    if part.kind == "image":
        detail = part.detail
        if rule.startswith("gemini"):
            resolution = _gemini_resolution(part)
            if isinstance(resolution, int):
                return resolution, True
            detail = resolution
        size = _image_size(part.data) if part.data is not None else None
        if size is None:  # exact only if the rule's cost does not depend on the size
            tokens = image_tokens(None, None, rule, detail)
            return tokens, tokens == image_tokens(1, 1, rule, detail)
        return image_tokens(size[0], size[1], rule, detail), True
    if part.kind == "document":
        if part.text and part.data is None:
            return count(part.text), True
        media = part.media_type or ""
        if part.data is not None and media.startswith("text/"):
            raw = part.data if isinstance(part.data, bytes) else _head_bytes(part.data, 1 << 62)
            return count(raw.decode("utf-8", "replace")), True
        return _document_pages(part.data) * _page_tokens(part, rule), False
    # audio and other files: about one token per KB of encoded data, at least 100
    nbytes = len(part.data) * 3 // 4 if isinstance(part.data, str) else len(part.data or b"")
    if part.data is not None and rule.startswith("gemini"):
        if part.kind == "audio":
            return _gemini_audio_tokens(part.data, nbytes), False
        if (part.media_type or "").startswith("video/"):
            video = _gemini_video_tokens(part.data, nbytes, _gemini_resolution(part))
            if video is not None:
                return video, False
    return max(100, nbytes // 1_000), False


# --------------------------------------------------------------------------- audio
#
# Gemini: "each second of audio is represented as 32 tokens; one minute of audio is 1,920
# tokens" (ai.google.dev/gemini-api/docs/tokens, "Multimodal tokens"), whatever the encoding,
# so the cost follows the duration, not the bytes: one token per KB is 32 a second only for
# 16 kHz 16-bit mono WAV, and a quarter of the real cost for a 64 kbps MP3.

#: Gemini audio tokens a second.
_GEMINI_AUDIO_PER_SECOND = 32
#: Bits a second assumed for audio whose duration cannot be read (AAC, Ogg, a VBR MP3):
#: Gemini's own 16 kbps ("downsamples audio files to a 16 Kbps data resolution",
#: ai.google.dev/gemini-api/docs/audio); a file encoded lower would cost more.
_AUDIO_FALLBACK_BPS = 16_000
#: Fewest bytes a second of audio is believed to take (800 bps): the lowest rate of the codecs
#: Gemini reads (WAV, MP3, AIFF, AAC, Ogg Vorbis, FLAC) is 8 kbps, all but FLAC's near-silence.
#: A header declaring a longer duration (a byte rate of 1, a FLAC sample count of 2^36) is
#: damage, and is costed at this rate.
_AUDIO_MIN_BYTES_PER_SECOND = 100
#: The longest audio one Gemini prompt may hold: 9.5 hours (ai.google.dev/gemini-api/docs/audio).
_GEMINI_AUDIO_MAX_SECONDS = 9.5 * 3_600
#: MPEG audio bitrates in kbps by (MPEG-1?, layer) and the header's 4-bit index (1-14).
_MP3_KBPS = {
    (True, 1): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}


def _gemini_audio_tokens(data: str | bytes, nbytes: int) -> int:
    """32 tokens a second of the audio's duration, read from its header (WAV, FLAC, a CBR
    MP3), else from its size at :data:`_AUDIO_FALLBACK_BPS`; at least one second, and at most
    what its bytes can hold or one prompt may take (a damaged header is not believed)."""
    seconds = _audio_seconds(data, nbytes)
    if seconds is None:
        seconds = nbytes * 8 / _AUDIO_FALLBACK_BPS
    seconds = min(seconds, nbytes / _AUDIO_MIN_BYTES_PER_SECOND, _GEMINI_AUDIO_MAX_SECONDS)
    return max(_GEMINI_AUDIO_PER_SECOND, math.ceil(seconds * _GEMINI_AUDIO_PER_SECOND))


def _audio_seconds(data: str | bytes, nbytes: int) -> float | None:
    """The duration of WAV, FLAC or constant-bitrate MP3 audio of ``nbytes`` bytes, or
    ``None``. WAV counts every byte as sound at its byte rate (the header errs high)."""
    head = _head_bytes(data, 4_096)
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        i = 12
        while i + 8 <= len(head):
            size = int.from_bytes(head[i + 4 : i + 8], "little")
            if head[i : i + 4] == b"fmt " and i + 20 <= len(head):
                byte_rate = int.from_bytes(head[i + 16 : i + 20], "little")
                return nbytes / byte_rate if byte_rate else None
            i += 8 + size + (size & 1)
        return None
    if head[:4] == b"fLaC" and len(head) >= 26:
        bits = int.from_bytes(head[18:26], "big")  # STREAMINFO: rate 20, ch 3, bps 5, n 36
        rate, samples = bits >> 44, bits & ((1 << 36) - 1)
        return samples / rate if rate and samples else None
    offset = 0
    if head[:3] == b"ID3" and len(head) >= 10:  # ID3v2 tag: a 28-bit "syncsafe" size
        offset = 10 + sum((b & 0x7F) << (7 * (3 - k)) for k, b in enumerate(head[6:10]))
        head = _pdf_slice(data, offset, offset + 4_096)
    return _mp3_seconds(head, nbytes - offset)


def _mp3_seconds(head: bytes, nbytes: int) -> float | None:
    """Duration of a constant-bitrate MPEG audio stream from its first frame header;
    ``None`` if there is none or the stream is variable-bitrate (a Xing/VBRI frame)."""
    if len(head) < 4 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return None
    version, layer, index = (head[1] >> 3) & 3, 4 - ((head[1] >> 1) & 3), head[2] >> 4
    if version == 1 or layer == 4 or not 1 <= index <= 14:
        return None  # reserved version or layer, free or bad bitrate
    if b"Xing" in head[:200] or b"VBRI" in head[:200]:
        return None  # the first frame's bitrate is not the stream's
    mpeg1 = version == 3
    kbps = _MP3_KBPS[(mpeg1, layer if mpeg1 else min(layer, 2))][index - 1]
    return nbytes * 8 / (kbps * 1_000)


# --------------------------------------------------------------------------- video
#
# Gemini: "each second of video is tokenized": a frame a second at 258 tokens (66 at low media
# resolution), 32 tokens of audio and metadata, "about 300 tokens per second of video at the
# default media resolution, or 100 tokens per second at low" (ai.google.dev/gemini-api/docs/
# video-understanding, "Technical details"). The duration is read from an MP4/QuickTime movie
# header; a video whose duration cannot be read keeps the bytes estimate.

#: Gemini video tokens a second, by media resolution (``None``: the default).
_GEMINI_VIDEO_PER_SECOND = {"low": 100}
_GEMINI_VIDEO_DEFAULT = 300
#: Fewest bytes a second of video is believed to take (8 kbps); a longer declared duration
#: is damage and is costed at this rate.
_VIDEO_MIN_BYTES_PER_SECOND = 1_000
#: The longest video a Gemini prompt may hold: 6 hours (2M-token models at low resolution).
_GEMINI_VIDEO_MAX_SECONDS = 6 * 3_600


def _gemini_video_tokens(data: str | bytes, nbytes: int, resolution: object) -> int | None:
    """Tokens of a Gemini video by its duration, or ``None`` if the duration cannot be read."""
    seconds = _mp4_seconds(data, nbytes)
    if seconds is None:
        return None
    seconds = min(seconds, nbytes / _VIDEO_MIN_BYTES_PER_SECOND, _GEMINI_VIDEO_MAX_SECONDS)
    rate = _GEMINI_VIDEO_PER_SECOND.get(str(resolution), _GEMINI_VIDEO_DEFAULT)
    return max(rate, math.ceil(seconds * rate))


def _mp4_seconds(data: str | bytes, nbytes: int) -> float | None:
    """The duration in an MP4/QuickTime ``mvhd`` box (in the file's first or last MB, where
    encoders put the movie header), or ``None``."""
    for start in (0, max(0, nbytes - _PDF_WINDOW)):
        raw = _pdf_slice(data, start, start + _PDF_WINDOW + 3)
        at = raw.find(b"mvhd")
        if at < 0:
            continue
        version = raw[at + 4 : at + 5]
        if version == b"\x00" and at + 24 <= len(raw):
            scale, duration = struct.unpack(">II", raw[at + 16 : at + 24])
        elif version == b"\x01" and at + 36 <= len(raw):
            scale, duration = struct.unpack(">IQ", raw[at + 24 : at + 36])
        else:
            return None
        return duration / scale if scale and duration else None
    return None
