"""The user's own words in a conversation being compacted: what a summary must not paraphrase.

An agent loop has one request and many tool steps; the user may add a word in the middle,
which Anthropic and Gemini carry as text beside the tool results ("stop, use Rust instead").
Compaction copies the latest request, and the words sent after it, into the summary verbatim
(:func:`request_block`); a later compaction that condenses that summary carries the copy on
(:func:`carried_request`, :func:`is_words_only`). When the transcript is cut down to fit, the
words are shown without their tool output (:func:`words_message`).
"""

from __future__ import annotations

from typing import Any

from ctxbudget.formats.model import Part
from ctxbudget.messages import normalize_messages
from ctxbudget.turns import first_text

__all__ = [
    "ATTACHMENTS",
    "carried_request",
    "is_words_only",
    "request_block",
    "request_copy",
    "said",
    "words_message",
]

#: Part kinds of a request that a summary replacing it carries whole.
ATTACHMENTS = frozenset({"image", "document", "audio", "file"})
_HEAD = "\n\nThe user's latest request, verbatim:\n<request>\n"
_TAIL = "\n</request>"
#: What marks words sent beside tool results in a copy (a copy of such words alone starts
#: with it: no request was in the part summarized; an earlier summary holds it).
_LATER = "Later, with tool results: "


def said(fmt: str, message: Any) -> tuple[str, tuple[Part, ...]]:
    """The text of a message's own text parts (not its tool results, nor reasoning), and its
    attachments."""
    (normalized,) = normalize_messages([message], fmt)
    text = "\n".join(p.text for p in normalized.parts if p.kind == "text" and p.text)
    return text, tuple(p for p in normalized.parts if p.kind in ATTACHMENTS)


def request_block(copy: str) -> str:
    """What a summary appends to carry ``copy`` (read back by :func:`carried_request`)."""
    return f"{_HEAD}{copy}{_TAIL}"


def carried_request(fmt: str, summary: Any) -> str | None:
    """The copy an earlier summary carries, if any. Read from the last block, the one
    compaction appended: a summarizer may quote an earlier summary's block in its text."""
    text = first_text(fmt, summary) or ""
    at = text.rfind(_HEAD)
    if at < 0 or not text.endswith(_TAIL):
        return None
    return text[at + len(_HEAD) : len(text) - len(_TAIL)]


def is_words_only(copy: str) -> bool:
    """Whether a carried copy holds only words sent beside tool results, no request."""
    return copy.startswith(_LATER)


def request_copy(request: str, later: list[str]) -> str:
    """The request (or an earlier copy) with the words sent after it beside tool results, in
    order; the words alone when there is no request (marked as such, see
    :func:`is_words_only`)."""
    words = [f"{_LATER}{word}" for word in later if word.strip()]
    return "\n\n".join([request, *words] if request.strip() else words)


def words_message(fmt: str, text: str) -> dict[str, Any]:
    """A user message of ``fmt`` holding only ``text``: how words sent beside tool results
    are shown in a transcript cut down to fit (their tool output left out with the rest)."""
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    return {"role": "user", "content": text}
