"""Calibration from the provider's reported usage (SPEC A6, F5).

After each response the caller passes the request it sent and the usage the provider reported
(``prompt_tokens`` / ``input_tokens``, or an :class:`~ctxbudget.overflow.OverflowInfo` whose
stated count is an exact measurement). The next estimate is then *anchored*:

    estimate = last reported count + factor x (estimate of the messages added since)

``factor`` is learned robustly from the observed deltas: for each pair of consecutive
observations of one conversation where the later request extends the earlier one, the ratio
(reported delta / estimated delta); the tracker uses the weighted median of the recent ratios
(weights: the estimated delta, at most 1,000 tokens each, so that one large delta cannot set
the factor alone), clamped to ``[0.5, 2.0]``. Requests whose measured part holds images or
documents teach nothing: those are charged by the provider's rule (the most they may cost when
their size is unknown), so their ratio is no correction of the text estimate. When the history
was not simply extended (compaction, an edited or removed message, other tools or system
prompt), there is no valid anchor: the estimate falls back to the cold estimate times a second
learned factor (the weighted median of reported / cold estimate), never to a stale anchor.
Before any usage is seen, the cold estimate is raised by ``cold_margin`` (5%): an under-count
overflows the window, an over-count only compacts a little early. A usage report that cannot
count the request (beyond 8x or below 1/8 of its estimate, or grown since the anchor by far
more than was added: a run's cumulative usage, a count without its cached part) is logged on
``ctxbudget.calibration`` and ignored (:func:`plausible_report`).

>>> tracker = CalibrationTracker("deepseek-chat")
>>> history = [{"role": "user", "content": "Fix the failing test."}]
>>> first = tracker.estimate(history)
>>> tracker.observe(history, {"prompt_tokens": 1500})
True
>>> history = [*history, {"role": "assistant", "content": "Looking at it."}]
>>> est = tracker.estimate(history)
>>> est.anchored, est.total > 1500
(True, True)
"""

from __future__ import annotations

import decimal
import logging
import math
import operator
import reprlib
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxbudget.formats.common import as_mapping
from ctxbudget.request import CounterLike, RequestEstimate, RequestEstimator
from ctxbudget.settings import check_count, check_real

__all__ = [
    "CalibratedEstimate",
    "CalibrationState",
    "CalibrationTracker",
    "plausible_report",
    "reported_input_tokens",
]

logger = logging.getLogger("ctxbudget.calibration")


def reported_input_tokens(usage: Any) -> int | None:
    """The input-token count in a provider's usage report (dict or SDK object).

    Understands OpenAI Chat (``prompt_tokens``), OpenAI Responses and Anthropic
    (``input_tokens``; Anthropic's cache reads and writes are added, since its
    ``input_tokens`` leaves them out), Bedrock Converse (``inputTokens``, its cache reads and
    writes added likewise), Gemini (``prompt_token_count``), a bare count, and an
    :class:`~ctxbudget.overflow.OverflowInfo` (its exact stated input count; ``None`` when the
    provider gave none or qualified it). A whole response object is read through its
    ``usage`` (or Gemini's ``usage_metadata``). Counts may be any integer type (numpy's
    too) or a float with no fraction (JSON decoded as floats).

    Raises:
        TypeError: Not a usage report, or a count that is not a whole number (``True``,
            ``2106.5``, ``"2106"``), named by its key.

    >>> reported_input_tokens({"prompt_tokens": 1200, "completion_tokens": 80})
    1200
    >>> reported_input_tokens({"input_tokens": 50, "cache_read_input_tokens": 1000})
    1050
    >>> reported_input_tokens({"inputTokens": 50, "cacheReadInputTokens": 1000})  # Bedrock
    1050
    """
    if usage is None:
        return None
    if hasattr(usage, "measured_input_tokens"):  # OverflowInfo (SPEC F5)
        value = usage.measured_input_tokens
        return int(value) if value is not None else None
    if isinstance(usage, Mapping):
        fields: Mapping[str, Any] = usage
    elif (inner := _inner_usage(usage)) is not None:
        return reported_input_tokens(inner)
    elif hasattr(usage, "model_dump"):
        fields = usage.model_dump()
    elif hasattr(usage, "__dict__"):
        fields = vars(usage)
    else:
        return _whole(usage, "usage")
    count = _count_in(fields)
    return count if count is not None else _response_usage(fields)


def _count_in(fields: Mapping[str, Any]) -> int | None:
    """The input count among a usage report's fields, or ``None``."""
    for key in ("prompt_tokens", "prompt_token_count", "promptTokenCount"):
        if fields.get(key) is not None:
            return _whole(fields[key], key)
    # Anthropic, and Bedrock's Converse API (``response["usage"]``): the input count leaves out
    # what was read from or written to the prompt cache, which the prompt holds all the same.
    for key, cached in _CACHED_APART.items():
        if fields.get(key) is not None:
            total = _whole(fields[key], key)
            for part in cached:
                if fields.get(part) is not None:
                    total += _whole(fields[part], part)
            return total
    return None


#: Input counts that leave the prompt cache's tokens out, with the fields that hold those.
_CACHED_APART: dict[str, tuple[str, ...]] = {
    "input_tokens": ("cache_creation_input_tokens", "cache_read_input_tokens"),
    "inputTokens": ("cacheWriteInputTokens", "cacheReadInputTokens"),
}


def _response_usage(response: Mapping[str, Any]) -> int | None:
    """The count in a whole response given as a dict (the JSON body, or an SDK response's
    ``model_dump()``), read through its ``usage`` (Gemini: ``usageMetadata``), as an SDK
    response object is; ``None`` when it has none. One level only: a usage report holds no
    other."""
    for key in ("usage", "usage_metadata", "usageMetadata"):
        inner = response.get(key)
        if isinstance(inner, Mapping):
            return _count_in(inner)
    return None


#: Anthropic prompt-cache breakpoints that move to the newest message each turn: at most
#: this many messages differ by them alone (the API takes four).
_CACHE_MARKS = 4


def _same_but_cache_marks(now: list[Any], then: list[Any]) -> bool:
    """Whether ``now`` is ``then`` but for ``cache_control`` marks, in a few messages: a
    client that caches the prompt moves its breakpoint to the newest message each turn,
    rebuilding the one it left (counts are checked apart)."""
    differ = [(a, b) for a, b in zip(now, then, strict=True) if a is not b and a != b]
    return len(differ) <= _CACHE_MARKS and all(
        _without_cache_marks(a) == _without_cache_marks(b) for a, b in differ
    )


def _without_cache_marks(message: Any) -> Any:
    """A message dict without the ``cache_control`` marks of the message and its content
    blocks (those in a tool result's content too); data elsewhere (a tool's input, a
    result's text) is compared as it is."""
    if not isinstance(message, Mapping):
        return message
    out = {k: v for k, v in message.items() if k != "cache_control"}
    if isinstance(out.get("content"), list):
        out["content"] = [_block_without_cache_mark(b) for b in out["content"]]
    return out


def _block_without_cache_mark(block: Any) -> Any:
    if not isinstance(block, Mapping):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if out.get("type") == "tool_result" and isinstance(out.get("content"), list):
        out["content"] = [_block_without_cache_mark(b) for b in out["content"]]
    return out


def _inner_usage(response: Any) -> Any:
    """The usage report of a whole response object (``.usage``, Gemini's
    ``.usage_metadata``), or ``None``."""
    for field in ("usage", "usage_metadata"):
        inner = getattr(response, field, None)
        if inner is not None and not isinstance(inner, int | float | str):
            return inner
    return None


def _whole(value: Any, key: str) -> int:
    """``value`` (the usage report's ``key``) as an ``int``: any integer type, or a float
    without a fraction; a ``bool``, another float or a string is no count."""
    if not isinstance(value, bool):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return operator.index(value)
        except TypeError:
            pass
    shown = reprlib.repr(value)  # a response's text passed as its usage is no log line
    raise TypeError(
        f"usage {key} must be a whole number of tokens, got {type(value).__name__} {shown}"
        if key != "usage"
        else f"cannot read a usage report from {type(value).__name__} {shown}"
    )


@dataclass(frozen=True, slots=True)
class CalibratedEstimate:
    """An estimate corrected by what the provider reported.

    Attributes:
        total: Calibrated input tokens.
        anchored: ``True`` when built on a reported count (last report + added messages).
        anchor_tokens: The reported count it was built on (``None`` when not anchored).
        added_tokens: Calibrated tokens of the messages added since the anchor.
        factor: The correction factor applied (to the added part, or to the cold estimate).
        raw: The uncalibrated :class:`~ctxbudget.request.RequestEstimate`.
    """

    total: int
    anchored: bool
    anchor_tokens: int | None
    added_tokens: int
    factor: float
    raw: RequestEstimate


@dataclass(frozen=True, slots=True)
class CalibrationState:
    """What a tracker has learned, for logs and dashboards.

    Attributes:
        model: The model tracked.
        observations: Reports received (usage and overflow measurements).
        delta_factor: Correction for added messages (weighted median of observed ratios).
        cold_factor: Correction for whole cold estimates.
        delta_samples: Ratios behind ``delta_factor``.
        cold_samples: Ratios behind ``cold_factor``.
        conversations: Conversations with a live anchor.
        last_reported: The most recent reported count, if any.
    """

    model: str | None
    observations: int
    delta_factor: float
    cold_factor: float
    delta_samples: int
    cold_samples: int
    conversations: int
    last_reported: int | None


@dataclass(slots=True)
class _Anchor:
    messages: list[Any]
    reported: int
    per_message: tuple[int, ...]
    system: Any
    tools: Any
    system_tokens: int
    tools_tokens: int
    attachments: int
    #: The estimate of the request the report counted.
    total: int = 0
    #: A report extending an earlier one by what was added agreed with it: not a doubtful
    #: first count.
    confirmed: bool = False

    def distance(self) -> float:
        """How far the report is from the request's estimate, as |log(report / estimate)|."""
        return abs(math.log(max(1, self.reported) / max(1, self.total)))


#: A report is believed within this factor beyond the clamp of the estimate: a tokenizer
#: differs by less; a report further off counts something else (a run's cumulative usage, an
#: input count without its cached part) and, anchored on, would make every later estimate as
#: wrong. A request as a whole is allowed twice the spread of what was added to an anchored
#: one (a cold estimate misses what a provider adds out of sight).
_PLAUSIBLE_SPREAD = 2.0
#: Counts this close to the estimate (tokens) are believed whatever the ratio: a provider's
#: hidden prompt (tool-use instructions) is a large share of a tiny request, and an error
#: this small moves no budget decision.
_PLAUSIBLE_GAP = 2_000


def plausible_report(
    reported: int,
    raw: RequestEstimate,
    clamp: tuple[float, float] = (0.5, 2.0),
    *,
    reasoning: bool = False,
) -> bool:
    """Whether ``reported`` input tokens can be the provider's count of the request ``raw``
    estimates: within ``clamp`` widened four times each way (with the default clamp, from an
    eighth of the estimate to eight times it), or within 2,000 tokens of it.

    >>> raw = CalibrationTracker("gpt-4o").estimate([{"role": "user", "content": "a " * 9_000}]).raw
    >>> plausible_report(raw.total * 3, raw), plausible_report(raw.total * 10, raw)
    (True, False)
    """
    spread = _PLAUSIBLE_SPREAD**2
    low, high = clamp
    charged = bool(raw.components.attachments) or reasoning
    return _within(reported, raw.total, low / spread, high * spread, charged)


#: Block and item types of reasoning a provider leaves out of later turns' counts.
_REASONING = frozenset({"thinking", "redacted_thinking", "reasoning"})


def _has_reasoning(messages: Sequence[Any]) -> bool:
    """Whether ``messages`` carry a model's reasoning, which providers leave out of a later
    turn's input (Anthropic drops earlier turns' thinking blocks, OpenAI earlier turns'
    reasoning items) although the estimate counts it: a count far below the estimate is then
    the provider's own, and only the upper bound of :func:`plausible_report` applies."""
    for message in messages:
        m = as_mapping(message)
        if m is None:
            continue
        if m.get("type") == "reasoning":
            return True
        blocks = m.get("content", m.get("parts"))
        if isinstance(blocks, list) and any(_is_reasoning(b) for b in blocks):
            return True
    return False


def _is_reasoning(block: Any) -> bool:
    b = as_mapping(block)
    return b is not None and (b.get("type") in _REASONING or b.get("thought") is True)


def _within(count: int, estimate: int, low: float, high: float, charged: bool) -> bool:
    """Whether ``count`` is between ``low`` and ``high`` times ``estimate`` (or close to it).
    Attachments whose size is unknown are ``charged`` the most they may cost: then only the
    upper bound applies."""
    if abs(count - estimate) <= _PLAUSIBLE_GAP:
        return True
    if count > estimate * high:
        return False
    return charged or count >= estimate * low


#: How far (a share of its distance) a second report may stand from where the first report
#: off the anchor stood, relative to the anchor, to confirm it (see ``_confirms``).
_DOUBT_DRIFT = 0.1
#: A report below this share of the request's estimate, when the request carries reasoning,
#: is taken to leave the reasoning out and teaches no whole-request ratio.
_DROPPED_SHARE = 0.9
#: The most one delta sample weighs (tokens), half the default prior: a delta far larger than
#: the others (a tool output of 40k tokens among turns of 300) is one sample, not a majority.
_MAX_DELTA_WEIGHT = 1_000.0


def _check_settings(window: int, clamp: tuple[float, float], max_conversations: int) -> None:
    """Refuse settings that break the tracker rather than tune it: no conversation kept
    (every estimate raised ``KeyError``), no ratio kept (nothing ever learned), or a clamp
    whose bounds are swapped (every factor pinned to ``high``, the estimates to a fraction)."""
    check_count("window", window, minimum=1)
    check_count("max_conversations", max_conversations, minimum=1)
    low, high = clamp
    check_real("clamp low", low, above=True)
    check_real("clamp high", high, above=True)
    if not 0 < low <= high:
        raise ValueError(f"clamp must be (low, high) with 0 < low <= high, got {clamp!r}")


def _log_implausible(reported: int, expected: int, what: str) -> None:
    logger.warning(
        "ignoring a usage report of %d input tokens where %s comes to %d (%.1fx): not a"
        " count of this request (a cumulative usage, or one without its cached part?)",
        reported, what, expected, reported / max(1, expected),
        extra={"ctxbudget_reported": reported, "ctxbudget_expected": expected},
    )  # fmt: skip


def _weighted_median(samples: Sequence[tuple[float, float]]) -> float:
    ordered = sorted(samples)
    half = sum(w for _, w in ordered) / 2
    acc = 0.0
    for ratio, weight in ordered:
        acc += weight
        if acc >= half:
            return ratio
    return ordered[-1][0]


class CalibrationTracker:
    """Per-model calibration from reported usage; thread-safe.

    Args:
        model: Model name (framing profile and encoding, as in
            :func:`~ctxbudget.request.estimate_request`).
        encoding: Encoding override.
        format: Message format (detected when ``None``).
        counter: Exact text counter, as in :func:`~ctxbudget.request.estimate_request`.
        window: How many recent ratios the factors use.
        clamp: Bounds for both factors.
        cold_margin: Fraction added to a cold estimate while no usage has been seen.
        min_delta: Estimated deltas smaller than this (tokens) teach nothing.
        prior_weight: How many tokens of added messages the delta factor's starting point
            (1.0: the framing profile's own weights) counts as among the deltas it learns.
        max_conversations: Anchors kept (one per ``conversation`` key), least recent dropped.

    Raises:
        ValueError: ``window`` or ``max_conversations`` below 1, or a ``clamp`` that is not
            ``0 < low <= high``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding: str | None = None,
        format: str | None = None,
        counter: CounterLike = None,
        window: int = 64,
        clamp: tuple[float, float] = (0.5, 2.0),
        cold_margin: float = 0.05,
        min_delta: int = 16,
        prior_weight: float = 2_000.0,
        max_conversations: int = 64,
    ) -> None:
        _check_settings(window, clamp, max_conversations)
        check_real("cold_margin", cold_margin, minimum=-1.0, above=True)
        check_count("min_delta", min_delta)
        check_real("prior_weight", prior_weight)
        self.model = model
        self._estimator_args: dict[str, Any] = {
            "encoding": encoding,
            "format": format,
            "counter": counter,
        }
        # kept as given (a list edited in place is followed), Decimals as floats
        decimals = any(isinstance(bound, decimal.Decimal) for bound in clamp)
        self.clamp = (float(clamp[0]), float(clamp[1])) if decimals else clamp
        self.cold_margin = float(cold_margin)
        self.min_delta = int(min_delta)
        self.prior_weight = float(prior_weight)
        self._lock = threading.RLock()
        self._delta: deque[tuple[float, float]] = deque(maxlen=int(window))
        self._cold: deque[tuple[float, float]] = deque(maxlen=int(window))
        self._anchors: OrderedDict[Hashable, _Anchor] = OrderedDict()
        # Per conversation, the last report refused for how far it is from the anchor: a next
        # report that agrees with it, not with the anchor, shows the anchor was the wrong one.
        self._doubts: dict[Hashable, _Anchor] = {}
        self._estimators: OrderedDict[Hashable, RequestEstimator] = OrderedDict()
        self._max_conversations = max_conversations
        self._observations = 0
        self._last_reported: int | None = None
        # Bumped whenever `_delta` or `_cold` change; `_factors` caches what they give.
        self._samples_version = 0
        self._factors: dict[str, tuple[tuple[Any, ...], float]] = {}

    # -- learned factors

    def _clamped(self, value: float) -> float:
        low, high = self.clamp
        return min(high, max(low, value))

    def _cached(self, name: str, compute: Callable[[], float]) -> float:
        """``compute()``, kept until the samples or the settings it reads change: a weighted
        median sorts up to twice ``window`` samples, which an anchored estimate (an agent's
        every turn) would otherwise pay each time."""
        # tuple(): a clamp given as a list may be edited in place.
        key = (name, self._samples_version, tuple(self.clamp), self.prior_weight, self.cold_margin)
        cached = self._factors.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        value = compute()
        self._factors[name] = (key, value)
        return value

    @property
    def delta_factor(self) -> float:
        """Correction applied to messages added since the anchor."""
        with self._lock:
            return self._cached("delta", self._delta_factor)

    def _delta_factor(self) -> float:
        prior = (self._prior(), self.prior_weight)
        return self._clamped(_weighted_median([*self._delta, prior]))

    def _prior(self) -> float:
        """Where the delta factor starts: 1.0, the profile's own weights. Not what whole
        requests' ratios say: those are mostly the fixed parts' (tool schemas, the system
        prompt, a provider's hidden preamble), which new messages do not share (a provider
        counting messages 1.3x and schemas 0.5x made it 0.64; one adding 300 tokens out of
        sight, 1.7 for short turns). On the 38 shared runs: anchored p95 0.46% -> 0.41%."""
        return 1.0

    @property
    def cold_factor(self) -> float:
        """Correction applied to a whole cold estimate (no valid anchor)."""
        with self._lock:
            return self._cached("cold", self._cold_factor)

    def _cold_factor(self) -> float:
        if self._cold:
            return self._clamped(_weighted_median(self._cold))
        return 1.0 + self.cold_margin

    def state(self) -> CalibrationState:
        """A snapshot of what the tracker has learned."""
        with self._lock:
            return CalibrationState(
                model=self.model,
                observations=self._observations,
                delta_factor=self.delta_factor,
                cold_factor=self.cold_factor,
                delta_samples=len(self._delta),
                cold_samples=len(self._cold),
                conversations=len(self._anchors),
                last_reported=self._last_reported,
            )

    def invalidate(self, message: Any = None, *, conversation: Hashable = None) -> None:
        """Forget cached counts of one message (or all) of a conversation, after editing it in
        place (see :meth:`~ctxbudget.request.RequestEstimator.invalidate`). What was learned
        stays; the anchor is used again only if the history still counts what it did."""
        with self._lock:
            est = self._estimators.get(conversation)
            if est is not None:
                est.invalidate(message)

    def reset(self) -> None:
        """Forget everything learned."""
        with self._lock:
            self._delta.clear()
            self._cold.clear()
            self._samples_version += 1
            self._anchors.clear()
            self._doubts.clear()
            self._estimators.clear()
            self._observations = 0
            self._last_reported = None

    # -- copies and pickles

    def __getstate__(self) -> dict[str, Any]:
        """What the tracker learned (ratios, anchors, doubts) and its settings, in containers of
        its own: a copy (``copy.copy``, or an unpickled tracker in another process) learns on
        apart from this one. Not the lock, nor the per-conversation count caches (keyed by
        object identity; the next estimate of each conversation counts its messages afresh,
        and an anchor is used again when the request still holds equal messages)."""
        with self._lock:
            state = dict(self.__dict__)
            del state["_lock"]
            state["_estimator_args"] = dict(self._estimator_args)
            state["_delta"] = deque(self._delta, maxlen=self._delta.maxlen)
            state["_cold"] = deque(self._cold, maxlen=self._cold.maxlen)
            # (_Anchor objects are never changed once stored: shared, not copied.)
            state["_anchors"] = OrderedDict(self._anchors)
            state["_doubts"] = dict(self._doubts)
            state["_estimators"] = OrderedDict()
            state["_factors"] = {}
            return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- plumbing

    def _estimator(self, conversation: Hashable) -> RequestEstimator:
        est = self._estimators.get(conversation)
        if est is None:
            est = RequestEstimator(self.model, **self._estimator_args)
            self._estimators[conversation] = est
            while len(self._estimators) > self._max_conversations:
                old, _ = self._estimators.popitem(last=False)
                self._anchors.pop(old, None)
                self._doubts.pop(old, None)
        self._estimators.move_to_end(conversation)
        return est

    def _raw(
        self,
        conversation: Hashable,
        messages: Sequence[Any],
        system: Any,
        tools: Any,
        max_tokens: int | None,
        given: RequestEstimate | None = None,
    ) -> RequestEstimate:
        if given is not None:
            if len(given.per_message) != len(messages):
                raise ValueError(
                    f"raw= counts {len(given.per_message)} messages, the request has"
                    f" {len(messages)}: pass the estimate of exactly these messages"
                )
            return given
        return self._estimator(conversation).estimate(
            messages, system=system, tools=tools, max_tokens=max_tokens
        )

    @staticmethod
    def _extends(
        anchor: _Anchor, msgs: list[Any], system: Any, tools: Any, raw: RequestEstimate
    ) -> bool:
        """Whether the request ``raw`` estimates is the anchored one with messages appended.

        The same message objects, system prompt and tools, which still count what they
        counted then: a message, system prompt or tools list edited in place since shows in
        its count (see :class:`~ctxbudget.request.RequestEstimator` for what it notices).
        """
        k = len(anchor.messages)
        if len(msgs) < k:
            return False
        if msgs[:k] != anchor.messages and not _same_but_cache_marks(msgs[:k], anchor.messages):
            return False
        if raw.per_message[:k] != anchor.per_message:
            return False
        if raw.components.system != anchor.system_tokens:
            return False
        if raw.components.tools != anchor.tools_tokens:
            return False
        return (system is anchor.system or system == anchor.system) and (
            tools is anchor.tools or tools == anchor.tools
        )

    # -- the two calls an agent loop makes

    def estimate(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        max_tokens: int | None = None,
        conversation: Hashable = None,
        raw: RequestEstimate | None = None,
    ) -> CalibratedEstimate:
        """Estimate the next request, anchored on the last report when the history allows.

        Args:
            messages: The request's messages (any supported format).
            system: System prompt kept outside the messages, if any.
            tools: Tool definitions.
            max_tokens: The request's output cap (carried into ``raw.reserved_output``).
            conversation: Key of the conversation (for several agent loops on one model).
            raw: The uncalibrated estimate of exactly this request, when the caller has one
                already (a :class:`~ctxbudget.prune.PruneResult`'s ``estimate``): it is
                used instead of counting the messages again.

        Raises:
            ValueError: ``raw`` counts another number of messages.
        """
        msgs = list(messages)
        with self._lock:
            raw = self._raw(conversation, msgs, system, tools, max_tokens, raw)
            anchor = self._anchors.get(conversation)
            if anchor is not None and self._extends(anchor, msgs, system, tools, raw):
                added_raw = sum(raw.per_message[len(anchor.messages) :])
                factor = self.delta_factor
                added = round(added_raw * factor)
                return CalibratedEstimate(
                    anchor.reported + added, True, anchor.reported, added, factor, raw
                )
            factor = self.cold_factor
            return CalibratedEstimate(round(raw.total * factor), False, None, 0, factor, raw)

    def observe(
        self,
        messages: Sequence[Any],
        usage: Any,
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        conversation: Hashable = None,
        raw: RequestEstimate | None = None,
    ) -> bool:
        """Record what the provider reported for the request made of ``messages``.

        Args:
            messages: The messages of the request that was sent (not including the reply).
            usage: The usage report (``response.usage`` as a dict or SDK object, or an int),
                or an :class:`~ctxbudget.overflow.OverflowInfo` from a rejected request.
            system: System prompt kept outside the messages, as sent.
            tools: Tool definitions, as sent.
            conversation: Key of the conversation.
            raw: The uncalibrated estimate of exactly these messages, if already made.

        Returns:
            ``True`` when a count was read and recorded (``False``: the report had none, or
            a count no estimate of the request can be off by, which is logged and ignored:
            see :func:`plausible_report`).
        """
        reported = reported_input_tokens(usage)
        if reported is None or reported <= 0:
            return False
        msgs = list(messages)
        with self._lock:
            raw = self._raw(conversation, msgs, system, tools, None, raw)
            # An overflow's count is the provider's own, of this request (SPEC F5); a usage
            # report passed through the caller's code may count something else.
            measured = hasattr(usage, "measured_input_tokens")
            # The conversation's anchor, when this request extends it (read once: the check
            # compares the anchored messages and their counts).
            anchor = self._anchors.get(conversation)
            if anchor is not None and not self._extends(anchor, msgs, system, tools, raw):
                anchor = None
            if measured and not plausible_report(reported, raw, self.clamp):
                # A count no estimate of the request can be off by (3 tokens, 10**27): read
                # from some other number of the error, or of another request.
                _log_implausible(reported, raw.total, "the estimate of the refused request")
                return False
            verdict = "believed" if measured else self._plausible(anchor, msgs, raw, reported)
            report = _Anchor(
                msgs,
                reported,
                raw.per_message,
                system,
                tools,
                raw.components.system,
                raw.components.tools,
                raw.components.attachments,
                raw.total,
            )
            if verdict == "implausible":
                self._doubts.pop(conversation, None)
                return False
            if verdict == "off the anchor":
                assert anchor is not None  # (only a report extending the anchor is off it)
                doubt = self._doubts.get(conversation)
                if (
                    anchor.confirmed
                    or doubt is None
                    or doubt.distance() >= anchor.distance()
                    or not self._confirms(anchor, doubt, msgs, raw, reported)
                ):
                    self._doubts[conversation] = report
                    return False
                # The anchor is a first count no report agreed with since, further from its
                # estimate than two reports in a row that agree with each other, at the same
                # distance from it: the anchor was the report to doubt (a count of something
                # else that passed as the request's). Anchored anew; the delta from it
                # teaches nothing.
                self._anchors.pop(conversation, None)
                anchor = None
            elif anchor is not None:
                # Confirmed by a report that adds to it (a repeated one confirms nothing).
                added = sum(raw.per_message[len(anchor.messages) :])
                report.confirmed = anchor.confirmed or added >= self.min_delta
            self._doubts.pop(conversation, None)
            self._learn(anchor, msgs, raw, reported)
            self._anchors[conversation] = report
            self._anchors.move_to_end(conversation)
            while len(self._anchors) > self._max_conversations:
                old, _ = self._anchors.popitem(last=False)
                self._estimators.pop(old, None)
                self._doubts.pop(old, None)
            self._observations += 1
            self._last_reported = reported
            return True

    def _confirms(
        self,
        anchor: _Anchor,
        doubt: _Anchor,
        msgs: list[Any],
        raw: RequestEstimate,
        reported: int,
    ) -> bool:
        """Whether ``reported`` (of the request ``raw`` estimates, which extends ``anchor``)
        confirms the refused report ``doubt``: the request extends it by some messages,
        grew from it by what they account for, and stands as far from what the anchor
        predicts as ``doubt`` did (a run's cumulative usage moves further off each turn)."""
        k = len(doubt.messages)
        if len(msgs) <= k:
            return False
        if msgs[:k] != doubt.messages or raw.per_message[:k] != doubt.per_message:
            return False
        added = sum(raw.per_message[k:])
        if added < self.min_delta or not self._grew_plausibly(doubt, msgs, raw, reported):
            return False
        factor = self.delta_factor
        to_doubt = sum(doubt.per_message[len(anchor.messages) :])
        off = doubt.reported - (anchor.reported + to_doubt * factor)
        drift = (reported - doubt.reported) - added * factor
        return abs(drift) <= _DOUBT_DRIFT * abs(off)

    def _plausible(
        self, anchor: _Anchor | None, msgs: list[Any], raw: RequestEstimate, reported: int
    ) -> Literal["believed", "implausible", "off the anchor"]:
        """Whether ``reported`` can count the request (logged when not; call with the lock
        held): as a whole (:func:`plausible_report`; else ``implausible``), and, given the
        conversation's ``anchor`` the request extends, by how much it grew since (a run's
        cumulative usage grows by the whole request each turn; else ``off the anchor``)."""
        # Reasoning is looked for only when a count below the estimate would otherwise be
        # refused: the scan reads every message (a model_dump of each SDK object) and the
        # tracker runs every turn.
        if not plausible_report(reported, raw, self.clamp) and not (
            reported < raw.total
            and _has_reasoning(msgs)
            and plausible_report(reported, raw, self.clamp, reasoning=True)
        ):
            _log_implausible(reported, raw.total, "the request")
            return "implausible"
        if anchor is None or self._grew_plausibly(anchor, msgs, raw, reported):
            return "believed"
        added = sum(raw.per_message[len(anchor.messages) :])
        _log_implausible(
            reported, anchor.reported + added, "the last report plus the messages added"
        )
        return "off the anchor"

    def _grew_plausibly(
        self, anchor: _Anchor, msgs: list[Any], raw: RequestEstimate, reported: int
    ) -> bool:
        """Whether ``reported`` grew from ``anchor``'s report by what the messages added
        since (``raw`` estimates the request, which extends the anchor's) account for."""
        added = sum(raw.per_message[len(anchor.messages) :])
        grown = reported - anchor.reported
        low, high = self.clamp
        bounds = (low / _PLAUSIBLE_SPREAD, high * _PLAUSIBLE_SPREAD)
        attached = raw.components.attachments > anchor.attachments
        return _within(grown, added, *bounds, attached) or (
            grown < added
            and _has_reasoning(msgs[len(anchor.messages) :])
            and _within(grown, added, *bounds, True)
        )

    def _learn(
        self, anchor: _Anchor | None, msgs: list[Any], raw: RequestEstimate, reported: int
    ) -> None:
        """Add the ratios one report gives (call with the lock held): the delta since the
        conversation's ``anchor`` when the request extends it, and the whole request. A part
        that holds attachments gives none: a PDF of unknown size is charged 30k and may cost
        8k, which as a ratio (0.27) would halve the estimate of every later message. Nor does
        a part that holds a model's reasoning and was counted well below its estimate:
        providers leave earlier turns' reasoning out (a delta of a fifth would pin every later
        estimate at the clamp); one that counts it teaches as any other."""
        if anchor is not None:
            added = sum(raw.per_message[len(anchor.messages) :])
            delta = reported - anchor.reported
            attached = raw.components.attachments > anchor.attachments
            # Reasoning in what was added, counted well below its estimate: the provider
            # left it out (a ratio of a fifth would pin every later estimate at the clamp).
            dropped = delta < _DROPPED_SHARE * added and _has_reasoning(
                msgs[len(anchor.messages) :]
            )
            if added > 0 and added >= self.min_delta and delta > 0 and not attached and not dropped:
                self._delta.append((delta / added, min(float(added), _MAX_DELTA_WEIGHT)))
        # A count well below the estimate of a request that carries reasoning may leave it
        # out, as providers do with earlier turns' (the ratio would make later estimates as
        # low); looked for only then (the scan reads every message).
        dropped = reported < _DROPPED_SHARE * raw.total and _has_reasoning(msgs)
        if raw.total > 0 and not raw.components.attachments and not dropped:
            self._cold.append((reported / raw.total, float(raw.total)))
        self._samples_version += 1

    def observe_overflow(
        self,
        messages: Sequence[Any],
        info: Any,
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        conversation: Hashable = None,
        raw: RequestEstimate | None = None,
    ) -> bool:
        """Record the exact input count an overflow error stated (SPEC F5).

        ``info`` is an :class:`~ctxbudget.overflow.OverflowInfo` (or anything with
        ``measured_input_tokens``). Returns ``False`` when it states no exact count.
        """
        return self.observe(
            messages, info, system=system, tools=tools, conversation=conversation, raw=raw
        )
