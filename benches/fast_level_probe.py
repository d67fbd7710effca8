"""Can a table-scan-speed estimate reach 5% per class? The `fast` level question of SPEC A3.

    python benches/fast_level_probe.py           # the table below, about 30 s
    python benches/fast_level_probe.py --json

A scan that keeps up with a byte-class table (~4 GB/s here) cannot look anything up per
pre-tokenizer piece; what it can produce is counts: one bit mask per byte class for each
64-byte window, combined with shifts and ands, and popcounts. This probe computes such counts
for every document of the fitting corpus (numpy stands in for the SIMD code; the counts are the
same):

* bytes per class (lower, upper, digit, space, newline, tab, punctuation, UTF-8 continuation,
  vowels, hex letters);
* run starts per class (letters, digits, punctuation, spaces, newlines, non-ASCII);
* run lengths as piecewise-linear terms, ``sum(max(0, L - k))``: the popcount of positions
  whose run so far is at least ``k + 1`` long (letters up to 16, digits, punctuation, spaces,
  newlines, non-ASCII);
* transitions: a word after a space, lower to upper (camelCase), upper to lower, upper after
  upper, two and three consonants in a row, letters next to digits, non-ASCII inside an ASCII
  word;
* non-ASCII characters per Unicode range, both counted and weighted by each character's own
  token count in the encoding (a 64K-entry table per encoding: a lookup per character, which a
  fast level could afford).

Then a linear model per encoding, fitted on the fit split by ridge least squares on the relative
error (every class weighted alike), and evaluated on the eval split: that is what a `fast`
level built this way would ship. Beside it, the same features fitted on each class alone and
evaluated on that class: a bound no single model can beat, since the estimator does not know a
text's class. Oracles: quicktok (development-only, no network).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "estimator"))

import corpus

ENCODINGS = ("cl100k_base", "o200k_base", "llama3", "qwen3")
#: The `fast` level's target (SPEC A3): mean |error| per class.
FAST_TARGET = 0.05
#: Ridge penalties tried; the one scoring best on the eval split is kept (which flatters the
#: probe: a shipped model would choose it blind).
RIDGES = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: Unicode ranges for the per-character features (Latin, IPA and combining marks, Greek,
#: Cyrillic, Armenian, Hebrew, Arabic, Syriac and Thaana, Indic, Thai, other BMP letters,
#: punctuation and symbols, kana, CJK ideographs, Hangul, the rest of the BMP, the rest).
RANGES = (
    (0x80, 0x24F),
    (0x250, 0x36F),
    (0x370, 0x3FF),
    (0x400, 0x52F),
    (0x530, 0x58F),
    (0x590, 0x5FF),
    (0x600, 0x6FF),
    (0x700, 0x8FF),
    (0x900, 0xDFF),
    (0xE00, 0xE7F),
    (0xE80, 0x1FFF),
    (0x2000, 0x2FFF),
    (0x3000, 0x30FF),
    (0x3100, 0x9FFF),
    (0xA000, 0xD7FF),
    (0xD800, 0xFFFF),
    (0x10000, 0x10FFFF),
)
_STARTS = np.array([lo for lo, _ in RANGES])
VOWELS = np.frombuffer(b"aeiouyAEIOUY", dtype=np.uint8)
HEX_LETTERS = np.frombuffer(b"abcdefABCDEF", dtype=np.uint8)


def after(mask: np.ndarray, steps: int = 1) -> np.ndarray:
    """``mask`` moved ``steps`` bytes right: position i holds ``mask[i - steps]``."""
    moved = np.zeros_like(mask)
    moved[steps:] = mask[:-steps]
    return moved


def run_terms(mask: np.ndarray, ks: tuple[int, ...]) -> list[int]:
    """``sum(max(0, L - k + 1))`` over the runs of ``mask``, for each ``k`` in ``ks``."""
    out = []
    at_least = mask.copy()
    for k in range(1, max(ks) + 1):
        if k > 1:
            at_least = after(at_least) & mask
        if k in ks:
            out.append(int(at_least.sum()))
    return out


def scan_counts(text: str) -> list[int]:
    """The counts a window-at-a-time scan of the bytes can produce."""
    b = np.frombuffer(text.encode(), dtype=np.uint8)
    lower = (b >= 97) & (b <= 122)
    upper = (b >= 65) & (b <= 90)
    digit = (b >= 48) & (b <= 57)
    space = b == 32
    newline = (b == 10) | (b == 13)
    tab = b == 9
    high = b >= 128
    cont = high & (b < 192)
    punct = ~high & ~lower & ~upper & ~digit & ~space & ~newline & ~tab
    letter = lower | upper
    vowel = np.isin(b, VOWELS)
    consonant = letter & ~vowel
    hex_letter = np.isin(b, HEX_LETTERS)
    classes = (lower, upper, digit, space, newline, tab, punct, cont, vowel, hex_letter)
    out = [int(m.sum()) for m in classes]
    out += [int((m & ~after(m)).sum()) for m in (letter, digit, punct, space, newline, high)]
    out += run_terms(letter, (2, 3, 4, 5, 6, 7, 8, 10, 12, 16))
    out += run_terms(digit, (2, 3, 4, 5, 6))
    out += run_terms(punct, (2, 3, 4))
    out += run_terms(space, (2, 3, 4))
    out += run_terms(newline, (2, 3))
    out += run_terms(high, (2, 3, 4, 6, 9, 12))
    pairs = (
        letter & ~after(letter) & after(space),
        upper & after(lower),
        lower & after(upper),
        upper & after(upper),
        consonant & after(consonant),
        consonant & after(consonant) & after(consonant, 2),
        digit & after(letter),
        letter & after(digit),
        (b >= 192) & after(letter),
        letter & after(cont),
    )
    out += [int(m.sum()) for m in pairs]
    return out


def char_counts(text: str, costs: dict[str, int]) -> list[int]:
    """Per Unicode range: non-ASCII characters, their own token counts, the single tokens."""
    out = np.zeros(3 * len(RANGES), dtype=np.int64)
    for ch in text:
        if ord(ch) >= 0x80:
            r = int(np.searchsorted(_STARTS, ord(ch), side="right")) - 1
            cost = costs[ch]
            out[3 * r] += 1
            out[3 * r + 1] += cost
            out[3 * r + 2] += cost == 1
    return out.tolist()


def fit_linear(x: np.ndarray, y: np.ndarray, weight: np.ndarray, ridge: float) -> np.ndarray:
    """Coefficients minimising ``sum(weight * (x @ c / y - 1) ** 2)`` plus a ridge penalty."""
    a = x * (np.sqrt(weight) / y)[:, None]
    t = np.sqrt(weight)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-9)
    a = a / scale
    coef = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ t)
    result: np.ndarray = coef / scale
    return result


def best_errors(
    x: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray,
    fit: np.ndarray,
    score: Callable[[np.ndarray], float],
) -> np.ndarray:
    """Relative errors of the fit (on ``fit`` rows) whose ridge gives the lowest ``score``."""
    trials = [x @ fit_linear(x[fit], y[fit], weight[fit], r) / y - 1 for r in RIDGES]
    return min(trials, key=score)


def probe() -> dict[str, dict[str, dict[str, float]]]:
    import quicktok

    docs = corpus.build()
    texts = [d.text for d in docs]
    cls = np.array([d.cls for d in docs])
    is_eval = np.array([d.split == "eval" for d in docs])
    counts = np.array([[*scan_counts(t), 1] for t in texts], dtype=np.float64)
    chars = sorted({ch for t in texts for ch in t if ord(ch) >= 0x80})
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in ENCODINGS:
        enc = quicktok.get_encoding(name)
        costs = dict(zip(chars, quicktok.count_batch(enc, chars), strict=True))
        x = np.hstack([counts, np.array([char_counts(t, costs) for t in texts], dtype=np.float64)])
        y = np.maximum(np.asarray(quicktok.count_batch(enc, texts), dtype=np.float64), 1.0)
        sizes = {k: np.sum(~is_eval & (cls == k)) for k in set(cls)}
        balance = np.array([1.0 / sizes[k] for k in cls])
        classes = sorted(set(cls))
        by_class = [is_eval & (cls == k) for k in classes]

        def worst_class(err: np.ndarray, by_class: list[np.ndarray] = by_class) -> float:
            return max(float(np.mean(np.abs(err[sel]))) for sel in by_class)

        one_model = best_errors(x, y, balance, ~is_eval, worst_class)
        results[name] = {}
        for k, sel in zip(classes, by_class, strict=True):

            def class_error(err: np.ndarray, sel: np.ndarray = sel) -> float:
                return float(np.mean(np.abs(err[sel])))

            per_class = best_errors(x, y, balance, ~is_eval & (cls == k), class_error)
            results[name][k] = {
                "one_model_mean_abs": float(np.mean(np.abs(one_model[sel]))),
                "per_class_mean_abs": float(np.mean(np.abs(per_class[sel]))),
            }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results = probe()
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print("mean |error| on the eval split: one model per encoding / each class fitted alone")
    print(f"{'class':<15}" + "".join(f"{n:>18}" for n in ENCODINGS))
    for k in next(iter(results.values())):
        cells = (results[n][k] for n in ENCODINGS)
        row = "".join(
            f"{c['one_model_mean_abs'] * 100:>11.1f}% /{c['per_class_mean_abs'] * 100:>4.1f}%"
            for c in cells
        )
        print(f"{k:<15}{row}")
    missed = sorted(
        {
            k
            for n in ENCODINGS
            for k, c in results[n].items()
            if c["per_class_mean_abs"] > FAST_TARGET
        }
    )
    print(f"classes over {FAST_TARGET:.0%} even when fitted alone: {', '.join(missed) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
