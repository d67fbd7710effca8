"""ctxbudget: keep LLM agent requests inside the model's context window, every turn.

The hot paths (token estimation, text validation, selection, pairing checks) run in a Rust
core; this package is the typed public surface.

>>> import ctxbudget
>>> ctxbudget.estimate_tokens("def add(a, b):\\n    return a + b\\n") > 0
True
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ctxbudget.counting import (
    Accuracy,
    TokenCount,
    TokenCounter,
    count_tokens,
    counter_for,
    encoding_for_model,
)
from ctxbudget.errors import (
    BinaryContentError,
    ContextBudgetError,
    ContextOverflowError,
    ContextWindowError,
    DocumentConversionError,
    DocumentsExtraMissingError,
    FileTooLargeError,
)
from ctxbudget.overflow import OverflowInfo, classify_overflow
from ctxbudget.pairing import EventKind, PairingViolation, validate_pairing
from ctxbudget.selection import Selection, select_largest
from ctxbudget.tokens import DEFAULT_ENCODING, ENCODINGS, estimate_batch, estimate_tokens
from ctxbudget.tool_output import (
    DirectorySpillStore,
    SpillStore,
    TruncatedResult,
    check_text,
    detect_type,
    read_tool_file,
    truncate_output,
    validate_text,
)

try:
    __version__ = version("ctxbudget")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

#: SPEC C2 name for :func:`read_tool_file`.
read_document = read_tool_file

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "Accuracy",
    "BinaryContentError",
    "ContextBudgetError",
    "ContextOverflowError",
    "ContextWindowError",
    "DirectorySpillStore",
    "DocumentConversionError",
    "DocumentsExtraMissingError",
    "EventKind",
    "FileTooLargeError",
    "OverflowInfo",
    "PairingViolation",
    "Selection",
    "SpillStore",
    "TokenCount",
    "TokenCounter",
    "TruncatedResult",
    "__version__",
    "check_text",
    "classify_overflow",
    "count_tokens",
    "counter_for",
    "detect_type",
    "encoding_for_model",
    "estimate_batch",
    "estimate_tokens",
    "read_document",
    "read_tool_file",
    "select_largest",
    "truncate_output",
    "validate_pairing",
    "validate_text",
]
