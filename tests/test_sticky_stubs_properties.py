"""Kept stubs against random edits of the history between turns (a property test).

A guard stubs tool outputs to recover from overflows and keeps those stubs on later turns.
Between turns the agent edits its history every way the README allows: an output redacted in
place (then ``invalidate(message)``), a result block replaced by a new one, a note inserted
before the results in place, parallel results reordered, the history reloaded from JSON, the
guard copied or pickled. Every output carries a version tag at its head, which its stub
quotes: no request may ever carry an old version of an output, whole or in a stub, nor break
tool-call pairing; and an output stubbed in the last accepted request and unchanged since is
never sent whole again.
"""

from __future__ import annotations

import copy
import json
import pickle
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget import ContextBudgetError, ContextGuard, ContextWindowBudget, GuardedRequest
from ctxbudget.prune import PruneConfig
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import pairing_events, resolve_ids, scan, validate_pairing

DUMP = "".join(f"{i:08x}" for i in range(1_500))  # about 5,000 tokens
WINDOW = 30_000
TAG = re.compile(r"<(c\d+)v(\d+)>")


def output(cid: str, version: int) -> str:
    """The output of call ``cid`` at ``version``: tagged at its head, which a stub quotes,
    and at its end, which only the whole output holds."""
    return f"<{cid}v{version}> {DUMP} </{cid}v{version}>"


def call_turn(fmt: str, cids: list[str], versions: dict[str, int]) -> list[dict[str, Any]]:
    """The model's parallel calls ``cids`` and their results (one message in Anthropic and
    Gemini, a message per result in Chat Completions)."""
    if fmt == "openai_chat":
        calls = [
            {"id": c, "type": "function", "function": {"name": "dump", "arguments": "{}"}}
            for c in cids
        ]
        results = [
            {"role": "tool", "tool_call_id": c, "content": output(c, versions[c])} for c in cids
        ]
        return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]
    if fmt == "anthropic":
        uses = [{"type": "tool_use", "id": c, "name": "dump", "input": {}} for c in cids]
        blocks = [result_block(fmt, c, versions[c]) for c in cids]
        return [{"role": "assistant", "content": uses}, {"role": "user", "content": blocks}]
    calls = [{"function_call": {"id": c, "name": "dump", "args": {}}} for c in cids]
    parts = [result_block(fmt, c, versions[c]) for c in cids]
    return [{"role": "model", "parts": calls}, {"role": "user", "parts": parts}]


def result_block(fmt: str, cid: str, version: int) -> dict[str, Any]:
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": cid, "content": output(cid, version)}
    response = {"output": output(cid, version)}
    return {"function_response": {"id": cid, "name": "dump", "response": response}}


def chat_turn(fmt: str, n: int) -> list[dict[str, Any]]:
    if fmt == "gemini":
        return [
            {"role": "model", "parts": [{"text": f"Noted {n}."}]},
            {"role": "user", "parts": [{"text": "Go on."}]},
        ]
    return [{"role": "assistant", "content": f"Noted {n}."}, {"role": "user", "content": "Go on."}]


def result_messages(fmt: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if fmt == "openai_chat":
        return [m for m in history if m["role"] == "tool"]
    field = "content" if fmt == "anthropic" else "parts"
    return [
        m
        for m in history
        if isinstance(m.get(field), list)
        and any("tool_result" in str(b) or "function_response" in b for b in m[field])
    ]


def edit(fmt: str, how: str, k: int, history: list[dict[str, Any]], versions: dict[str, int],
         guard: ContextGuard) -> tuple[list[dict[str, Any]], ContextGuard]:  # fmt: skip
    """Apply edit ``how`` to the ``k``-th result message (modulo their number)."""
    targets = result_messages(fmt, history)
    if how == "reload":
        return json.loads(json.dumps(history)), guard
    if how == "copy":
        return history, copy.copy(guard)
    if how == "pickle":
        return history, pickle.loads(pickle.dumps(guard))
    if not targets:
        return history, guard
    m = targets[k % len(targets)]
    if fmt == "openai_chat":
        cid = m["tool_call_id"]
        versions[cid] += 1
        m["content"] = output(cid, versions[cid])  # a field replaced: noticed without invalidate
        if how == "redact in place":
            guard.invalidate(m)
        return history, guard
    field = "content" if fmt == "anthropic" else "parts"
    blocks = m[field]
    results = [i for i, b in enumerate(blocks) if "tool_use_id" in b or "function_response" in b]
    slot = results[k % len(results)]
    block = blocks[slot]
    cid = block["tool_use_id"] if fmt == "anthropic" else block["function_response"]["id"]
    if how in ("redact in place", "replace block"):
        versions[cid] += 1
        if how == "replace block":
            blocks[slot] = result_block(fmt, cid, versions[cid])
        else:
            if fmt == "anthropic":
                block["content"] = output(cid, versions[cid])
            else:  # two levels down
                block["function_response"]["response"]["output"] = output(cid, versions[cid])
            guard.invalidate(m)
    elif how == "insert note":
        blocks.insert(
            0, {"type": "text", "text": "A note."} if fmt == "anthropic" else {"text": "A note."}
        )
        if k % 2:
            guard.invalidate(m)
    elif how == "reorder":
        blocks.reverse()
        if k % 2:
            guard.invalidate(m)
    return history, guard


EDITS = [
    "none",
    "redact in place",
    "replace block",
    "insert note",
    "reorder",
    "reload",
    "copy",
    "pickle",
]


@settings(max_examples=80, deadline=None)
@given(
    fmt=st.sampled_from(["openai_chat", "anthropic", "gemini"]),
    turns=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(EDITS), st.integers(0, 7)),
        min_size=1,
        max_size=8,
    ),
)
def test_no_request_carries_an_old_version_of_an_output(
    fmt: str, turns: list[tuple[int, str, int]]
) -> None:
    sent: list[str] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        text = json.dumps(request.messages)
        sent.append(text)
        # the provider counts whole dumps 1.8x the estimate of them: refused when several
        count = request.estimate.raw.total + text.count(DUMP) * int(0.8 * estimate_tokens(DUMP))
        if count + 1_000 > WINDOW:
            raise RuntimeError(f"prompt is too long: {count} tokens > {WINDOW} maximum")
        return {"usage": {"input_tokens": count}}

    budget = ContextWindowBudget(WINDOW, reserved_output=1_000, margin=0)
    config = PruneConfig(threshold=10**9, min_turns=1000, turn_floor_fraction=None)
    guard = ContextGuard("gpt-4o", budget=budget, prune=config, calibration=False, format=fmt)
    first = "Dump them." if fmt != "gemini" else None
    history: list[dict[str, Any]] = (
        [{"role": "user", "content": first}]
        if first
        else [{"role": "user", "parts": [{"text": "Dump them."}]}]
    )
    versions: dict[str, int] = {}
    stubbed: dict[str, int] = {}  # call id -> version stubbed in the last accepted request
    n_calls = 0
    for n, (calls, how, k) in enumerate(turns):
        cids = [f"c{n_calls + i}" for i in range(calls)]
        n_calls += calls
        versions.update(dict.fromkeys(cids, 0))
        history = [*history, *(call_turn(fmt, cids, versions) if cids else []), *chat_turn(fmt, n)]
        history, guard = edit(fmt, how, k, history, versions, guard)
        sent.clear()
        try:
            result = guard.send(send, history)
        except ContextBudgetError:
            continue  # nothing sent that is wrong (the outputs may not fit even stubbed)
        assert (
            validate_pairing(pairing_events(resolve_ids(scan(result.request.messages, fmt)))) == []
        )
        for text in sent:
            for cid, version in TAG.findall(text):
                assert int(version) == versions[cid], (how, cid, version, versions[cid])
        # an output stubbed last time and unchanged since is not sent whole again (it was
        # refused then: a stub lost costs a refused send)
        for cid, version in stubbed.items():
            if versions[cid] == version:
                assert f"</{cid}v{version}>" not in sent[0], (how, cid)
        accepted = sent[-1]
        stubbed = {
            cid: int(v) for cid, v in TAG.findall(accepted) if f"</{cid}v{v}>" not in accepted
        }
