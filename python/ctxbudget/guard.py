"""The guard: one object every request of an agent loop goes through (SPEC G1, F3-F5).

:class:`ContextGuard` wraps the caller's ``send(request)``. Each call runs, in this order:

1. **Estimate** the request, calibrated by what the provider reported for earlier requests
   (:class:`~ctxbudget.calibration.CalibrationTracker`).
2. **Prune** old tool output from the view (:class:`~ctxbudget.prune.Pruner`; the caller's
   history is never modified). Still over the budget: stub the **largest old results**
   first (chosen by :func:`~ctxbudget.selection.select_largest`), then **compact** when a
   summarizer was given (the summary is remembered, so the next turns re-use it instead of
   summarizing again), then stub the **largest fresh results** too: a single huge tool
   output is replaced by a stub that says how to read it in parts, its call kept. A fresh
   output that compaction could not make room for is stubbed before compacting.
3. **Validate pairing** of the final view (every call answered once, no orphan results):
   a request the provider would reject never leaves. Before anything reads the history, a
   result that came later than its call is moved next to it where the provider requires it
   there (Chat Completions, Anthropic, Gemini, strict Responses providers:
   :mod:`ctxbudget.result_placement`).
4. **Enforce the budget** on the final view, after every rewrite: an over-budget request
   raises :class:`~ctxbudget.errors.ContextBudgetError` and never reaches ``send``.
5. **Dispatch**: ``send(request)``.
6. **Recover** once when the provider says the request was too long
   (:func:`~ctxbudget.overflow.classify_overflow`): a stated count calibrates the next
   estimate (F5) and a stated limit below the budget's becomes the budget
   (:mod:`ctxbudget.limits`); when only input + reserved output overflowed and the input
   fits by an exact count, the request is sent again with a smaller ``max_tokens`` (F5);
   otherwise the view is rebuilt so that it fits even if what the provider counted beyond
   the estimate stays (F3 mid-run, F4 at a run's first call), and sent again; results
   stubbed for it stay stubbed on later turns. A second overflow, or nothing left to
   remove, raises :class:`~ctxbudget.errors.ContextOverflowError` with the provider's error
   as its cause. Any other error propagates unchanged, without a retry.
7. **Record usage** from the response (calibration, A6).

Sync (:meth:`ContextGuard.send`) and async (:meth:`ContextGuard.asend`) share one flow
(:meth:`ContextGuard._flow`, a generator that yields the two steps that do I/O).
"""

from __future__ import annotations

import copy
import inspect
import logging
import math
import re
import threading
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.calibration import (
    CalibratedEstimate,
    CalibrationTracker,
    plausible_report,
    reported_input_tokens,
)
from ctxbudget.call_ids import CallIdRenamer
from ctxbudget.compact import CompactionError, CompactResult, acompact, compact
from ctxbudget.errors import ContextBudgetError, ContextOverflowError, add_note
from ctxbudget.events import ContextEvent, EventCallback, Reason, emit
from ctxbudget.formats.common import as_mapping, message_list
from ctxbudget.formats.detect import SeenFits, pick_format
from ctxbudget.formats.openai_responses import is_item_reference
from ctxbudget.largest import StubCandidates, stub_largest
from ctxbudget.limits import INPUT_CAP_RULES, Room, StatedLimit, least_output
from ctxbudget.messages import refuse_langchain
from ctxbudget.models import _canonical
from ctxbudget.overflow import OverflowInfo, classify_overflow
from ctxbudget.pairing_cache import GrowingPairing
from ctxbudget.prune import PruneConfig, Pruner, make_budget
from ctxbudget.request import RequestEstimate, RequestEstimator, check_max_tokens
from ctxbudget.result_placement import ResultPlacement
from ctxbudget.result_size import ResultSizer
from ctxbudget.sticky_stubs import Made, StickyStubs
from ctxbudget.summary_memory import SummaryMemory
from ctxbudget.summary_prompt import largest_summary
from ctxbudget.tokens import ENCODINGS
from ctxbudget.turns import PairingError, ScanCache, resolve_ids, scan_one

__all__ = ["ContextGuard", "GuardResult", "GuardedRequest"]

R = TypeVar("R")

logger = logging.getLogger("ctxbudget.guard")

#: Below this share of the usable input, a low-confidence overflow (a bare 413 or 400) is
#: not believed: the request is nowhere near the window, so the error is about something else.
_LOW_CONFIDENCE_SHARE = 0.8
#: With no count in the provider's error, the retry must be at least this much smaller.
_UNKNOWN_COUNT_SHRINK = 0.9
#: A limit an overflow error states below this many tokens is not believed to be a context
#: window (the smallest deployments are a few thousand tokens): "Image count exceeds the
#: configured limit of 8" is no window of 8 tokens.
_MIN_STATED_LIMIT = 1024
#: A cap the guard sends in place of a provider's default output leaves this fraction of
#: the input's estimate (1 in 100) free below the limit, for the estimate's error.
_CAP_HEADROOM = 100
#: An overflow whose count is over this many times the estimate the request was sent with
#: (or that gives none) has the request estimated afresh (see ``ContextGuard._read_anew``).
_STALE_SHARE = 1.1
#: Stubbing rounds at most per rewrite (each re-estimates what is left).
_STUB_ROUNDS = 3
#: The most :meth:`GuardedRequest.kwargs` fills in as Anthropic's required ``max_tokens``
#: when the caller gave none: the anthropic SDK refuses a larger one without streaming for
#: some models (Claude Opus 4 and 4.1: 8,192; every model above 21,333 on a client with the
#: default timeout: "Streaming is required for operations that may take longer than 10
#: minutes").
DEFAULT_MAX_TOKENS = 8_192


@dataclass(frozen=True, slots=True)
class GuardedRequest:
    """The request the guard lets through: build the provider call from it.

    Attributes:
        messages: The messages to send: a new list (the caller's history is not modified);
            unchanged messages are the caller's own objects.
        system: The system prompt, as given.
        tools: The tool definitions, as given.
        max_tokens: The output cap to send: the caller's, lowered by the guard after an
            overflow that only the output reserve caused; or, where the caller gave none and
            the provider said it then counts a default output that does not fit beside the
            input (a 13,000-token default under a 16,000 limit), what the limit leaves.
        estimate: The calibrated estimate of the input the guard checked against the budget.
        attempt: 1 for the first dispatch, 2 for the retry after an overflow.
        reason: ``proactive`` (first dispatch) or ``overflow`` (the retry).
        default_max_tokens: The output cap :meth:`kwargs` sends to Anthropic, which requires
            one, when ``max_tokens`` is ``None``: the output the budget reserved for the
            request (so the request fits the window as checked), at most
            :data:`DEFAULT_MAX_TOKENS`.
    """

    messages: list[Any]
    system: Any
    tools: Sequence[Any] | None
    max_tokens: int | None
    estimate: CalibratedEstimate
    attempt: int = 1
    reason: Reason = "proactive"
    default_max_tokens: int | None = None

    @property
    def input_tokens(self) -> int:
        """The calibrated input estimate, tokens."""
        return self.estimate.total

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the SDK call for the request's format, ``system``,
        ``tools`` and the output cap only when set (an empty tool list is left out: Chat
        Completions refuses ``tools: []``):

        - OpenAI Chat Completions (``client.chat.completions.create(model=..., **r.kwargs())``):
          ``messages`` (a ``system=`` prompt first, as a system message), ``tools``, and
          ``max_tokens``, or ``max_completion_tokens`` for the o-series and GPT-5, which
          refuse ``max_tokens``;
        - OpenAI Responses (``client.responses.create``): ``input``, ``instructions``,
          ``tools``, ``max_output_tokens``;
        - Anthropic (``client.messages.create``): ``messages``, ``system``, ``tools``,
          ``max_tokens``, which Anthropic requires: without one given to the guard, the
          output the budget reserved for the request, at most :data:`DEFAULT_MAX_TOKENS`
          (:attr:`default_max_tokens`; pass ``max_tokens=`` to the guard for more);
        - Gemini (``client.models.generate_content``): ``contents`` and a ``config`` dict with
          ``system_instruction``, ``tools``, ``max_output_tokens``.
        """
        fmt = self.estimate.raw.format
        system, tools, cap = self.system, self.tools or None, self.max_tokens
        if fmt == "openai_responses":
            fields = {"input": self.messages, "instructions": system, "tools": tools}
            return _set(fields | {"max_output_tokens": cap})
        if fmt == "gemini":
            config = _set({"system_instruction": system, "tools": tools, "max_output_tokens": cap})
            return {"contents": self.messages} | ({"config": config} if config else {})
        if fmt == "openai_chat":
            lead = [{"role": "system", "content": system}] if system is not None else []
            name = (
                "max_completion_tokens"
                if _completion_cap(self.estimate.raw.model)
                else "max_tokens"
            )
            return _set({"messages": [*lead, *self.messages], "tools": tools, name: cap})
        if cap is None:
            cap = self.default_max_tokens
        return _set(
            {"messages": self.messages, "system": system, "tools": tools, "max_tokens": cap}
        )


def _set(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without those that are ``None``."""
    return {key: value for key, value in fields.items() if value is not None}


#: OpenAI models whose Chat Completions take ``max_completion_tokens`` only (``max_tokens``:
#: 400 "Unsupported parameter"): the o-series and GPT-5.
_COMPLETION_CAP = re.compile(r"^(?:o\d|gpt-5)(?![a-z0-9])")


def _completion_cap(model: str | None) -> bool:
    return model is not None and _COMPLETION_CAP.match(_canonical(model)) is not None


@dataclass(frozen=True, slots=True)
class GuardResult(Generic[R]):
    """What one guarded call did.

    Attributes:
        response: What ``send`` returned.
        request: The request that got it (the retry, after a recovered overflow).
        events: The prunes, compactions and lowered outputs of this call, in order (their
            token counts are uncalibrated estimates, as :class:`~ctxbudget.prune.Pruner` and
            :func:`~ctxbudget.compact.compact` count them; ``request.input_tokens`` is the
            calibrated one).
        overflow: The provider's overflow that was recovered from, if any.
        usage_recorded: The response's usage report fed the calibration.
    """

    response: R
    request: GuardedRequest
    events: tuple[ContextEvent, ...]
    overflow: OverflowInfo | None
    usage_recorded: bool


@dataclass(slots=True)
class _Call:
    """One guarded call's inputs, and what it made and learned on the way."""

    messages: list[Any]
    system: Any
    tools: Sequence[Any] | None
    max_tokens: int | None
    run_start: bool
    events: list[ContextEvent]
    fmt: str
    #: The stubs the call's latest view holds that stay in later requests once this one is
    #: accepted: the largest-first step's, and the run start's stubs of abandoned results
    #: (kept per call: the guard's lock is released while a request is in flight, and
    #: another call may run).
    made: list[Made] = field(default_factory=list)
    #: The latest view's pruning: its messages, where each was in the pruner's input
    #: (:attr:`~ctxbudget.prune.PruneResult.positions`) and that input; see :meth:`stands_for`.
    pruned_from: list[tuple[list[Any], tuple[int | None, ...] | None, list[Any]]] = field(
        default_factory=list
    )
    #: Why compaction failed, if it ran and did: the cause of a budget error that follows.
    compaction_failed: list[BaseException] = field(default_factory=list)
    #: The request goes with less output than asked for (or without the margin), as the
    #: provider's count allowed (SPEC F5): once taken, the next requests may too.
    output_lowered: bool = False
    #: The guard's count of :meth:`ContextGuard.invalidate` calls when this call began: more
    #: by its recovery, and the history was edited while its request was in flight.
    edits: int = 0

    def stands_for(self, message: Any, slot: int) -> tuple[Any, int]:
        """The message of the pruner's input that ``message``, a message of the latest
        view, was made from, and the place there of the result at ``slot`` (``message`` and
        ``slot`` themselves when it is one of the input's, was added, or the result is not
        found there). Stubs made in the pruner's copies are kept against it: the next
        request's pruner input holds it, with them, and the pruner makes its copy of that."""
        if not self.pruned_from:
            return message, slot
        out, positions, source = self.pruned_from[-1]
        k = next((k for k, m in enumerate(out) if m is message), None)
        i = k if k is None or positions is None else positions[k]
        if i is None or source[i] is message:
            return message, slot
        # The same result (call id and tool, and which of such) in the input's message: a
        # copy may have moved its blocks (Anthropic results first, added ones after them).
        results = scan_one(message, self.fmt).results
        want = next(((rid, name) for rid, name, at in results if at == slot), None)
        nth = sum(1 for rid, name, at in results if (rid, name) == want and at < slot)
        same = [
            at for rid, name, at in scan_one(source[i], self.fmt).results if (rid, name) == want
        ]
        return (source[i], same[nth]) if nth < len(same) else (message, slot)


#: The two steps of a call that do I/O, yielded by the flow to its driver:
#: ``("send", GuardedRequest)`` and ``("compact", keyword arguments of compact())``.
_Step = tuple[Literal["send", "compact"], Any]
_Flow = Generator[_Step, Any, GuardResult[Any]]


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine: an ``async def`` function (or a partial of
    one), or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - the method itself is what is asked about
    )


class ContextGuard:
    """Keeps every request of one conversation inside the model's context window.

    Give it the conversation's full history each turn (it is never modified; append to it
    as usual) and a ``send`` that turns a :class:`GuardedRequest` into the provider call. The
    guard remembers what it learned across turns (calibration, stubs, a summary), so use
    one guard per conversation: one shared by several works, but each conversation's turn
    makes it forget the other's (its summary is written anew, stubbed results come back).
    Thread-safe: its state is updated under a lock, ``send`` runs outside it.

    Args:
        model: Model name: window and max output from the registry, framing, encoding.
        window: Context window override (tokens).
        budget: A full :class:`~ctxbudget.budget.ContextWindowBudget` instead of ``window``.
        summarize: ``summarize(prompt, max_tokens) -> str`` (or ``async``) for compaction;
            without one, the guard only prunes and stubs.
        format: Message format (detected when ``None``).
        prune: Fresh-tail, threshold and stub settings.
        encoding: Encoding for estimates (default: the model's).
        counter: Exact text counter (see :func:`~ctxbudget.request.estimate_request`).
        calibration: ``True`` (a tracker of its own), a shared
            :class:`~ctxbudget.calibration.CalibrationTracker`, or ``False``.
        usage: ``usage(response)`` -> the usage report, when the response keeps it somewhere
            other than ``.usage`` / ``.usage_metadata`` / ``["usage"]``.
        keep_tokens: Tokens kept verbatim by compaction (see :func:`~ctxbudget.compact.compact`).
        on_event: Called with every :class:`~ctxbudget.events.ContextEvent`.

    Raises:
        KeyError: ``model`` is not in the registry and neither ``window`` nor ``budget`` says
            the window.
        TypeError: Neither a model nor a window.

    >>> history = [{"role": "user", "content": "List the files."}]
    >>> call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    >>> history += [{"role": "assistant", "content": None, "tool_calls": [call]},
    ...             {"role": "tool", "tool_call_id": "c1", "content": "a.py\\n" * 20_000}]
    >>> def send(request):  # the provider call: client.chat.completions.create(...)
    ...     return {"usage": {"prompt_tokens": request.input_tokens}}
    >>> guard = ContextGuard("gpt-4o", window=32_000)
    >>> result = guard.send(send, history)
    >>> print(result.request.messages[2]["content"].splitlines()[0])  # doctest: +ELLIPSIS
    [ctxbudget: tool output pruned] ls returned ... tokens (20,000 lines); the output was...
    >>> len(history[2]["content"]), result.usage_recorded
    (100000, True)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        window: int | None = None,
        budget: ContextWindowBudget | None = None,
        summarize: Callable[[str, int], Any] | None = None,
        format: str | None = None,
        prune: PruneConfig | None = None,
        encoding: str | None = None,
        counter: Any = None,
        calibration: CalibrationTracker | bool = True,
        usage: Callable[[Any], Any] | None = None,
        keep_tokens: int | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        if budget is None and window is None:
            if model is None:
                raise TypeError("pass model=, window= or budget=")
            budget = ContextWindowBudget.for_model(model)
        self.budget = make_budget(window, budget, model)
        self.model = model
        self.summarize = summarize
        self.on_event = on_event
        self.config = prune or PruneConfig()
        self._usage = usage
        self._keep_tokens = keep_tokens
        if encoding is not None and encoding not in ENCODINGS:
            # (with a counter too: the pruner sizes tool outputs and stubs in the encoding)
            raise ValueError(f"unknown encoding {encoding!r}; expected one of {ENCODINGS}")
        self._estimator_args: dict[str, Any] = {"encoding": encoding, "counter": counter}
        self._pruner = Pruner(
            budget=self.budget,
            model=model,
            format=format,
            config=self.config,
            on_event=self._event,
            **self._estimator_args,
        )
        self.encoding = self._pruner.encoding
        self.tracker: CalibrationTracker | None
        self._own_tracker = not isinstance(calibration, CalibrationTracker) and bool(calibration)
        if isinstance(calibration, CalibrationTracker):
            self.tracker = calibration
        elif calibration:
            self.tracker = CalibrationTracker(model, format=format, **self._estimator_args)
        else:
            self.tracker = None
        self._raw = RequestEstimator(model, format=format, **self._estimator_args)
        self._sizer = ResultSizer(self._raw, media=self.config.prune_media)
        # This guard's key in the tracker: guards sharing one keep their own anchors (on
        # one key, each guard's report replaced the other's, and no estimate was anchored).
        self._conversation = object()
        self._lock = threading.RLock()
        self._collected: list[ContextEvent] = []
        # id(a call's events) -> the rule of the overflow that call is recovering from
        self._rules: dict[int, str] = {}
        self._scans: dict[str, ScanCache] = {}
        self._pairing = GrowingPairing()
        self._fits_seen = SeenFits()
        self._candidates = StubCandidates(self._sizer, self.config)
        self._sticky = StickyStubs(drop_media=self.config.prune_media)
        # Calibrated / raw input of the last request (what the provider counts per estimated
        # token); a cold guard starts from the tracker's cold factor.
        self._ratio = self.tracker.cold_factor if self.tracker is not None else 1.0
        # A limit the provider stated in an overflow error (None: the caller's budget rules).
        self._limit: StatedLimit | None = None
        self._memory = SummaryMemory()
        self._ids = CallIdRenamer()
        self._placement = ResultPlacement()
        # The most uncalibrated input plus max_tokens to send after overflows that stated no
        # count (None: no such overflow since calibration last learned from an accepted
        # request).
        self._ceiling: int | None = None
        # The same after overflows of an input cap (the input's alone).
        self._input_ceiling: int | None = None
        # The provider took a request with a lowered output (SPEC F5), and no request since
        # fitted the budget as it is: later ones go with a lowered output too (_output_cap).
        self._output_lowered = False
        self._edits = 0  # invalidate() calls (see _Call.edits)

    def invalidate(self, message: Any = None) -> None:
        """Forget what was read of ``message`` (or of every message, when it is None) after
        editing it in place below its fields (``message["content"].append(...)``): replaced
        fields are noticed without it (see
        :meth:`~ctxbudget.request.RequestEstimator.invalidate`). Counts, sizes, stubs made of
        it and the reading of the list are made anew on the next send; what was learned (the
        calibration, summaries, the stubs of outputs left unchanged) stays."""
        with self._lock:
            self._edits += 1
            self._sticky.invalidate(message)
            self._forget(message)

    def _forget(self, message: Any) -> None:
        """What :meth:`invalidate` does but for the stubs kept (under the lock)."""
        self._raw.invalidate(message)
        if self.tracker is not None:
            self.tracker.invalidate(message, conversation=self._conversation)
        self._pruner.invalidate(message)
        self._ids.invalidate()
        self._placement.invalidate()
        self._scans.clear()
        self._pairing = GrowingPairing()
        self._fits_seen = SeenFits()
        self._candidates = StubCandidates(self._sizer, self.config)

    # -- copies and pickles

    def __getstate__(self) -> dict[str, Any]:
        """What rebuilds this guard and what it learned: its settings (the callables too: a
        pickle needs them picklable, module-level functions), the format it found, the
        calibration, the summary it sends in place of older messages, the stubs the provider
        accepted, a limit the provider stated. Not what it read of the messages (kept per
        message object): an unpickled guard, or a copy, reads the next history afresh, once;
        the summary and the stubs apply to messages equal to those they were made of.

        A copy (``copy.copy``) learns on apart from this guard: its own tracker, a copy of
        this one's, unless the tracker was given (``calibration=tracker``), which the copy
        shares, under a key of its own (its first estimate is not anchored)."""
        with self._lock:
            return {
                "args": {
                    "model": self.model,
                    "budget": self.budget,
                    "summarize": self.summarize,
                    "format": self._pruner.format,
                    "prune": self.config,
                    "calibration": self.tracker if self.tracker is not None else False,
                    "usage": self._usage,
                    "keep_tokens": self._keep_tokens,
                    "on_event": self.on_event,
                    **self._estimator_args,
                },
                "own_tracker": self._own_tracker,
                "conversation": self._conversation,
                "ratio": self._ratio,
                "limit": self._limit,
                "ceiling": self._ceiling,
                "input_ceiling": self._input_ceiling,
                "output_lowered": self._output_lowered,
                "memory": copy.copy(self._memory),
                "sticky": copy.copy(self._sticky),
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["args"])  # type: ignore[misc]
        self._own_tracker = state["own_tracker"]
        self._conversation = state["conversation"]
        self._ratio, self._limit = state["ratio"], state["limit"]
        self._ceiling = state.get("ceiling")
        self._input_ceiling = state.get("input_ceiling")
        self._output_lowered = state.get("output_lowered", False)
        self._memory, self._sticky = state["memory"], state["sticky"]

    def __copy__(self) -> ContextGuard:
        state = self.__getstate__()
        if state["own_tracker"] and self.tracker is not None:
            state["args"]["calibration"] = copy.copy(self.tracker)
        elif self.tracker is not None:
            state["conversation"] = object()  # a shared tracker: anchors of its own
        new = type(self).__new__(type(self))
        new.__setstate__(state)
        return new

    # -- the two drivers

    def send(
        self,
        send: Callable[[GuardedRequest], R],
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        max_tokens: int | None = None,
        run_start: bool = False,
    ) -> GuardResult[R]:
        """Send one request of the conversation through the guard.

        Args:
            send: ``send(request) -> response``: makes the provider call.
            messages: The conversation's whole history (any supported format).
            system: System prompt kept outside the messages (Anthropic, Gemini).
            tools: Tool definitions sent with the request.
            max_tokens: The request's output cap.
            run_start: A new run starts after a failed one: tool results the model never
                read are stubbed (see :mod:`ctxbudget.prune`).

        Raises:
            ContextBudgetError: The request cannot be made to fit; nothing was sent.
            ContextOverflowError: The provider refused it as too long and recovery did not
                help (its error is the ``__cause__``).
            PairingError: The history breaks tool-call pairing; nothing was sent.
            MessageFormatError: ``messages`` is not a list of messages.
            TypeError: ``send`` or ``summarize`` is async (use :meth:`asend`).
        """
        if self.summarize is not None and _is_async(self.summarize):
            raise TypeError("summarize is a coroutine function: use asend()")
        if _is_async(send):
            raise TypeError("send is a coroutine function: use asend()")
        events: list[ContextEvent] = []
        flow = self._flow(messages, system, tools, max_tokens, run_start, events)
        value: Any = None
        error: Exception | None = None
        while True:
            step = self._advance(flow, events, value, error)
            if not isinstance(step, tuple):
                return step
            kind, arg = step
            value, error = None, None
            try:
                value = send(arg) if kind == "send" else compact(**arg)
            except Exception as exc:
                error = exc
            if inspect.iscoroutine(value):  # not run yet: nothing was sent, nothing is lost
                value.close()
                raise TypeError("send returned a coroutine: use asend() for an async send")

    async def asend(
        self,
        send: Callable[[GuardedRequest], Awaitable[R]],
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        max_tokens: int | None = None,
        run_start: bool = False,
    ) -> GuardResult[R]:
        """:meth:`send` for an ``async`` ``send`` (``send`` and ``summarize`` may each be sync
        or async: a sync ``send`` has made the provider call by the time it returns, so its
        response is used as it is, not lost to a failed ``await``)."""
        events: list[ContextEvent] = []
        flow = self._flow(messages, system, tools, max_tokens, run_start, events)
        value: Any = None
        error: Exception | None = None
        while True:
            step = self._advance(flow, events, value, error)
            if not isinstance(step, tuple):
                return step
            kind, arg = step
            value, error = None, None
            try:
                value = send(arg) if kind == "send" else acompact(**arg)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                error = exc

    def _advance(
        self, flow: _Flow, events: list[ContextEvent], value: Any, error: Exception | None
    ) -> _Step | GuardResult[Any]:
        """Run the flow to its next I/O step (or its result), under the lock; the events
        emitted meanwhile go to this call's ``events``."""
        with self._lock:
            self._collected = events
            try:
                if error is not None:
                    return flow.throw(error)
                return flow.send(value)
            except StopIteration as stop:
                result: GuardResult[Any] = stop.value
                return result

    # -- the flow of one call

    def _flow(
        self,
        messages: Sequence[Any],
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
        run_start: bool,
        events: list[ContextEvent],
    ) -> _Flow:
        check_max_tokens(max_tokens)
        caller = message_list(messages, None)
        refuse_langchain(caller)
        fmt = self._format(caller)
        # results moved next to their calls before anything reads the list (a provider
        # refuses a request in which one comes later: SPEC G2)
        placed = self._placement.apply(fmt, caller)
        if placed is not caller:
            logger.debug("tool results moved next to their calls in what is sent")
        call = _Call(placed, system, tools, max_tokens, run_start, events, fmt)
        call.edits = self._edits
        request = yield from self._prepare(call, max_tokens, "proactive", None)
        overflow: OverflowInfo | None = None
        try:
            response = yield ("send", request)
        except Exception as exc:
            info = classify_overflow(exc)
            if info is None or not self._believe(info, request):
                raise
            overflow = info
            self._rules[id(events)] = info.rule  # the recovery's events carry it
            try:
                retry = yield from self._recover(call, request, info, exc)
            finally:
                self._rules.pop(id(events), None)
            try:
                response = yield ("send", retry)
            except Exception as again:
                second = classify_overflow(again)
                if second is None:
                    raise
                if self._observe_overflow(retry, second) is None:
                    self._note_refused(call.fmt, retry, second)
                self._note_limit(second, retry, max_tokens)
                raise ContextOverflowError.from_info(
                    second, model=self.model, reason="still too long after one recovery"
                ) from again
            request = retry
        self._sticky.remember(call.fmt, call.made)
        if call.output_lowered:
            self._output_lowered = True
        recorded = self._observe(request, response)
        return GuardResult(response, request, tuple(events), overflow, recorded)

    def _read_anew(
        self, call: _Call, request: GuardedRequest, measured: int | None
    ) -> GuardedRequest:
        """``request`` with its estimate made again when the one it was sent with is not what
        its messages read afresh give: a message the caller edited in place, below its fields,
        without :meth:`invalidate` (the caches read it as it was, and the provider counted it
        as it is). What was read of every message is then forgotten, so that the recovery
        reads them as they are: a larger output put in an old block in place would otherwise
        be taken for tokens the estimate cannot see, and the call fail. Only when the provider
        counted well over the estimate (``measured``, over :data:`_STALE_SHARE` of it) or
        gave no count: one fresh estimate is little beside the round trip the overflow cost
        (2 ms for 600 messages; with an exact tokenizer as ``counter``, what it takes)."""
        if measured is not None and measured <= request.estimate.total * _STALE_SHARE:
            return request  # the estimate it was sent with was near enough
        try:
            fresh = self._raw._one_shot(call.fmt)
            now = fresh.estimate(request.messages, system=request.system, tools=request.tools)
        except Exception:  # (the estimate it was sent with read them)
            return request
        if now.total == request.estimate.raw.total:
            return request
        logger.warning(
            "the history changed in place since it was read (%d tokens estimated, %d now): "
            "reading it anew; call invalidate(message) after editing a message in place",
            request.estimate.raw.total, now.total,
        )  # fmt: skip
        self._forget(None)
        est = self._estimate(request.messages, request.system, request.tools, request.max_tokens)
        return replace(request, estimate=est)

    def _believe(self, info: OverflowInfo, request: GuardedRequest) -> bool:
        """Whether to act on an overflow (a low-confidence one only near the window)."""
        if info.confidence != "low":
            return True
        usable = self._available(request.max_tokens)
        return request.input_tokens >= _LOW_CONFIDENCE_SHARE * usable

    def _recover(
        self, call: _Call, request: GuardedRequest, info: OverflowInfo, error: Exception
    ) -> Generator[_Step, Any, GuardedRequest]:
        """The retry after the provider's overflow ``info`` (SPEC F3-F5). When the caller
        edited the history while the request was in flight (and said so: :meth:`invalidate`),
        the provider counted what was sent, as the estimate it was sent with did: that pair
        stands, and the history is not read anew against it (the difference was taken for
        tokens no pruning could free)."""
        sent = request.estimate.raw.total
        if call.edits == self._edits:
            request = self._read_anew(call, request, info.measured_input_tokens)
        measured = self._observe_overflow(request, info)
        self._note_limit(info, request, call.max_tokens)
        if measured is None:
            self._note_refused(call.fmt, request, info)
        lowered = self._lower_output(request, info, call.max_tokens)
        if lowered is not None:
            call.output_lowered = True
            return lowered
        # budgeted for the output the caller asked for (not a cap the guard sent in its place)
        max_tokens = request.max_tokens if call.max_tokens is None else call.max_tokens
        if measured is None:
            # The estimate was too low by an unknown amount: ask for a clearly smaller request.
            room = Room(cap=int(request.input_tokens * _UNKNOWN_COUNT_SHRINK))
        else:
            excess = max(0, measured - request.estimate.raw.total)
            raw_cap = self._available(max_tokens) - excess
            if raw_cap <= 0:
                # The provider counts more beyond our estimate than the whole window holds
                # (a document we cost by a fixed rule, say): no pruning can make room for it.
                raise ContextOverflowError.from_info(
                    info,
                    model=self.model,
                    reason=f"the provider counted {excess:,} tokens more than the estimate, "
                    "more than the window holds",
                ) from error
            room = Room(raw_cap=raw_cap)
        try:
            retry = yield from self._prepare(call, max_tokens, "overflow", room)
        except ContextBudgetError as exc:
            failed = ContextOverflowError.from_info(
                info, model=self.model, reason=f"recovery could not make it fit: {exc}"
            )
            if call.compaction_failed:  # why compaction did not make room (a summarizer down)
                add_note(failed, f"compaction was tried and failed: {call.compaction_failed[-1]}")
            raise failed from error
        if (
            _same_messages(retry.messages, request.messages)
            and retry.max_tokens == request.max_tokens
            and retry.estimate.raw.total >= sent  # (not the same: edited in place meanwhile)
        ):
            raise ContextOverflowError.from_info(
                info, model=self.model, reason="nothing left to prune, stub or compact"
            ) from error
        logger.info(
            "overflow (%s): retrying with %d -> %d estimated input tokens",
            info.rule, request.input_tokens, retry.input_tokens,
        )  # fmt: skip
        return replace(retry, attempt=2)

    def _lower_output(
        self, request: GuardedRequest, info: OverflowInfo, caller_max_tokens: int | None
    ) -> GuardedRequest | None:
        """The request with a smaller ``max_tokens`` when only the output reserve overflowed,
        the provider stated the input exactly and the window, and what is left is at least
        :func:`~ctxbudget.limits.least_output` (half the output asked for, at most a quarter
        of the window), and fits the window by our estimate too (SPEC F5: the
        reserve itself is what is lowered, so the budget's reserve rule does not apply)."""
        if info.input_fits is not True or not info.exact:
            return None  # vLLM's "at least N input tokens" is where it stopped counting
        if info.input_tokens is None or info.limit_tokens is None:
            return None
        # What the provider says is left, and what our estimate says is (the smaller: a
        # request over our own budget is not sent).
        room = min(
            info.limit_tokens - info.input_tokens,
            self._budget(request.max_tokens).window - request.input_tokens,
        )
        # the output the caller asked for (the guard may have sent less: _output_cap)
        candidates = (caller_max_tokens, request.max_tokens, info.output_tokens)
        asked = next((n for n in candidates if n is not None), None)
        if asked is None or room >= asked or room < least_output(asked, info.limit_tokens):
            return None  # too little left to answer in: make the input smaller instead
        n = len(request.messages)
        event = ContextEvent(
            action="lower_output", reason="overflow", tokens_before=request.estimate.raw.total,
            tokens_after=request.estimate.raw.total, messages_before=n, messages_after=n, fits=True,
            rule=info.rule, max_tokens_before=request.max_tokens or asked, max_tokens_after=room,
            components=request.estimate.raw.components,
        )  # fmt: skip
        emit(event, self._event)
        return replace(request, max_tokens=room, attempt=2, reason="overflow")

    def _note_limit(
        self, info: OverflowInfo, request: GuardedRequest, caller_max_tokens: int | None
    ) -> None:
        """Budget the next requests against the provider's stated limit when it is below
        ours (a deployment with a shorter context than the registry's, an input cap), until
        the provider takes more than it (see :meth:`_lift_limit`)."""
        limit = info.limit_tokens
        if limit is None or info.kind == "request_too_large":
            return
        fixed = request.estimate.raw.components.system + request.estimate.raw.components.tools
        if limit < _MIN_STATED_LIMIT or limit <= fixed:
            # No model's window: a limit of something else read as tokens, which would stop
            # every later request from being sent.
            logger.warning("ignoring a stated limit of %d tokens: too small to be a window", limit)
            return
        output = info.output_tokens if request.max_tokens is None else None
        if output is None and caller_max_tokens is None and self._limit is not None:
            # Sent with the guard's cap in place of the default output it learned: still so.
            output = self._limit.output
        stated = StatedLimit(limit, _input_cap(info), output)
        mt = request.max_tokens
        if stated.budget(self.budget, mt).available(mt) >= self._available(mt):
            return
        logger.warning(
            "the provider's limit is %d tokens (%s): budgeting for it", limit,
            "input" if stated.input_only else "input + output",
        )  # fmt: skip
        self._limit = stated

    def _note_refused(self, fmt: str, request: GuardedRequest, info: OverflowInfo) -> None:
        """After an overflow that stated no count: the next requests stay under the one
        refused (by its uncalibrated estimate), until one is accepted with a usage report
        that calibration learns from. A refusal with no count teaches calibration nothing:
        without this ceiling, every later turn sent the same refused request and its
        refused retry."""
        if _input_cap(info):  # the input's alone, whatever output the next one asks for
            cap = request.estimate.raw.total - 1
            self._input_ceiling = (
                cap if self._input_ceiling is None else min(self._input_ceiling, cap)
            )
            return
        # input and output: the provider may have counted the output asked for (a request
        # with less of it may take more input)
        sent = _sent_output(fmt, request.max_tokens, request.default_max_tokens)
        cap = request.estimate.raw.total - 1 + sent
        self._ceiling = cap if self._ceiling is None else min(self._ceiling, cap)

    def _lift_limit(self, request: GuardedRequest, reported: int | None) -> None:
        """Forget the provider's stated limit once it accepted more than it allowed."""
        stated = self._limit
        if reported is None or stated is None:
            return
        taken = reported if stated.input_only else reported + (request.max_tokens or 0)
        if taken > stated.tokens:
            self._limit = None

    def _budget(self, max_tokens: int | None) -> ContextWindowBudget:
        """The budget a request with ``max_tokens`` is checked against: the caller's, or the
        one the provider's stated limit called for."""
        if self._limit is None:
            return self.budget
        return self._limit.budget(self.budget, max_tokens)

    def _available(self, max_tokens: int | None) -> int:
        """Input tokens a request may have."""
        return self._budget(max_tokens).available(max_tokens)

    # -- building the request

    def _prepare(
        self, call: _Call, max_tokens: int | None, reason: Reason, room: Room | None
    ) -> Generator[_Step, Any, GuardedRequest]:
        """Steps 1-4: the view of the history that fits, checked; no I/O but compaction."""
        system, tools = call.system, call.tools
        # reused tool-call ids renamed before anything pairs calls by id (pruning, lost-call
        # repair, compaction's cuts); the summary memory matches the caller's own objects
        history = self._ids.apply(
            call.fmt, self._memory.apply(call.fmt, call.messages), self._sticky.kept()
        )
        room = replace(room or Room(), base=self._available(max_tokens))
        caps = [room.raw_cap, self._input_ceiling]
        if self._ceiling is not None:
            output = _sent_output(call.fmt, max_tokens, self._default_output(max_tokens))
            caps.append(self._ceiling - output)
        if any(cap is not None for cap in caps[1:]):
            room = replace(room, raw_cap=min(cap for cap in caps if cap is not None))
        self._pruner.budget = self._pruner_budget(room.lowest, max_tokens)

        def view_of(msgs: list[Any]) -> tuple[list[Any], CalibratedEstimate, bool]:
            """The pruned view of ``msgs`` with old results stubbed as needed, its estimate,
            and whether its fresh tail with the largest summary is over the room
            (compaction keeps the tail: it cannot make the request fit then)."""
            call.made.clear()  # the stubs of the view this makes (an earlier view's are gone)
            # The stubs of accepted requests first: the pruner reads the history as the
            # model saw it (its own copies, a result it adds for a lost call in the same
            # message, are then made of the stubbed message, and keep the stub).
            source = self._sticky.apply(call.fmt, msgs)
            for changed in self._sticky.changed:  # a block with a kept stub edited in place:
                self._forget(changed)  # what was read of the message is stale
            pruned = self._pruner.prune(
                source, system=system, tools=tools, max_tokens=max_tokens, reason=reason,
                run_start=call.run_start,
            )  # fmt: skip
            call.pruned_from[:] = [(pruned.messages, pruned.positions, source)]
            # Results a failed run abandoned are stubbed at the run start only (SPEC D4); the
            # model goes on from that view, so later requests keep the stub (the output does
            # not come back, and the history's middle does not change under the prompt cache).
            # So are the old outputs stubbed with them (decided on a history with the
            # abandoned outputs whole, which the next turn no longer reads: the old ones came
            # back), and those stubbed to recover from an overflow: the provider counts them
            # more than the estimate does, and sent whole they would be refused again.
            old_kept = reason == "overflow" or call.run_start
            kept = ("interrupted", "old") if old_kept else ("interrupted",)
            made = [(source[p.index], p.slot, p.stub) for p in pruned.pruned if p.kind in kept]
            call.made.extend(self._sticky.noted(call.fmt, made))
            fresh_from = len(pruned.messages) - (len(msgs) - pruned.tail_start)
            view = pruned.messages
            est = self._estimate(view, system, tools, max_tokens, pruned.estimate)
            view, est = self._stub_largest(view, est, call, max_tokens, room, fresh_from, reason)
            raw = est.raw
            tail = raw.total - sum(raw.per_message[: max(0, fresh_from)])
            tail_tokens = tail * est.total / max(1, raw.total)
            over = room.over(est) + tail_tokens - est.total
            return view, est, over + largest_summary(self._budget(max_tokens).window) > 0

        def stub_fresh() -> tuple[list[Any], CalibratedEstimate]:
            """The fresh results too, largest first (SPEC F3)."""
            return self._stub_largest(view, est, call, max_tokens, room, None, reason)

        view, est, tail_over = view_of(history)
        # Once the provider took a lowered output (SPEC F5), the output is lowered again
        # rather than fresh results stubbed or the history compacted, while that leaves enough.
        whole = est  # (the estimate before fresh outputs are stubbed: see _output_cap)
        capped = room.over(est) > 0 and self._output_cap(est, whole, max_tokens, reason)
        if room.over(est) > 0 and tail_over and not capped:  # fresh output compaction
            view, est = stub_fresh()  # cannot make room for
        if room.over(est) > 0 and self.summarize is not None and not capped:
            compacted = yield from self._compact(call, history, max_tokens, reason)
            if compacted is not None:
                view, est, _ = view_of(compacted)
        if room.over(est) > 0 and not capped:
            view, est = stub_fresh()
        self._check_pairing(call.fmt, view)
        self._ratio = est.total / max(1, est.raw.total)
        sent = max_tokens if max_tokens is not None else self._default_cap(est)
        request = GuardedRequest(
            view, system, tools, sent, est, 1, reason, self._default_output(max_tokens)
        )
        over = room.over(est)
        budget = self._budget(max_tokens)
        if over > 0 and budget.fits(est.total, max_tokens=max_tokens):
            raise ContextBudgetError(
                self.model, budget.window, est.total + budget.reserve(max_tokens),
                f"input {est.total:,} is {over:,} over what the provider's errors allow",
                input_tokens=est.total, reserved_output=budget.reserve(max_tokens),
            )  # fmt: skip
        try:
            self._enforce(view, est, max_tokens)
        except ContextBudgetError as exc:
            if self._takes_smaller_cap(sent, max_tokens):
                return request  # what the limit leaves is enough to answer in
            cap = self._output_cap(est, whole, max_tokens, reason)
            if cap is not None and max_tokens is not None:
                call.output_lowered = True
                if cap < max_tokens:  # (else only the margin is waived)
                    n = len(view)
                    event = ContextEvent(
                        action="lower_output", reason=reason, tokens_before=est.raw.total,
                        tokens_after=est.raw.total, messages_before=n, messages_after=n,
                        fits=True, max_tokens_before=max_tokens, max_tokens_after=cap,
                        components=est.raw.components,
                    )  # fmt: skip
                    emit(event, self._event)
                return replace(request, max_tokens=cap)
            if not call.compaction_failed:
                raise
            failure = call.compaction_failed[-1]
            add_note(exc, f"compaction was tried and failed: {failure}")
            raise exc from failure.__cause__ or failure
        if reason == "proactive":
            self._output_lowered = False  # fits as the budget has it: no need to lower
        return request

    def _output_cap(
        self,
        est: CalibratedEstimate,
        whole: CalibratedEstimate,
        max_tokens: int | None,
        reason: Reason,
    ) -> int | None:
        """A smaller ``max_tokens`` for a request whose input fits but not beside the output
        asked for and the margin, once the provider took a lowered output (SPEC F5) and no
        request since fitted the budget: what the window leaves beside the input, if at least
        :func:`~ctxbudget.limits.least_output` and the budget's ``reserved_output`` (the
        ``max_tokens`` asked for when that fits: the margin alone is waived). The next turns
        are then sent as the one the provider took, not refused by the guard's own reserve,
        and lowered rather than compacted or their fresh outputs stubbed. Only for an estimate
        anchored on a count the provider reported, whose error is in what was added since
        (the margin is for the error of a whole estimate), or for ``est`` made of such an
        estimate ``whole`` with outputs stubbed (which the provider counted: the anchor
        goes), by what the stubs took out of it; a first attempt's only (a recovery lowers by
        the provider's count), and not under a ceiling a refusal without a count left (those
        estimates are not trusted)."""
        if not self._output_lowered or max_tokens is None or reason != "proactive":
            return None
        if self._ceiling is not None or self._input_ceiling is not None:
            return None
        if self._limit is not None and self._limit.input_only:
            return None  # the input is what is over (lowering the output frees nothing)
        removed = 0
        if est.anchored:
            total = est.total
        elif whole.anchored and est.raw.total <= whole.raw.total:
            # what the stubs took out, at the correction learned when that is below 1 (else
            # as estimated): the provider may count it lower still (tool outputs counted at a
            # third of the estimate), so a quarter of it is kept as headroom below
            removed = whole.raw.total - est.raw.total
            total = whole.total - int(removed * min(1.0, whole.factor))
        else:
            return None
        budget = self._budget(max_tokens)
        # 1 in 100 of the input, a quarter of what was added since the report and of what
        # the stubs took out
        headroom = -(-total // _CAP_HEADROOM) + -(-whole.added_tokens // 4) + -(-removed // 4)
        inputs = total + headroom
        if budget.max_input is not None and inputs > budget.max_input:
            return None  # over the model's input cap
        left = budget.window - inputs
        # never below an output the caller's budget reserves
        least = max(least_output(max_tokens, budget.window), self.budget.reserved_output or 0)
        return min(left, max_tokens) if left >= least else None

    def _default_cap(self, est: CalibratedEstimate) -> int | None:
        """The output cap to send when the caller gave none: none, unless the provider said
        (in an overflow error) that it then counts a default output of its own, and that does
        not fit beside this input; then what its limit leaves, which the budget kept at least
        :meth:`~ctxbudget.limits.StatedLimit.output_floor`."""
        stated = self._limit
        if stated is None or stated.output is None or stated.input_only:
            return None
        window = self._budget(None).window
        if est.total + stated.output <= window:
            return None
        # A little short of the limit: an estimate a token under the provider's count would
        # otherwise overflow, and be retried, on every such turn.
        return max(1, window - est.total - -(-est.total // _CAP_HEADROOM))

    def _takes_smaller_cap(self, sent: int | None, max_tokens: int | None) -> bool:
        """Whether a request the caller gave no ``max_tokens`` may go with the cap ``sent``
        although its input leaves less than the output floor: the cap is at least
        :meth:`~ctxbudget.limits.StatedLimit.least_output` (``sent`` fits the limit beside
        the input by its construction)."""
        least = self._limit.least_output() if self._limit is not None else None
        if max_tokens is not None or sent is None or least is None:
            return False
        # Never less than an output the caller's budget reserves.
        return sent >= max(least, self.budget.reserved_output or 0)

    def _default_output(self, max_tokens: int | None) -> int | None:
        """The output cap a request without ``max_tokens`` is sent with where the API
        requires one (Anthropic): what the budget reserved for its output (the reserve
        without its margin, as capped), so that the request fits as checked, at most
        :data:`DEFAULT_MAX_TOKENS`."""
        if max_tokens is not None:
            return None
        budget = self._budget(None)
        if budget.reserved_output is not None:
            output = budget.reserved_output
        else:
            output = budget.max_output if budget.max_output is not None else budget.default_output
        return max(1, min(output, budget.reserve(None), DEFAULT_MAX_TOKENS))

    def _pruner_budget(self, limit: int, max_tokens: int | None) -> ContextWindowBudget:
        """The budget the Pruner checks its (raw) estimates against: ``limit`` calibrated
        tokens, in raw tokens by the last calibration ratio, so that it prunes old output,
        oldest first, as far as the calibrated check will ask."""
        ratio = max(1.0, self._ratio)
        budget = self._budget(max_tokens)
        if ratio == 1.0 and limit == budget.available(max_tokens):
            return budget
        reserve = budget.reserve(max_tokens)
        return ContextWindowBudget(
            max(1, int(limit / ratio) + reserve), reserved_output=reserve, margin=0,
            max_reserve_fraction=None, max_output=budget.max_output, model=self.model,
        )  # fmt: skip

    def _enforce(self, view: list[Any], est: CalibratedEstimate, max_tokens: int | None) -> None:
        """Raise :class:`~ctxbudget.errors.ContextBudgetError` unless the request fits,
        naming the component at fault and the largest message (SPEC F4: a message too large
        for the window is said so, not retried)."""
        budget = self._budget(max_tokens)
        violation = budget.check(est.total, max_tokens=max_tokens)
        if violation is None:
            return
        # The component at fault, from the uncalibrated estimate when it is over too.
        blamed = budget.check(est.raw, max_tokens=max_tokens) or violation
        raw = est.raw
        why = (
            f"input {est.total:,} (estimate {raw.total:,} x calibration"
            f" {est.total / max(1, raw.total):.2f}) + reserve {violation.reserve:,} is over the"
            f" {budget.window:,} window by {violation.over_by:,}; {blamed.component} at"
            f" fault (system {raw.system:,}, tools {raw.tools:,}, conversation"
            f" {raw.conversation:,}, framing {raw.framing:,})"
        )
        if raw.per_message:
            i = max(range(len(raw.per_message)), key=raw.per_message.__getitem__)
            m = as_mapping(view[i]) or {}
            role = m.get("role") or m.get("type") or "message"
            why += f"; the largest message is #{i} ({role}, {raw.per_message[i]:,} tokens)"
        raise ContextBudgetError(
            self.model, budget.window, violation.requested_tokens, why,
            input_tokens=violation.input_tokens, reserved_output=violation.reserve,
            component=blamed.component, exact=blamed.exact,
        )  # fmt: skip

    def _compact(
        self, call: _Call, history: list[Any], max_tokens: int | None, reason: Reason
    ) -> Generator[_Step, Any, list[Any] | None]:
        """Compaction of ``history`` through the driver; the new history (remembered for the
        next turns), or ``None`` when it could not help."""
        fmt = call.fmt
        args = {
            "messages": history, "summarize": self.summarize, "budget": self._budget(max_tokens),
            "tools": call.tools, "system": call.system, "model": self.model, "format": fmt,
            "reason": reason, "max_tokens": max_tokens, "keep_tokens": self._keep_tokens,
            "on_event": self._recorder(call.events), **self._estimator_args,
        }  # fmt: skip
        try:
            result: CompactResult = yield ("compact", args)
        except CompactionError as exc:
            logger.warning("compaction did not help: %s", exc)
            call.compaction_failed.append(exc)
            return None
        self._memory.remember(fmt, call.messages, result)
        return result.messages

    def _stub_largest(
        self,
        view: list[Any],
        est: CalibratedEstimate,
        call: _Call,
        max_tokens: int | None,
        room: Room,
        fresh_from: int | None,
        reason: Reason,
    ) -> tuple[list[Any], CalibratedEstimate]:
        """``view`` with its largest tool results stubbed until the estimate is within
        ``room``: only results before ``fresh_from`` when it is given, else any. ``est`` is
        the estimate of ``view``."""
        # Counted as the Pruner and compaction count their events (uncalibrated), so that
        # one call's events chain: each one's tokens_before is the last one's tokens_after.
        before, messages_before, stubbed = est.raw.total, len(view), 0
        for _ in range(_STUB_ROUNDS):
            if room.over(est) <= 0:
                break
            # Sizes are raw estimates: scale what is over by the calibration's ratio.
            ratio = est.total / max(1, est.raw.total)
            need = math.ceil(room.over(est) / ratio)
            out, made = self._stub_results(call.fmt, view, need, fresh_from)
            if not made:
                break
            stands = [(*call.stands_for(m, slot), stub) for m, slot, stub in made]
            call.made.extend(self._sticky.noted(call.fmt, stands))
            n = len(made)
            view, stubbed = out, stubbed + n
            est = self._estimate(view, call.system, call.tools, max_tokens)
        if stubbed:
            event = ContextEvent(
                action="prune", reason=reason, tokens_before=before, tokens_after=est.raw.total,
                messages_before=messages_before, messages_after=len(view),
                fits=room.over(est) <= 0, stubbed=stubbed, components=est.raw.components,
                largest=True,
            )  # fmt: skip
            emit(event, self._event)
        return view, est

    def _stub_results(
        self, fmt: str, view: list[Any], need: int, fresh_from: int | None
    ) -> tuple[list[Any], list[tuple[Any, int, str]]]:
        out, made = stub_largest(
            fmt, view, self._scan(fmt, view), need, candidates=self._candidates,
            rescan=lambda out: self._scan(fmt, out), fresh_from=fresh_from,
        )  # fmt: skip
        return out, made

    def _check_pairing(self, fmt: str, view: list[Any]) -> None:
        """Raise :class:`~ctxbudget.turns.PairingError` unless ``view`` pairs every call
        (reading only what changed since the last request)."""
        violations = self._pairing.violations(fmt, view)
        if violations and fmt == "openai_responses":
            # a result's call may be a stored item the request names by reference only: as
            # many orphans as references that may be calls (a message's or a reasoning
            # item's, by their ids' prefixes, cannot)
            orphans = [v for v in violations if v.kind == "orphaned_result"]
            if orphans and len(orphans) <= _call_references(view):
                violations = [v for v in violations if v.kind != "orphaned_result"]
        if violations:
            raise PairingError("sending this request", violations)

    # -- state

    def _estimate(
        self,
        view: list[Any],
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
        raw: RequestEstimate | None = None,
    ) -> CalibratedEstimate:
        """The calibrated estimate of ``view``; ``raw`` is its estimate, when already made."""
        if raw is None:
            raw = self._raw.estimate(view, system=system, tools=tools, max_tokens=max_tokens)
        if self.tracker is not None:
            return self.tracker.estimate(
                view, system=system, tools=tools, raw=raw, conversation=self._conversation
            )
        return CalibratedEstimate(raw.total, False, None, 0, 1.0, raw)

    def _observe(self, request: GuardedRequest, response: Any) -> bool:
        """Feed the response's usage report to the calibration (and lift a stated input cap
        the provider has now taken more than); never fails the call."""
        try:
            usage = self._usage(response) if self._usage is not None else _usage_of(response)
            reported = reported_input_tokens(usage)
            if reported is None or reported <= 0:
                logger.debug("the response reports no input tokens: nothing to calibrate from")
                return False
            clamp = self.tracker.clamp if self.tracker is not None else (0.5, 2.0)
            if plausible_report(reported, request.estimate.raw, clamp):
                self._lift_limit(request, reported)  # (the tracker logs an implausible one)
            if self.tracker is None:
                return False
            learned = self.tracker.observe(
                request.messages, usage, system=request.system, tools=request.tools,
                raw=request.estimate.raw, conversation=self._conversation,
            )  # fmt: skip
            if learned:  # calibration knows what the provider counts now
                self._ceiling = self._input_ceiling = None
            return learned
        except Exception:  # a usage report we cannot read must not lose the response
            logger.warning("could not read the usage report of the response", exc_info=True)
            return False

    def _observe_overflow(self, request: GuardedRequest, info: OverflowInfo) -> int | None:
        """Feed an overflow's exact count to the calibration (SPEC F5); the count, if any."""
        measured = info.measured_input_tokens
        if measured is not None and self.tracker is not None:
            self.tracker.observe_overflow(
                request.messages, info, system=request.system, tools=request.tools,
                raw=request.estimate.raw, conversation=self._conversation,
            )  # fmt: skip
        return measured

    def _format(self, messages: list[Any]) -> str:
        """The format of the caller's ``messages``: the Pruner's once decided, else what the
        messages fit, narrowed turn by turn (only the appended ones are read)."""
        if self._pruner.format is not None:
            return self._pruner.format
        return pick_format(self._fits_seen.narrow(messages), "openai_chat")

    def _scan(self, fmt: str, messages: list[Any]) -> list[Any]:
        cache = self._scans.get(fmt)
        if cache is None:
            cache = self._scans[fmt] = ScanCache(fmt)
        return cache.scan(messages)

    def _event(self, event: ContextEvent) -> object:
        """Events of work done under the lock: the current call's (see :meth:`_advance`).
        The callback's result is returned for :func:`~ctxbudget.events.emit` to check."""
        event = self._with_rule(event, self._collected)
        self._collected.append(event)
        return self.on_event(event) if self.on_event is not None else None

    def _with_rule(self, event: ContextEvent, events: list[ContextEvent]) -> ContextEvent:
        """``event`` with the rule of the overflow its call is recovering from, if any."""
        rule = self._rules.get(id(events))
        if rule is None or event.rule is not None or event.reason != "overflow":
            return event
        return replace(event, rule=rule)

    def _recorder(self, events: list[ContextEvent]) -> EventCallback:
        """Events of work done outside the lock (compaction): to that call's ``events``."""

        def record(event: ContextEvent) -> object:
            event = self._with_rule(event, events)
            events.append(event)
            return self.on_event(event) if self.on_event is not None else None

        return record


def _resolved(fmt: str, infos: list[Any]) -> list[Any]:
    return resolve_ids(infos) if fmt == "gemini" else infos


def _input_cap(info: OverflowInfo) -> bool:
    """Whether an overflow's limit is the input's alone."""
    # (getattr: an OverflowInfo pickled before the field was)
    return getattr(info, "input_cap", False) or info.rule in INPUT_CAP_RULES


def _sent_output(fmt: str, max_tokens: int | None, default: int | None) -> int:
    """The output cap a request goes with: its ``max_tokens``, else the one Anthropic is
    sent (:attr:`GuardedRequest.default_max_tokens`); 0 where none is sent."""
    if max_tokens is not None:
        return max_tokens
    return default or 0 if fmt == "anthropic" else 0


#: Id prefixes of stored items that are no tool calls (messages, reasoning).
_NOT_CALL_IDS = ("msg_", "rs_")


def _call_references(view: Sequence[Any]) -> int:
    """How many items of a Responses input name a stored item that may be a tool call."""
    count = 0
    for m in view:
        found = as_mapping(m)
        if found is not None and is_item_reference(found):
            count += not str(found.get("id") or "").startswith(_NOT_CALL_IDS)
    return count


def _same_messages(a: list[Any], b: list[Any]) -> bool:
    """Whether a retry would send what was refused: stubs are rebuilt as new objects by each
    rewrite, so equal content counts as the same (the overflow path only: no hot loop)."""
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def _usage_of(response: Any) -> Any:
    """The usage report of an SDK response object or a response dict."""
    if isinstance(response, dict):
        for key in ("usage", "usage_metadata", "usageMetadata"):
            if response.get(key) is not None:
                return response[key]
        return None
    for name in ("usage", "usage_metadata"):
        value = getattr(response, name, None)
        if value is not None:
            return value
    return None
