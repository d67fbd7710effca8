"""Review round 3 of the guard's request kwargs and of compaction's summary input.

- ``GuardedRequest.kwargs()`` gave Anthropic no ``max_tokens`` when the caller set none: the
  anthropic SDK refuses the call (``TypeError: Missing required arguments``), nothing sent.
- ``kwargs()`` passed an empty tool list on: Chat Completions refuses ``tools: []`` (400
  ``empty_array``; Azure, DeepSeek and vLLM alike).
- A summary that replaced the user's latest request copied its text, not its attachments:
  the screenshot or PDF the request was about was gone from the request sent after
  compaction (and from the compacted history).

The SDK tests talk to a loopback HTTP server that records each request body, as
tests/test_sdk_end_to_end.py does.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import itertools
import json
import struct
import zlib
from contextlib import closing
from typing import Any

import anthropic
import openai
import pytest

from ctxbudget import ContextGuard, GuardedRequest
from ctxbudget.compact import compact
from ctxbudget.errors import ContextBudgetError
from ctxbudget.messages import MessageFormatError, normalize_messages
from ctxbudget.summary_prompt import summary_level
from ctxbudget.turns import first_text, scan
from tests.conftest import LoopbackServer
from tests.test_sdk_end_to_end import (
    anthropic_reply,
    chat_completion,
    check_anthropic_body,
    check_chat_body,
)


def png(width: int, height: int) -> str:
    """A valid grey PNG, base64."""
    rows = b"".join(b"\0" + bytes(width) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + body).decode()


PNG = png(300, 200)
SUMMARY = "[ctxbudget summary v1 level="


def summarize(prompt: str, max_tokens: int) -> str:
    return "## Goal\nFind what is wrong in the screenshot.\n## Progress\nThe logs were read."


@pytest.fixture
def server(fresh_loopback: LoopbackServer) -> LoopbackServer:
    return fresh_loopback


# -- Anthropic's required max_tokens


def anthropic_client(server: LoopbackServer) -> anthropic.Anthropic:
    """A client with the SDK's default timeout: the SDK then refuses a non-streaming call
    whose ``max_tokens`` may take over 10 minutes (so a fill-in that is too large fails)."""
    return anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", None),
        ("claude-opus-4-0", None),  # the SDK allows it 8,192 tokens without streaming
        ("claude-3-haiku-20240307", None),  # a 4,096-token maximum output
        ("claude-sonnet-4-5", 12_000),  # a small window: the reserve is 3,000
    ],
)
def test_anthropic_kwargs_give_the_required_max_tokens(
    server: LoopbackServer, model: str, window: int | None
) -> None:
    server.reply(200, anthropic_reply(100))
    guard = ContextGuard(model, window=window, calibration=False)
    history = [{"role": "user", "content": "Summarize: " + "word " * 8_000}]
    with closing(anthropic_client(server)) as client:
        result = guard.send(
            lambda r: client.messages.create(model=model, **r.kwargs()), history, system="s"
        )
    body = server.bodies[-1]
    check_anthropic_body(body)
    cap = body["max_tokens"]
    assert cap == result.request.default_max_tokens and result.request.max_tokens is None
    # the output the window check reserved: input + output fit the window
    assert result.request.input_tokens + cap <= guard.budget.window
    assert cap <= guard.budget.reserve() and cap <= (guard.budget.max_output or cap)


def test_anthropic_overflow_without_max_tokens_is_retried_with_less(
    server: LoopbackServer,
) -> None:
    """The fill-in is what the provider counts as the output: its overflow lowers it."""
    server.reply(200, anthropic_reply(195_000))
    guard = ContextGuard("claude-sonnet-4-5", calibration=False)
    with closing(anthropic_client(server)) as client:
        first = guard.send(
            lambda r: client.messages.create(model="claude-sonnet-4-5", **r.kwargs()),
            [{"role": "user", "content": "hi"}],
        )
        asked = server.bodies[-1]["max_tokens"]
        assert asked == first.request.default_max_tokens
        server.queue(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "input length and `max_tokens` exceed context limit: "
                    f"195000 + {asked} > 200000, decrease input length or `max_tokens` and "
                    "try again",
                },
            },
        )
        result = guard.send(
            lambda r: client.messages.create(model="claude-sonnet-4-5", **r.kwargs()),
            [{"role": "user", "content": "word " * 130_000}],
        )
    refused, retry = server.bodies[-2:]
    assert refused["max_tokens"] == asked
    assert result.overflow is not None
    assert retry["max_tokens"] == result.request.max_tokens
    assert 0 < retry["max_tokens"] <= 200_000 - 195_000


# -- an empty tool list


def test_chat_kwargs_leave_out_an_empty_tool_list(server: LoopbackServer) -> None:
    server.reply(200, chat_completion(100))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
    with closing(client):
        ContextGuard("gpt-4o").send(
            lambda r: client.chat.completions.create(model="gpt-4o", **r.kwargs()),
            [{"role": "user", "content": "hi"}],
            tools=[],
        )
    body = server.bodies[-1]
    check_chat_body(body)
    assert "tools" not in body


@pytest.mark.parametrize(
    ("model", "history"),
    [
        ("gpt-4o", [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]),
        ("claude-sonnet-4-5", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
        ("gemini-2.5-flash", [{"role": "user", "parts": [{"text": "hi"}]}]),
    ],
    ids=["responses", "anthropic", "gemini"],
)
def test_kwargs_leave_out_an_empty_tool_list_in_every_format(
    model: str, history: list[dict[str, Any]]
) -> None:
    result = ContextGuard(model).send(lambda r: r, history, tools=[], max_tokens=100)
    kwargs = result.request.kwargs()
    assert "tools" not in kwargs and "tools" not in kwargs.get("config", {})


# -- attachments of the latest request through compaction

#: The screenshot of the user's request, as each format sends it.
IMAGES: dict[str, dict[str, Any]] = {
    "openai_chat": {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
    },
    "openai_responses": {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
    "anthropic": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    },
    "gemini": {"inline_data": {"mime_type": "image/png", "data": PNG}},
}
ASK = "What is wrong here? Do not touch vendor/."
PDF = {"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}}
#: The user's request with its screenshot (and, for Anthropic, a PDF), in each format.
REQUESTS: dict[str, dict[str, Any]] = {
    "openai_chat": {
        "role": "user",
        "content": [{"type": "text", "text": ASK}, IMAGES["openai_chat"]],
    },
    "openai_responses": {
        "role": "user",
        "content": [{"type": "input_text", "text": ASK}, IMAGES["openai_responses"]],
    },
    "anthropic": {
        "role": "user",
        "content": [IMAGES["anthropic"], PDF, {"type": "text", "text": ASK}],
    },
    "gemini": {"role": "user", "parts": [{"text": ASK}, IMAGES["gemini"]]},
}


def tool_step(fmt: str, i: int) -> list[dict[str, Any]]:
    """One tool call and its (large) result, in ``fmt``."""
    output = f"log line {i}\n" * 300
    if fmt == "openai_chat":
        call = {"id": f"c{i}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": output},
        ]
    if fmt == "openai_responses":
        return [
            {"type": "function_call", "call_id": f"c{i}", "name": "sh", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": output},
        ]
    if fmt == "anthropic":
        use = {"type": "tool_use", "id": f"c{i}", "name": "sh", "input": {}}
        result = {"type": "tool_result", "tool_use_id": f"c{i}", "content": output}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    call = {"function_call": {"name": "sh", "args": {"i": i}}}
    response = {"function_response": {"name": "sh", "response": {"result": output}}}
    return [{"role": "model", "parts": [call]}, {"role": "user", "parts": [response]}]


def agent_loop(fmt: str, steps: int, start: int = 0) -> list[dict[str, Any]]:
    """The request with its screenshot, then ``steps`` tool steps (one long turn)."""
    history = [REQUESTS[fmt]]
    for i in range(start, start + steps):
        history += tool_step(fmt, i)
    return history


def summaries(fmt: str, messages: list[Any]) -> list[Any]:
    return [m for m, info in zip(messages, scan(messages, fmt), strict=True) if info.summary]


@pytest.mark.parametrize("fmt", sorted(REQUESTS))
def test_summary_carries_the_attachments_of_the_request_it_replaces(fmt: str) -> None:
    history = agent_loop(fmt, 30)
    before = copy.deepcopy(history)
    result = compact(history, summarize, window=16_000, format=fmt, keep_tokens=500)
    assert history == before
    (summary,) = summaries(fmt, result.messages)
    assert summary is result.messages[0]
    # the request's text verbatim, and its attachments as they were sent
    assert "Do not touch vendor/." in first_text(fmt, summary)
    request_parts = normalize_messages([REQUESTS[fmt]], fmt)[0].parts
    attachments = [p for p in request_parts if p.kind != "text"]
    carried = [p for p in normalize_messages([summary], fmt)[0].parts if p.kind != "text"]
    assert carried == attachments
    assert IMAGES[fmt] in (summary.get("content") or summary.get("parts"))


@pytest.mark.parametrize("fmt", sorted(REQUESTS))
def test_condensed_summary_carries_them_forward(fmt: str) -> None:
    history = agent_loop(fmt, 30)
    first = compact(history, summarize, window=16_000, format=fmt, keep_tokens=500)
    grown = first.messages + [m for i in range(30, 60) for m in tool_step(fmt, i)]
    second = compact(grown, summarize, window=16_000, format=fmt, keep_tokens=500, max_summaries=1)
    (summary,) = summaries(fmt, second.messages)
    assert summary_level(first_text(fmt, summary)) == 2
    assert "Do not touch vendor/." in first_text(fmt, summary)
    assert IMAGES[fmt] in (summary.get("content") or summary.get("parts"))


def test_an_attachment_without_text_is_carried_too() -> None:
    request = {"role": "user", "content": [IMAGES["anthropic"]]}
    history = [request, *agent_loop("anthropic", 30)[1:]]
    result = compact(history, summarize, window=16_000, keep_tokens=500)
    assert IMAGES["anthropic"] in result.messages[0]["content"]


def test_a_kept_request_leaves_older_attachments_to_the_summary() -> None:
    """Only the latest request's attachments are carried: a newer request kept verbatim
    makes an older screenshot history."""
    history = [*agent_loop("anthropic", 20), {"role": "user", "content": "Now the tests."}]
    result = compact(history, summarize, window=16_000, keep_tokens=500)
    assert result.messages[-1] is history[-1]
    text = json.dumps(result.messages)
    assert PNG not in text and "https://x.test/a.pdf" not in text


def test_guard_sends_the_screenshot_after_compaction_anthropic_sdk(
    server: LoopbackServer,
) -> None:
    server.reply(200, anthropic_reply(1_000))
    request = {"role": "user", "content": [IMAGES["anthropic"], {"type": "text", "text": ASK}]}
    history = [request, *agent_loop("anthropic", 40)[1:]]
    before = copy.deepcopy(history)
    guard = ContextGuard("claude-sonnet-4-5", window=12_000, summarize=summarize)

    def send(request: GuardedRequest) -> Any:
        return client.messages.create(model="claude-sonnet-4-5", **request.kwargs())

    with closing(anthropic_client(server)) as client:
        result = guard.send(send, history, max_tokens=1_000)
        assert "compact" in [event.action for event in result.events]
        # the next turn re-uses the summary: the screenshot is still there
        history += tool_step("anthropic", 40)
        again = guard.send(send, history, max_tokens=1_000)
    assert "compact" not in [event.action for event in again.events]
    assert history[: len(before)] == before
    for body in server.bodies:
        check_anthropic_body(body)
        first = body["messages"][0]["content"]
        assert first[0]["text"].startswith(SUMMARY)
        assert first[1:] == [IMAGES["anthropic"]]


def test_guard_sends_the_screenshot_after_compaction_openai_sdk(
    server: LoopbackServer,
) -> None:
    server.reply(200, chat_completion(1_000))
    history = [{"role": "system", "content": "You debug."}, *agent_loop("openai_chat", 120)]
    guard = ContextGuard("gpt-4o", window=12_000, summarize=summarize)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
    with closing(client):
        result = guard.send(
            lambda r: client.chat.completions.create(model="gpt-4o", **r.kwargs()),
            history,
            max_tokens=1_000,
        )
    assert "compact" in [event.action for event in result.events]
    body = server.bodies[-1]
    check_chat_body(body)
    summary = body["messages"][1]
    assert summary["content"][0]["text"].startswith(SUMMARY)
    assert summary["content"][1] == IMAGES["openai_chat"]


def test_async_anthropic_sdk_gets_max_tokens_and_the_screenshot(server: LoopbackServer) -> None:
    """The async path: AsyncAnthropic, an async summarizer, no max_tokens given."""
    server.reply(200, anthropic_reply(1_000))
    request = {"role": "user", "content": [IMAGES["anthropic"], {"type": "text", "text": ASK}]}
    history = [request, *agent_loop("anthropic", 40)[1:]]
    before = copy.deepcopy(history)

    async def summarize_async(prompt: str, max_tokens: int) -> str:
        await asyncio.sleep(0)
        return summarize(prompt, max_tokens)

    async def run() -> Any:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test", max_retries=0)
        guard = ContextGuard("claude-sonnet-4-5", window=12_000, summarize=summarize_async)

        async def send(r: GuardedRequest) -> Any:
            return await client.messages.create(model="claude-sonnet-4-5", **r.kwargs())

        try:
            return await guard.asend(send, history)
        finally:
            await client.close()

    result = asyncio.run(run())
    assert "compact" in [event.action for event in result.events]
    assert history == before
    body = server.bodies[-1]
    check_anthropic_body(body)
    assert result.request.input_tokens + body["max_tokens"] <= 12_000
    assert body["messages"][0]["content"][1:] == [IMAGES["anthropic"]]


# -- events


def test_one_calls_events_chain_in_one_unit() -> None:
    """A calibrated guard: the Pruner's event counted uncalibrated tokens and the guard's
    largest-first stub event calibrated ones, so the second did not start where the first
    ended (120,605 -> 39,455, then 59,182 -> 5,310)."""
    guard = ContextGuard("gpt-4o", window=32_000)

    def send(request: GuardedRequest) -> Any:  # the provider counts 1.5x the estimate
        return {"usage": {"prompt_tokens": request.estimate.raw.total * 3 // 2}}

    small = [{"role": "user", "content": "word " * 1_000}]
    guard.send(send, small)
    guard.send(send, small)
    call = {"id": "big", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    history = [
        *agent_loop("openai_chat", 30),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "big", "content": "x y z\n" * 9_000},
    ]
    result = guard.send(send, history)
    events = result.events
    assert len(events) >= 2 and result.request.estimate.total > result.request.estimate.raw.total
    for earlier, later in itertools.pairwise(events):
        assert later.tokens_before == earlier.tokens_after
    assert events[-1].tokens_after == result.request.estimate.raw.total


def _langchain_history() -> list[Any]:
    lc = pytest.importorskip("langchain_core.messages")
    msgs: list[Any] = [lc.HumanMessage("Check the logs.")]
    for t in range(4):
        msgs += [
            lc.AIMessage("", tool_calls=[{"id": f"c{t}", "name": "bash", "args": {}}]),
            lc.ToolMessage(f"out {t}\n" * 300, tool_call_id=f"c{t}"),
        ]
    return msgs


def test_pruning_and_the_guard_refuse_langchain_messages_as_compaction_does() -> None:
    """They read wire formats; LangChain messages said so, not pruned as nothing."""
    from ctxbudget import prune

    history = _langchain_history()
    with pytest.raises(MessageFormatError, match="from_langchain"):
        prune(history, window=16_000, model="gpt-4o")
    with pytest.raises(MessageFormatError, match="from_langchain"):
        ContextGuard("gpt-4o").send(lambda r: {}, history)
    with pytest.raises(MessageFormatError, match="from_langchain"):
        compact(history, lambda prompt, cap: "summary", window=16_000, model="gpt-4o")


@pytest.mark.parametrize("window", [1, 2, 8])
def test_a_window_too_small_for_any_request_says_so(window: int) -> None:
    guard = ContextGuard("gpt-4o", window=window)
    with pytest.raises(ContextBudgetError):
        guard.send(lambda r: {}, [{"role": "user", "content": "hi"}])


def test_a_dict_of_a_class_from_a_langchain_named_module_is_read_as_a_dict() -> None:
    from ctxbudget import prune

    message_class = type("Message", (dict,), {"__module__": "langchain_myapp.messages"})
    history = [message_class(role="user", content="hi")]
    assert prune(history, window=16_000, model="gpt-4o").fits
    assert ContextGuard("gpt-4o").send(lambda r: {"usage": {}}, history).request.messages
