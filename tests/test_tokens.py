from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget import DEFAULT_ENCODING, ENCODINGS, estimate_tokens

SAMPLES = [
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n",
    '{"id": 12, "tags": ["a", "b"], "ok": true}',
    "2026-11-29T14:02:11Z INFO request done in 38ms",
    "日本語の文章を数える。中文也一样。",
    "Привет, мир! Καλημέρα κόσμε.",
]


def test_encodings() -> None:
    assert set(ENCODINGS) == {"cl100k", "o200k", "llama3", "qwen3", "conservative"}
    assert DEFAULT_ENCODING == "o200k"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_empty_is_zero(encoding: str) -> None:
    assert estimate_tokens("", encoding) == 0
    assert estimate_tokens(b"", encoding) == 0


@pytest.mark.parametrize("text", SAMPLES)
def test_str_and_bytes_agree(text: str) -> None:
    for encoding in ENCODINGS:
        count = estimate_tokens(text, encoding)
        assert count > 0
        assert estimate_tokens(text.encode(), encoding) == count
        assert estimate_tokens(bytearray(text.encode()), encoding) == count
        assert estimate_tokens(memoryview(text.encode()), encoding) == count


@pytest.mark.parametrize("text", SAMPLES)
def test_conservative_is_never_below_any_encoding(text: str) -> None:
    conservative = estimate_tokens(text, "conservative")
    assert all(conservative >= estimate_tokens(text, e) for e in ENCODINGS)


def test_default_encoding_is_used() -> None:
    text = SAMPLES[0]
    assert estimate_tokens(text) == estimate_tokens(text, DEFAULT_ENCODING)


def test_unknown_encoding() -> None:
    with pytest.raises(ValueError, match="o200k"):
        estimate_tokens("x", "gpt2")


@pytest.mark.parametrize("bad", [None, 12, ["a"]])
def test_wrong_type(bad: object) -> None:
    with pytest.raises(TypeError):
        estimate_tokens(bad)  # type: ignore[arg-type]


def test_lone_surrogate_str_is_a_clear_error() -> None:
    with pytest.raises(UnicodeEncodeError):
        estimate_tokens("bad \ud800 half")


def test_invalid_utf8_bytes_are_tolerated() -> None:
    assert estimate_tokens(b"\xff\xfe\x00abc\x80") > 0


def test_large_input_scales() -> None:
    text = SAMPLES[1] * 2000
    one = estimate_tokens(SAMPLES[1])
    assert 0.8 * one * 2000 <= estimate_tokens(text) <= 1.2 * one * 2000


@given(st.binary(max_size=500))
def test_any_bytes_never_crash(data: bytes) -> None:
    for encoding in ENCODINGS:
        assert estimate_tokens(data, encoding) >= 0


@given(st.text(max_size=200))
def test_any_text_is_counted(text: str) -> None:
    count = estimate_tokens(text)
    assert (count == 0) == (text == "")
