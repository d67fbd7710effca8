"""Checks on raw bytes before they become text: NUL bytes, invalid UTF-8, binary file types."""

from __future__ import annotations

import codecs

from ctxbudget import _core
from ctxbudget._types import BytesLike
from ctxbudget.errors import BinaryContentError

__all__ = ["check_text", "detect_type", "validate_text"]


def check_text(data: BytesLike) -> str:
    """Decode bytes as UTF-8 text, refusing anything that is not text.

    Args:
        data: ``bytes``, ``bytearray`` or ``memoryview`` (C-contiguous). A large ``bytes`` is
            scanned with the interpreter released; a buffer other threads could write while
            it is read (anything but ``bytes`` and a ``memoryview`` of ``bytes``) with it held.

    Returns:
        The decoded text.

    Raises:
        BinaryContentError: On a NUL byte or invalid UTF-8, with the byte ``offset`` of the
            first bad byte, the ``reason`` and the ``detected_type`` from magic bytes.
        TypeError: If ``data`` is not a bytes-like object.

    >>> check_text(b"hello")
    'hello'
    >>> check_text(b"%PDF-1.7\\n\\x00\\x01")
    Traceback (most recent call last):
    ...
    ctxbudget.errors.BinaryContentError: not text: NUL byte at offset 9 (looks like a PDF document)
    """
    return _core.check_text(data)


def validate_text(data: BytesLike) -> None:
    """Check that bytes are UTF-8 text without building a ``str``.

    Same rules and errors as :func:`check_text`; runs at memory speed (a large ``bytes`` with
    the interpreter released, a buffer other threads could write with it held).

    >>> validate_text(b"plain text")
    """
    _core.validate_text(data)


def detect_type(data: BytesLike) -> str | None:
    """Name the binary file type of ``data`` from its magic bytes, or ``None``.

    >>> detect_type(b"\\x89PNG\\r\\n\\x1a\\n....")
    'png'
    """
    return _core.detect_type(data)


def cut_at_end(data: BytesLike, err: BinaryContentError) -> bool:
    """Whether ``err`` (from checking ``data``) is only an incomplete UTF-8 character at the
    very end of ``data``: ``head -c``, a chunk or any other byte limit cut text mid-character,
    which is still text."""
    if err.reason != "invalid_utf8":
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(memoryview(data)[err.offset :], final=False)
    except UnicodeDecodeError:
        return False
    return True
