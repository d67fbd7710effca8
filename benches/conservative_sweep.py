"""How often ``conservative`` falls under the largest of the four tokenizers on files outside the
fitting corpus: this machine's own files (JS, TS, source maps, Python, C, JSON, markdown, ...).

    python benches/conservative_sweep.py [--per-ext 120] [--json]
    python benches/conservative_sweep.py --write DIR   # the same chunks as DIR/<ext>/*.txt

With ``--write``, the chunks go to a directory laid out for ``python benches/accuracy.py
--corpus DIR`` instead: each encoding's accuracy per extension on files the fitting corpus
mostly does not read (it does sample the stdlib and the installed packages).

Up to ``--per-ext`` files per extension (2 KB - 2 MB, UTF-8, a seeded sample of what ``find``
lists outside /proc, /tmp and /work), cut into chunks of about 3 KB at line ends, four chunks a
file at most. For each chunk: ``estimate_tokens(chunk, "conservative")`` against the largest of
the cl100k, o200k, llama3 and qwen3 counts (quicktok, development-only, no network). The
margin's floor in ``benches/fit_estimator.py`` (``MARGIN_FLOOR``) comes from this report.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

from ctxbudget.tokens import estimate_batch

EXTENSIONS = "js,ts,map,py,md,json,txt,c,h,html,rs,css,sh,yaml,xml,java,go,rb,pl,tex,po"
ORACLES = ("cl100k_base", "o200k_base", "llama3", "qwen3")
CHUNK = 3000
CHUNKS_PER_FILE = 4


def chunks(per_ext: int) -> list[tuple[str, str, str]]:
    """(extension, path, chunk) for a seeded sample of the machine's files."""
    rng = random.Random(11)
    out = []
    for ext in EXTENSIONS.split(","):
        found = subprocess.run(
            ["find", "/", "-xdev", "-name", f"*.{ext}", "-size", "+2k", "-size", "-2M"],
            capture_output=True,
            # File names need not be UTF-8 (a test's `bad\xffname.txt` under /tmp): kept as
            # they are, and such files opened by the same escaped names.
            encoding="utf-8",
            errors="surrogateescape",
        ).stdout.split()
        files = sorted(f for f in found if not f.startswith(("/proc", "/tmp", "/work")))
        rng.shuffle(files)
        for path in files[:per_ext]:
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
            buf, taken = "", 0
            for line in text.splitlines(keepends=True):
                buf += line
                if len(buf) > CHUNK:
                    out.append((ext, path, buf))
                    buf, taken = "", taken + 1
                    if taken == CHUNKS_PER_FILE:
                        break
            if buf and taken < CHUNKS_PER_FILE:
                out.append((ext, path, buf))
    return out


def write(sample: list[tuple[str, str, str]], root: Path) -> None:
    """The chunks as ``root/<ext>/NNNN.txt`` (UTF-8), in sample order."""
    written: dict[str, int] = {}
    for ext, _, text in sample:
        n = written.get(ext, 0)
        (root / ext).mkdir(parents=True, exist_ok=True)
        (root / ext / f"{n:04d}.txt").write_text(text, encoding="utf-8")
        written[ext] = n + 1
    print(f"wrote {len(sample)} chunks of {len(written)} extensions to {root}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-ext", type=int, default=120, help="files per extension")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write", type=Path, metavar="DIR", help="write the chunks, measure nothing")
    a = ap.parse_args()
    if a.write and a.json:
        ap.error("--write measures nothing: it takes no --json")
    if a.write and a.write.exists() and any(a.write.iterdir()):
        # Files of an earlier, larger sample would be read as part of this one.
        ap.error(f"{a.write} is not empty: give a new or empty directory")
    sample = chunks(a.per_ext)
    if a.write:
        write(sample, a.write)
        return 0
    import quicktok

    texts = [c[2] for c in sample]
    counts = [quicktok.count_batch(quicktok.get_encoding(q), texts) for q in ORACLES]
    top = np.maximum(np.max(np.stack([np.asarray(c) for c in counts]), axis=0), 1)
    ratio = estimate_batch(texts, "conservative") / top
    worst = [
        {"ratio": float(ratio[i]), "path": sample[i][1]} for i in np.argsort(ratio)[:5].tolist()
    ]
    report = {
        "chunks": len(texts),
        "under": int(np.sum(ratio < 1)),
        "under_2pct": int(np.sum(ratio < 0.98)),
        "under_5pct": int(np.sum(ratio < 0.95)),
        "min_ratio": float(ratio.min()),
        "mean_over": float(ratio.mean() - 1),
        "worst": worst,
    }
    if a.json:
        print(json.dumps(report, indent=1))
        return 0
    print(
        f"{report['chunks']} chunks: conservative under the largest true count on "
        f"{report['under']} ({report['under_2pct']} by more than 2%, {report['under_5pct']} by "
        f"more than 5%); lowest {report['min_ratio']:.3f} of it; {report['mean_over']:+.1%} "
        "over it on average"
    )
    for w in worst:
        print(f"  {w['ratio']:.3f}  {w['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
