"""What images and PDFs cost, per model: OpenAI's per-model image rules, Gemini 3's per-image
media resolution, and the page count of PDFs whose page tree sits in compressed object streams.

The expected numbers are worked by hand from the providers' guides (OpenAI "Images and vision",
*Calculating costs*; Gemini "Media resolution"), not read back from the code.
"""

from __future__ import annotations

import base64
import binascii
import doctest
import logging
import random
import struct
import sys
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxbudget.media
from ctxbudget.request import UNKNOWN_IMAGE_TOKENS, estimate_request, image_tokens

# --------------------------------------------------------------------------- helpers


def png_header(width: int, height: int) -> bytes:
    """The signature and IHDR chunk of a PNG: all that sizing an image reads."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )


def data_url(width: int, height: int) -> str:
    return "data:image/png;base64," + base64.b64encode(png_header(width, height)).decode()


def chat_image(model: str, image: str, detail: str | None = None) -> int:
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": image}}
    if detail is not None:
        part["image_url"]["detail"] = detail
    msgs = [{"role": "user", "content": [part]}]
    return estimate_request(msgs, model=model).components.attachments


def responses_image(model: str, image: str, detail: str = "auto") -> int:
    part = {"type": "input_image", "image_url": image, "detail": detail}
    msgs = [{"role": "user", "content": [part]}]
    return estimate_request(msgs, model=model).components.attachments


def gemini_image(model: str, width: int, height: int, **extra: Any) -> int:
    blob = {"mime_type": "image/png", "data": png_header(width, height)}
    msgs = [{"role": "user", "parts": [{"inline_data": blob, **extra}]}]
    return estimate_request(msgs, model=model).components.attachments


# --------------------------------------------------------------------------- OpenAI images

# (model, width, height, detail, tokens). Tile rule: fit in 2048, shortest side <= 768,
# base + tile per 512-px square. Patch rule: ceil(w/32) * ceil(h/32) patches (shrunk to
# 1,536), times the model's multiplier, rounded up.
OPENAI_CASES = [
    ("gpt-4o", 1024, 1024, None, 85 + 4 * 170),
    ("gpt-4o-mini", 1024, 1024, None, 2_833 + 4 * 5_667),
    ("gpt-4o-mini", 1024, 1024, "low", 2_833),
    ("gpt-4o-mini-2024-07-18", 640, 480, "high", 2_833 + 2 * 5_667),
    ("openai/gpt-4o-mini", 4096, 8192, None, 2_833 + 6 * 5_667),  # 768x1536: 2x3 tiles
    ("o1", 1024, 1024, None, 75 + 4 * 150),
    ("o3-2025-04-16", 2048, 4096, None, 75 + 6 * 150),
    ("o3", 1024, 1024, "low", 75),
    ("gpt-5", 1024, 1024, None, 70 + 4 * 140),
    ("gpt-5-chat-latest", 1024, 1024, "low", 70),
    ("gpt-4.1", 1024, 1024, None, 85 + 4 * 170),
    ("gpt-4.1-mini", 1024, 1024, None, 1_659),  # 1024 patches x 1.62 = 1658.88
    ("gpt-4.1-mini", 1800, 2400, None, 2_353),  # the guide's example: 1452 patches x 1.62
    ("gpt-4.1-nano", 1024, 1024, None, 2_520),  # x 2.46 = 2519.04
    ("o4-mini", 1024, 1024, None, 1_762),  # x 1.72 = 1761.28
    ("o4-mini", 128, 64, "low", 14),  # 4x2 patches; "low" is no cheaper on patch models
    ("gpt-5-mini", 1024, 1024, None, 1_659),
    ("gpt-5-nano", 2048, 768, None, 3_779),  # 64x24 = 1536 patches x 2.46 = 3778.56
    ("gpt-5-mini", 4000, 4000, None, 2_465),  # 2048 px, then 1248x1248: 39x39 = 1521 x 1.62
]


@pytest.mark.parametrize(("model", "width", "height", "detail", "tokens"), OPENAI_CASES)
def test_openai_image_cost_follows_the_models_rule(
    model: str, width: int, height: int, detail: str | None, tokens: int
) -> None:
    assert chat_image(model, data_url(width, height), detail) == tokens


def test_computer_use_preview_tiles() -> None:
    assert responses_image("computer-use-preview", data_url(1024, 1024)) == 65 + 4 * 129


def test_gpt_5_4_and_later_take_the_detail_level() -> None:
    square, big = data_url(1600, 1600), data_url(4000, 3000)
    # high (and auto on 5.4): at most 2048 px and 2,500 patches, x 1.2 (the measured multiplier)
    assert responses_image("gpt-5.4", square, "high") == 3_000  # 50x50 patches
    assert responses_image("gpt-5.4", square, "auto") == 3_000
    assert responses_image("gpt-5.4", big, "high") == 2_942  # 2048x1536, then 57x43 patches
    # original: 6000 px and 10,000 patches: 125x94 = 11,750 patches shrink to 115x86 = 9,890
    assert responses_image("gpt-5.4", big, "original") == 11_868
    # 5.5: auto means original; 5.6: original keeps the size (125x94 patches)
    assert responses_image("gpt-5.5", big) == 11_868
    assert responses_image("gpt-5.6", big) == 14_100
    assert responses_image("gpt-5.6", big, "high") == 2_942


def test_unknown_openai_model_takes_the_costlier_of_gpt_4o_and_the_newest_rule() -> None:
    small, big = data_url(100, 100), data_url(4000, 3000)
    assert chat_image("gpt-6-luna", small) == 85 + 170  # gpt-4o tiles beat 16 patches x 1.2
    assert chat_image("gpt-6-luna", big) == 14_100  # GPT-5.6 at original size beats 1105
    assert chat_image("gpt-6-luna", "https://x/y.png") == 36_000  # 30,000 patches x 1.2
    # a model no profile knows keeps its format's rule (gpt-4o's, for the OpenAI formats)
    assert chat_image("some-local-llava", small) == 85 + 170


@pytest.mark.parametrize(
    ("model", "largest"),
    [
        ("gpt-4o", 1_445),  # 85 + 8 tiles (2048x768)
        ("gpt-4o-mini", 2_833 + 8 * 5_667),
        ("o1", 75 + 8 * 150),
        ("gpt-5", 70 + 8 * 140),
        ("gpt-4.1-mini", 2_489),
        ("gpt-4.1-nano", 3_779),
        ("o4-mini", 2_642),
        ("gpt-5.5", 12_000),  # original: 10,000 patches x 1.2
    ],
)
def test_image_of_unknown_size_costs_the_most_the_model_charges(model: str, largest: int) -> None:
    assert chat_image(model, "https://example.com/cat.png") == largest
    assert chat_image(model, data_url(2048, 768)) <= largest


@given(
    st.sampled_from(sorted(UNKNOWN_IMAGE_TOKENS)),
    st.integers(1, 12_000),
    st.integers(1, 12_000),
    st.sampled_from([None, "auto", "low", "high", "original"]),
)
def test_no_image_costs_more_than_an_unknown_one(
    rule: str, width: int, height: int, detail: str | None
) -> None:
    if rule in ("gemini", "gemini-unknown") and max(width, height) > 1536:
        return  # documented: Gemini 2.x tiles outgrow an unknown image there
    assert image_tokens(width, height, rule, detail) <= image_tokens(None, None, rule, detail)


# --------------------------------------------------------------------------- Gemini images


def test_gemini_3_costs_an_image_by_media_resolution() -> None:
    assert gemini_image("gemini-3-pro-preview", 300, 300) == 1_120  # default: high
    assert gemini_image("gemini-3.1-pro", 3000, 3000) == 1_120  # not 258 per 768 tile
    low = {"media_resolution": {"level": "MEDIA_RESOLUTION_LOW"}}
    assert gemini_image("gemini-3-flash-preview", 300, 300, **low) == 280
    ultra = {"mediaResolution": {"level": "media_resolution_ultra_high"}}
    assert gemini_image("gemini-3-pro-preview", 300, 300, **ultra) == 2_240
    # Gemini 2.x keeps its tiles
    assert gemini_image("gemini-2.5-pro", 300, 300) == 258
    assert gemini_image("gemini-2.5-flash", 1000, 500) == 2 * 258


# --------------------------------------------------------------------------- PDF pages


def make_pdf(
    pages: int,
    *,
    packed: bool = True,
    root_packed: bool = True,
    fan_out: int = 0,
    filler: int = 0,
    root_at: str = "end",
    content: int = 0,
    hex_streams: bool = False,
) -> bytes:
    """A valid PDF 1.5 of ``pages`` pages with a cross-reference stream.

    ``packed``: the page objects sit in compressed object streams (as pdfTeX, Word and qpdf
    write them); ``root_packed``: so does the page tree (its root and ``fan_out``-page
    intermediate nodes). ``filler`` bytes of binary stream go before the page tree
    (``root_at="end"``), after it (``"start"``) or on both sides (``"middle"``); ``content``
    bytes of content stream per page; ``hex_streams``: object streams in ASCIIHex, not Flate.
    """
    rng = random.Random(pages)
    bodies: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    page_nums = list(range(3, 3 + pages))
    nodes: list[int] = []
    next_num = 3 + pages
    if fan_out:
        groups = [page_nums[i : i + fan_out] for i in range(0, pages, fan_out)]
        for group in groups:
            nodes.append(next_num)
            kids = b" ".join(b"%d 0 R" % k for k in group)
            bodies[next_num] = b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>" % (
                kids,
                len(group),
            )
            page = b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % next_num
            bodies.update(dict.fromkeys(group, page))
            next_num += 1
        top = nodes
    else:
        for k in page_nums:
            bodies[k] = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"
        top = page_nums
    kids = b" ".join(b"%d 0 R" % k for k in top)
    bodies[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages)

    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    where: dict[int, tuple[int, int, int]] = {}

    def plain(num: int, body: bytes) -> None:
        where[num] = (1, len(out), 0)
        out.extend(b"%d 0 obj\n" % num + body + b"\nendobj\n")

    def stream(num: int, head: bytes, data: bytes) -> None:
        where[num] = (1, len(out), 0)
        out.extend(b"%d 0 obj\n<< %s /Length %d >>\nstream\n" % (num, head, len(data)))
        out.extend(data + b"\nendstream\nendobj\n")

    def packed_objects(nums: list[int]) -> None:
        nonlocal next_num
        for at in range(0, len(nums), 100):  # 100 objects a stream, as pdfTeX writes
            chunk, header, body = nums[at : at + 100], b"", b""
            for n in chunk:
                header += b"%d %d " % (n, len(body))
                body += bodies[n] + b"\n"
            raw = header + body
            num, next_num = next_num, next_num + 1
            if hex_streams:
                data, filt = binascii.hexlify(raw) + b">", b"/ASCIIHexDecode"
            else:
                data, filt = zlib.compress(raw), b"/FlateDecode"
            head = b"/Type /ObjStm /N %d /First %d /Filter %s" % (len(chunk), len(header), filt)
            stream(num, head, data)
            for i, n in enumerate(chunk):
                where[n] = (2, num, i)

    def fill(size: int) -> None:
        nonlocal next_num
        if size:
            stream(next_num, b"/Subtype /Image", rng.randbytes(size))
            next_num += 1

    def page_tree() -> None:
        tree = [2, *nodes]
        if root_packed:
            packed_objects(tree)
        else:
            for n in tree:
                plain(n, bodies[n])

    plain(1, bodies[1])
    if root_at == "start":
        page_tree()
    for _ in page_nums if content else ():  # page contents (an inline image, say)
        stream(next_num, b"", rng.randbytes(content))
        next_num += 1
    if packed:
        packed_objects(page_nums)
    else:
        for n in page_nums:
            plain(n, bodies[n])
    if root_at == "middle":
        fill(filler // 2)
        page_tree()
        fill(filler - filler // 2)
    elif root_at == "end":
        fill(filler)
        page_tree()
    else:
        fill(filler)

    xref = next_num
    where[xref] = (1, len(out), 0)
    free = (0, 0, 0)
    rows = b"".join(struct.pack(">BIH", *where.get(n, free)) for n in range(xref + 1))
    data = zlib.compress(b"\x00\x00\x00\x00\x00\xff\xff" + rows[7:])  # object 0: gen 65535
    head = b"/Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Filter /FlateDecode" % (xref + 1)
    stream(xref, head, data)
    out.extend(b"startxref\n%d\n%%%%EOF\n" % where[xref][1])
    return bytes(out)


def pypdf_pages(pdf: bytes) -> int:
    import io

    pypdf = pytest.importorskip("pypdf")
    return len(pypdf.PdfReader(io.BytesIO(pdf)).pages)


def anthropic_pdf(pdf: bytes) -> int:
    source = {"type": "base64", "media_type": "application/pdf"}
    block = {"type": "document", "source": source | {"data": base64.b64encode(pdf).decode()}}
    msgs = [{"role": "user", "content": [block]}]
    return estimate_request(msgs, model="claude-sonnet-4-5").components.attachments


def openai_pdf(pdf: bytes) -> int:
    url = "data:application/pdf;base64," + base64.b64encode(pdf).decode()
    msgs = [{"role": "user", "content": [{"type": "file", "file": {"file_data": url}}]}]
    return estimate_request(msgs, model="gpt-4o").components.attachments


def gemini_pdf(pdf: bytes) -> int:
    blob = {"inline_data": {"mime_type": "application/pdf", "data": pdf}}  # raw bytes
    msgs = [{"role": "user", "parts": [blob]}]
    return estimate_request(msgs, model="gemini-2.5-pro").components.attachments


@pytest.mark.parametrize(
    "layout",
    [
        {"pages": 40},  # pages and page tree compressed (pdfTeX, qpdf)
        {"pages": 1},
        {"pages": 250, "fan_out": 10},  # a two-level tree: the root counts, not a node
        {"pages": 40, "root_packed": False},  # the root readable, the pages compressed
        {"pages": 12, "root_packed": False, "packed": False},  # all uncompressed
        {"pages": 40, "root_at": "start"},
    ],
    ids=["packed", "one-page", "two-level", "plain-root", "uncompressed", "root-first"],
)
def test_pdf_page_count_reads_the_page_tree(layout: dict[str, Any]) -> None:
    pdf = make_pdf(**layout)
    pages = layout["pages"]
    assert pypdf_pages(pdf) == pages  # the fixture is a valid PDF
    assert anthropic_pdf(pdf) == pages * 3_000
    assert openai_pdf(pdf) == pages * 1_500
    assert gemini_pdf(pdf) == pages * 560


@pytest.mark.parametrize("root_at", ["end", "start", "middle"])
def test_large_pdf_page_count(root_at: str) -> None:
    """A 6 MB PDF (a scanned one, say) is counted wherever its page tree sits."""
    pdf = make_pdf(30, filler=6_000_000, root_at=root_at)
    assert pypdf_pages(pdf) == 30
    assert anthropic_pdf(pdf) == 30 * 3_000
    assert gemini_pdf(pdf) == 30 * 560


def test_pdf_no_reader_can_count_is_costed_high(monkeypatch: pytest.MonkeyPatch) -> None:
    """Object streams in a filter not read here: pypdf counts them; without pypdf, the size
    does, and a long document is not costed as ten pages."""
    pdf = make_pdf(60, hex_streams=True, content=3_000)
    assert pypdf_pages(pdf) == 60
    assert anthropic_pdf(pdf) == 60 * 3_000
    monkeypatch.setitem(sys.modules, "pypdf", None)  # not installed
    assert anthropic_pdf(pdf) >= 60 * 3_000


def test_non_pdf_document_keeps_its_guess() -> None:
    docx = b"PK\x03\x04" + bytes(5_000)
    source = {"type": "base64", "media_type": "application/msword"}
    block = {"type": "document", "source": source | {"data": base64.b64encode(docx).decode()}}
    est = estimate_request([{"role": "user", "content": [block]}], model="claude-sonnet-4-5")
    assert est.components.attachments == ctxbudget.media.UNKNOWN_DOCUMENT_PAGES * 3_000


def test_media_docstring_examples() -> None:
    result = doctest.testmod(ctxbudget.media)
    assert result.attempted > 0 and result.failed == 0


def test_a_damaged_pdf_is_costed_without_pypdf_warnings(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # The page count falls back to pypdf, which logged "EOF marker not found" to stderr on
    # every estimate of such a message.
    pytest.importorskip("pypdf")
    pdf = base64.b64encode(b"%PDF-1.7\n1 0 obj <<>> endobj\n").decode()
    block = {"type": "base64", "media_type": "application/pdf", "data": pdf}
    messages = [{"role": "user", "content": [{"type": "document", "source": block}]}]
    with caplog.at_level(logging.WARNING):
        assert estimate_request(messages, model="claude-sonnet-4-5").total > 0
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    assert capfd.readouterr().err == ""
