"""Truncate a tool output to a token budget: head + tail preview, full text spilled.

A tool output over the budget becomes the first lines and the last lines of the text, a
marker saying what was left out, and a hint telling the model where the full text is and
how to read it in parts. The full text goes to a :class:`~ctxbudget.spill.SpillStore`
(a local directory by default). When that write fails, the text says so plainly: it names
no path and does not claim the output was saved, so the model never chases a file that was
never written.

How the cut points are found without estimating every line: the text is estimated whole in
its own storage (the core reads a ``str`` as it is stored: no UTF-8 copy); the head and the
tail are then sized by estimating growing prefixes and suffixes of it (slices the size of the
preview; the search interpolates between bracketing probes, three or four of them), and
snapped to line boundaries with ``str.rfind`` / ``str.find``. The cost is one estimate and one
newline count over the text, plus a handful of estimates of slices the size of the preview;
only those slices are copied (a budget near the size of the whole text probes slices near
its size).

A budget too small for the full hint gets a shorter one (the marker and one line on where
the full text is); a budget too small for any preview gets a one-line notice. The text the
model sees never claims to show a part it does not show.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import logging
import operator
import os
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ctxbudget import spill as _spill
from ctxbudget import tokens as _tokens
from ctxbudget._core import count_newlines
from ctxbudget.counting import encoding_for_model
from ctxbudget.graphemes import back_to_boundary, forward_to_boundary
from ctxbudget.settings import check_real

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["TruncatedResult", "truncate_output"]

logger = logging.getLogger(__name__)

#: Default share of the preview budget given to the head; the rest goes to the tail, where
#: errors and summaries usually are.
DEFAULT_HEAD_RATIO = 0.2
#: Attempts to shrink the preview when the assembled text estimates over budget (token
#: estimates of parts do not add up exactly).
_MAX_ATTEMPTS = 4
#: Characters per token above which a last line is not measured to see if it fits the preview
#: (long runs of spaces come near; text of any kind stays far below).
_LINE_CHARS_PER_TOKEN = 64


@dataclass(frozen=True, slots=True)
class TruncatedResult:
    """A tool output made to fit, and where its full text went.

    Attributes:
        text: What to give the model: the original text when it fits, else the preview with
            its marker and hint.
        truncated: Whether ``text`` is a preview.
        original_tokens: Estimated tokens of the original text.
        kept_tokens: Estimated tokens of ``text``.
        spill_path: Where the full text was written (a path or URL from the store), or
            ``None`` when nothing was written.
        spill_error: Why the write failed (for logs, may name paths), or ``None``.
        omitted_lines: Lines wholly or partly left out of the preview.
        omitted_tokens: Estimated tokens left out.
    """

    text: str
    truncated: bool
    original_tokens: int
    kept_tokens: int
    spill_path: str | None = None
    spill_error: str | None = None
    omitted_lines: int = 0
    omitted_tokens: int = 0


def truncate_output(
    text: str,
    max_tokens: int,
    *,
    encoding: str | None = None,
    model: str | None = None,
    spill: _spill.SpillStore | Literal[False] | None = None,
    head_ratio: float = DEFAULT_HEAD_RATIO,
    label: str | None = None,
) -> TruncatedResult:
    """Fit a tool output into ``max_tokens``: a head + tail preview, the full text spilled.

    Under the limit the text is returned unchanged and nothing is written. Over it, the full
    text is written to ``spill`` and the model gets the first lines (``head_ratio`` of the
    preview budget), a marker with the number of lines and tokens left out, the last lines,
    and a hint naming where the full text is and how to read it in parts. Cuts fall on line
    boundaries, except inside a line too long to keep whole (minified JSON, say).

    If the write fails (directory missing or not writable, disk full, backend error), the
    hint says the full output could not be stored and suggests re-running with narrower
    output; it names no path and never says the output was saved. ``spill_error`` carries
    the details for your logs, and a warning is logged.

    The whole result, hint included, estimates at most ``max_tokens`` whenever anything
    honest fits. The hint says which parts are shown (start and end, start, end, or none).
    Small budgets degrade in steps, each honest about what is shown and what was kept:

    1. head + marker + tail + the full hint, when that leaves room for some of the text
       (from about 100-200 tokens, depending on the encoding and the spill location);
    2. else head + marker + tail + a one-line hint (where the full output is, or that it
       was not kept), when that shows some of the text (from about 40-100 tokens);
    3. else the marker and the fullest hint that fit, with no text;
    4. else the notice ``[Output omitted: about N tokens]`` alone (about 10-20 tokens),
       even if it is over ``max_tokens``, as long as it is shorter than the text;
    5. a text no longer than that notice is returned whole and unspilled
       (``truncated=False``), being the shortest honest answer.

    So a truncated result never estimates more tokens than the original.

    Args:
        text: The tool output.
        max_tokens: Token budget for the text the model sees (at least 1).
        encoding: Estimator encoding (see :data:`ctxbudget.ENCODINGS`).
        model: Model name, used to pick the encoding when ``encoding`` is not given
            (:func:`ctxbudget.counting.encoding_for_model`; unknown models get
            ``conservative``).
        spill: Where to write the full text: a :class:`~ctxbudget.spill.SpillStore`; ``None``
            for :func:`~ctxbudget.spill.default_spill_store`; ``False`` to keep nothing.
        head_ratio: Share of the preview budget for the head, in ``[0, 1]``.
        label: Short name for the spill file (a tool name, say); sanitised by the store.
            A ``str`` or ``None``: pass a tool-call id as ``str(call_id)``.

    Returns:
        A :class:`TruncatedResult`.

    Raises:
        ValueError: ``max_tokens`` not an integer (``int``, numpy's, anything with
            ``__index__``; a bool is refused) or below 1, ``head_ratio`` outside ``[0, 1]``,
            an unknown encoding, or a lone surrogate in ``text``.
        TypeError: ``text`` not a ``str``, ``label`` not a ``str`` or ``None``, or
            ``spill`` not a store, ``None`` or ``False`` (a path is not a store: pass
            ``DirectorySpillStore(path)``). Caller mistakes are raised, never reported as
            a failed spill.

    >>> log = "".join(f"step {i}: ok\\n" for i in range(10_000))
    >>> result = truncate_output(log, max_tokens=300, spill=False)
    >>> result.truncated, result.kept_tokens <= 300, result.text.startswith("step 0: ok\\n")
    (True, True, True)
    >>> "step 9999: ok" in result.text
    True
    >>> truncate_output("short", max_tokens=300).text
    'short'
    """
    max_tokens = _positive_int(max_tokens)
    check_real("head_ratio", head_ratio)
    if not 0.0 <= head_ratio <= 1.0:
        raise ValueError(f"head_ratio must be within [0, 1], got {head_ratio!r}")
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    _check_spill_arguments(spill, label)
    enc = _resolve_encoding(encoding, model)
    # Read in its own storage: no UTF-8 copy (a str with no UTF-8 form raises the
    # UnicodeEncodeError text.encode() would).
    total = _tokens.estimate_tokens(text, enc, parallel=True)
    if total <= max_tokens:
        return TruncatedResult(text, False, total, total)
    omitted_notice = _omitted_notice(total)
    omitted_notice_tokens = _tokens.estimate_tokens(omitted_notice, enc)
    if total <= omitted_notice_tokens:
        # Even the shortest notice that the text was cut is longer than the text itself.
        return TruncatedResult(text, False, total, total)

    spill_path, spill_error, failure = _write_spill(text, spill, label)
    newlines = count_newlines(text)
    total_lines = newlines + (0 if text.endswith("\n") else 1)

    source = _Source(text, enc, total, newlines)
    worst_marker = max(
        source.tokens(_marker(total_lines, total_lines, total_lines, len(text), total, whole))
        for whole in (True, False)
    )
    preview: _Preview | None = None
    for hints in (
        _full_hints(total_lines, total, spill_path, failure),
        _short_hints(spill_path, failure),
    ):
        candidate = _fit(source, max_tokens, head_ratio, hints, worst_marker)
        if candidate.tokens > max_tokens:
            continue
        if candidate.shows_text:
            preview = candidate
            break
        preview = preview or candidate
    if preview is None:
        preview = _Preview(omitted_notice, omitted_notice_tokens, total_lines, total, False)
    return TruncatedResult(
        text=preview.text,
        truncated=True,
        original_tokens=total,
        kept_tokens=preview.tokens,
        spill_path=spill_path,
        spill_error=spill_error,
        omitted_lines=preview.omitted_lines,
        omitted_tokens=preview.omitted_tokens,
    )


def _positive_int(value: object) -> int:
    """``value`` as an ``int`` of at least 1: any integer type (numpy's too), not a bool
    (nor numpy's, which older numpy still lets ``operator.index`` read, with a warning)."""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        raise ValueError(f"max_tokens must be a positive int, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"max_tokens must be a positive int, got {value!r}") from None
    if number < 1:
        raise ValueError(f"max_tokens must be a positive int, got {value!r}")
    return number


def _check_spill_arguments(spill: object, label: object) -> None:
    """Refuse caller mistakes before they can pass for a failed write."""
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be str or None, got {type(label).__name__}")
    if isinstance(spill, type):
        raise TypeError(
            f"spill must be a SpillStore instance, False or None, got the class {spill.__name__}:"
            f" pass {spill.__name__}(...)"
        )
    # A file has a write() too, but not the store's: it would pass for a failed spill.
    if isinstance(spill, io.IOBase):
        raise TypeError(
            f"spill must be a SpillStore, False or None, got the file {spill!r}: "
            "pass DirectorySpillStore(path) to spill to a directory"
        )
    if spill is None or spill is False:
        return
    if isinstance(spill, _spill.SpillStore):
        _check_store_write(spill)
        return
    if isinstance(spill, (str, bytes, os.PathLike)):
        raise TypeError(
            f"spill must be a SpillStore, False or None, got the path {spill!r}: "
            "pass DirectorySpillStore(path) to spill to a directory"
        )
    raise TypeError(
        "spill must be a SpillStore (an object with write(text, *, label=None) -> str), "
        f"False or None, got {spill!r}"
    )


def _check_store_write(store: _spill.SpillStore) -> None:
    """Refuse a store whose ``write`` cannot be called as ``write(text, label=...)``: every
    output would otherwise be reported to the model as not stored."""
    write = getattr(store, "write", None)
    if not callable(write):
        raise TypeError(f"spill's write must be a method, got {write!r} on {store!r}")
    # A method of the store's class is read once per function (a signature costs 14 us, four
    # times what truncate_output takes for a short output).
    func = getattr(write, "__func__", None)
    method = inspect.ismethod(write) and isinstance(func, types.FunctionType)
    problem = _method_problem(func) if method else _write_problem(write, bound=False)
    if problem is not None:
        raise TypeError(problem)


@functools.lru_cache(maxsize=256)
def _method_problem(func: types.FunctionType) -> str | None:
    return _write_problem(func, bound=True)


def _write_problem(write: Callable[..., object], *, bound: bool) -> str | None:
    """Why ``write`` (a function taking the store first when ``bound``) cannot be called as
    ``write(text, label=None)``, or ``None``."""
    try:
        signature = inspect.signature(write)
    except (TypeError, ValueError):  # a builtin without one: it is called and may fail then
        return None
    params = list(signature.parameters.values())
    if (
        bound
        and params
        and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
    ):
        signature = signature.replace(parameters=params[1:])  # (the store; *args takes it too)
    try:
        signature.bind("", label=None)
    except TypeError as err:
        return f"spill's write{signature} cannot be called as write(text, *, label=None): {err}"
    return None


def _resolve_encoding(encoding: str | None, model: str | None) -> str:
    for name, value in (("encoding", encoding), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, got {type(value).__name__} {value!r}")
    if encoding is not None:
        return encoding
    if model is not None:
        return encoding_for_model(model)
    return _tokens.DEFAULT_ENCODING


def _write_spill(
    text: str, spill: _spill.SpillStore | Literal[False] | None, label: str | None
) -> tuple[str | None, str | None, str | None]:
    """Write the full text; return ``(location, error for logs, reason for the model)``."""
    if spill is False:
        return None, None, None
    store: object = spill
    try:
        store = _spill.default_spill_store() if spill is None else spill
        location = store.write(text, label=label)
        _check_location(store, location)
    except Exception as err:
        logger.warning("could not spill a truncated tool output to %r: %s", store, err)
        return None, f"{type(err).__name__}: {err}", _failure_reason(err)
    return location, None, None


def _check_location(store: object, location: object) -> None:
    """Refuse a location the model cannot be told: not a non-empty ``str``, or not valid
    Unicode (a lone surrogate, as ``os.fsdecode`` makes of a non-UTF-8 directory name),
    which no hint, estimate or provider request can carry."""
    if not isinstance(location, str) or not location:
        raise TypeError(f"{type(store).__name__}.write returned {location!r}, not a location")
    try:
        location.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{type(store).__name__}.write returned {location!r}, which is not valid Unicode"
        ) from None


def _failure_reason(err: Exception) -> str:
    """A reason the model may read: an OS error's description, else the error class.

    Never the exception's message, which often names the path that failed. An ``OSError``
    made with other arguments (``OSError("Forbidden", url)``) has its first one as ``errno``,
    which ``os.strerror`` refuses: the reason is then the class, not an error of our own.
    """
    if isinstance(err, OSError) and isinstance(err.errno, int):
        with contextlib.suppress(OverflowError, ValueError):
            return os.strerror(err.errno)
    return type(err).__name__


#: The hint for each ``(start shown, end shown)``.
_Hints = dict[tuple[bool, bool], str]

_SHOWN = {
    (True, True): "only its start and end are shown",
    (True, False): "only its start is shown",
    (False, True): "only its end is shown",
    (False, False): "none of it is shown",
}


def _full_hints(total_lines: int, total: int, location: str | None, failure: str | None) -> _Hints:
    return {
        shown: _hint(total_lines, total, location, failure, claim)
        for shown, claim in _SHOWN.items()
    }


def _short_hints(location: str | None, failure: str | None) -> _Hints:
    """One line on where the full output is, for budgets too small for the full hint."""
    if location is not None:
        hint = f"[The full output was saved to: {location}]"
    elif failure is not None:
        hint = f"[The full output could not be stored ({failure}).]"
    else:
        hint = "[The omitted part was not kept.]"
    return dict.fromkeys(_SHOWN, hint)


def _omitted_notice(total: int) -> str:
    """The shortest honest result: no text shown, only how much there was."""
    return f"[Output omitted: about {total:,} tokens]"


def _hint(
    total_lines: int, total: int, location: str | None, failure: str | None, shown: str
) -> str:
    """The notice after the preview: what was cut, where the rest is, how to read it."""
    lines = "1 line" if total_lines == 1 else f"{total_lines:,} lines"
    head = f"[Output truncated: the full output is {lines}, about {total:,} tokens; {shown}.\n"
    if location is not None:
        return (
            f"{head}The full output was saved to: {location}\n"
            "To see the omitted lines, read that file in parts (a range of lines at a time) "
            "or search it with grep; do not read it whole.]"
        )
    rerun = (
        "To see it, re-run the command with narrower output (filter it, for example with "
        "grep, or ask for a range of lines or fewer results).]"
    )
    if failure is not None:
        return (
            f"{head}The full output could not be stored ({failure}), so the omitted part "
            f"is not available.\n{rerun}"
        )
    return f"{head}The omitted part was not kept.\n{rerun}"


def _marker(first: int, last: int, lines: int, chars: int, tokens: int, whole_lines: bool) -> str:
    if whole_lines:
        span = f"line {first:,}" if first == last else f"lines {first:,}-{last:,}"
        noun = "line" if lines == 1 else "lines"
        return f"[... {lines:,} {noun} omitted ({span}, about {tokens:,} tokens) ...]"
    return (
        f"[... {chars:,} characters omitted (from line {first:,} to line {last:,}, "
        f"about {tokens:,} tokens) ...]"
    )


#: Slices of at least this many characters are estimated on all cores.
_PARALLEL_SLICE = 1 << 20


class _Source:
    """The text being cut, estimated whole once and in slices the size of the preview."""

    __slots__ = ("chars_per_token", "encoding", "newlines", "text", "total")

    def __init__(self, text: str, encoding: str, total: int, newlines: int) -> None:
        self.text = text
        self.encoding = encoding
        self.total = total
        self.newlines = newlines
        self.chars_per_token = len(text) / max(total, 1)

    def tokens(self, piece: str) -> int:
        # Large slices on every core (the same count: cut where every tokenizer starts a
        # piece); a budget near the whole output probes slices near its size.
        parallel = len(piece) >= _PARALLEL_SLICE
        return _tokens.estimate_tokens(piece, self.encoding, parallel=parallel)

    def head(self, size: int) -> int:
        """Tokens of the first ``size`` characters."""
        return self.tokens(self.text[:size])

    def tail(self, size: int) -> int:
        """Tokens of the last ``size`` characters."""
        return self.tokens(self.text[len(self.text) - size :])


def _longest_fit(
    size: int, limit: int, chars_per_token: float, tokens_of: Callable[[int], int]
) -> tuple[int, int]:
    """The largest ``k`` in ``[0, size]`` with ``tokens_of(k) <= limit``, and its tokens.

    ``tokens_of`` grows with ``k`` (roughly linearly). The search starts from the text's
    mean characters per token, brackets the answer and interpolates between the bracket ends
    (bisecting when interpolation stalls), stopping within half a percent of ``limit``:
    typically three or four probes, each an estimate of a slice about the size of the
    answer. Only probed values are returned, so ``tokens_of(k) <= limit`` holds even if
    ``tokens_of`` is not monotonic.
    """
    if limit <= 0 or size == 0:
        return 0, 0
    slack = max(1, limit // 200)
    low, low_tokens = 0, 0
    high, high_tokens = size + 1, -1  # -1: no probe above the limit yet
    # The search's finest step: about four tokens of text (16 characters of ASCII, fewer of
    # CJK or emoji; a fixed 16 characters could be more than a small budget's whole share).
    grain = max(1, min(16, int(4 * chars_per_token)))
    probe = min(size, max(grain, int(limit * chars_per_token)))
    same_side = 0
    for _ in range(64):
        tokens = tokens_of(probe)
        if tokens <= limit:
            low, low_tokens = probe, tokens
            same_side = same_side + 1 if same_side >= 0 else 1
        else:
            high, high_tokens = probe, tokens
            same_side = same_side - 1 if same_side <= 0 else -1
        if low == size or limit - low_tokens <= slack or high - low <= grain:
            break
        if high_tokens < 0:
            # No upper bracket yet: extrapolate past the limit from the rate seen so far.
            rate = low / low_tokens if low_tokens else chars_per_token
            probe = min(size, low + max(grain, int((limit - low_tokens) * rate * 1.1)))
        elif abs(same_side) >= 2:
            probe = (low + high) // 2
            same_side = 0
        else:
            share = (limit - low_tokens) / max(high_tokens - low_tokens, 1)
            probe = low + int((high - low) * share)
            probe = min(max(probe, low + 1), high - 1)
    return low, low_tokens


@dataclass(frozen=True, slots=True)
class _Preview:
    text: str
    tokens: int
    omitted_lines: int
    omitted_tokens: int
    shows_text: bool


def _fit(
    source: _Source, max_tokens: int, head_ratio: float, hints: _Hints, marker_tokens: int
) -> _Preview:
    """The largest preview with these hints that estimates at most ``max_tokens``.

    If none does, the preview with no text at all (which may be over ``max_tokens``).
    """
    notice = max(source.tokens(hint) for hint in set(hints.values())) + marker_tokens + 2
    budget = max_tokens - notice
    for _ in range(_MAX_ATTEMPTS):
        preview = _cut(source, budget, head_ratio, hints)
        if preview.tokens <= max_tokens or budget <= 0:
            return preview
        budget -= preview.tokens - max_tokens + 1
    return _cut(source, 0, head_ratio, hints)


def _cut(source: _Source, budget: int, head_ratio: float, hints: _Hints) -> _Preview:
    """Build the preview for a head + tail budget of ``budget`` tokens.

    Offsets are in characters of the text. The head and the tail are estimated once more
    after they are snapped to lines (slices the size of the preview), so the tail gets
    what the head left and the tokens said to be omitted are the total less what is shown;
    the assembled text is estimated too, and that is the number the caller checks.
    """
    text = source.text
    size = len(text)
    budget = max(budget, 0)
    rate = source.chars_per_token
    head_end, _ = _longest_fit(size, int(budget * head_ratio), rate, source.head)
    head_end = _snap_head(text, head_end, budget * rate)
    head_tokens = source.head(head_end) if head_end else 0
    tail_budget = budget - head_tokens if head_ratio < 1.0 else 0
    tail_size, _ = _longest_fit(size - head_end, tail_budget, rate, source.tail)
    tail_start = _snap_tail(text, size - tail_size, head_end)
    tail_tokens = source.tail(size - tail_start) if tail_start < size else 0
    if 0 < tail_start < size and text[tail_start - 1] != "\n":
        # Cut inside the last line, which the tail's share could not hold. Only a line longer
        # than the whole preview is cut: a shorter one is kept whole, the head getting what
        # it leaves.
        line_start = text.rfind("\n", 0, size - 1) + 1
        # Measured only when it may fit: a line of over _LINE_CHARS_PER_TOKEN characters a
        # token of the preview does not, and a text that is one line is what the preview cuts.
        fits = line_start > 0 and size - line_start <= budget * _LINE_CHARS_PER_TOKEN
        line_tokens = source.tail(size - line_start) if fits else budget + 1
        if line_tokens <= budget:
            tail_start, tail_tokens = line_start, line_tokens
            head_end, _ = _longest_fit(line_start, budget - line_tokens, rate, source.head)
            head_end = _snap_head(text, head_end, budget * rate)
            head_tokens = source.head(head_end) if head_end else 0

    head_newlines = text.count("\n", 0, head_end)
    tail_newlines = text.count("\n", tail_start)
    ends_line = tail_start > 0 and text[tail_start - 1] == "\n"
    first = head_newlines + 1
    last = source.newlines - tail_newlines - ends_line + 1
    whole = (head_end == 0 or text[head_end - 1] == "\n") and (tail_start == size or ends_line)
    head = text[:head_end]
    tail = text[tail_start:]
    omitted_lines = max(last - first + 1, 0)
    omitted_tokens = max(source.total - head_tokens - tail_tokens, 0)
    omitted_chars = len(source.text) - len(head) - len(tail)
    marker = _marker(first, last, omitted_lines, omitted_chars, omitted_tokens, whole)

    parts = [head]
    if head and not head.endswith("\n"):
        parts.append("\n")
    parts += [marker, "\n", tail]
    if tail and not tail.endswith("\n"):
        parts.append("\n")
    parts += ["\n", hints[bool(head), bool(tail)]]
    assembled = "".join(parts)
    return _Preview(
        assembled, source.tokens(assembled), omitted_lines, omitted_tokens, bool(head or tail)
    )


def _snap_head(text: str, end: int, long_line: float) -> int:
    """Move a head cut back to a line boundary.

    The head keeps whole lines whenever one fits. Only a first line longer than the whole
    preview (``long_line`` characters) is cut inside (where no grapheme cluster is split: a
    flag, an accented letter); a shorter one is left out instead.
    """
    size = len(text)
    if end == 0 or end == size or text[end - 1] == "\n":
        return end
    if text[end] == "\n":
        return end + 1
    newline = text.rfind("\n", 0, end)
    if newline >= 0:
        return newline + 1
    # Only whether the first line ends within ``long_line`` matters: search no further.
    limit = min(size, int(long_line) + 1)
    line_end = text.find("\n", end, limit)
    if (line_end if line_end >= 0 else size if limit == size else limit) <= long_line:
        return 0
    return back_to_boundary(text, end)


def _snap_tail(text: str, start: int, floor: int) -> int:
    """Move a tail cut forward to a line start; cut inside the last line if none fits (where
    no grapheme cluster is split)."""
    start = max(start, floor)
    size = len(text)
    if start in (0, size) or text[start - 1] == "\n":
        return start
    newline = text.find("\n", start)
    if 0 <= newline < size - 1:
        return newline + 1
    return forward_to_boundary(text, start)
