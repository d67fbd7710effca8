"""Error of the estimate on agent-style status lines full of symbols and emoji.

    python benches/symbols.py                     # the installed build
    python benches/symbols.py OLD.so NEW.so       # builds side by side (see ab_builds.py)

Agents write ``✅ tests passed``, ``🚀 deployed``, ``- ❌ build failed → retry``: symbols and
emoji, mostly after a space, which byte-level vocabularies often merge with the symbol's lead
bytes. The corpus holds few of them, so this bench makes its own: seeded lines of short words
with one or two symbols each. Prints, per encoding, the true count (quicktok, the `oracles`
extra) and the signed error of each build's estimate and of ``len(text) / 4``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from types import ModuleType

import quicktok

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_builds import load
from accuracy import ORACLES

#: Symbols and emoji, some with a variation selector (U+FE0F) after them, as agents write them.
SYMBOLS = ["✅", "❌", "⚠️", "⚠", "🚀", "🎉", "🔥", "📝", "💡", "👉", "✨", "📦", "🔧", "🐛", "→"]
SYMBOLS += ["•", "★", "✓", "✗", "⭐", "📊", "🧪", "⏳", "💥", "🔍", "📁", "🛠️", "✔️", "\u2139\ufe0f"]
SYMBOLS += ["▶", "⏱", "🟢", "🔴"]
WORDS = ["the", "build", "tests", "passed", "failed", "deploy", "fix", "error", "file", "update"]
WORDS += ["config", "run", "step", "done", "next", "check", "server", "client", "cache", "module"]


def status_lines(count: int = 4000, seed: int = 7) -> str:
    """``count`` seeded lines of 2-8 words, a symbol among them, often one in front too."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 8))]
        words.insert(rng.randint(0, len(words)), rng.choice(SYMBOLS))
        if rng.random() < 0.5:
            words.insert(0, rng.choice(SYMBOLS))
        bullet = "- " if rng.random() < 0.3 else ""
        lines.append(bullet + " ".join(words))
    return "\n".join(lines)


def installed() -> ModuleType:
    from ctxbudget import _core

    return _core


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("builds", nargs="*", type=Path, help="extension modules (.so) to compare")
    args = ap.parse_args()
    builds = [(str(p), load(p)) for p in args.builds] or [("installed", installed())]
    text = status_lines()
    labels = [chr(ord("A") + k) for k in range(len(builds))]
    print(f"{len(text.encode())} bytes of status lines; signed error against the tokenizer")
    for label, (name, _) in zip(labels, builds, strict=True):
        print(f"  {label}: {name}")
    print(f"{'encoding':9s} {'tokens':>7s} " + " ".join(f"{x:>7s}" for x in [*labels, "len/4"]))
    for ours, theirs in ORACLES:
        true = quicktok.get_encoding(theirs).count(text)
        guesses = [m.estimate_tokens(text, ours) for _, m in builds] + [len(text) / 4]
        print(f"{ours:9s} {true:7d} " + " ".join(f"{(g - true) / true:+7.1%}" for g in guesses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
