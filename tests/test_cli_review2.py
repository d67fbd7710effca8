"""The ``ctxbudget`` command line, second review: an output that cannot be written, ``inspect``
on stdin and on JSON Lines, and a demo whose lines say what was sent."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxbudget.demo import replay
from ctxbudget.guard import ContextGuard


def ctxbudget(
    *args: str, stdout: Any = subprocess.PIPE, stdin: Any = None, shell_suffix: str = ""
) -> subprocess.CompletedProcess[bytes]:
    """``python -m ctxbudget ARGS`` through ``sh`` (``shell_suffix``: redirections)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m ctxbudget "$@" {shell_suffix}', sys.executable, *args],
        stdout=stdout, stderr=subprocess.PIPE, stdin=stdin, check=False,
    )  # fmt: skip


def _args(command: str, tmp_path: Path) -> list[str]:
    text = tmp_path / "a.txt"
    text.write_text("hello world\n" * 1000)
    return {"count": ["count", str(text)], "inspect": ["inspect", "--sample"]}.get(
        command, [command]
    )


# -- an output that cannot be written


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["count", "inspect", "demo"])
def test_a_full_disk_is_reported_in_one_line_not_a_traceback(tmp_path: Path, command: str) -> None:
    with open("/dev/full", "wb") as full:
        done = ctxbudget(*_args(command, tmp_path), stdout=full)
    assert done.returncode == 1
    expected = f"ctxbudget: cannot write the output: {os.strerror(errno.ENOSPC)}\n"
    assert done.stderr.decode() == expected


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell closes stdout")
@pytest.mark.parametrize("command", ["count", "inspect", "demo"])
def test_a_closed_stdout_is_an_error_not_silent_success(tmp_path: Path, command: str) -> None:
    done = ctxbudget(*_args(command, tmp_path), shell_suffix=">&-")
    assert done.returncode == 1  # as `wc FILE >&-`: the report went nowhere
    expected = f"ctxbudget: cannot write the output: {os.strerror(errno.EBADF)}\n"
    assert done.stderr.decode() == expected


# -- inspect: stdin, JSON Lines


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is in the log? " + "line of log\n" * 200},
        {"role": "assistant", "content": "Nothing unusual."},
    ]


def test_inspect_reads_stdin_given_as_dash(tmp_path: Path) -> None:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(_conversation()))
    from_file = ctxbudget("inspect", str(path))
    with path.open("rb") as file:
        redirected = ctxbudget("inspect", "-", stdin=file)
    piped = subprocess.run(
        ["sh", "-c", 'cat "$1" | exec "$0" -m ctxbudget inspect -', sys.executable, str(path)],
        capture_output=True, check=False,
    )  # fmt: skip
    assert from_file.returncode == redirected.returncode == piped.returncode == 0
    expected = from_file.stdout.decode().replace(str(path), "(stdin)", 1)
    assert redirected.stdout.decode() == piped.stdout.decode() == expected


def test_inspect_on_stdin_refuses_binary_data_by_name(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ctxbudget", "inspect", "-"],
        input=b"\x89PNG\r\n\x1a\n" + bytes(range(256)), capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.decode().startswith("ctxbudget inspect: (stdin): ")
    assert "png" in done.stderr.decode().lower() and "Traceback" not in done.stderr.decode()


def test_inspect_says_what_to_do_with_json_lines(tmp_path: Path) -> None:
    lines = tmp_path / "run.jsonl"
    lines.write_text("".join(json.dumps(m) + "\n" for m in _conversation()))
    done = ctxbudget("inspect", str(lines))
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "JSON Lines" in err and "jq -s" in err


@pytest.mark.parametrize("text", ["[1]\n]", '{"a": 1} x', "[\n]\n]\n"])
def test_other_bad_json_is_not_called_json_lines(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    done = ctxbudget("inspect", str(path))
    assert done.returncode == 1
    assert "not JSON" in done.stderr.decode() and "JSON Lines" not in done.stderr.decode()


# -- the demo's lines say what was sent


@pytest.fixture
def sent_views(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Any], list[Any]]]:
    """(history, view sent) of every guarded call, in order."""
    calls: list[tuple[list[Any], list[Any]]] = []
    send = ContextGuard.send

    def recording(self: ContextGuard, *args: Any, **kwargs: Any) -> Any:
        result = send(self, *args, **kwargs)
        calls.append((list(args[1]), list(result.request.messages)))
        return result

    monkeypatch.setattr(ContextGuard, "send", recording)
    return calls


def test_demo_says_sent_as_it_is_only_when_the_history_was(
    sent_views: list[tuple[list[Any], list[Any]]],
) -> None:
    demo = list(replay())
    assert len(demo) == len(sent_views)
    unchanged = [history == view for history, view in sent_views]
    said = ["sent as it is" in call.actions for call in demo]
    assert said == unchanged
    assert not all(unchanged) and any(unchanged)


def test_demo_says_when_it_sends_a_summary_again(
    sent_views: list[tuple[list[Any], list[Any]]],
) -> None:
    demo = list(replay())
    with_summary = [
        any(str(m.get("content", "")).startswith("[ctxbudget summary") for m in view)
        for _, view in sent_views
    ]
    assert any(with_summary)
    for call, summary in zip(demo, with_summary, strict=True):
        if summary:
            assert any("summar" in action for action in call.actions), call
        else:
            assert not any("summar" in action for action in call.actions), call
