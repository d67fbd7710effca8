"""Where a text may be cut inside a line without splitting what a reader sees as one character.

A cut between two code points can split a grapheme cluster: a base letter from its combining
accent (``e`` + U+0301), the two regional indicators of a flag (``🇺🇸🇫🇷`` cut after one
indicator reads ``🇸🇫``, another country's flag), the parts of an emoji sequence joined by
U+200D, a Hangul syllable spelled in jamo, a CR from its LF. :func:`back_to_boundary` and
:func:`forward_to_boundary` move a cut to the nearest position that splits none of these: the
rules of Unicode's extended grapheme clusters (UAX #29) that matter for a cut, without the
tables a full segmenter needs (prepended concatenation marks and Indic conjuncts are not
handled: a cut there only splits a rarely seen cluster).
"""

from __future__ import annotations

import unicodedata

__all__ = ["back_to_boundary", "forward_to_boundary", "is_boundary"]

#: How far a cut moves at most: a run of marks longer than this (no text a reader sees) is cut
#: where it was.
_MAX_MOVE = 32
_ZWJ = 0x200D
_REGIONAL = range(0x1F1E6, 0x1F200)
_REGIONAL_CHARS = "".join(map(chr, _REGIONAL))
#: Characters a run of regional indicators is searched back through at a time.
_CHUNK = 4096


def _extend(cp: int) -> bool:
    """Whether the code point extends the cluster before it (``Extend``): a combining or
    enclosing mark, a variation selector, an emoji modifier or tag, the zero-width non-joiner
    (Persian, Indic), the halfwidth kana voicing marks."""
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or cp in (0x200C, 0xFF9E, 0xFF9F):
        return True
    if 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F:
        return True
    return unicodedata.category(chr(cp)) in ("Mn", "Me")


def _extends(cp: int) -> bool:
    """Whether the code point attaches to the one before it: what :func:`_extend` says, a
    spacing mark (Thai and Lao SARA AM among them), the zero-width joiner."""
    if cp in (_ZWJ, 0x0E33, 0x0EB3):
        return True
    return _extend(cp) or unicodedata.category(chr(cp)) == "Mc"


def _pictographic(cp: int) -> bool:
    """Whether the code point is an emoji pictograph (``Extended_Pictographic``, near enough:
    the blocks that hold them), which a zero-width joiner joins to the one before."""
    if 0x1F1E6 <= cp <= 0x1F1FF or 0x1F3FB <= cp <= 0x1F3FF:
        return False  # regional indicators and skin tones are not pictographs
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x1FC00 <= cp <= 0x1FFFD
        or 0x2600 <= cp <= 0x27BF
        or 0x2300 <= cp <= 0x23FF
        or 0x2B00 <= cp <= 0x2BFF
        or 0x2194 <= cp <= 0x2199
        or 0x25FB <= cp <= 0x25FE
        or cp in _PICTOGRAPHS
    )


_PICTOGRAPHS = frozenset(
    {0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139, 0x21A9, 0x21AA, 0x25AA, 0x25AB, 0x25B6}
    | {0x25C0, 0x2934, 0x2935, 0x3030, 0x303D, 0x3297, 0x3299}
)


def _hangul(cp: int) -> str:
    """The Hangul syllable type of a code point: ``L``, ``V``, ``T``, ``LV``, ``LVT`` or ``""``."""
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return "L"
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return "V"
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return "T"
    if 0xAC00 <= cp <= 0xD7A3:
        return "LV" if (cp - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOINS = {
    "L": ("L", "V", "LV", "LVT"),
    "V": ("V", "T"),
    "LV": ("V", "T"),
    "T": ("T",),
    "LVT": ("T",),
}


def _regional_run(text: str, i: int) -> int:
    """How many regional indicators stand right before ``text[i]`` (searched a chunk at a
    time: a line of flags may be megabytes long)."""
    run, end = 0, i
    while end > 0:
        chunk = text[max(0, end - _CHUNK) : end]
        rest = len(chunk.rstrip(_REGIONAL_CHARS))
        run += len(chunk) - rest
        if rest:
            break
        end -= len(chunk)
    return run


def is_boundary(text: str, i: int, regional_run: int | None = None) -> bool:
    """Whether a cut between ``text[i - 1]`` and ``text[i]`` splits no grapheme cluster.

    ``regional_run`` is how many regional indicators stand right before ``i``, when the
    caller knows (counted otherwise).
    """
    if i <= 0 or i >= len(text):
        return True
    before, after = ord(text[i - 1]), ord(text[i])
    if before == 0x0D and after == 0x0A:
        return False
    if before in (0x0A, 0x0D) or after in (0x0A, 0x0D):
        return True
    if _extends(after):
        return False
    if before == _ZWJ and _pictographic(after):
        # An emoji sequence (family, profession) when the joiner follows a pictograph and
        # the marks on it (a few dozen at most looked through).
        j = i - 2
        while j >= max(0, i - 2 - _MAX_MOVE) and _extend(ord(text[j])):
            j -= 1
        return not (j >= 0 and _pictographic(ord(text[j])))
    if after in _REGIONAL and before in _REGIONAL:
        # Flags pair up from the start of the run: a boundary after an even count.
        run = _regional_run(text, i) if regional_run is None else regional_run
        return run % 2 == 0
    joins = _HANGUL_JOINS.get(_hangul(before))
    return not (joins and _hangul(after) in joins)


def back_to_boundary(text: str, i: int) -> int:
    """``i``, or the nearest position before it where a cut splits no grapheme cluster (at
    most a few dozen characters back; ``i`` itself past that)."""
    run = _regional_run(text, i)  # counted once; one less at each step back through it
    for j in range(i, max(i - _MAX_MOVE, 0) - 1, -1):
        known = run - (i - j) if i - j <= run else None
        if is_boundary(text, j, known):
            return j
    return i


def forward_to_boundary(text: str, i: int) -> int:
    """``i``, or the nearest position after it where a cut splits no grapheme cluster (at
    most a few dozen characters on; ``i`` itself past that)."""
    run: int | None = _regional_run(text, i)  # one more at each step on through indicators
    for j in range(i, min(i + _MAX_MOVE, len(text)) + 1):
        if is_boundary(text, j, run):
            return j
        if j < len(text):
            run = (None if run is None else run + 1) if ord(text[j]) in _REGIONAL else 0
    return i
