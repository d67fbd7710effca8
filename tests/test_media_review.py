"""Review of ``ctxbudget.media`` against the providers' published rules.

- Gemini audio is 32 tokens a second of sound, whatever the encoding
  (https://ai.google.dev/gemini-api/docs/tokens, "Multimodal tokens"): the cost follows the
  duration read from the header, not one token per KB.
- Claude Opus 4.7 and later take images up to 2576 pixels on the long edge (about 3.75 MP),
  not 1568 / 1.15 MP (https://platform.claude.com/docs/en/build-with-claude/vision, "maximal
  native image resolution" per model; measured 3x the tokens:
  https://www.claudecodecamp.com/p/images-cost-3x-more-tokens-in-claude-opus-4-7).
- Image headers made by Pillow (when installed) are sized right; damaged ones never raise.
"""

from __future__ import annotations

import base64
import io
import random
import struct
import wave
import zlib
from typing import Any

import pytest

from ctxbudget.media import image_size, image_tokens, media_rule
from ctxbudget.request import estimate_request


def gemini_audio(data: bytes, mime: str, model: str = "gemini-2.5-flash") -> int:
    blob = {"mime_type": mime, "data": base64.b64encode(data).decode()}
    msgs = [{"role": "user", "parts": [{"inline_data": blob}]}]
    return estimate_request(msgs, model=model).components.attachments


def wav(seconds: int, rate: int, width: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(b"\0" * (rate * width * seconds))
    return out.getvalue()


def test_gemini_wav_costs_32_tokens_a_second() -> None:
    """60 s of 8 kHz 8-bit WAV (480 KB) is 1,920 tokens, not 480 (one per KB)."""
    tokens = gemini_audio(wav(60, 8_000, 1), "audio/wav")
    assert 1_920 <= tokens <= 1_925


def test_gemini_mp3_duration_from_its_bitrate() -> None:
    """A 60 s CBR MP3 at 64 kbps (480 KB; MPEG-1 layer III frames, an ID3v2 tag before them)
    is 1,920 tokens, not 480."""
    frame = b"\xff\xfb\x50\xc4" + b"\0" * 204  # MPEG-1 L3, 64 kbps, 44.1 kHz
    body = frame * (480_000 // len(frame))
    tag = b"ID3\x04\x00\x00" + bytes([0, 0, 0x01, 0x00]) + b"\0" * 128  # 128-byte tag
    tokens = gemini_audio(tag + body, "audio/mp3")
    assert 1_900 <= tokens <= 1_925


def test_gemini_audio_unknown_encoding_leans_high() -> None:
    """An Ogg file's duration is not read: it is costed at 16 kbps (2 KB a second), far
    above one token per KB."""
    tokens = gemini_audio(b"OggS" + b"\0" * 119_996, "audio/ogg")  # 120 KB: 60 s
    assert tokens >= 1_920


@pytest.mark.parametrize(
    "data",
    [b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0" + b"\0" * 16, b"fLaC" + b"\0" * 40, b"\xff\xff\xff\xff"],
)
def test_gemini_audio_damaged_headers_do_not_raise(data: bytes) -> None:
    assert gemini_audio(data * 100, "audio/wav") >= 32


def test_openai_audio_unchanged() -> None:
    """OpenAI publishes no tokens-per-second rule: its audio keeps the bytes estimate."""
    part = {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(wav(10, 8_000, 1)).decode(), "format": "wav"},
    }
    est = estimate_request([{"role": "user", "content": [part]}], model="gpt-4o-audio-preview")
    assert est.components.attachments == 100


@pytest.mark.parametrize(
    ("model", "rule"),
    [
        ("claude-opus-4-7", "anthropic-hires"),
        ("anthropic/claude-opus-4.7", "anthropic-hires"),
        ("us.anthropic.claude-opus-4-7-v1:0", "anthropic-hires"),
        ("claude-opus-5", "anthropic-hires"),
        ("claude-sonnet-4-5-20250929", "anthropic"),
        ("claude-opus-4-20250514", "anthropic"),
        ("claude-3-5-sonnet-20241022", "anthropic"),
        ("claude-3.7-sonnet", "anthropic"),
    ],
)
def test_claude_image_rule_by_version(model: str, rule: str) -> None:
    assert media_rule("anthropic", "anthropic", "anthropic", model) == rule


def png(width: int, height: int) -> bytes:
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def anthropic_image(model: str, width: int, height: int) -> int:
    source = {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(png(width, height)).decode(),
    }
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "source": source}]}
    ]
    return estimate_request(msgs, model=model).components.attachments


def test_opus_4_7_large_image_costs_its_3_75_mp() -> None:
    """A 2576x1449 screenshot on Opus 4.7: 2576*1449/750 = 4,977 tokens (it is not shrunk);
    older models keep the 1568-px / 1,600-token rule."""
    assert anthropic_image("claude-opus-4-7", 2576, 1449) == 4_977
    assert anthropic_image("claude-opus-4-7", 8000, 6000) == 5_000  # shrunk to 3.75 MP
    assert anthropic_image("claude-sonnet-4-5", 2576, 1449) == 1_600
    assert anthropic_image("claude-opus-4-7", 1000, 750) == 1_000


def test_huge_declared_dimensions_are_bounded_where_the_rule_resizes() -> None:
    for rule in ("openai", "openai-mini", "openai-gpt-5.6", "anthropic", "anthropic-hires"):
        assert image_tokens(100_000, 100_000, rule) <= 36_000


def test_pillow_images_sized_and_damaged_ones_do_not_raise() -> None:
    pil: Any = pytest.importorskip("PIL.Image")
    for size in [(1, 1), (640, 480), (4000, 3000), (16383, 3)]:
        for fmt, kw in [
            ("PNG", {}),
            ("JPEG", {"progressive": True}),
            ("GIF", {}),
            ("WEBP", {"lossless": True}),
            ("WEBP", {}),
        ]:
            out = io.BytesIO()
            pil.new("RGB", size).save(out, fmt, **kw)
            data = out.getvalue()
            assert image_size(data) == size, (fmt, kw)
            rnd = random.Random(0)
            for n in range(min(len(data), 64)):
                assert image_size(data[:n]) in (None, size)
            for _ in range(200):
                broken = bytearray(data[:128])
                broken[rnd.randrange(len(broken))] = rnd.randrange(256)
                image_size(bytes(broken))
