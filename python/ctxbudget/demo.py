"""``ctxbudget demo``: an agent run replayed through :class:`~ctxbudget.guard.ContextGuard`.

The run is a coding agent chasing a failing nightly export (OpenAI Chat format, one ``shell``
tool). It is built here, deterministically, so that it outgrows a small window: source files,
test logs, a long service log and one huge CSV dump. Every model call of the run goes through
one guard, and each decision is printed: sent as it is, old outputs pruned into stubs, a
fresh output too large for the window stubbed, older turns compacted. Nothing leaves the
machine: the "provider" counts with ctxbudget's own estimate, and the summarizer is a
stand-in that keeps the first words of each transcript entry (a real agent passes its
model).
"""

from __future__ import annotations

import copy
import json
import operator
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxbudget.errors import ContextWindowError
from ctxbudget.events import ContextEvent
from ctxbudget.guard import ContextGuard, GuardedRequest
from ctxbudget.request import estimate_request
from ctxbudget.tokens import estimate_tokens

__all__ = ["MIN_WINDOW", "DemoCall", "demo_run", "print_demo", "replay"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a shell command in the repository and return its output",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command"}},
                "required": ["command"],
            },
        },
    }
]

_MODULES = ["export", "writer", "schema", "scheduler", "storage", "retry", "metrics"]
_WORDS = ["order", "customer", "invoice", "amount", "currency", "region", "batch", "chunk"]


def _code(rng: random.Random, module: str, functions: int) -> str:
    out = [f'"""The {module} step of the nightly export."""', "", "import logging", ""]
    for i in range(functions):
        a, b = rng.sample(_WORDS, 2)
        out += [
            f"def {a}_{b}_{i}(rows, {b}_size=500):",
            f'    """Yield {a} records in chunks of {b}_size."""',
            "    batch = []",
            "    for row in rows:",
            f"        if row.get('{a}') is None:",
            f"            logging.warning('skipping row without {a}: %s', row.get('id'))",
            "            continue",
            "        batch.append(row)",
            f"        if len(batch) >= {b}_size:",
            "            yield batch",
            "            batch = []",
            "    if batch:",
            "        yield batch",
            "",
        ]
    return "\n".join(out)


def _log(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        minute, level = 2 + i // 60, rng.choice(["INFO ", "INFO ", "DEBUG", "WARN "])
        out.append(
            f"2026-11-29T02:{minute % 60:02d}:{i % 60:02d}.{rng.randrange(1000):03d}Z {level}"
            f" [export] chunk={i} rows={rng.randrange(400, 500)} offset={i * 500}"
            f" took={rng.uniform(5, 90):.1f}ms region=eu-west-1"
        )
    out.append(
        "2026-11-29T02:59:59.999Z ERROR [export] chunk=912 offset=456000: KeyError: 'currency'"
    )
    return "\n".join(out)


def _csv(rng: random.Random, rows: int) -> str:
    out = ["id,customer,amount,currency,region,created"]
    for i in range(rows):
        out.append(
            f"ORD-{100000 + i},{rng.randrange(10**6)},{rng.uniform(1, 999):.2f},"
            f"{rng.choice(['EUR', 'USD', 'GBP', ''])},eu-west-1,2026-11-29T01:{i % 60:02d}:00Z"
        )
    return "\n".join(out)


def _test_log(rng: random.Random, failing: bool, tests: int) -> str:
    out = ["============================= test session starts ============================="]
    out += [
        f"tests/test_{m}.py::test_{w}_{i} PASSED"
        for i, (m, w) in enumerate((rng.choice(_MODULES), rng.choice(_WORDS)) for _ in range(tests))
    ]
    if failing:
        out += [
            "tests/test_export.py::test_rows_without_currency FAILED",
            "================================== FAILURES ===================================",
            "    def test_rows_without_currency():",
            ">       rows = list(export_rows([{'id': 1, 'amount': 3.5}]))",
            "E       KeyError: 'currency'",
            "src/export/export.py:88: KeyError",
            f"{'=' * 25} 1 failed, {tests} passed in 4.21s {'=' * 25}",
        ]
    else:
        out.append(f"{'=' * 29} {tests + 1} passed in 4.02s {'=' * 29}")
    return "\n".join(out)


def _hexdump(rng: random.Random, lines: int) -> str:
    """``xxd`` of a binary checkpoint."""
    out = []
    for i in range(lines):
        data = bytes(rng.randrange(256) for _ in range(16))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in data)
        words = " ".join(data[j : j + 2].hex() for j in range(0, 16, 2))
        out.append(f"{i * 16:08x}: {words}  {text}")
    return "\n".join(out)


#: The output cap of the demo's requests.
MAX_TOKENS = 2_000
#: The smallest window ``ctxbudget demo`` takes. Below about 5,000 tokens the run cannot go
#: through (the 2,000-token answer reserve and a turn the guard must keep verbatim do not fit
#: together: gpt-4o fails at 4,600, claude-sonnet-4-5 at 4,300); 6,000 leaves some margin.
MIN_WINDOW = 6_000
#: The command whose output the simulated provider counts twice (a tokenizer the estimate
#: does not know could split hex that much finer).
HEXDUMP_COMMAND = "xxd -l 4000 state/chunk-912.ckpt"


def demo_run(seed: int = 7) -> list[dict[str, Any]]:
    """The demo agent run: every message, in order (OpenAI Chat Completions format)."""
    rng = random.Random(seed)
    steps: list[tuple[str, str, str]] = [
        ("Let me see the layout.", "ls -R src tests",
         "\n".join(f"src/export/{m}.py" for m in _MODULES) + "\n"
         + "\n".join(f"tests/test_{m}.py" for m in _MODULES)),
        ("Running the export tests first.", "python -m pytest tests -q",
         _test_log(rng, True, 120)),
    ]  # fmt: skip
    for module in _MODULES:
        steps.append((f"Reading {module}.py.", f"cat src/export/{module}.py",
                      _code(rng, module, 14)))  # fmt: skip
        hits = [f"{10 + 7 * i}: row['currency']" for i in range(rng.randrange(2, 9))]
        steps.append((f"Where does {module} touch the currency?",
                      f"grep -n currency src/export/{module}.py", "\n".join(hits)))  # fmt: skip
    steps += [
        ("The nightly log should show where it stops.", "tail -n 250 logs/nightly.log",
         _log(rng, 250)),
        ("Let me look at the rows it was exporting.", "cat exports/2026-11-29.csv",
         _csv(rng, 1200)),
        ("Rows without a currency crash the export; defaulting to the account currency.",
         "apply_patch fix-missing-currency.diff", "patched src/export/export.py (+6 -1)"),
        ("Running the tests again.", "python -m pytest tests -q", _test_log(rng, False, 120)),
    ]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful engineer. Use the shell tool."},
        {"role": "user", "content": "The nightly export failed at chunk 912. Find out why."},
    ]
    for i, (say, command, output) in enumerate(steps):
        call: dict[str, Any] = {"id": f"call_{i:02d}", "type": "function"}
        call["function"] = {"name": "shell", "arguments": json.dumps({"command": command})}
        messages.append({"role": "assistant", "content": say, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    done = "Fixed: rows without a currency get the account's currency; all tests pass."
    messages.append({"role": "assistant", "content": done})
    for k, topic in enumerate(_FOLLOW_UPS):
        messages.append({"role": "user", "content": f"Thanks. Now {topic}"})
        if k == 3:  # one more look at the data before answering
            call = {"id": "call_ckpt", "type": "function"}
            call["function"] = {
                "name": "shell",
                "arguments": json.dumps({"command": HEXDUMP_COMMAND}),
            }
            messages.append({"role": "assistant", "content": "Checking the checkpoint first.",
                             "tool_calls": [call]})  # fmt: skip
            messages.append(
                {"role": "tool", "tool_call_id": "call_ckpt", "content": _hexdump(rng, 100)}
            )
        messages.append({"role": "assistant", "content": _explanation(rng, topic)})
    return messages


_FOLLOW_UPS = [
    "explain why the export crashed only at chunk 912.",
    "write the release note for the fix.",
    "list what else could fail the same way.",
    "propose a monitoring alert for this.",
    "summarise the whole investigation for the on-call handbook.",
    "draft the message to the finance team about the missed export.",
    "say in one line what changed.",
]


def _explanation(rng: random.Random, topic: str) -> str:
    """A long answer: what an assistant writes when asked to {topic}."""
    sentences = []
    for _ in range(60):
        a, b, c = rng.sample(_WORDS, 3)
        module = rng.choice(_MODULES)
        sentences.append(
            f"The {module} step reads each {a} with its {b}, and when the {c} is missing it"
            f" now falls back to the account default instead of failing the whole batch."
        )
    return f"To {topic.rstrip('.')}: " + " ".join(sentences)


def first_words(prompt: str, max_tokens: int) -> str:
    """A stand-in summarizer: the first words of each transcript entry, within the cap."""
    transcript = prompt.split("<transcript>\n", 1)[-1].split("\n</transcript>", 1)[0]
    lines, used = ["## Progress so far"], 0
    for entry in transcript.split("\n\n"):
        words = entry.split()[:10]
        if not words or used + len(words) > max_tokens // 2:
            continue
        used += len(words)
        lines.append("- " + " ".join(words))
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class DemoCall:
    """One model call of the demo and what the guard did for it.

    Attributes:
        number: 1 for the run's first model call.
        messages: Messages in the stored history at that call.
        history_tokens: Estimated input of the stored history, sent as it is.
        sent_tokens: Estimated input of what the guard sent.
        fill: Share of the window used by what was sent plus the output reserve.
        actions: What the guard did, one line each.
        history_intact: The stored history was not changed by the call.
    """

    number: int
    messages: int
    history_tokens: int
    sent_tokens: int
    fill: float
    actions: tuple[str, ...]
    history_intact: bool


def replay(
    window: int = 16_000, model: str = "gpt-4o", summarize: Callable[[str, int], str] = first_words
) -> Iterator[DemoCall]:
    """Every model call of :func:`demo_run` through one guard, with what it did."""
    guard = ContextGuard(model, window=window, summarize=summarize)

    def provider(request: GuardedRequest) -> dict[str, Any]:
        count = request.estimate.raw.total + sum(
            estimate_tokens(m["content"])
            for m in request.messages
            if m.get("role") == "tool" and m["content"] in hexdumps
        )
        out = request.max_tokens or 0
        if count + out > window:  # worded as OpenAI does
            raise RuntimeError(
                f"This model's maximum context length is {window} tokens. However, you"
                f" requested {count + out} tokens ({count} in the messages, {out} in the"
                " completion). Please reduce the length of the messages or completion."
            )
        return {"usage": {"prompt_tokens": count}}

    run = demo_run()
    hexdumps = _outputs_of(run, HEXDUMP_COMMAND)
    history: list[dict[str, Any]] = []
    number = 0
    for message in run:
        if message["role"] == "assistant":
            number += 1
            stored = copy.deepcopy(history)
            result = guard.send(provider, history, tools=TOOLS, max_tokens=MAX_TOKENS)
            full = estimate_request(history, tools=TOOLS, model=model).total
            sent = result.request.input_tokens
            actions = tuple(_describe(e) for e in result.events)
            actions += _carried_over(history, result.request.messages, result.events)
            if result.overflow is not None:
                actions += (
                    f"the provider said too long ({result.overflow.requested_tokens:,} tokens):"
                    " retried once, and it went through",
                )
            # the reserve of the output the request went with (lowered after an overflow, or not)
            out = result.request.max_tokens
            fill = (sent + guard.budget.reserve(out if out is not None else MAX_TOKENS)) / window
            yield DemoCall(number, len(history), full, sent, fill, actions, history == stored)
        history.append(message)


def _outputs_of(run: list[dict[str, Any]], command: str) -> set[str]:
    """The outputs of the calls of ``command`` in ``run``."""
    ids = {
        call["id"]
        for m in run
        for call in m.get("tool_calls") or []
        if json.loads(call["function"]["arguments"]).get("command") == command
    }
    return {m["content"] for m in run if m.get("tool_call_id") in ids}


def _carried_over(
    history: list[dict[str, Any]], view: list[Any], events: tuple[ContextEvent, ...]
) -> tuple[str, ...]:
    """What the sent ``view`` holds of earlier calls that this call's ``events`` do not say:
    the guard re-uses its summaries and keeps its stubs without a new event, and a call that
    sent less than the history must not read "sent as it is"."""
    if not events and len(view) == len(history) and all(map(operator.is_, view, history)):
        return ("sent as it is",)
    stored = {id(m) for m in history}
    new = [m for m in view if id(m) not in stored]
    stubs = sum(1 for m in new if m.get("role") == "tool")
    summaries = len(new) - stubs
    summarized = len(history) - (len(view) - len(new)) - stubs
    parts = []
    if summaries and not any(e.action == "compact" for e in events):
        kept = "the summary" if summaries == 1 else f"the {summaries} summaries"
        parts.append(f"{kept} of {summarized} older messages")
    if stubs and not any(e.action == "prune" for e in events):
        parts.append(f"{stubs} tool output{'s' if stubs != 1 else ''} stubbed")
    return (f"as before: {', '.join(parts)}",) if parts else ()


def _describe(event: ContextEvent) -> str:
    saved = event.tokens_before - event.tokens_after
    if event.action == "lower_output":
        return f"lowered max_tokens {event.max_tokens_before:,} -> {event.max_tokens_after:,}"
    if event.action == "compact":
        return (
            f"compacted {event.summarized} older messages into a summary, kept {event.kept}"
            f" (-{saved:,} tokens)"
        )
    plural = "s" if event.stubbed != 1 else ""
    order = ", largest first, recent ones too" if event.largest else ""
    return f"stubbed {event.stubbed} tool output{plural}{order} (-{saved:,} tokens)"


def print_demo(window: int = 16_000, model: str = "gpt-4o", width: int = 20) -> int:
    """Print the demo (``ctxbudget demo``); the exit code: 1 if a call went wrong."""
    run = demo_run()
    total = estimate_request(run, tools=TOOLS, model=model).total
    reserve = ContextGuard(model, window=window).budget.reserve(MAX_TOKENS)
    print(
        f"A coding agent's run ({len(run)} messages, {total:,} tokens in all) replayed through"
        f" ContextGuard:\n{model}, a {window:,}-token window, {reserve:,} of them kept for the"
        " answer.\nSimulated: the provider (it counts with ctxbudget's estimate, and a hex dump"
        " twice, as a\ntokenizer the estimate does not know might) and the summarizer (the"
        " first words of each\nentry). Nothing leaves this machine. 'history' is the stored"
        " history's estimate, 'sent'\nthe guard's count of what it sent (its estimate,"
        " corrected by the provider's usage reports).\n"
    )
    title = "window used"
    print(f"{'call':>4}  {'history':>7}  {'sent':>6}  {title:<{width + 5}}  what the guard did")
    ok = True
    number = 0
    try:
        for call in replay(window, model):
            number = call.number
            ok = ok and call.history_intact and call.fill <= 1.0
            bar = "#" * min(width, round(call.fill * width))
            head = (
                f"{call.number:>4}  {call.history_tokens:>7,}  {call.sent_tokens:>6,}"
                f"  {bar:<{width}} {call.fill:>4.0%}"
            )
            for k, action in enumerate(call.actions):
                print(f"{head if k == 0 else '':<{len(head)}}  {action}")
    except ContextWindowError as err:  # a window too small for the run: the guard refused
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(
            f"ctxbudget demo: call {number + 1} cannot go through a {window:,}-token window"
            f" (try a larger --window): {reason}",
            file=sys.stderr,
        )
        return 1
    verdict = "went through within the window" if ok else "DID NOT all fit the window"
    print(f"\nEvery call {verdict}; the stored history was never changed: {'yes' if ok else 'NO'}.")
    return 0 if ok else 1
