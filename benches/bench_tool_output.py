"""Tool outputs: truncate_output on 10 MB, its peak memory, read_tool_file refusals.

Run on purpose: ``python -m pytest benches/bench_tool_output.py``. In each ``truncate-*``
group the baseline is one ``estimate_tokens`` over the same text, the floor of any
truncation that reports the original token count; the ratio shows what the rest costs.
Peak memory is printed at the end, as a multiple of the input ``str``'s size.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from benches.conftest import MIB, ascii_text, cjk_text
from ctxbudget import estimate_tokens
from ctxbudget.documents import FileTooLargeError, read_tool_file
from ctxbudget.spill import DirectorySpillStore
from ctxbudget.truncate import truncate_output

SIZE = 10 * MIB
MAX_TOKENS = 20_000
PEAKS: dict[str, tuple[float, float | None]] = {}


def json_line(size: int) -> str:
    items = []
    total = 0
    i = 0
    while total < size:
        item = json.dumps({"id": i, "name": f"item {i}", "tags": ["a", "b"], "ok": True})
        items.append(item)
        total += len(item) + 2
        i += 1
    return "[" + ", ".join(items) + "]"


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    return {
        "log": ascii_text(SIZE).decode(),
        "cjk": cjk_text(SIZE).decode(),
        "json-one-line": json_line(SIZE),
    }


KINDS = ["log", "cjk", "json-one-line"]


@pytest.mark.parametrize("kind", KINDS)
def test_truncate_10mb(benchmark: Any, outputs: dict[str, str], kind: str) -> None:
    text = outputs[kind]
    benchmark.group = f"truncate-{kind}"
    benchmark.extra_info["bytes"] = len(text.encode())
    result = benchmark(truncate_output, text, max_tokens=MAX_TOKENS, spill=False)
    assert result.truncated and result.kept_tokens <= MAX_TOKENS


@pytest.mark.parametrize("kind", KINDS)
def test_estimate_whole_text_baseline(benchmark: Any, outputs: dict[str, str], kind: str) -> None:
    text = outputs[kind]
    benchmark.group = f"truncate-{kind}"
    benchmark.extra_info["bytes"] = len(text.encode())
    benchmark(estimate_tokens, text)


def test_truncate_10mb_with_disk_spill(
    benchmark: Any, outputs: dict[str, str], tmp_path: Path
) -> None:
    """For reference: the same, writing the full text to a directory store."""
    text = outputs["log"]
    store = DirectorySpillStore(tmp_path, max_total_bytes=None)
    benchmark.group = "truncate-log-spilled"
    benchmark.extra_info["bytes"] = len(text)
    result = benchmark.pedantic(
        truncate_output,
        args=(text,),
        kwargs={"max_tokens": MAX_TOKENS, "spill": store},
        rounds=10,
    )
    assert result.spill_path is not None


RSS_SCRIPT = """
import gc, sys
from pathlib import Path
from benches.bench_tool_output import json_line
from benches.conftest import ascii_text, cjk_text
from ctxbudget.truncate import truncate_output

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

kind, size = sys.argv[1], int(sys.argv[2])
make = {"log": lambda: ascii_text(size).decode(), "cjk": lambda: cjk_text(size).decode(),
        "json-one-line": lambda: json_line(size)}[kind]
text = make()
truncate_output("warm up " * 10, max_tokens=5, spill=False)
gc.collect()
Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
before = kib("VmRSS")
truncate_output(text, max_tokens=20_000, spill=False)
print((kib("VmHWM") - before) * 1024 / sys.getsizeof(text))
"""


def peak_rss_growth(kind: str) -> float | None:
    """Peak RSS growth during one call, in a fresh process, over the input size (Linux)."""
    if not Path("/proc/self/clear_refs").exists():
        return None
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, kind, str(SIZE)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return float(run.stdout) if run.returncode == 0 and run.stdout.strip() else None


@pytest.mark.parametrize("kind", KINDS)
def test_truncate_peak_memory(benchmark: Any, outputs: dict[str, str], kind: str) -> None:
    """Peak Python allocations (tracemalloc) and peak RSS growth, over the input size."""
    text = outputs[kind].encode().decode()  # a fresh str, as a tool would hand over
    size = sys.getsizeof(text)
    tracemalloc.start()
    try:
        truncate_output(text, max_tokens=MAX_TOKENS, spill=False)
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    rss_growth = peak_rss_growth(kind)
    PEAKS[kind] = (traced / size, rss_growth)
    benchmark.group = "truncate-memory"
    benchmark.extra_info["peak_traced_over_input"] = round(traced / size, 3)
    benchmark.extra_info["peak_rss_growth_over_input"] = rss_growth
    benchmark.pedantic(lambda: None, rounds=1)
    assert traced < 3 * size
    assert rss_growth is None or rss_growth < 3


def test_refuse_1gib_file_by_size(benchmark: Any, tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with open(path, "wb") as handle:
        handle.truncate(1 << 30)  # sparse

    def refuse() -> None:
        try:
            read_tool_file(path)
        except FileTooLargeError:
            return
        raise AssertionError("not refused")

    benchmark.group = "read_tool_file"
    benchmark(refuse)


def test_read_10mb_text_file(benchmark: Any, tmp_path: Path) -> None:
    data = ascii_text(SIZE)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    benchmark.group = "read_tool_file"
    benchmark.extra_info["bytes"] = len(data)
    assert len(benchmark(read_tool_file, path)) == len(data)


def pytest_terminal_summary_line() -> list[str]:
    return [
        f"{kind:<16} peak traced {traced:5.2f}x input"
        + (f", peak RSS growth {rss:5.2f}x input" if rss is not None else "")
        for kind, (traced, rss) in PEAKS.items()
    ]


@pytest.fixture(scope="module", autouse=True)
def _print_peaks() -> Any:
    yield
    if PEAKS:
        print("\ntruncate_output peak memory over the input str size:")
        for line in pytest_terminal_summary_line():
            print("  " + line)
