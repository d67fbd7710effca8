"""How far the estimates are from Mistral's own tokenizer (Tekken, ``tekken_240911``), per class.

Mistral models get ``conservative`` (``encoding_for_model``): none of the four fitted encodings
is within 3% of Tekken. This reports, on any ``DIR/<class>/*.txt`` corpus, each encoding's mean
|error| against Tekken, and how often and how far ``conservative`` falls under it::

    python benches/estimator/corpus.py --write /tmp/eval       # the eval split as files
    python -m venv /tmp/tekken
    /tmp/tekken/bin/pip install mistral_common .                # its own venv: see below
    /tmp/tekken/bin/python benches/tekken.py --corpus /tmp/eval [--json]

``mistral_common`` (which ships the Tekken vocabulary) goes in a venv of its own: the fitting
corpus samples the installed packages, so installing it beside them changes that corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from ctxbudget.tokens import estimate_batch

ENCODINGS = ("cl100k", "o200k", "llama3", "qwen3", "conservative")


def tekken_counts(texts: list[str]) -> np.ndarray:
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    tok = Tekkenizer.from_file(str(path))
    return np.array([len(tok.encode(t, bos=False, eos=False)) for t in texts], dtype=np.float64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="DIR/<class>/*.txt")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    files = sorted(a.corpus.glob("*/*.txt"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    classes = np.array([f.parent.name for f in files])
    tekken = np.maximum(tekken_counts(texts), 1.0)
    errors = {e: estimate_batch(texts, e).astype(np.float64) / tekken - 1 for e in ENCODINGS}
    rows: dict[str, dict[str, float]] = {}
    for cls in sorted(set(classes)):
        sel = classes == cls
        row = {e: float(np.mean(np.abs(errors[e][sel]))) for e in ENCODINGS[:4]}
        cons = errors["conservative"][sel]
        row["conservative_under_share"] = float(np.mean(cons < 0))
        row["conservative_worst"] = float(np.min(cons))
        rows[cls] = row
    worst = int(np.argmin(errors["conservative"]))
    summary = {
        "files": len(files),
        "mean_abs_over_classes": {
            e: float(np.mean([r[e] for r in rows.values()])) for e in ENCODINGS[:4]
        },
        "conservative_under_share": float(np.mean(errors["conservative"] < 0)),
        "conservative_worst": float(errors["conservative"][worst]),
        "conservative_worst_file": os.path.relpath(files[worst], a.corpus),
    }
    if a.json:
        print(json.dumps({"classes": rows, **summary}, indent=1))
        return 0
    print(f"{len(files)} files; mean |error| against Tekken per class; conservative vs Tekken")
    print(f"| class | {' | '.join(ENCODINGS[:4])} | conservative under (share) | worst |")
    print("|---" * 7 + "|")
    for cls, r in rows.items():
        cells = " | ".join(f"{r[e]:.1%}" for e in ENCODINGS[:4])
        print(
            f"| {cls} | {cells} | {r['conservative_under_share']:.0%} | "
            f"{r['conservative_worst']:+.1%} |"
        )
    means = summary["mean_abs_over_classes"]
    assert isinstance(means, dict)
    print("mean over classes: " + ", ".join(f"{e} {v:.1%}" for e, v in means.items()))
    print(
        f"conservative under Tekken on {summary['conservative_under_share']:.0%} of files; "
        f"worst {summary['conservative_worst']:+.1%} ({summary['conservative_worst_file']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
