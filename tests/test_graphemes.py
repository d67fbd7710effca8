"""Cut points inside a line: against the ``regex`` module's grapheme clusters (``\\X``)."""

from __future__ import annotations

import random

import pytest
import regex

from ctxbudget.graphemes import back_to_boundary, forward_to_boundary, is_boundary

#: Code points of every cluster rule handled: marks, flags, joined emoji and skin tones,
#: variation selectors, Hangul jamo and syllables, CR LF, the zero-width non-joiner, Thai
#: SARA AM, halfwidth kana voicing marks; plain letters and spaces between.
ALPHABET = [
    "e", "\u0301", "\u20dd", "\U0001f1fa", "\U0001f1f8", "\u200d", "\U0001f468", "\U0001f3fd",
    "\ufe0f", "\u2764", "\r", "\n", "\u1100", "\u1161", "\u11a8", "\uac00", "\uac01", "a", " ",
    "\u0915", "\u093f", "\U000e0067", "\u00e9", "\u4e2d", "\u200c", "\u0e19", "\u0e49",
    "\u0e33", "\uff76", "\uff9e", "\u2194", "\u25b6",
]  # fmt: skip


def _reference(text: str) -> set[int]:
    return {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}


def test_boundaries_agree_with_extended_grapheme_clusters() -> None:
    rng = random.Random(20261203)
    for _ in range(20_000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 14)))
        ref = _reference(text)
        for i in range(len(text) + 1):
            assert is_boundary(text, i) == (i in ref), (text, i)


@pytest.mark.parametrize(
    "text",
    [
        "\U0001f1fa\U0001f1f8\U0001f1eb\U0001f1f7" * 3,  # flags: pairs from the run's start
        "e\u0301" * 10,
        "\U0001f468\u200d\U0001f469\u200d\U0001f467" * 3,  # a family
        "\u1100\u1161\u11a8" * 5,  # Hangul in jamo
        "ab\r\ncd",
    ],
)
def test_moved_cuts_land_on_boundaries(text: str) -> None:
    ref = _reference(text)
    for i in range(len(text) + 1):
        back, forward = back_to_boundary(text, i), forward_to_boundary(text, i)
        assert back <= i <= forward and back in ref and forward in ref
        assert not any(j in ref for j in range(back + 1, i))
        assert not any(j in ref for j in range(i, forward))


def test_a_run_of_marks_too_long_to_move_past_is_cut_where_it_was() -> None:
    text = "e" + "\u0301" * 100
    assert back_to_boundary(text, 50) == 50 and forward_to_boundary(text, 50) == 50


def test_a_megabyte_line_of_flags_is_cut_in_pairs_without_walking_it_each_step() -> None:
    line = "\U0001f1fa\U0001f1f8\U0001f1eb\U0001f1f7" * 250_000  # a million indicators
    middle = len(line) // 2 + 1  # inside a flag
    assert back_to_boundary(line, middle) == middle - 1
    assert forward_to_boundary(line, middle) == middle + 1
    assert not is_boundary(line, middle) and is_boundary(line, middle + 1)
