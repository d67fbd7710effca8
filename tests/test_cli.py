from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxbudget import estimate_tokens
from ctxbudget.cli import main


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxbudget.cli", *args],
        input=stdin,
        capture_output=True,
        check=False,
    )


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
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "ctxbudget.cli", "count", str(name)],
        capture_output=True, check=False, env=env,
    )  # fmt: skip
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
