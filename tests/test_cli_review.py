"""The ``ctxbudget`` command line as users run it: Ctrl-C, stdin given twice, and the inspect
report's previews and width."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def run(
    *args: str, stdin: int | None = None, columns: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m ctxbudget ARGS``, its output piped (and ``COLUMNS`` set when given)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "ctxbudget", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _wait_until_blocked(pid: int) -> None:
    """Wait until process ``pid`` sleeps for a while (waiting on its stdin, imports done)."""
    asleep = 0
    deadline = time.monotonic() + 30
    while asleep < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        asleep = asleep + 1 if state == "S" else 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_ends_the_command_quietly_with_status_130() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "ctxbudget", "count"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        _wait_until_blocked(proc.pid)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert out == ""


def test_stdin_given_twice_is_read_once_as_wc_does(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello world\n")
    with open(path, "rb") as stdin:
        done = run("count", "-", "-", stdin=stdin.fileno())
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert rows == [["3", "12", "(stdin)"], ["0", "0", "(stdin)"], ["3", "12", "total"]]


def test_count_leaves_a_redirected_stdin_at_its_end(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello world\n")
    script = f"({sys.executable} -m ctxbudget count >/dev/null; cat) <{path}"
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # as after `wc`: the file was read, nothing is left for `cat`


def _rows(out: str) -> list[str]:
    """The rows of the largest messages, header included."""
    return out.split("largest messages:\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_a_preview_cut_at_a_space_still_says_it_was_cut(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"role": "user", "content": "x" * 50 + " and more words"}]))
    done = run("inspect", str(path), columns=120)
    assert done.returncode == 0, done.stderr
    assert _rows(done.stdout)[1].endswith("  " + "x" * 50 + "...")


def test_the_sample_previews_say_where_they_were_cut() -> None:
    done = run("inspect", "--sample", columns=120)
    assert done.returncode == 0, done.stderr
    row = next(r for r in _rows(done.stdout) if r.split()[0] == "4")
    assert row.endswith("The total is not rounded to cents. Let me read the...")


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_the_inspect_report_fits_the_terminal(tmp_path: Path, columns: int) -> None:
    path = tmp_path / "long.json"
    messages = [{"role": "user", "content": "word " * 2000}, {"role": "assistant", "content": "ok"}]
    path.write_text(json.dumps(messages))
    done = run("inspect", str(path), "--window", "1000", columns=columns)
    assert done.returncode == 0, done.stderr
    bar = next(line for line in done.stdout.splitlines() if line.startswith("window ["))
    assert len(bar) < columns and "does NOT fit" in bar
    assert all(len(row) < columns for row in _rows(done.stdout))
    assert ("start" in _rows(done.stdout)[0]) == (columns > 50)
    assert len(_rows(done.stdout)) == 3


def test_a_wide_terminal_keeps_the_full_preview(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps([{"role": "user", "content": "y" * 80}]))
    done = run("inspect", str(path), columns=200)
    assert _rows(done.stdout)[1].endswith("  " + "y" * 50 + "...")
    bar = next(line for line in done.stdout.splitlines() if line.startswith("window ["))
    assert len(bar.split("[", 1)[1].split("]", 1)[0]) == 30


def test_inspect_names_a_binary_file_by_its_type(tmp_path: Path) -> None:
    """It said "'utf-8' codec can't decode byte 0x89", where ``count`` names a PNG."""
    path = tmp_path / "screenshot.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    done = subprocess.run(
        [sys.executable, "-m", "ctxbudget", "inspect", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "looks like a PNG image" in done.stderr
    assert "Traceback" not in done.stderr
