"""Replay real agent runs through ContextGuard at small windows; report what happened.

Usage::

    python -m benches.replay_guard ../shared/data/trajectories            # 16k and 32k
    python -m benches.replay_guard ../shared/data/trajectories --window 16000
    python -m benches.replay_guard ../shared/data/trajectories --skew 1.3

Each run (format: ``benches/replay_trajectories.py``) is played as an agent loop using the
guard would play it: the stored history only grows (the guard never changes it), and every
model call goes through one :class:`~ctxbudget.guard.ContextGuard` kept for the run, with
the deterministic summarizer of ``benches/replay_compaction.py``.

The provider is simulated, since the runs' real counts exist only for the requests as they
were sent: it counts ``kappa`` tokens per estimated token, ``kappa`` being the run's own
ratio of reported ``prompt_tokens`` to our cold estimate (its median over the run's calls;
0.85-1.09 on the shared runs), reports that count as usage, and raises an OpenAI-worded
"maximum context length" error when count + ``max_tokens`` is over the window. Every request
the provider receives is checked independently: its pairing is valid, and it fits the window
by the provider's count (an overflow the guard then recovers from is counted, not failed).
``--skew F`` makes the provider count ``F`` times more (a model whose tokenizer the estimate
does not know): the calibration must learn it, and the overflows it meets first are
recovered from.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass, field
from typing import Any

from benches.replay_compaction import finish, first_words_summarizer, pairing_ok, replay_parser
from benches.replay_trajectories import TOOLS, Run, load_runs
from ctxbudget import ContextGuard, ContextWindowBudget, GuardedRequest, estimate_request
from ctxbudget.errors import ContextWindowError
from ctxbudget.events import ContextEvent

MODEL = "deepseek-chat"
WINDOWS = (16_000, 32_000)
MAX_TOKENS = 2_000


class ProviderOverflow(Exception):
    """What the simulated provider raises for a request over its window."""


@dataclass
class GuardReport:
    """What happened to one run at one window."""

    name: str
    window: int
    kappa: float = 1.0
    requests: int = 0
    dispatches: int = 0
    prunes: int = 0
    stubbed: int = 0
    compactions: int = 0
    overflows: int = 0
    peak_fill: float = 0.0  # highest (provider count + max_tokens) / window accepted
    failures: list[str] = field(default_factory=list)


def kappa(run: Run) -> float:
    """The run's provider tokens per estimated token (median over its reported calls)."""
    ratios = [
        reported / estimate_request(run.messages[:i], tools=TOOLS, model=MODEL).total
        for i, reported, _ in run.requests
    ]
    return statistics.median(ratios) if ratios else 1.0


class Provider:
    """Counts, accepts or refuses requests like a provider with a ``window``-token model."""

    def __init__(self, window: int, kappa: float, report: GuardReport) -> None:
        self.window = window
        self.kappa = kappa
        self.report = report

    def __call__(self, request: GuardedRequest) -> dict[str, Any]:
        self.report.dispatches += 1
        raw = estimate_request(request.messages, tools=request.tools, model=MODEL)
        count = round(raw.total * self.kappa)
        if not pairing_ok(request.messages):
            self.report.failures.append(f"request {self.report.requests}: pairing broken")
        cap = request.max_tokens or 0
        if count + cap > self.window:
            self.report.overflows += 1
            raise ProviderOverflow(
                f"This model's maximum context length is {self.window} tokens. However, you"
                f" requested {count + cap} tokens ({count} in the messages, {cap} in the"
                " completion). Please reduce the length of the messages or completion."
            )
        self.report.peak_fill = max(self.report.peak_fill, (count + cap) / self.window)
        return {"usage": {"prompt_tokens": count}}


def replay_run(run: Run, window: int, skew: float = 1.0) -> GuardReport:
    """Play one run at one window (see the module docstring)."""
    report = GuardReport(run.name, window, kappa(run) * skew)
    events: list[ContextEvent] = []
    guard = ContextGuard(
        MODEL,
        budget=ContextWindowBudget.for_model(MODEL, window=window),
        summarize=first_words_summarizer(),
        format="openai_chat",
        on_event=events.append,
    )
    provider = Provider(window, report.kappa, report)
    history: list[dict[str, Any]] = []
    for message in run.messages:
        if message["role"] == "assistant":
            report.requests += 1
            stored = copy.deepcopy(history)
            try:
                guard.send(provider, history, tools=TOOLS, max_tokens=MAX_TOKENS)
            except (ContextWindowError, ProviderOverflow) as exc:
                report.failures.append(f"request {report.requests}: {exc}")
            if history != stored:
                report.failures.append(f"request {report.requests}: history changed")
        history.append(message)
    report.prunes = sum(1 for e in events if e.action == "prune")
    report.stubbed = sum(e.stubbed for e in events if e.action == "prune")
    report.compactions = sum(1 for e in events if e.action == "compact")
    return report


def replay(
    runs: list[Run], windows: tuple[int, ...] = WINDOWS, skew: float = 1.0
) -> list[GuardReport]:
    """Every run at every window."""
    return [replay_run(run, window, skew) for window in windows for run in runs]


def table(reports: list[GuardReport]) -> str:
    """A plain-text table, one row per run and window, with totals per window."""
    head = (
        f"{'run':<44} {'window':>6} {'kappa':>5} {'calls':>5} {'sent':>5} {'prunes':>6} "
        f"{'stubbed':>7} {'compact':>7} {'overflow':>8} {'peak':>5} {'ok':>3}"
    )
    rows = [head]
    for r in reports:
        rows.append(
            f"{r.name[:44]:<44} {r.window // 1000:>5}k {r.kappa:>5.2f} {r.requests:>5} "
            f"{r.dispatches:>5} {r.prunes:>6} {r.stubbed:>7} {r.compactions:>7} "
            f"{r.overflows:>8} {r.peak_fill:>5.2f} {'yes' if not r.failures else 'NO':>3}"
        )
    for window in sorted({r.window for r in reports}):
        sub = [r for r in reports if r.window == window]
        rows.append(
            f"{'TOTAL':<44} {window // 1000:>5}k {'':>5} {sum(r.requests for r in sub):>5} "
            f"{sum(r.dispatches for r in sub):>5} {sum(r.prunes for r in sub):>6} "
            f"{sum(r.stubbed for r in sub):>7} {sum(r.compactions for r in sub):>7} "
            f"{sum(r.overflows for r in sub):>8} {max(r.peak_fill for r in sub):>5.2f} "
            f"{'yes' if not any(r.failures for r in sub) else 'NO':>3}"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = replay_parser(__doc__ or "")
    parser.add_argument("--skew", type=float, default=1.0, help="provider tokens per ours")
    args = parser.parse_args(argv)
    reports = replay(load_runs(args.directory), tuple(args.window or WINDOWS), args.skew)
    return finish(reports, table(reports))


if __name__ == "__main__":
    raise SystemExit(main())
