"""Text files that begin with a byte order mark: UTF-8 with a BOM, and UTF-16.

Windows tools write both (PowerShell's ``>`` writes UTF-16). An agent reads such a file as
its text, without the mark (:func:`ctxbudget.read_tool_file`); ``ctxbudget count`` counts
that same text (:class:`Utf16Decoder` for UTF-16, read in chunks). A UTF-16 file that does not
decode, or that holds a NUL character, is refused with the byte offset in the file.
"""

from __future__ import annotations

import codecs

from ctxbudget.errors import BinaryContentError

UTF8_BOM = b"\xef\xbb\xbf"
#: A UTF-32 little-endian byte order mark, which starts with UTF-16's.
UTF32_LE_BOM = b"\xff\xfe\x00\x00"
#: Byte order marks of UTF-16 text (little and big endian).
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def is_utf16(lead: bytes) -> bool:
    """Whether a file starting with ``lead`` (its first four bytes or more) is UTF-16 text."""
    return lead.startswith(UTF16_BOMS) and not lead.startswith(UTF32_LE_BOM)


def utf16_error(offset: int) -> BinaryContentError:
    """The error for UTF-16 text that does not decode at byte ``offset``: a lone surrogate,
    or an odd last byte."""
    message = f"not text: invalid UTF-16 at byte offset {offset}"
    return BinaryContentError(message, offset, "invalid_utf16", "utf16")


def utf16_nul_error(offset: int) -> BinaryContentError:
    """The error for UTF-16 text holding a NUL character at byte ``offset``."""
    message = f"not text: NUL character in UTF-16 text at byte offset {offset}"
    return BinaryContentError(message, offset, "nul", "utf16")


def utf16_length(text: str) -> int:
    """Bytes of ``text`` in UTF-16 (lone surrogates kept)."""
    return len(text.encode("utf-16-le", "surrogatepass"))


class Utf16Decoder:
    """UTF-16 text with a byte order mark, decoded a chunk at a time; errors name the byte
    offset in the whole text."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-16")()
        self._read = 0

    def decode(self, chunk: bytes, *, final: bool = False) -> str:
        """The text of ``chunk`` (the first one starts with the mark), as far as it is whole.

        Raises:
            BinaryContentError: It does not decode, or it holds a NUL character.
        """
        pending = len(self._decoder.getstate()[0])
        start = self._read - pending  # where the bytes decoded now begin in the text
        try:
            text = self._decoder.decode(chunk, final=final)
        except UnicodeDecodeError as err:
            raise utf16_error(start + err.start) from None
        if (nul := text.find("\x00")) >= 0:
            mark = 2 if self._read == 0 else 0
            raise utf16_nul_error(start + mark + utf16_length(text[:nul]))
        self._read += len(chunk)
        return text
