"""Telling a message list's format from its shape, for :func:`ctxbudget.messages.detect_format`.

Each message narrows the set of formats that could hold it (a ``system`` role rules out
Anthropic and Gemini, an ``input_text`` part everything but Responses, ...); the list's
format is one that fits every message. Shapes several formats share (a ``text`` part, an
``input_audio`` part, a plain ``{"role", "content"}`` message) narrow without deciding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from ctxbudget._core import DictVersions, unchanged_prefix
from ctxbudget.formats.anthropic import _ANTH_BLOCK_TYPES
from ctxbudget.formats.common import _is_genai_object, as_mapping
from ctxbudget.formats.model import MessageFormat
from ctxbudget.formats.openai_responses import _RESP_ITEM_TYPES, is_item_reference

_CHAT: MessageFormat = "openai_chat"
_RESP: MessageFormat = "openai_responses"
_ANTH: MessageFormat = "anthropic"
_GEM: MessageFormat = "gemini"

#: Every format: what a message that says nothing about its format fits.
ANY_FORMAT: frozenset[MessageFormat] = frozenset({_CHAT, _RESP, _ANTH, _GEM})
#: Which format to take when several fit every message and the caller's default is not one.
_PRIORITY: tuple[MessageFormat, ...] = (_CHAT, _ANTH, _RESP, _GEM)

#: Formats whose messages may hold a content part of each type (types not listed: any).
_PART_FITS: dict[str, frozenset[MessageFormat]] = {
    "text": frozenset({_CHAT, _ANTH}),
    "image_url": frozenset({_CHAT}),
    "file": frozenset({_CHAT}),
    "input_audio": frozenset({_CHAT, _RESP}),
    "refusal": frozenset({_CHAT, _RESP}),
    "input_text": frozenset({_RESP}),
    "output_text": frozenset({_RESP}),
    "input_image": frozenset({_RESP}),
    "input_file": frozenset({_RESP}),
    **{t: frozenset({_ANTH}) for t in _ANTH_BLOCK_TYPES},
}
#: A dict message without ``parts``: not Gemini.
_DICT_FITS = frozenset({_CHAT, _RESP, _ANTH})
#: Roles of instructions inside the list: Chat Completions and Responses. Anthropic lists may
#: hold ``system`` messages too (``SystemMessageParam``), but a list that starts with one is
#: far more often Chat Completions (sent through a compatible API to any model): such an
#: Anthropic list is read with ``format="anthropic"``; one whose Anthropic blocks come before
#: its first system message is told by them.
_INSTRUCTION_FITS = frozenset({_CHAT, _RESP})


#: Message fields only Chat Completions has: tool calls and results, an assistant's refusal
#: (``ChatCompletionMessage.refusal``, ``None`` in every dump of one), reasoning sent back, a
#: legacy ``function_call``, a reference to an earlier audio reply.
_CHAT_KEYS = (
    "tool_calls", "tool_call_id", "refusal", "reasoning_content", "function_call", "audio",
)  # fmt: skip


#: Fields of an Anthropic ``Message`` (the response, ``type: "message"`` as a Responses message
#: item has it) that no Responses item has. Not among the fields whose edits are noticed: a
#: response's fields are not edited in place.
_ANTHROPIC_MESSAGE_KEYS = ("stop_reason", "usage", "model")


def message_fits(message: object) -> frozenset[MessageFormat]:
    """The formats that could hold ``message`` (all of them for what is not a message)."""
    if _is_genai_object(message):
        return frozenset({_GEM})
    message = as_mapping(message)
    if message is None:
        return ANY_FORMAT
    role = message.get("role")
    if "parts" in message or role == "model":
        return frozenset({_GEM})
    if is_item_reference(message):  # ({"id": ...} alone: no other format has one)
        return frozenset({_RESP})
    kind = message.get("type")
    if isinstance(kind, str) and kind in _RESP_ITEM_TYPES:
        if kind == "message" and any(key in message for key in _ANTHROPIC_MESSAGE_KEYS):
            return frozenset({_ANTH})  # an Anthropic ``Message`` put back whole (or its dump)
        return frozenset({_RESP})
    if role in ("tool", "function") or any(key in message for key in _CHAT_KEYS):
        return frozenset({_CHAT})
    fits = _INSTRUCTION_FITS if role in ("system", "developer") else _DICT_FITS
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            btype = block.get("type") if isinstance(block, Mapping) else None
            if isinstance(btype, str):
                fits = fits & _PART_FITS.get(btype, fits) or fits
    return fits


def fitting_formats(
    messages: Sequence[Any], fits: frozenset[MessageFormat] = ANY_FORMAT
) -> frozenset[MessageFormat]:
    """The formats every message of ``messages`` fits (of ``fits``: what earlier messages of
    the same list left).

    A message that fits none of the formats the earlier ones left does not narrow them
    further: validation in that format then names it.
    """
    for message in messages:
        fits = fits & message_fits(message) or fits
        if len(fits) == 1:
            break
    return fits


#: The fields :func:`message_fits` reads.
_DETECT_KEYS = ("role", "type", "content", "parts", *_CHAT_KEYS)


class SeenFits:
    """The formats a list fits, for a caller that sees it grow turn by turn (an estimator, a
    pruner, a guard): when a list extends the one seen last, only the new messages are read.

    A message counts as seen when it is the same dict (or an equal one) and the fields that
    tell a format (:data:`_DETECT_KEYS`) are the same objects: a field
    replaced in place (``message["content"] = [...]``, ``message["role"] = "system"``) is
    read again. Lists with messages that are not dicts are compared as lists.

    ``keeps_decided``: the caller takes the format once the list fits only that one and asks
    no more, so the fields are not kept from then on (a cold estimate of a long history would
    read every message's ten fields for nothing).
    """

    __slots__ = ("_keeps_decided", "_msgs", "_refs", "_versions", "fits")

    def __init__(self, *, keeps_decided: bool = False) -> None:
        self._keeps_decided = keeps_decided
        self._msgs: list[Any] = []
        self._refs: list[list[Any]] = [[] for _ in _DETECT_KEYS]
        self._versions = DictVersions()
        #: The formats every message of the last list fits.
        self.fits: frozenset[MessageFormat] = ANY_FORMAT

    def narrow(self, messages: list[Any]) -> frozenset[MessageFormat]:
        """:func:`fitting_formats` of ``messages``, reading only what was not seen.

        ``messages`` is kept until the next call, to compare it with: pass the list made for
        this call (every caller makes one from the caller's messages), not the caller's own.
        """
        msgs = messages
        seen = len(self._msgs)
        if not seen or self._changed(msgs, seen):
            self.fits = fitting_formats(msgs)
            self._refs = [[] for _ in _DETECT_KEYS]
            new = msgs
        else:
            self.fits = fitting_formats(msgs[seen:], self.fits)
            new = msgs[seen:]
        # Fields are kept while every message is a dict (the seen ones were, if kept), unless
        # the caller keeps a decided format.
        if self._keeps_decided and len(self.fits) == 1:
            self._refs = [[] for _ in _DETECT_KEYS]
        elif len(self._refs[0]) == len(msgs) - len(new) and all(type(m) is dict for m in new):
            for key, refs in zip(_DETECT_KEYS, self._refs, strict=True):
                refs.extend(map(dict.get, new, repeat(key)))
        else:
            self._refs = [[] for _ in _DETECT_KEYS]
        self._msgs = msgs
        return self.fits

    def _changed(self, msgs: list[Any], seen: int) -> bool:
        """Whether the first ``seen`` of ``msgs`` differ from the list read last."""
        if len(self._refs[0]) == seen:  # all dicts then: their fields are checked too
            kept = unchanged_prefix(msgs, self._msgs, self._refs, _DETECT_KEYS, self._versions)
            return kept != seen
        # A list comparison checks identity before ``==``: a few ns a message.
        return len(msgs) < seen or msgs[:seen] != self._msgs


def pick_format(fits: frozenset[MessageFormat], default: str) -> str:
    """The format to read a list with, given the formats it fits: the only one, else
    ``default`` when it fits (or nothing narrowed the choice), else the first of Chat
    Completions, Anthropic, Responses, Gemini that fits."""
    if len(fits) == 1:
        return next(iter(fits))
    if default in fits or fits == ANY_FORMAT:
        return default
    return next(f for f in _PRIORITY if f in fits)
