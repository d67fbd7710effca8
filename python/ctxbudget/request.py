"""What a request weighs: system + conversation + tool schemas + framing, per message.

:func:`estimate_request` counts a request the way the provider will: the text of every message
(content, tool-call arguments and names, reasoning sent back), the tool schemas, the chat
template's framing (per message, per tool call, per request, the tool-use preamble) and
images/documents by each provider's published rule. Text is counted with
:func:`ctxbudget.estimate_tokens` (one call per text field, no Python work per character), or
with the caller's exact counter.

Framing constants come in one profile per model family (:data:`PROFILES`). The ``deepseek``
profile was fitted on 33 real DeepSeek agent runs (see ``benches/replay_trajectories.py
--fit``); the others follow the providers' documentation where it exists and lean high where it
does not. Calibration from the provider's reported usage (:mod:`ctxbudget.calibration`) corrects
what is left.

:class:`RequestEstimator` keeps a per-message cache so re-estimating after a new message costs
only that message: see its docstring for what counts as a change.

>>> est = estimate_request(
...     [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi!"}],
...     model="gpt-4o", max_tokens=1000)
>>> est.total == est.system + est.conversation + est.tools + est.framing
True
>>> est.reserved_output, est.accuracy.value
(1000, 'estimate')
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ctxbudget._core import DictVersions, same_value, unchanged_prefix, weigh_messages
from ctxbudget.counting import Accuracy
from ctxbudget.formats.common import (
    _genai_to_dict,
    field_columns,
    field_refs,
    message_list,
    unreadable_refs,
)
from ctxbudget.formats.detect import SeenFits, pick_format
from ctxbudget.framing import PROFILES, FramingProfile, _encoding_for, profile_for
from ctxbudget.media import (
    UNKNOWN_DOCUMENT_PAGES,
    UNKNOWN_IMAGE_TOKENS,
    image_size,
    image_tokens,
    media_rule,
)
from ctxbudget.message_counts import (
    _FAST_KEYS,
    _UNCOPIED,
    Counter,
    _as_counter,
    _count_chat_fast,
    _count_message,
    _count_parts,
    _Counted,
    _same_refs,
    _snapshot,
    _surrogate_field,
    _unchanged,
    _Weighed,
)
from ctxbudget.messages import (
    FORMATS,
    Message,
    MessageFormatError,
    normalize_messages,
    normalize_tools,
)
from ctxbudget.tokens import DEFAULT_ENCODING, ENCODINGS, estimate_tokens

__all__ = [
    "PROFILES",
    "UNKNOWN_DOCUMENT_PAGES",
    "UNKNOWN_IMAGE_TOKENS",
    "Accuracy",
    "FramingProfile",
    "RequestComponents",
    "RequestEstimate",
    "RequestEstimator",
    "estimate_request",
    "image_size",
    "image_tokens",
    "profile_for",
]

#: What ``counter=`` accepts: a ``ctxbudget.counting.TokenCounter`` or ``Callable[[str], int]``.
CounterLike = Any


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class RequestComponents:
    """The parts of a request's input, in tokens.

    Attributes:
        system: System/developer prompt text (the ``system=`` argument and system messages).
        conversation: Text and attachments of the other messages.
        tools: Tool schemas, with their template framing.
        framing: Per-message and per-request template tokens.
        attachments: Images/documents/audio inside ``conversation`` (already counted there).
        messages: Per-message totals (text + attachments + that message's framing), one per
            input message.
    """

    system: int
    conversation: int
    tools: int
    framing: int
    attachments: int = 0
    messages: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestEstimate:
    """A request's size, broken down.

    Attributes:
        total: Input tokens: ``system + conversation + tools + framing``.
        components: The breakdown (:class:`RequestComponents`).
        reserved_output: The request's ``max_tokens`` if given, else ``None`` (the budget then
            applies its default reserve).
        accuracy: ``EXACT`` only when every part was counted exactly.
        format: The message format read.
        encoding: The encoding used for estimates.
        profile: The framing profile used.
        model: The model name given, if any.
    """

    total: int
    components: RequestComponents
    reserved_output: int | None = None
    accuracy: Accuracy = Accuracy.ESTIMATE
    format: str = "openai_chat"
    encoding: str = DEFAULT_ENCODING
    profile: str = "default"
    model: str | None = None

    @property
    def system(self) -> int:
        """System prompt tokens."""
        return self.components.system

    @property
    def conversation(self) -> int:
        """Conversation tokens (text and attachments)."""
        return self.components.conversation

    @property
    def tools(self) -> int:
        """Tool schema tokens."""
        return self.components.tools

    @property
    def framing(self) -> int:
        """Template framing tokens."""
        return self.components.framing

    @property
    def per_message(self) -> tuple[int, ...]:
        """Per-message totals."""
        return self.components.messages


class RequestEstimator:
    """Estimates requests of one conversation (one model), re-using per-message counts.

    Re-estimating after messages were appended counts only the new ones. A message counts as
    unchanged when it is the same object as before **and** its content fields are the same
    objects (``content``, ``tool_calls``, ``reasoning_content``, ``refusal`` for Chat Completions;
    ``content``/``arguments``/``output``/``summary``/``input`` for Responses; ``content`` for
    Anthropic; ``parts`` for Gemini). So replacing ``message["content"]`` with a new string
    or list is noticed. Mutating a nested list or dict in place (``message["content"].append
    (...)``, editing one tool call's arguments inside the same ``tool_calls`` list) is not:
    call :meth:`invalidate` after such an edit (or pass a new message object, as the rest of
    ctxbudget does: it never mutates a caller's messages). The system prompt and the tools are
    compared with a copy taken when they were counted, so any edit to them is noticed, in
    place or not, at any depth. LangChain messages are converted to dicts once each (again
    when their ``content`` or ``tool_calls`` is replaced); their fields are still checked
    every turn, about a microsecond or two per message.

    The format, unless given, is detected: once a message shows it (a ``tool_calls`` field, an
    Anthropic block, ...) it holds for the estimator's life, as for one conversation; a list
    that is refused (a :class:`~ctxbudget.messages.MessageFormatError`) decides nothing.

    Thread-safe: one estimator may be shared by several threads (calls are serialised).

    Args:
        model: Model name: picks the framing profile and the encoding.
        encoding: Encoding for estimates (default: the profile's).
        format: Message format (default: detected on first use).
        counter: A :class:`ctxbudget.counting.TokenCounter`, a tokenizer or a
            ``Callable[[str], int]`` used instead of the estimator for text (see
            :func:`estimate_request`).
        profile: A framing profile to use instead of the model's.

    >>> est = RequestEstimator("gpt-4o")
    >>> history = [{"role": "user", "content": "Hello"}]
    >>> a = est.estimate(history)
    >>> b = est.estimate([*history, {"role": "assistant", "content": "Hi! How can I help?"}])
    >>> b.total > a.total
    True
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding: str | None = None,
        format: str | None = None,
        counter: CounterLike = None,
        profile: FramingProfile | None = None,
    ) -> None:
        self.model = model
        self.profile = profile or profile_for(model)
        self.encoding = encoding or _encoding_for(model, self.profile)
        if counter is None and self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}; expected one of {ENCODINGS}")
        if format is not None and format not in FORMATS:
            raise ValueError(f"unknown message format {format!r}; expected one of {FORMATS}")
        self.format: str | None = format
        self.counter = counter
        self._profile_given = profile
        self._counter_fn: Counter | None = None
        self._counter_source: Any = counter
        self._exact_text = False
        if counter is not None:
            self._counter_fn, self._exact_text = _as_counter(counter)
        if (
            self._exact_text
            and profile is None
            and not _counts_the_encoding(counter, self.encoding)
        ):
            # The profile's text and argument factors were fitted to the encoding's estimates
            # of what the model's tokenizer counts: the caller's counter is that count (unless
            # it is the encoding itself, a tiktoken o200k for DeepSeek's o200k-fitted factors).
            self.profile = replace(self.profile, text_factor=1.0, args_factor=1.0)
        self._lock = threading.RLock()
        # Per-message counts and the count of invalidations, shared by share_counts().
        self._by_id: dict[int, tuple[Any, tuple[Any, ...], _Weighed]] = {}
        self._edits = [0]
        self._counted_as: str | None = None  # the format the cached counts were read in
        # LangChain messages and google-genai contents (by id) -> (the object, its fields, the
        # dicts converted from it)
        self._converted: dict[int, tuple[Any, tuple[Any, ...], list[Any]]] = {}
        # Dicts per caller object of the last estimate, when one became several (a LangChain
        # message with two tool results); None when each was one.
        self._spans: list[int] | None = None
        # Set by estimate_request, whose estimator makes one estimate and is dropped: it keeps
        # nothing a next estimate would compare with or re-use.
        self._once = False
        self._reset()

    def _reset(self) -> None:
        self._msgs: list[Any] = []
        self._refs: list[list[Any]] = []
        self._versions = DictVersions()  # of _msgs, when their fields last matched _refs
        self._acc: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 1.0)
        self._per_message: list[int] = []
        self._weighed: list[_Weighed] = []
        self._fits_seen = SeenFits(keeps_decided=True)
        self._seen_edits = self._edits[0]
        # The system prompt and tools last counted: (the object, a deep copy, the count); the
        # system's with the attachment rule it was counted by (it depends on the format read).
        self._tools_seen: tuple[Any, Any, tuple[float, bool]] = (None, _UNCOPIED, (0.0, True))
        self._system_seen: tuple[Any, Any, tuple[int, bool], str] = (None, _UNCOPIED, (0, True), "")

    def invalidate(self, message: Any = None) -> None:
        """Forget cached counts: of one message, or of everything when ``message`` is None.

        Estimators sharing counts (:meth:`share_counts`) forget them too.
        """
        with self._lock:
            if message is None:
                self._by_id.clear()
                self._converted.clear()
            else:
                self._by_id.pop(id(message), None)
                self._converted.pop(id(message), None)  # a LangChain or genai object: convert again
                # The edit may show the format where the list had not yet: read it again.
                self._fits_seen = SeenFits(keeps_decided=True)
            self._edits[0] += 1  # every sharing estimator re-sums from the per-message cache
            if message is None:
                self._reset()

    def _one_shot(self, format: str | None) -> RequestEstimator:
        """An estimator of the same settings, in ``format``, that keeps nothing: for one
        estimate read afresh (its counter is this one's, not loaded again from a file)."""
        new = RequestEstimator(
            self.model,
            encoding=self.encoding,
            format=format,
            counter=self._counter_fn,  # (a caller's encoding name is checked only without one)
            profile=self._profile_given,
        )
        new.counter, new._counter_source = self.counter, self._counter_source
        new._counter_fn, new._exact_text = self._counter_fn, self._exact_text
        new.profile = self.profile
        new._once = True
        return new

    # -- copies and pickles

    def __getstate__(self) -> dict[str, Any]:
        """What rebuilds this estimator: its model, encoding, counter, profile and format (the
        one decided, once a message showed it). Not its counts: they are cached per message
        object, and the messages of an unpickled or copied conversation are other objects,
        counted afresh on the next estimate (once). A copy (``copy.copy``, ``copy.deepcopy``)
        shares no cache with this one, nor counts shared by :meth:`share_counts`."""
        with self._lock:
            return {
                "model": self.model,
                "encoding": self.encoding,
                "format": self.format,
                "counter": self._counter_source,
                "profile": self._profile_given,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- counting helpers

    def _count_fn(self) -> Counter:
        if self._counter_fn is not None:
            return self._counter_fn
        return partial(estimate_tokens, encoding=self.encoding)

    def _count_one(
        self,
        m: Any,
        index: int,
        fmt: str,
        keys: tuple[str, ...],
        count: Counter,
        rule: str,
        ahead: dict[int, tuple[tuple[Any, ...], _Weighed]],
    ) -> _Weighed:
        refs = tuple(map(m.get, keys)) if type(m) is dict else _attr_refs(m, keys)
        key = id(m)
        hit = self._by_id.get(key)
        if hit is not None and hit[0] is m and same_value(hit[1], refs):
            return hit[2]
        early = ahead.get(key)
        # Weighed ahead from the fields it has now? (Else counted again here: the count kept
        # is always that of the fields kept with it.)
        if early is not None and same_value(early[0], refs):
            weighed = early[1]
        else:
            weighed = self._weigh(self._count_new(m, index, fmt, count, rule))
        self._by_id[key] = (m, refs, weighed)
        return weighed

    @staticmethod
    def _count_new(m: Any, index: int, fmt: str, count: Counter, rule: str) -> _Counted:
        try:
            counted = _count_chat_fast(m, index, count, rule) if fmt == "openai_chat" else None
            if counted is None:
                (message,) = _normalize_one(m, index, fmt)
                counted = _count_message(message, count, rule)
        except UnicodeEncodeError as e:
            raise MessageFormatError(
                f"text with a lone surrogate at position {e.start} (no UTF-8 form)",
                index,
                _surrogate_field(m),
                fmt,
            ) from e
        except MessageFormatError as e:
            if e.index is not None:
                raise
            # Found below the message (a block kept as it is): name the message it is in.
            raise MessageFormatError(e.reason, index, e.field, fmt) from e
        return counted

    def _weigh(self, counted: _Counted) -> _Weighed:
        """A message's counts weighed by the profile (``weigh_messages`` in the core weighs
        plain messages of every format the same way, to the last bit)."""
        system, text, args, calls, named, attach, exact = counted
        p = self.profile
        body = text * p.text_factor + args * p.args_factor
        frame = p.per_message + calls * p.per_tool_call + (p.per_name if named else 0.0)
        return (system, body, frame, attach, round(body + attach + frame), exact)

    # -- the estimate

    def estimate(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        max_tokens: int | None = None,
    ) -> RequestEstimate:
        """Estimate one request (see :func:`estimate_request` for the arguments).

        Raises:
            TypeError: ``max_tokens`` is not an ``int`` (or ``None``).
            ValueError: ``max_tokens`` is negative.
        """
        check_max_tokens(max_tokens)
        with self._lock:
            decided = self.format
            try:
                return self._estimate(messages, system, tools, max_tokens)
            except BaseException:
                # A list that was refused decides nothing: the next one is read afresh (its
                # malformed message may be what showed a format).
                self.format = decided
                self._fits_seen = SeenFits(keeps_decided=True)
                raise

    def _estimate(
        self,
        messages: Sequence[Any],
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
    ) -> RequestEstimate:
        msgs = message_list(messages, self.format)
        self._spans = None
        if self._seen_edits != self._edits[0]:
            # A message was invalidated, maybe through an estimator sharing the counts, which
            # cannot reach this one's conversions: convert objects anew.
            self._converted = {}
        if msgs and (_is_langchain_message(msgs[0]) or _is_langchain_message(msgs[-1])):
            try:
                msgs = self._from_objects(msgs, _langchain_dicts())
            except Exception:
                # LangChain's error names the message by its index in the list it was given
                # (one message): give it the whole list, so that it names the right one.
                from ctxbudget.messages import from_langchain

                from_langchain(msgs)
                raise
            self.format = "openai_chat"
        elif (
            self.format in (None, "gemini")
            and msgs
            and (_is_genai_content(msgs[0]) or _is_genai_content(msgs[-1]))
        ):
            msgs = self._from_objects(msgs, _genai_dicts)
            self.format = "gemini"  # their dicts may not show it (a content without parts)
        fmt = self.format
        if fmt is None:
            # narrowed from what the list seen last left, when this one extends it
            fits = self._fits_seen.narrow(msgs)
            fmt = pick_format(fits, _native_format(self.profile.name))
            if len(fits) == 1:  # decisive: keep it
                self.format = fmt
        if fmt != self._counted_as:
            # Counts made reading the messages in another format (an undecided list read in
            # the default format, until a message decided) are not this format's.
            if self._counted_as is not None:
                self._by_id.clear()
                self._edits[0] += 1
            self._counted_as = fmt
        keys = _FAST_KEYS[fmt]
        if self._seen_edits != self._edits[0]:  # a message was invalidated: re-sum
            self._msgs, self._seen_edits = [], self._edits[0]
        k = unchanged_prefix(msgs, self._msgs, self._refs, keys, self._versions)
        if k:  # unchanged prefix: start from its running sums
            acc = list(self._acc)
            per_message = self._per_message
            weighed = self._weighed
            new = msgs[k:]
        else:
            acc = [0.0, 0.0, 0.0, 0.0, 1.0]
            per_message = []
            weighed = []
            new = msgs
        count = self._count_fn()
        weighed_ahead, sums = self._weighed_ahead(new, fmt)
        if sums is not None and not k and not self._by_id:
            # Cold, every message plain and weighed in the core: no per-message loop here.
            return self._cold_from_core(msgs, weighed_ahead, sums, fmt, system, tools, max_tokens)
        ahead = {id(m): w for m, w in zip(new, weighed_ahead, strict=True) if w is not None}
        rule = media_rule(fmt, self.profile.name, self.profile.image_rule, self.model)
        kept = len(weighed)
        try:
            for i, m in enumerate(new, start=k):
                w = self._count_one(m, i, fmt, keys, count, rule, ahead)
                weighed.append(w)
                per_message.append(w[4])
                if w[0]:
                    acc[0] += w[1]
                else:
                    acc[1] += w[1] + w[3]
                    acc[2] += w[3]
                acc[3] += w[2]
                if not w[5]:
                    acc[4] = 0.0
        except BaseException:
            # The lists are the saved prefix's own (appending saves copying them on every
            # turn): a message that fails must leave them as they were.
            del weighed[kept:], per_message[kept:]
            raise
        self._msgs = msgs
        self._acc = tuple(acc)
        self._per_message = per_message
        self._weighed = weighed
        if self._once:  # no next estimate to compare the messages' fields with
            return self._assemble(fmt, system, tools, max_tokens)
        if not k:
            self._forget_absent(msgs)
        columns = field_columns(new, keys) if k else None
        if columns is not None:
            for refs, column in zip(self._refs, columns, strict=True):
                refs.extend(column)
        else:
            self._refs = self._fresh_refs(msgs, keys)
        return self._assemble(fmt, system, tools, max_tokens)

    def _weighed_ahead(
        self, new: list[Any], fmt: str
    ) -> tuple[list[tuple[tuple[Any, ...], _Weighed] | None], tuple[float, float, float] | None]:
        """The plain dicts among ``new`` not counted before (Chat Completions, Anthropic,
        Responses or Gemini), weighed in one call into the core (the strings estimated
        together, on all cores when they are many), each with the content fields it was read
        from; ``None`` for the others, which are left to :meth:`_count_one`. Second, when all
        of ``new`` was weighed: the sums of the weighed values, as :meth:`_estimate` keeps
        them."""
        p = self.profile
        weights = (p.text_factor, p.args_factor, p.per_message, p.per_tool_call, p.per_name)
        if self._counter_fn is not None or not _plain_weights(weights):
            return [None] * len(new), None
        by_id = self._by_id
        todo = new if not by_id else [m for m in new if id(m) not in by_id]
        # With each count, the fields the core read it from: a field replaced since (another
        # thread, a caller's __getitem__ run by the walk) no longer matches in _count_one, and
        # the message is counted again from what it holds then.
        weighed, sums = weigh_messages(todo, fmt, self.encoding, weights)
        if todo is new:
            return weighed, sums
        by_todo = dict(zip(map(id, todo), weighed, strict=True))
        return [by_todo.get(id(m)) for m in new], None

    def _cold_from_core(
        self,
        msgs: list[Any],
        ahead: list[Any],
        sums: tuple[float, float, float],
        fmt: str,
        system: Any,
        tools: Sequence[Any] | None,
        max_tokens: int | None,
    ) -> RequestEstimate:
        """:meth:`_estimate` of a first list whose messages the core weighed, all of them:
        the state the per-message loop would leave, built from the core's results (only the
        counts for an estimator that makes no other estimate)."""
        if self._once:
            self._acc = (sums[0], sums[1], 0.0, sums[2], 1.0)
            self._per_message = [w[4] for _, w in ahead]
            return self._assemble(fmt, system, tools, max_tokens)
        refs, weighed = zip(*ahead, strict=True) if ahead else ((), ())
        entries = zip(msgs, refs, weighed, strict=True)
        self._by_id.update(zip(map(id, msgs), entries, strict=True))
        self._msgs = msgs
        self._acc = (sums[0], sums[1], 0.0, sums[2], 1.0)
        self._per_message = [w[4] for w in weighed]
        self._weighed = list(weighed)
        self._refs = [list(column) for column in zip(*refs, strict=True)] or [
            [] for _ in _FAST_KEYS[fmt]
        ]
        return self._assemble(fmt, system, tools, max_tokens)

    def _from_objects(self, msgs: list[Any], convert: Callable[[Any], list[Any]]) -> list[Any]:
        """Caller objects (LangChain messages, google-genai contents) as the dicts of a format
        the core walks, each converted once: an object seen before, with the same fields,
        gives the same dicts, so the per-message counts and the unchanged prefix apply as they
        do to dicts."""
        if self._once:  # no next estimate to re-use the conversions in
            return self._converted_once(msgs, convert)
        seen = self._converted
        kept: dict[int, tuple[Any, tuple[Any, ...], list[Any]]] = {}
        out: list[Any] = []
        for m in msgs:
            refs = _object_refs(m)
            hit = seen.get(id(m))
            if hit is not None and hit[0] is m and _same_refs(hit[1], refs):
                converted = hit[2]
            else:
                converted = convert(m)
            kept[id(m)] = (m, refs, converted)
            out.extend(converted)
        self._converted = kept
        if len(out) != len(msgs):
            self._spans = [len(kept[id(m)][2]) for m in msgs]
        return out

    def _converted_once(self, msgs: list[Any], convert: Callable[[Any], list[Any]]) -> list[Any]:
        """:meth:`_from_objects` keeping nothing: each object converted, the spans noted."""
        out: list[Any] = []
        spans = []
        for m in msgs:
            converted = convert(m)
            out.extend(converted)
            spans.append(len(converted))
        if len(out) != len(msgs):
            self._spans = spans
        return out

    def _forget_absent(self, msgs: list[Any]) -> None:
        """Drop cached counts of messages no longer in the conversation.

        The cache holds each message it counted; without this, a history rewritten by
        compaction would keep every old message (and its tool outputs) alive for as long as
        the estimator lives. Trimmed only when the cache has grown well past the
        conversation, so a cache shared with another view (see :meth:`share_counts`) keeps
        that view's entries.
        """
        if len(self._by_id) > 2 * len(msgs) + 64:
            present = set(map(id, msgs))
            # In place: an estimator sharing the counts (share_counts) shares the trim too.
            for gone in [i for i in self._by_id if i not in present]:
                del self._by_id[gone]

    def share_counts(self, other: RequestEstimator) -> None:
        """Share per-message counts with ``other``, so each counts a message only once.

        For two views of one conversation (the history and its pruned copy, whose unchanged
        messages are the same objects). Both must count alike: same model profile, encoding
        and counter. Not for estimators used from different threads without a common lock.

        Raises:
            ValueError: The two estimators do not count alike.
        """
        if (
            self.profile != other.profile
            or self.encoding != other.encoding
            or self._counter_source is not other._counter_source
        ):
            raise ValueError("share_counts needs estimators with the same profile and counter")
        self._by_id, self._edits = other._by_id, other._edits
        self._msgs = []

    def _fresh_refs(self, msgs: list[Any], keys: tuple[str, ...]) -> list[list[Any]]:
        columns = field_columns(msgs, keys)  # dicts, or SDK objects read from their __dict__
        if columns is None:
            self._msgs = []  # no fast path for these messages; the per-id cache still works
            return [[] for _ in keys]
        return columns

    def _assemble(
        self, fmt: str, system: Any, tools: Sequence[Any] | None, max_tokens: int | None
    ) -> RequestEstimate:
        p = self.profile
        sys_text, conv, attach, framing, all_exact = self._acc
        exact = self._exact_text and p.exact and all_exact == 1.0
        sys_tokens, sys_exact = self._system_tokens(system, fmt)
        tools_tokens, tools_exact = self._tools_tokens(tools)
        exact = exact and sys_exact and tools_exact
        framing += p.per_request + (p.per_message if sys_tokens else 0.0)
        system_total = round(sys_text + sys_tokens * p.text_factor)
        conversation = round(conv)
        tools_total = round(tools_tokens)
        framing_total = round(framing)
        return RequestEstimate(
            total=system_total + conversation + tools_total + framing_total,
            components=RequestComponents(
                system=system_total,
                conversation=conversation,
                tools=tools_total,
                framing=framing_total,
                attachments=round(attach),
                messages=_per_caller_message(self._per_message, self._spans),
            ),
            reserved_output=max_tokens,
            accuracy=Accuracy.EXACT if exact else Accuracy.ESTIMATE,
            format=fmt,
            encoding=self.encoding,
            profile=p.name,
            model=self.model,
        )

    def _system_tokens(self, system: Any, fmt: str) -> tuple[int, bool]:
        if system is None:
            return 0, True
        ref, snapshot, value, counted_by = self._system_seen
        # An image in the system prompt costs by the rule of the format read: a format
        # decided since (by a later message) makes it count again.
        text_only = isinstance(system, str)
        rule = (
            ""
            if text_only
            else media_rule(fmt, self.profile.name, self.profile.image_rule, self.model)
        )
        if rule == counted_by and _unchanged(system, ref, snapshot):
            return value
        count = self._count_fn()
        try:
            if text_only:
                value = (count(system) if system else 0, True)
            else:
                from ctxbudget.messages import _system_messages

                parts = _system_messages(system)[0].parts
                text, _, _, attach, exact = _count_parts(parts, count, rule)
                value = (text + attach, exact)
        except UnicodeEncodeError as e:
            raise MessageFormatError(
                f"text with a lone surrogate at position {e.start} (no UTF-8 form)",
                None,
                _surrogate_field(system, "system"),
                fmt,
            ) from e
        if not self._once:
            self._system_seen = (system, _snapshot(system), value, rule)
        return value

    def _tools_tokens(self, tools: Sequence[Any] | None) -> tuple[float, bool]:
        if not tools:
            return 0.0, True
        ref, snapshot, value = self._tools_seen
        if _unchanged(tools, ref, snapshot):
            return value
        p = self.profile
        count = self._count_fn()
        specs = normalize_tools(tools)
        total = p.tools_preamble
        for spec in specs:
            if spec.kind != "function":
                raw = spec.raw.model_dump() if hasattr(spec.raw, "model_dump") else spec.raw
                body = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str)
            else:
                body = json.dumps(
                    {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                    },
                    ensure_ascii=False,
                    separators=(",", ":"),
                    default=str,
                )
            total += count(body) * p.args_factor + p.per_tool
        value = (total, False)
        if not self._once:
            self._tools_seen = (tools, _snapshot(tools), value)
        return value


#: Largest weight the core weighs with: its numbers then stay exact integers where Python's
#: would (a total past 2**63 would not fit the core's).
_MAX_WEIGHT = 1e9


def _per_caller_message(counts: Sequence[int], spans: Sequence[int] | None) -> tuple[int, ...]:
    """Per-message counts of the caller's messages: the counts of the dicts each became
    (``spans``: how many; ``None`` when one each) added up."""
    if spans is None:
        return tuple(counts)
    out, start = [], 0
    for n in spans:
        out.append(sum(counts[start : start + n]))
        start += n
    return tuple(out)


def check_max_tokens(max_tokens: object) -> None:
    """A request's output cap is ``None`` or a count (a negative one made room for input)."""
    if max_tokens is None:
        return
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TypeError(f"max_tokens must be an int or None, got {type(max_tokens).__name__}")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must not be negative, got {max_tokens}")


def _plain_weights(weights: tuple[Any, ...]) -> bool:
    """Whether the core weighs messages with ``weights`` as :meth:`RequestEstimator._weigh`
    does: plain ``int`` or ``float`` values of a sane size. Anything else (numpy scalars, which
    compute in their own precision; ``None``; infinities and NaN) is left to Python."""
    return all(type(w) in (int, float) and -_MAX_WEIGHT <= w <= _MAX_WEIGHT for w in weights)


def _attr_refs(m: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    """The objects in a message's content fields: a pydantic model's read from its
    ``__dict__`` (``getattr`` of a field a message type lacks goes through pydantic's slow
    ``__getattr__``, several microseconds a message every turn)."""
    if isinstance(m, Mapping):
        return tuple(m.get(k) for k in keys)
    refs = field_refs(m, keys)
    return refs if refs is not None else unreadable_refs(keys)


def _all_dicts(msgs: Sequence[Any]) -> bool:
    return all(type(m) is dict for m in msgs)


def _object_refs(m: Any) -> tuple[Any, ...]:
    """The fields of a caller's object (or a dict among them) its conversion depends on: all
    of them, read from a pydantic model's ``__dict__`` and its extra fields (``getattr`` of a
    field a message type lacks goes through pydantic's slow ``__getattr__``); a field
    replaced is noticed."""
    fields = m if isinstance(m, dict) else getattr(m, "__dict__", None)
    if not isinstance(fields, dict):
        return (m,)
    extra = None if fields is m else getattr(m, "__pydantic_extra__", None)
    if isinstance(extra, dict) and extra:  # undeclared fields a model allows
        return (*fields.values(), *extra.keys(), *extra.values())
    return tuple(fields.values())


def _is_langchain_message(obj: object) -> bool:
    return type(obj).__module__.startswith("langchain_core") and hasattr(obj, "content")


def _is_genai_content(obj: object) -> bool:
    return type(obj).__module__.startswith("google.genai") and hasattr(obj, "model_dump")


def _langchain_dicts() -> Callable[[Any], list[Any]]:
    """Converts a LangChain message (or a dict among them) to Chat Completions dicts, with
    ``langchain_core`` loaded once for the whole list."""
    from ctxbudget.formats.langchain import _langchain
    from ctxbudget.messages import _langchain_one

    return partial(_langchain_one, lc=_langchain())


def _genai_dicts(m: Any) -> list[Any]:
    """A google-genai content as the dict the Gemini reader reads it as (a dict as it is)."""
    return [_genai_to_dict(m)]


def _native_format(family: str) -> str:
    return {"anthropic": "anthropic", "gemini": "gemini"}.get(family, "openai_chat")


def _normalize_one(m: Any, index: int, fmt: str) -> tuple[Message]:
    try:
        (message,) = normalize_messages([m], fmt)
    except MessageFormatError as exc:
        raise MessageFormatError(
            str(exc).split(": ", 1)[1] if ": " in str(exc) else str(exc), index, exc.field, fmt
        ) from None
    return (message,)


def _counts_the_encoding(counter: Any, encoding: str) -> bool:
    """Whether an exact ``counter`` is the real tokenizer of our estimator's ``encoding`` (a
    ``tiktoken`` ``o200k_base``, or a counter named so), not the model's own."""
    name = getattr(counter, "name", None)
    return isinstance(name, str) and name.lower().startswith(encoding.lower())


def estimate_request(
    messages: Sequence[Any],
    *,
    system: Any = None,
    tools: Sequence[Any] | None = None,
    model: str | None = None,
    encoding: str | None = None,
    max_tokens: int | None = None,
    format: str | None = None,
    counter: CounterLike = None,
) -> RequestEstimate:
    """Estimate the input tokens of one request, broken down by component.

    Args:
        messages: The conversation in any supported format (see :mod:`ctxbudget.messages`),
            or LangChain messages.
        system: A system prompt kept outside ``messages`` (Anthropic ``system``, Gemini
            ``system_instruction``): a string, text blocks or a content.
        tools: Tool definitions in any provider's shape.
        model: Model name: selects the framing profile and the default encoding.
        encoding: Encoding for estimates (overrides the model's).
        max_tokens: The request's output cap, reported as ``reserved_output``.
        format: Message format; detected when ``None``.
        counter: Exact text counter instead of the estimator: a
            :class:`ctxbudget.counting.TokenCounter` (its EXACT/ESTIMATE label is kept), a
            ``tiktoken.Encoding`` or ``tokenizers.Tokenizer`` (exact), or any
            ``Callable[[str], int]`` (taken as exact unless it has ``exact = False``).

    Returns:
        A :class:`RequestEstimate`.

    Raises:
        MessageFormatError: A malformed message (names its index and field).

    For a conversation estimated every turn, keep a :class:`RequestEstimator` instead: it
    does not re-count unchanged messages.

    >>> tools = [{"type": "function",
    ...           "function": {"name": "bash", "parameters": {"type": "object"}}}]
    >>> est = estimate_request(
    ...     [{"role": "user", "content": "List the files."},
    ...      {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...       "function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}]},
    ...      {"role": "tool", "tool_call_id": "c1", "content": "README.md"}],
    ...     tools=tools, model="gpt-4o")
    >>> len(est.per_message), est.tools > 0, est.format
    (3, True, 'openai_chat')
    """
    estimator = RequestEstimator(model, encoding=encoding, format=format, counter=counter)
    estimator._once = True
    return estimator.estimate(messages, system=system, tools=tools, max_tokens=max_tokens)
