"""Replay real agent runs through prune + compact at small windows; report what happened.

Usage::

    python benches/replay_compaction.py ../shared/data/trajectories            # 16k and 32k
    python benches/replay_compaction.py ../shared/data/trajectories --window 16000

Each run (see ``benches/replay_trajectories.py`` for the format) is played as the agent loop
would: messages are appended in order, and before every assistant message (a model call) the
request is prepared the way an agent using ctxbudget would:

1. ``Pruner.prune(history)`` (kept across the run, as an agent keeps it);
2. if the pruned request does not fit: ``compact(history)`` with a deterministic summarizer
   (the first words of every transcript entry, within the word budget), the compacted
   history replaces the stored one, and it is pruned again; at most
   ``MAX_COMPACTIONS_PER_TURN`` compactions per model call (the second with
   ``reason="retry"``).

Every request is then checked independently: it fits the budget (a fresh
``estimate_request``), and its tool-call pairing is valid (the full normalised view and
``validate_pairing``). ``prunes`` counts prune events (new stubs: each one a prompt-cache
break), ``stubbed`` the outputs stubbed in all, ``compactions`` the summaries made.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benches.replay_trajectories import TOOLS, Run, load_runs
from ctxbudget.budget import ContextWindowBudget
from ctxbudget.compact import compact
from ctxbudget.events import ContextEvent
from ctxbudget.messages import normalize_messages
from ctxbudget.pairing import validate_pairing
from ctxbudget.prune import Pruner
from ctxbudget.request import estimate_request

MODEL = "deepseek-chat"
WINDOWS = (16_000, 32_000)
MAX_COMPACTIONS_PER_TURN = 2
_ENTRY = re.compile(r"\n\n(?=\[\d+\] )")


def first_words_summarizer(words_per_entry: int = 8) -> Any:
    """A deterministic summarizer: the first words of every transcript entry."""

    def summarize(prompt: str, max_tokens: int) -> str:
        transcript = prompt.split("<transcript>\n", 1)[1].split("\n</transcript>", 1)[0]
        budget = max_tokens // 2
        lines: list[str] = ["## Progress"]
        used = 0
        for entry in _ENTRY.split(transcript):
            words = entry.split()[:words_per_entry]
            if used + len(words) > budget:
                break
            used += len(words)
            lines.append("- " + " ".join(words))
        return "\n".join(lines)

    return summarize


def pairing_ok(messages: list[Any]) -> bool:
    """Independent check: the normalised view's tool-call pairing is valid, and each
    assistant message's calls are answered by the tool messages right after it (Chat
    Completions refuses a request otherwise)."""
    if not _answered_in_place(messages):
        return False
    events: list[tuple[int, int, str]] = []
    for pos, message in enumerate(normalize_messages(messages, "openai_chat")):
        for part in message.parts:
            if part.kind == "tool_call":
                events.append((pos, 0, part.call_id or ""))
            elif part.kind == "tool_result":
                events.append((pos, 1, part.call_id or ""))
    return not validate_pairing(events)


def _answered_in_place(messages: list[Any]) -> bool:
    waiting: set[str] = set()  # the calls of the last assistant message not answered yet
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in waiting:
                return False
            waiting.discard(message["tool_call_id"])
            continue
        if waiting:
            return False
        waiting = {call["id"] for call in message.get("tool_calls") or ()}
    return not waiting


@dataclass
class RunReport:
    """What happened to one run at one window."""

    name: str
    window: int
    requests: int = 0
    prunes: int = 0
    stubbed: int = 0
    compactions: int = 0
    max_compactions_per_turn: int = 0
    peak_fill: float = 0.0  # highest (input + reserve) / window of a request sent
    failures: list[str] = field(default_factory=list)


def replay_run(run: Run, window: int) -> RunReport:
    """Play one run at one window (see the module docstring)."""
    report = RunReport(run.name, window)
    budget = ContextWindowBudget.for_model(MODEL, window=window)
    events: list[ContextEvent] = []
    pruner = Pruner(budget=budget, model=MODEL, format="openai_chat", on_event=events.append)
    summarize = first_words_summarizer()
    history: list[dict[str, Any]] = []
    for message in run.messages:
        if message["role"] == "assistant":
            report.requests += 1
            view = pruner.prune(history, tools=TOOLS)
            done = 0
            while not view.fits and done < MAX_COMPACTIONS_PER_TURN:
                result = compact(
                    history,
                    summarize,
                    budget=budget,
                    tools=TOOLS,
                    model=MODEL,
                    format="openai_chat",
                    reason="proactive" if done == 0 else "retry",
                )
                history = result.messages
                done += 1
                view = pruner.prune(history, tools=TOOLS, reason="retry")
            report.compactions += done
            report.max_compactions_per_turn = max(report.max_compactions_per_turn, done)
            sent = view.messages
            check = estimate_request(sent, tools=TOOLS, model=MODEL, format="openai_chat")
            fill = (check.total + budget.reserve()) / window
            report.peak_fill = max(report.peak_fill, fill)
            if not budget.fits(check):
                report.failures.append(f"request {report.requests}: {budget.check(check)}")
            if (view.changed or done) and not pairing_ok(sent):
                report.failures.append(f"request {report.requests}: pairing broken")
        history = [*history, message]
    prune_events = [e for e in events if e.action == "prune"]
    report.prunes = len(prune_events)
    report.stubbed = sum(e.stubbed for e in prune_events)
    return report


def replay(runs: list[Run], windows: tuple[int, ...] = WINDOWS) -> list[RunReport]:
    """Every run at every window."""
    return [replay_run(run, window) for window in windows for run in runs]


def table(reports: list[RunReport]) -> str:
    """A plain-text table, one row per run and window, with totals per window."""
    rows = [
        f"{'run':<48} {'window':>6} {'calls':>5} {'prunes':>6} {'stubbed':>7} "
        f"{'compact':>7} {'max/turn':>8} {'peak':>5} {'ok':>3}"
    ]
    for r in reports:
        rows.append(
            f"{r.name[:48]:<48} {r.window // 1000:>5}k {r.requests:>5} {r.prunes:>6} "
            f"{r.stubbed:>7} {r.compactions:>7} {r.max_compactions_per_turn:>8} "
            f"{r.peak_fill:>5.2f} {'yes' if not r.failures else 'NO':>3}"
        )
    for window in sorted({r.window for r in reports}):
        sub = [r for r in reports if r.window == window]
        rows.append(
            f"{'TOTAL':<48} {window // 1000:>5}k {sum(r.requests for r in sub):>5} "
            f"{sum(r.prunes for r in sub):>6} {sum(r.stubbed for r in sub):>7} "
            f"{sum(r.compactions for r in sub):>7} "
            f"{max(r.max_compactions_per_turn for r in sub):>8} "
            f"{max(r.peak_fill for r in sub):>5.2f} "
            f"{'yes' if not any(r.failures for r in sub) else 'NO':>3}"
        )
    return "\n".join(rows)


def replay_parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a replay: the runs' directory, the windows."""
    parser = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--window", type=int, action="append", help="repeatable")
    return parser


def finish(reports: list[Any], text: str) -> int:
    """Print the table, then every failure on stderr; the exit code."""
    print(text)
    failures = [f"{r.name}@{r.window}: {f}" for r in reports for f in r.failures]
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args = replay_parser(__doc__ or "").parse_args(argv)
    reports = replay(load_runs(args.directory), tuple(args.window or WINDOWS))
    return finish(reports, table(reports))


if __name__ == "__main__":
    raise SystemExit(main())
