"""Replay real agent runs and compare our estimates with the provider's own prompt_tokens.

Usage::

    python benches/replay_trajectories.py ../shared/data/trajectories          # table
    python benches/replay_trajectories.py ../shared/data/trajectories --json   # machine form
    python benches/replay_trajectories.py ../shared/data/trajectories --fit    # refit framing

Runs are ``*.traj.json`` / ``*.traj.json.gz`` files in the mini-swe-agent-1.1 format: OpenAI
Chat Completions messages with ``extra.response.usage`` on every assistant message. ``extra``
keys and the final ``exit`` record are dropped (never sent); the one ``bash`` tool below was
on every request. For each assistant message with usage, its ``prompt_tokens`` is predicted
from the messages before it by:

- ``cold``: :func:`ctxbudget.estimate_request`, no usage seen;
- ``anchored``: a :class:`ctxbudget.calibration.CalibrationTracker` fed with every earlier
  usage of the same run (on a run's first request it has none and gives its cold estimate);
- ``chars4``: ``len // 4`` of the message text: contents plus tool-call arguments (no names,
  ids, schema or framing), summed over the request;
- ``usage_plus_chars4``: last reported ``prompt_tokens`` + ``chars4`` of the messages added
  since (``chars4`` on a run's first request).

Errors are signed fractions of the reported count (-0.05 = 5% under). ``--fit`` refits the
``deepseek`` framing profile by least squares on relative error, on even-numbered runs and
checked on odd-numbered ones (and the reverse), and prints the constants.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxbudget.calibration import CalibrationTracker
from ctxbudget.messages import MessageFormatError
from ctxbudget.request import PROFILES, RequestEstimator, estimate_request

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to execute"}
            },
            "required": ["command"],
        },
    },
}
TOOLS = [BASH_TOOL]
#: The shared real runs: ``../shared/data/trajectories`` beside the checkout.
SHARED_TRAJECTORIES = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
METHODS = ("cold", "anchored", "chars4", "usage_plus_chars4")


@dataclass(frozen=True, slots=True)
class Run:
    """One agent run: the messages as sent, and (index, prompt_tokens, model) per request."""

    name: str
    messages: list[dict[str, Any]]
    requests: list[tuple[int, int, str]]


class RunError(Exception):
    """A trajectory file that cannot be replayed: its path and why."""


def load_runs(directory: Path) -> list[Run]:
    """Every run in ``directory``, in file-name order (one file per run: a ``.traj.json``
    beside a ``.traj.json.gz`` of the same run is read once, the plain one).

    Raises:
        RunError: A file that is not a trajectory (named, with the reason).
    """
    runs: list[Run] = []
    files = sorted([*directory.glob("*.traj.json"), *directory.glob("*.traj.json.gz")])
    plain = {path.name for path in files if path.suffix != ".gz"}
    for path in files:
        if path.name.startswith("._") or (path.suffix == ".gz" and path.stem in plain):
            continue  # macOS resource forks; the same run twice
        try:
            runs.append(_load_run(path))
        except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise RunError(f"{path}: not a trajectory: {type(exc).__name__}: {exc}") from exc
    return runs


def _load_run(path: Path) -> Run:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    messages: list[dict[str, Any]] = []
    requests: list[tuple[int, int, str]] = []
    for raw in data["messages"]:
        if raw.get("role") == "exit":
            continue
        response = (raw.get("extra") or {}).get("response") or {}
        reported = _reported(response.get("usage"))
        if raw.get("role") == "assistant" and reported:
            requests.append((len(messages), reported, response.get("model") or ""))
        messages.append({k: v for k, v in raw.items() if k != "extra"})
    return Run(path.name.split(".traj")[0], messages, requests)


def _reported(usage: Any) -> int | None:
    """The input tokens a usage report states (``prompt_tokens``, else ``input_tokens``), if
    a positive number."""
    if not isinstance(usage, dict):
        return None
    value = usage.get("prompt_tokens", usage.get("input_tokens"))
    try:
        count = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return None
    return count if count > 0 else None


def chars4(message: dict[str, Any]) -> int:
    """Characters of the message text: content (its text parts' text, for a list of parts)
    plus tool-call arguments."""
    content = message.get("content") or ""
    if isinstance(content, list):
        total = sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    else:
        total = len(content)
    for call in message.get("tool_calls") or []:
        total += len((call.get("function") or {}).get("arguments") or "")
    return total


def _model(name: str) -> str:
    return name or "deepseek-chat"


def predictions(run: Run) -> Iterator[tuple[int, dict[str, int]]]:
    """(reported, {method: prediction}) for every request of a run."""
    tracker: CalibrationTracker | None = None
    cold = None
    last: tuple[int, int] | None = None  # (message count, reported)
    for index, reported, model in run.requests:
        history = run.messages[:index]
        if tracker is None:
            tracker = CalibrationTracker(_model(model))
            cold = RequestEstimator(_model(model))
        assert cold is not None
        chars = sum(chars4(m) for m in history) // 4
        if last is None:
            plus = chars
        else:
            plus = last[1] + sum(chars4(m) for m in run.messages[last[0] : index]) // 4
        yield (
            reported,
            {
                "cold": cold.estimate(history, tools=TOOLS).total,
                "anchored": tracker.estimate(history, tools=TOOLS).total,
                "chars4": chars,
                "usage_plus_chars4": plus,
            },
        )
        tracker.observe(history, {"prompt_tokens": reported}, tools=TOOLS)
        last = (index, reported)


def summarize(errors: list[float]) -> dict[str, float]:
    """mean |err|, 95th percentile |err|, worst under (most negative), worst over."""
    if not errors:
        return {"mean_abs": 0.0, "p95_abs": 0.0, "worst_under": 0.0, "worst_over": 0.0}
    absolute = sorted(abs(e) for e in errors)
    p95 = absolute[min(len(absolute) - 1, round(0.95 * (len(absolute) - 1)))]
    return {
        "mean_abs": round(sum(absolute) / len(absolute), 4),
        "p95_abs": round(p95, 4),
        "worst_under": round(min(0.0, min(errors)), 4),
        "worst_over": round(max(0.0, max(errors)), 4),
    }


def replay(runs: list[Run]) -> dict[str, Any]:
    """The replay summary over every request of every run."""
    errors: dict[str, list[float]] = {m: [] for m in METHODS}
    later: dict[str, list[float]] = {m: [] for m in METHODS}  # requests with an earlier usage
    turns = 0
    for run in runs:
        try:
            predicted_run = list(predictions(run))
        except MessageFormatError as exc:
            raise RunError(f"run {run.name}: {exc}") from exc
        for k, (reported, predicted) in enumerate(predicted_run):
            turns += 1
            for method in METHODS:
                err = predicted[method] / reported - 1
                errors[method].append(err)
                if k:
                    later[method].append(err)
    result: dict[str, Any] = {"turns": turns}
    result.update({m: summarize(errors[m]) for m in METHODS})
    result["_later"] = {"turns": len(later["cold"])} | {m: summarize(later[m]) for m in METHODS}
    return result


def fit(runs: list[Run]) -> None:
    """Least-squares fit of the deepseek profile, half/half cross-checked."""
    import numpy as np

    base = PROFILES["deepseek"]
    unit = replace(
        base,
        per_message=0.0,
        per_request=0.0,
        tools_preamble=0.0,
        per_tool_call=0.0,
        per_tool=0.0,
        text_factor=1.0,
        args_factor=1.0,
    )
    rows: list[tuple[int, list[float], float]] = []
    for r, run in enumerate(runs):
        est = RequestEstimator(_model(""), profile=unit)
        for index, reported, _ in run.requests:
            history = run.messages[:index]
            e = est.estimate(history, tools=TOOLS)
            args_and_tools = 0.0
            text = 0.0
            for m, total in zip(history, e.per_message, strict=True):
                a = sum(
                    unit_count(c["function"]["arguments"]) + unit_count(c["function"]["name"])
                    for c in m.get("tool_calls") or []
                )
                args_and_tools += a
                text += total - a
            rows.append((r, [text, args_and_tools, float(len(history)), 1.0], float(reported)))
    tools_est = estimate_request([], tools=TOOLS, model="deepseek-chat").tools - (
        base.tools_preamble
    )

    def solve(sel: list[int]) -> Any:
        x = np.array([rows[i][1] for i in sel])
        y = np.array([rows[i][2] for i in sel])
        w = 1 / y
        coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
        return coef

    def check(sel: list[int], coef: Any) -> dict[str, float]:
        x = np.array([rows[i][1] for i in sel])
        y = np.array([rows[i][2] for i in sel])
        return summarize(list((x @ coef) / y - 1))

    even = [i for i, row in enumerate(rows) if row[0] % 2 == 0]
    odd = [i for i, row in enumerate(rows) if row[0] % 2 == 1]
    for name, train, test in (("even->odd", even, odd), ("odd->even", odd, even)):
        coef = solve(train)
        print(f"{name}: coef={np.round(coef, 3).tolist()}")
        print(f"  train={check(train, coef)}\n  test={check(test, coef)}")
    coef = solve(even + odd)
    text_f, args_f, per_msg, intercept = (float(c) for c in coef)
    print(
        f"all runs: text_factor={text_f:.3f} args_factor={args_f:.3f} per_message={per_msg:.1f} "
        f"per_request+tools={intercept:.1f} -> tools_preamble="
        f"{intercept - base.per_request - tools_est / base.args_factor * args_f:.1f}"
    )


def unit_count(text: str) -> int:
    from ctxbudget.tokens import estimate_tokens

    return estimate_tokens(text, PROFILES["deepseek"].encoding) if text else 0


def _print_table(result: dict[str, Any]) -> None:
    later = result.pop("_later")
    print(f"{result['turns']} requests with provider-reported prompt_tokens")
    header = (
        f"{'method':<20} {'mean |err|':>10} {'p95 |err|':>10} {'worst under':>12} "
        f"{'worst over':>11}"
    )
    for title, table in (("all requests", result), ("requests after the first", later)):
        print(f"\n{title} ({table['turns']}):\n{header}")
        for m in METHODS:
            s = table[m]
            print(
                f"{m:<20} {s['mean_abs']:>10.2%} {s['p95_abs']:>10.2%} "
                f"{s['worst_under']:>12.2%} {s['worst_over']:>11.2%}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--json", action="store_true", help="print the JSON summary only")
    parser.add_argument("--fit", action="store_true", help="refit the deepseek framing profile")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"{args.directory}: no such directory", file=sys.stderr)
        return 2
    try:
        runs = load_runs(args.directory)
        if not runs:
            print(f"no *.traj.json[.gz] files in {args.directory}", file=sys.stderr)
            return 2
        if args.fit:
            fit(runs)
            return 0
        result = replay(runs)
    except RunError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not result["turns"]:
        # Zeros would read as a perfect score on data never measured.
        print(
            f"no assistant message with a usage report (prompt_tokens or input_tokens) in"
            f" {args.directory}: nothing to compare with",
            file=sys.stderr,
        )
        return 2
    if args.json:
        result.pop("_later")
        print(json.dumps(result))
    else:
        _print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
