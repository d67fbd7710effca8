"""Newer provider message shapes are read, estimated and converted instead of refused.

Anthropic server-tool results (web fetch, code execution, bash and text-editor code execution,
tool search), MCP connector blocks (``mcp_tool_use``/``mcp_tool_result``) and the other block
types of the anthropic SDK are kept whole: estimated as their JSON text, written back unchanged
to Anthropic, dropped (``strict=False``) or refused as lossy when converted elsewhere, like
``server_tool_use``/``web_search_tool_result``. Chat Completions custom tool calls
(``{"type": "custom", "custom": {"name", "input"}}``) are tool calls of the view: their name
and free-form input are counted, and the ``tool`` message answering them pairs with them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ctxbudget.compact import compact
from ctxbudget.guard import ContextGuard
from ctxbudget.messages import (
    MessageFormatError,
    convert_messages,
    detect_format,
    normalize_messages,
    validate_messages,
)
from ctxbudget.request import estimate_request

_CLAUDE = "claude-sonnet-4-5"
_GPT = "gpt-4o"

#: One example of each newly accepted Anthropic block type, as the SDK's param types spell it.
_BLOCKS: dict[str, dict[str, Any]] = {
    "web_fetch_tool_result": {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "web_fetch_result",
            "url": "https://example.com/",
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "Example page"},
            },
        },
    },
    "code_execution_tool_result": {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_2",
        "content": {
            "type": "code_execution_result",
            "stdout": "42\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    },
    "bash_code_execution_tool_result": {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_3",
        "content": {
            "type": "bash_code_execution_result",
            "stdout": "a.py\nb.py\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    },
    "text_editor_code_execution_tool_result": {
        "type": "text_editor_code_execution_tool_result",
        "tool_use_id": "srvtoolu_4",
        "content": {
            "type": "text_editor_code_execution_view_result",
            "content": "print('hello')\n",
            "file_type": "text",
        },
    },
    "tool_search_tool_result": {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_5",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
        },
    },
    "mcp_tool_use": {
        "type": "mcp_tool_use",
        "id": "mcptoolu_1",
        "name": "search",
        "server_name": "docs",
        "input": {"q": "context windows"},
    },
    "mcp_tool_result": {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_1",
        "is_error": False,
        "content": [{"type": "text", "text": "Three documents found."}],
    },
    "compaction": {"type": "compaction", "content": "Summary of the earlier turns."},
}


def _conversation(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Look it up."},
        {"role": "assistant", "content": [*blocks, {"type": "text", "text": "Done."}]},
        {"role": "user", "content": "Thanks."},
    ]


# --------------------------------------------------------------------------- Anthropic


def test_mcp_tool_use_estimates() -> None:
    """The reported failure: an assistant ``mcp_tool_use`` block."""
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "mcp_tool_use",
                    "id": "m1",
                    "name": "search",
                    "server_name": "s",
                    "input": {"q": "x"},
                }
            ],
        },
    ]
    estimate = estimate_request(messages, model=_CLAUDE)
    assert estimate.format == "anthropic"
    assert estimate.per_message[1] > 0


@pytest.mark.parametrize("kind", sorted(_BLOCKS))
def test_block_is_read_and_kept_whole(kind: str) -> None:
    block = _BLOCKS[kind]
    messages = _conversation(block)
    original = copy.deepcopy(messages)
    assert detect_format(messages) == "anthropic"
    assert validate_messages(messages) == "anthropic"
    (part, _text) = normalize_messages(messages, "anthropic")[1].parts
    assert part.kind == "other"
    assert dict(part.extra) == block
    assert convert_messages(messages, "anthropic").messages == original
    assert messages == original  # never modified


@pytest.mark.parametrize("kind", sorted(_BLOCKS))
def test_block_is_counted_as_its_json(kind: str) -> None:
    """A block kept whole weighs what its JSON text weighs: more content, more tokens."""
    small = estimate_request(_conversation(_BLOCKS[kind]), model=_CLAUDE)
    padded = copy.deepcopy(_BLOCKS[kind]) | {"padding": "lorem ipsum dolor " * 200}
    big = estimate_request(_conversation(padded), model=_CLAUDE)
    plain = estimate_request(_conversation(), model=_CLAUDE)
    assert plain.per_message[1] < small.per_message[1] < big.per_message[1] - 200


@pytest.mark.parametrize("kind", sorted(_BLOCKS))
def test_block_converts_like_other_provider_blocks(kind: str) -> None:
    """Another provider has no form for it: refused in strict mode, dropped otherwise."""
    messages = _conversation(_BLOCKS[kind])
    for target in ("openai_chat", "openai_responses", "gemini"):
        with pytest.raises(MessageFormatError) as info:
            convert_messages(messages, target)
        assert info.value.index == 1
        out = convert_messages(messages, target, strict=False).messages
        assert "Done." in repr(out) and kind not in repr(out)


def test_server_and_mcp_tools_in_one_turn() -> None:
    """A full agent turn: server tool use, MCP use and their results, beside a client tool
    call answered in the next message; only the client tool call pairs."""
    messages = [
        {"role": "user", "content": "Run it."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me run it.", "signature": "sig"},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_2",
                    "name": "code_execution",
                    "input": {"code": "print(6 * 7)"},
                },
                _BLOCKS["code_execution_tool_result"],
                _BLOCKS["mcp_tool_use"],
                _BLOCKS["mcp_tool_result"],
                {"type": "tool_use", "id": "toolu_1", "name": "save", "input": {"n": 42}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [
                        {"type": "text", "text": "saved"},
                        {"type": "tool_reference", "tool_name": "load"},
                    ],
                }
            ],
        },
    ]
    assert validate_messages(messages) == "anthropic"
    kinds = [p.kind for p in normalize_messages(messages)[1].parts]
    assert kinds == ["reasoning", "other", "other", "other", "other", "tool_call"]
    assert estimate_request(messages, model=_CLAUDE).total > 0
    assert convert_messages(messages, "anthropic").messages == messages


def test_sdk_block_objects() -> None:
    """Response blocks of the anthropic SDK, appended to the history as they come."""
    beta = pytest.importorskip("anthropic.types.beta")
    content = [
        beta.BetaMCPToolUseBlock(
            type="mcp_tool_use", id="m1", name="search", server_name="docs", input={"q": "x"}
        ),
        beta.BetaMCPToolResultBlock(
            type="mcp_tool_result",
            tool_use_id="m1",
            is_error=False,
            content=[beta.BetaTextBlock(type="text", text="found")],
        ),
        beta.BetaTextBlock(type="text", text="Found it."),
    ]
    messages = [
        {"role": "user", "content": "Search."},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "Thanks."},
    ]
    assert estimate_request(messages, model=_CLAUDE).per_message[1] > 0
    out = convert_messages(messages, "anthropic", source="anthropic").messages
    assert [b["type"] for b in out[1]["content"]] == ["mcp_tool_use", "mcp_tool_result", "text"]


def _anthropic_agent_history(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Start."}]
    for i in range(turns):
        use = _BLOCKS["mcp_tool_use"] | {"id": f"m{i}"}
        result = _BLOCKS["mcp_tool_result"] | {
            "tool_use_id": f"m{i}",
            "content": [{"type": "text", "text": f"result {i} " * 800}],
        }
        history.append(
            {"role": "assistant", "content": [use, result, {"type": "text", "text": "ok"}]}
        )
        history.append({"role": "user", "content": f"Next {i}."})
    return history


def test_guard_and_compaction_take_mcp_turns() -> None:
    history = _anthropic_agent_history(12)
    guard = ContextGuard(_CLAUDE, window=12_000, summarize=lambda prompt, cap: "Summary.")
    result = guard.send(lambda request: {"usage": {"input_tokens": 1000}}, history)
    assert result.request.input_tokens <= 12_000
    compacted = compact(history, lambda prompt, cap: "Summary.", window=12_000, model=_CLAUDE)
    assert len(compacted.messages) < len(history)


# --------------------------------------------------------------------------- Chat custom calls


def _custom_call(call_id: str, name: str = "apply_patch", text: str = "*** Begin Patch") -> Any:
    return {"id": call_id, "type": "custom", "custom": {"name": name, "input": text}}


def _chat_custom(content: Any, text: str = "*** Begin Patch") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": content, "tool_calls": [_custom_call("c2", text=text)]},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
    ]


def test_custom_tool_call_is_a_tool_call() -> None:
    messages = _chat_custom([])
    assert validate_messages(messages) == "openai_chat"  # the tool message answers c2
    call = normalize_messages(messages)[1].parts[0]
    assert (call.kind, call.call_id, call.name) == ("tool_call", "c2", "apply_patch")
    assert call.raw_arguments == "*** Begin Patch"
    assert call.arguments is None  # free-form text, never parsed as JSON


def test_custom_tool_call_is_counted() -> None:
    """Name and input count as a call's arguments do."""
    small = estimate_request(_chat_custom([], "x"), model=_GPT)
    big = estimate_request(_chat_custom([], "x\n" + "+ added line\n" * 300), model=_GPT)
    assert small.per_message[1] > 0
    assert big.per_message[1] > small.per_message[1] + 300


@pytest.mark.parametrize("content", [None, [], "I'll patch it."])
def test_custom_tool_call_round_trips(content: Any) -> None:
    messages = _chat_custom(content)
    messages[1]["tool_calls"].insert(
        0,
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
    )
    messages.insert(3, {"role": "tool", "tool_call_id": "c1", "content": "a.py"})
    original = copy.deepcopy(messages)
    assert convert_messages(messages, "openai_chat").messages == original
    assert messages == original


def test_custom_tool_call_to_a_json_args_format() -> None:
    """Anthropic and Gemini calls take a JSON object: the free-form input is lossy there."""
    messages = _chat_custom([])
    with pytest.raises(MessageFormatError) as info:
        convert_messages(messages, "anthropic")
    assert (info.value.index, info.value.field) == (1, "content[0].input")
    with pytest.raises(MessageFormatError):
        convert_messages(messages, "gemini")
    out = convert_messages(messages, "anthropic", strict=False).messages
    assert out[1]["content"] == [
        {
            "type": "tool_use",
            "id": "c2",
            "name": "apply_patch",
            "input": {"_raw_arguments": "*** Begin Patch"},
        }
    ]
    assert out[2]["content"][0]["tool_use_id"] == "c2"  # still paired


def test_custom_tool_call_crosses_between_the_openai_formats() -> None:
    """Chat's custom call is Responses' custom_tool_call (its output a custom_tool_call_output):
    it was written as a function_call whose arguments were not JSON."""
    chat = _chat_custom(None)
    items = convert_messages(chat, "openai_responses").messages
    assert items[1:] == [
        {
            "type": "custom_tool_call",
            "call_id": "c2",
            "name": "apply_patch",
            "input": "*** Begin Patch",
        },
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
    ]
    assert convert_messages(items, "openai_chat").messages == chat
    # as the Responses API returns them: item id and status, kept in their own format
    returned = [chat[0], items[1] | {"id": "ctc_1", "status": "completed"}, items[2]]
    assert convert_messages(returned, "openai_responses").messages == returned
    assert convert_messages(returned, "openai_chat").messages == chat


def test_custom_tool_call_errors_name_the_field() -> None:
    messages = _chat_custom([])
    messages[1]["tool_calls"][0]["custom"] = {"name": "apply_patch"}
    with pytest.raises(MessageFormatError) as info:
        normalize_messages(messages)
    assert (info.value.index, info.value.field) == (1, "tool_calls[0].custom.input")


def test_sdk_custom_tool_call_object() -> None:
    """The openai SDK's response message, appended to the history as it comes."""
    chat = pytest.importorskip("openai.types.chat")
    message = chat.ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            chat.ChatCompletionMessageCustomToolCall(
                id="c2", type="custom", custom={"name": "apply_patch", "input": "x"}
            )
        ],
    )
    messages = [
        {"role": "user", "content": "Fix the bug."},
        message,
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
    ]
    assert estimate_request(messages, model=_GPT).per_message[1] > 0
    assert convert_messages(messages, "openai_chat").messages[1]["tool_calls"] == [
        {"id": "c2", "type": "custom", "custom": {"name": "apply_patch", "input": "x"}}
    ]


@pytest.mark.parametrize("content", [None, "I'll patch it."])
def test_custom_tool_call_plain_dict_estimates(content: Any) -> None:
    """The reported failure: a plain dict message (string or null content) takes the fast
    counting path, which reads only ``function`` calls."""
    estimate = estimate_request(_chat_custom(content), model=_GPT)
    assert estimate.per_message[1] > 0


def test_pruned_custom_tool_output_names_the_tool() -> None:
    history = _chat_custom([])
    history[2]["content"] = "a.py\n" * 20_000
    guard = ContextGuard(_GPT, window=32_000)
    result = guard.send(lambda request: {"usage": {"prompt_tokens": 1000}}, history)
    stub = result.request.messages[2]["content"]
    assert stub.startswith("[ctxbudget: tool output pruned] apply_patch returned")
