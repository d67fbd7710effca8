"""Message formats: detection, validation errors, lossless round trips and conversions."""

from __future__ import annotations

import base64
import copy
import doctest
import importlib
import json
import struct
import zlib
from typing import Any

import pytest

from ctxbudget import estimate_request, estimate_tokens
from ctxbudget.messages import (
    FORMATS,
    MessageFormatError,
    convert_messages,
    convert_tools,
    detect_format,
    from_langchain,
    normalize_messages,
    normalize_tools,
    to_langchain,
    validate_messages,
)
from ctxbudget.request import RequestEstimator


def png(width: int, height: int) -> bytes:
    """A real (tiny-content) PNG of the given size."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PNG = png(640, 480)
PNG_B64 = base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(
    b"%PDF-1.4\n1 0 obj <</Type /Pages /Count 2>> endobj\n"
    b"2 0 obj <</Type /Page>> endobj\n3 0 obj <</Type /Page>> endobj\n%%EOF\n"
).decode()
ARGS_LS = json.dumps({"command": "ls -la"})
ARGS_CAT = json.dumps({"command": "cat setup.py"})

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this screenshot and the repo?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Let me look at both files.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "bash", "arguments": ARGS_LS},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "bash", "arguments": ARGS_CAT},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "total 8\n-rw-r--r-- setup.py"},
    {"role": "tool", "tool_call_id": "call_2", "content": "from setuptools import setup"},
    {"role": "assistant", "content": "The repo has one setup.py."},
]

RESPONSES: list[dict[str, Any]] = [
    {"role": "developer", "content": "You are a coding agent."},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is in this screenshot?"},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{PNG_B64}",
                "detail": "high",
            },
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need to list files."}],
        "encrypted_content": "gAAAA-opaque",
    },
    {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": ARGS_LS},
    {"type": "function_call", "call_id": "call_2", "name": "bash", "arguments": ARGS_CAT},
    {"type": "function_call_output", "call_id": "call_1", "output": "setup.py"},
    {"type": "function_call_output", "call_id": "call_2", "output": "from setuptools import setup"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "One setup.py.", "annotations": []}],
    },
]

ANTHROPIC: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Summarise the PDF and the image."},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
            },
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                "cache_control": {"type": "ephemeral"},
            },
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Two files to read.", "signature": "sig-abc"},
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls -la"}},
            {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "cat a"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "error: no such file"}],
                "is_error": True,
            },
        ],
    },
    {"role": "assistant", "content": "Done."},
]

GEMINI: list[dict[str, Any]] = [
    {
        "role": "user",
        "parts": [
            {"text": "What is in this picture?"},
            {"inline_data": {"mime_type": "image/png", "data": PNG}},
        ],
    },
    {
        "role": "model",
        "parts": [
            {"text": "Planning.", "thought": True},
            {"function_call": {"id": "fc1", "name": "bash", "args": {"command": "ls"}}},
            {"function_call": {"id": "fc2", "name": "bash", "args": {"command": "pwd"}}},
        ],
    },
    {
        "role": "user",
        "parts": [
            {"function_response": {"id": "fc1", "name": "bash", "response": {"result": "a.py"}}},
            {"function_response": {"id": "fc2", "name": "bash", "response": {"cwd": "/w"}}},
        ],
    },
    {"role": "model", "parts": [{"text": "Found a.py in /w."}]},
]

SAMPLES = {
    "openai_chat": CHAT,
    "openai_responses": RESPONSES,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
}


def canonical(fmt: str, messages: list[Any]) -> Any:
    """The request as the provider sees it: str content == one text part, JSON args by value."""

    def walk(obj: Any) -> Any:
        if isinstance(obj, dict):
            out = {k: walk(v) for k, v in obj.items()}
            if fmt == "openai_chat" and out.get("type") == "function" and "function" in out:
                out["function"]["arguments"] = json.loads(out["function"]["arguments"])
            if fmt == "openai_responses" and out.get("type") == "function_call":
                out["arguments"] = json.loads(out["arguments"])
            if isinstance(out.get("content"), str) and out.get("type") != "input_text":
                out["content"] = [{"type": "text", "text": out["content"]}]
            return out
        if isinstance(obj, list):
            return [walk(x) for x in obj]
        return obj

    return walk(copy.deepcopy(messages))


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("fmt", FORMATS)
def test_detect_each_sample(fmt: str) -> None:
    assert detect_format(SAMPLES[fmt]) == fmt


def test_detect_ambiguous_uses_default() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert detect_format(plain) == "openai_chat"
    assert detect_format(plain, default="anthropic") == "anthropic"


def test_detect_instructions_rule_out_anthropic_and_gemini() -> None:
    # A system message exists in Chat Completions (and Responses) only: OpenAI-compatible
    # endpoints for Claude or Gemini models take such lists, whatever the default says.
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    for default in ("anthropic", "gemini", "openai_chat"):
        assert detect_format(chat, default=default) == "openai_chat"
    assert detect_format(chat, default="openai_responses") == "openai_responses"
    plain = [{"role": "user", "content": "hi"}]
    assert detect_format(plain, default="gemini") == "openai_chat"  # a dict without parts


@pytest.mark.parametrize(
    "assistant",
    [
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "assistant", "content": "Done.", "reasoning_content": "First, ..."},
        {"role": "assistant", "content": "Done.", "refusal": None},  # an SDK message's dump
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "assistant", "content": None, "audio": {"id": "audio_abc"}},
    ],
    ids=["refusal", "reasoning_content", "refusal-none", "function_call", "audio"],
)
def test_detect_chat_only_assistant_fields_decide(assistant: dict[str, Any]) -> None:
    # OpenAI-format histories go to Claude and Gemini models through OpenAI-compatible
    # endpoints: the default for a Claude model must not read these as Anthropic (a refusal
    # dropped, or "expected a list" for content None).
    msgs = [{"role": "user", "content": "hi"}, assistant]
    for default in ("anthropic", "gemini", "openai_chat"):
        assert detect_format(msgs, default=default) == "openai_chat"
    est = estimate_request(msgs, model="claude-sonnet-4-5")
    assert est.format == "openai_chat"
    # Growing the list turn by turn, an edit in place that adds such a field is noticed (one
    # that adds it as None looks, field by field, like no field at all).
    if assistant.get("refusal", "") is None:
        return
    if assistant["content"] is None:
        assistant = {**assistant, "content": "Done."}  # readable as Anthropic before the edit
    seen = RequestEstimator(model="claude-sonnet-4-5")
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Done."}]
    assert seen.estimate(plain).format == "anthropic"
    plain[1].update(assistant)
    assert seen.estimate(plain).format == "openai_chat"


def test_an_anthropic_response_put_back_whole_is_anthropic() -> None:
    """``messages.append(response)`` (or its ``model_dump()``): its ``type: "message"`` is
    also a Responses message item's; its ``stop_reason``, ``usage`` and ``model`` are not."""
    types = pytest.importorskip("anthropic.types")
    response = types.Message(
        id="msg_1",
        type="message",
        role="assistant",
        content=[
            types.TextBlock(type="text", text="Checking."),
            types.ToolUseBlock(type="tool_use", id="toolu_1", name="f", input={"a": 1}),
        ],
        model="claude-sonnet-4-5",
        stop_reason="tool_use",
        stop_sequence=None,
        usage=types.Usage(input_tokens=10, output_tokens=5),
    )
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
    }
    plain = {"role": "assistant", "content": response.model_dump()["content"]}
    want = estimate_request(
        [{"role": "user", "content": "hi"}, plain, result], model="claude-sonnet-4-5"
    )
    for whole in (response, response.model_dump()):
        msgs = [{"role": "user", "content": "hi"}, whole, result]
        assert detect_format(msgs) == "anthropic"
        assert estimate_request(msgs, model="claude-sonnet-4-5").total == want.total
    # A Responses message item keeps its format.
    item = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "x"}],
    }
    assert detect_format([item]) == "openai_responses"


def test_the_fields_that_tell_a_format_fit_the_cores_fast_check() -> None:
    """Detection re-reads a seen message only when one of these fields changed; the core keeps
    each message's references for at most ten fields and compares every field of every
    message on every turn beyond that."""
    from ctxbudget.formats.detect import _DETECT_KEYS

    assert len(_DETECT_KEYS) <= 10


CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "ok"}


@pytest.mark.parametrize(
    "first",
    [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "refusal", "refusal": "I can't."},
        {"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}},
    ],
    ids=["input_audio", "refusal", "text-with-cache_control"],
)
def test_detect_parts_several_formats_share_do_not_decide(first: dict[str, Any]) -> None:
    msgs = [{"role": "user", "content": [first]}, CALL, RESULT]
    assert detect_format(msgs) == "openai_chat"
    assert validate_messages(msgs) == "openai_chat"


def test_detect_genai_objects() -> None:
    types = pytest.importorskip("google.genai.types")
    contents = [types.Content(role="user", parts=[types.Part(text="hi")])]
    assert detect_format(contents) == "gemini"
    (message,) = normalize_messages(contents)
    assert message.parts[0].text == "hi"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("fmt", "messages", "index", "field"),
    [
        (
            "openai_chat",
            [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}],
            1,
            "role",
        ),
        ("openai_chat", [{"role": "tool", "content": "x"}], 0, "tool_call_id"),
        (
            "openai_chat",
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}],
            0,
            "tool_calls[0].function.arguments",
        ),
        (
            "openai_chat",
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            0,
            "content[0].image_url.url",
        ),
        (
            "openai_responses",
            [{"type": "function_call", "call_id": "c", "name": "f"}],
            0,
            "arguments",
        ),
        ("anthropic", [{"role": "tool", "content": "x"}], 0, "role"),
        (
            "anthropic",
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": [{"type": "tool_use"}]},
            ],
            1,
            "content[0].id",
        ),
        (
            "gemini",
            [{"role": "user", "parts": [{"inline_data": {"data": "AA=="}}]}],
            0,
            "parts[0].inline_data.mime_type",
        ),
        ("gemini", [{"role": "user", "parts": "hello"}], 0, "parts"),
    ],
)
def test_malformed_names_index_and_field(
    fmt: str, messages: list[Any], index: int, field: str
) -> None:
    with pytest.raises(MessageFormatError) as info:
        validate_messages(messages, fmt)
    assert info.value.index == index
    assert info.value.field == field
    assert f"message {index}" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_orphan_tool_result_is_reported() -> None:
    with pytest.raises(MessageFormatError) as info:
        validate_messages([{"role": "tool", "tool_call_id": "nope", "content": "x"}])
    assert info.value.index == 0 and info.value.field == "tool_call_id"


@pytest.mark.parametrize("fmt", FORMATS)
def test_valid_samples_validate(fmt: str) -> None:
    assert validate_messages(SAMPLES[fmt]) == fmt


def test_not_a_list() -> None:
    with pytest.raises(MessageFormatError):
        normalize_messages({"role": "user", "content": "x"}, "openai_chat")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_format_round_trip_is_exact(fmt: str) -> None:
    before = copy.deepcopy(SAMPLES[fmt])
    out = convert_messages(SAMPLES[fmt], fmt)
    assert out.messages == SAMPLES[fmt]
    assert SAMPLES[fmt] == before  # the caller's messages are untouched


def test_chat_round_trip_keeps_content_styles_and_extras() -> None:
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "ann"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "index": 0,
                }
            ],
            "function_call": None,
            "provider_specific_fields": None,
        },
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}]},
        {"role": "assistant", "content": "", "reasoning_content": "thought"},
    ]
    assert convert_messages(msgs, "openai_chat").messages == msgs


@pytest.mark.parametrize(
    ("fmt", "messages"),
    [
        ("openai_chat", [{"role": "user", "content": [{"type": "text", "text": "hi", 1: "x"}]}]),
        ("anthropic", [{"role": "user", "content": [{"type": "text", "text": "hi", 1: "x"}]}]),
        ("gemini", [{"role": "user", "parts": [{"text": "hi", 1: "x"}], 2: "y"}]),
    ],
)
def test_same_format_round_trip_keeps_fields_whose_keys_are_not_strings(
    fmt: str, messages: list[dict[Any, Any]]
) -> None:
    # A block's field under a non-string key crashed (AttributeError: startswith); such keys
    # are kept as given, like unmodelled fields, as message-level ones already were.
    assert convert_messages(messages, fmt, source=fmt).messages == messages


PAIRS = [(a, b) for a in FORMATS for b in FORMATS if a != b]


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_cross_format_there_and_back(src: str, dst: str) -> None:
    sample = SAMPLES[src]
    lossy = {
        ("anthropic", "openai_chat"),  # thinking signature, PDF ok, signature not
        ("anthropic", "openai_responses"),
        ("anthropic", "gemini"),
        ("openai_responses", "openai_chat"),  # encrypted reasoning
        ("openai_responses", "anthropic"),
        ("openai_responses", "gemini"),
        ("gemini", "anthropic"),  # a Gemini thought has no Anthropic signature
    }
    if (src, dst) in lossy:
        with pytest.raises(MessageFormatError):
            convert_messages(sample, dst)
        return
    there = convert_messages(sample, dst)
    back = convert_messages(there.messages, src, source=dst, system=there.system)
    if src == "gemini":
        assert canonical(src, back.messages) == canonical(src, _b64_inline(sample))
    else:
        assert canonical(src, back.messages) == canonical(src, sample)


def _b64_inline(messages: list[Any]) -> list[Any]:
    """Gemini inline bytes come back as the base64 text the other formats carry."""
    out = copy.deepcopy(messages)
    for content in out:
        for part in content["parts"]:
            blob = part.get("inline_data")
            if blob and isinstance(blob["data"], bytes):
                blob["data"] = base64.b64encode(blob["data"]).decode()
    return out


@pytest.mark.parametrize("dst", ["openai_responses", "anthropic", "gemini"])
def test_lossy_parts_dropped_when_not_strict(dst: str) -> None:
    out = convert_messages(ANTHROPIC, "openai_chat", strict=False)
    assert all("signature" not in json.dumps(m) for m in out.messages)
    again = convert_messages(out.messages, dst, strict=False)
    assert again.messages


def test_chat_to_anthropic_merges_parallel_results_and_splits_system() -> None:
    out = convert_messages(CHAT, "anthropic")
    assert out.system == "You are a coding agent."
    roles = [m["role"] for m in out.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    results = out.messages[2]["content"]
    assert [b["tool_use_id"] for b in results] == ["call_1", "call_2"]
    image = out.messages[0]["content"][1]
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_B64}


def test_anthropic_to_chat_splits_tool_results() -> None:
    out = convert_messages(ANTHROPIC, "openai_chat", strict=False)
    tools = [m for m in out.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["toolu_1", "toolu_2"]
    assert out.messages[0]["content"][1]["type"] == "file"
    calls = out.messages[1]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"command": "ls -la"},
        {"command": "cat a"},
    ]


def test_gemini_without_ids_gets_stable_ids_and_drops_them_back() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [{"function_call": {"name": "bash", "args": {"command": "ls"}}}],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"name": "bash", "response": {"result": "x"}}}],
        },
    ]
    chat = convert_messages(contents, "openai_chat").messages
    call_id = chat[1]["tool_calls"][0]["id"]
    assert call_id.startswith("ctxb_call_")
    assert chat[2] == {"role": "tool", "tool_call_id": call_id, "content": "x"} or chat[2][
        "tool_call_id"
    ].startswith("ctxb_call_")
    back = convert_messages(chat, "gemini").messages
    assert back[1]["parts"][0]["function_call"] == {"name": "bash", "args": {"command": "ls"}}


def test_gemini_camel_case_is_read() -> None:
    contents = [
        {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_B64}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
    ]
    messages = normalize_messages(contents)
    assert messages[0].parts[0].kind == "image"
    assert messages[1].parts[0].kind == "tool_call"


def test_tool_result_text_to_gemini_and_back() -> None:
    for text in ["plain", '{"a": 1}', '{"result": "x"}', "", '{"a":1}', "[1, 2]"]:
        chat = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": text},
        ]
        gem = convert_messages(chat, "gemini").messages
        back = convert_messages(gem, "openai_chat").messages
        assert back[1]["content"] == text


# --------------------------------------------------------------------------- tools

TOOL_SHAPES = {
    "openai_chat": [
        {
            "type": "function",
            "function": {"name": "bash", "description": "Run", "parameters": {"type": "object"}},
        }
    ],
    "openai_responses": [
        {"type": "function", "name": "bash", "description": "Run", "parameters": {"type": "object"}}
    ],
    "anthropic": [{"name": "bash", "description": "Run", "input_schema": {"type": "object"}}],
    "gemini": [
        {
            "function_declarations": [
                {"name": "bash", "description": "Run", "parameters_json_schema": {"type": "object"}}
            ]
        }
    ],
}


@pytest.mark.parametrize("src", FORMATS)
@pytest.mark.parametrize("dst", FORMATS)
def test_tools_convert_between_shapes(src: str, dst: str) -> None:
    assert convert_tools(TOOL_SHAPES[src], dst) == TOOL_SHAPES[dst]


def test_builtin_tools_are_kept_but_not_converted() -> None:
    specs = normalize_tools([{"type": "web_search_20250305", "name": "web_search"}])
    assert specs[0].parameters is None and specs[0].kind == "web_search_20250305"
    with pytest.raises(MessageFormatError):
        convert_tools([{"type": "web_search_20250305", "name": "web_search"}], "openai_chat")


def test_genai_tool_objects() -> None:
    types = pytest.importorskip("google.genai.types")
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="bash", description="Run", parameters_json_schema={"type": "object"}
            )
        ]
    )
    assert normalize_tools([tool])[0].name == "bash"


def test_gemini_builtin_tools_are_read_and_counted() -> None:
    # google_search, code_execution, url_context, ... were refused as "not a tool definition".
    types = pytest.importorskip("google.genai.types")
    decl = types.FunctionDeclaration(name="bash", parameters_json_schema={"type": "object"})
    both = types.Tool(code_execution=types.ToolCodeExecution(), function_declarations=[decl])
    specs = normalize_tools([types.Tool(google_search=types.GoogleSearch()), both])
    assert [(s.name, s.kind) for s in specs] == [
        ("google_search", "google_search"),
        ("bash", "function"),
        ("code_execution", "code_execution"),
    ]
    dicts = normalize_tools([{"googleSearch": {}}, {"url_context": {}}])
    assert [s.kind for s in dicts] == ["google_search", "url_context"]
    msgs = [{"role": "user", "parts": [{"text": "hi"}]}]
    only_fn = types.Tool(function_declarations=[decl])
    tools_of = [
        estimate_request(msgs, tools=[t], format="gemini").components.tools for t in (only_fn, both)
    ]
    assert tools_of[1] > tools_of[0]


def test_gemini_tools_in_rest_spelling_are_read() -> None:
    # {"functionDeclarations": [...]} (the REST API's JSON) was "not a tool definition".
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    rest = [{"functionDeclarations": [{"name": "read", "parametersJsonSchema": schema}]}]
    snake = [{"function_declarations": [{"name": "read", "parameters_json_schema": schema}]}]
    assert normalize_tools(rest) == normalize_tools(snake)
    assert normalize_tools(rest)[0].parameters == schema


def test_a_function_without_parameters_is_a_function() -> None:
    # A declaration with no parameter schema was taken for a built-in tool: convert_tools
    # refused it, and the estimate counted its whole Tool (every other declaration) again.
    long = {"name": "b", "description": "Reads the file. " * 300}
    with_a = {"function_declarations": [{"name": "a"}, long]}
    out = convert_tools([with_a], "anthropic")
    assert out[0] == {
        "name": "a",
        "description": "",
        "input_schema": {"type": "object", "properties": {}},
    }
    msgs = [{"role": "user", "parts": [{"text": "hi"}]}]
    alone, both = (
        estimate_request(msgs, tools=[t], format="gemini").components.tools
        for t in ({"function_declarations": [long]}, with_a)
    )
    assert 0 < both - alone < estimate_tokens(long["description"]) / 4


def test_tool_errors_name_the_tool_not_a_message() -> None:
    with pytest.raises(MessageFormatError, match=r"^tool 1, field 'tools\[1\]': not a tool") as e:
        normalize_tools([{"google_search": {}}, {"foo": {}}])
    assert e.value.index == 1
    fns = {"function_declarations": [{"name": "a"}, {"name": "b"}]}
    with pytest.raises(MessageFormatError, match=r"^tool 1, field 'tools\[1\]': built-in") as e:
        convert_tools([fns, {"google_search": {}}], "anthropic")


# --------------------------------------------------------------------------- LangChain


def test_langchain_adapter_round_trip() -> None:
    pytest.importorskip("langchain_core")
    lc = to_langchain(CHAT)
    assert [type(m).__name__ for m in lc][:3] == ["SystemMessage", "HumanMessage", "AIMessage"]
    assert len(lc[2].tool_calls) == 2
    back = from_langchain(lc)
    assert [m["role"] for m in back] == [m["role"] for m in CHAT]
    assert back[3]["tool_call_id"] == "call_1"


def _langchain_samples() -> list[Any]:
    lc = pytest.importorskip("langchain_core.messages")
    call = {"name": "bash", "args": {"cmd": "ls -la", "note": "ü 你好"}, "id": "call_1"}
    return [
        lc.SystemMessage("Be brief."),
        lc.SystemMessage("As developer.", additional_kwargs={"__openai_role__": "developer"}),
        lc.HumanMessage("hi", name="alice"),
        lc.HumanMessage(""),
        lc.HumanMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        lc.HumanMessage(
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]
        ),
        lc.AIMessage("Looking.", tool_calls=[call, {**call, "id": None, "args": {}}]),
        lc.AIMessage("", tool_calls=[call]),
        lc.AIMessage("No.", additional_kwargs={"refusal": "I can't do that.", "other": 1}),
        lc.AIMessage("ok", additional_kwargs={"refusal": None}, name="bot"),
        lc.AIMessage([{"type": "thinking", "thinking": "hmm", "signature": "s"}, "done"]),
        lc.AIMessageChunk("a chunk"),
        lc.ToolMessage("total 0", tool_call_id="call_1"),
        lc.ToolMessage("", tool_call_id="call_2", name="bash"),
        lc.ChatMessage("custom role", role="critic"),
        lc.FunctionMessage("result", name="f"),
    ]


def test_langchain_plain_messages_are_written_as_langchain_writes_them() -> None:
    """Plain LangChain messages are written without LangChain's converter; the dicts must be
    its own, and the others still go through it."""
    from ctxbudget.formats.langchain import _langchain, _plain_openai_dict
    from ctxbudget.messages import _thinking_to_reasoning

    lc = _langchain()
    samples = _langchain_samples()
    written = 0
    for m in samples:
        theirs = lc.convert_to_openai_messages([m])
        ours = _plain_openai_dict(m, lc)
        if ours is not None:
            written += 1
            assert [ours] == theirs, m
            assert list(ours) == list(theirs[0]), m  # key order too
    assert written == 9
    # A whole list: LangChain's dicts in order (thinking moved to reasoning_content, as
    # before), whichever way each message went.
    expected = lc.convert_to_openai_messages(samples)
    for m in expected:
        _thinking_to_reasoning(m)
    assert from_langchain(samples) == expected


def test_langchain_errors_name_the_message_in_the_whole_list() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    bad = lc.HumanMessage([{"type": "text", "x": 1}, {"type": "image_url"}])
    with pytest.raises(ValueError, match=r"messages\[2\]"):
        from_langchain([lc.HumanMessage("a"), lc.AIMessage("b"), bad])


# --------------------------------------------------------------------------- docs


@pytest.mark.parametrize(
    "name",
    [
        "ctxbudget.messages",
        "ctxbudget.request",
        "ctxbudget.budget",
        "ctxbudget.models",
        "ctxbudget.calibration",
    ],
)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags)
    assert result.attempted > 0
    assert result.failed == 0
