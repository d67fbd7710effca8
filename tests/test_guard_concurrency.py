"""ContextGuard under cancellation, threads, failing providers and odd usage reports (SPEC
G1, G4, I3): state stays consistent, errors pass through unchanged, and a usage report that
cannot count the request does not become the calibration's anchor."""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
import traceback
from typing import Any

import pytest

from ctxbudget import CalibrationTracker, ContextEvent, ContextGuard, GuardedRequest, PruneConfig

NO_THRESHOLD = PruneConfig(threshold=10**9)


def tool_turn(cid: str, text: str) -> list[dict[str, Any]]:
    call = {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": text},
    ]


def blob(lines: int, tag: str) -> str:
    return "".join(f"{tag} line {i}: log output value={i * 7919 % 1000}\n" for i in range(lines))


def tool_history(tag: str = "t", turns: int = 8) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": f"task {tag}"}]
    for i in range(turns):
        history += tool_turn(f"{tag}{i}", blob(400, f"{tag}{i}"))
    return [*history, {"role": "user", "content": "next"}]


def chat_history(messages: int = 21) -> list[dict[str, Any]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": blob(60, f"m{i}")} for i in range(messages)]


def honest(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


async def ahonest(request: GuardedRequest) -> dict[str, Any]:
    return honest(request)


# -- usage reports that cannot count the request


def test_a_cumulative_usage_does_not_make_the_guard_compact() -> None:
    """A run's cumulative usage (what some agent frameworks keep) grows by the whole request
    each turn: anchored on, it made a 6k-token conversation "168k tokens", compacted, and then
    refused as over a 128k window."""
    summaries: list[str] = []

    def summarize(prompt: str, max_tokens: int) -> str:
        summaries.append(prompt)
        return "Summary."

    guard = ContextGuard("gpt-4o", window=64_000, summarize=summarize)
    total = 0

    def cumulative(request: GuardedRequest) -> dict[str, Any]:
        nonlocal total
        total += request.input_tokens
        return {"usage": {"prompt_tokens": total}}

    history: list[dict[str, Any]] = [{"role": "user", "content": blob(400, "task")}]
    for _ in range(12):
        result = guard.send(cumulative, history)
        raw = result.request.estimate.raw.total
        assert result.request.input_tokens < 2 * raw
        history += [
            {"role": "assistant", "content": "ok " * 50},
            {"role": "user", "content": "more " * 50},
        ]
    assert not summaries and total > 60_000  # what was anchored on would not fit


@pytest.mark.parametrize("scale", [10.0, 0.01])
def test_a_report_far_off_the_estimate_is_logged_and_not_anchored(
    scale: float, caplog: pytest.LogCaptureFixture
) -> None:
    """One report 10x the request (or a hundredth: Anthropic's input_tokens without its cache
    reads) is no count of it: the next estimate stays near the request's size."""
    guard = ContextGuard("gpt-4o", window=128_000, prune=NO_THRESHOLD)
    history = tool_history()
    with caplog.at_level(logging.WARNING, "ctxbudget"):
        first = guard.send(
            lambda r: {"usage": {"prompt_tokens": int(r.input_tokens * scale)}}, history
        )
    assert not first.usage_recorded
    assert any("ignoring a usage report" in r.getMessage() for r in caplog.records)
    history = [*history, {"role": "assistant", "content": "done"}]
    second = guard.send(honest, history)
    raw = second.request.estimate.raw.total
    assert 0.9 * raw <= second.request.input_tokens <= 1.2 * raw
    assert second.usage_recorded


def test_usage_missing_or_zero_records_nothing() -> None:
    history = tool_history()
    responses: list[object] = [{}, {"usage": None}, {"usage": {"prompt_tokens": 0}}, object()]
    for response in responses:
        guard = ContextGuard("gpt-4o", window=128_000)
        assert not guard.send(lambda r: response, history).usage_recorded  # noqa: B023
        assert guard.tracker is not None and guard.tracker.state().observations == 0


# -- errors and cancellation


class RateLimitError(Exception):
    status_code = 429


def test_a_rate_limit_propagates_as_the_same_object_and_nothing_is_recorded() -> None:
    guard = ContextGuard("gpt-4o", window=20_000, prune=NO_THRESHOLD)
    error = RateLimitError("Rate limit reached for requests per min")

    def limited(request: GuardedRequest) -> Any:
        raise error

    with pytest.raises(RateLimitError) as caught:
        guard.send(limited, tool_history())
    assert caught.value is error
    assert traceback.extract_tb(caught.value.__traceback__)[-1].name == "limited"
    assert guard.tracker is not None and guard.tracker.state().observations == 0
    assert not guard._sticky._by_id  # the stubs of the refused request are not remembered


def test_cancelled_during_the_summarizer_then_the_next_call_compacts() -> None:
    async def run() -> None:
        history = chat_history()
        before = copy.deepcopy(history)
        started = asyncio.Event()

        async def hang(prompt: str, max_tokens: int) -> str:
            started.set()
            await asyncio.sleep(60)
            return "never"

        guard = ContextGuard("gpt-4o", window=20_000, summarize=hang, prune=NO_THRESHOLD)
        task = asyncio.create_task(guard.asend(ahonest, history))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert history == before
        assert guard.tracker is not None and guard.tracker.state().observations == 0

        async def summary(prompt: str, max_tokens: int) -> str:
            return "The summary."

        guard.summarize = summary
        result = await guard.asend(ahonest, history)
        assert [e.action for e in result.events] == ["compact"] and result.usage_recorded

    asyncio.run(run())


def test_a_timeout_during_the_overflow_retry_leaves_no_stub_behind() -> None:
    async def run() -> None:
        history = tool_history()
        guard = ContextGuard("gpt-4o", window=60_000, prune=NO_THRESHOLD)
        sent: list[GuardedRequest] = []

        async def overflow_then_hang(request: GuardedRequest) -> Any:
            sent.append(request)
            if len(sent) == 1:
                raise RuntimeError(
                    "This model's maximum context length is 60000 tokens. However, your"
                    f" messages resulted in {request.input_tokens + 20_000} tokens."
                )
            await asyncio.sleep(60)

        with pytest.raises(asyncio.TimeoutError):  # wait_for: asyncio.timeout is 3.11+
            await asyncio.wait_for(guard.asend(overflow_then_hang, history), 5)
        assert len(sent) == 2 and not guard._sticky._by_id
        result = await guard.asend(ahonest, history)
        assert result.usage_recorded and result.overflow is None

    asyncio.run(run())


def test_keyboard_interrupt_in_a_sync_send_leaves_the_guard_usable() -> None:
    guard = ContextGuard("gpt-4o", window=30_000)
    history = tool_history()

    def interrupted(request: GuardedRequest) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        guard.send(interrupted, history)
    assert guard.send(honest, history).usage_recorded


# -- observability


def test_a_failing_or_async_event_callback_does_not_break_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fails(event: ContextEvent) -> None:
        raise ValueError("callback bug")

    async def not_awaited(event: ContextEvent) -> None:  # pragma: no cover - never run
        raise AssertionError

    for callback in (fails, not_awaited):
        guard = ContextGuard("gpt-4o", window=30_000, on_event=callback)
        with caplog.at_level(logging.WARNING, "ctxbudget"):
            result = guard.send(honest, tool_history())
        assert [e.action for e in result.events] == ["prune"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("on_event callback failed" in m for m in messages)
    assert any("on_event returned a coroutine" in m for m in messages)


# -- threads


def test_threads_with_their_own_conversations_on_one_guard() -> None:
    """Documented as one guard per conversation; sharing one is slower (nothing learned
    carries over) but never mixes conversations, loses an update or raises."""
    guard = ContextGuard("gpt-4o", window=30_000)
    errors: list[BaseException] = []
    turns = 10

    def loop(tag: str) -> None:
        history = tool_history(tag, 2)
        for t in range(turns):
            history += tool_turn(f"{tag}x{t}", blob(300, f"{tag}x{t}"))

            def send(request: GuardedRequest) -> dict[str, Any]:
                texts = [str(m.get("content")) for m in request.messages]
                assert all(f"task {tag}" != x for x in texts[1:]) and texts[0] == f"task {tag}"
                return honest(request)

            try:
                guard.send(send, history)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=loop, args=(tag,)) for tag in "ABCD"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert guard.tracker is not None and guard.tracker.state().observations == 4 * turns


def test_an_unreadable_usage_is_logged_briefly(caplog: pytest.LogCaptureFixture) -> None:
    """A ``usage=`` that returns the response's text (a str) loses no response, and the
    warning does not carry the whole text (it held all 100k characters)."""
    guard = ContextGuard("gpt-4o", window=128_000, usage=lambda response: response["text"])
    text = "secret answer " * 10_000
    with caplog.at_level(logging.WARNING, "ctxbudget"):
        result = guard.send(lambda r: {"text": text}, tool_history())
    assert result.response["text"] == text and not result.usage_recorded
    logged = "".join(r.getMessage() + str(r.exc_text) for r in caplog.records)
    assert "could not read the usage report" in logged and len(logged) < 5_000


def test_guards_sharing_a_tracker_keep_their_own_anchors() -> None:
    """A shared CalibrationTracker (as the guard's docs offer) anchored every guard on one
    key: each report replaced the other guard's, and no estimate was ever anchored."""
    tracker = CalibrationTracker("gpt-4o")
    guards = {tag: ContextGuard("gpt-4o", window=200_000, calibration=tracker) for tag in "AB"}
    histories = {tag: [{"role": "user", "content": blob(200, tag)}] for tag in "AB"}
    for turn in range(3):
        for tag in "AB":
            result = guards[tag].send(honest, histories[tag])
            assert result.request.estimate.anchored == (turn > 0)
            histories[tag] += [
                {"role": "assistant", "content": blob(50, f"{tag}{turn}")},
                {"role": "user", "content": "go on"},
            ]
