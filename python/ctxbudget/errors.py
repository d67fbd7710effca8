"""Exceptions raised by ctxbudget.

Every exception subclasses a builtin, so callers can catch what they already expect
(``ValueError`` for bad input) or the precise class.
"""

from __future__ import annotations

__all__ = ["BinaryContentError"]


class BinaryContentError(ValueError):
    """Data that should be text is not: it holds a NUL byte or invalid UTF-8.

    Raised by :func:`ctxbudget.check_text` and :func:`ctxbudget.validate_text`. A tool output
    that fails this check must not be decoded and handed to the model as garbage.

    Attributes:
        offset: Byte offset of the first offending byte.
        reason: ``"nul"`` or ``"invalid_utf8"``.
        detected_type: The real file type recognised from magic bytes (``"pdf"``, ``"zip"``,
            ``"png"``, ``"elf"``, ...), or ``None`` when unknown.
    """

    def __init__(
        self, message: str, offset: int, reason: str, detected_type: str | None = None
    ) -> None:
        super().__init__(message, offset, reason, detected_type)
        self.message = message
        self.offset = offset
        self.reason = reason
        self.detected_type = detected_type

    def __str__(self) -> str:
        return self.message
