"""What ContextGuard sends, as the real provider SDKs put it on the wire.

The openai, anthropic and google-genai SDKs talk to a loopback HTTP server that records each
request body; each test checks the body against the provider's API shape after a prune, a
compaction or an overflow recovery: only the API's field names, tool results paired with
their calls, stubs and summaries that are valid content of the provider's format.

API references the shapes are checked against:
- https://platform.openai.com/docs/api-reference/chat/create
- https://platform.openai.com/docs/api-reference/responses/create
- https://docs.anthropic.com/en/api/messages
- https://ai.google.dev/api/generate-content
"""

from __future__ import annotations

from contextlib import closing
from typing import Any

import anthropic
import openai
import pytest

from ctxbudget import ContextGuard, ContextWindowBudget, GuardedRequest
from tests.conftest import LoopbackServer

genai = pytest.importorskip("google.genai")
genai_types = pytest.importorskip("google.genai.types")

STUB = "[ctxbudget: tool output pruned]"
SUMMARY = "[ctxbudget summary v1 level=1]"

#: Top-level request fields each API documents (the subset these tests can produce).
CHAT_FIELDS = {"model", "messages", "tools", "max_tokens", "max_completion_tokens"}
RESPONSES_FIELDS = {"model", "input", "instructions", "tools", "max_output_tokens"}
ANTHROPIC_FIELDS = {"model", "messages", "system", "tools", "max_tokens"}
GEMINI_FIELDS = {"contents", "systemInstruction", "tools", "generationConfig"}


def summarize(prompt: str, max_tokens: int) -> str:
    return "Goal: answer the user. Facts: the parts were read; nothing else is known."


@pytest.fixture
def server(fresh_loopback: LoopbackServer) -> LoopbackServer:
    return fresh_loopback


def no_nulls(value: Any, path: str = "$", allowed: frozenset[str] = frozenset()) -> None:
    """No ``null`` anywhere in ``value``, except at the paths in ``allowed``."""
    if isinstance(value, dict):
        for key, item in value.items():
            no_nulls(item, f"{path}.{key}", allowed)
    elif isinstance(value, list):
        for item in value:
            no_nulls(item, f"{path}[]", allowed)
    else:
        assert value is not None or path in allowed, f"null at {path}"


# OpenAI Chat Completions


def chat_completion(prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "ok"},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
        },
    }


CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def chat_send(server: LoopbackServer, model: str = "gpt-4o") -> Any:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10)

    def send(request: GuardedRequest) -> Any:
        return client.chat.completions.create(model=model, **request.kwargs())

    return closing(client), send


def check_chat_body(body: dict[str, Any]) -> None:
    assert set(body) <= CHAT_FIELDS, set(body) - CHAT_FIELDS
    # an assistant message with tool_calls may have content null; nothing else is null
    no_nulls(body, allowed=frozenset({"$.messages[].content"}))
    open_calls: set[str] = set()
    for message in body["messages"]:
        assert message["role"] in {"system", "developer", "user", "assistant", "tool"}
        if message["content"] is None:
            assert message["role"] == "assistant" and message["tool_calls"]
        if message["role"] == "tool":
            assert isinstance(message["content"], str)
            open_calls.remove(message["tool_call_id"])
            continue
        # the tool messages answering every call come right after the calls' message
        assert not open_calls, (open_calls, message)
        for tool_call in message.get("tool_calls", []):
            open_calls.add(tool_call["id"])
    assert not open_calls


def chat_tool_history(outputs: int, lines: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Why does the build fail?"},
    ]
    for i in range(outputs):
        history += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "make"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"cc -c a{i}.c\n" * lines},
        ]
    history += [
        {"role": "assistant", "content": "a.c does not compile."},
        {"role": "user", "content": "Run the tests."},
    ]
    return history


def test_chat_pruned_request_is_valid(server: LoopbackServer) -> None:
    server.reply(200, chat_completion(40_000))
    guard = ContextGuard("gpt-4o", summarize=summarize)
    client, send = chat_send(server)
    with client:
        result = guard.send(send, chat_tool_history(12, 1_500), tools=CHAT_TOOLS, max_tokens=4_000)
    assert [event.action for event in result.events] == ["prune"]
    body = server.bodies[-1]
    check_chat_body(body)
    assert body["max_tokens"] == 4_000
    assert body["tools"] == CHAT_TOOLS
    stubs = [m for m in body["messages"] if m["role"] == "tool" and m["content"].startswith(STUB)]
    assert len(stubs) == result.events[0].stubbed > 0


def test_chat_compacted_request_is_valid(server: LoopbackServer) -> None:
    server.reply(200, chat_completion(1_000))
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a researcher."}]
    for i in range(60):
        history += [
            {"role": "user", "content": f"Part {i}: " + "data " * 2_500},
            {"role": "assistant", "content": f"Noted part {i}."},
        ]
    history.append({"role": "user", "content": "Which parts mention revenue?"})
    guard = ContextGuard("gpt-4o", summarize=summarize, calibration=False)
    client, send = chat_send(server)
    with client:
        result = guard.send(send, history, max_tokens=4_000)
    assert [event.action for event in result.events] == ["compact"]
    body = server.bodies[-1]
    check_chat_body(body)
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You are a researcher."}
    assert messages[1]["role"] == "user"
    assert messages[1]["content"].startswith(SUMMARY)
    assert messages[-1] == {"role": "user", "content": "Which parts mention revenue?"}


@pytest.mark.parametrize("max_tokens", [16_000, None])
def test_chat_overflow_retry_lowers_max_tokens(
    server: LoopbackServer, max_tokens: int | None
) -> None:
    server.reply(200, chat_completion(50_100))
    server.queue(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 64000 tokens. However, you"
                " requested 66100 tokens (50100 in the messages, 16000 in the completion)."
                " Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )
    history = [{"role": "user", "content": "x " * 50_000}]
    guard = ContextGuard("gpt-4o")
    client, send = chat_send(server)
    with client:
        result = guard.send(send, history, max_tokens=max_tokens)
    assert result.overflow is not None and result.overflow.kind == "combined_overflow"
    first, retry = server.bodies
    for body in (first, retry):
        check_chat_body(body)
    assert first.get("max_tokens") == max_tokens
    assert retry["messages"] == first["messages"]
    assert 0 < retry["max_tokens"] <= 64_000 - 50_100
    assert retry["max_tokens"] == result.request.max_tokens


# OpenAI Responses: request.kwargs() in the Responses API's names.


def responses_reply(input_tokens: int) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-4o",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "total_tokens": input_tokens + 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


BASH_RESPONSES = {
    "type": "function",
    "name": "bash",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
}


def responses_send(server: LoopbackServer) -> Any:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10)

    def send(request: GuardedRequest) -> Any:
        return client.responses.create(model="gpt-4o", **request.kwargs())

    return closing(client), send


def check_responses_body(body: dict[str, Any]) -> None:
    assert set(body) <= RESPONSES_FIELDS, set(body) - RESPONSES_FIELDS
    no_nulls(body)
    open_calls: set[str] = set()
    for item in body["input"]:
        kind = item.get("type", "message")
        assert kind in {"message", "function_call", "function_call_output"}
        if kind == "function_call":
            open_calls.add(item["call_id"])
        elif kind == "function_call_output":
            assert isinstance(item["output"], str)
            open_calls.remove(item["call_id"])
        else:
            # each output right after the calls (strict Responses providers, DeepSeek's,
            # refuse a message between: "No tool output found for tool call")
            assert not open_calls, (open_calls, item)
            assert item["role"] in {"user", "assistant", "system", "developer"}
            content = item["content"]
            if isinstance(content, list):
                assert all(part["type"] in {"input_text", "output_text"} for part in content)
    assert not open_calls


def test_responses_pruned_and_compacted_requests_are_valid(server: LoopbackServer) -> None:
    server.reply(200, responses_reply(1_000))
    guard = ContextGuard("gpt-4o", summarize=summarize, calibration=False)
    items: list[dict[str, Any]] = [{"role": "user", "content": "Summarize the logs."}]
    for i in range(30):
        items += [
            {"type": "function_call", "call_id": f"fc_{i}", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"fc_{i}", "output": "GET 200\n" * 3_000},
        ]
    items += [
        {"type": "message", "role": "assistant", "content": "Mostly health checks."},
        {"role": "user", "content": "Any errors?"},
    ]
    client, send = responses_send(server)
    with client:
        pruned = guard.send(
            send, items, system="Be terse.", tools=[BASH_RESPONSES], max_tokens=4_000
        )
        assert [event.action for event in pruned.events] == ["prune"]
        body = server.bodies[-1]
        check_responses_body(body)
        assert body["instructions"] == "Be terse."
        assert body["max_output_tokens"] == 4_000
        assert body["tools"] == [BASH_RESPONSES]
        assert body["input"][2]["output"].startswith(STUB)

        plain: list[dict[str, Any]] = [{"role": "developer", "content": "Be careful."}]
        for i in range(60):
            plain += [
                {"role": "user", "content": f"Part {i}: " + "data " * 3_000},
                {"type": "message", "role": "assistant", "content": f"Noted {i}."},
            ]
        plain.append({"role": "user", "content": "Which parts mention revenue?"})
        compacted = ContextGuard("gpt-4o", summarize=summarize, calibration=False).send(
            send, plain, system="Be terse.", max_tokens=4_000
        )
    assert [event.action for event in compacted.events] == ["compact"]
    body = server.bodies[-1]
    check_responses_body(body)
    assert body["input"][0] == {"role": "developer", "content": "Be careful."}
    summary = body["input"][1]
    assert summary["role"] == "user"
    text = summary["content"] if isinstance(summary["content"], str) else summary["content"][0]
    assert (text if isinstance(text, str) else text["text"]).startswith(SUMMARY)


# Anthropic Messages


def anthropic_reply(input_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }


ANTHROPIC_TOOLS = [
    {
        "name": "bash",
        "description": "Run a command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]


def anthropic_send(server: LoopbackServer) -> Any:
    client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0, timeout=10)

    def send(request: GuardedRequest) -> Any:
        return client.messages.create(model="claude-sonnet-4-5", **request.kwargs())

    return closing(client), send


def check_anthropic_body(body: dict[str, Any]) -> None:
    assert set(body) <= ANTHROPIC_FIELDS, set(body) - ANTHROPIC_FIELDS
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] >= 1
    no_nulls(body)
    assert body["messages"][0]["role"] == "user"
    pending: set[str] = set()
    for message in body["messages"]:
        assert message["role"] in {"user", "assistant"}
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        results = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
        # each tool_use is answered in the very next (user) message, its results first
        assert results == pending, (pending, results)
        kinds = [b["type"] == "tool_result" for b in blocks]
        assert kinds == sorted(kinds, reverse=True), kinds
        pending = {b["id"] for b in blocks if b["type"] == "tool_use"}
        for block in blocks:
            if block["type"] == "tool_result":
                assert isinstance(block["content"], (str, list))
    assert not pending


def test_anthropic_pruned_request_is_valid(server: LoopbackServer) -> None:
    server.reply(200, anthropic_reply(1_000))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Why does the build fail?"}]
    for i in range(40):
        history += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "checking"},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i}",
                        "content": [{"type": "text", "text": f"cc -c a{i}.c\n" * 2_000}],
                        "is_error": i % 2 == 0,
                    }
                ],
            },
        ]
    history += [
        {"role": "assistant", "content": "a.c does not compile."},
        {"role": "user", "content": "Run the tests."},
    ]
    guard = ContextGuard("claude-sonnet-4-5", summarize=summarize, calibration=False)
    client, send = anthropic_send(server)
    with client:
        result = guard.send(
            send, history, system="You fix bugs.", tools=ANTHROPIC_TOOLS, max_tokens=8_000
        )
    assert [event.action for event in result.events] == ["prune"]
    body = server.bodies[-1]
    check_anthropic_body(body)
    assert body["system"] == "You fix bugs."
    assert body["tools"] == ANTHROPIC_TOOLS
    assert body["max_tokens"] == 8_000
    first_result = body["messages"][2]["content"][0]
    assert first_result["tool_use_id"] == "toolu_0"
    assert first_result["is_error"] is True
    assert first_result["content"].startswith(STUB)


def test_anthropic_compacted_request_is_valid(server: LoopbackServer) -> None:
    server.reply(200, anthropic_reply(1_000))
    history: list[dict[str, Any]] = []
    for i in range(60):
        history += [
            {"role": "user", "content": f"Part {i}: " + "data " * 4_000},
            {"role": "assistant", "content": f"Noted part {i}."},
        ]
    history.append({"role": "user", "content": "Which parts mention revenue?"})
    guard = ContextGuard("claude-sonnet-4-5", summarize=summarize, calibration=False)
    client, send = anthropic_send(server)
    with client:
        result = guard.send(send, history, system="You are a researcher.", max_tokens=8_000)
    assert [event.action for event in result.events] == ["compact"]
    body = server.bodies[-1]
    check_anthropic_body(body)
    assert body["system"] == "You are a researcher."
    assert body["messages"][0]["content"].startswith(SUMMARY)
    assert body["messages"][-1] == {"role": "user", "content": "Which parts mention revenue?"}


def test_anthropic_overflow_retry_lowers_max_tokens(server: LoopbackServer) -> None:
    server.reply(200, anthropic_reply(185_000))
    server.queue(
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 185000 + 20000"
                " > 200000, decrease input length or `max_tokens` and try again",
            },
        },
    )
    guard = ContextGuard("claude-sonnet-4-5")
    client, send = anthropic_send(server)
    with client:
        result = guard.send(
            send, [{"role": "user", "content": "word " * 130_000}], system="s", max_tokens=20_000
        )
    assert result.overflow is not None and result.overflow.kind == "combined_overflow"
    first, retry = server.bodies
    for body in (first, retry):
        check_anthropic_body(body)
    assert first["max_tokens"] == 20_000
    assert 10_000 <= retry["max_tokens"] <= 200_000 - 185_000
    assert retry["messages"] == first["messages"]
    assert retry["system"] == "s"


# Gemini (google-genai): contents=..., config=GenerateContentConfig(system_instruction,
# tools, max_output_tokens) mapped by hand from the GuardedRequest.


def gemini_reply(prompt_tokens: int) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 1,
            "totalTokenCount": prompt_tokens + 1,
        },
    }


def gemini_send(server: LoopbackServer) -> Any:
    client = genai.Client(api_key="test", http_options={"base_url": server.url, "timeout": 10_000})

    def send(request: GuardedRequest) -> Any:
        return client.models.generate_content(model="gemini-2.5-flash", **request.kwargs())

    return closing(client), send


def check_gemini_body(body: dict[str, Any]) -> None:
    assert set(body) <= GEMINI_FIELDS, set(body) - GEMINI_FIELDS
    no_nulls(body)
    pending: list[str] = []
    for content in body["contents"]:
        assert content["role"] in {"user", "model"}
        parts = content["parts"]
        responses = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
        assert responses == pending
        pending = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        for part in parts:
            assert len(set(part) & {"text", "functionCall", "functionResponse"}) == 1
    assert not pending


def gemini_tool_history() -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "The config?"}]}]
    for i in range(20):
        contents += [
            {"role": "model", "parts": [{"function_call": {"name": "read", "args": {"i": i}}}]},
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "name": "read",
                            "response": {"result": f"{{}}{i}\n" * 4_000},
                        }
                    }
                ],
            },
        ]
    contents += [
        {"role": "model", "parts": [{"text": "An empty config."}]},
        {"role": "user", "parts": [{"text": "Now the secrets file?"}]},
    ]
    return contents


GEMINI_TOOLS = [{"function_declarations": [{"name": "read", "parameters_json_schema": {}}]}]


def gemini_guard() -> ContextGuard:
    budget = ContextWindowBudget(128_000, max_output=8_192, model="gemini-2.5-flash")
    return ContextGuard("gemini-2.5-flash", summarize=summarize, calibration=False, budget=budget)


@pytest.mark.parametrize("typed", [False, True], ids=["dicts", "Content"])
def test_gemini_pruned_request_is_valid(server: LoopbackServer, typed: bool) -> None:
    server.reply(200, gemini_reply(1_000))
    history: list[Any] = gemini_tool_history()
    system: Any = {"parts": [{"text": "Be brief."}]}
    if typed:
        history = [genai_types.Content.model_validate(content) for content in history]
        system = genai_types.Content.model_validate(system)
    client, send = gemini_send(server)
    with client:
        result = gemini_guard().send(
            send, history, system=system, tools=GEMINI_TOOLS, max_tokens=2_000
        )
    assert [event.action for event in result.events] == ["prune"]
    assert server.paths[-1].endswith("/models/gemini-2.5-flash:generateContent")
    body = server.bodies[-1]
    check_gemini_body(body)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 2_000}
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "read"
    assert response["response"]["result"].startswith(STUB)


def test_gemini_compacted_request_is_valid(server: LoopbackServer) -> None:
    server.reply(200, gemini_reply(1_000))
    history: list[dict[str, Any]] = []
    for i in range(60):
        history += [
            {"role": "user", "parts": [{"text": f"Part {i}: " + "data " * 3_000}]},
            {"role": "model", "parts": [{"text": f"Noted part {i}."}]},
        ]
    history.append({"role": "user", "parts": [{"text": "Which parts?"}]})
    client, send = gemini_send(server)
    with client:
        result = gemini_guard().send(send, history, system="Be brief.", max_tokens=2_000)
    assert [event.action for event in result.events] == ["compact"]
    body = server.bodies[-1]
    check_gemini_body(body)
    summary = body["contents"][0]
    assert summary["role"] == "user"
    assert summary["parts"][0]["text"].startswith(SUMMARY)
    assert body["contents"][-1] == {"role": "user", "parts": [{"text": "Which parts?"}]}


def test_chat_kwargs_fold_the_system_prompt_and_name_the_cap_per_model(
    server: LoopbackServer,
) -> None:
    """``kwargs()`` gave Chat Completions a ``system`` argument (``TypeError`` in the SDK,
    nothing sent) and ``max_tokens`` to o-series and GPT-5 models, which refuse it
    ("Unsupported parameter: use 'max_completion_tokens'")."""
    server.reply(200, chat_completion(100))
    history = [{"role": "user", "content": "Which files changed?"}]
    for model, cap in (("gpt-4o", "max_tokens"), ("o3", "max_completion_tokens")):
        client, send = chat_send(server, model)
        with client:
            ContextGuard(model).send(send, history, system="Be terse.", max_tokens=500)
        body = server.bodies[-1]
        check_chat_body(body)
        assert body["messages"] == [{"role": "system", "content": "Be terse."}, *history]
        assert body[cap] == 500 and set(body) == {"model", "messages", cap}
