"""Fields of real provider payloads a review found counted short or converted with a loss
(2026-12-04): Responses reasoning texts, Gemini function responses carrying media, a file's
name through Anthropic's document ``title``, and Gemini file URIs without a MIME type."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from ctxbudget import estimate_tokens
from ctxbudget.messages import MessageFormatError, convert_messages
from ctxbudget.request import estimate_request

COT = "The user wants the weather; I should call get_weather with the city first. " * 40


def reasoning_items(summary: list[str]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "weather in Paris?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": s} for s in summary],
            "content": [{"type": "reasoning_text", "text": COT}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "18C"},
    ]


@pytest.mark.parametrize("summary", [[], ["Check the weather."]], ids=["no summary", "summary"])
def test_responses_reasoning_texts_are_counted(summary: list[str]) -> None:
    # gpt-oss and other open models send their reasoning back as `reasoning_text` parts:
    # 3,000 characters were counted as 4 tokens.
    items = reasoning_items(summary)
    counted = estimate_request(items, model="gpt-4o").per_message
    assert counted[1] >= estimate_tokens(COT, "o200k")


def test_responses_reasoning_texts_convert_and_come_back_as_they_were() -> None:
    items = reasoning_items(["Check the weather."])
    chat = convert_messages(items, "openai_chat").messages
    assert (
        COT in chat[1]["reasoning_content"] and "Check the weather." in chat[1]["reasoning_content"]
    )
    gemini = convert_messages(items, "gemini").messages
    thought = [p for p in gemini[1]["parts"] if p.get("thought")]
    assert thought and COT in thought[0]["text"]
    assert convert_messages(items, "openai_responses").messages == items


def test_responses_reasoning_without_summary_writes_no_empty_thought() -> None:
    gemini = convert_messages(reasoning_items([]), "gemini").messages
    assert all(p.get("text") != "" for p in gemini[1]["parts"])


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(64)).decode()


def screenshot_contents(**response: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "parts": [{"text": "take a screenshot"}]},
        {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "shot", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {
                    "function_response": {"id": "c1", "name": "shot", "response": {"result": "ok"}}
                    | response
                }
            ],
        },
    ]


@pytest.mark.parametrize("to", ["anthropic", "openai_responses", "openai_chat"])
@pytest.mark.parametrize(
    "response",
    [
        {"parts": [{"inline_data": {"mime_type": "image/png", "data": PNG}}]},
        {"will_continue": True},
        {"scheduling": "SILENT"},
    ],
    ids=["media", "will_continue", "scheduling"],
)
def test_what_a_gemini_function_response_carries_is_never_dropped_silently(
    to: str, response: dict[str, Any]
) -> None:
    contents = screenshot_contents(**response)
    with pytest.raises(MessageFormatError, match="function_response"):
        convert_messages(contents, to)
    loose = convert_messages(contents, to, strict=False)  # dropped, as asked
    assert loose.messages
    assert convert_messages(contents, "gemini").messages[-1]["parts"][0]["function_response"][
        next(iter(response))
    ] == next(iter(response.values()))


def test_a_file_name_goes_through_an_anthropic_title_and_back() -> None:
    pdf = "data:application/pdf;base64,JVBERi0xLjQK"
    chat = [
        {
            "role": "user",
            "content": [{"type": "file", "file": {"file_data": pdf, "filename": "report.pdf"}}],
        }
    ]
    anthropic = convert_messages(chat, "anthropic").messages
    assert anthropic[0]["content"][0]["title"] == "report.pdf"
    back = convert_messages(anthropic, "openai_chat").messages
    assert back[0]["content"][0]["file"]["filename"] == "report.pdf"
    assert convert_messages(anthropic, "anthropic").messages == anthropic


@pytest.mark.parametrize(
    ("source", "messages", "mime"),
    [
        (
            "openai_chat",
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
                    ],
                }
            ],
            "image/png",
        ),
        (
            "anthropic",
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {"type": "url", "url": "https://example.com/a.pdf?v=2"},
                        }
                    ],
                }
            ],
            "application/pdf",
        ),
    ],
)
def test_a_url_through_gemini_keeps_its_media_type(
    source: str, messages: list[dict[str, Any]], mime: str
) -> None:
    # Written without mime_type (Vertex requires one), it came back a generic file that no
    # other format could write.
    gemini = convert_messages(messages, "gemini").messages
    assert gemini[0]["parts"][0]["file_data"]["mime_type"] == mime
    assert convert_messages(gemini, source).messages == messages
    bare = [{"role": "user", "parts": [{"file_data": {"file_uri": "https://example.com/b.jpg"}}]}]
    assert convert_messages(bare, "openai_chat").messages[0]["content"][0]["type"] == "image_url"
    assert convert_messages(bare, "gemini").messages == bare
