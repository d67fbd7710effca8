"""Compaction: replace the older part of a conversation by a summary (SPEC E).

:func:`compact` (and :func:`acompact` for an async summarizer) returns a new message list:
the leading system messages, the summaries kept from earlier compactions, one new summary
message, and the most recent messages verbatim. The caller's list and dicts are never
modified; kept messages are the caller's own objects.

- **What is kept** is sized in tokens, not turns (SPEC E2): the most recent messages up to
  ``keep_tokens`` (default: the fresh-tail rule of :mod:`ctxbudget.prune`, 25% of the usable
  context within [2000, 8000]), fewer when what stays besides them (system prompt, tools,
  the summary at its largest) would leave them no room, and at least the last message. The
  cut never splits a tool call from its results (nor, in the Responses format, a model
  response with a reasoning item: its items travel together); the output is checked with
  :func:`ctxbudget.validate_pairing`.
- **The summarizer** is the caller's ``summarize(prompt, max_tokens) -> str``; no provider SDK
  is imported here. :mod:`ctxbudget.summary_prompt` builds the prompt (transcript first, in
  ``<transcript>`` tags, then structured instructions with a word budget) and the output cap.
- **Hierarchy** (SPEC E2): a new summary covers the messages since the last one; earlier
  summaries stay as they are until there are ``max_summaries`` (3) of them, then the next
  compaction condenses them all, with the new messages, into one summary a level higher
  (shown to the summarizer whole, clipped only when the request cannot fit otherwise).
- **Progress or explicit failure** (SPEC E3): an empty summary, a summary not smaller than
  what it replaces, a summary longer than the ``max_tokens`` it was asked for when the result
  does not fit, a summarizer that raises, or nothing to compact raise
  :class:`CompactionError` (the summarizer's exception chained); the caller's history is
  untouched and there is no retry loop. A summarization request that would not fit the
  window is first reduced: the oldest messages are left out (whole tool-call pairs at a
  time) until it fits, but never the user's latest request among them (clipped harder if
  need be), nor the user's earlier messages up to :data:`EARLIER_REQUESTS_MAX_TOKENS`
  (newest first; left out first when still too big); a summarizer that still reports a
  context overflow (recognised by :func:`ctxbudget.overflow.classify_overflow`) gets half
  of what is left, at most ``max_attempts`` calls in all.
- **The user's latest request** is never lost, nor the words the user sent after it beside
  tool results (Anthropic text blocks, Gemini text parts; :mod:`ctxbudget.compact_words`):
  when the summary replaces them, their text is copied into it verbatim, clipped (start and
  end kept) to at most :data:`LATEST_REQUEST_MAX_TOKENS`, a tenth of the window and a quarter
  of what is replaced, and the request's attachments (images, documents, audio, files) go
  into the summary message whole, after the text.
- **Events** (SPEC E4): every compaction emits a :class:`~ctxbudget.events.ContextEvent`
  (logger ``ctxbudget.compact``, and ``on_event``); a failed one logs a warning.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.compact_words import (
    carried_request,
    request_block,
    request_copy,
    said,
    sealed,
    words_message,
)
from ctxbudget.events import ContextEvent, EventCallback, Reason, check_reason, emit
from ctxbudget.formats.common import as_mapping
from ctxbudget.messages import FORMATS, MessageFormatError, Part, detect_format
from ctxbudget.prune import PruneConfig, make_budget
from ctxbudget.request import RequestEstimator
from ctxbudget.stubs import in_history_type
from ctxbudget.summary_prompt import (
    build_prompt,
    clip_text,
    render_messages,
    summary_level,
    summary_max_tokens,
    summary_message,
    summary_words,
)
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import (
    MessageInfo,
    PairingError,
    check_pairing,
    first_text,
    resolve_ids,
    safe_cuts,
    scan,
    scan_error,
)

__all__ = ["CompactResult", "CompactionError", "Summarizer", "acompact", "compact"]

logger = logging.getLogger("ctxbudget.compact")

#: ``summarize(prompt, max_tokens) -> summary text``.
Summarizer = Callable[[str, int], str]
AsyncSummarizer = Callable[[str, int], Awaitable[str]]

#: Tokens of chat framing added to the summarization prompt when checking that it fits.
_PROMPT_FRAMING = 16
#: Tokens a summary message adds to its text (marker line, role framing, the request copy's
#: heading and tags), when choosing a cut.
_SUMMARY_FRAMING = 80
#: How far over its cap a summary is taken for one that obeyed it: ``conservative`` counts up
#: to ~20% more than the tokenizer the summarizer stopped by.
_CAP_SLACK = 1.25
#: Longest latest user request copied verbatim into a summary that replaces it, in tokens
#: (a longer one is clipped to it, start and end kept).
LATEST_REQUEST_MAX_TOKENS = 2_000
#: Tokens of the user's earlier messages a reduced transcript keeps, newest first, beside the
#: latest request: the task an agent was given stays when "continue" came after it.
EARLIER_REQUESTS_MAX_TOKENS = 2_000
#: Characters below which the request shown in a reduced transcript is not clipped further.
_MIN_REQUEST_CHARS = 500


class CompactionError(RuntimeError):
    """Compaction could not make progress; the caller's history is unchanged.

    The summarizer's own exception, if it raised, is ``__cause__``.

    Attributes:
        reason: The compaction's reason (``proactive``, ``retry``, ``overflow``).
        tokens_before: Request input tokens of the history.
        attempts: Summarizer calls made.
    """

    def __init__(self, message: str, *, reason: str, tokens_before: int, attempts: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.tokens_before = tokens_before
        self.attempts = attempts

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls ``cls(message)``, which lacks the keyword-only fields: a
        # worker process's error would fail to reach its parent.
        fields = (str(self), self.reason, self.tokens_before, self.attempts)
        return (_rebuild_compaction_error, fields, self.__dict__)


def _rebuild_compaction_error(
    message: str, reason: str, tokens_before: int, attempts: int
) -> CompactionError:
    return CompactionError(message, reason=reason, tokens_before=tokens_before, attempts=attempts)


@dataclass(frozen=True, slots=True)
class CompactResult:
    """A compacted conversation.

    Attributes:
        messages: The new list: leading system messages, kept summaries, the new summary
            message, the system/developer messages that were among the summarized ones (a
            mid-run instruction is kept verbatim), then the kept recent messages (the
            caller's objects).
        summary: The summarizer's text (without the marker line).
        reason: ``proactive``, ``retry`` or ``overflow``.
        tokens_before: Request input tokens before.
        tokens_after: Request input tokens of :attr:`messages`.
        fits: The compacted request fits the budget.
        events: The events emitted (one per compaction).
        summarized: Messages replaced by the summary (earlier summaries condensed included).
        kept: Messages kept verbatim after the summary.
        level: The new summary's level (1, or one more than the summaries it condensed).
    """

    messages: list[Any]
    summary: str
    reason: Reason
    tokens_before: int
    tokens_after: int
    fits: bool
    events: tuple[ContextEvent, ...]
    summarized: int
    kept: int
    level: int


def _is_server_compaction(fmt: str, message: Any) -> bool:
    """A Responses ``compaction`` item: the earlier turns' context as the server compacted
    them (opaque: no summarizer can read it)."""
    found = as_mapping(message) if fmt == "openai_responses" else None
    return found is not None and found.get("type") == "compaction"


class _Compaction:
    """One compaction, as steps shared by :func:`compact` and :func:`acompact`."""

    def __init__(
        self,
        messages: Sequence[Any],
        *,
        window: int | None,
        budget: ContextWindowBudget | None,
        tools: Sequence[Any] | None,
        system: Any,
        model: str | None,
        format: str | None,
        max_tokens: int | None,
        reason: str,
        keep_tokens: int | None,
        max_summaries: int,
        max_attempts: int,
        max_item_chars: int,
        encoding: str | None,
        counter: Any,
        on_event: EventCallback | None,
    ) -> None:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise MessageFormatError("expected a list of messages", None, "messages", None)
        if max_summaries < 1 or max_attempts < 1:
            raise ValueError("max_summaries and max_attempts must be at least 1")
        self.reason = check_reason(reason)
        self.msgs = list(messages)
        fmt = format or detect_format(self.msgs)
        if fmt not in FORMATS:
            raise ValueError(f"unknown message format {fmt!r}; expected one of {FORMATS}")
        self.fmt = fmt
        self.budget = make_budget(window, budget, model)
        self.system, self.tools, self.max_tokens = system, tools, max_tokens
        self.estimator = RequestEstimator(model, encoding=encoding, counter=counter, format=fmt)
        self.encoding = self.estimator.encoding
        self.model, self.counter = model, counter
        self.max_attempts, self.max_item_chars = max_attempts, max_item_chars
        self.on_event = on_event
        self.attempts = 0
        self.cap = 0  # the output cap of the last summarizer call
        self._said: dict[int, tuple[int, int]] = {}  # see _said_tokens

        est = self.estimator.estimate(self.msgs, system=system, tools=tools, max_tokens=max_tokens)
        self.before = est
        per_message = est.per_message
        try:
            self.infos = resolve_ids(scan(self.msgs, fmt))
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            raise scan_error(self.msgs, fmt, exc) from exc
        n = len(self.msgs)
        head = 0
        while head < n and self.infos[head].kind == "system":
            head += 1
        prior = head
        while prior < n and self.infos[prior].summary:
            prior += 1

        # the cut: smallest safe index whose suffix fits keep_tokens and, with all that stays
        # and the summary, the window; keeping >= 1 message
        usable = max(0, self.budget.available(max_tokens))
        keep = keep_tokens if keep_tokens is not None else PruneConfig().tail_tokens(usable)
        safe = safe_cuts(self.infos)
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + per_message[i]
        # never cut inside the earlier summaries: they are all summarized or all kept
        n_prior = prior - head
        cuts = [c for c in range(_first_new(self.infos, prior) + 1, n) if safe[c]]
        if cuts:
            start = head if n_prior >= max_summaries else prior
            cut = self._first_cut(cuts, start, suffix, per_message, min(keep, usable))
        else:  # nothing new before the last message: condense the summaries, if several
            cut = prior if n_prior >= 2 and prior < n else head
        self.cut = cut
        self.head = head
        self.condensing = n_prior >= max_summaries or (n_prior >= 2 and cut == prior)
        self.start = head if self.condensing else prior
        if cut <= self.start:
            self.fail(
                "nothing to compact: only the last message (or tool-call group) is left "
                "after the system messages and earlier summaries",
                None,
            )
        # System/developer messages inside the summarized part (a mid-run instruction) are
        # kept verbatim, right after the summary: an instruction is not the summarizer's to
        # paraphrase.
        self.kept_system = [i for i in range(self.start, cut) if self.infos[i].kind == "system"]
        self._check_kept_fits(cuts[-1] if cuts else cut, per_message)
        self.replaced_tokens = sum(per_message[self.start : cut]) - sum(
            per_message[i] for i in self.kept_system
        )
        self.level = 1
        if self.condensing:
            levels = [self._level(i) for i in range(head, head + n_prior)]
            self.level = max([0, *levels]) + 1
        # units that may be left out of the transcript, oldest first (never a summary)
        first = head + n_prior
        self.units = [c for c in range(first, cut + 1) if safe[c] or c == first]
        self.dropped_units = 0
        self.request_at = self._latest_user(first, cut)
        self.earlier_requests = self._earlier_users(first, per_message)
        self.request_chars = max_item_chars
        self._entry_tokens: list[int] | None = None  # of each entry, when first needed
        self.summaries_clipped = False
        self.entries = render_messages(
            self.msgs[self.start : cut],
            fmt,
            first_index=self.start,
            max_item_chars=max_item_chars,
        )

    def _first_cut(
        self,
        cuts: Sequence[int],
        start: int,
        suffix: Sequence[int],
        per_message: Sequence[int],
        keep: int,
    ) -> int:
        """The first of ``cuts`` whose kept messages hold at most ``keep`` tokens and leave
        room in the window for what stays besides them: the messages before ``start`` (system
        prompt, earlier summaries not condensed), the tools and system prompt given, the
        system messages among the summarized ones, the summary at its cap for what it
        replaces, and the copy of the user's request it carries when it replaces that (with
        the words sent after it; an earlier summary's copy carried forward). The last cut
        when none does. (A tail rule of 2,000 tokens beside a 10k-token system prompt in a
        12k budget kept what made the compacted request overflow, though keeping less fitted.)
        """
        usable = self.budget.available(self.max_tokens)
        window = self.budget.window
        fixed = self.before.total - suffix[start] + _SUMMARY_FRAMING
        # A request kept verbatim (at or after the cut) is copied into no summary.
        last_request = max(
            (i for i, info in enumerate(self.infos) if info.kind == "user" and not info.summary),
            default=-1,
        )
        # What the copy would hold, as _latest_request builds it: the latest request (or an
        # earlier summary's copy), the words sent after it, and its attachments whole.
        system, request, later, attached, seen = 0, 0, 0, 0, start
        for cut in cuts:
            for i in range(seen, cut):
                info = self.infos[i]
                if info.kind == "system":
                    system += per_message[i]
                elif info.kind == "user" and info.summary:
                    carried = carried_request(self.fmt, self.msgs[i])
                    text = carried.text if carried is not None else ""
                    tokens, images = estimate_tokens(text, self.encoding), self._said_tokens(i)[1]
                    if carried is not None and carried.words_only and not images:
                        later += tokens
                    elif carried is not None or images:
                        request, later, attached = tokens, 0, images
                elif info.kind == "user":
                    request, attached = self._said_tokens(i)
                    later = 0
                elif info.says:
                    later += self._said_tokens(i)[0]
            seen = cut
            replaced = suffix[start] - suffix[cut] - system
            copy = 0
            if cut > last_request:
                copy = min(request + later, self._copy_limit(replaced)) + attached
            # The cap the summarizer gets (its transcript holds the system messages too), and
            # what an obedient summary may still count over it.
            summary = int(summary_max_tokens(suffix[start] - suffix[cut], window) * _CAP_SLACK)
            if suffix[cut] <= keep and fixed + system + copy + summary + suffix[cut] <= usable:
                return cut
        return cuts[-1]

    def _said_tokens(self, i: int) -> tuple[int, int]:
        """Tokens of what the user wrote in message ``i`` (its text parts, not its tool
        results), and of its attachments (what of the message is not that text; for a
        summary, whose text is not copied, the same)."""
        found = self._said.get(i)
        if found is None:
            text, attachments = said(self.fmt, self.msgs[i])
            tokens = estimate_tokens(text, self.encoding)
            per_message = self.before.per_message[i]
            found = (tokens, max(0, per_message - tokens) if attachments else 0)
            self._said[i] = found
        return found

    def _check_kept_fits(self, floor: int, per_message: Sequence[int]) -> None:
        """Fail, before any summarizer call, when what must be kept cannot fit on its own.

        ``floor`` is the last cut possible: the messages from it on are kept verbatim
        whatever the summary, and so are those before :attr:`start` (system messages, and
        the earlier summaries when they are not condensed).
        """
        kept = self.before.total - sum(
            per_message[i] for i in range(self.start, floor) if self.infos[i].kind != "system"
        )
        if self.budget.fits(kept, max_tokens=self.max_tokens):
            return
        biggest = max(range(floor, len(per_message)), key=per_message.__getitem__)
        available = self.budget.available(self.max_tokens)
        self.fail(
            f"the history cannot fit the window: the messages that must be kept verbatim "
            f"([{floor}:], with what stays before the summary) need {kept:,} tokens, more than "
            f"the {available:,} tokens available; the largest, message [{biggest}], is "
            f"{per_message[biggest]:,} tokens: shorten it (a tool output: "
            "ctxbudget.truncate_output) before compacting",
            None,
        )

    def _latest_user(self, first: int, cut: int) -> int | None:
        """Index of the latest user request in ``[first, cut)``: the transcript never leaves
        it out. In an agent loop (one request, hundreds of tool steps) it is the oldest
        message there, the first to go when the transcript is reduced, and its copy in the
        summary may be clipped: without it the summarizer would not know the task."""
        for i in range(cut - 1, first - 1, -1):
            if self.infos[i].kind == "user" and not self.infos[i].summary:
                return i
        return None

    def _earlier_users(self, first: int, per_message: Sequence[int]) -> list[int]:
        """The user's other messages a reduced transcript keeps, in order, up to
        :data:`EARLIER_REQUESTS_MAX_TOKENS` in all: the words sent beside tool results after
        the latest request, then the messages before it, newest first. Words beside results
        are sized by the words (they are shown without the results; one too big is passed
        over); a request, whole, while they fit. A long run ("implement this spec", steps,
        "continue", steps) keeps its task; a chat of many long questions, its last few."""
        kept: list[int] = []
        room = EARLIER_REQUESTS_MAX_TOKENS
        at = self.request_at
        for i in range(self.cut - 1, first - 1 if at is None else at, -1):
            if self.infos[i].says and not self.infos[i].summary:
                size = self._said_tokens(i)[0]
                if size <= room:
                    room -= size
                    kept.append(i)
        for i in range(-1 if at is None else at - 1, first - 1, -1):
            info = self.infos[i]
            if info.summary or not (info.kind == "user" or info.says):
                continue
            size = self._said_tokens(i)[0] if info.says else per_message[i]
            if size <= room:
                room -= size
                kept.append(i)
            elif not info.says:
                break
        return sorted(kept)

    def _latest_request(self) -> tuple[str, tuple[Part, ...]]:
        """The user's latest request, when compaction replaces it (an agent loop of one user
        turn and many tool steps): its text verbatim, with the words sent beside tool results
        after it, clipped by :meth:`_clip_request` (its constraints, "do not touch vendor/",
        must not depend on the summarizer's paraphrase), and its attachments whole (the
        screenshot or document the request is about: the summarizer only sees them named).
        An earlier summary being condensed carries its copy forward; one that carries only
        words (no request was in the part it summarized) adds them to the copy of an older
        one."""
        if any(info.kind == "user" for info in self.infos[self.cut :]):
            return "", ()
        attachments: tuple[Part, ...] = ()
        request, newest, words_only = "", self.start - 1, True
        carried_words: list[str] = []
        for i in range(self.cut - 1, self.start - 1, -1):
            info = self.infos[i]
            if info.kind != "user":
                continue
            text, attachments = said(self.fmt, self.msgs[i])
            if info.summary:
                carried = carried_request(self.fmt, self.msgs[i])
                if carried is not None and carried.words_only and not attachments:
                    carried_words.insert(0, carried.text)
                    newest = max(newest, i)
                    continue
                if carried is None and not attachments:
                    continue
                text = carried.text if carried is not None else ""
                # (An image-only request's summary copied words alone, with the image.)
                words_only = carried is not None and carried.words_only and not attachments
            else:
                words_only = False
            request, newest = text, max(newest, i)
            break
        later = [
            said(self.fmt, self.msgs[i])[0]
            for i in range(newest + 1, self.cut)
            if self.infos[i].says and not self.infos[i].summary
        ]
        earlier = "\n\n".join(part for part in (request, *carried_words) if part.strip())
        copy = self._clip_request(request_copy(earlier, later))
        if not copy.strip():
            return "", attachments
        return request_block(copy, words_only=words_only and not attachments), attachments

    def _copy_limit(self, replaced: int) -> int:
        """The most tokens the request copy keeps: :data:`LATEST_REQUEST_MAX_TOKENS`, a tenth
        of the window (in an 8k window, 2,000 tokens of copy left little for the rest), and a
        quarter of the ``replaced`` tokens (the summary must still make progress)."""
        return min(LATEST_REQUEST_MAX_TOKENS, self.budget.window // 10, replaced // 4)

    def _clip_request(self, request: str) -> str:
        """``request``, or its start and end with a marker between them when it is longer
        than :meth:`_copy_limit`. Clipped, not left out: a long task ("implement this spec")
        is the one the summarizer's paraphrase would lose most of."""
        limit = self._copy_limit(self.replaced_tokens)
        tokens = estimate_tokens(request, self.encoding)
        if tokens <= limit:
            return request
        chars = len(request) * limit // tokens
        while chars >= 40:
            clipped = clip_text(request, chars)
            if estimate_tokens(clipped, self.encoding) <= limit:
                return clipped
            chars = chars * 9 // 10
        return ""

    def _level(self, index: int) -> int:
        return summary_level(first_text(self.fmt, self.msgs[index])) or 1

    def fail(self, message: str, cause: BaseException | None) -> NoReturn:
        logger.warning("compaction failed (%s): %s", self.reason, message)
        error = CompactionError(
            message, reason=self.reason, tokens_before=self.before.total, attempts=self.attempts
        )
        raise error from cause

    # -- the request

    def _dropped_messages(self) -> int:
        """Messages in the units left out (the request shown among them included)."""
        if not self.dropped_units:
            return 0
        return self.units[self.dropped_units] - self.units[0]

    def _request_entries(self, dropped: int) -> list[str]:
        """The entries of the user's messages kept among the units left out, in order: the
        others kept (:meth:`_earlier_users`; words sent beside tool results without those
        results), whole, and the latest request, clipped to :attr:`request_chars`."""
        first = self.units[0]
        shown = [i for i in self.earlier_requests if first <= i < first + dropped]
        at = self.request_at
        if at is not None and first <= at < first + dropped:
            shown = sorted([*shown, at])
        out: list[str] = []
        for i in shown:
            if i == at and self.request_chars < self.max_item_chars:
                message, chars = self.msgs[i], self.request_chars
            elif self.infos[i].says:
                message, chars = words_message(self.fmt, said(self.fmt, self.msgs[i])[0]), 0
            else:
                out.append(self.entries[i - self.start])
                continue
            out += render_messages(
                [message], self.fmt, first_index=i, max_item_chars=chars or self.max_item_chars
            )
        return out

    def _omitted(self) -> int:
        """Messages left out of the transcript."""
        dropped = self._dropped_messages()
        return dropped - len(self._request_entries(dropped))

    def _shrink_request(self) -> bool:
        """Leave out the oldest earlier user message shown among the left-out ones, else clip
        the latest request harder, so that a request too big for the window with them still
        fits; False when that cannot help."""
        dropped = self._dropped_messages()
        first = self.units[0]
        shown = [i for i in self.earlier_requests if first <= i < first + dropped]
        if shown:
            self.earlier_requests.remove(shown[0])
            return True
        if not self._request_entries(dropped):
            return False
        if self.request_chars <= _MIN_REQUEST_CHARS:
            return False
        self.request_chars = max(_MIN_REQUEST_CHARS, self.request_chars // 2)
        return True

    def request(self) -> tuple[str, int]:
        """The next summarizer call's prompt and output cap (counted as an attempt).

        Drops the oldest units until the request fits, all but the user's latest request.
        """
        while True:
            dropped = self._dropped_messages()
            skip = self.units[0] - self.start  # summaries before the droppable units
            shown = self._request_entries(dropped)
            entries = [*self.entries[:skip], *shown, *self.entries[skip + dropped :]]
            transcript_tokens = estimate_tokens("\n\n".join(entries), self.encoding)
            cap = summary_max_tokens(transcript_tokens, self.budget.window)
            prompt = build_prompt(
                entries,
                summary_words(cap),
                condensing=self.condensing,
                omitted=dropped - len(shown),
                request_shown=bool(shown),
            )
            tokens = estimate_tokens(prompt, self.encoding) + _PROMPT_FRAMING
            if self.budget.fits(tokens, max_tokens=cap):
                self.attempts += 1
                self.cap = cap
                return prompt, cap
            over = tokens - self.budget.available(cap)
            if not (
                self._drop(self._units_for(over // 2))
                or self._shrink_request()
                or self._clip_summaries()
            ):
                self.fail(
                    f"the summarization request does not fit the window ({tokens:,} tokens "
                    "even with the oldest messages left out)",
                    None,
                )

    def _units_for(self, tokens: int) -> int:
        """How many more of the oldest units hold at least ``tokens`` of transcript (at least
        one): a request far over the window drops that many at once, and the next try only
        half what is still over, instead of one unit and a whole new estimate at a time
        (quadratic in a history many windows long)."""
        if self._entry_tokens is None:
            self._entry_tokens = [estimate_tokens(e, self.encoding) for e in self.entries]
        units = self.units
        count, held = 0, 0
        for u in range(self.dropped_units, len(units) - 1):
            held += sum(self._entry_tokens[units[u] - self.start : units[u + 1] - self.start])
            count += 1
            if held >= tokens:
                break
        return max(1, count)

    def _drop(self, count: int) -> bool:
        """Leave ``count`` more units out; False when none would be left."""
        remaining = len(self.units) - 1 - self.dropped_units
        if remaining <= 1:
            return False
        self.dropped_units += min(count, remaining - 1)
        return True

    def _clip_summaries(self) -> bool:
        """Show the earlier summaries being condensed clipped to ``max_item_chars`` each: the
        last resort of a request that does not fit with all else left out (they are shown
        whole otherwise, see :func:`render_messages`); False when they already are, or when
        there are none."""
        skip = self.units[0] - self.start
        if self.summaries_clipped or not skip:
            return False
        self.summaries_clipped = True
        self.entries[:skip] = render_messages(
            self.msgs[self.start : self.start + skip],
            self.fmt,
            first_index=self.start,
            max_item_chars=self.max_item_chars,
            clip_summaries=True,
        )
        self._entry_tokens = None
        return True

    def retry_or_fail(self, error: Exception) -> None:
        """After a summarizer error: reduce and return to retry (overflow only), or raise."""
        from ctxbudget.errors import ContextWindowError
        from ctxbudget.overflow import classify_overflow

        overflow = isinstance(error, ContextWindowError) or classify_overflow(error) is not None
        if overflow and self.attempts < self.max_attempts:
            remaining = len(self.units) - 1 - self.dropped_units
            if (
                self._drop(max(1, remaining // 2))
                or self._shrink_request()
                or self._clip_summaries()
            ):
                return
        self.fail(f"the summarizer raised {type(error).__name__}: {error}", error)

    # -- the result

    def finish(self, summary: object) -> CompactResult:
        if inspect.isawaitable(summary):
            close = getattr(summary, "close", None)
            if callable(close):  # a coroutine never awaited would warn at garbage collection
                close()
            self.fail("the summarizer is async: call acompact, not compact", None)
        if not isinstance(summary, str):
            self.fail(f"the summarizer returned {type(summary).__name__}, not str", None)
        text = str(summary).strip()
        if not text:
            self.fail("the summarizer returned an empty summary", None)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: no provider would accept it
            self.fail(f"the summarizer returned text that is not valid Unicode: {e}", e)
        request, attachments = self._latest_request()
        message = summary_message(
            self.fmt, (text + request) if request else sealed(text), self.level, attachments
        )
        scratch = RequestEstimator(
            self.model, encoding=self.encoding, counter=self.counter, format=self.fmt
        )
        summary_tokens = scratch.estimate([message]).per_message[0]
        if summary_tokens >= self.replaced_tokens:
            self.fail(
                f"the summary ({summary_tokens:,} tokens) is not smaller than the "
                f"{self.replaced_tokens:,} tokens it would replace",
                None,
            )
        # kept whole: the context a server compaction left (older than what the summary
        # tells) before the summary, instructions after it
        before = [i for i in self.kept_system if _is_server_compaction(self.fmt, self.msgs[i])]
        rules = [i for i in self.kept_system if i not in before]
        order = [*range(self.start), *before, -1, *rules, *range(self.cut, len(self.msgs))]
        out = [message if i < 0 else self.msgs[i] for i in order]
        out = in_history_type(out, self.msgs)
        # made-up Gemini ids name message indices: name the kept messages' by their old ones
        positions: list[int | None] = [None if i < 0 else i for i in order]
        try:
            after_infos = resolve_ids(scan(out, self.fmt), positions=positions)
            check_pairing(self.infos, after_infos, "compaction")
        except PairingError as exc:  # pragma: no cover - cuts are safe by construction
            self.fail(str(exc), exc)
        after = self.estimator.estimate(
            out, system=self.system, tools=self.tools, max_tokens=self.max_tokens
        )
        fits = self.budget.fits(after, max_tokens=self.max_tokens)
        # Over its cap by more than encodings differ, and that excess is why it does not fit:
        # a summarizer not given the cap as its output limit.
        written = estimate_tokens(text, self.encoding)
        excess = written - self.cap
        if (
            not fits
            and written > self.cap * _CAP_SLACK
            and self.budget.fits(after.total - excess, max_tokens=self.max_tokens)
        ):
            self.fail(
                f"the summary ({written:,} tokens) is longer than the {self.cap:,} tokens asked "
                f"for, and the compacted request ({after.total:,} tokens) does not fit: pass "
                "max_tokens on to the model call",
                None,
            )
        summarized = self.cut - self.start - len(self.kept_system)
        kept = len(self.msgs) - self.cut + len(self.kept_system)
        event = ContextEvent(
            action="compact",
            reason=self.reason,
            tokens_before=self.before.total,
            tokens_after=after.total,
            messages_before=len(self.msgs),
            messages_after=len(out),
            fits=fits,
            kept=kept,
            summarized=summarized,
            condensed=sum(1 for i in range(self.start, self.cut) if self.infos[i].summary),
            dropped=self._omitted(),
            attempts=self.attempts,
            summary_tokens=summary_tokens,
            components=after.components,
        )
        emit(event, self.on_event)
        return CompactResult(
            messages=out,
            summary=text,
            reason=self.reason,
            tokens_before=self.before.total,
            tokens_after=after.total,
            fits=fits,
            events=(event,),
            summarized=summarized,
            kept=kept,
            level=self.level,
        )


def _asks(info: MessageInfo) -> bool:
    """Whether a message carries the user's own words (a request, or a word sent along with
    tool results), not a summary."""
    return (info.kind == "user" or info.says) and not info.summary


def _first_new(infos: Sequence[MessageInfo], prior: int) -> int:
    """Index of the first message from ``prior`` on that a summary would replace: system
    messages are kept verbatim, so a cut with only them before it would call the
    summarizer to replace nothing (``len(infos)`` when there is none)."""
    return next((i for i in range(prior, len(infos)) if infos[i].kind != "system"), len(infos))


def compact(
    messages: Sequence[Any],
    summarize: Summarizer,
    *,
    window: int | None = None,
    tools: Sequence[Any] | None = None,
    system: Any = None,
    model: str | None = None,
    format: str | None = None,
    reason: str = "proactive",
    max_tokens: int | None = None,
    budget: ContextWindowBudget | None = None,
    keep_tokens: int | None = None,
    max_summaries: int = 3,
    max_attempts: int = 3,
    max_item_chars: int = 4_000,
    encoding: str | None = None,
    counter: Any = None,
    on_event: EventCallback | None = None,
) -> CompactResult:
    """Summarize the older part of a conversation; keep the recent part verbatim.

    Args:
        messages: The conversation, in any supported format. Never modified.
        summarize: ``summarize(prompt, max_tokens) -> str``: calls the caller's model.
        window: Context window in tokens (or give ``budget``); also sizes the summary cap.
        tools: Tool definitions sent with the request (counted).
        system: A system prompt kept outside ``messages`` (counted).
        model: Model name (framing, encoding, max output for the reserve).
        format: Message format; detected when ``None``.
        reason: ``proactive``, ``retry`` or ``overflow``; recorded in the event.
        max_tokens: The request's output cap (the budget's reserve uses it).
        budget: The budget to check against (default: ``window``, reserve rule of SPEC B2).
        keep_tokens: Tokens of recent messages kept verbatim (default: 25% of the usable
            context within [2000, 8000]); at least the last message is kept.
        max_summaries: Summaries kept side by side before the next compaction condenses
            them into one.
        max_attempts: Summarizer calls at most (overflow retries included).
        max_item_chars: Characters of one message or tool output in the transcript.
        encoding: Encoding for estimates.
        counter: Exact text counter for the estimates.
        on_event: Called with the :class:`~ctxbudget.events.ContextEvent`.

    Returns:
        A :class:`CompactResult`.

    Raises:
        CompactionError: No progress possible: nothing to compact, the summarizer failed or
            returned a summary not smaller than what it replaces (history unchanged).
        MessageFormatError: Malformed messages.

    >>> history = [{"role": "system", "content": "You fix bugs."}]
    >>> for i in range(30):
    ...     history += [{"role": "user", "content": f"Step {i}: " + "details " * 200},
    ...                 {"role": "assistant", "content": f"Done with step {i}."}]
    >>> def summarize(prompt: str, max_tokens: int) -> str:
    ...     return "## Goal\\nFix the bugs, step by step.\\n## Progress\\nSteps 0-27 done."
    >>> result = compact(history, summarize, window=16_000)
    >>> result.tokens_after < result.tokens_before, result.fits, result.messages[0] is history[0]
    (True, True, True)
    >>> print(result.messages[1]["content"].splitlines()[0])
    [ctxbudget summary v1 level=1]
    >>> result.summarized + result.kept + 1 == len(history), len(history)
    (True, 61)
    """
    plan = _Compaction(
        messages, window=window, budget=budget, tools=tools, system=system, model=model,
        format=format, max_tokens=max_tokens, reason=reason, keep_tokens=keep_tokens,
        max_summaries=max_summaries, max_attempts=max_attempts, max_item_chars=max_item_chars,
        encoding=encoding, counter=counter, on_event=on_event,
    )  # fmt: skip
    while True:
        prompt, cap = plan.request()
        try:
            text = summarize(prompt, cap)
        except Exception as exc:
            plan.retry_or_fail(exc)
            continue
        return plan.finish(text)


async def acompact(
    messages: Sequence[Any],
    summarize: AsyncSummarizer | Summarizer,
    *,
    window: int | None = None,
    tools: Sequence[Any] | None = None,
    system: Any = None,
    model: str | None = None,
    format: str | None = None,
    reason: str = "proactive",
    max_tokens: int | None = None,
    budget: ContextWindowBudget | None = None,
    keep_tokens: int | None = None,
    max_summaries: int = 3,
    max_attempts: int = 3,
    max_item_chars: int = 4_000,
    encoding: str | None = None,
    counter: Any = None,
    on_event: EventCallback | None = None,
) -> CompactResult:
    """:func:`compact` with an async ``summarize`` (a sync one works too).

    >>> import asyncio
    >>> async def summarize(prompt: str, max_tokens: int) -> str:
    ...     return "## Goal\\nShip it."
    >>> history = [{"role": "user", "content": "word " * 5000},
    ...            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    >>> result = asyncio.run(acompact(history, summarize, window=16_000, keep_tokens=100))
    >>> result.summarized, result.kept
    (1, 2)
    """
    plan = _Compaction(
        messages, window=window, budget=budget, tools=tools, system=system, model=model,
        format=format, max_tokens=max_tokens, reason=reason, keep_tokens=keep_tokens,
        max_summaries=max_summaries, max_attempts=max_attempts, max_item_chars=max_item_chars,
        encoding=encoding, counter=counter, on_event=on_event,
    )  # fmt: skip
    while True:
        prompt, cap = plan.request()
        try:
            value: Any = summarize(prompt, cap)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            plan.retry_or_fail(exc)
            continue
        return plan.finish(value)
