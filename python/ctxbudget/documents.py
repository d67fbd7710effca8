"""Read a file for a tool result: text checked, documents converted, binaries refused.

The failure this prevents: a ReadFile tool that decodes a ``.docx`` as UTF-8 hands the model
a megabyte of garbage that no token count anticipates, and the conversation can no longer be
sent. :func:`read_tool_file` returns only real text:

- text files are decoded through :func:`ctxbudget.check_text` (NUL bytes or invalid UTF-8
  are refused with the byte offset);
- PDF, DOCX, XLSX and PPTX are converted to markdown with the optional extra
  ``pip install ctxbudget[documents]`` (pypdf, python-docx, openpyxl, python-pptx);
- every other binary is refused with :class:`~ctxbudget.errors.BinaryContentError` naming
  the type recognised from its magic bytes;
- files over ``max_bytes`` are refused from their size, before anything is read.

Documents are recognised by content, not by name: a PDF starts with ``%PDF-`` (after
optional whitespace or a UTF-8 byte order mark, so a text that merely mentions the signature
stays text); an Office file (a zip archive) declares its main part's content type in
``[Content_Types].xml``, whatever the part is called (Word for the web saves
``word/document2.xml``), with the usual part names (``word/document.xml``,
``xl/workbook.xml``, ``ppt/presentation.xml``) as a fallback. A renamed file is handled by
what it is.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import importlib
import io
import logging
import os
import pkgutil
import re
import stat
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any, BinaryIO, Literal
from xml.etree import ElementTree

from ctxbudget import text as _text
from ctxbudget.byte_order import (
    UTF8_BOM,
    is_utf16,
    utf16_error,
    utf16_length,
    utf16_nul_error,
)
from ctxbudget.errors import (
    BinaryContentError,
    DocumentConversionError,
    DocumentsExtraMissingError,
    FileTooLargeError,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DOCUMENT_KINDS",
    "DocumentConversionError",
    "DocumentsExtraMissingError",
    "FileTooLargeError",
    "document_kind",
    "read_tool_file",
]

#: Default size cap of :func:`read_tool_file`: 16 MiB. A 16 MiB text is about four million
#: tokens, far past any context window (truncate it with ``truncate_output``), and it is
#: larger than nearly every PDF or Office file an agent meets.
DEFAULT_MAX_BYTES = 16 << 20

DocumentKind = Literal["pdf", "docx", "xlsx", "pptx"]
#: The document formats converted to markdown.
DOCUMENT_KINDS: tuple[DocumentKind, ...] = ("pdf", "docx", "xlsx", "pptx")

_EXTRA_HINT = "pip install 'ctxbudget[documents]'"
#: Module that each format needs, and the package that provides it.
_MODULES: dict[DocumentKind, tuple[str, str]] = {
    "pdf": ("pypdf", "pypdf"),
    "docx": ("docx", "python-docx"),
    "xlsx": ("openpyxl", "openpyxl"),
    "pptx": ("pptx", "python-pptx"),
}
#: Main-part content types each converter's library opens (python-docx, openpyxl,
#: python-pptx), lower-cased: content types compare case-insensitively.
_MAIN_CONTENT_TYPES: dict[str, DocumentKind] = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "docx",
    "application/vnd.ms-word.document.macroenabled.main+xml": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml": "docx",
    "application/vnd.ms-word.template.macroenabledtemplate.main+xml": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.main+xml": "xlsx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml": "xlsx",
    "application/vnd.ms-excel.template.macroenabled.main+xml": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": "pptx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.main+xml": "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml": "pptx",
    "application/vnd.ms-powerpoint.slideshow.macroenabled.main+xml": "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml": "pptx",
    "application/vnd.ms-powerpoint.template.macroenabled.main+xml": "pptx",
}
#: The usual main parts, for a package whose ``[Content_Types].xml`` names none.
_OOXML_PARTS: tuple[tuple[str, DocumentKind], ...] = (
    ("word/document.xml", "docx"),
    ("xl/workbook.xml", "xlsx"),
    ("ppt/presentation.xml", "pptx"),
)
_CONTENT_TYPES_PART = "[Content_Types].xml"
#: A ``[Content_Types].xml`` larger than this (a few KiB in practice) is not read.
_CONTENT_TYPES_MAX = 1 << 20
#: What may come before ``%PDF-``: PDF white space (NUL included), after an optional BOM.
_PDF_LEAD = b" \t\r\n\f\x00"
#: An Office file may unpack to at most this many times ``max_bytes`` (XML compresses about
#: ten times; a zip bomb, millions of times).
_UNPACK_RATIO = 16
#: One XML part of an Office file the converters parse whole (a Word document's body, a
#: workbook's shared strings) may unpack to at most this many times ``max_bytes``: parsed, it
#: takes some twenty times its size in memory (95 KB of zip holding 40 MB of empty
#: paragraphs took 40 s and 930 MB, within the file's limit). Markup is 10-20 times the
#: text of a table, so at 4 a table of a quarter of the cap in text still reads.
_PART_RATIO = 4
#: Parts parsed whole, by name (worksheets and slides are read a row or a slide at a time).
_WHOLE_PARTS = re.compile(r"word/document\d*\.xml|xl/sharedStrings\.xml", re.IGNORECASE)
#: A PDF's page content streams, decoded, may add up to at most this many times
#: ``max_bytes`` (a page's text is a few KB of them, a page of vector drawing some hundreds;
#: 20 pages sharing one 20 MB stream of moves, 34 KB of file, took 25 s and gave no text).
_PDF_CONTENT_RATIO = 16


def read_tool_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a file for a model: text as is, documents as markdown, binaries refused.

    Steps: the size from ``os.stat`` is checked against ``max_bytes`` before the file is
    opened, so a huge file costs nothing; the bytes are read (at most ``max_bytes``, even if
    the file grows meanwhile); a PDF, DOCX, XLSX or PPTX is converted to markdown (the
    converted text is held to ``max_bytes`` too, and an Office file that unpacks to over 16
    times ``max_bytes`` is refused before parsing: a zip bomb); anything else must be UTF-8
    text.

    Text rules: a UTF-8 byte order mark is removed (it carries no content and would cost a
    token). A UTF-16 file with a byte order mark (what Windows PowerShell's ``>`` writes) is
    decoded as UTF-16. Text in a legacy 8-bit encoding such as Latin-1 is refused with the
    offset of the first invalid byte, never guessed at: re-encode it to UTF-8 first.

    Args:
        path: The file to read.
        max_bytes: Size cap in bytes, for the file and for converted text
            (default :data:`DEFAULT_MAX_BYTES`, 16 MiB).

    Returns:
        The text, or markdown for a document.

    Raises:
        FileTooLargeError: Over a size cap (a ``ValueError``).
        BinaryContentError: Not text and not a supported document (a ``ValueError``);
            ``detected_type`` names the type when its magic bytes are known (``"png"``,
            ``"elf"``, ``"gzip"``, ``"zip"``, ...), ``offset`` the first offending byte.
        DocumentsExtraMissingError: A document, without ``ctxbudget[documents]``
            installed (a ``ModuleNotFoundError``).
        DocumentConversionError: A damaged, encrypted or text-less document (a
            ``ValueError``).
        OSError: The file is missing, unreadable, a directory, or not a regular file.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "notes.txt").write_bytes(b"\\xef\\xbb\\xbfhello\\n")
    >>> read_tool_file(folder / "notes.txt")
    'hello\\n'
    >>> _ = (folder / "logo.png").write_bytes(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00\\x00\\rIHDR")
    >>> read_tool_file(folder / "logo.png")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ctxbudget.errors.BinaryContentError: not text: ...
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
    name = os.fspath(path)
    size = _regular_file_size(name, os.stat(name), max_bytes)
    # Opened without blocking: a pipe put in the file's place since the check above must not
    # hang the read; the open file is checked again.
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with open(fd, "rb", closefd=True) as handle:
        size = _regular_file_size(name, os.fstat(handle.fileno()), max_bytes)
        data = _read_capped(handle, size, max_bytes)
    if len(data) > max_bytes:
        # (More than the file's size said: read until the cap was passed, the rest unknown.)
        raise FileTooLargeError(name, len(data), max_bytes, at_least=True)
    kind = document_kind(data)
    if kind is not None:
        return _convert(name, kind, data, max_bytes)
    damaged = _damaged_office_kind(data)
    if damaged is not None:
        reason = "it is damaged or cut short (its zip archive cannot be read)"
        raise DocumentConversionError(name, damaged, reason)
    return _decode_text(data)


#: Parts only an Office file of each kind has (by the start of their names).
_OFFICE_PARTS: tuple[tuple[bytes, DocumentKind], ...] = (
    (b"word/document.xml", "docx"), (b"xl/workbook.xml", "xlsx"),
    (b"xl/worksheets/", "xlsx"), (b"ppt/presentation.xml", "pptx"), (b"ppt/slides/", "pptx"),
)  # fmt: skip
#: A zip entry's local header up to its name: the name's length, the extra field's length.
_LOCAL_HEADER = re.compile(rb"PK\x03\x04.{22}(..)(..)", re.DOTALL)


def _damaged_office_kind(data: bytes) -> DocumentKind | None:
    """The kind of an Office file whose zip archive cannot be read (a download cut short):
    its entries' local headers, in its first 64 KB, name a package part
    (``[Content_Types].xml``, ``_rels/.rels``, ``docProps/``) and a part only a Word, Excel
    or PowerPoint file has; ``None`` for anything else (an archive that opens is no damaged
    one)."""
    if not data.startswith(b"PK\x03\x04"):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)):
            return None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        pass
    head = data[:65_536]
    names = []
    for header in _LOCAL_HEADER.finditer(head):
        size = int.from_bytes(header.group(1), "little")
        names.append(head[header.end() : header.end() + size])
    package = any(
        n == b"[Content_Types].xml" or n == b"_rels/.rels" or n.startswith(b"docProps/")
        for n in names
    )  # (openpyxl writes [Content_Types].xml last: a cut file may lack it)
    if not package:
        return None
    for name in names:
        for part, kind in _OFFICE_PARTS:
            if name.startswith(part):
                return kind
    return None


def _regular_file_size(name: str, info: os.stat_result, max_bytes: int) -> int:
    """The size of a regular file of at most ``max_bytes``; refuses anything else."""
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", name)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a pipe, socket or device)", name)
    if info.st_size > max_bytes:
        raise FileTooLargeError(name, info.st_size, max_bytes)
    return info.st_size


#: Bytes read at a time once a file holds more than its size said.
_READ_CHUNK = 1 << 20


def _read_capped(handle: BinaryIO, size: int, max_bytes: int) -> bytes:
    """The file's bytes, at most ``max_bytes + 1`` of them (one more than the cap tells a
    file that grew past it). The stated ``size`` is read at once, and then chunks while the
    file has more: no buffer of the cap's size is set aside for a small file."""
    parts: list[bytes] = []
    got = 0
    want = min(size, max_bytes) + 1
    while got <= max_bytes:
        part = handle.read(min(want, max_bytes + 1 - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
        want = _READ_CHUNK
    return parts[0] if len(parts) == 1 else b"".join(parts)


def document_kind(data: bytes) -> DocumentKind | None:
    """Which convertible document ``data`` is, from its content, or ``None``.

    A PDF is data that starts with ``%PDF-``, after at most 1 KiB of whitespace or a UTF-8
    byte order mark, and ends in its ``%%EOF`` marker or is not text (a PDF cut short); a
    text that starts with the signature or mentions it further on is not one. An Office
    file is a zip archive whose ``[Content_Types].xml`` gives a part in it the content type
    of a Word document, Excel workbook or PowerPoint presentation, or, failing that, which
    holds the usual main part (``word/document.xml``, ...).

    >>> document_kind(b"%PDF-1.7\\n...\\n%%EOF\\n")
    'pdf'
    >>> document_kind(b"%PDF-1.7\\n\\xe2\\xe3\\xcf\\xd3\\n")  # binary, cut short
    'pdf'
    >>> document_kind(b"%PDF- is how a PDF file starts.\\n") is None
    True
    >>> document_kind(b'def is_pdf(data):\\n    return data.startswith(b"%PDF-")\\n') is None
    True
    >>> document_kind(b"plain text") is None
    True
    """
    lead = data[:1024]
    if lead.removeprefix(UTF8_BOM).lstrip(_PDF_LEAD).startswith(b"%PDF-"):
        # A PDF ends in its %%EOF marker; without one, text that begins with "%PDF-" (notes
        # about the format) is text, and anything else a PDF cut short.
        if b"%%EOF" in data[-_PDF_TAIL:] or not _is_text(data):
            return "pdf"
        return None
    if not data.startswith(b"PK\x03\x04"):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = {name.lower() for name in archive.namelist()}
            kind = _main_part_kind(archive, names)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None
    if kind is not None:
        return kind
    for part, fallback in _OOXML_PARTS:
        if part in names:
            return fallback
    return None


def _main_part_kind(archive: zipfile.ZipFile, names: set[str]) -> DocumentKind | None:
    """The kind ``[Content_Types].xml`` declares for a part in ``names``, or ``None``.

    Part names compare case-insensitively, as OPC says. An unreadable, oversized or
    malformed ``[Content_Types].xml`` counts as none.
    """
    try:
        info = archive.getinfo(_CONTENT_TYPES_PART)
        if info.file_size > _CONTENT_TYPES_MAX:
            return None
        root = ElementTree.fromstring(archive.read(info))
    except (KeyError, RuntimeError, NotImplementedError, zlib.error, ElementTree.ParseError):
        return None
    for element in root:
        if not element.tag.endswith("Override"):
            continue
        kind = _MAIN_CONTENT_TYPES.get(element.get("ContentType", "").strip().lower())
        if kind is not None and element.get("PartName", "").lstrip("/").lower() in names:
            return kind
    return None


def _is_text(data: bytes) -> bool:
    try:
        _text.validate_text(data)
    except BinaryContentError:
        return False
    return True


def _decode_text(data: bytes) -> str:
    if data.startswith(UTF8_BOM):
        # Checked whole, so that an error's offset is the file's; the mark is then dropped.
        return _text.check_text(data)[1:]
    if is_utf16(data):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as err:
            raise utf16_error(err.start) from None
        if (nul := text.find("\x00")) >= 0:
            raise utf16_nul_error(2 + utf16_length(text[:nul]))
        return text
    return _text.check_text(data)


def _require(kind: DocumentKind) -> ModuleType:
    module, package = _MODULES[kind]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise DocumentsExtraMissingError(
            f"reading {kind.upper()} files needs the optional documents extra "
            f"(missing module {module!r} from {package}): {_EXTRA_HINT}",
            name=module,
        ) from err


def _convert(path: str, kind: DocumentKind, data: bytes, max_bytes: int) -> str:
    library = _require(kind)
    if kind != "pdf":
        _check_unpacked_size(path, data, max_bytes)
    converter = _CONVERTERS[kind]
    out = _Output(path, kind, max_bytes)
    try:
        converter(library, data, out)
    except (FileTooLargeError, DocumentConversionError):
        raise
    except Exception as err:
        raise DocumentConversionError(path, kind, f"{type(err).__name__}: {err}") from err
    text = out.text()
    if not text.strip():
        raise DocumentConversionError(path, kind, "no text could be extracted")
    return text


def _check_unpacked_size(path: str, data: bytes, max_bytes: int) -> None:
    """Refuse an Office file whose parts unpack to over ``_UNPACK_RATIO`` times the cap.

    The sizes come from the zip directory, and ``zipfile`` never inflates an entry past its
    declared size, so a zip bomb is refused before any XML is parsed.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
    unpacked = sum(info.file_size for info in infos)
    limit = _UNPACK_RATIO * max_bytes
    if unpacked > limit:
        raise FileTooLargeError(path, unpacked, limit, what="unpacked content")
    part_limit = _PART_RATIO * max_bytes
    for info in infos:
        if info.file_size > part_limit and _WHOLE_PARTS.fullmatch(info.filename):
            what = f"unpacked {info.filename}"
            raise FileTooLargeError(path, info.file_size, part_limit, what=what)


def _without_lone_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined into their characters and lone surrogates
    replaced by U+FFFD: a converter may hand over UTF-16 code units (pypdf decodes a PDF's
    character maps so), which no UTF-8 text, and no provider request, can carry."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class _Output:
    """Markdown being built, held to a byte cap so a zip bomb cannot exhaust memory."""

    __slots__ = ("_cells", "_limit", "_parts", "_size", "kind", "path")

    def __init__(self, path: str, kind: DocumentKind, limit: int) -> None:
        self.path = path
        self.kind = kind
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self._cells = 0

    def add(self, line: str) -> None:
        line = line.replace("\x00", "")
        try:
            size = len(line.encode("utf-8"))
        except UnicodeEncodeError:
            line = _without_lone_surrogates(line)
            size = len(line.encode("utf-8"))
        self._size += size + 1
        if self._size > self._limit:
            raise FileTooLargeError(
                self.path, self._size, self._limit, what="converted text", at_least=True
            )
        self._parts.append(line)

    @property
    def limit(self) -> int:
        """The cap on the converted text, in bytes."""
        return self._limit

    def check_room(self, more: int) -> None:
        """Refuse now what is bound to go over the cap: at least ``more`` bytes to come."""
        if self._size + more > self._limit:
            size = self._size + more
            raise FileTooLargeError(self.path, size, self._limit, what="converted text")

    def read_cells(self, count: int) -> None:
        """Count table cells read, and refuse more of them than the cap has bytes.

        Empty cells count: a sheet that declares a huge range around a few values, or a Word
        cell spanning a million columns, is a few KiB of zip that would cost billions of
        steps while adding little or nothing to the text.
        """
        self._cells += count
        if self._cells > self._limit:
            raise DocumentConversionError(
                self.path,
                self.kind,
                f"its tables span over {self._limit:,} cells, empty ones included (one per "
                "byte of the size cap); read a part of it instead",
            )

    def blank(self) -> None:
        """End a block: one empty line, never two."""
        if self._parts and self._parts[-1]:
            self.add("")

    def text(self) -> str:
        return "\n".join(self._parts).strip("\n") + "\n"


def _cell(value: object) -> str:
    """One table cell: text on one line, pipes escaped."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    elif isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        value = value.isoformat()
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def _table(rows: Iterable[Sequence[object]], out: _Output) -> None:
    """Rows as a markdown table, the first row as the header; empty rows and columns go.

    The table is held to the output's cap as its rows are read: a sheet's rows are only
    parsed as they are asked for, and a sheet over the cap stops there. Rows are kept as
    their filled cells only, and the table is as wide as the columns that hold something
    (at least three bytes a cell in every row): a value in a sheet's far corner
    (``XFD1048576``) beside ``A1`` is a table of two columns, not of 16,384."""
    kept: list[dict[int, str]] = []
    columns: set[int] = set()
    size = 0
    for row in rows:
        filled = {i: text for i, value in enumerate(row) if (text := _cell(value))}
        if filled:
            kept.append(filled)
            columns.update(filled)
            size += sum(map(len, filled.values()))  # characters: at most the bytes it takes
            out.check_room(size + 3 * len(columns) * len(kept))
    if not kept:
        return
    order = sorted(columns)
    out.blank()
    for number, filled in enumerate(kept):
        out.add("| " + " | ".join(filled.get(i, "") for i in order) + " |")
        if number == 0:
            out.add("|" + " --- |" * len(order))
    out.blank()


#: Bytes at the end of a PDF searched for its ``%%EOF`` marker (the format puts it in the last
#: 1,024; writers may append a little).
_PDF_TAIL = 65_536


class _QuietThreads(logging.Filter):
    """Drops the records of the threads converting a PDF in :func:`read_tool_file`, only.

    pypdf logs each repair it makes to a damaged PDF (``incorrect startxref pointer(2)``) as
    a warning on its module's logger, which Python prints to stderr when logging is not
    configured; the caller already gets the text or a :class:`DocumentConversionError`.
    Raising pypdf's level would also silence the user's own use of pypdf, in other threads
    or outside our call. This filter is put once on the logger of every pypdf module (a
    logger's filters see only the records made on it, not its children's) and stays there:
    taking it off while another thread's record is being filtered could skip one of the
    user's own filters.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._threads: set[int] = set()
        self._installed = False

    def filter(self, record: logging.LogRecord) -> bool:
        # Filters run in the thread that logs (``record.thread`` is unset without logThreads).
        return threading.get_ident() not in self._threads

    @contextlib.contextmanager
    def quiet(self, package: ModuleType) -> Iterator[None]:
        """Drop this thread's records on ``package``'s loggers while in the block."""
        with self._lock:
            if not self._installed:
                for name in [package.__name__, *_submodules(package)]:
                    logging.getLogger(name).addFilter(self)
                self._installed = True
        me = threading.get_ident()
        self._threads.add(me)
        try:
            yield
        finally:
            self._threads.discard(me)


def _submodules(package: ModuleType) -> Iterator[str]:
    """The names of all modules under ``package``, found on disk without importing them
    (pypdf imports some, ``pypdf.filters`` among them, only when a PDF needs them)."""
    stack = [(list(getattr(package, "__path__", [])), package.__name__ + ".")]
    while stack:
        paths, prefix = stack.pop()
        for info in pkgutil.iter_modules(paths, prefix):
            yield info.name
            where = getattr(info.module_finder, "path", None)
            if info.ispkg and isinstance(where, str):
                stack.append(([os.path.join(where, info.name.rpartition(".")[2])], info.name + "."))


_PYPDF_LOGS = _QuietThreads()


def quiet_pypdf(pypdf: ModuleType) -> contextlib.AbstractContextManager[None]:
    """A block in which this thread's pypdf warnings are not logged (see
    :class:`_QuietThreads`); used by the PDF page count of :mod:`ctxbudget.media` too."""
    return _PYPDF_LOGS.quiet(pypdf)


def _convert_pdf(pypdf: ModuleType, data: bytes, out: _Output) -> None:
    with _PYPDF_LOGS.quiet(pypdf):
        _read_pdf(pypdf, data, out)


def _read_pdf(pypdf: ModuleType, data: bytes, out: _Output) -> None:
    if b"%%EOF" not in data[-_PDF_TAIL:]:
        # Cut short (a download that stopped) or not a PDF: pypdf would search the whole file
        # backwards for the marker, a line at a time (16 MB: 10 s), then fail.
        raise DocumentConversionError(
            out.path, "pdf", "it has no %%EOF marker at its end: the file is cut short"
        )
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise DocumentConversionError(out.path, "pdf", "it is encrypted with a password")
    found = False
    content = 0
    for number, page in enumerate(reader.pages, start=1):
        content += _content_size(page)
        if content > _PDF_CONTENT_RATIO * out.limit:
            raise DocumentConversionError(
                out.path,
                "pdf",
                f"its pages' content streams add up to over {_PDF_CONTENT_RATIO * out.limit:,}"
                f" bytes by page {number} ({_PDF_CONTENT_RATIO} times the size cap); read a"
                " part of it instead",
            )
        text = (page.extract_text() or "").strip()
        found = found or bool(text)
        out.add(f"<!-- page {number} -->")
        for line in text.splitlines():
            out.add(line.rstrip())
        out.blank()
    if not found:
        raise DocumentConversionError(
            out.path,
            "pdf",
            "no text could be extracted (a scanned PDF holds images of pages, which need OCR)",
        )


def _content_size(page: Any) -> int:
    """Bytes of a PDF page's content streams, decoded (what extracting its text reads; a
    stream pages share counts on each). pypdf keeps the decoded data, so extracting the
    text does not decode them again."""
    contents = _resolved(page.get("/Contents"))
    streams = contents if isinstance(contents, list) else [contents]
    total = 0
    for stream in map(_resolved, streams):
        get_data = getattr(stream, "get_data", None)
        if get_data is not None:
            total += len(get_data())
    return total


def _resolved(value: Any) -> Any:
    """A PDF object, its reference followed (``None`` for one to a missing object, which a
    damaged file has and pypdf reads leniently)."""
    get_object = getattr(value, "get_object", None)
    return get_object() if get_object is not None else value


#: Word main parts python-docx refuses by their content type, though their markup is a
#: document's: a macro-enabled document (.docm), a template (.dotx, .dotm).
_WORD_VARIANTS = re.compile(
    rb"application/vnd\.(ms-word\.document\.macroenabled|openxmlformats-officedocument"
    rb"\.wordprocessingml\.template|ms-word\.template\.macroenabledtemplate)\.main\+xml",
    re.IGNORECASE,
)
_WORD_DOCUMENT = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
#: PowerPoint main parts python-pptx refuses by their content type (a slide show, .ppsx and
#: .ppsm; a template, .potx and .potm), though their markup is a presentation's.
_PRESENTATION_VARIANTS = re.compile(
    rb"application/vnd\.(openxmlformats-officedocument\.presentationml\.(slideshow|template)"
    rb"|ms-powerpoint\.(slideshow|template)\.macroenabled)\.main\+xml",
    re.IGNORECASE,
)
_PRESENTATION = (
    b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
)


def _as_word_document(data: bytes) -> bytes:
    """``data`` with the main part of a macro-enabled document or a template declared as a
    document's, which python-docx opens (macros are never run: only the text is read)."""
    return _declared_as(data, _WORD_VARIANTS, _WORD_DOCUMENT)


def _declared_as(data: bytes, variants: re.Pattern[bytes], main: bytes) -> bytes:
    """``data`` with a main part whose content type ``variants`` matches declared ``main``."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        types = source.read(_CONTENT_TYPES_PART)
        patched = variants.sub(main, types)
        if patched == types:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
            for info in source.infolist():
                body = patched if info.filename == _CONTENT_TYPES_PART else source.read(info)
                copy.writestr(info, body)
    return out.getvalue()


def _convert_docx(docx: ModuleType, data: bytes, out: _Output) -> None:
    document = docx.Document(io.BytesIO(_as_word_document(data)))
    table_module = importlib.import_module("docx.table")
    paragraph_type = importlib.import_module("docx.text.paragraph").Paragraph
    body = document._body
    for element in _word_blocks(document.element.body):
        if element.tag == _W_TABLE:
            _table(_docx_rows(table_module.Table(element, body), table_module, out), out)
            continue
        text = " ".join(_paragraph_text(element).split())
        if text:  # an empty paragraph costs no python-docx object (millions of them did)
            _docx_paragraph(paragraph_type(element, body), text, out)


#: WordprocessingML element names, as the XML parser gives them.
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_W_PARAGRAPH, _W_TABLE = f"{_W}p", f"{_W}tbl"
_W_TEXT = f"{_W}t"
#: Run content that stands for a character, as python-docx's run text reads it.
_W_CHARACTERS = {
    f"{_W}tab": "\t",
    f"{_W}ptab": "\t",
    f"{_W}br": "\n",
    f"{_W}cr": "\n",
    f"{_W}noBreakHyphen": "-",
}
#: Not read: where a tracked move came from (its text is read where it went, ``moveTo``), and
#: the fallback markup of alternate content (a text box is there twice, as a drawing and as
#: its VML fallback).
_W_SKIPPED = (
    f"{_W}moveFrom",
    "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback",
)


def _word_blocks(container: Any, tags: tuple[str, ...] = (_W_PARAGRAPH, _W_TABLE)) -> Iterator[Any]:
    """The children of ``container`` with one of ``tags`` (by default the paragraphs and
    tables of a document body or a table cell), in order, those in content controls
    (``w:sdt``: forms, templates, a table of contents, a repeating section's rows or cells)
    and custom XML included. python-docx gives only the direct ones: the text in content
    controls was lost."""
    for child in container.iterchildren():
        if child.tag in tags:
            yield child
        elif child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _word_blocks(content, tags)
        elif child.tag == f"{_W}customXml":
            yield from _word_blocks(child, tags)


def _paragraph_text(p: Any) -> str:
    """All the text of a ``w:p``: its runs, and those in tracked insertions, content
    controls, fields, hyperlinks and text boxes (python-docx's ``Paragraph.text`` reads
    direct runs and hyperlinks only: an unaccepted insertion was lost). Deleted text is
    ``w:delText``, not read; a tracked move is read where it went, a text box once."""
    if next(p.iterdescendants(_W_TEXT, *_W_CHARACTERS), None) is None:
        return ""  # (found in C: only what matches becomes a Python object)
    parts: list[str] = []
    for element in p.iter(_W_TEXT, _W_PARAGRAPH, *_W_CHARACTERS):
        if next(element.iterancestors(*_W_SKIPPED), None) is not None:
            continue
        if element.tag == _W_TEXT:
            parts.append(element.text or "")
        elif element.tag == _W_PARAGRAPH:
            if element is not p:  # a paragraph of a text box inside this one
                parts.append("\n")
        else:
            parts.append(_W_CHARACTERS[element.tag])
    return "".join(parts)


def _docx_rows(table: Any, table_module: ModuleType, out: _Output) -> Iterator[list[str]]:
    """A Word table's rows of cell texts, as python-docx's ``row.cells`` gives them.

    A cell spanning several columns is repeated in each, and a cell merged down is repeated
    in the rows below, as there. But ``row.cells`` makes an object per spanned column before
    anything can be counted (``gridSpan="100000000"``: gigabytes) and reads a cell's text
    once per column, and finds a merged cell's text by walking up the rows again in every
    row (500 merged rows: 6 s; 1,000 or more: a ``RecursionError``). Here each cell's text
    is read once, spans are counted with :meth:`_Output.read_cells` before they are made,
    and a merged cell's text is carried down a row at a time.
    """
    above: dict[int, str] = {}  # grid column -> text of the cell starting there, a row up
    for tr in _word_blocks(table._tbl, (f"{_W}tr",)):
        row: list[str] = []
        here: dict[int, str] = {}
        column = tr.grid_before
        for tc in _word_blocks(tr, (f"{_W}tc",)):
            span = tc.grid_span
            out.read_cells(max(span, 1))
            if tc.vMerge == "continue":
                text = above.get(column, "")
            else:
                text = _docx_cell_text(table_module._Cell(tc, table), table_module, out)
            here[column] = text
            row.extend([text] * span)
            column += span
        above = here
        yield row


def _docx_cell_text(cell: Any, table_module: ModuleType, out: _Output) -> str:
    """A cell's paragraphs and the text of the tables nested in it (``cell.text`` has only
    the paragraphs: a table inside a cell was lost)."""
    parts: list[str] = []
    for element in _word_blocks(cell._tc):
        if element.tag == _W_TABLE:
            table = table_module.Table(element, cell)
            parts.extend(text for row in _docx_rows(table, table_module, out) for text in row)
        else:
            parts.append(_paragraph_text(element))
    return "\n".join(parts)


def _docx_paragraph(paragraph: Any, text: str, out: _Output) -> None:
    """A paragraph with ``text`` (its text, on one line) as markdown, by its style."""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        out.add(f"# {text}")
        out.blank()
    elif style.startswith("Heading") and _ascii_digits(style[7:].strip()):
        out.add(f"{'#' * min(int(style[7:]), 6)} {text}")
        out.blank()
    elif style.startswith("List Number"):
        out.add(f"1. {text}")
    elif style.startswith("List") or _has_numbering(paragraph):
        out.add(f"- {text}")
    else:
        out.add(text)
        out.blank()


def _ascii_digits(text: str) -> bool:
    """``text`` is a number ``int`` reads: ``str.isdigit`` also takes ``²`` and ``①``."""
    return text.isascii() and text.isdigit()


def _has_numbering(paragraph: Any) -> bool:
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _convert_xlsx(openpyxl: ModuleType, data: bytes, out: _Output) -> None:
    """Each sheet as a table of its cells' values as last saved: a formula's value is what
    the program that saved the workbook computed. openpyxl and pandas save formulas without
    one, and such cells read as empty (reading the formulas as well doubled the time and
    cannot tell them from an empty text Excel saved)."""
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for sheet in workbook.worksheets:
            out.add(f"## {sheet.title}")
            out.blank()
            _forget_dimensions(sheet)
            _table(_counted(sheet.iter_rows(max_row=_EXCEL_MAX_ROWS, values_only=True), out), out)
    finally:
        workbook.close()


#: Rows in an Excel sheet. A row numbered past it (no spreadsheet writes one) is not read:
#: openpyxl would hand over each row missing before it, a billion for ``<row r="1e9">``.
_EXCEL_MAX_ROWS = 1 << 20


def _counted(rows: Iterable[Sequence[object]], out: _Output) -> Iterator[Sequence[object]]:
    """``rows``, each counted with :meth:`_Output.read_cells` (a missing row as one cell)."""
    for row in rows:
        out.read_cells(max(len(row), 1))
        yield row


def _forget_dimensions(sheet: Any) -> None:
    """Read a sheet's rows as they are, not as its ``<dimension>`` element says.

    openpyxl's read-only rows otherwise stop at the declared last row and column, dropping
    any value past a stale range (without a word), and pad every row and every gap between
    rows to the declared width: one value in the sheet's far corner (``XFD1048576``, which
    openpyxl itself declares so) made 17 billion cells of a 5 KiB file.
    """
    reset = getattr(sheet, "reset_dimensions", None)
    if reset is not None:
        reset()


def _convert_pptx(pptx: ModuleType, data: bytes, out: _Output) -> None:
    presentation = pptx.Presentation(
        io.BytesIO(_declared_as(data, _PRESENTATION_VARIANTS, _PRESENTATION))
    )
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        out.add(f"## Slide {number}: {title}" if title else f"## Slide {number}")
        out.blank()
        for shape in _pptx_shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False):
                _table(([cell.text for cell in row.cells] for row in shape.table.rows), out)
            elif getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join(paragraph.text.split())
                    if text:
                        out.add(f"{'  ' * paragraph.level}- {text}")
                out.blank()
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            text = notes.text.strip() if notes is not None else ""
            if text:
                out.add("Notes:")
                for line in text.splitlines():
                    out.add(line)
                out.blank()


def _pptx_shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Shapes in order, group shapes expanded."""
    for shape in shapes:
        inner = getattr(shape, "shapes", None)
        if inner is not None:
            yield from _pptx_shapes(inner)
        else:
            yield shape


_CONVERTERS: dict[DocumentKind, Callable[[ModuleType, bytes, _Output], None]] = {
    "pdf": _convert_pdf,
    "docx": _convert_docx,
    "xlsx": _convert_xlsx,
    "pptx": _convert_pptx,
}
