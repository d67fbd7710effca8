"""Review of the tool-output guards: bugs found reading documents and spilling, each pinned.

Documents are generated here (python-docx, openpyxl, fpdf2) and, where a generator cannot
write the shape a bug needs (a stale ``<dimension>``, a huge ``gridSpan``), edited in their
zip afterwards. Cases that hung or exhausted memory before their fix run in a child process
with a time and memory limit, so that the old code fails the test instead of the machine.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxbudget.documents import read_tool_file
from ctxbudget.spill import DirectorySpillStore
from ctxbudget.truncate import truncate_output

LOG = "".join(f"step {i}: ok\n" for i in range(5_000))


def rewrite_zip(path: Path, part: str, edit: Callable[[bytes], bytes]) -> Path:
    """Rewrite one part of an Office file in place."""
    source = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in source.infolist():
            body = source.read(info)
            copy.writestr(info, edit(body) if info.filename == part else body)
    return path


def read_in_child(path: Path, timeout: float = 60.0) -> str:
    """``read_tool_file(path)`` in a child limited to 2 GiB and ``timeout`` seconds: what it
    printed (the text's length, start and end, or the error's class and message)."""
    code = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        from ctxbudget.documents import read_tool_file
        try:
            text = read_tool_file({str(path)!r})
        except Exception as err:
            print(type(err).__name__, err)
        else:
            flat = text.replace("\\n", " ")
            print("text", len(text), flat[:1000], "...", flat[-1000:])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=True
    )
    return done.stdout


# --- spill: a location the model cannot be told -----------------------------------------------


class SurrogateStore:
    """A store whose location is not valid Unicode (as ``os.fsdecode`` makes of bytes)."""

    def write(self, text: str, *, label: str | None = None) -> str:
        return "/spill/\udcff.txt"


def test_store_location_with_a_lone_surrogate_is_a_failed_spill() -> None:
    result = truncate_output(LOG, max_tokens=300, spill=SurrogateStore())
    assert result.truncated and result.spill_path is None
    assert result.spill_error is not None and "not valid Unicode" in result.spill_error
    assert "could not be stored" in result.text
    assert "saved" not in result.text and "/spill/" not in result.text
    result.text.encode("utf-8")  # valid text for the provider


class RaisingStore:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def write(self, text: str, *, label: str | None = None) -> str:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [OSError("Forbidden", "/bucket/spill/key"), OSError(10**30, "/bucket/spill/key")],
    ids=["errno-a-str", "errno-too-large"],
)
def test_oserror_without_a_real_errno_is_a_failed_spill(error: OSError) -> None:
    """``os.strerror`` raised on the errno of these, out of ``truncate_output``."""
    result = truncate_output(LOG, max_tokens=300, spill=RaisingStore(error))
    assert result.truncated and result.spill_path is None and result.spill_error is not None
    assert "could not be stored (OSError)" in result.text
    assert "/bucket" not in result.text and "saved" not in result.text


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system taking any bytes")
def test_spill_directory_named_in_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """A real store: a directory name that is not UTF-8 (``$CTXBUDGET_SPILL_DIR`` can be one)
    decodes with lone surrogates; the file is written, but the model cannot be told where."""
    directory = os.fsdecode(os.fsencode(tmp_path) + b"/spill-\xff")
    result = truncate_output(LOG, max_tokens=300, spill=DirectorySpillStore(directory))
    assert result.truncated and result.spill_path is None
    assert result.spill_error is not None and "not valid Unicode" in result.spill_error
    assert "saved" not in result.text and "spill-" not in result.text


# --- xlsx: the <dimension> element is not the truth -------------------------------------------


def test_value_in_the_far_corner_of_a_sheet_is_read_quickly(tmp_path: Path) -> None:
    """openpyxl writes ``A1:XFD1048576`` for these two values; read-only rows were padded to
    it: 17 billion cells from a 5 KiB file (hung for hours)."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet["A1"] = "top"
    sheet.cell(row=1_048_576, column=16_384, value="corner")
    path = tmp_path / "corner.xlsx"
    workbook.save(str(path))
    out = read_in_child(path, timeout=30)
    # two rows 16,384 cells wide: the table is large, but it is read, and whole
    assert out.startswith("text ") and "| top |" in out
    assert "FileTooLargeError" not in out


def test_sheet_with_a_stale_dimension_is_read_whole(tmp_path: Path) -> None:
    """A ``<dimension ref="A1:A1">`` left stale by the writer made openpyxl drop every value
    past it, without a word."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Region", "Units"])
    sheet.append(["EMEA", 12])
    sheet.append(["APAC", 7])
    path = tmp_path / "stale.xlsx"
    workbook.save(str(path))
    rewrite_zip(path, "xl/worksheets/sheet1.xml", lambda xml: xml.replace(b"A1:B3", b"A1:A1"))
    assert read_tool_file(path) == (
        "## Sheet\n\n| Region | Units |\n| --- | --- |\n| EMEA | 12 |\n| APAC | 7 |\n"
    )


def test_row_numbered_far_past_the_sheet_is_not_walked_to(tmp_path: Path) -> None:
    """``<row r="1000000000">`` in a sheet declaring that range: openpyxl hands over every
    row missing before it, a billion. Rows past Excel's 1,048,576 are not read."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet["A1"] = "hello"
    sheet["A2"] = "far"
    path = tmp_path / "far.xlsx"
    workbook.save(str(path))

    def far(xml: bytes) -> bytes:
        xml = xml.replace(b'ref="A1:A2"', b'ref="A1:A1000000000"')
        return xml.replace(b'r="2"', b'r="1000000000"').replace(b'r="A2"', b'r="A1000000000"')

    rewrite_zip(path, "xl/worksheets/sheet1.xml", far)
    out = read_in_child(path, timeout=30)
    assert out.startswith("text ") and "| hello |" in out


def test_one_far_right_value_does_not_widen_every_row_in_memory(tmp_path: Path) -> None:
    """20,000 rows of one value and one value in column XFD: every row was kept 16,384 cells
    wide (2.6 GB of references) before the cap on the text was checked; then refused as a
    table 16,384 columns wide. Its empty columns go: a table of two."""
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Data")
    sheet.append(["v"] * 1 + [None] * 16_382 + ["far"])
    for row in range(20_000):
        sheet.append([row])
    path = tmp_path / "wide.xlsx"
    workbook.save(str(path))
    out = read_in_child(path, timeout=30)
    assert out.startswith("text "), out
    assert "| v | far | |" in out and "| 19999 |  |" in out


# --- docx tables --------------------------------------------------------------------------------


def test_cell_spanning_a_hundred_million_columns_is_refused(tmp_path: Path) -> None:
    """python-docx's ``row.cells`` makes an object per spanned column: 800 MB here, and the
    text was read again for each (a span of a million took 27 s)."""
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "A"
    path = tmp_path / "span.docx"
    document.save(str(path))
    span = b'<w:tc><w:tcPr><w:gridSpan w:val="100000000"/>'
    rewrite_zip(path, "word/document.xml", lambda xml: xml.replace(b"<w:tc><w:tcPr>", span, 1))
    out = read_in_child(path, timeout=30)
    assert out.startswith("DocumentConversionError"), out
    assert "cells" in out


def test_long_vertical_merge_is_read_in_linear_time(tmp_path: Path) -> None:
    """A first column merged down 1,500 rows: python-docx walks up the rows again in each row
    (500 rows took 6 s) and recursed past Python's limit from about 1,000."""
    import docx

    rows = 1_500
    document = docx.Document()
    table = document.add_table(rows=rows, cols=2)
    table.cell(0, 0).text = "Group"
    for index, row in enumerate(table.rows):
        row.cells[1].text = f"item {index}"
        row.cells[0]._tc.vMerge = "restart" if index == 0 else "continue"
    path = tmp_path / "merged.docx"
    document.save(str(path))
    out = read_in_child(path, timeout=20)
    assert out.startswith("text "), out
    assert "| Group | item 0 |" in out and "| Group | item 1499 |" in out


def _docx_grid(rows: int, cols: int) -> tuple[Any, Any]:
    """A new Word document and its table of ``rows`` x ``cols`` cells reading ``r<i>c<j>``."""
    import docx

    document = docx.Document()
    table = document.add_table(rows=rows, cols=cols)
    for r in range(rows):
        for c in range(cols):
            table.cell(r, c).text = f"r{r}c{c}"
    return document, table


def test_merged_cells_read_as_python_docx_gives_them(tmp_path: Path) -> None:
    import docx

    document, table = _docx_grid(3, 3)
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(1, 2).merge(table.cell(2, 2))
    path = tmp_path / "merges.docx"
    document.save(str(path))
    expected = [
        [cell.text for cell in row.cells] for row in docx.Document(str(path)).tables[0].rows
    ]
    lines = read_tool_file(path).splitlines()
    cells = [
        [c.strip() for c in line.strip("|").split(" | ")] for line in lines if "---" not in line
    ]
    assert cells == [[" ".join(text.split()) for text in row] for row in expected]


def test_table_nested_in_a_cell_keeps_its_text(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Name"
    table.cell(0, 1).text = "Value"
    table.cell(1, 0).text = "limits"
    inner = table.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "NESTED"
    inner.cell(0, 1).text = "42"
    path = tmp_path / "nested.docx"
    document.save(str(path))
    text = read_tool_file(path)
    assert "NESTED" in text and "42" in text
    assert "| limits |" in text


# --- pdf: pypdf's repair warnings -----------------------------------------------------------------


def make_damaged_pdf(path: Path) -> Path:
    """A PDF whose ``startxref`` points to the wrong offset: pypdf repairs it and logs so."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Damaged but readable, codeword HERON")
    data = bytes(pdf.output()).replace(b"startxref\n", b"startxref\n9")
    path.write_bytes(data)
    return path


def pypdf_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("pypdf")]


def test_damaged_pdf_repairs_are_not_logged_from_our_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    path = make_damaged_pdf(tmp_path / "damaged.pdf")
    with caplog.at_level(logging.WARNING):
        assert "HERON" in read_tool_file(path)
    assert pypdf_records(caplog) == []
    assert capfd.readouterr().err == ""


def test_the_users_own_pypdf_warnings_still_reach_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Outside our call, and in another thread during it, pypdf logs as before."""
    import pypdf

    path = make_damaged_pdf(tmp_path / "damaged.pdf")
    read_tool_file(path)
    with caplog.at_level(logging.WARNING):
        pypdf.PdfReader(str(path))
    alone = len(pypdf_records(caplog))
    assert alone > 0
    caplog.clear()
    stop = threading.Event()

    def convert() -> None:
        while not stop.is_set():
            read_tool_file(path)

    worker = threading.Thread(target=convert)
    with caplog.at_level(logging.WARNING):
        worker.start()
        try:
            for _ in range(20):
                pypdf.PdfReader(str(path))
        finally:
            stop.set()
            worker.join()
    records = pypdf_records(caplog)
    assert len(records) == 20 * alone
    assert {r.thread for r in records} == {threading.get_ident()}


# --------------------------------------------------------------------------- review of 2026-12-03


def test_a_spill_with_no_home_directory_is_a_failed_spill(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A container run as a user with no passwd entry and no HOME: Path.home() raises.
    import pwd

    from ctxbudget import spill

    for key in ("HOME", "XDG_CACHE_HOME", "CTXBUDGET_SPILL_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(spill, "_default_store", None)

    def no_entry(uid: int) -> object:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    result = truncate_output(LOG, max_tokens=100)
    assert result.truncated and result.spill_path is None
    assert result.spill_error is not None and "CTXBUDGET_SPILL_DIR" in result.spill_error
    assert "could not be stored" in result.text
    store = DirectorySpillStore()  # building one still never fails
    with pytest.raises(OSError, match="no spill directory"):
        store.write("x")
    # Nor does its clean-up look in the working directory (a spill-named file 30 days old).
    monkeypatch.chdir(tmp_path)
    old = tmp_path / spill.spill_file_name("x", now=1.0)
    old.write_text("not ours to remove")
    os.utime(old, (1.0, 1.0))
    assert store.cleanup().removed_files == 0 and old.exists()


def _w(parent: object, tag: str, text: str | None = None) -> object:
    from docx.oxml.ns import qn
    from lxml import etree

    element = etree.SubElement(parent, tag if tag.startswith("{") else qn(tag))
    if text is not None:
        element.text = text
    return element


def test_docx_text_in_tracked_changes_and_content_controls_is_read(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    p = document.add_paragraph("start")
    _w(_w(_w(p._p, "w:ins"), "w:r"), "w:t", " INSERTED")  # an unaccepted insertion
    _w(_w(_w(p._p, "w:del"), "w:r"), "w:delText", " DELETED")
    _w(_w(_w(p._p, "w:moveFrom"), "w:r"), "w:t", " MOVED")  # read once, where it went
    _w(_w(_w(p._p, "w:moveTo"), "w:r"), "w:t", " MOVED")
    _w(_w(_w(_w(p._p, "w:sdt"), "w:sdtContent"), "w:r"), "w:t", " INLINE")
    _w(_w(_w(p._p, "w:fldSimple"), "w:r"), "w:t", " FIELD")
    block = _w(document.element.body, "w:sdt")  # a block content control (a form's part)
    content = _w(block, "w:sdtContent")
    content.append(document.add_paragraph("BLOCK")._p)  # type: ignore[attr-defined]
    document.element.body.remove(block)
    p._p.addnext(block)
    cell = document.add_table(rows=1, cols=1).cell(0, 0)
    cell_control = _w(_w(cell._tc, "w:sdt"), "w:sdtContent")
    cell_control.append(document.add_paragraph("IN CELL")._p)  # type: ignore[attr-defined]
    document.save(tmp_path / "a.docx")
    text = read_tool_file(tmp_path / "a.docx")
    assert text.startswith("start INSERTED MOVED INLINE FIELD\n\nBLOCK\n")
    assert "DELETED" not in text and text.count("MOVED") == 1
    assert "IN CELL" in text


@pytest.mark.parametrize(
    ("suffix", "content_type"),
    [
        (".ppsx", b"presentationml.slideshow.main+xml"),
        (".potx", b"presentationml.template.main+xml"),
    ],
)
def test_slide_shows_and_templates_are_read(
    tmp_path: Path, suffix: str, content_type: bytes
) -> None:
    import pptx

    presentation = pptx.Presentation()
    presentation.slides.add_slide(presentation.slide_layouts[1]).shapes.title.text = "Hello"
    path = tmp_path / f"deck{suffix}"
    presentation.save(path)
    rewrite_zip(
        path,
        "[Content_Types].xml",
        lambda body: body.replace(b"presentationml.presentation.main+xml", content_type),
    )
    assert "## Slide 1: Hello" in read_tool_file(path)


@pytest.mark.parametrize(
    ("line", "budget"),
    [
        ("\U0001f1fa\U0001f1f8\U0001f1eb\U0001f1f7" * 5_000, 44),  # flags
        ("e\u0301" * 20_000, 51),  # accents
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467 " * 3_000, 47),  # families
    ],
)
def test_a_cut_inside_a_line_splits_no_grapheme_cluster(line: str, budget: int) -> None:
    import regex

    clusters = [m.group() for m in regex.finditer(r"\X", line)]
    heads = {"".join(clusters[:k]) for k in range(len(clusters) + 1)}
    tails = {"".join(clusters[k:]) for k in range(len(clusters) + 1)}
    shown = 0
    for head_ratio in (0.0, 0.5, 1.0):
        result = truncate_output(line, max_tokens=budget, head_ratio=head_ratio, spill=False)
        lines = result.text.split("\n")
        at = next(i for i, text in enumerate(lines) if text.startswith("[... "))
        head, tail = "\n".join(lines[:at]), lines[at + 1]
        assert head in heads, head[-4:]
        assert tail in tails, tail[:4]
        shown += len(head) + len(tail)
    assert shown  # (some of the line was shown)


def test_empty_columns_of_a_sheet_go(tmp_path: Path) -> None:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet["C1"], sheet["E1"], sheet["C2"] = "h", "k", "1"
    sheet["A1"] = sheet["B1"] = ""  # written but empty
    sheet.cell(row=1_048_576, column=16_384, value="corner")
    path = tmp_path / "gaps.xlsx"
    workbook.save(str(path))
    text = read_tool_file(path)
    assert "| h | k |  |\n| --- | --- | --- |\n| 1 |  |  |\n|  |  | corner |" in text
    assert len(text) < 200


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_file_whose_size_is_not_told_is_refused_as_at_least_what_was_read() -> None:
    # /proc files report a size of 0: the cap is passed while reading, the rest unknown.
    from ctxbudget.errors import FileTooLargeError

    with pytest.raises(FileTooLargeError, match="file is at least 11 bytes, over the 10-byte"):
        read_tool_file("/proc/self/status", max_bytes=10)


def test_docx_hyphens_tabs_and_text_box_paragraphs_read_as_word_shows_them(
    tmp_path: Path,
) -> None:
    import docx

    mc = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
    document = docx.Document()
    p = document.add_paragraph("well")
    _w(_w(p._p, "w:r"), "w:noBreakHyphen")
    _w(_w(p._p, "w:r"), "w:t", "known")
    _w(_w(p._p, "w:r"), "w:ptab")
    _w(_w(p._p, "w:r"), "w:t", "right")
    box = document.add_paragraph("Intro")
    alternate = _w(_w(box._p, "w:r"), f"{mc}AlternateContent")
    for branch in ("Choice", "Fallback"):  # a text box is written twice: drawing and VML
        content = _w(_w(alternate, f"{mc}{branch}"), "w:txbxContent")
        for line in ("Hello", "World"):
            _w(_w(_w(content, "w:p"), "w:r"), "w:t", line)
    document.save(tmp_path / "a.docx")
    text = read_tool_file(tmp_path / "a.docx")
    assert text.startswith("well-known right\n\nIntro Hello World\n"), text


def test_docx_table_rows_and_cells_in_content_controls_are_read(tmp_path: Path) -> None:
    # A repeating section's rows, and a form's cell, sit in content controls (w:sdt).
    document, table = _docx_grid(2, 2)
    tbl = table._tbl
    second = tbl.tr_lst[1]
    tbl.remove(second)
    _w(_w(tbl, "w:sdt"), "w:sdtContent").append(second)  # type: ignore[attr-defined]
    first = tbl.tr_lst[0]
    cell = first.tc_lst[1]
    first.remove(cell)
    _w(_w(first, "w:sdt"), "w:sdtContent").append(cell)  # type: ignore[attr-defined]
    document.save(tmp_path / "a.docx")
    assert read_tool_file(tmp_path / "a.docx") == (
        "| r0c0 | r0c1 |\n| --- | --- |\n| r1c0 | r1c1 |\n"
    )
