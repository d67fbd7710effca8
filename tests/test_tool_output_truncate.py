"""truncate_output: head + tail preview within budget, honest hint whether the spill worked.

The wording the model sees is asserted exactly: on success it names the file; on every kind
of failed write it names no path and never says "saved".
"""

from __future__ import annotations

import errno
import io
import re
import sys
import tracemalloc
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget import ENCODINGS, estimate_tokens
from ctxbudget import spill as spill_module
from ctxbudget.spill import DirectorySpillStore, SpillStore
from ctxbudget.truncate import TruncatedResult, truncate_output

MARKER = re.compile(r"^\[\.\.\. .* omitted \(.*\) \.\.\.\]$", re.MULTILINE)


def numbered_log(lines: int) -> str:
    return "".join(
        f"2024-05-01 12:00:{i % 60:02d} INFO worker[{i}] step {i} ok\n" for i in range(lines)
    )


def split_result(result: TruncatedResult) -> tuple[str, str, str, str]:
    """(head, marker, tail, hint) of a truncated result."""
    match = MARKER.search(result.text)
    assert match is not None, result.text
    head = result.text[: match.start()]
    rest = result.text[match.end() + 1 :]
    body, _, hint = rest.rpartition("\n[")  # the hint holds no "\n[", the tail may
    return head, match.group(0), body, "[" + hint


class RecordingStore:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def write(self, text: str, *, label: str | None = None) -> str:
        self.texts.append(text)
        return f"mem://spill/{len(self.texts)}.txt"


class FailingStore:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def write(self, text: str, *, label: str | None = None) -> str:
        raise self.error


# --- the exact wording --------------------------------------------------------------------

TEXT = numbered_log(2000)
TOTAL = estimate_tokens(TEXT)
HEAD = (
    f"[Output truncated: the full output is 2,000 lines, about {TOTAL:,} tokens; "
    "only its start and end are shown.\n"
)
RERUN = (
    "To see it, re-run the command with narrower output (filter it, for example with grep, "
    "or ask for a range of lines or fewer results).]"
)


def saved_hint(location: str) -> str:
    return (
        f"{HEAD}The full output was saved to: {location}\n"
        "To see the omitted lines, read that file in parts (a range of lines at a time) or "
        "search it with grep; do not read it whole.]"
    )


def failed_hint(reason: str) -> str:
    return (
        f"{HEAD}The full output could not be stored ({reason}), so the omitted part is not "
        f"available.\n{RERUN}"
    )


def test_success_names_the_file_and_how_to_read_it(tmp_path: Path) -> None:
    store = DirectorySpillStore(tmp_path / "spill")
    result = truncate_output(TEXT, max_tokens=500, spill=store, label="bash")
    assert result.truncated
    assert result.spill_error is None
    assert result.spill_path is not None
    assert Path(result.spill_path).parent == tmp_path / "spill"
    assert Path(result.spill_path).read_text(encoding="utf-8") == TEXT
    assert split_result(result)[3] == saved_hint(result.spill_path)


FAILURES = [
    pytest.param(
        OSError(errno.ENOSPC, "No space left on device", "/var/spill/x.txt"),
        "No space left on device",
        id="disk-full",
    ),
    pytest.param(
        PermissionError(errno.EACCES, "Permission denied", "/readonly/spill/x.txt"),
        "Permission denied",
        id="read-only",
    ),
    pytest.param(
        RuntimeError("upload to s3://bucket/spill/x.txt failed"), "RuntimeError", id="backend"
    ),
    pytest.param(TimeoutError("connect to 10.0.0.5 timed out"), "TimeoutError", id="timeout"),
]


@pytest.mark.parametrize(("error", "reason"), FAILURES)
def test_failed_write_has_no_path_and_no_saved_wording(error: BaseException, reason: str) -> None:
    result = truncate_output(TEXT, max_tokens=500, spill=FailingStore(error))
    assert result.truncated
    assert result.spill_path is None
    assert result.spill_error is not None and type(error).__name__ in result.spill_error
    head, _, tail, hint = split_result(result)
    assert hint == failed_hint(reason)
    lowered = result.text.lower()
    assert "save" not in lowered
    for fragment in ("/var/spill", "/readonly", "s3://", "x.txt", "10.0.0.5", "spill/"):
        assert fragment not in result.text
    assert TEXT.startswith(head) and TEXT.endswith(tail)


def test_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file, not a directory")
    store = DirectorySpillStore(blocker / "sub")
    result = truncate_output(TEXT, max_tokens=500, spill=store)
    assert result.spill_path is None
    assert result.spill_error is not None and "NotADirectoryError" in result.spill_error
    assert split_result(result)[3] == failed_hint("Not a directory")
    assert str(tmp_path) not in result.text
    assert "save" not in result.text.lower()


def test_store_returning_no_location_counts_as_failed() -> None:
    class Broken:
        def write(self, text: str, *, label: str | None = None) -> str:
            return ""

    result = truncate_output(TEXT, max_tokens=500, spill=Broken())
    assert result.spill_path is None
    assert split_result(result)[3] == failed_hint("TypeError")


def test_failed_write_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    error = OSError(errno.ENOSPC, "No space left on device", "/var/spill/x.txt")
    with caplog.at_level("WARNING", logger="ctxbudget.truncate"):
        truncate_output(TEXT, max_tokens=500, spill=FailingStore(error))
    assert "could not spill" in caplog.text
    assert "/var/spill/x.txt" in caplog.text  # the log has the details, the model does not


def test_spill_disabled() -> None:
    result = truncate_output(TEXT, max_tokens=500, spill=False)
    assert (result.spill_path, result.spill_error) == (None, None)
    assert split_result(result)[3] == f"{HEAD}The omitted part was not kept.\n{RERUN}"


def test_default_store_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill_module, "_default_store", DirectorySpillStore(tmp_path))
    result = truncate_output(TEXT, max_tokens=500)
    assert result.spill_path is not None
    assert Path(result.spill_path).parent == tmp_path


# --- the preview -------------------------------------------------------------------------


def test_under_the_limit_is_unchanged_and_not_spilled() -> None:
    store = RecordingStore()
    text = numbered_log(20)
    tokens = estimate_tokens(text)
    result = truncate_output(text, max_tokens=tokens, spill=store)
    assert result == TruncatedResult(text, False, tokens, tokens)
    assert store.texts == []
    assert truncate_output(text, max_tokens=tokens - 1, spill=store).truncated


def test_marker_counts_lines_and_tokens() -> None:
    store = RecordingStore()
    result = truncate_output(TEXT, max_tokens=600, spill=store)
    head, marker, tail, _ = split_result(result)
    head_lines, tail_lines = head.count("\n"), tail.count("\n")
    assert head_lines > 0 and tail_lines > head_lines  # head_ratio 0.2: tail larger
    omitted = 2000 - head_lines - tail_lines
    assert result.omitted_lines == omitted
    assert marker == (
        f"[... {omitted:,} lines omitted (lines {head_lines + 1:,}-{head_lines + omitted:,}, "
        f"about {result.omitted_tokens:,} tokens) ...]"
    )
    assert abs(result.omitted_tokens - estimate_tokens(TEXT[len(head) : -len(tail)])) < 0.02 * TOTAL
    assert result.kept_tokens == estimate_tokens(result.text) <= 600
    assert result.original_tokens == TOTAL
    assert store.texts == [TEXT]


@pytest.mark.parametrize("max_tokens", [150, 200, 400, 1000, 5000])
@pytest.mark.parametrize("head_ratio", [0.0, 0.2, 0.5, 1.0])
def test_fits_the_budget(max_tokens: int, head_ratio: float) -> None:
    result = truncate_output(TEXT, max_tokens=max_tokens, spill=False, head_ratio=head_ratio)
    assert result.kept_tokens == estimate_tokens(result.text) <= max_tokens
    head, _, tail, _ = split_result(result)
    assert TEXT.startswith(head) and TEXT.endswith(tail)
    if head_ratio == 0.0:
        assert head == ""
    if max_tokens >= 1000:
        assert head or head_ratio == 0.0
        assert tail or head_ratio == 1.0
        # the budget is used, not wasted: within 10% of it
        assert result.kept_tokens >= 0.9 * max_tokens


# --- small budgets: within budget when anything honest fits, never over the original ----

CLAIMS = {
    (True, True): "only its start and end are shown",
    (True, False): "only its start is shown",
    (False, True): "only its end is shown",
    (False, False): "none of it is shown",
}
SHORT_HINTS = {
    "saved": "[The full output was saved to: mem://spill/1.txt]",
    "failed": "[The full output could not be stored (No space left on device).]",
    "not kept": "[The omitted part was not kept.]",
}


def omitted_notice(total: int) -> str:
    return f"[Output omitted: about {total:,} tokens]"


def store_for(kind: str) -> SpillStore | Literal[False]:
    if kind == "saved":
        return RecordingStore()
    if kind == "failed":
        return FailingStore(OSError(errno.ENOSPC, "No space left on device"))
    return False


SMALL_TEXT = "".join(f"result {i}: value\n" for i in range(12))


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("spill", sorted(SHORT_HINTS))
@pytest.mark.parametrize("text", [SMALL_TEXT, numbered_log(300)], ids=["12-lines", "300-lines"])
def test_small_budgets_fit_and_claim_only_what_is_shown(
    encoding: str, spill: str, text: str
) -> None:
    total = estimate_tokens(text, encoding)
    notice = omitted_notice(total)
    floor = estimate_tokens(notice, encoding)
    forms: set[str] = set()
    budgets = range(1, min(total, 400))
    for max_tokens in budgets:
        result = truncate_output(
            text, max_tokens=max_tokens, spill=store_for(spill), encoding=encoding
        )
        assert result.truncated and result.original_tokens == total
        assert result.kept_tokens == estimate_tokens(result.text, encoding) < total
        assert result.kept_tokens <= max(max_tokens, floor)
        if result.text == notice:
            assert (result.omitted_tokens, result.omitted_lines) == (total, text.count("\n"))
            forms.add("notice")
            continue
        assert max_tokens >= floor  # the shortest notice is used only when nothing else fits
        head, _, tail, hint = split_result(result)
        # A head cut inside a first line longer than the whole preview comes with the line
        # break the preview adds before the marker.
        assert text.startswith(head) or text.startswith(head.removesuffix("\n"))
        assert text.endswith(tail)
        shown = (bool(head), bool(tail))
        if hint == SHORT_HINTS[spill]:
            forms.add("short hint" + (" with text" if any(shown) else ""))
            continue
        assert hint.startswith("[Output truncated: the full output is ")
        claims = [claim for claim in CLAIMS.values() if f"; {claim}.\n" in hint]
        assert claims == [CLAIMS[shown]], (shown, hint)
        forms.add("full hint" + (" with text" if any(shown) else ""))
    assert "notice" in forms
    assert "short hint with text" in forms
    if budgets.stop < total:  # the sweep reaches budgets that leave room for the full hint
        assert "full hint with text" in forms


def test_text_shorter_than_any_notice_is_returned_whole() -> None:
    text = "ok\nok\n"
    total = estimate_tokens(text)
    assert 1 < total <= estimate_tokens(omitted_notice(total))
    store = RecordingStore()
    result = truncate_output(text, max_tokens=1, spill=store)
    assert result == TruncatedResult(text, False, total, total)
    assert store.texts == []


def test_omitted_tokens_are_the_total_less_what_is_shown() -> None:
    # The long line is left out whole, so the head is snapped back a long way from the cut.
    text = "".join(f"line {i}\n" for i in range(40)) + "word " * 3000 + "\n"
    text += "".join(f"tail {i}\n" for i in range(3))
    result = truncate_output(text, max_tokens=1000, spill=False)
    head, marker, tail, _ = split_result(result)
    assert text.startswith(head) and text.endswith(tail)
    shown = estimate_tokens(head) + estimate_tokens(tail)
    assert result.omitted_tokens == result.original_tokens - shown
    assert f", about {result.omitted_tokens:,} tokens) ...]" in marker
    assert result.kept_tokens <= 1000


def test_one_huge_line_is_cut_mid_line() -> None:
    text = '{"items": [' + ", ".join(f'{{"id": {i}, "name": "item {i}"}}' for i in range(20000))
    text += "]}"
    result = truncate_output(text, max_tokens=400, spill=False)
    head, marker, tail, _ = split_result(result)
    assert marker.startswith("[... ") and "characters omitted (from line 1 to line 1" in marker
    assert text.startswith(head.rstrip("\n")) and text.endswith(tail.rstrip("\n"))
    assert head and tail
    assert result.kept_tokens <= 400
    assert result.omitted_lines == 1


def test_head_line_too_long_falls_back_to_a_cut_inside_it() -> None:
    text = "x" * 200_000 + "\n" + numbered_log(3000)
    result = truncate_output(text, max_tokens=1000, spill=False)
    head, marker, tail, _ = split_result(result)
    assert head.startswith("xxxx") and "\n" not in head.rstrip("\n")
    assert "characters omitted (from line 1 to line " in marker
    assert text.endswith(tail)


def test_tail_line_shorter_than_the_preview_is_kept_whole() -> None:
    """A last line too long for the tail's share, not for the whole preview: kept whole, the
    head getting less; only a line longer than the whole preview is cut inside."""
    last = " ".join(f"w{i}" for i in range(124))
    lines = "".join(f"line {i}\n" for i in range(3000))
    text = lines + last + "\n"
    assert 0.2 * 400 < estimate_tokens(last) < 300
    result = truncate_output(text, max_tokens=400, spill=False)
    head, marker, tail, _ = split_result(result)
    assert tail == last + "\n"
    assert head and text.startswith(head)
    assert "lines omitted" in marker and "characters" not in marker
    assert result.kept_tokens <= 400
    longer = " ".join(f"w{i}" for i in range(600))  # over the whole preview: cut inside
    result = truncate_output(lines + longer + "\n", max_tokens=400, spill=False)
    _, marker, tail, _ = split_result(result)
    assert longer.endswith(tail.rstrip("\n")) and tail.rstrip("\n") != longer
    assert "characters omitted" in marker


@pytest.mark.parametrize("last_line", ["one line", "many lines"])
def test_the_whole_text_is_estimated_once(monkeypatch: pytest.MonkeyPatch, last_line: str) -> None:
    """Besides the one estimate of the whole text, only slices about the preview's size are
    estimated: a text that is one line (minified JSON) or ends in a line longer than the
    preview must not be estimated whole again to see whether its last line fits."""
    import ctxbudget.truncate as truncate_module

    body = ", ".join(f'{{"id": {i}, "name": "item {i}"}}' for i in range(40_000))
    text = body if last_line == "one line" else numbered_log(2000) + body + "\n"
    sizes: list[int] = []
    real = truncate_module._tokens.estimate_tokens

    def recorded(piece: object, *args: object, **kwargs: object) -> int:
        sizes.append(len(piece))  # type: ignore[arg-type]
        return real(piece, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(truncate_module._tokens, "estimate_tokens", recorded)
    result = truncate_output(text, max_tokens=500, spill=False)
    assert result.truncated and result.kept_tokens <= 500
    assert sum(size > len(text) // 4 for size in sizes) == 1


def test_crlf_and_no_trailing_newline() -> None:
    text = "".join(f"row {i}\r\n" for i in range(5000)) + "last row without newline"
    result = truncate_output(text, max_tokens=300, spill=False)
    head, _, tail, _ = split_result(result)
    assert head.endswith("\r\n") and text.startswith(head)
    assert text.endswith(tail[:-1])  # the last line gets a newline before the hint
    assert tail.endswith("last row without newline\n")
    shown = head.count("\n") + tail.count("\n")
    assert result.omitted_lines == 5001 - shown
    assert "the full output is 5,001 lines" in result.text


def test_cjk_and_emoji_text() -> None:
    text = "".join(f"第{i}行、日本語のテキストと絵文字🎉です。\n" for i in range(5000))
    result = truncate_output(text, max_tokens=800, spill=False)
    head, _, tail, _ = split_result(result)
    assert text.startswith(head) and text.endswith(tail)
    assert result.kept_tokens <= 800


def test_model_and_encoding() -> None:
    by_model = truncate_output(TEXT, max_tokens=500, spill=False, model="gpt-4-turbo")
    assert by_model.original_tokens == estimate_tokens(TEXT, "cl100k")
    unknown = truncate_output(TEXT, max_tokens=500, spill=False, model="some-unknown-model")
    assert unknown.original_tokens == estimate_tokens(TEXT, "conservative")
    assert unknown.kept_tokens <= 500
    conservative = truncate_output(TEXT, max_tokens=500, spill=False, encoding="conservative")
    assert conservative.original_tokens == estimate_tokens(TEXT, "conservative")
    with pytest.raises(ValueError):
        truncate_output(TEXT, max_tokens=500, spill=False, encoding="no-such-encoding")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_output("x", max_tokens=0)
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_output("x", max_tokens=True)
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_output("x", max_tokens=np.True_)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_output("x", max_tokens=10.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="head_ratio"):
        truncate_output("x", max_tokens=10, head_ratio=1.5)
    with pytest.raises(TypeError):
        truncate_output(b"bytes", max_tokens=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # UnicodeEncodeError: a lone surrogate is not text
        truncate_output("a\udc80b" * 1000, max_tokens=10, spill=False)


def test_max_tokens_of_any_integer_type() -> None:
    class Budget:
        def __index__(self) -> int:
            return 500

    expected = truncate_output(TEXT, max_tokens=500, spill=False)
    assert truncate_output(TEXT, max_tokens=np.int64(500), spill=False) == expected  # type: ignore[arg-type]
    assert truncate_output(TEXT, max_tokens=Budget(), spill=False) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("label", [123, b"grep", ["grep"]])
def test_label_that_is_not_text_is_a_type_error(label: object) -> None:
    store = RecordingStore()
    with pytest.raises(TypeError, match=f"label must be str or None, got {type(label).__name__}"):
        truncate_output(TEXT, max_tokens=500, spill=store, label=label)  # type: ignore[arg-type]
    assert store.texts == []


@pytest.mark.parametrize(
    ("spill", "message"),
    [
        ("spill-dir", "pass DirectorySpillStore"),
        (Path("spill-dir"), "pass DirectorySpillStore"),
        (True, "got True"),
        (0, "got 0"),
        (object(), "write"),
        (DirectorySpillStore, "pass DirectorySpillStore(...)"),  # the class, not a store
        (io.StringIO(), "got the file"),  # has a write() too, not the store's
    ],
    ids=["str", "path", "true", "zero", "object", "class", "file"],
)
def test_spill_that_is_not_a_store_is_a_type_error(
    spill: object, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for text in (TEXT, "short"):  # refused whether or not the text is over the budget
        with pytest.raises(TypeError, match="spill must be a SpillStore") as caught:
            truncate_output(text, max_tokens=500, spill=spill)  # type: ignore[arg-type]
        assert message in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_peak_memory_under_three_times_the_input() -> None:
    text = numbered_log(60_000)  # ~3.4 MB
    size = sys.getsizeof(text)
    tracemalloc.start()
    try:
        truncate_output(text, max_tokens=20_000, spill=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * size, (peak, size)


# --- properties against a line-by-line reference -----------------------------------------


def lines_of(text: str) -> list[str]:
    """Reference: lines split on "\\n" only (``str.splitlines`` also splits on \\x1e, ...)."""
    pieces = [piece + "\n" for piece in text.split("\n")]
    pieces[-1] = pieces[-1][:-1]
    return pieces if pieces[-1] else pieces[:-1]


line_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=80)
some_lines = st.one_of(
    line_text,
    st.builds(lambda line, times: line * times, line_text, st.integers(1, 300)),  # long lines
)


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(some_lines, min_size=1, max_size=300),
    trailing_newline=st.booleans(),
    budget_share=st.floats(min_value=0.01, max_value=1.2),
    head_ratio=st.floats(min_value=0.0, max_value=1.0),
)
def test_preview_matches_a_line_by_line_reference(
    lines: list[str], trailing_newline: bool, budget_share: float, head_ratio: float
) -> None:
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    total = estimate_tokens(text)
    max_tokens = max(1, int(total * budget_share))
    result = truncate_output(text, max_tokens=max_tokens, spill=False, head_ratio=head_ratio)
    assert result.original_tokens == total
    assert result.kept_tokens == estimate_tokens(result.text)
    notice = f"[Output omitted: about {total:,} tokens]"
    if not result.truncated:
        assert result.text == text
        assert total <= max_tokens or total <= estimate_tokens(notice)
        return
    assert total > max_tokens
    assert result.kept_tokens < total
    assert result.kept_tokens <= max(max_tokens, estimate_tokens(notice))
    if result.text == notice:
        return
    head, marker, tail, _ = split_result(result)
    all_lines = lines_of(text)
    # the preview adds a newline after a head or tail that does not end with one
    head_body = head if text.startswith(head) else head[:-1]
    tail_body = tail if text.endswith("\n") or not tail else tail[:-1]
    assert text.startswith(head_body) and text.endswith(tail_body)
    shown = estimate_tokens(head_body) + estimate_tokens(tail_body)
    assert result.omitted_tokens == max(total - shown, 0)
    assert f", about {result.omitted_tokens:,} tokens) ...]" in marker
    if "lines omitted" in marker or "line omitted" in marker:
        head_n = len(lines_of(head_body))
        tail_n = len(lines_of(tail_body))
        assert "".join(all_lines[:head_n]) == head_body
        assert "".join(all_lines[len(all_lines) - tail_n :]) == tail_body
        assert result.omitted_lines == len(all_lines) - head_n - tail_n
        first, last = head_n + 1, len(all_lines) - tail_n
        span = f"line {first:,}" if first == last else f"lines {first:,}-{last:,}"
        noun = "line" if result.omitted_lines == 1 else "lines"
        assert f"[... {result.omitted_lines:,} {noun} omitted ({span}, " in marker
    else:
        omitted = text[len(head_body) : len(text) - len(tail_body)]
        first = text.count("\n", 0, len(head_body)) + 1
        last = text.count("\n", 0, len(text) - len(tail_body) - 1) + 1
        assert marker.startswith(
            f"[... {len(omitted):,} characters omitted (from line {first:,} to line {last:,}, "
        )
        assert result.omitted_lines == last - first + 1


def test_a_small_budget_shows_part_of_a_line_of_wide_characters() -> None:
    """The search for the longest head or tail steps by about four tokens of text: a fixed
    16 characters (the 16 bytes of when it cut UTF-8) is more than a small budget's share
    for emoji or CJK, and the preview then showed nothing (found by review)."""
    text = "\u200doo🎉🎉👧k \u200d👩\u200d👧👩🇫🇫k👩\u200d👨👍🇫😀k👩👩\u200do😀👨🎉\u200d\u200do🇫\n"
    result = truncate_output(text, max_tokens=60, encoding="llama3", spill=False, head_ratio=0.0)
    assert result.truncated and estimate_tokens(result.text, "llama3") <= 60
    # A 14-character suffix (25 tokens) fits the 27-token preview budget.
    assert "characters omitted" in result.text, result.text
    cjk = "中文字符的测试文本" * 40 + "\n"
    result = truncate_output(cjk, max_tokens=60, encoding="o200k", spill=False)
    assert result.truncated and "characters omitted" in result.text, result.text


def test_max_tokens_may_be_given_by_position() -> None:
    """``truncate_output(text, max_tokens, spill=...)`` as SPEC C3 writes it (it was keyword
    only: a TypeError)."""
    by_position = truncate_output(TEXT, 300, spill=False)
    assert by_position.truncated
    assert by_position == truncate_output(TEXT, max_tokens=300, spill=False)


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        ({"encoding": 5}, "encoding must be a str"),
        ({"model": ["gpt-4o"]}, "model must be a str"),
        ({"head_ratio": "0.5"}, "head_ratio must be a number"),
        ({"head_ratio": None}, "head_ratio must be a number"),
    ],
)
def test_a_wrong_argument_is_named(arguments: dict[str, object], names: str) -> None:
    # Before: "'int' object is not an instance of 'str'", "'<=' not supported between ..."
    with pytest.raises(TypeError, match=names):
        truncate_output("x" * 5000, 100, spill=False, **arguments)  # type: ignore[arg-type]
