"""Guards for tool outputs before they reach the model's context.

The checks on raw bytes (:mod:`ctxbudget.text`), reading files and documents
(:mod:`ctxbudget.documents`), truncation (:mod:`ctxbudget.truncate`) and spill stores
(:mod:`ctxbudget.spill`) each have their own module and are re-exported from this one.
"""

from __future__ import annotations

from ctxbudget._types import BytesLike
from ctxbudget.documents import (
    DEFAULT_MAX_BYTES,
    DocumentConversionError,
    DocumentsExtraMissingError,
    FileTooLargeError,
    document_kind,
    read_tool_file,
)
from ctxbudget.spill import (
    CleanupReport,
    DirectorySpillStore,
    FsspecSpillStore,
    SpillStore,
    default_spill_dir,
    default_spill_store,
)
from ctxbudget.text import check_text, detect_type, validate_text
from ctxbudget.truncate import TruncatedResult, truncate_output

__all__ = [
    "DEFAULT_MAX_BYTES",
    "BytesLike",
    "CleanupReport",
    "DirectorySpillStore",
    "DocumentConversionError",
    "DocumentsExtraMissingError",
    "FileTooLargeError",
    "FsspecSpillStore",
    "SpillStore",
    "TruncatedResult",
    "check_text",
    "default_spill_dir",
    "default_spill_store",
    "detect_type",
    "document_kind",
    "read_tool_file",
    "truncate_output",
    "validate_text",
]
