"""Message conversions (review): what a round trip changed, and what was dropped silently.

Every case is a conversation an agent loop holds; where a shape is not obvious, the comment
names the SDK type or API reference it follows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types as genai_types
from openai.types.chat import ChatCompletion
from openai.types.responses import ResponseReasoningItem

from ctxbudget.messages import MessageFormatError, convert_messages

# --------------------------------------------------------------------------- Gemini responses


@pytest.mark.parametrize("source", ["openai_chat", "anthropic", "openai_responses"])
def test_a_tool_result_of_several_texts_keeps_them_apart_in_gemini(source: str) -> None:
    """A tool result of two text blocks, written as Gemini's one function response: they were
    joined end to end ("exit code 1stderr: disk full")."""
    parts = [{"type": "text", "text": "exit code 1"}, {"type": "text", "text": "stderr: disk full"}]
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    chat = [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": parts},
    ]
    history = convert_messages(chat, source).messages
    gemini = convert_messages(history, "gemini").messages
    response = gemini[-1]["parts"][0]["function_response"]["response"]
    assert response == {"result": "exit code 1\nstderr: disk full"}


def _gemini_tool_turn(response: dict[str, Any]) -> list[Any]:
    return [
        genai_types.Content(role="user", parts=[genai_types.Part(text="Read config.json")]),
        genai_types.Content(
            role="model",
            parts=[genai_types.Part.from_function_call(name="read", args={"path": "config.json"})],
        ),
        genai_types.Content(
            role="user",
            parts=[genai_types.Part.from_function_response(name="read", response=response)],
        ),
    ]


@pytest.mark.parametrize(
    "response",
    [
        {"result": '{"debug": true}'},  # a tool that returns JSON text, wrapped as ADK wraps it
        {"result": '{"result": "ok"}'},
        {"debug": True},
        {"result": "plain text"},
    ],
)
def test_gemini_response_holding_json_text_comes_back_unchanged(response: dict[str, Any]) -> None:
    contents = _gemini_tool_turn(response)
    same = convert_messages(contents, "gemini").messages
    assert same[2]["parts"][0]["function_response"]["response"] == response
    # Another format gets the text the model reads (as the core counts it), and back from it
    # the same JSON value: a JSON text in "result" comes back as the object it is the JSON of.
    chat = convert_messages(contents, "openai_chat").messages
    back = convert_messages(chat, "gemini").messages[2]["parts"][0]["function_response"]
    value = response["result"] if set(response) == {"result"} else None
    if isinstance(value, str) and value.startswith("{"):
        assert chat[2]["content"] == value
        assert back["response"] in (response, json.loads(value))
    else:
        assert back["response"] == response


def test_gemini_json_text_results_count_alike_on_every_path() -> None:
    """The core counts a ``{"result": text}`` response as its text; the per-message path
    counted the escaped JSON of the whole response (29 against 33 tokens)."""
    from ctxbudget import estimate_request, estimate_tokens

    contents = _gemini_tool_turn({"result": '{"status": "ok", "items": [1, 2, 3]}'})
    core = estimate_request(contents, model="gemini-2.5-pro")
    per_message = estimate_request(
        contents, model="gemini-2.5-pro", counter=lambda s: estimate_tokens(s, "conservative")
    )
    assert core.per_message == per_message.per_message


def test_chat_tool_text_that_looks_like_a_gemini_wrapper_comes_back_unchanged() -> None:
    chat = [
        {"role": "user", "content": "Read it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"result": "ok"}'},
    ]
    gemini = convert_messages(chat, "gemini").messages
    assert convert_messages(gemini, "openai_chat").messages[2]["content"] == '{"result": "ok"}'


# --------------------------------------------------------------------------- Responses items


def test_responses_reasoning_summaries_with_blank_lines_are_kept_apart() -> None:
    # Reasoning summaries come as "**Title**\n\nBody" texts, several to an item.
    item = ResponseReasoningItem.model_validate(
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "**Listing files**\n\nI will run ls."},
                {"type": "summary_text", "text": "**Reading**\n\nThen cat setup.py."},
            ],
        }
    ).model_dump(exclude_none=True)
    items = [{"role": "user", "content": "What is here?"}, item]
    out = convert_messages(items, "openai_responses").messages
    assert out[1]["summary"] == item["summary"]


def test_responses_file_url_stays_a_file_url() -> None:
    # input_file takes file_data, file_id or file_url (Responses API, "File inputs").
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_file", "file_url": "https://example.com/report.pdf"},
                {"type": "input_text", "text": "Summarise the report."},
            ],
        }
    ]
    assert convert_messages(items, "openai_responses").messages == items
    anthropic = convert_messages(items, "anthropic").messages
    assert anthropic[0]["content"][0]["source"] == {
        "type": "url",
        "url": "https://example.com/report.pdf",
    }
    assert convert_messages(anthropic, "openai_responses").messages == items
    with pytest.raises(MessageFormatError) as err:  # a Chat file part takes no URL
        convert_messages(items, "openai_chat")
    assert (err.value.index, err.value.field) == (0, "content[0]")


def test_responses_image_by_file_id() -> None:
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_image", "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL", "detail": "auto"},
                {"type": "input_text", "text": "What is in this image?"},
            ],
        }
    ]
    assert convert_messages(items, "openai_responses").messages == items
    for target in ("openai_chat", "anthropic", "gemini"):
        with pytest.raises(MessageFormatError) as err:
            convert_messages(items, target)
        assert err.value.index == 0
        assert err.value.field == ("parts[0]" if target == "gemini" else "content[0]")
    dropped = convert_messages(items, "anthropic", strict=False).messages
    assert dropped[0]["content"] == "What is in this image?"


def test_an_input_image_needs_a_url_or_a_file_id() -> None:
    items = [{"role": "user", "content": [{"type": "input_image", "detail": "auto"}]}]
    with pytest.raises(MessageFormatError) as err:
        convert_messages(items, "openai_responses")
    assert err.value.field == "content[0].image_url"


def test_file_ids_do_not_move_between_providers() -> None:
    chat = [
        {
            "role": "user",
            "content": [
                {"type": "file", "file": {"file_id": "file-abc123", "filename": "a.pdf"}},
                {"type": "text", "text": "Summarise it."},
            ],
        }
    ]
    responses = convert_messages(chat, "openai_responses").messages  # one OpenAI file store
    assert responses[0]["content"][0] == {
        "type": "input_file",
        "file_id": "file-abc123",
        "filename": "a.pdf",
    }
    for target in ("anthropic", "gemini"):
        with pytest.raises(MessageFormatError, match="OpenAI file store"):
            convert_messages(chat, target)
    # Anthropic Files API document block (source type "file").
    anthropic = [
        {
            "role": "user",
            "content": [
                {"type": "document", "source": {"type": "file", "file_id": "file_011CNha8iCJ"}},
                {"type": "text", "text": "Summarise it."},
            ],
        }
    ]
    for target in ("openai_chat", "openai_responses", "gemini"):
        with pytest.raises(MessageFormatError, match="Anthropic file store"):
            convert_messages(anthropic, target)


# --------------------------------------------------------------------------- Chat fields


def test_chat_participant_names_are_not_dropped_silently() -> None:
    chat = [
        {"role": "user", "content": "Plan the release.", "name": "alice"},
        {"role": "assistant", "content": "Step 1: tag it.", "name": "planner"},
    ]
    for target in ("anthropic", "openai_responses", "gemini"):
        with pytest.raises(MessageFormatError) as err:
            convert_messages(chat, target)
        assert (err.value.index, err.value.field) == (0, "name")
    assert convert_messages(chat, "anthropic", strict=False).messages == [
        {"role": "user", "content": "Plan the release."},
        {"role": "assistant", "content": "Step 1: tag it."},
    ]


def test_chat_refusal_is_not_dropped_silently() -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": "I'm sorry, I can't help with that.",
                    },
                }
            ],
        }
    )
    history = [
        {"role": "user", "content": "How do I pick this lock?"},
        completion.choices[0].message.model_dump(exclude_none=True),
    ]
    for target in ("anthropic", "openai_responses", "gemini"):
        with pytest.raises(MessageFormatError) as err:
            convert_messages(history, target)
        assert (err.value.index, err.value.field) == (1, "refusal")


def test_legacy_function_messages_have_no_other_form() -> None:
    chat = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "weather", "arguments": '{"city": "Paris"}'},
        },
        {"role": "function", "name": "weather", "content": "18 C"},
    ]
    with pytest.raises(MessageFormatError) as err:
        convert_messages(chat, "anthropic")
    assert (err.value.index, err.value.field) == (1, "function_call")
    for target in ("anthropic", "openai_responses", "gemini"):
        out = convert_messages(chat, target, strict=False).messages
        assert "function" not in json.dumps(out)


# --------------------------------------------------------------------------- Anthropic fields


ANTHROPIC_TURN: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "Here is the codebase.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"c": "ls"}}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "bash: ls: Permission denied",
                "is_error": True,
            }
        ],
    },
]


@pytest.mark.parametrize("target", ["openai_chat", "openai_responses", "gemini"])
def test_anthropic_cache_control_and_error_flag_are_not_dropped_silently(target: str) -> None:
    with pytest.raises(MessageFormatError) as err:
        convert_messages(ANTHROPIC_TURN, target)
    assert (err.value.index, err.value.field) == (0, "content[0].cache_control")
    with pytest.raises(MessageFormatError) as err:
        convert_messages(ANTHROPIC_TURN[1:], target)
    assert (err.value.index, err.value.field) == (1, "content[0].is_error")
    assert convert_messages(ANTHROPIC_TURN, target, strict=False).messages


def test_an_error_names_the_callers_message_when_a_system_prompt_is_given() -> None:
    messages = [
        {"role": "user", "content": "Why?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Check the logs.", "signature": "EqQBCgIYAh"},
                {"type": "text", "text": "Because."},
            ],
        },
    ]
    with pytest.raises(MessageFormatError) as err:
        convert_messages(messages, "openai_chat", system="Be brief.")
    assert err.value.index == 1
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    with pytest.raises(MessageFormatError) as err:
        convert_messages(messages[:1], "openai_chat", system=system)
    assert (err.value.index, err.value.field) == (None, "system")


def _anthropic_with_cache_marks() -> list[dict[str, Any]]:
    """A prompt-cached Anthropic history, as the SDK docs build one."""
    from anthropic.types import DirectCaller, ToolUseBlock

    call = ToolUseBlock(
        id="toolu_1", name="ls", input={}, type="tool_use", caller=DirectCaller(type="direct")
    )
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "List files.", "cache_control": {"type": "ephemeral"}}
            ],
        },
        {"role": "assistant", "content": [call.model_dump()]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "a.py",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]


def test_to_langchain_drops_cache_marks_as_langchain_does() -> None:
    """``to_langchain`` had no ``strict`` and raised on every prompt-cached history."""
    pytest.importorskip("langchain_core")
    from ctxbudget.messages import to_langchain

    history = _anthropic_with_cache_marks()
    kinds = [type(m).__name__ for m in to_langchain(history, "anthropic")]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage"]
    with pytest.raises(MessageFormatError, match="cache_control"):
        to_langchain(history, "anthropic", strict=True)


def test_a_tool_calls_direct_caller_is_no_loss() -> None:
    """anthropic's ``ToolUseBlock`` dumps ``caller: {"type": "direct"}``: nothing another
    format could carry or would miss, so it is no reason to refuse a conversion."""
    history = _anthropic_with_cache_marks()
    for message in history:
        for block in message["content"]:
            block.pop("cache_control", None)
    out = convert_messages(history, "openai_chat", source="anthropic").messages
    assert out[1]["tool_calls"][0]["id"] == "toolu_1"
