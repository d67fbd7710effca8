"""Same-process A/B of two builds of the estimator: both loaded at once, their calls alternated.

On a shared machine, separate runs of a bench differ by up to 2x; two builds loaded in one
process and called in turn on the same text see the same spell of the machine, so their ratio
holds. Build the other revision's extension module and pass both paths::

    git worktree add /tmp/old <rev>
    (cd /tmp/old && cargo build --release --features python --target-dir /tmp/old-target)
    python benches/ab_builds.py /tmp/old-target/release/lib_core.so \\
        python/ctxbudget/_core.cpython-311-x86_64-linux-gnu.so
    python benches/ab_builds.py A.so B.so --encodings conservative --classes prose,cjk
    python benches/ab_builds.py A.so B.so --small     # microseconds per call, short messages
    python benches/ab_builds.py A.so B.so --pieces 6000   # each class cut in 6,000-char texts

Per class of the eval split (as ``benches/speed.py`` builds them, as they are unless ``--mb``
repeats them; ``--corpus DIR`` for any DIR/<class>/*.txt): MB/s of ``estimate_tokens`` from
``str`` for A and for B, median of ``--repeat`` alternated calls timed by the thread's CPU
time, the ratio B/A and both counts (the same unless the builds' tables differ). With
``--pieces N``, each class's text is cut into texts of N characters (its first 40), each
estimated in a call of its own, as an agent estimates tool outputs of a few KB one by one:
the counts are then their sums.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speed


def load(path: Path) -> ModuleType:
    """The extension module at ``path``, loaded under its own name, not registered."""
    loader = importlib.machinery.ExtensionFileLoader("_core", str(path))
    spec = importlib.util.spec_from_file_location("_core", str(path), loader=loader)
    if spec is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def alternate(calls: tuple[Callable[[], object], Callable[[], object]], repeat: int) -> list[float]:
    """Median seconds of ``repeat`` runs of each of the two calls, run in turn."""
    times: list[list[float]] = [[], []]
    for _ in range(repeat):
        for k, call in enumerate(calls):
            start = time.thread_time()
            call()
            times[k].append(time.thread_time() - start)
    return [statistics.median(t) for t in times]


def throughput(a: ModuleType, b: ModuleType, args: argparse.Namespace) -> None:
    texts = speed.classes(args.corpus)
    wanted = args.classes.split(",") if args.classes else list(texts)
    print(f"{'class/encoding':28s} {'A MB/s':>8s} {'B MB/s':>8s} speed B/A  counts A, B")
    for cls in wanted:
        text = texts[cls]
        while len(text.encode()) < args.mb * 1e6:
            text += text
        step = args.pieces or len(text) or 1
        pieces = [text[i : i + step] for i in range(0, len(text), step)][:MAX_PIECES]
        size = sum(len(p.encode()) for p in pieces)
        for enc in args.encodings.split(","):
            ta, tb = alternate(
                (partial(each, a, pieces, enc), partial(each, b, pieces, enc)), args.repeat
            )
            counts = each(a, pieces, enc), each(b, pieces, enc)
            print(
                f"{cls + '/' + enc:28s} {size / ta / 1e6:8.1f} {size / tb / 1e6:8.1f} "
                f"{ta / tb:5.2f}x  {counts[0]}, {counts[1]}",
                flush=True,
            )


#: Texts of a class taken with ``--pieces``.
MAX_PIECES = 40


def each(module: ModuleType, texts: list[str], enc: str) -> int:
    """The sum of the estimates of ``texts``, one call each."""
    return sum(module.estimate_tokens(text, enc) for text in texts)


def many_calls(module: ModuleType, text: str, enc: str, calls: int) -> None:
    for _ in range(calls):
        module.estimate_tokens(text, enc)


def short_messages(a: ModuleType, b: ModuleType, args: argparse.Namespace) -> None:
    print(f"{'message/encoding':28s} {'A us':>7s} {'B us':>7s} speed B/A")
    calls = 2000
    for name, text in speed.SMALL.items():
        for enc in args.encodings.split(","):
            runs = tuple(partial(many_calls, m, text, enc, calls) for m in (a, b))
            ta, tb = alternate(runs, args.repeat)  # type: ignore[arg-type]
            print(
                f"{name + '/' + enc:28s} {ta / calls * 1e6:7.2f} {tb / calls * 1e6:7.2f} "
                f"{ta / tb:5.2f}x"
            )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("a", type=Path, help="the baseline build's extension module (.so)")
    ap.add_argument("b", type=Path, help="the build measured against it")
    ap.add_argument("--encodings", default="o200k,conservative")
    ap.add_argument("--classes", help="comma-separated classes (default: all)")
    ap.add_argument("--corpus", type=Path, help="any DIR/<class>/*.txt instead of the eval split")
    ap.add_argument(
        "--mb",
        type=float,
        default=0.0,
        help="repeat each class's text to this many MB (default 0: as it is; repeats let the "
        "memo of split costs serve later copies)",
    )
    ap.add_argument("--repeat", type=int, default=9, help="alternated calls per build")
    ap.add_argument("--small", action="store_true", help="short messages instead of classes")
    ap.add_argument(
        "--pieces", type=int, default=0, help="cut each class's text into texts of this many chars"
    )
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    if args.small:
        short_messages(a, b, args)
    else:
        throughput(a, b, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
