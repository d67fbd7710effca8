from __future__ import annotations

import gzip
import io
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget import BinaryContentError, check_text, detect_type, validate_text
from ctxbudget._core import count_newlines


def first_bad_offset(data: bytes) -> int | None:
    """Reference: the first NUL or invalid UTF-8 byte, by Python's own decoder."""
    nul = data.find(b"\0")
    try:
        data.decode("utf-8")
        bad = -1
    except UnicodeDecodeError as err:
        bad = err.start
    found = [o for o in (nul, bad) if o >= 0]
    return min(found) if found else None


def zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    return buf.getvalue()


BINARIES = {
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    "pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nstream\n\x00\x01\x02",
    "gzip": gzip.compress(b"hello world " * 20),
    "zip": zip_bytes(),
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01",
    "gif": b"GIF89a\x01\x00\x01\x00\x80\x00\x00",
    "wasm": b"\x00asm\x01\x00\x00\x00",
}


@pytest.mark.parametrize("kind", sorted(BINARIES))
def test_binary_is_refused_with_its_type(kind: str) -> None:
    with pytest.raises(BinaryContentError) as caught:
        check_text(BINARIES[kind])
    err = caught.value
    assert err.detected_type == kind
    assert err.offset == first_bad_offset(BINARIES[kind])
    assert err.reason in ("nul", "invalid_utf8")
    assert kind.upper() in str(err).upper()


def test_real_elf_binary() -> None:
    data = Path(sys.executable).resolve().read_bytes()[:4096]
    with pytest.raises(BinaryContentError) as caught:
        validate_text(data)
    assert caught.value.detected_type == "elf"


def test_nul_reason_and_offset() -> None:
    with pytest.raises(BinaryContentError) as caught:
        check_text(b"plain text\x00more")
    assert (caught.value.offset, caught.value.reason, caught.value.detected_type) == (
        10,
        "nul",
        None,
    )


def test_invalid_utf8_reason_and_offset() -> None:
    with pytest.raises(BinaryContentError) as caught:
        check_text("café".encode("latin-1"))
    assert (caught.value.offset, caught.value.reason) == (3, "invalid_utf8")


def test_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        validate_text(b"\xff")


def test_truncated_sequence_at_the_end() -> None:
    data = "日本".encode()[:-1]
    with pytest.raises(BinaryContentError) as caught:
        validate_text(data)
    assert caught.value.offset == 3


TEXTS = ["", "hello", "日本語のテキスト", "emoji 🎉 ok", "\ufeffBOM first"]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trips(text: str) -> None:
    data = text.encode()
    assert check_text(data) == text
    assert validate_text(data) is None


def test_accepts_bytearray_and_memoryview() -> None:
    data = "κείμενο".encode()
    assert check_text(bytearray(data)) == "κείμενο"
    assert check_text(memoryview(data)) == "κείμενο"
    assert check_text(memoryview(b"xxabcxx")[2:5]) == "abc"
    with pytest.raises(BinaryContentError) as caught:
        validate_text(memoryview(b"ab\x00")[1:])
    assert caught.value.offset == 1


def test_non_contiguous_memoryview_is_refused() -> None:
    with pytest.raises(ValueError, match="contiguous"):
        check_text(memoryview(b"abcdef")[::2])


@pytest.mark.parametrize("bad", ["text", 12, None, [1, 2]])
def test_wrong_types(bad: object) -> None:
    with pytest.raises(TypeError):
        check_text(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        validate_text(bad)  # type: ignore[arg-type]


def test_large_input_errors_far_in() -> None:
    data = bytearray(b"a" * (8 << 20))
    data[(8 << 20) - 5] = 0xC3  # a lead byte followed by ASCII
    with pytest.raises(BinaryContentError) as caught:
        validate_text(data)
    assert caught.value.offset == (8 << 20) - 5


def test_detect_type_on_text_is_none() -> None:
    assert detect_type(b"MZ is a plain word here") is None
    assert detect_type(b"PK stands for primary key") is None
    assert detect_type(b"just some text") is None
    assert detect_type(BINARIES["png"]) == "png"


def test_error_survives_pickling() -> None:
    import pickle

    with pytest.raises(BinaryContentError) as caught:
        validate_text(b"\x00")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.offset, again.reason, str(again)) == (0, "nul", str(caught.value))


@given(st.binary(max_size=300))
def test_offsets_match_python_decoder(data: bytes) -> None:
    expected = first_bad_offset(data)
    if expected is None:
        assert check_text(data) == data.decode()
    else:
        with pytest.raises(BinaryContentError) as caught:
            validate_text(data)
        assert caught.value.offset == expected


@given(st.text(max_size=200), st.binary(max_size=8), st.integers(0, 200))
def test_bad_bytes_inside_text(text: str, junk: bytes, at: int) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    data = raw[:at] + junk + raw[at:]
    expected = first_bad_offset(data)
    try:
        validate_text(data)
        assert expected is None
    except BinaryContentError as err:
        assert err.offset == expected


@given(st.binary(max_size=20_000), st.sampled_from([bytes, bytearray, memoryview]))
def test_count_newlines_is_bytes_count(data: bytes, kind: type) -> None:
    assert count_newlines(kind(data)) == data.count(b"\n")


@given(st.text(max_size=5_000))
def test_count_newlines_of_a_str_is_str_count(text: str) -> None:
    # Read in the str's own storage, whatever its width (Latin-1, UCS-2, UCS-4).
    for t in (text, text + "\u0100", text + "\U0001f600"):
        assert count_newlines(t) == t.count("\n")


def test_count_newlines_of_a_large_text_of_short_lines() -> None:
    data = b"ok\n" * 1_000_000 + b"\n" * 70_000 + b"tail"
    assert count_newlines(data) == data.count(b"\n")


def test_a_bytearray_written_meanwhile_is_never_returned_with_a_nul() -> None:
    """check_text scans for NUL then decodes; another thread writing the bytearray between
    the two must not get a NUL through (nor turn a refusal into a bare ValueError)."""
    import threading
    import time

    data = bytearray(b"a" * (2 * 1024 * 1024))  # over the size the interpreter is released at
    stop = threading.Event()
    toggles = [0]

    def toggle() -> None:
        while not stop.is_set():
            data[0] = 0
            time.sleep(0.0001)
            data[0] = 97
            time.sleep(0.0001)
            toggles[0] += 1

    writer = threading.Thread(target=toggle)
    writer.start()
    returned = refused = 0
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                text = check_text(data)
            except BinaryContentError as err:
                assert err.reason == "nul" and err.offset == 0
                refused += 1
            else:
                assert "\x00" not in text[:1]
                returned += 1
    finally:
        stop.set()
        writer.join()
    assert returned + refused > 0 and toggles[0] > 10  # the writer ran meanwhile
