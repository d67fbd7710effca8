"""ContextGuard misuses an agent loop makes by accident, each of which failed before.

The provider is the real openai SDK against the loopback server, or a plain function; the
caller's history is checked to be what it was.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from ctxbudget import ContextGuard, GuardedRequest, MessageFormatError
from tests.conftest import LoopbackServer
from tests.test_guard import BUDGET, MODEL, agent_history, completion, overflow, sent_messages


@pytest.fixture
def server(loopback: LoopbackServer) -> Iterator[LoopbackServer]:
    loopback.reply(200, completion(1_000))
    loopback.bodies.clear()
    yield loopback
    loopback.queued.clear()


def test_asend_keeps_the_response_of_a_sync_send(server: LoopbackServer) -> None:
    """A sync SDK client in an async agent loop: its call is made by the time ``send``
    returns, so the response (and a recovery from an overflow) must not be lost to an
    ``await`` of it ("object ChatCompletion can't be used in 'await' expression", raised
    after the provider had answered)."""
    history = agent_history([200] * 10)
    before = copy.deepcopy(history)
    server.queue(400, overflow(BUDGET.window, BUDGET.window + 9_000))

    async def run() -> Any:
        with openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0) as client:

            def send(request: GuardedRequest) -> Any:
                return client.chat.completions.create(model=MODEL, **request.kwargs())

            return await ContextGuard(MODEL, budget=BUDGET).asend(send, history)

    result = asyncio.run(run())

    assert len(server.bodies) == 2 and result.request.attempt == 2
    assert result.response.choices[0].message.content == "ok" and result.usage_recorded
    assert sent_messages(server) == result.request.messages
    assert history == before


def test_send_refuses_an_async_send_before_anything_is_sent() -> None:
    """``send`` given an ``async def`` (or a function returning its coroutine) used to hand
    back the coroutine as the response: no request made, no recovery, no calibration, and a
    "coroutine was never awaited" warning later."""
    made: list[GuardedRequest] = []

    async def provider(request: GuardedRequest) -> dict[str, Any]:
        made.append(request)
        return {"usage": {"prompt_tokens": request.input_tokens}}

    guard = ContextGuard(MODEL, budget=BUDGET)
    history = agent_history([20])

    with pytest.raises(TypeError, match="use asend"):
        guard.send(provider, history)
    with pytest.raises(TypeError, match="use asend"):
        guard.send(lambda request: provider(request), history)

    assert made == []
    assert asyncio.run(guard.asend(provider, history)).usage_recorded and len(made) == 1


@pytest.mark.parametrize("bad", [None, 5, "hello", {"role": "user", "content": "hello"}])
def test_messages_that_are_not_a_list_are_a_format_error(bad: Any) -> None:
    """One message dict instead of the history used to be read key by key ("expected a
    message dict, got str"), and ``None`` failed with "'NoneType' object is not iterable";
    the other entry points say what is wrong."""
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(MessageFormatError, match="expected a list of messages"):
        guard.send(lambda request: {}, bad)
    with pytest.raises(MessageFormatError, match="expected a list of messages"):
        asyncio.run(guard.asend(_never, bad))


async def _never(request: GuardedRequest) -> None:  # pragma: no cover - never called
    raise AssertionError("sent")


def test_a_retry_with_the_content_refused_is_not_sent() -> None:
    """The provider counted an output reserve (8,000) other than the ``max_tokens`` the guard
    was given (1,000): the rebuilt view had the same content in new stub objects, and was sent
    again for a second refusal instead of failing at once with the reason."""
    from ctxbudget import ContextOverflowError, ContextWindowBudget, PruneConfig

    refusal = (
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum"
        " context length is 4096 tokens and your request has 2778 input tokens"
        " (8000 > 4096 - 2778). None"
    )  # vLLM's wording (shared overflow catalog, vllm-max-tokens-too-large)
    budget = ContextWindowBudget(4_096, reserved_output=1_000, margin=0)
    guard = ContextGuard(MODEL, budget=budget, prune=PruneConfig(threshold=10**9))
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        raise RuntimeError(refusal)

    with pytest.raises(ContextOverflowError, match="nothing left to prune"):
        guard.send(send, agent_history([200]), max_tokens=1_000)
    assert len(sent) == 1


def _abandoned_run(fmt: str, lost: bool = False) -> list[dict[str, Any]]:
    """A run that failed after its tool ran (no reply after the result), then a new request;
    with ``lost``, the run's second call (``c2``) has no result at all."""
    big = "line of output\n" * 1_200
    if fmt == "anthropic":
        calls = [{"type": "tool_use", "id": f"c{k}", "name": "read", "input": {}} for k in (1, 2)]
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": calls[: 1 + lost]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": big},
                    {"type": "text", "text": "try again"},
                ],
            },
        ]
    if fmt == "gemini":
        parts = [{"function_call": {"id": f"c{k}", "name": "read", "args": {}}} for k in (1, 2)]
        response = {"id": "c1", "name": "read", "response": {"output": big}}
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": parts[: 1 + lost]},
            {"role": "user", "parts": [{"function_response": response}, {"text": "try again"}]},
        ]
    calls = [
        {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        for k in (1, 2)
    ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls[: 1 + lost]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
        {"role": "user", "content": "try again"},
    ]


def _next_turn(fmt: str, n: int) -> list[dict[str, Any]]:
    """A reply of the model and the user's next message."""
    if fmt == "gemini":
        return [
            {"role": "model", "parts": [{"text": f"done {n}"}]},
            {"role": "user", "parts": [{"text": f"next {n}"}]},
        ]
    return [
        {"role": "assistant", "content": f"done {n}"},
        {"role": "user", "content": f"next {n}"},
    ]


@pytest.mark.parametrize(
    ("fmt", "lost"),
    [
        ("openai_chat", False),
        ("anthropic", False),
        ("gemini", False),
        ("openai_chat", True),
        ("anthropic", True),
        ("gemini", True),
    ],
)
def test_a_result_stubbed_at_the_run_start_stays_stubbed(fmt: str, lost: bool) -> None:
    """The run start stubs a result its failed run abandoned (SPEC D4); on the next turn
    it is no longer abandoned, and the whole output came back in the middle of the history
    (the model had gone on from the stub, and the prompt cache lost that prefix). With a
    lost call of the same turn, whose added result the pruner puts in the same message
    (Anthropic, Gemini), the whole output came back on the next turn, and an "old" stub
    of it replaced the "not read" one on the turn after."""
    history = _abandoned_run(fmt, lost)
    before = copy.deepcopy(history)
    guard = ContextGuard(MODEL, window=32_000)

    def send(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"prompt_tokens": request.input_tokens}}

    first = guard.send(send, history, run_start=True).request.messages
    views = [first]
    for n in range(2):
        history += _next_turn(fmt, n)
        views.append(guard.send(send, history).request.messages)
    assert "not read" in str(first[2]) and len(str(first[2])) < 3_000
    assert ("c2" in str(first[2:4])) is lost  # the lost call's added result
    assert all(view[2] == first[2] for view in views)
    assert views[1][2] is views[2][2]
    assert history[: len(before)] == before


def test_an_old_output_stubbed_at_a_run_start_stays_stubbed() -> None:
    """The run start stubs an abandoned 30k-token output ("not read") and, the history not
    fitting before, an old output the model had read ("old"). On the next turn the pruner
    reads the abandoned output stubbed, the history fits, and the old output came back whole
    in the middle of the history (a view the model never had; the prompt cache broke there)."""
    from ctxbudget import ContextWindowBudget

    old = "".join(f"O line {i}: some log output value={i * 7919 % 1000}\n" for i in range(190))
    big = "".join(f"A line {i}: some log output value={i * 7919 % 1000}\n" for i in range(2_300))

    def call(cid: str) -> dict[str, Any]:
        fn = {"name": "cat", "arguments": "{}"}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": cid, "type": "function", "function": fn}],
        }

    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Audit."},
        call("o"),
        {"role": "tool", "tool_call_id": "o", "content": old},
        {"role": "assistant", "content": "O says the service is up."},
        {"role": "user", "content": "Now read the big log."},
        call("a"),
        {"role": "tool", "tool_call_id": "a", "content": big},
    ]
    budget = ContextWindowBudget(30_000, reserved_output=1_000, margin=0)
    guard = ContextGuard(MODEL, budget=budget, calibration=False)

    def send(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"input_tokens": request.input_tokens}}

    first = guard.send(send, history, run_start=True).request.messages
    assert "not read" in first[6]["content"] and first[2]["content"] != old
    for n in range(3):
        history = [*history, {"role": "assistant", "content": f"done {n}"}]
        history.append({"role": "user", "content": f"next {n}"})
        view = guard.send(send, history).request.messages
        assert view[: len(first)] == first
