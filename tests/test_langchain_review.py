"""LangChain messages as agent frameworks hold them: estimated like the same conversation in its
provider's own dicts, and converted both ways without silent loss."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ctxbudget import estimate_request
from ctxbudget.messages import (
    MessageFormatError,
    convert_messages,
    from_langchain,
    normalize_messages,
    to_langchain,
    validate_messages,
)

lc = pytest.importorskip("langchain_core.messages")

ARGS = {"command": "grep -rn 'def main' src/ | head -20"}
ASK: dict[str, Any] = {"role": "user", "content": "Find the entry point."}


def _chat_call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}


def _dumped(messages: list[Any]) -> list[dict[str, Any]]:
    return [copy.deepcopy(m.model_dump()) for m in messages]


# --------------------------------------------------------------------------- content blocks


def _server_tool_blocks() -> list[dict[str, Any]]:
    """What ChatAnthropic keeps in an AI message's content after a web search."""
    return [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "weather in Paris today"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://example.com/paris",
                    "title": "Paris weather",
                    "encrypted_content": "Eq" + "x9" * 300,
                }
            ],
        },
        {"type": "text", "text": "It is sunny in Paris."},
    ]


def test_server_tool_blocks_are_estimated_as_their_anthropic_dicts() -> None:
    """An AI message holding Anthropic server-tool blocks failed the whole estimate (the Chat
    reader knows no ``server_tool_use`` part)."""
    blocks = _server_tool_blocks()
    ours = [lc.HumanMessage(ASK["content"]), lc.AIMessage(blocks)]
    theirs = [ASK, {"role": "assistant", "content": blocks}]
    for model in ("claude-sonnet-4-5", "gpt-4o"):
        got = estimate_request(ours, model=model).components.messages
        want = estimate_request(theirs, model=model, format="anthropic").components.messages
        assert got == want


def test_langchain_v1_tool_call_blocks_are_not_counted_twice() -> None:
    """LangChain v1 content repeats each tool call as a ``tool_call`` block: the estimate
    failed on it; it must cost what the same message without the block costs."""
    call = {"name": "bash", "args": ARGS, "id": "c1", "type": "tool_call"}
    v1 = lc.AIMessage(
        [{"type": "text", "text": "Looking."}, {**call}],
        tool_calls=[call],
        response_metadata={"output_version": "v1"},
    )
    v0 = lc.AIMessage("Looking.", tool_calls=[call])
    result = lc.ToolMessage("src/app.py:3:def main():", tool_call_id="c1")
    human = lc.HumanMessage(ASK["content"])
    got = estimate_request([human, v1, result], model="gpt-4o")
    assert got == estimate_request([human, v0, result], model="gpt-4o")
    assert from_langchain([v1])[0]["content"] == [{"type": "text", "text": "Looking."}]


def test_a_v1_tool_call_block_alone_is_a_tool_call() -> None:
    """A ``tool_call`` block the message's ``tool_calls`` do not hold is still a call: its
    result must pair with it."""
    block = {"type": "tool_call", "id": "c1", "name": "bash", "args": ARGS}
    history = [lc.AIMessage([block]), lc.ToolMessage("ok", tool_call_id="c1")]
    chat = from_langchain(history)
    assert [c["id"] for c in chat[0]["tool_calls"]] == ["c1"]
    assert validate_messages(chat) == "openai_chat"


@pytest.mark.parametrize(
    "block",
    [
        {"type": "reasoning", "reasoning": "The user wants the entry point; grep for main."},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "The user wants the entry point;"},
                {"type": "summary_text", "text": "grep for main."},
            ],
        },
    ],
    ids=["v1", "responses"],
)
def test_reasoning_blocks_become_reasoning_content(block: dict[str, Any]) -> None:
    """v1 ``reasoning`` blocks and the Responses API's (ChatOpenAI) failed the estimate."""
    message = lc.AIMessage([block, {"type": "text", "text": "Done."}])
    (chat,) = from_langchain([message])
    assert chat["content"] == [{"type": "text", "text": "Done."}]
    assert "grep for main." in chat["reasoning_content"]
    got = estimate_request([lc.HumanMessage(ASK["content"]), message], model="gpt-4o")
    assert got == estimate_request([ASK, chat], model="gpt-4o")


def test_an_anthropic_document_costs_as_in_anthropic_dicts() -> None:
    text_doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Quarterly report. " * 40},
    }
    pdf_doc = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK" * 50},
    }
    for block in (text_doc, pdf_doc):
        content = [block, {"type": "text", "text": "Summarise it."}]
        ours = estimate_request([lc.HumanMessage(content)], model="claude-sonnet-4-5")
        want = estimate_request(
            [{"role": "user", "content": content}], model="claude-sonnet-4-5", format="anthropic"
        )
        assert ours.components.messages == want.components.messages


def test_from_langchain_keeps_blocks_chat_has_no_part_for() -> None:
    """The conversion keeps what it cannot write as Chat parts; convert_messages refuses it,
    naming the block, rather than a text part standing in for it."""
    chat = from_langchain([lc.AIMessage(_server_tool_blocks())])
    assert chat[0]["content"] == _server_tool_blocks()
    with pytest.raises(MessageFormatError, match="server_tool_use"):
        convert_messages(chat, "openai_responses", source="openai_chat")


# --------------------------------------------------------------------------- invalid tool calls


def test_invalid_tool_calls_are_sent_and_answered() -> None:
    """A reply cut off mid-call leaves its call in ``invalid_tool_calls``; langchain-openai
    sends it with its raw arguments, and the tool message answering it needs its id. It was
    dropped: the estimate missed the arguments and the result answered no call."""
    raw = '{"command": "grep -rn ' + "'def main' src/ " * 30
    bad = {"name": "bash", "args": raw, "id": "c2", "error": "not JSON"}
    history = [
        lc.HumanMessage(ASK["content"]),
        lc.AIMessage("", invalid_tool_calls=[bad]),
        lc.ToolMessage("Error: arguments are not valid JSON", tool_call_id="c2", status="error"),
    ]
    chat = from_langchain(history)
    assert chat[1]["tool_calls"] == [_chat_call("c2", raw)]
    assert validate_messages(chat) == "openai_chat"
    want = [ASK, {"role": "assistant", "content": "", "tool_calls": [_chat_call("c2", raw)]}]
    want.append({"role": "tool", "tool_call_id": "c2", "content": history[2].content})
    assert estimate_request(history, model="gpt-4o") == estimate_request(want, model="gpt-4o")


def test_invalid_tool_calls_follow_the_valid_ones() -> None:
    good = {"name": "bash", "args": ARGS, "id": "c1"}
    bad = {"name": "bash", "args": '{"command": ', "id": "c2", "error": None}
    (chat,) = from_langchain([lc.AIMessage("Two.", tool_calls=[good], invalid_tool_calls=[bad])])
    assert [c["id"] for c in chat["tool_calls"]] == ["c1", "c2"]
    assert chat["tool_calls"][1]["function"]["arguments"] == '{"command": '


def test_to_langchain_keeps_malformed_arguments_as_invalid_tool_calls() -> None:
    """to_langchain raised json.JSONDecodeError on a Chat history ctxbudget itself accepts
    (validate_messages passes it): arguments cut off mid-call."""
    chat: list[dict[str, Any]] = [
        ASK,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_chat_call("c1", '{"command": "ls"}'), _chat_call("c2", '{"comm')],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: invalid arguments"},
    ]
    assert validate_messages(chat) == "openai_chat"
    ai = to_langchain(chat)[1]
    assert [c["id"] for c in ai.tool_calls] == ["c1"]
    assert [(c["id"], c["args"]) for c in ai.invalid_tool_calls] == [("c2", '{"comm')]
    assert from_langchain(to_langchain(chat))[1]["tool_calls"] == chat[1]["tool_calls"]


# --------------------------------------------------------------------------- round trips


def test_reasoning_content_survives_a_round_trip() -> None:
    """to_langchain keeps ``reasoning_content`` in ``additional_kwargs`` (where DeepSeek's
    integration keeps it too); from_langchain dropped it from there."""
    chat: list[dict[str, Any]] = [
        ASK,
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "The entry point is probably in src/; grep for main.",
            "tool_calls": [_chat_call("c1", '{"command": "ls"}')],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    back = from_langchain(to_langchain(chat))
    assert back[1]["reasoning_content"] == chat[1]["reasoning_content"]
    assert estimate_request(to_langchain(chat), model="gpt-4o") == estimate_request(
        chat, model="gpt-4o"
    )


def test_a_tool_error_flag_becomes_the_tool_message_status() -> None:
    """LangChain carries Anthropic's ``is_error`` as ``ToolMessage.status``; to_langchain
    dropped it (and with strict=True refused the history)."""
    history = [
        {"role": "user", "content": "Run it."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": ARGS}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "boom",
                    "is_error": True,
                }
            ],
        },
    ]
    before = copy.deepcopy(history)
    for strict in (False, True):
        out = to_langchain(history, "anthropic", strict=strict)
        assert [type(m).__name__ for m in out] == ["HumanMessage", "AIMessage", "ToolMessage"]
        assert out[2].status == "error"
        assert out[2].tool_call_id == "toolu_1"
    assert history == before


def test_a_successful_result_stays_a_success() -> None:
    history = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    assert to_langchain(history, "anthropic")[1].status == "success"


def test_converting_langchain_messages_names_the_way() -> None:
    """convert_messages on LangChain messages said "field 'role': expected one of [...], got
    None", as though the caller's message had lost its role."""
    history = [ASK, lc.AIMessage("Looking.")]
    for call in (
        lambda: convert_messages(history, "anthropic"),
        lambda: normalize_messages(history),
        lambda: validate_messages(history),
    ):
        with pytest.raises(MessageFormatError, match="from_langchain") as e:
            call()
        assert e.value.index == 1
    assert convert_messages(from_langchain(history), "anthropic").messages[1]["role"] == "assistant"


def test_the_callers_langchain_messages_are_not_changed() -> None:
    call = {"name": "bash", "args": ARGS, "id": "c1", "type": "tool_call"}
    history = [
        lc.HumanMessage(ASK["content"]),
        lc.AIMessage(
            [{"type": "reasoning", "reasoning": "grep"}, {**call}, *_server_tool_blocks()],
            tool_calls=[call],
            invalid_tool_calls=[{"name": "bash", "args": "{", "id": "c2", "error": None}],
            additional_kwargs={"reasoning_content": "grep"},
        ),
        lc.ToolMessage("a.py", tool_call_id="c1"),
        lc.ToolMessage("bad", tool_call_id="c2", status="error"),
    ]
    before = _dumped(history)
    from_langchain(history)
    estimate_request(history, model="gpt-4o")
    assert _dumped(history) == before
