from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from ctxbudget import estimate_tokens
from ctxbudget.cli import main
from ctxbudget.errors import BinaryContentError
from ctxbudget.tokens import ENCODINGS
from ctxbudget.tool_output import read_tool_file


def run(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxbudget.cli", *args],
        input=stdin,
        capture_output=True,
        check=False,
        env=env,
    )


#: The environment of a process whose stdout takes ASCII only.
ASCII_OUT = {**os.environ, "PYTHONIOENCODING": "ascii"}


def test_counts_files_and_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.py"
    a.write_text("hello world, this is a file\n")
    b.write_text("def f(x):\n    return x * 2\n")
    assert main(["count", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["o200k", "bytes", "file"]
    counts = {line.split()[-1]: int(line.split()[0]) for line in lines[1:]}
    assert counts[str(a)] == estimate_tokens(a.read_text())
    assert counts["total"] == counts[str(a)] + counts[str(b)]


def test_all_encodings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.txt"
    a.write_text("tokens everywhere")
    assert main(["count", "-e", "all", str(a)]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == ["cl100k", "o200k", "llama3", "qwen3", "conservative", "bytes", "file"]


def test_binary_file_is_reported_with_its_type(tmp_path: Path) -> None:
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    text = tmp_path / "ok.txt"
    text.write_text("fine")
    done = run("count", str(png), str(text))
    assert done.returncode == 1
    assert b"png" in done.stderr and b"not text" in done.stderr
    assert b"ok.txt" in done.stdout and b"image.png" not in done.stdout


def test_stdin() -> None:
    done = run("count", stdin=b"some words from a pipe")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1].split()[-1] == b"(stdin)"


def test_missing_file(tmp_path: Path) -> None:
    done = run("count", str(tmp_path / "nope.txt"))
    assert done.returncode == 1
    assert b"nope.txt" in done.stderr


def test_bundled_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", "--samples"]) == 0
    out = capsys.readouterr().out
    assert "samples/agent_session.json" in out
    assert out.splitlines()[-1].split()[-1] == "total"


def test_text_cut_mid_character_is_counted(tmp_path: Path) -> None:
    text = "Grüße aus Köln".encode()
    cut = text[: text.index("ü".encode()) + 1]  # the first byte of a two-byte character
    done = run("count", stdin=cut)
    assert done.returncode == 0
    row = done.stdout.splitlines()[1].split()
    assert row == [str(estimate_tokens(cut)).encode(), str(len(cut)).encode(), b"(stdin)"]
    assert b"incomplete UTF-8 character" in done.stderr
    # The same bytes with text after them are not cut text: refused.
    broken = tmp_path / "broken.txt"
    broken.write_bytes(cut + text)
    done = run("count", str(broken))
    assert done.returncode == 1
    assert b"not text" in done.stderr


def test_undecodable_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = b"bad\xffname.txt"
    try:
        path = tmp_path / os.fsdecode(raw)
        path.write_text("hello\n")
    except (OSError, UnicodeError):  # pragma: no cover - file systems that refuse such names
        pytest.skip("the file system refuses non-UTF-8 file names")
    assert main(["count", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[-1] == str(tmp_path / "bad\\xffname.txt")


def test_demo_shows_every_kind_of_decision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "sent as it is" in out and "stubbed" in out and "compacted" in out
    assert "the provider said too long" in out and "retried once, and it went through" in out
    assert out.rstrip().endswith("never changed: yes.")
    # old outputs stubbed oldest first, and the huge fresh one, largest first: two decisions
    # that read the same before
    stubbed = [line for line in out.splitlines() if "stubbed" in line and "(-" in line]
    assert any("largest first" in line for line in stubbed)
    assert any("largest first" not in line for line in stubbed)


def test_demo_calls_fit_and_leave_the_history_alone() -> None:
    from ctxbudget.demo import replay

    calls = list(replay(window=12_000))
    assert calls and all(c.fill <= 1.0 and c.history_intact for c in calls)
    assert max(c.history_tokens for c in calls) > 4 * 12_000  # the run outgrows the window


def test_inspect_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--sample"]) == 0
    out = capsys.readouterr().out
    assert "samples/agent_session.json: 10 messages (openai_chat)" in out
    assert "fits" in out and "largest messages" in out


def test_inspect_a_request_body_over_its_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ctxbudget.demo import TOOLS, demo_run

    path = tmp_path / "request.json"
    path.write_text(json.dumps({"model": "gpt-4o", "tools": TOOLS, "messages": demo_run()}))
    assert main(["inspect", str(path), "--window", "16000"]) == 0
    out = capsys.readouterr().out
    assert "does NOT fit" in out
    assert "tool outputs become stubs" in out
    assert "compact the older turns" in out


def test_inspect_refuses_what_is_not_a_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": 3}')
    assert main(["inspect", str(bad)]) == 1
    assert "expected a list of messages" in capsys.readouterr().err
    assert main(["inspect"]) == 2
    assert main(["inspect", str(bad), "--sample"]) == 2


def test_inspect_reads_the_output_cap_of_a_request_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are helpful."}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(body))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(anthropic)" in out and "+ 21,024 kept for the answer" in out  # 1,024 + 20k margin


@pytest.mark.parametrize(
    "body",
    ['{"messages": [], "tools": 5}', "[" * 100_000 + "]" * 100_000],
    ids=["tools-not-a-list", "nested-past-the-parser"],
)
def test_inspect_reports_a_bad_request_without_a_traceback(tmp_path: Path, body: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(body)
    done = run("inspect", str(bad))
    assert done.returncode == 1
    assert b"ctxbudget inspect: " in done.stderr and b"Traceback" not in done.stderr


def test_a_file_name_the_output_cannot_encode(tmp_path: Path) -> None:
    name = tmp_path / "caf\u00e9.txt"
    name.write_text("hello world\n")
    done = run("count", str(name), env=ASCII_OUT)
    assert done.returncode == 0, done.stderr
    assert b"caf\\xe9.txt" in done.stdout


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello world\n")
    done = subprocess.run(
        [sys.executable, "-m", "ctxbudget", "count", str(text)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert b"notes.txt" in done.stdout


# -- count: what it reads, and how much of it


def _rows(out: str) -> dict[str, list[int]]:
    """``count``'s table: file -> its numbers (token counts per encoding, then bytes)."""
    return {line.split()[-1]: [int(n) for n in line.split()[:-1]] for line in out.splitlines()[1:]}


def test_count_maps_a_file_instead_of_reading_it_into_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tracemalloc

    line = b"2026-11-29T02:00:00.123Z INFO  [export] chunk=12 rows=480 took=12.5ms\n"
    big = tmp_path / "big.log"
    big.write_bytes(line * (32 * 2**20 // len(line)))
    tracemalloc.start()
    try:
        assert main(["count", str(big)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20  # the 32 MiB are read in place, not copied
    data = big.read_bytes()
    assert _rows(capsys.readouterr().out)[str(big)] == [estimate_tokens(data), len(data)]


def test_count_refuses_a_huge_binary_file_from_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tracemalloc

    sparse = tmp_path / "disk.img"
    with sparse.open("wb") as f:
        f.truncate(256 * 2**20)  # no disk space used; NUL bytes from the first one
    tracemalloc.start()
    try:
        assert main(["count", str(sparse)]) == 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    assert "skipped, not text" in capsys.readouterr().err


def test_count_gives_the_same_numbers_as_reading_the_whole_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = {
        "prose.txt": "The quick brown fox jumps over the lazy dog. " * 300,
        "code.py": "def f(x):\n    return {'x': x, 'y': [x * 2, x ** 3]}\n" * 200,
        "cjk.md": "# 見出し\n\n日本語のテキストと English の混在。\n" * 400,
        "one.txt": "a",
        "empty.txt": "",
    }
    paths = [tmp_path / name for name in texts]
    for path in paths:
        path.write_text(texts[path.name], encoding="utf-8")
    cut = tmp_path / "cut.txt"
    cut.write_bytes("Grüße".encode()[:3])  # ends in the first byte of "ü"
    paths += [cut, *_samples()]
    assert main(["count", "-e", "all", *map(str, paths)]) == 0
    rows = _rows(capsys.readouterr().out)
    encodings = ["cl100k", "o200k", "llama3", "qwen3", "conservative"]
    for path in paths:
        data = path.read_bytes()
        want = [estimate_tokens(data, e) for e in encodings] + [len(data)]
        assert rows[str(path)] == want, path.name


def _samples() -> list[Path]:
    from importlib import resources

    root = resources.files("ctxbudget") / "samples"
    return sorted(Path(str(p)) for p in root.iterdir() if p.is_file())


def test_stdin_from_a_file_counts_from_where_it_stands(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"header\nthe rest of the notes, counted from here\n")
    with path.open("rb") as stdin:
        stdin.seek(7)
        done = subprocess.run(
            [sys.executable, "-m", "ctxbudget.cli", "count"],
            stdin=stdin, capture_output=True, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rest = path.read_bytes()[7:]
    assert done.stdout.splitlines()[1].split() == [
        str(estimate_tokens(rest)).encode(),
        str(len(rest)).encode(),
        b"(stdin)",
    ]


#: Runs the CLI with its address space capped (so that reading without end fails fast).
_CAPPED = (
    "import resource, runpy, sys; limit = int(sys.argv.pop(1));"
    " resource.setrlimit(resource.RLIMIT_AS, (limit, limit));"
    " runpy.run_module('ctxbudget.cli', run_name='__main__')"
)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_an_endless_binary_stream_is_refused_not_read(source: str) -> None:
    args = ["count", "/dev/zero"] if source == "file" else ["count"]
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [sys.executable, "-c", _CAPPED, str(3 * 2**30), *args],
            stdin=zero, capture_output=True, check=False, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1
    assert b"skipped, not text" in done.stderr
    assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_count_reads_stdin_of_any_size_in_chunks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tracemalloc

    import ctxbudget.cli as cli

    # The limit on what is read into memory is inspect's; count holds one chunk at a time.
    monkeypatch.setattr(cli, "STREAM_LIMIT", 4096)
    data = b"2026-11-29T02:00:00Z INFO  [export] chunk=12 rows=480 took=12.5ms\n" * 150_000
    monkeypatch.setattr(sys, "stdin", _Stdin(data))  # 10 MB
    tracemalloc.start()
    try:
        assert main(["count", "-e", "all"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    want = [estimate_tokens(data, e) for e in ENCODINGS] + [len(data)]
    assert _rows(capsys.readouterr().out)["(stdin)"] == want


def test_inspect_refuses_stdin_past_the_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ctxbudget.cli as cli

    monkeypatch.setattr(cli, "STREAM_LIMIT", 4096)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"[" + b'{"role": "user", "content": "hi"},' * 200))
    assert main(["inspect", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ctxbudget inspect: (stdin): more than 4,096 bytes") and "a file" in err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_file_truncated_while_counted_ends_the_count_not_the_process(tmp_path: Path) -> None:
    # A log rotated by copytruncate while it is counted. Its pages were mapped until
    # 2026-12-02: reading them after the truncation killed the process with SIGBUS. The hook
    # truncates the file when the count first looks at its bytes (whichever way it reads them).
    log = tmp_path / "app.log"
    log.write_bytes(b"GET /index.html 200 12ms\n" * 150_000)  # 3.75 MB: a few chunks
    script = f"""
import os, sys
import ctxbudget.cli as cli
path = {str(log)!r}
def truncating(real):
    def hook(*args):
        if os.path.getsize(path):
            os.truncate(path, 0)
        return real(*args)
    return hook
cli.validate_text = truncating(cli.validate_text)
if hasattr(cli, "TextStream"):
    real = cli.TextStream
    class Stream:
        def __init__(self, encodings):
            self.inner = real(encodings)
            self.feed = truncating(self.inner.feed)
            self.finish = self.inner.finish
    cli.TextStream = Stream
sys.exit(cli.main(["count", path]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=False, timeout=120
    )
    assert done.returncode == 0, done
    counted = int(done.stdout.split()[-2])  # the bytes column
    assert 0 < counted < 3_750_000  # what was read before the truncation


def test_stdin_is_checked_for_binary_data_before_it_is_read_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = _Stdin(b"\x89PNG\r\n\x1a\n" + bytes(64 * 2**20))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["count"]) == 1
    assert "(stdin): skipped, not text (png)" in capsys.readouterr().err
    assert stdin.buffer.tell() <= 4 * 2**20


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell closes stdin")
def test_a_closed_stdin_is_reported() -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m ctxbudget.cli count <&-', sys.executable],
        capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == b"ctxbudget: (stdin): Bad file descriptor\n"


# -- the output's reader going away


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("command", ["count", "inspect", "demo"])
def test_a_closed_stdout_ends_quietly(tmp_path: Path, command: str) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello world\n")
    b.write_text("foo bar\n")
    args = {"count": ["count", str(a), str(b)], "inspect": ["inspect", "--sample"]}
    read, write = os.pipe()
    os.close(read)  # `ctxbudget ... | true`: the reader is gone before a line is written
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ctxbudget.cli", *args.get(command, [command])],
            stdout=write, stderr=subprocess.PIPE, env=env, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.stderr == b""
    assert done.returncode == 128 + 13  # what a shell reports for `cat`, `wc`: SIGPIPE


# -- arguments


@pytest.mark.parametrize("window", ["0", "-5", "4000"])
def test_demo_refuses_a_window_too_small_for_it(
    window: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--window", window])
    assert exited.value.code == 2
    assert "--window" in capsys.readouterr().err


def test_demo_that_cannot_fit_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from ctxbudget.demo import print_demo

    assert print_demo(2_000) == 1  # the 2,000 tokens of output the demo asks for fill it
    err = capsys.readouterr().err
    assert err.startswith("ctxbudget demo: ") and err.count("\n") == 1
    assert "2,000-token window" in err and "--window" in err


@pytest.mark.parametrize(
    "args",
    [["--max-tokens", "-100000"], ["--max-tokens", "0"], ["--window", "0"], ["--window", "-1"]],
)
def test_inspect_refuses_a_number_that_is_not_positive(
    tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"role": "user", "content": "hi"}]')
    with pytest.raises(SystemExit) as exited:
        main(["inspect", str(path), *args])
    assert exited.value.code == 2
    assert args[0] in capsys.readouterr().err


def test_inspect_refuses_an_output_cap_that_fills_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"role": "user", "content": "hi"}]')
    assert main(["inspect", str(path), "--window", "1000", "--max-tokens", "5000"]) == 1
    err = capsys.readouterr().err
    assert "max_tokens 5,000" in err and "1,000-token window" in err
    assert main(["inspect", str(path), "--window", "1000", "--max-tokens", "1000"]) == 1


@pytest.mark.parametrize("cap", [-5, 0, "500", 2.5, True])
def test_inspect_refuses_a_bad_output_cap_in_the_body(
    tmp_path: Path, cap: object, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_tokens": cap}
    path.write_text(json.dumps(body))
    assert main(["inspect", str(path)]) == 1
    assert f"max_tokens is {cap!r}: expected a positive" in capsys.readouterr().err


def test_count_samples_takes_no_files(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["count", "--samples", "/nonexistent"])
    assert exited.value.code == 2
    assert "--samples" in capsys.readouterr().err


# -- inspect: messages, and the bodies it reads


def test_inspect_an_unknown_model_asks_for_the_window_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"role": "user", "content": "hi"}]')
    assert main(["inspect", str(path), "--model", "my-azure-deployment"]) == 1
    assert capsys.readouterr().err == (
        f"ctxbudget inspect: {path}: unknown model 'my-azure-deployment':"
        " give its context window with --window\n"
    )
    assert main(["inspect", str(path), "--model", "my-azure-deployment", "--window", "8000"]) == 0


def test_inspect_cuts_a_huge_unknown_model_name_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A body's model field may hold anything: a megabyte of it made a megabyte-long line."""
    path = tmp_path / "body.json"
    path.write_text(
        json.dumps({"model": "x" * 1_000_000, "messages": [{"role": "user", "content": "hi"}]})
    )
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert "unknown model 'xxx" in err and len(err) < 400
    assert main(["inspect", str(path), "--window", "8000"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) < 400


def test_inspect_a_body_whose_model_is_no_string_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    path.write_text('{"model": 123, "messages": [{"role": "user", "content": "hi"}]}')
    assert main(["inspect", str(path)]) == 1
    assert "the request's model must be a string, got int" in capsys.readouterr().err
    assert main(["inspect", str(path), "--model", "gpt-4o"]) == 0


def test_inspect_a_missing_file_says_why_like_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "missing.json"
    assert main(["inspect", str(path)]) == 1
    assert capsys.readouterr().err == f"ctxbudget inspect: {path}: No such file or directory\n"


def test_inspect_reads_json_with_a_byte_order_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf[{"role": "user", "content": "hi"}]')
    assert main(["inspect", str(path)]) == 0
    assert "1 message (openai_chat)" in capsys.readouterr().out


def _inspect_out(tmp_path: Path, body: object, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    code = main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _system_tokens(out: str) -> int:
    return int(out.split("system ", 1)[1].split(",", 1)[0])


@pytest.mark.parametrize(
    "body",
    [
        {"model": "gpt-4o", "instructions": "Be brief, and answer in French.",
         "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 500},
        {"model": "gpt-4o", "instructions": "Be brief, and answer in French.", "input": "hi",
         "max_output_tokens": 500},
    ],
    ids=["items", "a-string"],
)  # fmt: skip
def test_inspect_reads_a_responses_body(
    tmp_path: Path, body: object, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _inspect_out(tmp_path, body, capsys)
    assert "1 message (openai_responses)" in out
    assert "+ 20,500 kept for the answer" in out  # 500 + the 20k margin
    assert _system_tokens(out) > 5


@pytest.mark.parametrize("case", ["camelCase", "snake_case"])
def test_inspect_reads_a_gemini_body(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    system = {"role": "system", "parts": [{"text": "Be brief, and answer in French."}]}
    config = {"maxOutputTokens": 1000, "temperature": 0.2}
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "ls", "parameters": {"type": "object"}}]}],
    }
    if case == "camelCase":
        body |= {"systemInstruction": system, "generationConfig": config}
    else:
        body |= {"system_instruction": system, "generation_config": {"max_output_tokens": 1000}}
    out = _inspect_out(tmp_path, body, capsys)
    assert "1 message (gemini)" in out
    assert "+ 21,000 kept for the answer" in out
    assert _system_tokens(out) > 5
    assert "tools 0," not in out


def test_inspect_previews_messages_as_they_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "read",
         "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"role": "user", "content": 'say "hi"\nand\x1b[2J then stop'},
    ]  # fmt: skip
    out = _inspect_out(tmp_path, items, capsys)
    rows = out.split("largest messages:\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    by_index = {int(row.split()[0]): row for row in rows}
    assert "tool call" in by_index[1] and 'read({"path": "a.py"})' in by_index[1]
    assert "tool result" in by_index[2] and by_index[2].endswith("  ok")
    assert by_index[3].endswith('say "hi" and\\x1b[2J then stop')
    assert "\x1b" not in out


def test_inspect_previews_a_huge_message_without_encoding_it_whole(tmp_path: Path) -> None:
    import contextlib
    import tracemalloc

    from ctxbudget.report import load_conversation

    text = "word\n" * 4_000_000  # 20 MB, with newlines JSON escapes
    path = tmp_path / "big.json"
    path.write_text(
        json.dumps([{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}])
    )
    tracemalloc.start()
    try:
        load_conversation(path)
        loading = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["inspect", str(path)]) == 0
        inspecting = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert inspecting < loading + len(text) // 2
    assert "word word word" in out.getvalue()


def test_control_characters_in_file_names_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        path = tmp_path / "evil\x1b[31mRED\nfake.txt"
        path.write_text("x")
    except OSError:  # pragma: no cover - file systems that refuse such names
        pytest.skip("the file system refuses control characters in file names")
    assert main(["count", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and len(out.splitlines()) == 2
    assert out.splitlines()[1].split()[-1] == str(tmp_path / "evil\\x1b[31mRED\\nfake.txt")


def test_report_docstring_examples() -> None:
    import doctest

    import ctxbudget.report

    result = doctest.testmod(ctxbudget.report)
    assert result.attempted > 0 and result.failed == 0


def test_inspect_previews_text_the_output_cannot_encode(tmp_path: Path) -> None:
    path = tmp_path / "cafe.json"
    path.write_text(json.dumps([{"role": "user", "content": "un caf\u00e9, s'il vous pla\u00eet"}]))
    done = run("inspect", str(path), env=ASCII_OUT)
    assert done.returncode == 0, done.stderr
    assert b"un caf\\xe9, s'il vous pla\\xeet" in done.stdout


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_inspect_reads_a_device_no_further_than_a_pipe() -> None:
    # /dev/zero was read whole into memory (killed, or a MemoryError traceback): run in a
    # child held to 1.5 GB, so that reading it again fails this test, not the machine.
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29));"
        "from ctxbudget.cli import main; sys.exit(main(['inspect', '/dev/zero']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (
        1,
        "ctxbudget inspect: /dev/zero: not text: NUL byte at offset 0\n",
    )


def test_inspect_an_empty_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"\xef\xbb\xbf \n")
    assert main(["inspect", str(path)]) == 1
    assert "empty: expected a JSON list of messages" in capsys.readouterr().err


def test_inspect_refuses_a_file_and_the_sample_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"role": "user", "content": "hi"}]')
    assert main(["inspect", "--sample", str(path)]) == 2
    assert "(not both)" in capsys.readouterr().err


def test_demo_says_when_the_output_was_lowered(capsys: pytest.CaptureFixture[str]) -> None:
    """A recovery that lowers ``max_tokens`` (at a 17k window, one call) is said as such,
    not as a prune of nothing, and the stubs the call still carries stay said."""
    assert main(["demo", "--window", "17000"]) == 0
    out = capsys.readouterr().out
    assert "lowered max_tokens 2,000 ->" in out
    assert "stubbed 0 tool outputs" not in out


# --- review of 2026-12-04: count measures the text read_tool_file gives the model -------------


def test_count_reads_a_utf8_bom_as_read_tool_file_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfhello world\n")
    assert main(["count", "-e", "all", str(bom)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    text = read_tool_file(bom)
    assert text == "hello world\n"
    assert [int(n) for n in row[:5]] == [estimate_tokens(text, e) for e in ENCODINGS]
    assert int(row[5]) == bom.stat().st_size


def test_count_reads_utf16_text_with_a_bom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What PowerShell writes: "skipped, not text" before, though the agent reads it.
    log = tmp_path / "ps.txt"
    body = "Get-Process output\r\n" + "".join(
        f"{i:5}  pwsh  12.5  Привет 日本\r\n" for i in range(3000)
    )
    log.write_bytes(body.encode("utf-16"))  # a BOM, then UTF-16 in the machine's order
    assert main(["count", str(log)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert read_tool_file(log) == body
    assert int(row[0]) == estimate_tokens(body)
    assert int(row[1]) == log.stat().st_size


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (
            b"\xff\xfe" + "hello ".encode("utf-16-le") + b"\x00\xd8" + "world".encode("utf-16-le"),
            14,
        ),
        ("hello world\n".encode("utf-16") + b"A", 26),  # `head -c` cut it at an odd length
        (b"\xff\xfe" + "ok".encode("utf-16-le") + b"\x00\x00" + b"x\x00", 6),  # a NUL
    ],
    ids=["lone surrogate", "odd length", "nul"],
)
def test_bad_utf16_names_its_own_offset(tmp_path: Path, data: bytes, offset: int) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    with pytest.raises(BinaryContentError) as caught:
        read_tool_file(path)
    assert caught.value.offset == offset and f"byte offset {offset}" in str(caught.value)
    assert "UTF-16" in str(caught.value)
    done = run("count", str(path))
    assert done.returncode == 1
    assert f"byte offset {offset}".encode() in done.stderr and b"UTF-16" in done.stderr


def test_inspect_refuses_a_large_file_that_is_not_json_before_reading_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A 301 MB log given by mistake took 0.9 GB of memory before "not JSON".
    log = tmp_path / "big.log"
    line = b"2026-12-04 06:00:00 INFO request done in 38ms\n"
    log.write_bytes(line * (64 * 2**20 // len(line)))
    tracemalloc.start()
    try:
        assert main(["inspect", str(log)]) == 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert "not JSON" in err and "2026-12-04" in err
    assert peak < 8 * 2**20


def test_inspect_still_names_the_type_of_a_binary_file(tmp_path: Path) -> None:
    png = tmp_path / "image.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(70_000))
    done = run("inspect", str(png))
    assert done.returncode == 1 and b"PNG image" in done.stderr
