"""Malformed messages and tools fail with a MessageFormatError naming the index and field.

A wrong type in a media field, a tool-call argument or tool schema that JSON cannot write
(bytes, a set, a tuple key, an integer too long to write, a lone surrogate) used to surface as
a bare AttributeError, TypeError, ValueError or UnicodeEncodeError from deep inside the
estimator; valid input next to them estimates as before.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import reduce
from typing import Any

import pytest

from ctxbudget.messages import MessageFormatError
from ctxbudget.request import estimate_request

#: A valid first message in each model's format: the malformed one comes second, so the
#: error must name index 1.
_FIRST = {
    "gpt-4o": {"role": "user", "content": "Hi."},
    "gpt-5": {"role": "user", "content": [{"type": "input_text", "text": "Hi."}]},
    "claude-sonnet-4-5": {"role": "user", "content": "Hi."},
    "gemini-2.5-pro": {"role": "user", "parts": [{"text": "Hi."}]},
}

_BIG = 10**5000  # more digits than Python writes as text (sys.get_int_max_str_digits)


def _tool_use(value: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "bash", "input": value}
    return {"role": "assistant", "content": [block]}


def _function_call(value: Any) -> dict[str, Any]:
    return {"role": "model", "parts": [{"function_call": {"name": "bash", "args": value}}]}


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


# (model, bad message, field, text the reason holds)
MESSAGES: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "chat file_data not a string": (
        "gpt-4o",
        _user({"type": "file", "file": {"file_data": 5}}),
        "content[0].file.file_data",
        "expected a string",
    ),
    "chat file_id not a string": (
        "gpt-4o",
        _user({"type": "file", "file": {"file_id": 5}}),
        "content[0].file.file_id",
        "expected a string",
    ),
    "responses image_url not a string": (
        "gpt-5",
        _user({"type": "input_image", "image_url": 5}),
        "content[0].image_url",
        "expected a string",
    ),
    "responses file_data not a string": (
        "gpt-5",
        _user({"type": "input_file", "file_data": {}}),
        "content[0].file_data",
        "expected a string",
    ),
    "gemini file_data mime_type not a string": (
        "gemini-2.5-pro",
        {"role": "user", "parts": [{"file_data": {"file_uri": "gs://b/f", "mime_type": 5}}]},
        "parts[0].file_data.mime_type",
        "expected a string",
    ),
    "anthropic tool_use input bytes": (
        "claude-sonnet-4-5",
        _tool_use({"n": b"x"}),
        "content[0].input.n",
        "not a JSON value: bytes",
    ),
    "anthropic tool_use input set": (
        "claude-sonnet-4-5",
        _tool_use({"n": [1, {"s": {1, 2}}]}),
        "content[0].input.n[1].s",
        "not a JSON value: set",
    ),
    "anthropic tool_use input tuple key": (
        "claude-sonnet-4-5",
        _tool_use({(1, 2): 3}),
        "content[0].input.(1, 2)",
        "a key of type tuple",
    ),
    "anthropic tool_use input huge int": (
        "claude-sonnet-4-5",
        _tool_use({"n": _BIG}),
        "content[0].input.n",
        "integer too long",
    ),
    "anthropic tool_use input surrogate key": (
        "claude-sonnet-4-5",
        _tool_use({"ok": {"\ud800": "v"}}),
        "content[0].input.ok.\ud800",
        "lone surrogate",
    ),
    "anthropic verbatim block tuple key": (
        "claude-sonnet-4-5",
        _user({"type": "search_result", "source": "s", "x": {(1, 2): 3}}),
        "content[0].x.(1, 2)",
        "a key of type tuple",
    ),
    "gemini function_call args bytes": (
        "gemini-2.5-pro",
        _function_call({"n": b"x"}),
        "parts[0].function_call.args.n",
        "not a JSON value: bytes",
    ),
    "gemini function_call args set": (
        "gemini-2.5-pro",
        _function_call({"n": {1}}),
        "parts[0].function_call.args.n",
        "not a JSON value: set",
    ),
    "gemini function_call args tuple key": (
        "gemini-2.5-pro",
        _function_call({(1, 2): 3}),
        "parts[0].function_call.args.(1, 2)",
        "a key of type tuple",
    ),
    "gemini function_call args huge int": (
        "gemini-2.5-pro",
        _function_call({"n": _BIG}),
        "parts[0].function_call.args.n",
        "integer too long",
    ),
    "gemini function_call args surrogate key": (
        "gemini-2.5-pro",
        _function_call({"\ud800": 1}),
        "parts[0].function_call.args.\ud800",
        "lone surrogate",
    ),
    "gemini verbatim part huge int": (
        "gemini-2.5-pro",
        {"role": "user", "parts": [{"executable_code": {"code": "x", "n": _BIG}}]},
        "parts[0].executable_code.n",
        "integer too long",
    ),
    "responses verbatim item tuple key": (
        "gpt-5",
        {"type": "web_search_call", "id": "ws_1", "action": {(1, 2): 3}},
        "action.(1, 2)",
        "a key of type tuple",
    ),
}


@pytest.mark.parametrize("case", list(MESSAGES))
def test_malformed_message_names_index_and_field(case: str) -> None:
    model, bad, field, reason = MESSAGES[case]
    with pytest.raises(MessageFormatError, match=reason) as caught:
        estimate_request([_FIRST[model], bad], model=model)
    assert (caught.value.index, caught.value.field) == (1, field)
    assert f"message 1, field {field!r}" in str(caught.value)


def test_responses_audio_data_not_a_string() -> None:
    """Chat has ``input_audio`` parts too, so the format is given, not detected."""
    bad = _user({"type": "input_audio", "input_audio": {"data": 5, "format": "wav"}})
    with pytest.raises(MessageFormatError, match="expected a string") as caught:
        estimate_request([bad], model="gpt-5", format="openai_responses")
    assert (caught.value.index, caught.value.field) == (0, "content[0].input_audio.data")


def _chat_tool(parameters: Any, description: Any = "Run it.") -> dict[str, Any]:
    function = {"name": "bash", "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


_GOOD_TOOL = _chat_tool({"type": "object", "properties": {"cmd": {"type": "string"}}})

# (bad tool, field, text the reason holds)
TOOLS: dict[str, tuple[Any, str, str]] = {
    "schema tuple key": (_chat_tool({(1, 2): 3}), "function.parameters.(1, 2)", "tuple"),
    "schema huge int": (_chat_tool({"maximum": _BIG}), "function.parameters.maximum", "too long"),
    "schema bytes": (_chat_tool({"default": b"x"}), "function.parameters.default", "bytes"),
    "schema set": (_chat_tool({"enum": {"a", "b"}}), "function.parameters.enum", "set"),
    "schema surrogate key": (_chat_tool({"\ud800": 1}), "function.parameters.\ud800", "surrogate"),
    "description surrogate": (_chat_tool({}, "a \ud800"), "function.description", "surrogate"),
    "responses shape": (
        {"type": "function", "name": "f", "parameters": {"p": [b"x"]}},
        "parameters.p[0]",
        "bytes",
    ),
    "anthropic shape": ({"name": "f", "input_schema": {"x": {1}}}, "input_schema.x", "set"),
    "anthropic shape without name": ({"input_schema": {}}, "name", "missing"),
    "gemini declarations not a list": (
        {"function_declarations": 5},
        "function_declarations",
        "list",
    ),
    "gemini declaration not an object": (
        {"function_declarations": [5]},
        "function_declarations[0]",
        "expected a function declaration object",
    ),
    "gemini declaration schema": (
        {"function_declarations": [{"name": "f", "parameters_json_schema": {"n": _BIG}}]},
        "function_declarations[0].parameters_json_schema.n",
        "too long",
    ),
    "built-in tool tuple key": ({"type": "web_search", "x": {(1,): 1}}, "x.(1,)", "tuple"),
}


@pytest.mark.parametrize("case", list(TOOLS))
def test_malformed_tool_names_index_and_field(case: str) -> None:
    bad, field, reason = TOOLS[case]
    with pytest.raises(MessageFormatError, match=reason) as caught:
        estimate_request([_FIRST["gpt-4o"]], model="gpt-4o", tools=[_GOOD_TOOL, bad])
    assert (caught.value.index, caught.value.field) == (1, f"tools[1].{field}")


def test_tool_schema_nested_too_deep_is_refused_not_a_recursion_error() -> None:
    schema = reduce(lambda inner, _: {"items": inner}, range(1_200), {})
    with pytest.raises(MessageFormatError, match="nested deeper") as caught:
        estimate_request([_FIRST["gpt-4o"]], model="gpt-4o", tools=[_chat_tool(schema)])
    assert caught.value.field == "tools[0].function.parameters"


def _args_total(model: str, make: Any, args: Any) -> int:
    return estimate_request([_FIRST[model], make(args)], model=model).total


@pytest.mark.parametrize(
    ("model", "make"),
    [("claude-sonnet-4-5", _tool_use), ("gemini-2.5-pro", _function_call)],
)
def test_valid_arguments_estimate_as_their_json_text(model: str, make: Any) -> None:
    """What JSON writes alike counts alike: a tuple as a list, an OrderedDict as a dict, an
    int, float, bool or None key as its text; long (but writable) integers, non-ASCII text
    and nesting to the limit are accepted."""
    plain = {"a": [1, 2], "b": {"c": None}, "1": "x", "2.5": True, "false": 0, "null": 1}
    alike = OrderedDict(
        [("a", (1, 2)), ("b", OrderedDict(c=None)), (1, "x"), (2.5, True), (False, 0), (None, 1)]
    )
    assert _args_total(model, make, alike) == _args_total(model, make, plain)
    deep = reduce(lambda inner, _: {"k": inner}, range(255), {})
    for valid in ({"n": 2**6000}, {"t": "héllo 你好 🙂"}, deep):
        assert _args_total(model, make, valid) > 0


def test_valid_tool_schemas_estimate_as_before() -> None:
    """Tool schemas with any JSON value (non-ASCII text, long writable integers, int keys)
    still estimate; what JSON writes alike counts alike."""
    plain = _chat_tool({"type": "object", "1": {"maximum": 2**3000}, "d": "ü 你好"})
    alike = _chat_tool({"type": "object", 1: {"maximum": 2**3000}, "d": "ü 你好"})
    msgs = [_FIRST["gpt-4o"]]
    assert estimate_request(msgs, model="gpt-4o", tools=[plain]).tools > 0
    assert (
        estimate_request(msgs, model="gpt-4o", tools=[alike]).tools
        == estimate_request(msgs, model="gpt-4o", tools=[plain]).tools
    )


@pytest.mark.parametrize(
    ("system", "field"),
    [("Be brief.\ud800", "system"), ([{"type": "text", "text": "x\ud800"}], "system[0].text")],
    ids=["str", "blocks"],
)
def test_system_prompt_without_a_utf8_form_names_the_field(system: Any, field: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        estimate_request([_FIRST["claude-sonnet-4-5"]], system=system, model="claude-sonnet-4-5")
    assert caught.value.field == field and "lone surrogate" in str(caught.value)


def test_a_key_without_a_utf8_form_is_named_escaped() -> None:
    response = {"function_response": {"name": "b", "response": {"ok\ud800": 1}}}
    with pytest.raises(MessageFormatError) as caught:
        estimate_request([{"role": "user", "parts": [response]}], model="gemini-2.5-pro")
    assert caught.value.field == "parts[0].function_response.response.ok\\ud800"
    str(caught.value).encode("utf-8")  # the error itself can be printed and logged


def test_a_block_kept_verbatim_may_have_a_key_that_is_not_text() -> None:
    block = {"type": "search_result", "source": "s", "title": "t", "content": [], 1: 3}
    est = estimate_request([{"role": "user", "content": [block]}], model="claude-sonnet-4-5")
    assert est.total > 0
