"""Peak memory and first-call time of estimate_tokens on a 100 MB str.

    python benches/str_memory.py cjk      # or: ascii

Prints resident memory before and after the first call, and the time of the first and second
call. A growth close to the string's UTF-8 size means a hidden UTF-8 copy was made.
"""

from __future__ import annotations

import sys
import time

import ctxbudget

TARGET_BYTES = 100_000_000


def resident_mb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def main(kind: str) -> None:
    unit = "日本語のテキスト。" if kind == "cjk" else "ascii text here "
    text = unit * (TARGET_BYTES // len(unit.encode()))
    before = resident_mb()
    start = time.perf_counter()
    ctxbudget.estimate_tokens(text)
    first = time.perf_counter() - start
    after = resident_mb()
    start = time.perf_counter()
    ctxbudget.estimate_tokens(text)
    second = time.perf_counter() - start
    print(
        f"{kind}: {len(text.encode()) / 1e6:.0f} MB UTF-8; resident {before} -> {after} MB "
        f"(+{after - before} MB); first call {first * 1e3:.0f} ms, second {second * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cjk")
