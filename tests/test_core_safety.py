"""The Rust core at the edges of its input: texts that end against unmapped memory, digit runs
longer than 4 GiB, a TextStream used from two threads, buffers other threads may write.

Each risky case runs in a subprocess, so that a crash (a read past a buffer's end, a Rust panic
turned into an abort) fails its test instead of the whole run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable

import pytest

import ctxbudget

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="maps memory with Linux calls (memfd, mprotect)"
)


def _run(code: str, timeout: float = 300) -> str:
    """Runs `code` in a fresh interpreter; its stdout, or the test fails with how it died."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


# Texts of every length 0..200 placed right before (and right after) a PROT_NONE page: any
# read past the end (or before the start) of the buffer faults, in any vector path.
_GUARD_PAGES = """
import ctypes, mmap, random
import ctxbudget
from ctxbudget import _core as core

libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE
m = mmap.mmap(-1, 3 * page)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
assert libc.mprotect(base, page, 0) == 0
assert libc.mprotect(base + 2 * page, page, 0) == 0
view = memoryview(m)
alphabets = [
    b"abc XYZ'", b" \\n\\t\\r\\x0b\\x0c", b"0123456789.,;:!?/",
    "\\u00e9\\u00df\\u00c6\\u03a9\\u0436\\u65e5\\u672c\\U0001f389".encode(),
    bytes(range(256)), b"\\xe3\\x80\\x80\\xe3\\x80\\x81\\xe4\\xb8\\x80", b"'s 're 'll \\n\\n  ",
]
rng = random.Random(20240601)
encodings = core.encodings()

def run(text):
    for e in encodings:
        core.estimate_tokens(text, e)
        core.estimate_tokens(text, e, parallel=True)
    for check in (core.validate_text, core.check_text):
        try:
            check(text)
        except ctxbudget.BinaryContentError:
            pass
    core.count_newlines(text)
    core.detect_type(text)
    core.estimate_batch([text, text], "o200k")
    stream = core.TextStream(encodings)
    try:
        stream.feed(text)
        stream.finish()
    except ctxbudget.BinaryContentError:
        pass

for _ in range(3):
    for n in range(201):
        alphabet = rng.choice(alphabets)
        data = bytes(rng.choice(alphabet) for _ in range(n))
        view[2 * page - n : 2 * page] = data
        run(view[2 * page - n : 2 * page])
        view[page : page + n] = data
        run(view[page : page + n])
print("ok")
"""


@linux_only
def test_texts_that_end_at_an_unmapped_page_are_read_within_bounds() -> None:
    assert _run(_GUARD_PAGES).strip() == "ok"


# A digit run of more than 4 GiB, without 4 GiB of memory: one 2 MiB block of "1" mapped again
# and again, one after the other (a memfd), read through a ctypes array.
_HUGE_DIGITS = """
import ctypes, mmap, os
from ctxbudget import _core as core

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [
    ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long
]
block = 2 * 1024 * 1024
copies = (2**32 // block) + 1
fd = os.memfd_create("digits")
os.write(fd, b"1" * block)
size = copies * block
MAP_FAILED = ctypes.c_void_p(-1).value
base = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert base not in (None, MAP_FAILED)
MAP_FIXED = 0x10
for k in range(copies):
    at = libc.mmap(base + k * block, block, mmap.PROT_READ, mmap.MAP_SHARED | MAP_FIXED, fd, 0)
    assert at == base + k * block, ctypes.get_errno()
huge = memoryview((ctypes.c_char * size).from_address(base))
one = memoryview((ctypes.c_char * block).from_address(base))
for encoding in ("o200k", "qwen3", "conservative"):
    print(encoding, core.estimate_tokens(huge, encoding), core.estimate_tokens(one, encoding))
print("len", size // block)
"""


@linux_only
def test_a_digit_run_over_4_gib_counts_as_its_length_says() -> None:
    """A digit run's length was counted in 32 bits: 4 GiB + 9 digits estimated as 3 tokens
    (the count wrapped), so a budget check would pass a 4 GiB tool output."""
    out = _run(_HUGE_DIGITS, timeout=600).split("\n")
    copies = int(out[-2].split()[1])
    for line in out[:-2]:
        encoding, huge, one = line.split()
        # Digit runs cost by their digit groups: linear in the run's length (up to each
        # text's rounding, and the few tokens `conservative` adds to every text).
        want = int(one) * copies
        assert abs(int(huge) - want) <= want // 10_000, (encoding, huge, one, copies)


_STREAM_TWO_THREADS = """
import threading
from ctxbudget import _core as core

stream = core.TextStream(["o200k", "cl100k"])
big = ("word " * 200_000).encode()  # above the size fed with the interpreter released
errors = []
fed = []

def feed(data, times):
    for _ in range(times):
        try:
            stream.feed(data)
        except RuntimeError as e:
            errors.append(str(e))
        else:
            fed.append(len(data))

threads = [
    threading.Thread(target=feed, args=(big, 30)),
    threading.Thread(target=feed, args=(b"x ", 3000)),
]
for t in threads:
    t.start()
for t in threads:
    t.join()
total, tokens, cut = stream.finish()
# Every feed either counted whole or refused: no bytes lost or counted twice.
assert total == sum(fed) and cut == 0, (total, sum(fed), cut)
assert all("borrowed" in e for e in errors), errors[:3]
print("ok")
"""


def test_a_text_stream_fed_from_two_threads_refuses_rather_than_crashes() -> None:
    assert _run(_STREAM_TWO_THREADS).strip() == "ok"


def test_a_text_stream_after_finish_raises() -> None:
    stream = ctxbudget._core.TextStream(["o200k"])
    stream.feed(b"some text")
    assert stream.finish()[0] == 9
    with pytest.raises(RuntimeError, match="finished"):
        stream.finish()
    with pytest.raises(RuntimeError, match="finished"):
        stream.feed(b"more")


def _ticks_during(call: Callable[[], object]) -> tuple[int, int]:
    """Runs `call` while another thread counts loop turns: the turns it made during the call,
    and before it (that it ran at all).

    With a switch interval far longer than the call, the other thread runs during it only if
    the call releases the interpreter: holding it, the call keeps it from its first bytecode to
    its last (a forced switch would take the whole interval), whatever else loads the machine.
    """
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())

    ticker = threading.Thread(target=tick)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.1)
    ticker.start()
    try:
        time.sleep(0.01)  # the ticker runs; the interpreter comes back after it
        start = time.perf_counter()
        call()
        end = time.perf_counter()
    finally:
        stop.set()
        ticker.join()
        sys.setswitchinterval(interval)
    return sum(start <= t <= end for t in ticks), sum(t < start for t in ticks)


_CALLS: dict[str, Callable[[object], object]] = {
    "estimate_tokens": lambda data: ctxbudget.estimate_tokens(data),  # type: ignore[arg-type]
    "estimate_tokens parallel": lambda data: ctxbudget.estimate_tokens(
        data,  # type: ignore[arg-type]
        parallel=True,
    ),
    "estimate_batch": lambda data: ctxbudget.estimate_batch([b"x", data]),  # type: ignore[list-item]
    "validate_text": lambda data: ctxbudget.validate_text(data),  # type: ignore[arg-type]
    "count_newlines": lambda data: ctxbudget._core.count_newlines(data),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_a_buffer_other_threads_may_write_is_read_with_the_interpreter_held(name: str) -> None:
    """The core reads a bytearray (or a writable memoryview) as a plain slice: with the
    interpreter released, another thread could write it meanwhile (a data race, a count of
    bytes that were never there at once). Such buffers are read with it held; bytes, which
    cannot change, still let other threads run."""
    call = _CALLS[name]
    # Long enough for the other thread to run when the interpreter is released; far shorter
    # than the switch interval when it is held.
    size = 16 * 1024 * 1024 if name in ("validate_text", "count_newlines") else 8 * 1024 * 1024
    block = b"".join(b"word%d, " % i for i in range(100_000))
    text = block * (size // len(block))
    call(b"warm up")  # the first estimate_batch imports numpy's C API, running Python code
    # A read-only view of a bytearray is read-only to its holder only: the bytearray's
    # owner can still write it.
    shared = bytearray(text)
    # A call holding the interpreter can still see the other thread's turns counted once in a
    # while: when the process is kept off the processors long enough that the call's wall time
    # reaches the switch interval (a loaded machine), the switch the other thread forces falls
    # due as the call returns, and that whole interval lands before the clock is read again
    # (about 750k turns, in 2 of some 6 full runs; no third thread was alive). A call that
    # releases it lets the other thread run every time: held means no turns in at least one
    # of three calls.
    for data in (shared, memoryview(shared), memoryview(shared).toreadonly()):
        tries = [_ticks_during(lambda data=data: call(data)) for _ in range(3)]
        assert all(before > 0 for _, before in tries), (data, tries)
        assert any(during == 0 for during, _ in tries), (data, tries)
    # The check itself sees a released interpreter: with bytes, or a view of bytes, the other
    # thread goes on. (A few tries: on a loaded machine the other thread may not get a core
    # during one call. The calls that take half a millisecond, twenty times a try, still well
    # under the switch interval; between them this thread holds the interpreter, so the turns
    # counted are taken inside them. The estimates take some 10 ms each: once.)
    repeat = 20 if name in ("validate_text", "count_newlines") else 1
    for data in (text, memoryview(text)):
        calls = lambda data=data: [call(data) for _ in range(repeat)]  # noqa: E731
        assert any(_ticks_during(calls)[0] for _ in range(10))


@pytest.mark.parametrize(
    ("encodings", "names"),
    [
        ("o200k", r"got the str 'o200k': pass \['o200k'\]"),
        (5, "list of encoding names .str., got int"),
        (["o200k", 5], "list of encoding names .str., got list"),
    ],
)
def test_text_stream_names_a_wrong_list_of_encodings(encodings: object, names: str) -> None:
    # Before: "Can't extract `str` to `Vec`"
    with pytest.raises(TypeError, match=names):
        ctxbudget._core.TextStream(encodings)  # type: ignore[arg-type]


def test_a_ctypes_array_is_read_as_its_bytes() -> None:
    # Its buffer gives no strides: "BufferError: strides is null" before.
    import ctypes

    data = (ctypes.c_char * 5)(*b"a\xc3\xa9bc")
    assert ctxbudget.check_text(data) == "aébc"
    ctxbudget.validate_text(data)
    assert ctxbudget.estimate_tokens(data) == ctxbudget.estimate_tokens(b"a\xc3\xa9bc")
    with pytest.raises(ctxbudget.BinaryContentError):
        ctxbudget.check_text((ctypes.c_char * 3)(*b"a\x00b"))
