"""Stubs kept from one turn to the next (SPEC F3, F5) against what agents do to their
history between turns and while a request is in flight: block lists rebuilt, outputs redacted
in place or replaced, notes inserted, ids renamed, rounds cut, histories reloaded, guards
copied or pickled. Each case failed before.

``send`` here is a plain function playing the provider: it counts the whole hex dumps it is
sent more than the guard's estimate does, and refuses with the provider's wording.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import pickle
import re
from typing import Any

import pytest

from ctxbudget import (
    ContextGuard,
    ContextWindowBudget,
    GuardedRequest,
    PruneConfig,
    estimate_request,
    estimate_tokens,
)


def _recovering_guard(fmt: str | None, window: int) -> ContextGuard:
    """A guard of ``window`` tokens (1,000 of output, no margin) that prunes nothing old on
    its own: what it stubs, it stubs to fit or to recover."""
    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    config = PruneConfig(threshold=10**9, min_turns=1000, turn_floor_fraction=None)
    return ContextGuard("gpt-4o", budget=budget, prune=config, calibration=False, format=fmt)


def _hex_provider(window: int, attempts: list[int], sent: list[str], extra: float = 0.8) -> Any:
    """A provider counting the estimate plus ``extra`` x the estimate of each whole hex dump
    it is sent (the estimate under-counts them), refusing over ``window`` less 1,000 of
    output."""

    def send(request: GuardedRequest) -> dict[str, Any]:
        text = json.dumps(request.messages)
        sent.append(text)
        attempts.append(request.attempt)
        dumps = re.findall(r"(?:[0-9a-f]{8}){500,}", text)
        count = request.estimate.raw.total + sum(int(extra * estimate_tokens(d)) for d in dumps)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    return send


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
@pytest.mark.parametrize(
    "change",
    [
        "rebuilt",
        "rebuilt from storage",
        "appended in place",
        "inserted in place",
        "inserted in place, invalidated",
        "inserted in place, guard copied",
        "inserted in place, guard pickled",
        "note replaced",
    ],
)
def test_a_stubbed_result_stays_stubbed_when_its_message_s_blocks_are_rebuilt(
    fmt: str, change: str
) -> None:
    """The agent rebuilds the block list of the message holding a result stubbed to recover
    each turn (prompt-caching code moving ``cache_control`` to the latest blocks): the result
    is the same, the list a new one. The stub was dropped and every later turn refused once;
    the rebuilt blocks (their ``cache_control``) are what is sent. The same with the whole
    history loaded anew from storage each turn. A note added to that list in place (to keep
    roles alternating), or put in place of the one there, was never sent: the stubbed copy of
    the list before was; one inserted before the result crashed a recovery (Gemini), and
    did so still after ``invalidate(message)`` or through a copy of the guard."""
    window = 40_000
    dump = "".join(f"{i:08x}" for i in range(7_000))
    attempts: list[int] = []
    field = "content" if fmt == "anthropic" else "parts"

    def whole_dumps(request: GuardedRequest) -> int:
        return sum(1 for m in request.messages for b in m[field] if dump in str(b))

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = request.estimate.raw.total + whole_dumps(request) * int(0.8 * estimate_tokens(dump))
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    guard = _recovering_guard(fmt, window)
    if fmt == "anthropic":
        use = {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "hexdump", "input": {}}],
        }
        results = [
            {"type": "tool_result", "tool_use_id": "a", "content": dump},
            {"type": "text", "text": "The dump of the primary node."},
        ]
        turn = [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Go on."}]
    else:
        use = {
            "role": "model",
            "parts": [{"function_call": {"id": "a", "name": "hexdump", "args": {}}}],
        }
        response = {"id": "a", "name": "hexdump", "response": {"output": dump}}
        results = [{"function_response": response}, {"text": "The dump of the primary node."}]
        turn = [
            {"role": "model", "parts": [{"text": "Noted."}]},
            {"role": "user", "parts": [{"text": "Go on."}]},
        ]
    history: list[dict[str, Any]] = [
        {"role": "user", field: [{"text": "Audit the dump."}] if fmt == "gemini" else "Audit."},
        use,
        {"role": "user", field: results},
    ]
    guard.send(send, history)
    assert attempts == [1, 2]
    for n in range(4):
        history = [*history, *copy.deepcopy(turn)]
        if change == "rebuilt from storage":
            history = json.loads(json.dumps(history))
        note = (
            {"type": "text", "text": f"Note {n}."} if fmt == "anthropic" else {"text": f"Note {n}."}
        )
        if change == "appended in place":
            history[2][field].append(note)
        elif change.startswith("inserted in place"):
            history[2][field].insert(0, note)
            if change.endswith("invalidated"):
                guard.invalidate(history[2])
            elif change.endswith("copied"):
                guard = copy.copy(guard)
            elif change.endswith("pickled"):
                guard = pickle.loads(pickle.dumps(guard))
        elif change == "note replaced":
            history[2][field][-1] = note
        else:
            rebuilt = [dict(b) for b in history[2][field]]  # equal blocks, a new list
            if fmt == "anthropic":
                for b in rebuilt:
                    b.pop("cache_control", None)
                rebuilt[n % 2]["cache_control"] = {"type": "ephemeral"}
            history[2][field] = rebuilt
        attempts.clear()
        sent = guard.send(send, history).request.messages
        assert attempts == [1]
        assert whole_dumps(guard.send(send, history).request) == 0
        if change == "appended in place" or change.startswith("inserted in place"):
            assert all(f"Note {k}." in str(sent[2]) for k in range(n + 1))
        elif change == "note replaced":
            assert f"Note {n}." in str(sent[2]) and f"Note {n - 1}." not in str(sent[2])
            continue
        elif fmt == "anthropic":
            assert [("cache_control" in b) for b in sent[2]["content"]] == [n % 2 == 0, n % 2 == 1]
        assert "The dump of the primary node." in str(sent[2])


def _redactable(fmt: str, output: str) -> list[dict[str, Any]]:
    """A user asking, a call to ``hexdump`` (id ``a``) and its ``output``, in ``fmt``."""
    if fmt == "openai_chat":
        call = {"id": "a", "type": "function", "function": {"name": "hexdump", "arguments": "{}"}}
        return [
            {"role": "user", "content": "Audit."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": output},
        ]
    if fmt == "anthropic":
        return [
            {"role": "user", "content": "Audit."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "hexdump", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": output}],
            },
        ]
    response = {"id": "a", "name": "hexdump", "response": {"output": output}}
    return [
        {"role": "user", "parts": [{"text": "Audit."}]},
        {"role": "model", "parts": [{"function_call": {"id": "a", "name": "hexdump", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": response}]},
    ]


def _turn(fmt: str, reply: str, ask: str) -> list[dict[str, Any]]:
    """The model's ``reply`` and the user's next ``ask``, in ``fmt``."""
    if fmt == "gemini":
        return [
            {"role": "model", "parts": [{"text": reply}]},
            {"role": "user", "parts": [{"text": ask}]},
        ]
    return [{"role": "assistant", "content": reply}, {"role": "user", "content": ask}]


def _redact(fmt: str, message: dict[str, Any], old: str, new: str, *, in_place: bool) -> None:
    """Put ``new`` for ``old`` in the result of ``message``: inside its block (in place), or
    with the block replaced by a new one in its list (Chat: the content field replaced)."""
    if fmt == "openai_chat":
        message["content"] = message["content"].replace(old, new)
    elif fmt == "anthropic":
        block = message["content"][0]
        if in_place:
            block["content"] = block["content"].replace(old, new)
        else:
            message["content"][0] = {**block, "content": block["content"].replace(old, new)}
    else:
        response = message["parts"][0]["function_response"]
        if in_place:  # the output string of the response dict, two levels down
            response["response"]["output"] = response["response"]["output"].replace(old, new)
        else:
            output = response["response"]["output"].replace(old, new)
            message["parts"][0] = {
                "function_response": {**response, "response": {"output": output}}
            }


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "gemini"])
@pytest.mark.parametrize("in_place", [True, False], ids=["edited in place", "block replaced"])
def test_a_stubbed_result_the_agent_redacts_is_never_sent_as_its_old_stub(
    fmt: str, in_place: bool
) -> None:
    """A tool output beginning with a secret is stubbed to recover (the stub, kept for later
    turns, quotes the output's head); the agent redacts the output, in place then calling
    ``invalidate(message)``, or by putting a new block in its list. The stub of the old
    output, with the secret, went on being sent (after invalidate: the stubs were kept by
    slot, unchecked; a new block: the stub cache compared only the list); now the output is
    sent as it is, stubbed afresh when it does not fit."""
    window, secret = 40_000, "sk-live-51Habc"
    dump = "".join(f"{i:08x}" for i in range(7_000))
    output = f"API_KEY={secret}\n{dump}"
    sent: list[str] = []
    send = _hex_provider(window, [], sent)
    guard = _recovering_guard(fmt, window)
    history = _redactable(fmt, output)
    guard.send(send, history)
    assert len(sent) == 2 and secret in sent[1] and dump not in sent[1]  # stubbed, quoting it
    _redact(fmt, history[2], secret, "[REDACTED]", in_place=in_place)
    if in_place:
        guard.invalidate(history[2])
    sent.clear()
    for n in range(3):
        history += _turn(fmt, f"Noted {n}.", "Go on.")
        guard.send(send, history)
        assert "[REDACTED]" in sent[-1]
    assert not any(secret in text for text in sent)


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_a_block_with_a_kept_stub_replaced_in_place_is_estimated_as_it_is_now(fmt: str) -> None:
    """The result stubbed to recover is replaced in its block list, in place and without
    ``invalidate``, by a larger output: the guard sees the result change (its stub goes) and
    estimates the message anew, so the new output is stubbed before sending. The estimate
    read the old block's count, and the provider refused the first send."""
    window, attempts = 40_000, []
    dump = "".join(f"{i:08x}" for i in range(7_000))
    larger = "".join(f"{i:09x}" for i in range(10**6, 10**6 + 12_000))
    send = _hex_provider(window, attempts, [])
    guard = _recovering_guard(fmt, window)
    history = _redactable(fmt, dump)
    guard.send(send, history)
    assert attempts == [1, 2]
    (block,) = _redactable(fmt, larger)[2]["content" if fmt == "anthropic" else "parts"]
    history[2]["content" if fmt == "anthropic" else "parts"][0] = block
    history += _turn(fmt, "Noted.", "Go on.")
    attempts.clear()
    sent = guard.send(send, history).request.messages
    assert attempts == [1]
    assert larger not in json.dumps(sent) and "hexdump returned" in json.dumps(sent[2])


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_an_old_block_replaced_in_place_without_invalidate_is_recovered_from(
    fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent puts an output larger than the window in place of an old result block,
    in place and without ``invalidate`` (the contract asks for it): the guard's estimate
    reads the old block, and the provider refuses. The recovery used to take the difference
    for tokens no pruning could free, and the call failed with ContextOverflowError; now it
    reads the history anew (with a warning naming ``invalidate``) and stubs that output."""
    window, attempts = 40_000, []
    small = "a.txt\nb.txt\n"
    larger = "".join(f"{i:09x}" for i in range(10**6, 10**6 + 20_000))

    def send(request: GuardedRequest) -> dict[str, Any]:
        text = json.dumps(request.messages)
        count = estimate_tokens(text)  # the provider counts what it is sent
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, calibration=False, format=fmt)
    history = _redactable(fmt, small)
    guard.send(send, history)
    field = "content" if fmt == "anthropic" else "parts"
    (block,) = _redactable(fmt, larger)[2][field]
    history[2][field][0] = block
    history += _turn(fmt, "Noted.", "Go on.")
    attempts.clear()
    with caplog.at_level(logging.WARNING, logger="ctxbudget.guard"):
        sent = guard.send(send, history).request.messages
    assert attempts == [1, 2]
    assert larger not in json.dumps(sent) and "hexdump returned" in json.dumps(sent[2])
    assert "invalidate(message)" in caplog.text


def _two_results(fmt: str, a: str, b: str) -> list[dict[str, Any]]:
    """A user asking and two parallel calls, ``a`` and ``b``, with their outputs."""
    if fmt == "anthropic":
        uses = [{"type": "tool_use", "id": c, "name": "hexdump", "input": {}} for c in "ab"]
        results = [
            {"type": "tool_result", "tool_use_id": c, "content": out}
            for c, out in zip("ab", (a, b), strict=True)
        ]
        return [
            {"role": "user", "content": "Audit."},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": results},
        ]
    calls = [{"function_call": {"id": c, "name": "hexdump", "args": {}}} for c in "ab"]
    parts = [
        {"function_response": {"id": c, "name": "hexdump", "response": {"output": out}}}
        for c, out in zip("ab", (a, b), strict=True)
    ]
    return [
        {"role": "user", "parts": [{"text": "Audit."}]},
        {"role": "model", "parts": calls},
        {"role": "user", "parts": parts},
    ]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
@pytest.mark.parametrize("in_place", [True, False], ids=["edited in place", "block replaced"])
def test_when_one_of_two_stubbed_results_changes_the_other_stays_stubbed(
    fmt: str, in_place: bool
) -> None:
    """Two parallel outputs are stubbed to recover; the agent redacts one. The other,
    unchanged, stays stubbed: its stub was dropped with the changed one's, and the next send
    refused."""
    window, attempts, sent = 50_000, [], []
    a = "API_KEY=sk-live-51Habc\n" + "".join(f"{i:08x}" for i in range(3_000))
    b = "".join(f"{i:08x}" for i in range(10**6, 10**6 + 3_000))
    guard = _recovering_guard(fmt, window)
    send = _hex_provider(window, attempts, sent, extra=2.0)
    history = _two_results(fmt, a, b)
    guard.send(send, history)
    assert attempts == [1, 2] and a not in sent[1] and b not in sent[1]
    _redact(fmt, history[2], "sk-live-51Habc", "[REDACTED]", in_place=in_place)
    if in_place:
        guard.invalidate(history[2])
    history += _turn(fmt, "Noted.", "Go on.")
    attempts.clear(), sent.clear()
    guard.send(send, history)
    assert attempts == [1]
    assert b not in sent[0] and "sk-live" not in sent[0]


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "gemini"])
def test_a_result_redacted_while_the_stubbed_request_is_in_flight_is_not_kept_stubbed(
    fmt: str,
) -> None:
    """The retry with an output stubbed is in flight (``asend`` releases the guard's lock) when
    another task of the agent redacts that output. The stub, which quotes the secret, was
    kept for every later turn; now the output is sent as it is next turn (stubbed afresh)."""
    window, attempts, sent = 40_000, [], []
    secret = "sk-live-51Habc"
    dump = "".join(f"{i:08x}" for i in range(7_000))
    guard = _recovering_guard(fmt, window)
    history = _redactable(fmt, f"API_KEY={secret}\n{dump}")
    count = _hex_provider(window, attempts, sent)

    async def run() -> None:
        async def send(request: GuardedRequest) -> dict[str, Any]:
            if request.attempt == 2:  # the scrubber runs while the provider answers
                await asyncio.sleep(0)
                _redact(fmt, history[2], secret, "[REDACTED]", in_place=False)
            return count(request)

        await guard.asend(send, history)
        assert attempts == [1, 2] and secret in sent[1]
        sent.clear()
        for n in range(2):
            history.extend(_turn(fmt, f"Noted {n}.", "Go on."))
            await guard.asend(send, history)
        assert not any(secret in text for text in sent)
        assert "[REDACTED]" in sent[-1]

    asyncio.run(run())


def test_a_tool_message_with_a_kept_stub_is_sent_with_the_fields_it_has_now() -> None:
    """The agent renames a Chat tool result's call id (and its call's), or adds a field, by
    replacing the fields, without ``invalidate``: the stubbed copy made before was sent,
    with the old id (PairingError: an orphaned result) or without the field."""
    window, attempts, sent = 40_000, [], []
    dump = "".join(f"{i:08x}" for i in range(7_000))
    guard = _recovering_guard(None, window)
    send = _hex_provider(window, attempts, sent)
    history = _redactable("openai_chat", dump)
    guard.send(send, history)
    assert attempts == [1, 2]
    history[1]["tool_calls"] = [{**history[1]["tool_calls"][0], "id": "call_NEW"}]
    history[2]["tool_call_id"] = "call_NEW"
    history[2]["name"] = "hexdump"
    history += _turn("openai_chat", "Noted.", "Go on.")
    attempts.clear()
    result = guard.send(send, history).request.messages
    assert attempts == [1]
    assert result[2]["tool_call_id"] == "call_NEW" and result[2]["name"] == "hexdump"
    assert dump not in json.dumps(result[2])


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "gemini"])
def test_a_kept_stub_under_a_reused_call_id_survives_the_oldest_round_cut(fmt: str) -> None:
    """A model numbering its calls per response (``call_0`` every round): the guard sends
    the second round's under a renamed id, and stubs its large output to recover. The agent
    then cuts the oldest round (a sliding window): the id is no longer reused, the caller's
    message is sent in place of the renamed copy, and the stub was lost (one more refused
    send); it follows the output now."""
    window, attempts, sent = 40_000, [], []
    dump = "".join(f"{i:08x}" for i in range(7_000))
    guard = _recovering_guard(fmt, window)
    send = _hex_provider(window, attempts, sent)

    def round_of(output: str) -> list[dict[str, Any]]:
        messages = _redactable(fmt, output)
        text = json.dumps(messages).replace('"a"', '"call_0"')  # the ids, not the outputs
        return [*json.loads(text), *_turn(fmt, "Noted.", "Go on.")]

    first, second = round_of("a.txt"), round_of(dump)
    history = [*first, *second]
    guard.send(send, history)
    assert attempts == [1, 2]
    history = [*second]  # the oldest round cut
    attempts.clear(), sent.clear()
    guard.send(send, history)
    assert attempts == [1] and dump not in sent[0]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_a_kept_stub_survives_a_history_reloaded_with_its_keys_reordered(fmt: str) -> None:
    """The agent stores its history where objects come back with their keys in another
    order (PostgreSQL ``jsonb``) and reloads it each turn: a structured output stubbed to
    recover is the same output, and stays stubbed (its digest read the key order)."""
    window, attempts, sent = 40_000, [], []
    dump = "".join(f"{i:08x}" for i in range(7_000))
    guard = _recovering_guard(fmt, window)
    send = _hex_provider(window, attempts, sent)
    history = _redactable(fmt, dump)
    if fmt == "anthropic":  # the output as a list of text blocks, keys type then text
        history[2]["content"][0]["content"] = [{"type": "text", "text": dump}]
    else:  # a response of two fields, output then exit_code
        history[2]["parts"][0]["function_response"]["response"]["exit_code"] = 0
    guard.send(send, history)
    assert attempts == [1, 2]
    for n in range(2):
        history = json.loads(
            json.dumps([*history, *_turn(fmt, f"Noted {n}.", "Go on.")], sort_keys=True)
        )
        attempts.clear(), sent.clear()
        guard.send(send, history)
        assert attempts == [1] and dump not in sent[0]


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "gemini"])
def test_an_output_read_again_is_not_taken_for_the_stub_of_the_same_output_cut(fmt: str) -> None:
    """An output is stubbed to recover; the model runs the tool again, as its stub says, and
    gets the same output under a new call id; the agent then cuts the oldest round, so the
    new result takes the old one's place. It is sent whole (it fits): it took the kept stub
    of the output cut, and the model would have been told again to read it again."""
    window, attempts, sent, refused = 40_000, [], [], []
    dump = "".join(f"{i:08x}" for i in range(7_000))
    guard = _recovering_guard(fmt, window)

    def send(request: GuardedRequest) -> dict[str, Any]:
        """Refuses the first request only (a deployment's limit that was lifted since)."""
        sent.append(json.dumps(request.messages))
        attempts.append(request.attempt)
        if not refused:
            refused.append(request.attempt)
            raise RuntimeError(f"prompt is too long: {window + 100} tokens > {window} maximum")
        return {"usage": {"input_tokens": request.estimate.raw.total}}

    history = _redactable(fmt, dump)
    guard.send(send, history)
    assert attempts == [1, 2] and dump not in sent[1]
    again = json.loads(json.dumps(_redactable(fmt, dump)).replace('"a"', '"b"'))  # a new id
    history = [*history, *_turn(fmt, "It was too large.", "Read it again."), *again[1:]]
    attempts.clear(), sent.clear()
    guard.send(send, history[3:])  # the oldest round cut
    assert attempts == [1] and dump in sent[0]


def test_a_stub_does_not_move_to_another_tool_s_equal_output_in_its_message() -> None:
    """grep's and cat's outputs in one message are equal; one alone was stubbed to recover.
    The agent redacts that one: the other, which the model read whole, stays whole (the
    stub moved to it, naming the other tool)."""
    window, sent = 40_000, []
    dump = "".join(f"{i:08x}" for i in range(3_500))

    def send(request: GuardedRequest) -> dict[str, Any]:
        """Refuses the first request only, a little over the window."""
        sent.append(json.dumps(request.messages))
        if len(sent) == 1:
            raise RuntimeError(f"prompt is too long: {window + 1_500} tokens > {window} maximum")
        return {"usage": {"input_tokens": request.estimate.raw.total}}

    guard = _recovering_guard("anthropic", window)
    history = _two_results("anthropic", dump, dump)
    history[1]["content"][1]["name"] = "cat"
    guard.send(send, history)
    blocks = json.loads(sent[-1])[2]["content"]
    whole = [b["content"] == dump for b in blocks]
    assert sorted(whole) == [False, True]  # one stubbed
    stubbed = whole.index(False)
    history[2]["content"][stubbed] = {**history[2]["content"][stubbed], "content": "[redacted]"}
    history += _turn("anthropic", "Noted.", "Go on.")
    guard.send(send, history)
    blocks = json.loads(sent[-1])[2]["content"]
    assert blocks[stubbed]["content"] == "[redacted]" and blocks[1 - stubbed]["content"] == dump


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic"])
def test_an_output_redacted_while_the_request_is_in_flight_is_retried_as_it_is_now(
    fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another task redacts a large output in place while the request is in flight, and
    calls ``invalidate`` as asked; the provider refuses the request as it was. The retry
    sends the redacted history as it is, nothing stubbed. The refused count used to be taken
    against the redacted estimate (the whole difference "excess": the call failed), with a
    warning that ``invalidate`` was not called; before that, the same objects made the
    retry "nothing left to prune"."""
    secret = "sk-live-51Habc"
    dump = "".join(f"{i:08x}" for i in range(4_000))
    history = _redactable(fmt, f"API_KEY={secret}\n{dump}")
    window = int(estimate_request(history, model="gpt-4o").total * 1.2)
    counts: list[tuple[int, int]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        # the request as it arrives, 1.3x the estimate
        count = int(1.3 * estimate_request(request.messages, model="gpt-4o").total)
        counts.append((request.attempt, count))
        if request.attempt == 1:  # meanwhile, the scrubber
            _redact(fmt, history[2], f"API_KEY={secret}\n{dump}", "[redacted]", in_place=True)
            guard.invalidate(history[2])
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    guard = _recovering_guard(fmt, window)
    with caplog.at_level(logging.WARNING, logger="ctxbudget.guard"):
        result = guard.send(send, history)
    assert [attempt for attempt, _ in counts] == [1, 2]
    sent = json.dumps(result.request.messages)
    assert "[redacted]" in sent and "ctxbudget:" not in sent and secret not in sent
    assert "invalidate" not in caplog.text


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic"])
def test_a_tool_run_again_under_the_same_reused_id_is_sent_whole_after_the_cut(fmt: str) -> None:
    """A model numbering its calls per response (``call_0`` every round): round 1's output is
    stubbed to recover; the model runs the tool again (``call_0`` again) and gets the same
    output, sent whole; the agent then cuts round 1. Round 2's result, now where round 1's
    was, with the same id and output, took round 1's stub: the output the model asked for
    again was taken away again."""
    window, sent, refused = 40_000, [], []
    dump = "".join(f"{i:08x}" for i in range(7_000))

    def send(request: GuardedRequest) -> dict[str, Any]:
        """Refuses the first request only, a little over the window."""
        sent.append(json.dumps(request.messages))
        if not refused:
            refused.append(request.attempt)
            raise RuntimeError(f"prompt is too long: {window + 100} tokens > {window} maximum")
        return {"usage": {"input_tokens": request.estimate.raw.total}}

    def round_of() -> list[dict[str, Any]]:
        messages = json.loads(json.dumps(_redactable(fmt, dump)).replace('"a"', '"call_0"'))
        return [*messages, *_turn(fmt, "Noted.", "Go on.")]

    guard = _recovering_guard(fmt, window)
    first, second = round_of(), round_of()
    guard.send(send, first)
    assert dump not in sent[-1]
    guard.send(send, [*first, *second])
    assert sent[-1].count(dump) == 1  # round 2's, whole
    guard.send(send, second)  # round 1 cut
    assert dump in sent[-1]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_a_redacted_block_under_a_reused_call_id_is_sent_as_it_is_now(fmt: str) -> None:
    """A model numbering its calls per response runs a tool twice (``call_0`` both times);
    both outputs are stubbed to recover and the stubs kept. The agent redacts the second by
    putting a new block in place of the old one. The guard sends that round under a renamed
    id, from a copy it kept while the message's fields were the same objects: the old block
    stayed in the copy, and its stub, quoting what was redacted, went on being sent."""
    window = 30_000
    secret = "API_KEY=sk-live-51Habc\n"
    dump = "".join(f"{i:08x}" for i in range(5_000))
    sent: list[str] = []
    send = _hex_provider(window, [], sent, extra=1.0)

    def round_of() -> list[dict[str, Any]]:
        messages = _redactable(fmt, secret + dump)
        return json.loads(json.dumps(messages).replace('"a"', '"call_0"'))

    guard = _recovering_guard(fmt, window)
    history = round_of()
    guard.send(send, [*history, *_turn(fmt, "Noted.", "Go on.")[1:]])
    history += [*_turn(fmt, "Noted.", "Again."), *round_of()[1:]]
    guard.send(send, [*history, *_turn(fmt, "Noted.", "Go on.")[1:]])
    assert dump not in sent[-1]  # both stubbed
    field = "content" if fmt == "anthropic" else "parts"
    (block,) = _redactable(fmt, "[redacted]")[2][field]
    redacted = json.loads(json.dumps(block).replace('"a"', '"call_0"'))
    history[-1][field][0] = redacted  # the second round's result, in place
    sent.clear()
    guard.send(send, [*history, *_turn(fmt, "Noted.", "Go on.")[1:]])
    assert "[redacted]" in sent[-1] and sent[-1].count("sk-live") == 1  # the first stub's


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic"])
def test_kept_stubs_under_renumbered_reused_ids_survive_the_oldest_round_cut(fmt: str) -> None:
    """Four rounds of ``call_0`` (a model numbering its calls per response), each output
    stubbed to recover and the stubs kept; the guard sends them as ``call_0``,
    ``call_0_2``, ``call_0_3``, ``call_0_4``. Once the first round is cut, the guard
    numbers the others anew (``call_0_3`` becomes ``call_0_2``): their stubs were lost,
    and the next send refused."""
    window, attempts, sent = 20_000, [], []
    send = _hex_provider(window, attempts, sent, extra=1.0)
    guard = _recovering_guard(fmt, window)

    def round_of(n: int) -> list[dict[str, Any]]:
        dump = "".join(f"{i:08x}" for i in range(10**6 * n, 10**6 * n + 2_600))
        messages = json.loads(json.dumps(_redactable(fmt, dump)).replace('"a"', '"call_0"'))
        return [*messages, *_turn(fmt, "Noted.", "Go on.")[:1]]

    history: list[dict[str, Any]] = []
    for n in range(1, 5):
        history += round_of(n)
        guard.send(send, history)
    assert re.search(r"(?:[0-9a-f]{8}){500,}", sent[-1]) is None  # all stubbed
    attempts.clear()
    guard.send(send, history[4:])  # the first round cut
    assert attempts == [1]
