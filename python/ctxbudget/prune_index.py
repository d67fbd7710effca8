"""What a :class:`~ctxbudget.prune.Pruner` knows of a history, kept while the list only grows.

Each turn an agent appends a message or two to a history of hundreds. The facts pruning
needs about the history (the tool name of every call id, which calls were made and
answered, the prunable tool outputs with their sizes) and the stub messages it made are
the same as the last call's for every message the new list shares with it. A
:class:`HistoryIndex` holds them by position; :func:`extend_index` reads only the messages
after the shared prefix, which the :class:`~ctxbudget.turns.ScanCache` establishes (the same
objects, with the same content fields, in the same places; the ids a Gemini history's
id-less calls are given depend only on the messages up to theirs, so they stay). Any other
change (a message edited, removed or replaced) rebuilds the index from the whole list; the
result is the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxbudget.stubs import is_stub
from ctxbudget.turns import MessageInfo, ScanCache

__all__ = ["Candidate", "HistoryIndex", "MadeStub", "StubKind", "extend_index"]

StubKind = Literal["old", "interrupted", "missing"]
#: A tool output that may be stubbed: (message index, slot, tokens, text).
Candidate = tuple[int, int, int, str]
#: Per stubbed message: (its slots' decisions, the stubbed message, what it stubbed).
MadeStub = tuple[dict[int, tuple[StubKind, int, str]], Any, tuple[Any, ...]]


@dataclass(slots=True)
class HistoryIndex:
    """Facts about the first ``length`` messages of the history one Pruner call read.

    Attributes:
        scanner: The scan cache that read the history.
        scans: Its ``scans`` count after that read.
        length: Messages read.
        names: Tool name of each call id (first call with that id).
        called: Call ids of every call.
        answered: Call ids of every result.
        users: Indices of the user messages (each starts a turn).
        last_assistant: Index of the last assistant message (-1: none).
        calls_at: Where each call id is called: (message index, place in the message, tool).
        candidates: Tool outputs that may be stubbed (at least the minimum size, not already
            a stub), in conversation order.
        stubs: The stub messages the call made, by message index (filled by the Pruner).
    """

    scanner: ScanCache
    scans: int
    length: int
    names: dict[str, str] = field(default_factory=dict)
    called: set[str | None] = field(default_factory=set)
    answered: set[str | None] = field(default_factory=set)
    users: list[int] = field(default_factory=list)
    last_assistant: int = -1
    calls_at: dict[str | None, list[tuple[int, int, str]]] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    stubs: dict[int, MadeStub] = field(default_factory=dict)


def extend_index(
    last: HistoryIndex | None,
    scanner: ScanCache,
    fmt: str,
    msgs: list[Any],
    infos: list[MessageInfo],
    size: Callable[[Any, int], tuple[int, str]],
    min_tokens: int,
    head_chars: int,
) -> tuple[HistoryIndex, dict[int, MadeStub]]:
    """The index of ``msgs`` (just read by ``scanner``), and the stubs the previous index
    ``last`` made that may be re-used (all of its messages are unchanged, and no call added
    since names a result they stub; a stub names the tool), by message index.

    ``size(message, slot)`` gives the (tokens, text) of one tool output; outputs under
    ``min_tokens`` and stubs (with heads of ``head_chars``) are no candidates.
    """
    shared = 0
    if (
        last is not None
        and last.scanner is scanner
        and scanner.scans == last.scans + 1
        and scanner.prefix == last.length
    ):
        shared = last.length
    index = HistoryIndex(scanner, scanner.scans, len(msgs))
    if shared and last is not None:
        index.names = dict(last.names)
        index.called = set(last.called)
        index.answered = set(last.answered)
        index.candidates = list(last.candidates)
        index.users = list(last.users)
        index.last_assistant = last.last_assistant
        index.calls_at = dict(last.calls_at)  # lists are replaced, never extended: see below
    names, called, answered, candidates = (
        index.names,
        index.called,
        index.answered,
        index.candidates,
    )
    renamed = False
    calls_at = index.calls_at
    for i in range(shared, len(msgs)):
        info = infos[i]
        for k, (cid, name) in enumerate(info.calls):
            called.add(cid)
            calls_at[cid] = [*calls_at.get(cid, ()), (i, k, name)]
            if cid is not None and cid not in names:
                names[cid] = name
                renamed = renamed or cid in answered
        for rid, _, _ in info.results:
            answered.add(rid)
        if info.kind == "user":
            index.users.append(i)
        elif info.kind == "assistant":
            index.last_assistant = i
        if info.kind != "results":
            continue
        m = msgs[i]
        for _, _, slot in info.results:
            tokens, text = size(m, slot)
            if tokens >= min_tokens and not is_stub(text, head_chars):
                candidates.append((i, slot, tokens, text))
    if not shared or renamed or last is None:
        return index, {}
    return index, last.stubs


def unanswered_calls(index: HistoryIndex, run_start: bool) -> dict[int, list[tuple[str, str]]]:
    """The calls the conversation moved on from without a result (a user or assistant
    message follows them; with ``run_start``, every call without a result): (call id, tool)
    by message index, in the order of the calls."""
    lost = index.called - index.answered
    lost.discard(None)
    if not lost:
        return {}
    later = max(index.users[-1] if index.users else -1, index.last_assistant)
    found = sorted(
        (i, k, cid, name)
        for cid in lost
        for i, k, name in index.calls_at[cid]
        if run_start or i < later
    )
    missing: dict[int, list[tuple[str, str]]] = {}
    for i, _, cid, name in found:
        if cid is not None:
            missing.setdefault(i, []).append((cid, name))
    return missing
