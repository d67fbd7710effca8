"""validate_text / check_text against Python's own find(b"\\0") + decode()."""

from __future__ import annotations

import pytest

from ctxbudget import check_text, validate_text


def python_find_and_decode(data: bytes) -> str:
    if data.find(b"\0") >= 0:
        raise ValueError("NUL")
    return data.decode()


@pytest.mark.parametrize("kind", ["ascii", "cjk"])
def test_validate_text(benchmark, kind: str, ascii_16m: bytes, cjk_16m: bytes) -> None:
    data = ascii_16m if kind == "ascii" else cjk_16m
    benchmark.group = f"text-{kind}"
    benchmark.extra_info["bytes"] = len(data)
    benchmark(validate_text, data)


@pytest.mark.parametrize("kind", ["ascii", "cjk"])
def test_check_text(benchmark, kind: str, ascii_16m: bytes, cjk_16m: bytes) -> None:
    data = ascii_16m if kind == "ascii" else cjk_16m
    benchmark.group = f"text-{kind}"
    benchmark.extra_info["bytes"] = len(data)
    assert benchmark(check_text, data) == data.decode()


@pytest.mark.parametrize("kind", ["ascii", "cjk"])
def test_python_find_decode_baseline(
    benchmark, kind: str, ascii_16m: bytes, cjk_16m: bytes
) -> None:
    data = ascii_16m if kind == "ascii" else cjk_16m
    benchmark.group = f"text-{kind}"
    benchmark.extra_info["bytes"] = len(data)
    benchmark(python_find_and_decode, data)
