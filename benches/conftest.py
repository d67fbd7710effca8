"""Shared fixtures for the benchmarks, and a throughput table at the end of the run.

Each benchmark that processes a buffer records ``benchmark.extra_info["bytes"]``; the
summary turns the median time into GB/s and, within a group, a ratio to the group's
baseline (the benchmark with ``baseline`` in its name), per byte where sizes are known.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

MIB = 1 << 20


def ascii_text(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    words = [
        "the", "context", "window", "agent", "tool", "result", "token", "budget", "request",
        "def", "return", "self", "value", "error", "None", "import", "json", "print(x)",
    ]  # fmt: skip
    out: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + "\n"
        out.append(line)
        total += len(line)
    return "".join(out).encode()[:size]


def cjk_text(size: int, seed: int = 2) -> bytes:
    rng = random.Random(seed)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)] + ["。", "、", "\n"]
    data = "".join(rng.choice(chars) for _ in range(size // 3 + 1)).encode()
    return data[: size - size % 3] if len(data) > size else data


@pytest.fixture(scope="session")
def ascii_16m() -> bytes:
    return ascii_text(16 * MIB)


@pytest.fixture(scope="session")
def cjk_16m() -> bytes:
    return cjk_text(16 * MIB)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    rows = []
    baselines: dict[str, float] = {}  # seconds per byte (or per call when no size is known)
    for bench in session.benchmarks:
        if "baseline" in bench.name and bench.stats.median:
            baselines[bench.group or ""] = bench.stats.median / bench.extra_info.get("bytes", 1)
    for bench in session.benchmarks:
        median = bench.stats.median
        size = bench.extra_info.get("bytes")
        rate = f"{size / median / 1e9:8.2f} GB/s" if size and median else " " * 13
        base = baselines.get(bench.group or "")
        per_unit = median / (size or 1) if median else 0.0
        ratio = f"{base / per_unit:8.1f}x vs baseline" if base and per_unit else ""
        rows.append(
            f"{bench.group or '':<24} {bench.name:<52} {median * 1e3:10.3f} ms {rate} {ratio}"
        )
    terminalreporter.write_sep("=", "ctxbudget throughput (medians)")
    for row in rows:
        terminalreporter.write_line(row)
