"""The user's own words in a conversation being compacted: what a summary must not paraphrase.

An agent loop has one request and many tool steps; the user may add a word in the middle,
which Anthropic and Gemini carry as text beside the tool results ("stop, use Rust instead").
Compaction copies the latest request, and the words sent after it, into the summary verbatim
(:func:`request_copy`), and shows them to the summarizer when the transcript is cut down
(:func:`words_message`).
"""

from __future__ import annotations

import re
from typing import Any

from ctxbudget.formats.model import Part
from ctxbudget.messages import normalize_messages
from ctxbudget.turns import first_text

__all__ = [
    "ATTACHMENTS",
    "REQUEST_BLOCK",
    "carried_request",
    "request_copy",
    "said",
    "words_message",
]

#: Part kinds of a request that a summary replacing it carries whole.
ATTACHMENTS = frozenset({"image", "document", "audio", "file"})
REQUEST_BLOCK = re.compile(r"\n<request>\n(.*)\n</request>\Z", re.DOTALL)
_LATER = "\n\nLater, with tool results: "


def said(fmt: str, message: Any) -> tuple[str, tuple[Part, ...]]:
    """The text of a message's own text parts (not its tool results, nor reasoning), and its
    attachments."""
    (normalized,) = normalize_messages([message], fmt)
    text = "\n".join(p.text for p in normalized.parts if p.kind == "text" and p.text)
    return text, tuple(p for p in normalized.parts if p.kind in ATTACHMENTS)


def carried_request(fmt: str, summary: Any) -> str | None:
    """The request an earlier summary copied verbatim, if it holds one."""
    found = REQUEST_BLOCK.search(first_text(fmt, summary) or "")
    return found.group(1) if found else None


def request_copy(request: str, later: list[str]) -> str:
    """The request with the words sent after it beside tool results, in order."""
    words = [word for word in later if word.strip()]
    if not request.strip():
        return "\n\n".join(words)
    return request + "".join(f"{_LATER}{word}" for word in words)


def words_message(fmt: str, text: str) -> dict[str, Any]:
    """A user message of ``fmt`` holding only ``text``: how words sent beside tool results
    are shown in a transcript cut down to fit (their tool output left out with the rest)."""
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    if fmt == "responses":
        return {"type": "message", "role": "user", "content": text}
    return {"role": "user", "content": text}
