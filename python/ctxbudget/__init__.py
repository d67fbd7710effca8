"""ctxbudget: keep LLM agent requests inside the model's context window, every turn.

The hot paths (token estimation, text validation, selection, pairing checks) run in a Rust
core; this package is the typed public surface.

>>> import ctxbudget
>>> ctxbudget.estimate_tokens("def add(a, b):\\n    return a + b\\n") > 0
True
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

from ctxbudget.budget import BudgetViolation, ContextWindowBudget
from ctxbudget.calibration import CalibratedEstimate, CalibrationTracker
from ctxbudget.compact import CompactionError, CompactResult, acompact, compact
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
from ctxbudget.events import ContextEvent
from ctxbudget.guard import ContextGuard, GuardedRequest, GuardResult
from ctxbudget.messages import (
    MessageFormatError,
    convert_messages,
    convert_tools,
    detect_format,
    validate_messages,
)
from ctxbudget.models import ModelInfo, model_info, register_model
from ctxbudget.overflow import OverflowInfo, classify_overflow
from ctxbudget.pairing import EventKind, PairingViolation, validate_pairing
from ctxbudget.prune import PruneConfig, Pruner, PruneResult, prune
from ctxbudget.request import RequestEstimate, RequestEstimator, estimate_request
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
from ctxbudget.turns import PairingError

try:
    __version__ = version("ctxbudget")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

# A library logs, the application decides where logs go (no "No handler" output by default).
logging.getLogger("ctxbudget").addHandler(logging.NullHandler())

#: SPEC C2 name for :func:`read_tool_file`.
read_document = read_tool_file

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "Accuracy",
    "BinaryContentError",
    "BudgetViolation",
    "CalibratedEstimate",
    "CalibrationTracker",
    "CompactResult",
    "CompactionError",
    "ContextBudgetError",
    "ContextEvent",
    "ContextGuard",
    "ContextOverflowError",
    "ContextWindowBudget",
    "ContextWindowError",
    "DirectorySpillStore",
    "DocumentConversionError",
    "DocumentsExtraMissingError",
    "EventKind",
    "FileTooLargeError",
    "GuardResult",
    "GuardedRequest",
    "MessageFormatError",
    "ModelInfo",
    "OverflowInfo",
    "PairingError",
    "PairingViolation",
    "PruneConfig",
    "PruneResult",
    "Pruner",
    "RequestEstimate",
    "RequestEstimator",
    "Selection",
    "SpillStore",
    "TokenCount",
    "TokenCounter",
    "TruncatedResult",
    "__version__",
    "acompact",
    "check_text",
    "classify_overflow",
    "compact",
    "convert_messages",
    "convert_tools",
    "count_tokens",
    "counter_for",
    "detect_format",
    "detect_type",
    "encoding_for_model",
    "estimate_batch",
    "estimate_request",
    "estimate_tokens",
    "model_info",
    "prune",
    "read_document",
    "read_tool_file",
    "register_model",
    "select_largest",
    "truncate_output",
    "validate_messages",
    "validate_pairing",
    "validate_text",
]
