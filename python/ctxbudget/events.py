"""Structured records of every prune and compaction (SPEC E4, G4).

Each rewrite produces one :class:`ContextEvent`. It goes to the standard :mod:`logging`
logger of its action (``ctxbudget.prune`` or ``ctxbudget.compact``, level ``INFO``; the
event itself rides along as ``record.ctxbudget_event``) and to the caller's ``on_event``
callback, if any. A callback that raises is logged and otherwise ignored: observability must
never be the reason a request is not sent. The callback is called, not awaited (an ``async``
one is closed unrun, with a warning): it may run while the guard holds its lock.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ctxbudget.request import RequestComponents

__all__ = ["Action", "ContextEvent", "EventCallback", "Reason", "emit"]

#: Why a rewrite ran: ``proactive`` (the budget check before a request), ``retry`` (a first
#: attempt did not fit, or a request is being sent again), ``overflow`` (the provider said
#: the request was too long).
Reason = Literal["proactive", "retry", "overflow"]
#: What was done: old output stubbed, the history summarized, or (the guard, after an
#: overflow of input plus output) the output asked for lowered.
Action = Literal["prune", "compact", "lower_output"]
#: The logger each action's events go to.
_LOGGERS = {
    "prune": "ctxbudget.prune",
    "compact": "ctxbudget.compact",
    "lower_output": "ctxbudget.guard",
}
REASONS: tuple[Reason, ...] = ("proactive", "retry", "overflow")


@dataclass(frozen=True, slots=True)
class ContextEvent:
    """One prune, compaction or lowered output, as it happened.

    Attributes:
        action: ``prune``, ``compact`` or ``lower_output``.
        reason: ``proactive``, ``retry`` or ``overflow``.
        tokens_before: Request input tokens before the rewrite.
        tokens_after: After it.
        messages_before: Messages before.
        messages_after: Messages after.
        fits: The rewritten request fits the budget.
        stubbed: Tool outputs replaced by stubs (prune).
        interrupted: Of those, results of a failed run the model never read, plus results
            added for calls that had none (prune, SPEC D4).
        kept: Messages kept verbatim after the summary (compact).
        summarized: Messages replaced by the summary (compact).
        condensed: Earlier summaries folded into this one (compact).
        dropped: Oldest messages left out of the summary because the summarization request
            would not fit (compact); never the user's latest request, which stays.
        attempts: Summarizer calls made (compact).
        summary_tokens: Size of the new summary message (compact).
        rule: With reason ``overflow``: the rule that recognised the provider's error
            (:attr:`~ctxbudget.overflow.OverflowInfo.rule`; set by the guard).
        max_tokens_before: The output asked for before (lower_output).
        max_tokens_after: The output asked for now (lower_output).
        components: The request's breakdown after it (system, conversation, tools,
            framing and each message's count: :class:`~ctxbudget.request.RequestComponents`,
            uncalibrated as the token counts are), where the action made one.
        largest: The outputs were picked largest first, recent ones too, until the request
            fit (the guard, once stubbing old outputs was not enough: SPEC F3), not oldest
            first beyond the fresh tail (prune).
    """

    action: Action
    reason: Reason
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    fits: bool
    stubbed: int = 0
    interrupted: int = 0
    kept: int = 0
    summarized: int = 0
    condensed: int = 0
    dropped: int = 0
    attempts: int = 0
    summary_tokens: int = 0
    rule: str | None = None
    max_tokens_before: int | None = None
    max_tokens_after: int | None = None
    components: RequestComponents | None = None
    largest: bool = False

    def __str__(self) -> str:
        head = (
            f"{self.action} ({self.reason}): {self.tokens_before:,} -> {self.tokens_after:,}"
            f" tokens, {self.messages_before} -> {self.messages_after} messages"
        )
        if self.action == "prune":
            tail = f", stubbed={self.stubbed} interrupted={self.interrupted}"
            tail += " largest first" if self.largest else ""
        elif self.action == "lower_output":
            tail = f", max_tokens {self.max_tokens_before} -> {self.max_tokens_after}"
        else:
            tail = (
                f", summarized={self.summarized} kept={self.kept} condensed={self.condensed}"
                f" dropped={self.dropped} attempts={self.attempts}"
                f" summary_tokens={self.summary_tokens}"
            )
        rule = f" [rule={self.rule}]" if self.rule is not None else ""
        parts = self.components
        if parts is not None:
            tail += (
                f" (system {parts.system:,}, tools {parts.tools:,}, conversation"
                f" {parts.conversation:,}, framing {parts.framing:,})"
            )
        return f"{head}{tail}, fits={self.fits}{rule}"


#: ``on_event`` callbacks receive every :class:`ContextEvent`.
EventCallback = Callable[[ContextEvent], object]


def check_reason(reason: str) -> Reason:
    """``reason`` if it is one of :data:`REASONS`, else ``ValueError``."""
    for known in REASONS:
        if reason == known:
            return known
    raise ValueError(f"reason must be one of {REASONS}, got {reason!r}")


def emit(event: ContextEvent, on_event: EventCallback | None) -> None:
    """Log ``event`` on ``ctxbudget.<action>`` and pass it to ``on_event``."""
    logger = logging.getLogger(_LOGGERS.get(event.action, "ctxbudget"))
    logger.info("%s", event, extra={"ctxbudget_event": event})
    if on_event is None:
        return
    try:
        result = on_event(event)
    except Exception:
        logger.exception("on_event callback failed for %s", event.action)
        return
    if inspect.iscoroutine(result):  # nothing here awaits it: say so, not "never awaited"
        result.close()
        logger.warning("on_event returned a coroutine, which is not awaited: pass a function")
