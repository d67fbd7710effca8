"""``ctxbudget inspect``: what a conversation costs, and what pruning would make of it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.formats.common import as_mapping
from ctxbudget.prune import Pruner, PruneResult
from ctxbudget.request import RequestEstimate, estimate_request

__all__ = ["Inspection", "inspect_conversation", "load_conversation", "print_inspection"]

#: Model assumed when neither the file nor ``--model`` names one.
DEFAULT_MODEL = "gpt-4o"


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request read from a JSON file."""

    messages: list[Any]
    tools: list[Any] | None
    system: Any
    model: str
    max_tokens: int | None = None


def load_conversation(path: Path, model: str | None = None) -> Conversation:
    """A JSON list of messages, or an object with ``messages`` (and optionally ``tools``,
    ``system``, ``model``: a request body as sent to the provider).

    Raises:
        ValueError: The file is not such JSON.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}") from None
    if isinstance(data, list):
        return Conversation(data, None, None, model or DEFAULT_MODEL)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ValueError("expected a list of messages or an object with a 'messages' list")
    named = data.get("model") if isinstance(data.get("model"), str) else None
    caps = [data.get(k) for k in ("max_tokens", "max_completion_tokens", "max_output_tokens")]
    cap = next((c for c in caps if isinstance(c, int) and not isinstance(c, bool)), None)
    return Conversation(
        data["messages"],
        data.get("tools"),
        data.get("system"),
        model or named or DEFAULT_MODEL,
        cap,
    )


@dataclass(frozen=True, slots=True)
class Inspection:
    """A conversation's cost against a window, and its pruned view."""

    conversation: Conversation
    estimate: RequestEstimate
    budget: ContextWindowBudget
    pruned: PruneResult
    max_tokens: int | None

    @property
    def reserve(self) -> int:
        return self.budget.reserve(self.max_tokens)

    @property
    def fill(self) -> float:
        """(input + reserve) / window."""
        return (self.estimate.total + self.reserve) / self.budget.window


def inspect_conversation(
    conv: Conversation, *, window: int | None = None, max_tokens: int | None = None
) -> Inspection:
    """Estimate ``conv`` and prune it against the model's window (or ``window``);
    ``max_tokens`` defaults to the request body's."""
    if max_tokens is None:
        max_tokens = conv.max_tokens
    if window is None:
        budget = ContextWindowBudget.for_model(conv.model)
    else:
        budget = ContextWindowBudget.for_model(conv.model, window=window)
    est = estimate_request(
        conv.messages, system=conv.system, tools=conv.tools, model=conv.model,
        max_tokens=max_tokens,
    )  # fmt: skip
    pruner = Pruner(budget=budget, model=conv.model)
    pruned = pruner.prune(
        conv.messages, system=conv.system, tools=conv.tools, max_tokens=max_tokens
    )
    return Inspection(conv, est, budget, pruned, max_tokens)


def _bar(fill: float, width: int = 30) -> str:
    full = min(width, round(fill * width))
    return "#" * full + "." * (width - full)


def _preview(message: Any, width: int = 50) -> tuple[str, str]:
    """(role, the start of its text) of a message."""
    m = as_mapping(message) or {}
    role = str(m.get("role") or m.get("type") or "?")[:10]
    body = next((m[k] for k in ("content", "output", "parts", "arguments") if k in m), "")
    if m.get("type") == "function_call":
        body = f"{m.get('name', '')}({m.get('arguments', '')})"
    text = json.dumps(body, ensure_ascii=False).strip('"').replace("\\n", " ")
    return role, text[:width] + ("..." if len(text) > width else "")


def print_inspection(ins: Inspection, name: str, top: int = 5) -> None:
    """Print the report of ``ctxbudget inspect``."""
    est, budget = ins.estimate, ins.budget
    print(
        f"{name}: {len(ins.conversation.messages)} messages ({est.format}), model"
        f" {ins.conversation.model}, encoding {est.encoding}"
    )
    print(
        f"window {budget.window:,} = input up to {budget.window - ins.reserve:,}"
        f" + {ins.reserve:,} kept for the answer"
    )
    print(
        f"input  {est.total:,} tokens ({est.accuracy.value}): system {est.system:,},"
        f" tools {est.tools:,}, framing {est.framing:,}, messages {est.conversation:,}"
    )
    verdict = "fits" if budget.fits(est, max_tokens=ins.max_tokens) else "does NOT fit"
    print(f"window [{_bar(ins.fill)}] {ins.fill:.0%}  {verdict}")
    print()
    print(f"largest messages:\n{'#':>5}  {'role':<10} {'tokens':>8}  {'share':>5}  start")
    for i in largest(est.per_message, top):
        role, text = _preview(ins.conversation.messages[i])
        share = est.per_message[i] / max(1, est.total)
        print(f"{i:>5}  {role:<10} {est.per_message[i]:>8,}  {share:>5.0%}  {text}")
    print()
    _print_plan(ins)


def _print_plan(ins: Inspection) -> None:
    pruned = ins.pruned
    if pruned.pruned:
        print(
            f"pruning: {len(pruned.pruned)} tool outputs become stubs:"
            f" {pruned.tokens_before:,} -> {pruned.tokens_after:,} tokens"
            f" ({'fits' if pruned.fits else 'still does not fit'})"
        )
    else:
        print("pruning: nothing to stub (no old tool output past the threshold)")
    if not pruned.fits:
        print(
            "the guard would then compact the older turns into a summary (given a"
            " summarizer) and stub the largest fresh results"
        )


def largest(per_message: Sequence[int], top: int) -> list[int]:
    """Indices of the ``top`` largest messages, largest first."""
    return sorted(range(len(per_message)), key=lambda i: -per_message[i])[:top]
