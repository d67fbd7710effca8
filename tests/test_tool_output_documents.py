"""read_tool_file on real files: documents generated here, binaries, text encodings, caps.

The documents are made with python-docx, openpyxl, python-pptx and fpdf2 (test extra) and
read back through the ``documents`` extra. Tests named ``*_with_detected_type`` rely on the
Rust core naming the type from magic bytes (``BinaryContentError.detected_type``).
"""

from __future__ import annotations

import datetime as dt
import errno
import gzip
import io
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ctxbudget import BinaryContentError
from ctxbudget.documents import (
    DEFAULT_MAX_BYTES,
    DocumentConversionError,
    DocumentsExtraMissingError,
    FileTooLargeError,
    document_kind,
    read_tool_file,
)

MODULE_OF = {"pdf": "pypdf", "docx": "docx", "xlsx": "openpyxl", "pptx": "pptx"}


# --- documents, generated ----------------------------------------------------------------


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly Report", level=1)
    document.add_paragraph("Revenue grew by 12 percent in Q3.")
    document.add_heading("Details", level=2)
    document.add_paragraph("First point", style="List Bullet")
    document.add_paragraph("Second point", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Sales | net"
    table.cell(1, 0).text = "EMEA"
    table.cell(1, 1).text = "4200"
    document.add_paragraph("Café naïve — 日本語 text, codeword KESTREL.")
    document.save(str(path))
    return path


def make_xlsx(path: Path) -> Path:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Sales"
    sheet.append(["Region", "Units", "Price", "Since"])
    sheet.append(["EMEA", 12, 3.5, dt.date(2024, 5, 1)])
    sheet.append(["APAC", 7, 4.25, None])
    notes = workbook.create_sheet("Notes")
    notes["A1"] = "codeword: PELICAN"
    workbook.save(str(path))
    return path


def make_pptx(path: Path) -> Path:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    assert first.shapes.title is not None
    first.shapes.title.text = "Roadmap 2026"
    first.placeholders[1].text = "Ship the guard\nMeasure the estimator"
    first.notes_slide.notes_text_frame.text = "Speaker note: codeword HERON"
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    assert second.shapes.title is not None
    second.shapes.title.text = "Numbers"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    cells = shape.table
    cells.cell(0, 0).text = "Metric"
    cells.cell(0, 1).text = "Value"
    cells.cell(1, 0).text = "Latency"
    cells.cell(1, 1).text = "12 ms"
    presentation.save(str(path))
    return path


def make_pdf(path: Path, *, with_text: bool = True, password: str | None = None) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    if with_text:
        pdf.cell(text="Invoice 4711")
        pdf.ln(10)
        pdf.multi_cell(w=0, text="Total due: 99.50 EUR\nPayment within 30 days.")
        pdf.add_page()
        pdf.cell(text="Page two: codeword OSPREY")
    else:
        pdf.rect(20, 20, 100, 60, style="F")  # a "scanned" page: shapes, no text
    pdf.output(str(path))
    return path


def test_docx_to_markdown(tmp_path: Path) -> None:
    text = read_tool_file(make_docx(tmp_path / "report.docx"))
    assert text == (
        "# Quarterly Report\n"
        "\n"
        "Revenue grew by 12 percent in Q3.\n"
        "\n"
        "## Details\n"
        "\n"
        "- First point\n"
        "- Second point\n"
        "\n"
        "| Region | Sales \\| net |\n"
        "| --- | --- |\n"
        "| EMEA | 4200 |\n"
        "\n"
        "Café naïve — 日本語 text, codeword KESTREL.\n"
    )


def test_xlsx_to_markdown(tmp_path: Path) -> None:
    text = read_tool_file(make_xlsx(tmp_path / "sales.xlsx"))
    assert text == (
        "## Sales\n"
        "\n"
        "| Region | Units | Price | Since |\n"
        "| --- | --- | --- | --- |\n"
        "| EMEA | 12 | 3.5 | 2024-05-01T00:00:00 |\n"
        "| APAC | 7 | 4.25 |  |\n"
        "\n"
        "## Notes\n"
        "\n"
        "| codeword: PELICAN |\n"
        "| --- |\n"
    )


def test_pptx_to_markdown(tmp_path: Path) -> None:
    text = read_tool_file(make_pptx(tmp_path / "deck.pptx"))
    assert text == (
        "## Slide 1: Roadmap 2026\n"
        "\n"
        "- Ship the guard\n"
        "- Measure the estimator\n"
        "\n"
        "Notes:\n"
        "Speaker note: codeword HERON\n"
        "\n"
        "## Slide 2: Numbers\n"
        "\n"
        "| Metric | Value |\n"
        "| --- | --- |\n"
        "| Latency | 12 ms |\n"
    )


def test_pdf_to_markdown(tmp_path: Path) -> None:
    text = read_tool_file(make_pdf(tmp_path / "invoice.pdf"))
    assert text == (
        "<!-- page 1 -->\n"
        "Invoice 4711\n"
        "Total due: 99.50 EUR\n"
        "Payment within 30 days.\n"
        "\n"
        "<!-- page 2 -->\n"
        "Page two: codeword OSPREY\n"
    )


def make_pdf_with_char_map(path: Path, mapping: dict[int, str], shown: bytes) -> Path:
    """A one-page PDF showing the codes ``shown`` in a font whose ToUnicode map sends code
    ``c`` to the UTF-16 code units ``mapping[c]`` (hex): written by hand, to reach maps no
    PDF library writes (lone surrogates)."""
    pairs = "\n".join(f"<{code:02X}> <{units}>" for code, units in mapping.items())
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        "/CMapName /Test def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n"
        f"{len(mapping)} beginbfchar\n{pairs}\nendbfchar\n"
        "endcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode()
    content = b"BT /F1 12 Tf 72 700 Td (" + shown + b") Tj ET"

    def stream(data: bytes) -> bytes:
        return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)

    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        stream(content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        stream(cmap),
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(pdf))
    return path


def test_pdf_text_is_always_valid_unicode(tmp_path: Path) -> None:
    """A PDF's character map may name UTF-16 code units: a pair is its character, a lone
    surrogate (no text can carry one) becomes U+FFFD."""
    path = make_pdf_with_char_map(
        tmp_path / "odd-map.pdf", {0x41: "D800", 0x42: "0042", 0x43: "D83DDE00"}, b"ABC BA"
    )
    text = read_tool_file(path)
    assert "\ufffdB\U0001f600 B\ufffd" in text
    text.encode("utf-8")  # no lone surrogate left


@pytest.mark.parametrize(
    "content_type",
    [
        "application/vnd.ms-word.document.macroEnabled.main+xml",  # .docm
        "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",  # .dotx
        "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",  # .dotm
    ],
    ids=["docm", "dotx", "dotm"],
)
def test_macro_enabled_documents_and_templates_read_as_documents(
    tmp_path: Path, content_type: str
) -> None:
    """Word saves them with another main-part content type, which python-docx refuses; the
    markup is a document's (macros are never run)."""
    docx_path = make_docx(tmp_path / "report.docx")
    plain = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    variant = tmp_path / "report.variant"
    with zipfile.ZipFile(docx_path) as source, zipfile.ZipFile(variant, "w") as copy:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "[Content_Types].xml":
                assert plain.encode() in body
                body = body.replace(plain.encode(), content_type.encode())
            copy.writestr(info, body)
    assert document_kind(variant.read_bytes()) == "docx"
    assert read_tool_file(variant) == read_tool_file(docx_path)


def test_heading_style_with_a_non_ascii_digit(tmp_path: Path) -> None:
    """``str.isdigit`` takes ``²``, which ``int`` refuses: such a style is no heading level."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    document.styles.add_style("Heading \u00b2", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("Squared title", style="Heading \u00b2")
    document.add_paragraph("Body text.")
    path = tmp_path / "odd-style.docx"
    document.save(str(path))
    assert read_tool_file(path) == "Squared title\n\nBody text.\n"


def test_documents_are_recognised_by_content_not_name(tmp_path: Path) -> None:
    docx_file = make_docx(tmp_path / "report.docx")
    renamed = docx_file.rename(tmp_path / "attachment.bin")
    assert "codeword KESTREL" in read_tool_file(renamed)
    pdf_file = make_pdf(tmp_path / "invoice.pdf").rename(tmp_path / "invoice.txt")
    assert "codeword OSPREY" in read_tool_file(pdf_file)


@pytest.mark.parametrize(
    ("maker", "kind"),
    [(make_docx, "docx"), (make_xlsx, "xlsx"), (make_pptx, "pptx"), (make_pdf, "pdf")],
)
def test_document_kind(tmp_path: Path, maker: object, kind: str) -> None:
    path = maker(tmp_path / f"file.{kind}")  # type: ignore[operator]
    assert document_kind(path.read_bytes()) == kind


def rename_main_part(data: bytes, old: str, new: str) -> bytes:
    """The package with its main part renamed, as Word for the web saves ``document2.xml``.

    The part's relationships move with it, and ``_rels/.rels`` and ``[Content_Types].xml``
    name the new part; the libraries find it from those.
    """
    folder, old_name = old.rsplit("/", 1)
    new_name = new.rsplit("/", 1)[1]
    moves = {old: new, f"{folder}/_rels/{old_name}.rels": f"{folder}/_rels/{new_name}.rels"}
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            content = source.read(name)
            if name in ("_rels/.rels", "[Content_Types].xml"):
                content = content.replace(old.encode(), new.encode())
            target.writestr(moves.get(name, name), content)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("maker", "kind", "main_part", "codeword"),
    [
        (make_docx, "docx", "word/document.xml", "codeword KESTREL"),
        (make_xlsx, "xlsx", "xl/workbook.xml", "codeword: PELICAN"),
        (make_pptx, "pptx", "ppt/presentation.xml", "codeword HERON"),
    ],
)
def test_main_part_is_found_from_the_content_types(
    tmp_path: Path, maker: object, kind: str, main_part: str, codeword: str
) -> None:
    original = maker(tmp_path / f"original.{kind}")  # type: ignore[operator]
    renamed = main_part.replace(".xml", "2.xml")
    data = rename_main_part(original.read_bytes(), main_part, renamed)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert renamed in names and main_part not in names
    assert document_kind(data) == kind
    path = tmp_path / f"renamed.{kind}"
    path.write_bytes(data)
    assert codeword in read_tool_file(path)


TEXTS_MENTIONING_PDF = [
    b'def is_pdf(data: bytes) -> bool:\n    return data.startswith(b"%PDF-")\n',
    b"# File formats\nA PDF file starts with the bytes %PDF- and a version.\n",
    b"  see below\n%PDF-1.7 is where a PDF starts\n",
]


@pytest.mark.parametrize("data", TEXTS_MENTIONING_PDF)
def test_text_mentioning_the_pdf_signature_is_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(data)
    assert document_kind(data) is None
    assert read_tool_file(path) == data.decode()
    monkeypatch.setitem(sys.modules, "pypdf", None)  # no documents extra: still just text
    assert read_tool_file(path) == data.decode()


@pytest.mark.parametrize("lead", [b"\n", b" \r\n\t", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"])
def test_pdf_after_whitespace_or_bom_is_a_pdf(tmp_path: Path, lead: bytes) -> None:
    data = lead + make_pdf(tmp_path / "invoice.pdf").read_bytes()
    assert document_kind(data) == "pdf"
    path = tmp_path / "led.pdf"
    path.write_bytes(data)
    assert "codeword OSPREY" in read_tool_file(path)


@pytest.mark.parametrize(
    ("maker", "kind"),
    [(make_docx, "docx"), (make_xlsx, "xlsx"), (make_pptx, "pptx"), (make_pdf, "pdf")],
)
def test_missing_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, maker: object, kind: str
) -> None:
    path = maker(tmp_path / f"file.{kind}")  # type: ignore[operator]
    monkeypatch.setitem(sys.modules, MODULE_OF[kind], None)  # import now fails
    with pytest.raises(DocumentsExtraMissingError) as caught:
        read_tool_file(path)
    assert isinstance(caught.value, ModuleNotFoundError)
    assert caught.value.name == MODULE_OF[kind]
    assert "pip install 'ctxbudget[documents]'" in str(caught.value)
    assert kind.upper() in str(caught.value)


def test_encrypted_pdf_is_refused_clearly(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "locked.pdf", password="secret")
    with pytest.raises(DocumentConversionError, match="encrypted") as caught:
        read_tool_file(path)
    assert caught.value.kind == "pdf"


def test_a_pdf_cut_short_is_refused_without_reading_it_backwards(tmp_path: Path) -> None:
    # A PDF whose end is missing (a download that stopped): pypdf searched the whole file
    # backwards for its end marker, a line at a time (16 MB: 10 s), then failed anyway.
    whole = make_pdf(tmp_path / "whole.pdf").read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(whole[: whole.rindex(b"%%EOF")] + b"q\n" * 100_000)
    with pytest.raises(DocumentConversionError, match="cut short") as caught:
        read_tool_file(cut)
    assert caught.value.kind == "pdf"
    # the marker followed by a little trailing data is a whole PDF
    trailing = tmp_path / "trailing.pdf"
    trailing.write_bytes(whole + b"\n" * 600)
    assert "page 1" in read_tool_file(trailing)


def test_pdf_without_text_is_refused_clearly(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "scan.pdf", with_text=False)
    with pytest.raises(DocumentConversionError, match=r"no text could be extracted.*OCR"):
        read_tool_file(path)


def test_damaged_docx_is_a_conversion_error(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document> not xml")
    path = tmp_path / "broken.docx"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(DocumentConversionError) as caught:
        read_tool_file(path)
    assert isinstance(caught.value, ValueError)
    assert caught.value.kind == "docx"
    assert str(path) in str(caught.value)


def test_converted_text_is_held_to_the_cap(tmp_path: Path) -> None:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in range(3000):  # compresses well: the markdown is much larger than the file
        sheet.append([f"row {row}", "the same words again and again", row])
    path = tmp_path / "big.xlsx"
    workbook.save(str(path))
    size = path.stat().st_size
    with pytest.raises(FileTooLargeError, match="converted text") as caught:
        read_tool_file(path, max_bytes=size + 1000)
    assert caught.value.limit == size + 1000
    assert "row 0" in read_tool_file(path, max_bytes=1 << 20)


def test_a_sheet_over_the_cap_is_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sheet's rows are parsed as they are read: the table stops at the cap, not after
    the whole sheet (a large sheet took 64 s to be refused, 42 s since, on this machine)."""
    import openpyxl
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in range(3000):
        sheet.append([f"row {row}", "the same words again and again", row])
    path = tmp_path / "big.xlsx"
    workbook.save(str(path))
    read = []
    rows = ReadOnlyWorksheet.iter_rows

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        for row in rows(self, *args, **kwargs):
            read.append(row)
            yield row

    monkeypatch.setattr(ReadOnlyWorksheet, "iter_rows", counted)
    with pytest.raises(FileTooLargeError, match="converted text"):
        read_tool_file(path, max_bytes=path.stat().st_size + 1000)
    assert 0 < len(read) < 3000


def test_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"<w:document>" + b" " * (40 << 20))
    path = tmp_path / "bomb.docx"
    path.write_bytes(buffer.getvalue())
    assert path.stat().st_size < 100_000
    started = time.perf_counter()
    with pytest.raises(FileTooLargeError, match="unpacked content") as caught:
        read_tool_file(path, max_bytes=1 << 20)
    assert time.perf_counter() - started < 0.5
    assert caught.value.limit == 16 << 20


# --- binaries and text -------------------------------------------------------------------


def plain_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes/readme.txt", "not an office file")
    return buffer.getvalue()


BINARIES = {
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10",
    "gzip": gzip.compress(b"hello world " * 50),
    "zip": plain_zip(),
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00",
    # A compound file's header (a .doc/.xls/.ppt, or an Office file saved with a password):
    # magic, CLSID, minor and major version, byte order mark, sector shift.
    "ole2": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16) + b">\x00\x03\x00\xfe\xff\t\x00",
    "utf32": "\ufeffName  Value\n".encode("utf-32-le"),
}


@pytest.mark.parametrize("kind", sorted(BINARIES))
def test_binary_files_are_refused_with_detected_type(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"data.{kind}"
    path.write_bytes(BINARIES[kind])
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert caught.value.detected_type == kind
    assert kind.upper() in str(caught.value).upper()


def test_elf_executable_is_refused_with_detected_type(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_bytes(Path(sys.executable).resolve().read_bytes()[: 64 << 10])
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert caught.value.detected_type == "elf"


@pytest.mark.parametrize("kind", sorted(BINARIES))
def test_binary_files_are_refused_at_all(tmp_path: Path, kind: str) -> None:
    """Holds with or without type detection in the core."""
    path = tmp_path / f"data.{kind}"
    path.write_bytes(BINARIES[kind])
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert caught.value.reason in ("nul", "invalid_utf8")


def test_plain_utf8(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\nCJK 日本語, emoji 🎉, done\n", encoding="utf-8")
    assert read_tool_file(path) == "# Notes\nCJK 日本語, emoji 🎉, done\n"


def test_utf8_bom_is_accepted_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "excel-export.csv"
    path.write_bytes(b"\xef\xbb\xbfname,city\nZo\xc3\xab,K\xc3\xb6ln\n")
    assert read_tool_file(path) == "name,city\nZoë,Köln\n"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be"])
def test_utf16_with_bom_is_decoded(tmp_path: Path, codec: str) -> None:
    path = tmp_path / "powershell.txt"
    data = "Name  Value\nPath  C:\\tools\n".encode(codec)
    if codec == "utf-16-be":
        data = b"\xfe\xff" + data
    path.write_bytes(data)
    assert read_tool_file(path) == "Name  Value\nPath  C:\\tools\n"


def test_utf16_text_with_a_nul_is_refused_as_utf16(tmp_path: Path) -> None:
    path = tmp_path / "nul16.txt"
    path.write_bytes(b"\xff\xfe" + "ab\x00c".encode("utf-16-le"))  # BOM, then a, b, NUL, c
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert (caught.value.offset, caught.value.reason) == (6, "nul")
    assert "NUL character in UTF-16 text at byte offset 6" in str(caught.value)


def test_bom_alone_or_utf16_lookalike_binary(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf")
    assert read_tool_file(path) == ""
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\xff\xfe\x00\x00\x00\x00")  # decodes to NULs: still refused
    with pytest.raises(BinaryContentError):
        read_tool_file(odd)


def test_offsets_after_a_bom_are_the_files(tmp_path: Path) -> None:
    path = tmp_path / "bom-nul.txt"
    path.write_bytes(b"\xef\xbb\xbfab\x00cd")
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert (caught.value.offset, caught.value.reason) == (5, "nul")
    assert "offset 5" in str(caught.value)


def test_latin1_is_refused_with_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes("Grüße aus Köln\n".encode("latin-1"))
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert (caught.value.offset, caught.value.reason) == (2, "invalid_utf8")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert read_tool_file(path) == ""


# --- size cap and file kinds -------------------------------------------------------------


def test_default_cap_is_16_mib() -> None:
    assert DEFAULT_MAX_BYTES == 16 * 1024 * 1024


def test_cap_boundary_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"x" * 1000)
    assert len(read_tool_file(path, max_bytes=1000)) == 1000
    with pytest.raises(FileTooLargeError) as caught:
        read_tool_file(path, max_bytes=999)
    assert (caught.value.size, caught.value.limit) == (1000, 999)
    assert isinstance(caught.value, ValueError)
    assert "1,000 bytes, over the 999-byte limit" in str(caught.value)


def test_huge_sparse_file_is_refused_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.log"
    with open(path, "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, sparse: nothing on disk

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    import ctxbudget.documents as documents

    monkeypatch.setattr(documents, "open", no_open, raising=False)
    started = time.perf_counter()
    with pytest.raises(FileTooLargeError) as caught:
        read_tool_file(path)
    assert time.perf_counter() - started < 0.05
    assert caught.value.size == 1 << 30


def test_file_that_grows_after_stat_is_still_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read itself is bounded: stat said 10 bytes, the file holds 5000 by now."""
    path = tmp_path / "growing.log"
    path.write_bytes(b"y" * 5000)
    real_stat = os.stat

    class SmallStat:
        def __init__(self, result: os.stat_result) -> None:
            self.st_mode = result.st_mode
            self.st_size = 10  # what stat said before the file grew

    with monkeypatch.context() as patch, pytest.raises(FileTooLargeError):
        patch.setattr(os, "stat", lambda p: SmallStat(real_stat(p)))
        read_tool_file(path, max_bytes=100)


def test_a_large_cap_sets_nothing_aside_for_a_small_file(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_bytes(b"hi\n")
    assert read_tool_file(path, max_bytes=1 << 40) == "hi\n"  # 1 TiB: never allocated


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_tool_file(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_tool_file(tmp_path / "missing.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as caught:
        read_tool_file(fifo)
    assert caught.value.errno == errno.EINVAL


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_pipe_put_in_place_after_the_check_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path passed the check as a regular file, then became a FIFO before it was opened:
    the open must not wait for a writer, and the open file is refused."""
    import threading

    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.txt"
    regular.write_bytes(b"text\n")
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: real_stat(regular))
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_tool_file(fifo)
        except BaseException as err:  # collected for the assertion below
            outcome.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # free the thread: open a writer, which ends its wait
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_tool_file blocked on a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)
    assert outcome[0].errno == errno.EINVAL


def test_bad_cap_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        read_tool_file(tmp_path / "x", max_bytes=-1)
