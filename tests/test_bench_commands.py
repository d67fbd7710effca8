"""The bench commands on inputs nobody has seen: they measure what they can or say why not,
by path and without a traceback, and never pass data they did not measure as a score."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benches.replay_trajectories import chars4

BENCHES = Path(__file__).resolve().parents[1] / "benches"


def run(script: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHES / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def trajectory(usage_key: str | None = "prompt_tokens") -> dict[str, Any]:
    """A small run in the shared format: two requests, each reported."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can run bash."},
        {"role": "user", "content": "Fix the failing test in tests/test_x.py."},
    ]
    for turn in range(2):
        usage = {usage_key: 900 + 40 * turn} if usage_key else None
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{turn}.py"})},
        }
        messages += [
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [call],
                "extra": {"response": {"model": "deepseek-chat", "usage": usage}},
            },
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": "def f():\n    pass\n"},
        ]
    return {"messages": [*messages, {"role": "exit", "content": ""}]}


def test_replay_reads_input_tokens_as_prompt_tokens(tmp_path: Path) -> None:
    (tmp_path / "a.traj.json").write_text(json.dumps(trajectory("input_tokens")))
    done = run("replay_trajectories.py", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == ["turns", "cold", "anchored", "chars4", "usage_plus_chars4"]
    assert result["turns"] == 2


def test_replay_without_a_usage_report_is_no_perfect_score(tmp_path: Path) -> None:
    (tmp_path / "a.traj.json").write_text(json.dumps(trajectory(None)))
    done = run("replay_trajectories.py", tmp_path, "--json")
    assert (done.returncode, done.stdout) == (2, "")
    assert "no assistant message with a usage report" in done.stderr


@pytest.mark.parametrize("content", ["{", '["not", "a", "run"]', '{"no": "messages"}'])
def test_replay_names_a_file_that_is_no_trajectory(tmp_path: Path, content: str) -> None:
    (tmp_path / "a.traj.json").write_text(json.dumps(trajectory()))
    (tmp_path / "bad.traj.json").write_text(content)
    done = run("replay_trajectories.py", tmp_path, "--json")
    assert done.returncode == 2 and "bad.traj.json: not a trajectory" in done.stderr
    assert "Traceback" not in done.stderr


def test_replay_reads_a_run_kept_twice_once(tmp_path: Path) -> None:
    text = json.dumps(trajectory())
    (tmp_path / "a.traj.json").write_text(text)
    with gzip.open(tmp_path / "a.traj.json.gz", "wt") as fh:
        fh.write(text)
    assert json.loads(run("replay_trajectories.py", tmp_path, "--json").stdout)["turns"] == 2


def test_chars4_counts_the_text_of_content_parts() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "x" * 400}]}
    assert chars4(parts) == chars4({"role": "user", "content": "x" * 400}) == 400


def test_accuracy_measures_files_as_stored_and_refuses_what_it_cannot_measure(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "good" / "logs"
    logs.mkdir(parents=True)
    (logs / "a.txt").write_bytes(b"x ERROR y\r\n" * 10)
    done = run("accuracy.py", "--corpus", tmp_path / "good", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["classes"]["logs"]["bytes"] == 110  # CR bytes kept
    empty = tmp_path / "empty" / "prose"
    empty.mkdir(parents=True)
    (empty / "a.txt").write_text("")
    done = run("accuracy.py", "--corpus", tmp_path / "empty", "--json")
    assert (done.returncode, done.stdout) == (2, "")
    latin = tmp_path / "latin" / "prose"
    latin.mkdir(parents=True)
    (latin / "a.txt").write_bytes(b"caf\xe9")
    done = run("accuracy.py", "--corpus", tmp_path / "latin")
    assert done.returncode == 2 and "a.txt: not UTF-8 at byte 3" in done.stderr


def test_speed_says_why_a_corpus_cannot_be_measured(tmp_path: Path) -> None:
    for corpus in (tmp_path / "missing", tmp_path):
        done = run("speed.py", "--corpus", corpus, "--repeat", "1")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "a.txt").write_bytes(b"abc\x00def\n")  # counted; not text to validate
    done = run("speed.py", "--corpus", tmp_path, "--repeat", "1", "--json")
    assert done.returncode == 0, done.stderr
