"""ContextGuard end to end: the real openai and anthropic SDKs against a loopback server.

Every test checks what the provider received (the recorded request bodies), and that the
caller's history is exactly what it was.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from ctxbudget import (
    ContextBudgetError,
    ContextGuard,
    ContextOverflowError,
    ContextWindowBudget,
    GuardedRequest,
    PairingError,
    PruneConfig,
    estimate_request,
)
from ctxbudget.stubs import STUB_PREFIX
from tests.conftest import LoopbackServer
from tests.test_overflow_sdk import OPENAI_SPLIT

MODEL = "gpt-4o"
#: Window of the tests: small enough that a few tool outputs overflow it.
WINDOW = 40_000
#: The budget of the tests: no margin, a fixed 1,000-token output reserve.
BUDGET = ContextWindowBudget(WINDOW, reserved_output=1_000, margin=0, model=MODEL)
AVAILABLE = WINDOW - 1_000
#: Old tool output is pruned only when the request does not fit.
NO_THRESHOLD = PruneConfig(threshold=10**9)


@pytest.fixture
def server(loopback: LoopbackServer) -> Iterator[LoopbackServer]:
    loopback.reply(200, completion(1_000))
    loopback.bodies.clear()
    yield loopback
    loopback.queued.clear()


@pytest.fixture
def client(server: LoopbackServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10) as c:
        yield c


def completion(prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
        },
    }


def overflow(limit: int, requested: int) -> dict[str, Any]:
    return {
        "error": {
            "message": f"This model's maximum context length is {limit} tokens. However, your"
            f" messages resulted in {requested} tokens. Please reduce the length of the"
            " messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def output(i: int, lines: int) -> str:
    return "\n".join(
        f"src/module_{i}/file_{j}.py:{j}: def handler_{j}(request):" for j in range(lines)
    )


def agent_history(outputs: list[int], first: int = 0) -> list[dict[str, Any]]:
    """A Chat Completions agent run: one tool call and its output per entry of ``outputs``
    (its number of lines, ~15 tokens each); call ids count from ``first``."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find every request handler and list them."},
    ]
    for i, lines in enumerate(outputs, start=first):
        call = {"id": f"call_{i}", "type": "function"}
        call["function"] = {"name": "grep", "arguments": f'{{"pattern": "def handler", "n": {i}}}'}
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"call_{i}", "content": output(i, lines)})
    return history


def chat_send(client: openai.OpenAI) -> Any:
    def send(request: GuardedRequest) -> Any:
        return client.chat.completions.create(model=MODEL, **request.kwargs())

    return send


def sent_messages(server: LoopbackServer, k: int = -1) -> list[dict[str, Any]]:
    body = server.bodies[k]
    assert isinstance(body, dict)
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def stubbed(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["tool_call_id"]
        for m in messages
        if m.get("role") == "tool" and str(m["content"]).startswith(STUB_PREFIX)
    ]


def test_a_request_that_fits_is_sent_as_it_is(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([20, 20])
    before = copy.deepcopy(history)
    guard = ContextGuard(MODEL, budget=BUDGET)

    result = guard.send(chat_send(client), history, max_tokens=500)

    assert sent_messages(server) == before
    assert all(a is b for a, b in zip(result.request.messages, history, strict=True))
    assert server.bodies[-1]["max_tokens"] == 500
    assert result.events == () and result.overflow is None
    assert result.usage_recorded and guard.tracker is not None
    assert guard.tracker.state().last_reported == 1_000
    assert history == before


def test_usage_calibrates_the_next_estimate(server: LoopbackServer, client: openai.OpenAI) -> None:
    history = agent_history([20])
    guard = ContextGuard(MODEL, budget=BUDGET)
    guard.send(chat_send(client), history)
    history += agent_history([30], first=1)[2:]

    result = guard.send(chat_send(client), history)

    assert result.request.estimate.anchored
    assert result.request.estimate.anchor_tokens == 1_000


def test_old_tool_output_is_pruned_before_sending(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([250] * 16)
    before = copy.deepcopy(history)
    assert estimate_request(history, model=MODEL).total > AVAILABLE
    guard = ContextGuard(MODEL, budget=BUDGET)

    result = guard.send(chat_send(client), history)

    sent = sent_messages(server)
    assert len(server.bodies) == 1
    assert estimate_request(sent, model=MODEL).total <= AVAILABLE
    assert "call_0" in stubbed(sent) and "call_15" not in stubbed(sent)
    assert sent[-1] == before[-1]  # the fresh output is verbatim
    assert [e.action for e in result.events] == ["prune"]
    assert history == before


def test_a_request_that_cannot_fit_is_never_sent(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = [{"role": "user", "content": "word " * 60_000}]
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(ContextBudgetError) as err:
        guard.send(chat_send(client), history)

    assert server.bodies == []
    assert err.value.context_window == WINDOW
    assert err.value.requested_tokens is not None and err.value.requested_tokens > WINDOW


def test_a_huge_fresh_result_is_stubbed_with_its_call_kept(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([5, 3_500])
    guard = ContextGuard(MODEL, budget=BUDGET)

    guard.send(chat_send(client), history)

    sent = sent_messages(server)
    assert stubbed(sent) == ["call_1"]
    assert "grep returned" in sent[-1]["content"]
    assert [m.get("tool_call_id") for m in sent] == [m.get("tool_call_id") for m in history]
    assert estimate_request(sent, model=MODEL).total <= AVAILABLE


def test_provider_overflow_with_a_count_is_recovered_once(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([200] * 10)
    estimate = estimate_request(history, model=MODEL).total
    assert estimate <= AVAILABLE
    server.queue(400, overflow(WINDOW, WINDOW + 9_000))
    guard = ContextGuard(MODEL, budget=BUDGET, prune=NO_THRESHOLD)

    result = guard.send(chat_send(client), history)

    assert len(server.bodies) == 2
    assert sent_messages(server, 0) == history
    retried = sent_messages(server, 1)
    assert stubbed(retried)
    assert result.request.attempt == 2 and result.request.reason == "overflow"
    assert result.overflow is not None and result.overflow.requested_tokens == WINDOW + 9_000
    # The stated count calibrated the estimate: the retry is smaller by at least the excess.
    assert estimate_request(retried, model=MODEL).total <= estimate * AVAILABLE / (WINDOW + 9_000)


def test_provider_overflow_without_a_count_asks_for_a_smaller_request(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([200] * 10)
    estimate = estimate_request(history, model=MODEL).total
    unstated = {"error": {"message": "Input is too long for requested model.", "code": 400}}
    server.queue(400, unstated)
    guard = ContextGuard(MODEL, budget=BUDGET, prune=NO_THRESHOLD)

    result = guard.send(chat_send(client), history)

    assert len(server.bodies) == 2 and result.overflow is not None
    assert estimate_request(sent_messages(server), model=MODEL).total <= 0.9 * estimate


def test_a_second_overflow_raises_with_the_provider_error_as_cause(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    server.reply(400, overflow(WINDOW, WINDOW + 9_000))
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(ContextOverflowError) as err:
        guard.send(chat_send(client), agent_history([200] * 10))

    assert len(server.bodies) == 2
    assert isinstance(err.value.__cause__, openai.BadRequestError)
    assert err.value.requested_tokens == WINDOW + 9_000


def test_nothing_to_remove_raises_without_a_second_request(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    server.reply(400, overflow(WINDOW, WINDOW + 500))
    history = [{"role": "user", "content": "word " * 30_000}]
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(ContextOverflowError) as err:
        guard.send(chat_send(client), history)

    assert len(server.bodies) == 1
    assert "recovery could not make it fit" in str(err.value)
    assert isinstance(err.value.__cause__, openai.BadRequestError)


def test_other_errors_propagate_unchanged_and_are_not_retried(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    server.reply(429, {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(openai.RateLimitError):
        guard.send(chat_send(client), agent_history([20]))

    assert len(server.bodies) == 1


def test_a_low_confidence_overflow_far_from_the_window_is_not_acted_on(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    server.reply(413, "")
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(openai.APIStatusError) as err:
        guard.send(chat_send(client), agent_history([20]))

    assert err.value.status_code == 413 and len(server.bodies) == 1


def test_only_the_output_reserve_overflowed_so_max_tokens_is_lowered(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    server.queue(400, OPENAI_SPLIT)  # 3177 in the messages + 1024 > 4096
    history = agent_history([20])
    guard = ContextGuard(MODEL, budget=BUDGET)

    result = guard.send(chat_send(client), history, max_tokens=1024)

    assert [b["max_tokens"] for b in server.bodies] == [1024, 4096 - 3177]
    assert sent_messages(server) == history
    assert result.request.max_tokens == 919 and result.request.attempt == 2


def long_chat(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You help with travel."}]
    for i in range(turns):
        history.append(
            {"role": "user", "content": f"Question {i}: " + "details of the trip " * 150}
        )
        history.append(
            {"role": "assistant", "content": f"Answer {i}: " + "a plan for the day " * 150}
        )
    return history


class Summarizer:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str, max_tokens: int) -> str:
        self.calls += 1
        return "## Goal\nPlan a trip.\n## Progress\nQuestions answered so far."


def test_compaction_runs_once_and_its_summary_is_reused(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = long_chat(40)
    assert estimate_request(history, model=MODEL).total > AVAILABLE
    summarize = Summarizer()
    guard = ContextGuard(MODEL, budget=BUDGET, summarize=summarize)

    first = guard.send(chat_send(client), history)
    sent = sent_messages(server)
    history += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "And the last day?"},
    ]
    before = copy.deepcopy(history)
    guard.send(chat_send(client), history)
    again = sent_messages(server)

    assert summarize.calls == 1
    assert [e.action for e in first.events] == ["compact"]
    assert "[ctxbudget summary" in sent[1]["content"]
    assert again[: len(sent)] == sent and again[len(sent) :] == history[-2:]
    assert estimate_request(again, model=MODEL).total <= AVAILABLE
    assert history == before


def test_a_history_that_breaks_pairing_is_not_sent(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    history = agent_history([20])
    history.append({"role": "tool", "tool_call_id": "call_unknown", "content": "stray"})
    guard = ContextGuard(MODEL, budget=BUDGET)

    with pytest.raises(PairingError, match="orphaned_result"):
        guard.send(chat_send(client), history)

    assert server.bodies == []


def test_a_result_whose_call_id_is_edited_in_place_is_checked_again(
    server: LoopbackServer, client: openai.OpenAI
) -> None:
    """The guard keeps what it read of each message; a field its pairing reads, assigned in
    place between turns, must be read again, not trusted from the last turn."""
    history = agent_history([20])
    guard = ContextGuard(MODEL, budget=BUDGET)
    guard.send(chat_send(client), history)
    sent = len(server.bodies)
    result = next(m for m in history if m["role"] == "tool")
    result["tool_call_id"] = "call_renamed"
    history.append({"role": "user", "content": "next"})

    with pytest.raises(PairingError, match="orphaned_result 'call_renamed'"):
        guard.send(chat_send(client), history)

    assert len(server.bodies) == sent


def test_invalidate_after_a_nested_edit() -> None:
    def send(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"prompt_tokens": request.estimate.raw.total}}

    history = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    guard = ContextGuard(MODEL, budget=BUDGET)
    guard.send(send, history)
    history[0]["content"].append({"type": "text", "text": "long " * 1000})  # in place
    stale = guard.send(send, history).request.estimate.raw.total
    guard.invalidate(history[0])
    counted = guard.send(send, history).request.estimate.raw.total
    assert counted == estimate_request(copy.deepcopy(history), model=MODEL).total > stale


def test_a_call_while_another_is_in_flight_keeps_its_stubs_apart() -> None:
    """The lock is released while a request is in flight; a second call on the guard then
    must not replace what the first one stubbed (its sticky stubs)."""

    def history(tag: str, lines: int) -> list[dict[str, Any]]:
        call = {
            "id": f"c_{tag}",
            "type": "function",
            "function": {"name": "cat", "arguments": "{}"},
        }
        return [
            {"role": "user", "content": f"read {tag}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c_{tag}", "content": f"line of {tag}\n" * lines},
        ]

    def usage(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"prompt_tokens": request.estimate.raw.total}}

    def sticky_after(concurrent: bool) -> int:
        guard = ContextGuard(MODEL, window=32_000)
        big, small = history("A", 20_000), history("B", 10)
        in_flight, release = threading.Event(), threading.Event()
        stubbed = []

        def send_big(request: GuardedRequest) -> dict[str, Any]:
            stubbed.append(request.messages[2] is not big[2])
            in_flight.set()
            release.wait(10)
            return usage(request)

        thread = threading.Thread(target=guard.send, args=(send_big, big))
        thread.start()
        assert in_flight.wait(10)
        if concurrent:
            guard.send(usage, small)  # fits: stubs nothing
        release.set()
        thread.join(10)
        assert stubbed == [True]
        return len(guard._sticky._by_id)

    assert sticky_after(concurrent=False) == sticky_after(concurrent=True) == 1


def test_sync_send_refuses_an_async_summarizer() -> None:
    async def summarize(prompt: str, max_tokens: int) -> str:
        return "summary"

    guard = ContextGuard(MODEL, budget=BUDGET, summarize=summarize)
    with pytest.raises(TypeError, match="asend"):
        guard.send(lambda r: None, [{"role": "user", "content": "hi"}])


def test_async_guard_recovers_and_compacts(server: LoopbackServer) -> None:
    calls = []

    async def summarize(prompt: str, max_tokens: int) -> str:
        calls.append(max_tokens)
        return "## Goal\nPlan a trip."

    async def run() -> Any:
        async with openai.AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10
        ) as client:

            async def send(request: GuardedRequest) -> Any:
                return await client.chat.completions.create(model=MODEL, **request.kwargs())

            guard = ContextGuard(MODEL, budget=BUDGET, summarize=summarize)
            server.queue(400, overflow(WINDOW, round(estimate * 1.2)))
            return await guard.asend(send, history)

    history = long_chat(26)
    estimate = estimate_request(history, model=MODEL).total
    assert AVAILABLE * 0.9 < estimate <= AVAILABLE
    result = asyncio.run(run())

    assert len(server.bodies) == 2 and len(calls) == 1
    assert result.overflow is not None and result.request.attempt == 2
    assert "[ctxbudget summary" in sent_messages(server)[1]["content"]


def test_anthropic_sdk_with_a_system_prompt_and_tool_blocks(server: LoopbackServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.reply(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "cache_read_input_tokens": 2_000, "output_tokens": 1},
        },
    )
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "List the handlers."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"p": "def"}},
                {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {"p": "class"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": output(1, 20)},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": output(2, 3_500)},
            ],
        },
    ]
    before = copy.deepcopy(history)
    guard = ContextGuard("claude-sonnet-4-5", budget=BUDGET)
    client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0, timeout=10)
    try:
        result = guard.send(
            lambda r: client.messages.create(model="claude-loopback-test", **r.kwargs()),
            history,
            system="You are a coding agent.",
            max_tokens=1_000,
        )
    finally:
        client.close()

    body = server.bodies[-1]
    assert body["system"] == "You are a coding agent." and body["max_tokens"] == 1_000
    blocks = body["messages"][2]["content"]
    assert blocks[0] == before[2]["content"][0]
    assert blocks[1]["tool_use_id"] == "toolu_2" and blocks[1]["content"].startswith(STUB_PREFIX)
    assert result.usage_recorded and guard.tracker is not None
    assert guard.tracker.state().last_reported == 2_900
    assert history == before


def test_one_guard_serves_threads(server: LoopbackServer, client: openai.OpenAI) -> None:
    guard = ContextGuard(MODEL, budget=BUDGET)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            for _ in range(5):
                guard.send(chat_send(client), agent_history([20 + i]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == [] and len(server.bodies) == 20


def test_gemini_contents_with_id_less_calls(caplog: pytest.LogCaptureFixture) -> None:
    def part_call(name: str) -> dict[str, Any]:
        return {"function_call": {"name": name, "args": {"path": "."}}}

    def part_result(name: str, lines: int) -> dict[str, Any]:
        return {"function_response": {"name": name, "response": {"result": output(0, lines)}}}

    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Look around."}]},
        {"role": "model", "parts": [part_call("ls"), part_call("grep")]},
        {"role": "user", "parts": [part_result("ls", 5), part_result("grep", 3_500)]},
    ]
    before = copy.deepcopy(history)
    seen: list[GuardedRequest] = []
    events: list[Any] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        seen.append(request)
        return {"usage_metadata": {"prompt_token_count": 2_345}}

    guard = ContextGuard("gemini-2.5-pro", budget=BUDGET, on_event=events.append)
    with caplog.at_level("INFO", logger="ctxbudget"):
        result = guard.send(send, history, system="Be brief.")

    parts = seen[0].messages[2]["parts"]
    assert parts[0] == before[2]["parts"][0]
    stub = parts[1]["function_response"]
    assert stub["name"] == "grep" and stub["response"]["result"].startswith(STUB_PREFIX)
    assert result.usage_recorded and guard.tracker is not None
    assert guard.tracker.state().last_reported == 2_345
    assert [e.action for e in events] == ["prune"] and list(result.events) == events
    assert any(r.name == "ctxbudget.prune" for r in caplog.records)
    assert history == before


def test_recovery_is_logged(
    server: LoopbackServer, client: openai.OpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    server.queue(400, OPENAI_SPLIT)
    guard = ContextGuard(MODEL, budget=BUDGET)

    with caplog.at_level("INFO", logger="ctxbudget.guard"):
        guard.send(chat_send(client), agent_history([20]), max_tokens=1024)

    assert any("max_tokens 1024 -> 919" in r.getMessage() for r in caplog.records)


def test_an_unknown_encoding_is_refused_when_the_guard_is_made() -> None:
    """With a counter of the caller's own, an encoding name of its own was taken, and the
    first send failed deep in the pruner, which sizes tool outputs in the encoding."""
    with pytest.raises(ValueError, match="unknown encoding 'mytok'"):
        ContextGuard(
            "my-local-model", window=8_000, counter=lambda t: len(t.split()), encoding="mytok"
        )
    guard = ContextGuard("my-local-model", window=8_000, counter=lambda t: len(t.split()))
    call = {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "word " * 50},
    ]
    assert guard.send(lambda request: {"usage": {"prompt_tokens": 60}}, history).request
