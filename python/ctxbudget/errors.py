"""Exceptions raised by ctxbudget.

Every exception subclasses a builtin, so callers can catch what they already expect
(``ValueError`` for bad input, ``RuntimeError`` for a request that cannot run) or the precise
class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxbudget.overflow import OverflowInfo

__all__ = [
    "BinaryContentError",
    "ContextBudgetError",
    "ContextOverflowError",
    "ContextWindowError",
    "DocumentConversionError",
    "DocumentsExtraMissingError",
    "FileTooLargeError",
]


class BinaryContentError(ValueError):
    """Data that should be text is not: it holds a NUL byte or invalid UTF-8.

    Raised by :func:`ctxbudget.check_text` and :func:`ctxbudget.validate_text`. A tool output
    that fails this check must not be decoded and handed to the model as garbage.

    Attributes:
        offset: Byte offset of the first offending byte.
        reason: ``"nul"``, ``"invalid_utf8"``, or ``"invalid_utf16"`` (a file with a UTF-16
            byte order mark that does not decode: :func:`ctxbudget.read_tool_file`,
            ``ctxbudget count``).
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


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)`` (PEP 678), also on Python 3.10, which has no ``add_note``: the
    note goes into ``__notes__`` as 3.11 puts it there (3.10's tracebacks do not show it; the
    ``exceptiongroup`` backport's do)."""
    if hasattr(error, "add_note"):
        error.add_note(note)
        return
    notes = getattr(error, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        error.__notes__ = notes
    notes.append(note)


def _tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


class ContextWindowError(RuntimeError):
    """A request does not fit the model's context window.

    The common base of :class:`ContextOverflowError` (the provider said so) and
    :class:`ContextBudgetError` (our own preflight said so before sending). Catch this one to
    handle both the same way: compact, prune or lower the output reserve, then retry.

    It subclasses ``RuntimeError``, not ``ValueError``: the request is well formed and would be
    accepted by a model with a larger window; what failed is running it against this one. A
    ``ValueError`` would also be swallowed by the ``except ValueError`` blocks agent loops keep
    around parsing and validation, hiding a condition that has a recovery.

    Attributes:
        model: The model the request was for, when known.
        context_window: The window (tokens) the request was checked against, when known.
        requested_tokens: The total the window was compared with (input plus reserved output
            where the provider counts both), when known.
        reason: A short human-readable explanation.
        rule: Which rule decided (``"code:context_length_exceeded"``,
            ``"text:prompt is too long"``, ``"type:ContextBudgetError"``, ...), when known.
    """

    def __init__(
        self,
        model: str | None,
        context_window: int | None,
        requested_tokens: int | None,
        reason: str,
        rule: str | None = None,
    ) -> None:
        # All positional arguments go to ``args``: the default exception pickling calls
        # ``cls(*args)`` and then restores ``__dict__`` (keyword-only extras included).
        super().__init__(model, context_window, requested_tokens, reason, rule)
        self.model = model
        self.context_window = context_window
        self.requested_tokens = requested_tokens
        self.reason = reason
        self.rule = rule

    def _describe(self, what: str, details: list[str], rule: str | None) -> str:
        parts = [what]
        if self.model:
            parts.append(f" for {self.model}")
        parts.append(
            f": {_tokens(self.requested_tokens)} tokens requested,"
            f" window {_tokens(self.context_window)}"
        )
        if details:
            parts.append(f" ({'; '.join(details)})")
        if rule:
            parts.append(f" [rule={rule}]")
        return "".join(parts)

    def __str__(self) -> str:
        reason = [self.reason] if self.reason else []
        return self._describe("request does not fit the context window", reason, self.rule)


class ContextOverflowError(ContextWindowError):
    """The provider rejected a request as too long for the model's context window.

    Raised by the guard when recovery (pruning, compaction, a lower output reserve) is not
    possible or did not help; build one from a classified provider error with
    :meth:`from_info`. The provider's own exception stays available as ``__cause__``.

    Attributes:
        model: See :class:`ContextWindowError`.
        context_window: The provider's stated window (``OverflowInfo.limit_tokens``).
        requested_tokens: The provider's stated or derived total.
        reason: A short explanation.
        rule: The classification rule that matched.
        info: The full :class:`~ctxbudget.overflow.OverflowInfo`, when the error came from
            :func:`~ctxbudget.overflow.classify_overflow`.

    >>> err = ContextOverflowError(
    ...     "gpt-4o", 128000, 202868, "input alone", "code:context_length_exceeded"
    ... )
    >>> print(err)  # doctest: +NORMALIZE_WHITESPACE
    provider rejected the request as too long for gpt-4o: 202,868 tokens requested,
    window 128,000 (input alone) [rule=code:context_length_exceeded]
    """

    def __init__(
        self,
        model: str | None,
        context_window: int | None,
        requested_tokens: int | None,
        reason: str,
        rule: str | None = None,
        *,
        info: OverflowInfo | None = None,
    ) -> None:
        super().__init__(model, context_window, requested_tokens, reason, rule)
        self.info = info

    @classmethod
    def from_info(
        cls, info: OverflowInfo, *, model: str | None = None, reason: str | None = None
    ) -> ContextOverflowError:
        """Build the error from a classified provider error.

        Args:
            info: What :func:`~ctxbudget.overflow.classify_overflow` returned.
            model: The model the request was for.
            reason: Overrides the default explanation derived from ``info.kind``.
        """
        default = {
            "input_overflow": "the input alone exceeds the window",
            "combined_overflow": "input plus reserved output exceed the window",
            "request_too_large": "the request is over the provider's size limit",
        }.get(info.kind, info.kind)
        return cls(
            model,
            info.limit_tokens,
            info.requested_tokens,
            reason if reason is not None else default,
            info.rule,
            info=info,
        )

    def __str__(self) -> str:
        reason = [self.reason] if self.reason else []
        return self._describe("provider rejected the request as too long", reason, self.rule)


class ContextBudgetError(ContextWindowError):
    """Our own preflight refused a request: it would not fit the context window.

    Raised before dispatch, so the provider never sees an over-budget request.
    :func:`~ctxbudget.overflow.classify_overflow` recognises it (rule
    ``"type:ContextBudgetError"``) and returns its numbers.

    Attributes:
        model: See :class:`ContextWindowError`.
        context_window: The window the request was checked against.
        requested_tokens: Estimated input plus the reserved output.
        reason: A short explanation.
        rule: Always ``"type:ContextBudgetError"``.
        input_tokens: The estimated input (system, conversation, tool schemas), when known.
        reserved_output: The output reserve that was added to the input, when known.
        component: The component that does not fit on its own (``"system"``, ``"tools"``,
            ``"conversation"``, ``"reserved_output"``), when one alone is to blame.
        exact: ``True`` when ``input_tokens`` came from a real tokenizer, ``False`` for an
            estimate.

    >>> err = ContextBudgetError(
    ...     "gpt-4o", 128000, 140000, "too long", input_tokens=124000, reserved_output=16000
    ... )
    >>> print(err)  # doctest: +NORMALIZE_WHITESPACE
    request over the context budget for gpt-4o: 140,000 tokens requested, window 128,000
    (too long; input 124,000 + reserved output 16,000)
    """

    def __init__(
        self,
        model: str | None,
        context_window: int | None,
        requested_tokens: int | None,
        reason: str,
        *,
        input_tokens: int | None = None,
        reserved_output: int | None = None,
        component: str | None = None,
        exact: bool = False,
    ) -> None:
        super().__init__(model, context_window, requested_tokens, reason, "type:ContextBudgetError")
        # ``args`` must match this signature for pickling (``cls(*args)``).
        self.args = (model, context_window, requested_tokens, reason)
        self.input_tokens = input_tokens
        self.reserved_output = reserved_output
        self.component = component
        self.exact = exact

    def __str__(self) -> str:
        details = [self.reason] if self.reason else []
        if self.input_tokens is not None:
            split = f"input {_tokens(self.input_tokens)}"
            if self.reserved_output is not None:
                split += f" + reserved output {_tokens(self.reserved_output)}"
            details.append(split)
        if self.component:
            details.append(f"component={self.component}")
        return self._describe("request over the context budget", details, None)


class FileTooLargeError(ValueError):
    """A file, what an Office file unpacks to, or the text converted from it is too big.

    Raised by :func:`ctxbudget.read_tool_file` before the file is read whole.

    Attributes:
        path: The file.
        size: The size in bytes; with ``at_least``, the bytes seen before reading stopped.
        limit: The cap in bytes.
        what: What was measured (``"file"``, ``"unpacked document"``, ...).
        at_least: ``size`` is what was read (or converted) when the cap was passed, not the
            whole: a file whose size the system does not tell (``/proc``), or that grew.
    """

    def __init__(
        self, path: str, size: int, limit: int, *, what: str = "file", at_least: bool = False
    ) -> None:
        measured = f"at least {size:,}" if at_least else f"{size:,}"
        message = (
            f"{path}: {what} is {measured} bytes, over the {limit:,}-byte limit; "
            "read a part of it (a range of lines or pages, or a filtered view) instead"
        )
        super().__init__(message)
        self.path = path
        self.size = size
        self.limit = limit
        self.what = what
        self.at_least = at_least

    def __reduce__(self) -> tuple[Any, ...]:
        args = (self.path, self.size, self.limit, self.what, self.at_least)
        return (_rebuild_too_large, args, self.__dict__)


def _rebuild_too_large(
    path: str, size: int, limit: int, what: str, at_least: bool = False
) -> FileTooLargeError:
    return FileTooLargeError(path, size, limit, what=what, at_least=at_least)


class DocumentsExtraMissingError(ModuleNotFoundError):
    """Converting a PDF or Office file needs the optional ``documents`` extra.

    The message names the command to install it: ``pip install 'ctxbudget[documents]'``.
    ``name`` is the missing module.
    """


class DocumentConversionError(ValueError):
    """A PDF or Office file could not be converted: damaged, encrypted, or without text.

    Attributes:
        path: The file.
        kind: ``"pdf"``, ``"docx"``, ``"xlsx"`` or ``"pptx"``.
        reason: Why, in words.
    """

    def __init__(self, path: str, kind: str, reason: str) -> None:
        super().__init__(f"{path}: cannot convert this {kind.upper()} file: {reason}")
        self.path = path
        self.kind = kind
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (DocumentConversionError, (self.path, self.kind, self.reason), self.__dict__)
