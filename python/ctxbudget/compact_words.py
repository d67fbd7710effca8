"""The user's own words in a conversation being compacted: what a summary must not paraphrase.

An agent loop has one request and many tool steps; the user may add a word in the middle,
which Anthropic and Gemini carry as text beside the tool results ("stop, use Rust instead").
Compaction copies the latest request, and the words sent after it, into the summary verbatim
(:func:`request_block`); a later compaction that condenses that summary carries the copy on
(:func:`carried_request`). When the transcript is cut down to fit, the words are shown without
their tool output (:func:`words_message`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ctxbudget.formats.model import Part
from ctxbudget.messages import normalize_messages
from ctxbudget.turns import first_text

__all__ = [
    "ATTACHMENTS",
    "Carried",
    "carried_request",
    "request_block",
    "request_copy",
    "said",
    "sealed",
    "words_message",
]

#: Part kinds of a request that a summary replacing it carries whole.
ATTACHMENTS = frozenset({"image", "document", "audio", "file"})
_REQUEST = "The user's latest request"
#: The heading of a copy of words alone: no request was in the part summarized (an earlier
#: summary holds it).
_WORDS = "What the user wrote later, with tool results"
#: A copy's heading states its length: read back exactly, whatever the copy itself holds (a
#: request quoting a summary, heading included). Blocks of earlier versions have none.
_HEAD = re.compile(
    rf"\r?\n\r?\n({re.escape(_REQUEST)}|{re.escape(_WORDS)}), verbatim"
    r"(?: \(([0-9]{1,9}) characters\))?:\r?\n<request>\r?\n"
)
_TAIL = "\n</request>"
#: The end of a block, its line end as written or turned into CRLF on the way.
_END = re.compile(r"\r?\n</request>\Z")
#: What marks words sent beside tool results in a copy.
_LATER = "Later, with tool results: "


@dataclass(frozen=True, slots=True)
class Carried:
    """The copy an earlier summary carries: its text, and whether it holds words alone."""

    text: str
    words_only: bool


def said(fmt: str, message: Any) -> tuple[str, tuple[Part, ...]]:
    """The text of a message's own text parts (not its tool results, nor reasoning), and its
    attachments."""
    (normalized,) = normalize_messages([message], fmt)
    text = "\n".join(p.text for p in normalized.parts if p.kind == "text" and p.text)
    return text, tuple(p for p in normalized.parts if p.kind in ATTACHMENTS)


def request_block(copy: str, *, words_only: bool) -> str:
    """What a summary appends to carry ``copy`` (read back by :func:`carried_request`)."""
    what = _WORDS if words_only else _REQUEST
    return f"\n\n{what}, verbatim ({len(copy)} characters):\n<request>\n{copy}{_TAIL}"


def carried_request(fmt: str, summary: Any) -> Carried | None:
    """The copy an earlier summary carries, if any: the block whose stated length reaches
    the end (a summarizer may quote an earlier summary's block in its text, a request may
    quote one in its own). When none does, the copy's line ends were changed on the way
    (CRLF to LF, or back), which moves its length by at most one a line: the first block
    whose stated length is that near the end; else the last block (one written before copies
    stated their length)."""
    text = first_text(fmt, summary) or ""
    tail = _END.search(text)
    if tail is None:
        return None
    end = tail.start()
    breaks = text.count("\n", 0, end)  # line breaks before the end not yet passed
    near = last = None
    seen = 0
    for found in _HEAD.finditer(text):
        breaks -= text.count("\n", seen, found.end())
        seen = found.end()
        stated = found.group(2)
        if stated is not None:
            off = abs(found.end() + int(stated) - end)
            if off == 0:
                return Carried(text[found.end() : end], found.group(1) == _WORDS)
            if near is None and off <= breaks:
                near = found
        last = found
    chosen = near or last
    if chosen is None:
        return None
    copy = text[chosen.end() : end]
    words = chosen.group(1) == _WORDS or (chosen.group(2) is None and copy.startswith(_LATER))
    return Carried(copy, words)


def sealed(summary: str) -> str:
    """A summary's text that carries no copy, made so that none is read from it: a text
    ending as a block does (a summarizer quoting one from a tool output) gets a last line."""
    return f"{summary}\n\n(End of summary.)" if summary.endswith(_TAIL.lstrip("\n")) else summary


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
