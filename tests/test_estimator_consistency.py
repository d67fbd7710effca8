"""The estimator gives one number per text, whichever path computes it.

``estimate_tokens`` has many ways to reach a count: a ``str`` is read in its own storage (1, 2 or
4 bytes a character, transcoded through a small UTF-8 buffer flushed at safe cuts), bytes-like
objects are read in place, ``estimate_batch`` shares a memo of split costs across texts and goes
parallel over 256 KB, ``parallel=True`` cuts a text over 1 MB into parts, 64-byte windows are
costed together where the text is ASCII, and ``conservative`` runs its three encodings from one
pass. Each of these is documented to give exactly what the plain serial scan of the text's UTF-8
bytes gives. These properties (fixed seeds, no oracle) pin that down through the public API,
plus the documented behaviour on bad input (lone surrogates, invalid UTF-8, NUL, wrong types),
bounded memory on 100 MB inputs and the interpreter being released for large ones.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from ctxbudget import (
    ENCODINGS,
    BinaryContentError,
    check_text,
    detect_type,
    estimate_batch,
    estimate_tokens,
    validate_text,
)
from ctxbudget._core import count_newlines

#: The four encodings with tables of their own (``conservative`` is derived from three of them).
FITTED = ("cl100k", "o200k", "llama3", "qwen3")

#: Atoms every storage kind can hold: pieces of every kind, the boundaries the scanners and the
#: ``str`` buffer's cut rule care about (``\n`` before ``/`` or white space, ``'s``, vertical
#: tab, CRLF, pieces of 16/17 and 64/65 bytes, where window hashing changes strategy).
ASCII_ATOMS = (
    "the",
    " quick",
    "Brown",
    " camelCaseWord",
    "getValue",
    "XMLHttpRequest",
    " ",
    "  ",
    "\n",
    "\n\n  ",
    "\n/",
    "\n\t",
    "\n\x0b",
    "\t",
    "\r\n",
    "\r",
    "\x0b",
    "\x00",
    "12345",
    "3.14159265",
    "'s",
    "'ll",
    "it's",
    "x/y",
    "//",
    '{"key": ',
    "----",
    "========",
    "https://example.com/a/b",
    "***",
    ", ",
    ".",
    "'",
    '"',
    "aGVsbG8gd29ybGQ=",
    "0x1F",
    " information",
    "a" * 16,
    "b" * 17,
    "q" * 64,
    "z" * 65,
    " " * 20,
    "-" * 30,
)

#: Extra atoms per ``str`` storage kind (PEP 393): they force that kind of storage.
KIND_ATOMS: dict[str, tuple[str, ...]] = {
    "ascii": (),
    "latin1": ("é", "ÿ", " Straße", "\xa0", "µ", "²", "\x85", "\xd7"),
    "ucs2": (
        "日本語",
        "。",
        "、",
        "「",
        "\u3000",
        "か\u3099",
        "・",
        "—",
        "\u0301",
        "\u200f",
        "١٢٣",
        "०१२",
        "\u2028",
        " Привет",
        "\ufeff",
    ),
    "ucs4": (
        "🎉",
        "👨\u200d👩\u200d👧",
        "\U00012000",
        "\U0001d538",
        "\U0001d7d9\U0001d7da",
        "🇫🇷",
        "\U000e0041",
    ),
}

#: One character per kind that makes sure a text really is stored that way.
KIND_MARK = {"ascii": "", "latin1": "é", "ucs2": "日", "ucs4": "🎉"}


def random_text(rng: random.Random, atoms: Sequence[str], count: int) -> str:
    """``count`` atoms drawn from ``atoms``."""
    return "".join(rng.choice(atoms) for _ in range(count))


def kind_text(rng: random.Random, kind: str, count: int) -> str:
    """A random text stored as ``kind`` (ASCII atoms mixed with that kind's own)."""
    atoms = ASCII_ATOMS + KIND_ATOMS[kind] * 3
    return random_text(rng, atoms, count) + KIND_MARK[kind]


def conservative_margin() -> int:
    """The fitted ``conservative`` margin in 1/256 units, read back through the API.

    An invalid byte costs exactly one token in every fitted encoding, so 256 of them make the
    largest estimate exactly 256 and ``conservative`` exactly ``margin + 4``.
    """
    return estimate_tokens(b"\xff" * 256, "conservative") - 4


def conservative_from_parts(
    text: str | bytes, margin: int, parts: tuple[str, ...] = ("cl100k", "qwen3", "o200k")
) -> int:
    """``conservative`` as documented: the largest of cl100k, qwen3 and o200k, raised."""
    top = max(estimate_tokens(text, e) for e in parts)
    return 0 if top == 0 else -(-top * margin // 256) + 4


# --- every input type and storage kind gives the UTF-8 bytes' count ----------------------------


@pytest.mark.parametrize("kind", sorted(KIND_ATOMS))
def test_every_input_type_counts_the_same(kind: str) -> None:
    """A ``str`` of any storage kind, and its UTF-8 as ``bytes``, ``bytearray``, a
    ``memoryview`` (also an offset slice of a larger buffer) or one item of a batch, is the
    same text: the count must not depend on how it was handed over."""
    rng = random.Random(f"input-types-{kind}")
    for _ in range(120):
        # An ASCII lead of random length moves everything after it across window positions.
        lead = random_text(rng, ("a", " ", "bc", "\n", ",", "12"), rng.randrange(0, 140))
        text = lead + kind_text(rng, kind, rng.choice([1, 4, 20, 80, 300]))
        data = text.encode()
        padded = b"#" * rng.randrange(1, 70) + data + b"tail"
        start = len(padded) - len(data) - 4
        for encoding in ENCODINGS:
            want = estimate_tokens(data, encoding)
            got = [
                estimate_tokens(text, encoding),
                estimate_tokens(bytearray(data), encoding),
                estimate_tokens(memoryview(data), encoding),
                estimate_tokens(memoryview(padded)[start : start + len(data)], encoding),
                int(estimate_batch([text], encoding)[0]),
                int(estimate_batch([data], encoding)[0]),
            ]
            assert got == [want] * len(got), (encoding, text)


@pytest.mark.parametrize("mark", ["é", "\xa0", "日", "\u0301", "🎉"])
def test_one_wide_character_at_every_offset(mark: str) -> None:
    """One character outside ASCII at each offset 0..599 of ASCII text switches the ``str``
    reader from whole 256-unit blocks to 16-unit runs at every possible phase, and the scanner
    from 64-byte windows to the byte scanner at every window position; none of it may change
    the count."""
    base = "The quick brown fox, it's 12345 jumps!\n  getValue() /path/to\r\n" * 12
    for n in range(0, 600, 3):
        head = base[:n]
        for text in (head + mark + base[:80], head + mark, mark + head):
            data = text.encode()
            for encoding in ENCODINGS:
                assert estimate_tokens(text, encoding) == estimate_tokens(data, encoding), (
                    encoding,
                    n,
                )


def test_str_matches_utf8_across_the_transcoding_buffer() -> None:
    """A ``str`` that is not ASCII is transcoded 64 KB at a time and each part estimated on its
    own after a cut where every pre-tokenizer starts a new piece. Texts of 60-300 KB made of
    few atoms put the flush points everywhere, next to the cases the cut rule must refuse
    (``\\n`` before white space or ``/``, a kana before its sound mark, ``・`` before ``。``)."""
    rng = random.Random(15)
    atoms = (
        *ASCII_ATOMS[:24],
        "é",
        "ÿ",
        "日本語",
        "。",
        "、",
        "か\u3099",
        "・",
        "🎉",
        "\u3000",
        "é" * 50,
        "a1" * 40,
    )
    for _ in range(12):
        subset = rng.sample(atoms, rng.randrange(2, 9))
        text = random_text(rng, subset, rng.randrange(12_000, 60_000)) + rng.choice("é日🎉")
        data = text.encode()
        for encoding in ENCODINGS:
            assert estimate_tokens(text, encoding) == estimate_tokens(data, encoding), (
                encoding,
                subset,
            )


def test_every_unicode_category_counts_the_same_in_every_form() -> None:
    """Characters of every general category (marks, format characters such as ZWJ and RTL
    marks, digits of every script, line and paragraph separators, private use), alone, spaced
    and run together, go through the ``str`` and bytes paths alike, and nothing non-empty
    counts zero."""
    by_category: dict[str, list[str]] = {}
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        by_category.setdefault(unicodedata.category(char), []).append(char)
    rng = random.Random(7)
    categories = sorted(by_category)
    samples = [
        "👨\u200d👩\u200d👧\u200d👦 family",
        "e\u0301\u0302\u0303 stacked marks",
        "\u202eevil\u202c \u200f\u05e9\u05dc\u05d5\u05dd\u200e abc",
        "a\r\nb\rc\n\rd\r\r\n\n",
        "".join(c for c in by_category["Nd"] if ord(c) < 0x10000)[:400],
    ]
    for _ in range(600):
        if rng.random() < 0.5:
            pool = by_category[rng.choice(categories)]
        else:
            pool = [rng.choice(by_category[rng.choice(categories)]) for _ in range(20)]
        chars = [rng.choice(pool) for _ in range(rng.choice([1, 2, 5, 30]))]
        samples.append(rng.choice(["", " ", "\n", "\r\n"]).join(chars))
    for encoding in ENCODINGS:
        counts = estimate_batch(samples, encoding).tolist()
        for text, count in zip(samples, counts, strict=True):
            assert estimate_tokens(text, encoding) == count
            assert estimate_tokens(text.encode(), encoding) == count, (encoding, text)
            assert count > 0, (encoding, text)


# --- the fast paths give what the plain scan gives ---------------------------------------------


def test_window_alignment_does_not_change_a_count() -> None:
    """256 copies of a block that starts and ends where every pre-tokenizer starts a piece
    (an ASCII letter after ``\\n``) cost exactly 256 times the block's table units, so their
    count is a whole number with no rounding left over. A lead text ending in ``\\n`` then
    adds exactly its own count, whatever it shifts the 64-byte windows by, unless a window
    costs a piece differently from the byte scanner (or from another window position)."""
    rng = random.Random(12)
    atoms = (*ASCII_ATOMS, "é", " Straße", "日本語", "。", "🎉", "\u0301", "١٢٣")
    for _ in range(80):
        block = ("A" + random_text(rng, atoms, rng.choice([2, 5, 10, 30])) + "\n") * 256
        data = block.encode()
        for encoding in FITTED:
            whole = estimate_tokens(data, encoding)
            for shift in rng.sample(range(130), 4):
                lead = rng.choice(["q", "é", " ", "日"]) * shift + "\n"
                assert estimate_tokens(lead + block, encoding) == (
                    estimate_tokens(lead, encoding) + whole
                ), (encoding, shift, block[: len(block) // 256])


def test_conservative_is_its_three_encodings_raised_by_the_margin() -> None:
    """``conservative`` is documented as the largest of the cl100k, qwen3 and o200k estimates,
    raised by the fitted margin plus 4. It is computed in one pass of its own (windows settled
    where both dialects meet), so this checks that pass against the three separate scans,
    exactly, on short and long (memoized) texts of every storage kind."""
    margin = conservative_margin()
    assert 256 <= margin <= 512
    rng = random.Random(13)
    texts: list[str] = ["", "a", "\xff"]
    for kind in KIND_ATOMS:
        texts += [kind_text(rng, kind, rng.choice([1, 3, 20, 60, 200])) for _ in range(300)]
        texts.append(kind_text(rng, kind, 8000))
    for text in texts:
        want = conservative_from_parts(text, margin)
        got = estimate_tokens(text, "conservative")
        assert estimate_tokens(text.encode(), "conservative") == got
        if unicodedata.normalize("NFC", text) == text:
            assert got == want, text
            continue
        # qwen3 alone reads decomposed text composed, as its tokenizer does; conservative
        # takes qwen3's part of the text as it is (rust/estimate.rs, `Estimator::feed`)
        floor = conservative_from_parts(text, margin, ("cl100k", "o200k"))
        assert floor <= got <= want * 1.05 + 4 and got >= want * 0.95, text
    raw = random.Random(14)
    for _ in range(300):
        data = bytes(raw.randrange(256) for _ in range(raw.choice([1, 7, 64, 300])))
        assert estimate_tokens(data, "conservative") == conservative_from_parts(data, margin)


def test_conservative_is_never_below_its_three_encodings() -> None:
    """Whatever the margin, ``conservative`` is above cl100k, qwen3 and o200k on every
    non-empty text (by construction) and by at least the constant 4."""
    rng = random.Random(16)
    for kind in KIND_ATOMS:
        for _ in range(200):
            text = kind_text(rng, kind, rng.choice([1, 5, 40]))
            top = max(estimate_tokens(text, e) for e in ("cl100k", "qwen3", "o200k"))
            assert estimate_tokens(text, "conservative") >= top + 4


# --- batches ----------------------------------------------------------------------------------


def test_a_batch_counts_each_text_as_alone() -> None:
    """A batch shares one memo of split costs across its texts and, over 256 KB, runs them in
    parallel runs on several threads; each text must still count what it counts alone. The
    first text repeats the pieces of the later ones in other contexts, so that a memo hit from
    another text (or a cost that depends on context) would show."""
    rng = random.Random(17)
    small = [
        kind_text(rng, rng.choice(sorted(KIND_ATOMS)), rng.choice([0, 1, 5, 40]))
        for _ in range(300)
    ]
    primer = " ".join(small) * 3
    big = [kind_text(rng, "ucs2", 3000) for _ in range(20)]
    mixed: list[str | bytes | bytearray | memoryview] = [
        primer,
        *small,
        *(t.encode() for t in small[:50]),
        *(bytearray(t.encode()) for t in small[50:80]),
        *(memoryview(t.encode()) for t in small[80:100]),
        *big,
    ]
    assert sum(len(t.encode()) if isinstance(t, str) else len(t) for t in mixed) > 256 * 1024
    for encoding in ENCODINGS:
        want = [estimate_tokens(t, encoding) for t in mixed]
        assert estimate_batch(mixed, encoding).tolist() == want, encoding
        # Serial (under 256 KB), and the same texts in another order.
        assert estimate_batch(small, encoding).tolist() == want[1:301]
        assert estimate_batch(small[::-1], encoding).tolist() == want[1:301][::-1]


def test_batch_inputs_of_every_shape() -> None:
    """Empty lists and generators, empty strings, numpy arrays of ``str`` and of ``bytes``
    (their items are ``str``/``bytes`` subclasses) and an object array all work; a 2-D
    array's rows are wide-item buffers and are refused, naming the item."""
    assert estimate_batch([]).tolist() == []
    assert estimate_batch(iter([])).dtype == np.int64
    assert estimate_batch(["", b"", bytearray()]).tolist() == [0, 0, 0]
    texts = ["hello world", "日本語の文章", "🎉 party time"]
    want = [estimate_tokens(t) for t in texts]
    assert estimate_batch(t for t in texts).tolist() == want
    assert estimate_batch(np.array(texts)).tolist() == want
    assert estimate_batch(np.array(texts, dtype=object)).tolist() == want
    assert estimate_batch(np.array([t.encode() for t in texts[:1]])).tolist() == want[:1]
    with pytest.raises(ValueError, match=r"item 0: .*not items of 4 bytes"):
        estimate_batch(np.array([["a", "b"], ["c", "d"]]))


@pytest.mark.parametrize(
    "bad, error, pattern",
    [
        (None, TypeError, r"item 2: .*not NoneType"),
        (3, TypeError, r"item 2: .*not int"),
        (["nested"], TypeError, r"item 2: .*not list"),
        (memoryview(b"abcd")[::2], ValueError, r"item 2: .*C-contiguous"),
        (memoryview(b"abcdefgh").cast("H"), ValueError, r"item 2: .*not items of 2 bytes"),
    ],
)
def test_a_bad_batch_item_is_named(bad: object, error: type[Exception], pattern: str) -> None:
    """A wrong item anywhere in a batch is a clear error naming its index, small batch or
    large."""
    for filler in ("ok", "x" * 300_000):
        with pytest.raises(error, match=pattern):
            estimate_batch([filler, filler, bad])  # type: ignore[list-item]


# --- one large text in parallel parts ----------------------------------------------------------


def test_parallel_parts_add_up_to_the_serial_count() -> None:
    """``parallel=True`` cuts a text over 1 MB at positions where every pre-tokenizer starts a
    new piece and sums the parts' table units before rounding: the count must be the serial
    one, for ``str`` (here stored 2 and 4 bytes a character) and bytes alike."""
    rng = random.Random(5)
    atoms = (*ASCII_ATOMS, "é", "日本語", "。", "、", "か\u3099", "・", "🎉", "\u2028")
    text = random_text(rng, rng.sample(atoms, 12), 200_000) + rng.choice("日🎉")
    data = text.encode()
    assert len(data) > 1024 * 1024
    for encoding in ENCODINGS:
        want = estimate_tokens(data, encoding)
        assert estimate_tokens(text, encoding) == want
        assert estimate_tokens(text, encoding, parallel=True) == want
        assert estimate_tokens(data, encoding, parallel=True) == want


_PARALLEL_CHILD = """
import json, random, sys
import ctxbudget as cb
rng = random.Random(4)
atoms = ["the", " quick", "Brown", "\\n", "\\n\\n", "\\n/", "12345", "'s", "é", "日本語", "。",
         "🎉", "\\t", "  ", "x" * 50, ", ", "\\r\\n", "\\x0b"]
text = "".join(rng.choice(atoms) for _ in range(300_000))
print(json.dumps({e: [cb.estimate_tokens(text, e, parallel=True),
                      cb.estimate_tokens(text.encode(), e, parallel=True)]
                  for e in cb.ENCODINGS}))
"""


def test_parallel_count_does_not_depend_on_the_number_of_threads() -> None:
    """The parts a text is cut into depend on the number of threads (4 a thread), so a
    process with 1 thread and one with 3 cut at other places: both must give the serial
    count."""
    code = _PARALLEL_CHILD
    serial = json.loads(
        subprocess.run(
            [sys.executable, "-c", code.replace("parallel=True", "parallel=False")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    for threads in ("1", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        got = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(got.stdout) == serial, threads


def test_a_very_long_piece_counts_the_same_on_every_path() -> None:
    """10 MB of letters without a space is one piece: ASCII ``str``, bytes, parallel and a
    batch of one must agree (the ``str`` is ASCII, so no transcoding cut applies)."""
    text = "abcdefghij" * 1_000_000
    data = text.encode()
    for encoding in ("cl100k", "conservative"):
        want = estimate_tokens(data, encoding)
        assert want > 0
        assert estimate_tokens(text, encoding) == want
        assert estimate_tokens(text, encoding, parallel=True) == want
        assert int(estimate_batch([text], encoding)[0]) == want


def test_a_piece_longer_than_4_mb_in_a_non_ascii_str_counts_as_its_utf8() -> None:
    """The ``str`` buffer was cut at 4 MB inside a piece with no cut: 4 MB of letters and an
    accented one counted 4,864 tokens more than their UTF-8 bytes in cl100k."""
    text = "a" * (4 * 1024 * 1024 + 100) + "é"
    data = text.encode()
    for encoding in ENCODINGS:
        assert estimate_tokens(text, encoding) == estimate_tokens(data, encoding), encoding


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KIND_ATOMS))
def test_a_lone_surrogate_is_a_clear_error_at_its_position(kind: str) -> None:
    """A ``str`` with a lone surrogate has no UTF-8 form: every path raises Python's own
    ``UnicodeEncodeError`` (never a panic, never a count), pointing at the surrogate, in a
    short text, after whole ASCII blocks, past a buffer flush and in parallel parts."""
    mark = KIND_MARK[kind]
    for size in (0, 1, 255, 256, 257, 700, 70_000, 1_100_000):
        text = mark + "ab cd\n" * (size // 6) + "x" * (size % 6)
        bad = text + "\ud800" + "tail"
        for encoding in ("o200k", "conservative"):
            for parallel in (False, True):
                with pytest.raises(UnicodeEncodeError) as caught:
                    estimate_tokens(bad, encoding, parallel=parallel)
                assert caught.value.start == len(text), (size, parallel)
        with pytest.raises(UnicodeEncodeError) as caught:
            estimate_batch(["ok", bad, "\udfff"])
        assert "estimate_batch: item 1 has no UTF-8 form" in caught.value.__notes__


def test_invalid_utf8_costs_one_token_a_byte() -> None:
    """Invalid UTF-8 in bytes is tolerated and documented to cost one token per byte in every
    fitted encoding (``conservative`` then adds its margin), wherever it sits."""
    for bad in (b"\xff", b"\x80" * 7, b"\xc3", b"\xe6\x97", b"\xf0\x9f\x8e", b"\xed\xa0\x80"):
        for encoding in FITTED:
            assert estimate_tokens(bad, encoding) == len(bad)
            assert estimate_tokens(b"a" * 100 + b"\n" + bad, encoding) == (
                estimate_tokens(b"a" * 100 + b"\n", encoding) + len(bad)
            )


def test_nul_and_control_characters_are_counted() -> None:
    """NUL and other control characters are text to the estimator (``check_text`` is what
    refuses NUL): counted, the same in ``str`` and bytes."""
    for text in ("\x00", "a\x00b", "\x00" * 100, "\x01\x02\x1b[31mred\x1b[0m", "\x7f\x85"):
        for encoding in ENCODINGS:
            count = estimate_tokens(text, encoding)
            assert count > 0
            assert estimate_tokens(text.encode(), encoding) == count


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 127, 128, 4095, 70_000])
def test_text_checks_agree_with_python(size: int) -> None:
    """``validate_text`` and ``check_text`` accept exactly what decodes as UTF-8 without a NUL,
    report the same first bad offset as Python's decoder (before and after the 64 KB mark
    where the scan runs without the interpreter), ``check_text`` returns ``bytes.decode()``,
    and ``count_newlines`` / ``detect_type`` read every buffer type alike."""
    rng = random.Random(size)
    good = "".join(rng.choice(["a", "\n", "é", "日", "🎉", " ", "\r\n"]) for _ in range(size))
    data = good.encode()[:size] if size else b""
    data = data.decode("utf-8", "ignore").encode()
    for bad in (b"", b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe6\x97x"):
        blob = data + bad + b"tail\n"
        nul = blob.find(b"\0")
        try:
            blob.decode()
            invalid = -1
        except UnicodeDecodeError as err:
            invalid = err.start
        found = [o for o in (nul, invalid) if o >= 0]
        for source in (blob, bytearray(blob), memoryview(b"#" + blob)[1:]):
            assert count_newlines(source) == blob.count(b"\n")
            assert detect_type(source) == detect_type(blob)
            if not found:
                validate_text(source)
                assert check_text(source) == blob.decode()
                continue
            for check in (validate_text, check_text):
                with pytest.raises(BinaryContentError) as caught:
                    check(source)
                assert caught.value.offset == min(found)


# --- memory and the interpreter lock -----------------------------------------------------------

_MEMORY_CHILD = """
import sys
import ctxbudget as cb

def peak_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")

kind = sys.argv[1]
n = 100_000_000  # bytes of storage
text = {
    "ucs2": lambda: "日本語の文。\\n" * (n // 14),
    "latin1": lambda: "café crème " * (n // 11),
    "bytes": lambda: ("word, 日本語\\n" * (n // 16)).encode(),
}[kind]()
cb.estimate_tokens("warm up " * 200_000, "conservative", parallel=True)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = peak_mb()
cb.estimate_tokens(text, "o200k")
cb.estimate_tokens(text, "conservative", parallel=True)
print(peak_mb() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("kind", ["ucs2", "latin1", "bytes"])
def test_a_100_mb_text_takes_a_few_mb(kind: str) -> None:
    """A 100 MB text is read in place (bytes) or through a transcoding buffer (``str``) cut
    where every pre-tokenizer starts a piece (``café crème ...``: before each space; until
    2026-12-02 only after an ASCII letter, and this text grew the buffer to its cap): peak
    memory must grow by a few MB, not by a copy of the text."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, kind], capture_output=True, text=True, check=False
    )
    if "clear_refs" in out.stderr:
        pytest.skip("cannot reset the peak RSS here")
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 16, out.stdout


def _runs_while_estimating(call: Callable[[], object]) -> int:
    """How many times this thread ran Python code while another thread ran ``call``."""
    started = threading.Event()
    done = threading.Event()

    def work() -> None:
        started.set()
        call()
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    runs = 0
    while not done.is_set():
        runs += 1
    worker.join()
    return runs


def test_the_interpreter_is_released_for_large_inputs() -> None:
    """While one thread estimates 50 MB (``str`` of each storage path, bytes, a batch, in
    parallel), another thread keeps running Python code: the estimate does not hold the
    interpreter lock (with it held, the loop here would not run at all until the end)."""
    ucs2 = "日本語の文章。\n" * 3_000_000
    ascii_text = "some words, here 123\n" * 2_500_000
    data = ascii_text.encode()
    calls: list[Callable[[], object]] = [
        lambda: estimate_tokens(ucs2, "conservative"),
        lambda: estimate_tokens(ascii_text, "o200k"),
        lambda: estimate_tokens(data, "conservative"),
        lambda: estimate_tokens(bytearray(data), "cl100k"),
        lambda: estimate_tokens(ascii_text, "o200k", parallel=True),
        lambda: estimate_batch([ucs2, data], "qwen3"),
    ]
    for call in calls:
        assert _runs_while_estimating(call) > 1000
