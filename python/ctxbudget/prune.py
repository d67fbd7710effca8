"""Pruning: what the model sees of old tool output, without touching what is stored (SPEC D).

:func:`prune` (one call) and :class:`Pruner` (kept across the turns of one conversation,
re-using per-message work) return a **new view** of the conversation. The caller's list and
dicts are never modified; unchanged messages are the caller's own objects (shared, not
copied); changed messages are new objects made by shallow copies, so every block, part and
attachment that is not replaced (base64 images, documents, ...) is the caller's own object.

What is pruned:

1. **Fresh tail** (kept verbatim, SPEC D2). Its size is ``tail_fraction`` (25%) of the usable
   context (window minus the output reserve of the budget), bounded to ``[tail_min,
   tail_max]`` = [2000, 8000] tokens, and extended back to cover the last ``min_turns`` (2)
   turns. A *turn* is a user message and everything up to the next user message; messages
   that only carry tool results (``tool`` messages, Responses ``function_call_output`` items,
   Anthropic/Gemini user messages made of tool results) do not start a turn. The turn floor
   protects at most ``turn_floor_fraction`` (50%) of the usable context: an agent's tool loop
   is often one long turn (every shared DeepSeek run is one user message and up to 350 tool
   steps), and an unbounded floor would make every output of it unprunable, forcing an LLM
   summary where a stub does (the semoss seed kept 87k tokens of "last 2 turns" verbatim).
   ``turn_floor_fraction=None`` makes the floor unbounded (the literal "never fewer than 2
   turns").
2. **Older tool outputs** (before the fresh tail, at least ``min_output_tokens`` = 200 tokens,
   not already stubs) are replaced by stubs, oldest first, once their total passes
   ``threshold``, or whenever the request does not fit the budget. The default threshold is
   10% of the usable context within [2000, 20000] tokens: a stub rewrites a message in the
   middle of the history, which invalidates the provider's prompt cache from that message on;
   re-caching costs about the prefix once, so pruning waits until there is a real gain, and
   then stubs *every* prunable output at once (one cache break per ``threshold`` tokens of
   output that leaves the tail, rather than one per turn). Stubs are the same objects from
   call to call (:class:`Pruner`), so the pruned view is stable and cacheable too. 20000 is
   OpenCode's ``PRUNE_MINIMUM``.
3. **Run start** (SPEC D4). With ``run_start=True``, the tool results after the last assistant
   message are *abandoned*: a run failed after the tools ran (typically because the request
   carrying their results overflowed), and a new run starts. A result the model replied after
   is never abandoned, and without ``run_start`` nothing is: a user message right after a
   result is read with it (browser agents send the screenshot that way). The model never read
   an abandoned result, so nothing later depends on it, and it is the likely cause of the
   failure: every abandoned result of at least ``min_output_tokens`` becomes an "interrupted"
   stub, whatever the threshold and the fresh tail. A tool call left with no result at all
   (followed by a new user turn or another assistant message, or ending the history with
   ``run_start=True``) gets a result saying the run stopped, so pairing is valid. The next
   request is then valid and small.

An output's size counts the base64 images and documents it carries (a computer-use
screenshot: :mod:`ctxbudget.result_size`), which go with its stub (``prune_media``). Stubs
keep the call id and the result's place, name the tool, give the original size in tokens and
the first lines, and say how to get the data again (see :mod:`ctxbudget.stubs`).
The output's tool-call pairing is checked with :func:`ctxbudget.validate_pairing`; a rewrite
that would add a violation raises :class:`~ctxbudget.turns.PairingError` (it cannot happen by
construction; the check is the guarantee).
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from operator import itemgetter
from typing import Any, Literal

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.events import ContextEvent, EventCallback, check_reason, emit
from ctxbudget.formats.common import as_mapping
from ctxbudget.formats.detect import SeenFits, pick_format
from ctxbudget.messages import FORMATS, MessageFormatError, refuse_langchain
from ctxbudget.prune_index import (
    Candidate,
    HistoryIndex,
    MadeStub,
    StubKind,
    extend_index,
    unanswered_calls,
)
from ctxbudget.request import RequestEstimate, RequestEstimator
from ctxbudget.result_size import ResultSizer
from ctxbudget.stubs import (
    history_model,
    missing_text,
    replace_results,
    result_message,
    result_refs,
    results_ref,
    same_refs,
    stub_text,
    with_results,
)
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import (
    MessageInfo,
    ScanCache,
    check_pairing,
    resolve_ids,
    scan_error,
)

__all__ = ["PruneConfig", "PruneResult", "PrunedOutput", "Pruner", "make_budget", "prune"]


@dataclass(frozen=True, slots=True)
class PruneConfig:
    """How much to keep verbatim and when to prune (module docstring: the defaults and why).

    Attributes:
        tail_fraction: Fresh tail as a fraction of the usable context.
        tail_min: Lower bound of the fresh tail, tokens.
        tail_max: Upper bound of the fresh tail, tokens.
        min_turns: The fresh tail covers at least this many last turns (0: no floor).
        turn_floor_fraction: The turn floor protects at most this fraction of the usable
            context (``None``: no bound).
        threshold: Prune old outputs once their total passes this many tokens (``None``:
            10% of the usable context within [2000, 20000]). Ignored when the request does
            not fit.
        min_output_tokens: Outputs smaller than this are never stubbed (a stub costs ~80).
        head_chars: Characters of the output's beginning kept in its stub.
        head_lines: Lines of the output's beginning kept in its stub.
        prune_media: Images and documents a tool returned (base64: a computer-use
            screenshot, a rendered page) count in its output's size and go with its stub
            (the stub says how many). ``False``: outputs are weighed by their text, and a
            stub keeps them (an output that is only a screenshot is then never stubbed).
    """

    tail_fraction: float = 0.25
    tail_min: int = 2_000
    tail_max: int = 8_000
    min_turns: int = 2
    turn_floor_fraction: float | None = 0.5
    threshold: int | None = None
    min_output_tokens: int = 200
    head_chars: int = 200
    head_lines: int = 4
    prune_media: bool = True

    def __post_init__(self) -> None:
        for name in ("tail_min", "tail_max", "min_turns", "min_output_tokens", "head_chars",
                     "head_lines", "threshold"):  # fmt: skip
            value = getattr(self, name)
            if value is None and name == "threshold":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
            if not 0 <= value < 1 << 62:
                raise ValueError(f"{name} must be within [0, 2**62), got {value}")
        if not isinstance(self.prune_media, bool):
            raise TypeError(f"prune_media must be a bool, not {type(self.prune_media).__name__}")
        if not 0 <= self.tail_fraction <= 1:
            raise ValueError("tail_fraction must be within [0, 1]")
        if not 0 <= self.tail_min <= self.tail_max:
            raise ValueError("need 0 <= tail_min <= tail_max")
        if self.min_turns < 0 or self.min_output_tokens < 0:
            raise ValueError("min_turns and min_output_tokens must not be negative")
        if self.turn_floor_fraction is not None and not 0 <= self.turn_floor_fraction <= 1:
            raise ValueError("turn_floor_fraction must be within [0, 1]")

    def tail_tokens(self, usable: int) -> int:
        """Fresh-tail size for a usable context (tokens).

        >>> PruneConfig().tail_tokens(12_000), PruneConfig().tail_tokens(150_000)
        (3000, 8000)
        """
        return min(self.tail_max, max(self.tail_min, round(usable * self.tail_fraction)))

    def threshold_tokens(self, usable: int) -> int:
        """The pruning threshold for a usable context (tokens).

        >>> PruneConfig().threshold_tokens(12_000), PruneConfig().threshold_tokens(150_000)
        (2000, 15000)
        """
        if self.threshold is not None:
            return self.threshold
        return min(20_000, max(2_000, usable // 10))


@dataclass(frozen=True, slots=True)
class PrunedOutput:
    """One tool output replaced by a stub (or one result added for a call that had none).

    Attributes:
        index: Position in the input of the message holding the result (for ``missing``:
            of the message holding the call).
        call_id: The tool-call id (kept by the stub).
        tool: The tool name, when known.
        tokens: Size of the original output text, tokens (0 for ``missing``).
        stub_tokens: Size of the stub text, tokens.
        kind: ``old`` (before the fresh tail), ``interrupted`` (abandoned by a failed run) or
            ``missing`` (a result added for a call that had none).
        slot: Which result of its message it is (the block or part index; 0 for messages
            that carry one result, and for ``missing``).
        stub: The stub's text (``""`` for ``missing``).
    """

    index: int
    call_id: str
    tool: str | None
    tokens: int
    stub_tokens: int
    kind: StubKind
    slot: int = 0
    stub: str = ""


#: What :meth:`Pruner._stubbed` did to one result: the fields of a :class:`PrunedOutput`
#: after its index.
_Done = tuple[str, str | None, int, int, StubKind, int, str]


@dataclass(frozen=True, slots=True)
class PruneResult:
    """The pruned view of a conversation.

    Attributes:
        messages: A new list. Unchanged messages are the caller's objects; changed ones are
            new objects.
        pruned: What was stubbed or added, in conversation order.
        tokens_before: Request input tokens before pruning.
        tokens_after: Request input tokens of :attr:`messages`.
        fits: The pruned request fits the budget.
        tail_start: Index (in the input) where the fresh tail starts.
        estimate: The :class:`~ctxbudget.request.RequestEstimate` of :attr:`messages`.
        event: The event emitted, or ``None`` when no new stub was made (a :class:`Pruner`
            re-applying the stubs of its previous call emits nothing: the view, and the
            provider's prompt cache, did not change).
        positions: Where each of :attr:`messages` was in the input, ``None`` for a message
            added (a result for a lost call in a message of its own); ``None`` when no
            message was added: the view is the input's messages, index for index (some of
            them stubbed copies).
    """

    messages: list[Any]
    pruned: tuple[PrunedOutput, ...]
    tokens_before: int
    tokens_after: int
    fits: bool
    tail_start: int
    estimate: RequestEstimate
    event: ContextEvent | None = None
    positions: tuple[int | None, ...] | None = None

    @property
    def changed(self) -> bool:
        """Something was stubbed or added."""
        return bool(self.pruned)


def _carried(key: tuple[Any, ...]) -> int | None:
    """The id of the caller's message a ``("carry", ...)`` key of ``Pruner._inserted`` is
    for (``None`` for the other keys)."""
    return key[1] if key[0] == "carry" else None


def _after_gemini_turn(infos: Sequence[MessageInfo], j: int) -> int:
    """Where the results of a Gemini model turn's lost calls go, from ``j`` (the message after
    the call's). Responses without ids answer the calls of their turn (consecutive model
    messages, as ``resolve_ids`` reads them) by name in order: the added results go past the
    whole turn (between two of its messages, they would split it, and a real response after
    it would answer another call, or none), and into the last message of the responses that
    follow, after them (before, one would take over a real one's call)."""
    n = len(infos)
    while j < n and infos[j].kind == "assistant":
        j += 1
    while j + 1 < n and infos[j].kind == "results" and infos[j + 1].kind == "results":
        j += 1
    return j


def make_budget(
    window: int | None, budget: ContextWindowBudget | None, model: str | None
) -> ContextWindowBudget:
    """The budget given, else one for ``window`` (with the model's max output if registered)."""
    if budget is not None:
        return budget
    if window is None:
        raise TypeError("pass window= or budget=")
    if model:
        return ContextWindowBudget.for_model(model, window=window)
    return ContextWindowBudget(window)


def fresh_tail(
    per_message: Sequence[int], users: Sequence[int], cfg: PruneConfig, usable: int
) -> int:
    """Where the fresh tail starts: the last ``cfg.tail_tokens(usable)`` tokens of messages
    (``per_message``), extended back to the ``cfg.min_turns``-th last user message (``users``:
    their indices), as long as that protects at most ``cfg.turn_floor_fraction`` of
    ``usable``."""
    n = len(per_message)
    tail_budget = cfg.tail_tokens(usable)
    tail = n
    acc = 0
    for i in range(n - 1, -1, -1):
        acc += per_message[i]
        if acc > tail_budget and tail < n:
            break
        tail = i
    if cfg.min_turns <= 0 or tail == 0:
        return tail
    floor = users[-cfg.min_turns] if len(users) >= cfg.min_turns else 0
    if floor >= tail:
        return tail
    if cfg.turn_floor_fraction is None:
        return floor
    # Move the floor forward past the fewest messages that bring what it protects under the
    # cap (the running sums never decrease: a bisection finds them). Token counts are whole:
    # protecting at most the cap is protecting at most its floor, in integers (no rounding).
    excess = sum(per_message[floor:]) - math.floor(usable * cfg.turn_floor_fraction)
    if excess <= 0:
        return floor
    dropped = list(accumulate(islice(per_message, floor, tail)))
    return min(tail, floor + 1 + bisect_left(dropped, excess))


class Pruner:
    """Prunes one conversation turn after turn, re-using the work on unchanged messages.

    Per-message token counts (two :class:`~ctxbudget.request.RequestEstimator`: one for the
    caller's history, one for the pruned view), message scans, output sizes and the stub
    messages themselves are kept per message object, so a call after one appended message
    costs about that message, and the stubs are the same objects every time. Thread-safe
    (calls are serialised).

    Args:
        window: Context window in tokens (or give ``budget``).
        budget: The budget to check against (default: ``window`` with the model's reserve).
        model: Model name: framing profile, encoding, max output.
        format: Message format (detected on first use when ``None``).
        config: Tail, threshold and stub settings.
        encoding: Encoding for estimates (default: the model's).
        counter: Exact text counter for the estimates (see
            :func:`~ctxbudget.request.estimate_request`).
        on_event: Called with every :class:`~ctxbudget.events.ContextEvent`.
    """

    def __init__(
        self,
        window: int | None = None,
        *,
        budget: ContextWindowBudget | None = None,
        model: str | None = None,
        format: str | None = None,
        config: PruneConfig | None = None,
        encoding: str | None = None,
        counter: Any = None,
        on_event: EventCallback | None = None,
    ) -> None:
        self.budget = make_budget(window, budget, model)
        self.model = model
        if format is not None and format not in FORMATS:
            raise ValueError(f"unknown message format {format!r}; expected one of {FORMATS}")
        self.format: str | None = format
        self.config = config or PruneConfig()
        self.on_event = on_event
        self._history_est = RequestEstimator(model, encoding=encoding, counter=counter)
        self._view_est = RequestEstimator(model, encoding=encoding, counter=counter)
        # The pruned view shares every unchanged message with the history: count each once.
        self._view_est.share_counts(self._history_est)
        self.encoding = self._history_est.encoding
        self._counter = counter
        self._sizer = ResultSizer(self._history_est, media=self.config.prune_media)
        # Reentrant: an on_event callback may call back into this Pruner.
        self._lock = threading.RLock()
        self._scan: ScanCache | None = None
        self._view_scan: ScanCache | None = None
        # Before a message decides the format: the formats the last list fitted, and the
        # scan caches of the format it was read in.
        self._fits_seen = SeenFits(keeps_decided=True)
        self._undecided: dict[str, tuple[ScanCache, ScanCache]] = {}
        # (id(message), slot) -> (message, its results field, tokens, text, media pieces)
        self._sizes: dict[tuple[int, int], tuple[Any, Any, int, str, int]] = {}
        # Results the last view added for calls that had none, and the calls they answer.
        self._inserted: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
        self._lost: frozenset[tuple[int, str]] = frozenset()
        self._index: HistoryIndex | None = None
        self._stubs: dict[
            tuple[int, tuple[tuple[int, StubKind, str | None, str | None], ...]],
            tuple[Any, Any, Any, tuple[_Done, ...]],
        ] = {}
        # The old outputs the last call stubbed, and what it made of them (see _old_stubs).
        self._old_seen: tuple[list[Candidate], dict[int, dict[int, tuple[StubKind, int, str]]]]
        self._old_seen = ([], {})
        # The SDK objects the last view's messages made here became (see _in_history_type).
        self._typed: dict[int, tuple[Any, Any]] = {}

    def prune(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        max_tokens: int | None = None,
        reason: str = "proactive",
        run_start: bool = False,
    ) -> PruneResult:
        """Prune ``messages`` (see :func:`prune` for the arguments)."""
        why = check_reason(reason)
        with self._lock:
            return self._prune(messages, system, tools, max_tokens, why, run_start)

    def invalidate(self, message: Any = None) -> None:
        """Forget what was read of ``message`` (or of every message, when it is None) after
        editing it in place below its fields (``message["content"].append(...)``, see
        :meth:`~ctxbudget.request.RequestEstimator.invalidate`): its count, its outputs'
        sizes and stubs, and the reading of the list, which the next call makes anew. What
        the format was found to be stays."""
        with self._lock:
            self._history_est.invalidate(message)  # the view's estimator shares its counts
            gone = None if message is None else id(message)
            self._sizes = {k: v for k, v in self._sizes.items() if gone not in (None, k[0])}
            self._stubs = {k: v for k, v in self._stubs.items() if gone not in (None, k[0])}
            # a message carrying added results is rebuilt from what the caller's holds now
            self._inserted = {
                k: v for k, v in self._inserted.items() if gone not in (None, _carried(k))
            }
            if message is None:
                self._lost, self._typed = frozenset(), {}
            self._scan = self._view_scan = None
            self._undecided.clear()
            self._fits_seen = SeenFits(keeps_decided=True)
            self._index = None
            self._old_seen = ([], {})

    # -- copies and pickles

    def __getstate__(self) -> dict[str, Any]:
        """What rebuilds this pruner: its budget, model, format (the one decided, once a
        message showed it), settings, encoding, counter and event callback. Not what it read
        of the messages (kept per message object): an unpickled or copied pruner reads its
        first list afresh, and prunes it as a new pruner would (the same stubs, made anew)."""
        with self._lock:
            return {
                "budget": self.budget,
                "model": self.model,
                "format": self.format,
                "config": self.config,
                "encoding": self.encoding,
                "counter": self._counter,
                "on_event": self.on_event,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- the steps

    def _scanners(self, msgs: list[Any]) -> tuple[str, ScanCache, ScanCache]:
        fmt = self.format
        if fmt is None:
            fits = self._fits_seen.narrow(msgs)
            if len(fits) != 1:  # not decisive yet: do not lock it in
                fmt = pick_format(fits, "openai_chat")
                if fmt not in self._undecided:
                    self._undecided[fmt] = (ScanCache(fmt), ScanCache(fmt))
                return fmt, *self._undecided[fmt]
            fmt = self.format = next(iter(fits))
            self._undecided.clear()
        if self._scan is None or self._view_scan is None:
            self._scan = ScanCache(fmt)
            self._view_scan = ScanCache(fmt)
            self._history_est.format = fmt
            self._view_est.format = fmt
        return fmt, self._scan, self._view_scan

    def _size(self, fmt: str, m: Any, slot: int) -> tuple[int, str]:
        """(tokens, text) of one tool output (its media included: :class:`ResultSizer`),
        cached per message object and content."""
        key = (id(m), slot)
        refs = result_refs(fmt, m, (slot,))
        hit = self._sizes.get(key)
        if hit is not None and hit[0] is m and same_refs(hit[1], refs):
            return hit[2], hit[3]
        tokens, text, media = self._sizer.size(fmt, m, slot)
        self._sizes[key] = (m, refs, tokens, text, media)
        return tokens, text

    def _media(self, m: Any, slot: int) -> int:
        """The media pieces of an output :meth:`_size` weighed."""
        hit = self._sizes.get((id(m), slot))
        return hit[4] if hit is not None and hit[0] is m else 0

    def _prune(
        self,
        messages: Sequence[Any],
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
        reason: Literal["proactive", "retry", "overflow"],
        run_start: bool,
    ) -> PruneResult:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise MessageFormatError("expected a list of messages", None, "messages", None)
        msgs = list(messages)
        refuse_langchain(msgs)
        fmt, scanner, view_scanner = self._scanners(msgs)
        try:
            infos = scanner.scan(msgs)
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            raise scan_error(msgs, fmt, exc) from exc
        if fmt == "gemini":
            infos = scanner.resolved(infos)
        before = self._history_est.estimate(msgs, system=system, tools=tools, max_tokens=max_tokens)
        per_message = before.per_message
        cfg = self.config
        usable = max(0, self.budget.available(max_tokens))
        fits_before = self.budget.fits(before, max_tokens=max_tokens)
        n = len(msgs)

        index, earlier = extend_index(
            self._index, scanner, fmt, msgs, infos,
            lambda m, slot: self._size(fmt, m, slot), cfg.min_output_tokens, cfg.head_chars,
        )  # fmt: skip
        tail = fresh_tail(per_message, index.users, cfg, usable)

        # -- abandoned results (D4): at a run start, the results after the last assistant
        # message (without run_start, a user message after a result is read with it: a
        # screenshot sent after the tool call, say)
        abandoned: set[int] = set()
        if run_start:
            for i in range(n - 1, -1, -1):
                kind = infos[i].kind
                if kind == "assistant":
                    break  # the model replied after everything before: nothing there is unread
                if kind == "results":
                    abandoned.add(i)

        # -- what to stub: (slot -> (kind, tokens, text)) per message index
        stubs: dict[int, dict[int, tuple[StubKind, int, str]]] = {}
        old_total = 0
        old: list[Candidate] = []
        if abandoned:
            for c in index.candidates:
                i = c[0]
                if i in abandoned:
                    stubs.setdefault(i, {})[c[1]] = ("interrupted", c[2], c[3])
                elif i < tail:
                    old.append(c)
                    old_total += c[2]
        else:  # the candidates are in conversation order: those before the tail lead
            old = index.candidates[: bisect_left(index.candidates, tail, key=itemgetter(0))]
            old_total = sum(map(itemgetter(2), old))
        if old and (old_total > cfg.threshold_tokens(usable) or not fits_before):
            if stubs:  # abandoned results are in it
                for i, slot, tokens, text in old:
                    stubs.setdefault(i, {})[slot] = ("old", tokens, text)
            else:
                stubs = self._old_stubs(old)
        else:
            self._old_seen = ([], {})  # holds the outputs' texts: not past their use

        # -- calls without any result (D4): the conversation moved on without them
        missing = unanswered_calls(index, run_start)
        self._trim_caches(msgs)

        if not stubs and not missing:
            # The view is the history: no stub or added result of an earlier view is in it.
            self._index, self._lost, self._inserted = index, frozenset(), {}
            return PruneResult(msgs, (), before.total, before.total, fits_before, tail, before)
        return self._rewrite(
            fmt, msgs, infos, view_scanner, index, earlier, stubs, missing, before, tail,
            system, tools, max_tokens, reason,
        )  # fmt: skip

    def _old_stubs(self, old: list[Candidate]) -> dict[int, dict[int, tuple[StubKind, int, str]]]:
        """What to stub for the old outputs ``old`` (slot -> ("old", tokens, text) per message
        index). Turn after turn the old outputs are the last call's and a few more (the same
        candidates, equal at least, in the same order: the map depends on nothing else), so
        the last map is copied and only the new ones are added. Its per-message dicts are the
        last call's own objects, which lets :meth:`_rewrite` see by identity that a stub it
        made then is still wanted."""
        seen, seen_map = self._old_seen
        k = len(seen)
        reuse = k > 0 and old[:k] == seen
        stubs = dict(seen_map) if reuse else {}
        for i, slot, tokens, text in old[k:] if reuse else old:
            if i in stubs and stubs[i] is seen_map.get(i):
                stubs[i] = dict(stubs[i])  # never change a dict the last map handed out
            stubs.setdefault(i, {})[slot] = ("old", tokens, text)
        self._old_seen = (old, stubs)
        return stubs

    def _stubbed(
        self,
        fmt: str,
        m: Any,
        info: MessageInfo,
        slots: dict[int, tuple[StubKind, int, str]],
        names: dict[str, str],
    ) -> tuple[Any, tuple[_Done, ...], bool]:
        """(new message, what was stubbed, made now) for one message, cached per object.

        An output whose stub is not smaller than it (a short output of dense tokens, base64
        or CJK, whose head is most of it) is kept: stubbing it would grow the request and
        lose the data. When no slot is left, the message is ``m`` itself, not a copy."""
        ids = {slot: (rid, rname) for rid, rname, slot in info.results}
        # The stub names the call (its id, made up for Gemini without ids, may move) and the
        # tool, which the call's message gives: both are part of what the stub depends on.
        calls = tuple(
            (slot, v[0], ids[slot][0], ids[slot][1] or names.get(ids[slot][0] or ""))
            for slot, v in sorted(slots.items())
        )
        key = (id(m), calls)
        refs = result_refs(fmt, m, sorted(slots))
        hit = self._stubs.get(key)
        if hit is not None and hit[0] is m and same_refs(hit[1], refs):
            return hit[2], hit[3], False
        cfg = self.config
        texts: dict[int, str] = {}
        done: list[_Done] = []
        for slot, (kind, tokens, text) in sorted(slots.items()):
            rid, rname = ids[slot]
            tool = rname or names.get(rid or "")
            stub = stub_text(
                tool,
                text,
                tokens,
                interrupted=kind == "interrupted",
                head_chars=cfg.head_chars,
                head_lines=cfg.head_lines,
                media=self._media(m, slot),
            )
            stub_tokens = estimate_tokens(stub, self.encoding)
            if stub_tokens >= tokens:
                continue
            texts[slot] = stub
            done.append((rid or "", tool, tokens, stub_tokens, kind, slot, stub))
        new = replace_results(fmt, m, texts, drop_media=cfg.prune_media) if texts else m
        self._stubs[key] = (m, refs, new, tuple(done))
        return new, tuple(done), bool(texts)

    def _rewrite(
        self,
        fmt: str,
        msgs: list[Any],
        infos: list[MessageInfo],
        view_scanner: ScanCache,
        index: HistoryIndex,
        earlier: dict[int, MadeStub],
        stubs: dict[int, dict[int, tuple[StubKind, int, str]]],
        missing: dict[int, list[tuple[str, str]]],
        before: RequestEstimate,
        tail: int,
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
        reason: Literal["proactive", "retry", "overflow"],
    ) -> PruneResult:
        pruned: list[PrunedOutput] = []
        # a view that differs from the previous call's: new stubs, or results added for other
        # calls (by place: the same id may be called, and lost, twice)
        lost = frozenset((i, cid) for i, calls in missing.items() for cid, _ in calls)
        changed = lost != self._lost
        made_now: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
        n = len(msgs)
        base = list(msgs)
        # the last call's stubs of messages it read, unchanged, when decided the same way
        for i, slots in sorted(stubs.items()):
            made = earlier.get(i)
            if made is None or (made[0] is not slots and made[0] != slots):
                new, done, fresh = self._stubbed(fmt, msgs[i], infos[i], slots, index.names)
                changed = changed or fresh
                made = (slots, new, tuple(PrunedOutput(i, *d) for d in done))
            index.stubs[i] = made
            base[i] = made[1]
            pruned.extend(made[2])
        merge, insert, missed = self._placed_results(fmt, msgs, infos, missing, made_now)
        for j, blocks in merge.items():
            base[j] = self._inserted_once(made_now, fmt, base[j], blocks)
        # positions[k]: the index message k of the view had in msgs (None: a new message)
        out = base
        positions: list[int | None] = list(range(n))
        if insert:
            out, positions, done_to = [], [], 0
            for j in sorted(insert):
                out += base[done_to:j]
                positions += range(done_to, j)
                out += insert[j]
                positions += [None] * len(insert[j])
                done_to = j
            out += base[done_to:]
            positions += range(done_to, n)
        out = self._in_history_type(out, msgs)
        if missed:
            pruned = sorted([*pruned, *missed], key=lambda p: p.index)
        if changed:  # stubs made earlier were checked when they were made
            view_infos = view_scanner.scan(out)
            if fmt == "gemini":  # made-up ids name the indices the messages had in msgs
                view_infos = resolve_ids(view_infos, positions=positions)
            check_pairing(infos, view_infos, "pruning")
        # Kept only once the view is checked: a rejected rewrite is checked again next time.
        self._lost, self._inserted, self._index = lost, made_now, index
        after = self._view_est.estimate(out, system=system, tools=tools, max_tokens=max_tokens)
        fits = self.budget.fits(after, max_tokens=max_tokens)
        where = tuple(positions) if insert else None
        if not changed:
            return PruneResult(
                out, tuple(pruned), before.total, after.total, fits, tail, after, None, where
            )
        event = ContextEvent(
            action="prune",
            reason=reason,
            tokens_before=before.total,
            tokens_after=after.total,
            messages_before=n,
            messages_after=len(out),
            fits=fits,
            stubbed=len(pruned),
            interrupted=sum(1 for p in pruned if p.kind != "old"),
            components=after.components,
        )
        emit(event, self.on_event)
        return PruneResult(
            out, tuple(pruned), before.total, after.total, fits, tail, after, event, where
        )

    def _placed_results(
        self,
        fmt: str,
        msgs: list[Any],
        infos: list[MessageInfo],
        missing: dict[int, list[tuple[str, str]]],
        made_now: dict[tuple[Any, ...], tuple[Any, Any, Any]],
    ) -> tuple[dict[int, list[Any]], dict[int, list[Any]], list[PrunedOutput]]:
        """Results for the calls in ``missing`` and where they go: (blocks to merge into
        message ``j``, new messages to put before message ``j`` (``len(infos)``: at the
        end), what was added). Chat: tool messages after the results that already follow
        the call; Responses: output items right after the call, of the type that answers
        the call item's type; Anthropic and Gemini: one message of result blocks, merged
        into the next message when it is a user message or carries results."""
        n = len(infos)
        merge: dict[int, list[Any]] = {}
        insert: dict[int, list[Any]] = {}
        wrapped: dict[int, list[Any]] = {}  # Anthropic, Gemini: blocks of a message to insert
        missed: list[PrunedOutput] = []
        for i in sorted(missing):
            blocks: list[Any] = []
            # a Responses item is one call: its type says which output answers it
            call_type = _item_type(msgs[i]) if fmt == "openai_responses" else None
            for cid, name in missing[i]:
                text = missing_text(name)
                stub_tokens = estimate_tokens(text, self.encoding)
                missed.append(PrunedOutput(i, cid, name, 0, stub_tokens, "missing"))
                key = ("result", fmt, cid, name, call_type)
                block = (self._inserted.get(key) or made_now.get(key) or (None, None, None))[1]
                if block is None:
                    block = result_message(fmt, cid, name, text, call_type)
                made_now[key] = (None, block, None)
                blocks.append(block)
            j = i + 1
            if fmt == "gemini":
                j = _after_gemini_turn(infos, j)
            elif fmt == "anthropic":  # past the model's turn: Anthropic joins its messages
                while j < n and infos[j].kind == "assistant":
                    j += 1
            if fmt in ("anthropic", "gemini"):
                into = merge if j < n and infos[j].kind in ("results", "user") else wrapped
                into.setdefault(j, []).extend(blocks)
                continue
            if fmt == "openai_chat":
                while j < n and infos[j].kind == "results":
                    j += 1
            insert.setdefault(j, []).extend(blocks)
        for j, blocks in wrapped.items():  # one message of result blocks
            insert[j] = [self._inserted_once(made_now, fmt, None, blocks)]
        return merge, insert, missed

    def _inserted_once(
        self,
        made_now: dict[tuple[Any, ...], tuple[Any, Any, Any]],
        fmt: str,
        message: Any | None,
        blocks: list[dict[str, Any]],
    ) -> Any:
        """``with_results(fmt, message, blocks)``, the same object as the previous call's for
        the same message and blocks (a stable view: the provider's prompt cache, and the
        guard's pairing check, re-read nothing)."""
        key = ("carry", id(message), tuple(id(b) for b in blocks))
        ref = None if message is None else results_ref(fmt, message)
        hit = self._inserted.get(key)
        if hit is not None and hit[0] is message and hit[2] is ref:
            made = hit[1]
        else:
            made = with_results(fmt, message, blocks)
        made_now[key] = (message, made, ref)
        return made

    def _in_history_type(self, out: list[Any], msgs: list[Any]) -> list[Any]:
        """``in_history_type(out, msgs)``, each message made here turned into the history's
        class once: a google-genai ``Content`` history gets the same stub objects turn after
        turn (a stable view; what reads the view by object, the guard's pairing check and
        its stub caches, does not read them again), as a history of dicts does."""
        validate = history_model(msgs)
        if validate is None:
            return out
        typed: dict[int, tuple[Any, Any]] = {}
        made = []
        for m in out:
            if isinstance(m, Mapping):
                hit = self._typed.get(id(m))
                obj = hit[1] if hit is not None and hit[0] is m else validate(m)
                typed[id(m)] = (m, obj)
                m = obj
            made.append(m)
        self._typed = typed
        return made

    def _trim_caches(self, msgs: list[Any]) -> None:
        """Forget sizes and stubs of messages no longer in the conversation."""
        if len(self._sizes) + len(self._stubs) <= 2 * len(msgs) + 64:
            return
        present = set(map(id, msgs))
        self._sizes = {k: v for k, v in self._sizes.items() if k[0] in present}
        self._stubs = {k: v for k, v in self._stubs.items() if k[0] in present}


def _item_type(message: Any) -> str | None:
    """The ``type`` of a Responses item (a dict or an SDK object)."""
    kind = (as_mapping(message) or {}).get("type")
    return kind if isinstance(kind, str) else None


def prune(
    messages: Sequence[Any],
    *,
    window: int | None = None,
    tools: Sequence[Any] | None = None,
    system: Any = None,
    model: str | None = None,
    format: str | None = None,
    max_tokens: int | None = None,
    budget: ContextWindowBudget | None = None,
    config: PruneConfig | None = None,
    reason: str = "proactive",
    run_start: bool = False,
    encoding: str | None = None,
    counter: Any = None,
    on_event: EventCallback | None = None,
) -> PruneResult:
    """Stub old tool outputs so the request fits, without touching the caller's history.

    One-shot form of :class:`Pruner` (which an agent loop should keep instead: it re-uses
    the work on unchanged messages). The module docstring explains the fresh tail, the
    threshold and the run-start handling.

    Args:
        messages: The conversation, in any supported format. Never modified.
        window: Context window in tokens (or give ``budget``).
        tools: Tool definitions sent with the request (counted).
        system: A system prompt kept outside ``messages`` (counted).
        model: Model name (framing, encoding, max output for the reserve).
        format: Message format; detected when ``None``.
        max_tokens: The request's output cap (the budget's reserve uses it).
        budget: The budget to check against (default: ``window``, reserve rule of SPEC B2).
        config: Tail, threshold and stub settings (:class:`PruneConfig`).
        reason: ``proactive``, ``retry`` or ``overflow``; recorded in the event.
        run_start: The history is about to start a new run: tool results (and calls) that
            end it were left unanswered by a failed run (SPEC D4).
        encoding: Encoding for estimates.
        counter: Exact text counter for the estimates.
        on_event: Called with the :class:`~ctxbudget.events.ContextEvent` (also logged on
            ``ctxbudget.prune``) when something was pruned.

    Returns:
        A :class:`PruneResult`; ``.fits`` says whether the request now fits (when it does
        not, compact: :func:`ctxbudget.compact.compact`).

    Raises:
        MessageFormatError: Malformed messages.
        PairingError: A rewrite would break tool-call pairing (never expected).

    >>> history = [
    ...     {"role": "user", "content": "Find the bug."},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "bash", "arguments": '{"command": "cat big.log"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "ERROR disk full\\n" * 3000},
    ...     {"role": "assistant", "content": "The disk is full."},
    ...     {"role": "user", "content": "Thanks. Now check the config."},
    ...     {"role": "assistant", "content": "Done: it is fine."},
    ...     {"role": "user", "content": "And the cron jobs?"},
    ... ]
    >>> result = prune(history, window=16_000)
    >>> result.tokens_before > result.tokens_after, result.fits
    (True, True)
    >>> [(p.call_id, p.tool, p.kind) for p in result.pruned]
    [('c1', 'bash', 'old')]
    >>> result.messages[2]["content"].split(" returned")[0]
    '[ctxbudget: tool output pruned] bash'
    >>> history[2]["content"][:15], result.messages[0] is history[0]
    ('ERROR disk full', True)
    """
    pruner = Pruner(
        window,
        budget=budget,
        model=model,
        format=format,
        config=config,
        encoding=encoding,
        counter=counter,
        on_event=on_event,
    )
    return pruner.prune(
        messages,
        system=system,
        tools=tools,
        max_tokens=max_tokens,
        reason=reason,
        run_start=run_start,
    )
