"""Small Office and PDF files that cost far more than their size to read: refused before the
work, by what makes them so, with the size cap given to ``read_tool_file``."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path

import pytest

from ctxbudget.documents import DocumentConversionError, FileTooLargeError, read_tool_file

docx = pytest.importorskip("docx")
pytest.importorskip("pypdf")

MIB = 1 << 20
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def word_file(tmp_path: Path, body: bytes) -> Path:
    """A real Word file (python-docx's) whose document body is ``body``."""
    made = io.BytesIO()
    docx.Document().save(made)
    document = (
        (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}">'
            "<w:body>"
        ).encode()
        + body
        + b"</w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(made) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in source.infolist():
            data = document if info.filename == "word/document.xml" else source.read(info)
            z.writestr(info.filename, data)
    path = tmp_path / "report.docx"
    path.write_bytes(out.getvalue())
    return path


def text_paragraph(text: str) -> bytes:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>".encode()


def test_a_word_body_over_four_times_the_cap_unpacked_is_refused_before_parsing(
    tmp_path: Path,
) -> None:
    path = word_file(tmp_path, b"<w:p/>" * 400_000 + text_paragraph("the end"))
    assert path.stat().st_size < 100_000  # 2.4 MB of XML, zipped

    with pytest.raises(FileTooLargeError, match=r"word/document\.xml"):
        read_tool_file(path, max_bytes=MIB // 2)
    assert read_tool_file(path, max_bytes=2 * MIB).strip() == "the end"


def test_empty_paragraphs_between_text_are_skipped(tmp_path: Path) -> None:
    body = text_paragraph("first") + b"<w:p><w:pPr/></w:p>" * 1_000 + text_paragraph("second")
    text = read_tool_file(word_file(tmp_path, body))
    assert text.split() == ["first", "second"]


def test_shared_strings_over_four_times_the_cap_unpacked_are_refused(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active["A1"] = "total"
    made = io.BytesIO()
    book.save(made)
    strings = b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    strings += b"<si><t>total</t></si>" + b"<si><t/></si>" * 300_000 + b"</sst>"
    out = io.BytesIO()
    with zipfile.ZipFile(made) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in source.infolist():
            z.writestr(info.filename, source.read(info))
        z.writestr("xl/sharedStrings.xml", strings)
    path = tmp_path / "sheet.xlsx"
    path.write_bytes(out.getvalue())

    with pytest.raises(FileTooLargeError, match=r"xl/sharedStrings\.xml"):
        read_tool_file(path, max_bytes=MIB // 2)


def pdf_sharing_one_stream(pages: int, stream_bytes: int) -> bytes:
    """A PDF of one text page and ``pages`` pages drawing one shared content stream of
    ``stream_bytes`` of text moves (no text shown)."""
    moves = b"BT /F1 1 Tf " + b"1 0 Td\n" * (stream_bytes // 7) + b" ET"
    packed = zlib.compress(moves, 9)
    shown = b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"
    page = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R"
    page += " /Resources << /Font << /F1 4 0 R >> >> >>"
    kids = " ".join(f"{10 + i} 0 R" for i in range(pages + 1))
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{kids}] /Count {pages + 1} >>".encode(),
        3: b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
        + packed
        + b"\nendstream",
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        5: b"<< /Length %d >>\nstream\n" % len(shown) + shown + b"\nendstream",
        10: page.format(5).encode(),
    }
    objects.update({10 + i: page.format(3).encode() for i in range(1, pages + 1)})
    return pdf_file(objects)


def pdf_file(objects: dict[int, bytes]) -> bytes:
    """A PDF of ``objects`` (numbered; 1 the catalog), with its cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    where = {}
    for number in sorted(objects):
        where[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    last = max(objects)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (last + 1)
    for number in range(1, last + 1):
        out += b"%010d 00000 n \n" % where[number] if number in where else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (last + 1, xref)
    return bytes(out)


def test_pages_sharing_a_huge_content_stream_are_refused_as_their_total_grows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "drawing.pdf"
    path.write_bytes(pdf_sharing_one_stream(pages=6, stream_bytes=MIB))
    assert path.stat().st_size < 20_000

    with pytest.raises(DocumentConversionError, match="content streams add up to over"):
        read_tool_file(path, max_bytes=MIB // 4)
    assert "Hello" in read_tool_file(path, max_bytes=2 * MIB)


def test_a_word_file_cut_short_is_named_as_damaged(tmp_path: Path) -> None:
    """A download that stopped half way: not "binary, looks like a ZIP archive", but a
    damaged Word file."""
    whole = word_file(tmp_path, text_paragraph("some text") * 2_000)
    cut = tmp_path / "cut.docx"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])

    with pytest.raises(DocumentConversionError, match=r"DOCX.*damaged or cut short"):
        read_tool_file(cut)


def test_a_page_whose_contents_are_missing_is_read_as_empty(tmp_path: Path) -> None:
    """A damaged PDF: one page's content stream is a reference to no object. pypdf reads the
    other pages; the content budget must not turn that into a refusal of the file."""
    shown = b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"
    page = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R"
    page += " /Resources << /Font << /F1 4 0 R >> >> >>"
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [10 0 R 11 0 R] /Count 2 >>",
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        5: b"<< /Length %d >>\nstream\n" % len(shown) + shown + b"\nendstream",
        10: page.format(5).encode(),
        11: page.format(9999).encode(),
    }
    path = tmp_path / "damaged.pdf"
    path.write_bytes(pdf_file(objects))

    text = read_tool_file(path)

    assert "Hello" in text and "<!-- page 2 -->" in text


def test_a_zip_that_opens_is_not_called_a_damaged_office_file(tmp_path: Path) -> None:
    """A binary workbook (``.xlsb``: parts of an Office folder, no part this reads) opens as
    a zip: refused as binary, not named damaged."""
    from ctxbudget import BinaryContentError

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.bin", b"\x00\x01binary")
    path = tmp_path / "book.xlsb"
    path.write_bytes(out.getvalue())

    with pytest.raises(BinaryContentError, match="looks like a ZIP archive"):
        read_tool_file(path)


def test_a_workbook_cut_short_is_named_as_damaged(tmp_path: Path) -> None:
    """openpyxl writes ``[Content_Types].xml`` last: a workbook cut short lacks it, and is
    still named by its parts."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    for row in range(2_000):
        book.active.append([f"value {row} {col}" for col in range(8)])
    made = io.BytesIO()
    book.save(made)
    cut = tmp_path / "report.xlsx"
    cut.write_bytes(made.getvalue()[: len(made.getvalue()) // 2])

    with pytest.raises(DocumentConversionError, match=r"XLSX.*damaged or cut short"):
        read_tool_file(cut)


def test_text_that_starts_with_the_pdf_signature_is_read_as_text(tmp_path: Path) -> None:
    # Refused as "a PDF cut short" before: notes about the format could never be read.
    notes = tmp_path / "notes.md"
    notes.write_text("%PDF-1.7 header notes: every PDF starts with this line.\nMore notes.\n")
    assert read_tool_file(notes) == notes.read_text()
