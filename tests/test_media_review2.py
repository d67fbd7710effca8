"""Second review of ``ctxbudget.media``: no header field makes a cost unbounded or raises.

- Gemini 2.x images: 258 tokens a 768x768 tile, and an image over 3072 pixels a side is
  "scaled down and padded to fit a maximum resolution of 3072 x 3072" (Vertex AI / Firebase
  input file requirements): 16 tiles at most, not 258 per tile of any size a header declares.
- A PNG whose first chunk is not its IHDR, or which declares a side the PNG specification rules
  out (0 or over 2^31 - 1), or a WebP without its stream's signature, is of unknown size.
- A PDF whose /Count exceeds its bytes is damaged (its size decides), and a /Count of thousands
  of digits does not raise.
- Gemini audio is at most what its bytes can hold (no codec Gemini reads goes below 8 kbps,
  bar FLAC's near-silence) and at most 9.5 hours; video is about 300 tokens a second at the
  default media resolution, 100 at low (ai.google.dev/gemini-api/docs/video-understanding).
- (2026-12-03) A JPEG's frame header past its first 64 KB (a large ICC profile) and base64
  wrapped in lines give the image's size (it was unknown: under-counted for Gemini 2.x); an
  exact counter's counts are not scaled by the profile's fitted factors.
- Gemini 3 PDFs take the page's media resolution (280 / 560 / 1120 a page).
"""

from __future__ import annotations

import base64
import random
import struct
import zlib
from typing import Any

import pytest

from ctxbudget.formats.model import Part
from ctxbudget.media import UNKNOWN_IMAGE_TOKENS, image_size, image_tokens, media_tokens
from ctxbudget.request import estimate_request

GEMINI_TILE = 258


def png(width: int, height: int) -> bytes:
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def gemini(data: bytes | str, mime: str, model: str = "gemini-2.5-flash", **extra: Any) -> int:
    b64 = data if isinstance(data, str) else base64.b64encode(data).decode()
    part = {"inline_data": {"mime_type": mime, "data": b64}, **extra}
    return estimate_request([{"role": "user", "parts": [part]}], model=model).components.attachments


# --------------------------------------------------------------------------- images


@pytest.mark.parametrize("side", [3_073, 20_000, (1 << 31) - 1])
def test_gemini_2_image_is_padded_to_3072_at_most(side: int) -> None:
    """20000x20000 cost 188,082 tokens (and 2^31 a side 2.0e15): it is 16 tiles."""
    assert gemini(png(side, side), "image/png") == 16 * GEMINI_TILE
    assert gemini(png(side, 10), "image/png") == 16 * GEMINI_TILE  # padded, not cropped
    assert image_tokens(side, side, "gemini-unknown") == max(16 * GEMINI_TILE, 1_120)


def test_gemini_2_image_up_to_3072_keeps_its_tiles() -> None:
    assert gemini(png(3_072, 3_072), "image/png") == 16 * GEMINI_TILE
    assert gemini(png(3_072, 768), "image/png") == 4 * GEMINI_TILE
    assert gemini(png(1_000, 500), "image/png") == 2 * GEMINI_TILE


@pytest.mark.parametrize("rule", sorted(UNKNOWN_IMAGE_TOKENS))
def test_garbage_after_a_png_signature_is_an_unknown_size(rule: str) -> None:
    """``"iVBORw0KGgo" * 10`` is the PNG signature repeated: its "size" is 2.3e9 a side."""
    data = base64.b64decode(("iVBORw0KGgo" * 10)[:108])
    assert image_size(data) is None
    part = Part("image", data="iVBORw0KGgo" * 10, media_type="image/png")
    assert media_tokens(part, rule, len)[0] == UNKNOWN_IMAGE_TOKENS[rule]


def test_png_sizes_the_specification_rules_out_are_unknown() -> None:
    assert image_size(png(1 << 31, 5)) is None
    assert image_size(png(0, 5)) is None
    assert image_size(png(5, 0xFFFFFFFF)) is None
    no_ihdr = png(640, 480).replace(b"IHDR", b"IDAT")
    assert image_size(no_ihdr) is None
    assert image_size(png((1 << 31) - 1, 1)) == ((1 << 31) - 1, 1)


def test_webp_without_its_stream_signature_is_unknown() -> None:
    lossy = b"RIFF\0\0\0\0WEBPVP8 " + b"\0" * 7 + b"\x9d\x01\x2a" + struct.pack("<HH", 64, 48)
    assert image_size(lossy) == (64, 48)
    assert image_size(lossy.replace(b"\x9d\x01\x2a", b"mvh")) is None
    bits = 63 | (47 << 14)  # 64x48, less one each
    lossless = (
        b"RIFF\0\0\0\0WEBPVP8L" + b"\0" * 4 + b"\x2f" + bits.to_bytes(4, "little") + b"\0" * 8
    )
    assert image_size(lossless) == (64, 48)
    assert image_size(lossless.replace(b"\x2f", b"\x30", 1)) is None


# --------------------------------------------------------------------------- documents


def pdf(count: bytes) -> bytes:
    return (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Count " + count + b"/Kids[]>>endobj\n"
        b"trailer<</Root 1 0 R>>\n%%EOF"
    )


def test_pdf_count_larger_than_its_bytes_is_damage() -> None:
    """/Count 999999999999 in a 150-byte file was 5.6e14 tokens: its size decides (the
    10-page floor of a PDF that cannot be read)."""
    assert gemini(pdf(b"999999999999"), "application/pdf") == 10 * 560
    assert gemini(pdf(b"3"), "application/pdf") == 3 * 560


def test_pdf_count_of_thousands_of_digits_does_not_raise() -> None:
    """``int()`` refuses over 4,300 digits: that ValueError escaped the estimate."""
    assert gemini(pdf(b"9" * 5_000), "application/pdf") == 10 * 560
    stream = b"1 0 obj<</Type/ObjStm/N 1/First 4/Length " + b"9" * 5_000 + b"/Filter/FlateDecode>>"
    assert gemini(b"%PDF-1.5\n" + stream + b"stream\r\nxx\r\nendstream", "application/pdf") > 0


@pytest.mark.parametrize(
    ("resolution", "per_page"),
    [(None, 560), ("MEDIA_RESOLUTION_LOW", 280), ({"level": "media_resolution_high"}, 1_120)],
)
def test_gemini_3_pdf_pages_take_the_media_resolution(resolution: Any, per_page: int) -> None:
    extra = {} if resolution is None else {"media_resolution": resolution}
    assert gemini(pdf(b"3"), "application/pdf", "gemini-3-pro-preview", **extra) == 3 * per_page
    # Gemini 2.x has no per-part resolution: its page cost stays.
    assert gemini(pdf(b"3"), "application/pdf", "gemini-2.5-pro", **extra) == 3 * 560


# --------------------------------------------------------------------------- audio


def wav_header(byte_rate: int, body: int) -> bytes:
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 8_000, byte_rate, 1, 8)
    return b"RIFF" + struct.pack("<I", 36 + body) + b"WAVEfmt " + fmt + b"data" + b"\0" * body


def test_gemini_wav_with_a_byte_rate_of_one_is_bounded_by_its_bytes() -> None:
    """2 KB of WAV declaring 1 byte a second was 2,000 s, 64,000 tokens."""
    data = wav_header(1, 2_000)
    assert gemini(data, "audio/wav") <= len(data) / 100 * 32 + 1
    assert gemini(wav_header(8_000, 80_000), "audio/wav") == 10 * 32 + 1  # 10 s, and its header


def test_gemini_flac_with_absurd_sample_count_is_bounded() -> None:
    """A FLAC declaring 2^36 samples at 1 Hz cost 2.2e12 tokens."""
    info = (1 << 44 | ((1 << 36) - 1)).to_bytes(8, "big")  # rate 1 Hz, 2^36 - 1 samples
    data = b"fLaC\0\0\0\x22" + b"\0" * 10 + info + b"\0" * 30
    assert gemini(data, "audio/flac") == 32


def test_gemini_audio_is_at_most_9_5_hours() -> None:
    """64 MB at a believable 8 kbps is 18 hours: one prompt takes 9.5 (1,094,400 tokens)."""
    frame = b"\xff\xf3\x10\xc4" + b"\0" * 100  # MPEG-2 layer III, 8 kbps
    data = frame * (64_000_000 // len(frame))
    assert gemini(data, "audio/mpeg") == int(9.5 * 3_600 * 32)


# --------------------------------------------------------------------------- video


def mp4(seconds: int, size: int, *, version: int = 0, moov_last: bool = False) -> bytes:
    if version == 0:
        mvhd = b"mvhd\0\0\0\0" + struct.pack(">IIII", 0, 0, 1_000, seconds * 1_000)
    else:
        mvhd = b"mvhd\1\0\0\0" + struct.pack(">QQIQ", 0, 0, 600, seconds * 600)
    mvhd = struct.pack(">I", 4 + len(mvhd) + 80) + mvhd + b"\0" * 80
    moov = struct.pack(">I", 8 + len(mvhd)) + b"moov" + mvhd
    ftyp = b"\0\0\0\x18ftypisom\0\0\x02\0isomavc1"
    mdat = struct.pack(">I", size - len(ftyp) - len(moov)) + b"mdat"
    mdat += b"\0" * (size - len(ftyp) - len(moov) - len(mdat))
    return ftyp + (mdat + moov if moov_last else moov + mdat)


@pytest.mark.parametrize(("version", "moov_last"), [(0, False), (1, False), (0, True)])
def test_gemini_video_costs_300_tokens_a_second(version: int, moov_last: bool) -> None:
    """A 60 s MP4 of 1 MB (moov first, or at the end of 3 MB) was 1,000 tokens (one a KB)."""
    size = 3_000_000 if moov_last else 1_000_000
    data = mp4(60, size, version=version, moov_last=moov_last)
    assert gemini(data, "video/mp4") == 60 * 300
    low = {"media_resolution": "MEDIA_RESOLUTION_LOW"}
    assert gemini(data, "video/mp4", "gemini-2.5-flash", **low) == 60 * 100


def test_gemini_video_damaged_duration_is_bounded() -> None:
    data = mp4(10**9, 50_000, version=1)  # 31 years in 50 KB
    assert gemini(data, "video/mp4") <= (len(data) // 1_000 + 1) * 300
    assert gemini(mp4(60, 1_000_000).replace(b"mvhd\0", b"mvhd\7"), "video/mp4") == 1_000


def test_video_without_a_duration_and_other_providers_keep_the_bytes_estimate() -> None:
    assert gemini(b"\x1aE\xdf\xa3" + b"\0" * 999_996, "video/webm") == 1_000
    part = Part("file", data=mp4(60, 1_000_000), media_type="video/mp4")
    assert media_tokens(part, "openai", len)[0] == 1_000


# --------------------------------------------------------------------------- fuzz

SIGNATURES = [
    (b"\x89PNG\r\n\x1a\n", "image", "image/png"),
    (b"GIF89a", "image", "image/gif"),
    (b"RIFF\0\0\0\0WEBPVP8X", "image", "image/webp"),
    (b"RIFF\0\0\0\0WEBPVP8 ", "image", "image/webp"),
    (b"RIFF\0\0\0\0WEBPVP8L", "image", "image/webp"),
    (b"\xff\xd8", "image", "image/jpeg"),
    (b"%PDF-1.4 /Type/Pages/Count ", "document", "application/pdf"),
    (b"RIFF\0\0\0\0WAVEfmt ", "audio", "audio/wav"),
    (b"fLaC", "audio", "audio/flac"),
    (b"ID3\x04\0\0", "audio", "audio/mpeg"),
    (b"\xff\xfb", "audio", "audio/mpeg"),
    (b"\0\0\0\x20ftypisommvhd", "file", "video/mp4"),
]


@pytest.mark.parametrize(("sig", "kind", "mime"), SIGNATURES)
def test_random_bytes_after_a_signature_never_raise_nor_cost_absurdly(
    sig: bytes, kind: Any, mime: str
) -> None:
    rnd = random.Random(sig)
    for _ in range(300):
        data = sig + rnd.randbytes(rnd.choice([0, 3, 20, 40, 200, 2_000]))
        for rule in UNKNOWN_IMAGE_TOKENS:
            for given in (data, base64.b64encode(data).decode()):
                tokens, _ = media_tokens(Part(kind, data=given, media_type=mime), rule, len)
                # the largest: an unknown gpt-4o-mini image, or 10 unread pages of 3,000
                assert 0 < tokens <= max(UNKNOWN_IMAGE_TOKENS.values()), (rule, data[:40])


# --------------------------------------------------------------------------- review of 2026-12-03


def _gemini_image(data: str, mime: str) -> int:
    messages = [{"role": "user", "parts": [{"inline_data": {"mime_type": mime, "data": data}}]}]
    estimate = estimate_request(messages, model="gemini-2.5-flash", format="gemini")
    return estimate.components.attachments


def _jpeg(width: int, height: int, profile_bytes: int) -> bytes:
    """A JPEG's header: an ICC profile in APP2 segments before its frame header (SOF0)."""
    out = bytearray(b"\xff\xd8")
    left = profile_bytes
    while left > 0:
        part = min(left, 65_000)
        out += b"\xff\xe2" + struct.pack(">H", part + 2) + bytes(part)
        left -= part
    out += b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    return bytes(out + b"\xff\xda\x00\x0c" + bytes(10) + b"\xff\xd9")


def test_a_jpeg_frame_header_past_the_first_64_kb_is_read() -> None:
    # A 200 KB ICC profile before the frame header: the size was unknown, and Gemini 2.x's
    # unknown-size cost (1,120) is under what this 3000 x 2000 image costs (258 x 4 x 3).
    jpeg = _jpeg(3000, 2000, 200_000)
    assert _gemini_image(base64.b64encode(jpeg).decode(), "image/jpeg") == 3_096
    assert image_size(jpeg) == (3000, 2000)  # (the whole bytes always read)


def test_base64_wrapped_in_lines_is_read() -> None:
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 3000, 3000)
    png += b"\x08\x02\x00\x00\x00" + bytes(100_000)
    plain = base64.b64encode(png).decode()
    assert _gemini_image(plain, "image/png") == 4_128
    assert _gemini_image(base64.encodebytes(png).decode(), "image/png") == 4_128
    assert _gemini_image(" " + plain, "image/png") == 4_128


def test_an_exact_counter_is_not_scaled_by_the_profiles_fitted_factors() -> None:
    # DeepSeek's factors scale o200k estimates toward its tokenizer; its own count is exact.
    def words(text: str) -> int:
        return len(text.split())

    message = [{"role": "user", "content": " ".join(["w"] * 1000)}]
    assert estimate_request(message, model="deepseek-chat", counter=words).conversation == 1000


def _jpeg_with_fill(width: int, height: int, profile_bytes: int) -> bytes:
    """:func:`_jpeg` with 0xFF fill bytes and a restart marker before the frame header."""
    jpeg = _jpeg(width, height, profile_bytes)
    at = jpeg.index(b"\xff\xc0")
    return jpeg[:at] + b"\xff\xff\xff\xd0" + jpeg[at:]


def test_fill_bytes_and_bare_markers_before_a_late_frame_header_are_passed() -> None:
    jpeg = _jpeg_with_fill(3000, 2000, 200_000)
    assert image_size(jpeg) == (3000, 2000)
    assert _gemini_image(base64.b64encode(jpeg).decode(), "image/jpeg") == 3_096


def test_a_late_jpeg_frame_header_in_wrapped_base64_is_read_at_the_right_bytes() -> None:
    jpeg = _jpeg(3000, 2000, 200_000)
    for wrapped in (base64.encodebytes(jpeg).decode(), "    " + base64.b64encode(jpeg).decode()):
        assert _gemini_image(wrapped, "image/jpeg") == 3_096


def test_a_jpeg_height_left_to_a_later_marker_is_an_unknown_size() -> None:
    assert image_size(_jpeg(3000, 0, 0)) is None


def test_a_counter_of_the_estimators_own_encoding_keeps_the_fitted_factors() -> None:
    # DeepSeek's factors turn o200k counts toward DeepSeek's tokenizer: an exact o200k
    # counter (tiktoken's o200k_base, named so) is what they were fitted on.
    from ctxbudget.counting import TokenCounter
    from ctxbudget.framing import PROFILES

    message = [{"role": "user", "content": " ".join(["w"] * 1000)}]
    o200k = TokenCounter.from_callable(lambda text: len(text.split()), name="o200k_base")
    words = TokenCounter.from_callable(lambda text: len(text.split()), name="deepseek-v4")
    scaled = estimate_request(message, model="deepseek-chat", counter=o200k).conversation
    assert scaled == round(1000 * PROFILES["deepseek"].text_factor) != 1000
    assert estimate_request(message, model="deepseek-chat", counter=words).conversation == 1000
