"""Responses input items of tool search, programmatic tool calling, tool loading, response
settings and compaction triggers.

Item shapes are checked against the installed ``openai`` SDK's input-item types (the
reference for what the API takes), not against ctxbudget's own output.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest
from openai.types.responses import ResponseToolSearchOutputItemParamParam
from openai.types.responses import response_input_param as rip
from pydantic import TypeAdapter

from ctxbudget import (
    ContextGuard,
    MessageFormatError,
    PruneConfig,
    compact,
    estimate_request,
    estimate_tokens,
    prune,
    validate_messages,
)
from ctxbudget.formats.openai_responses import _RESP_ITEM_TYPES

FMT = "openai_responses"
ITEM: TypeAdapter[Any] = TypeAdapter(rip.ResponseInputItemParam)
TOOLS = [
    {
        "type": "function",
        "name": f"crm_{i}",
        "description": "Look up a customer record by id and return its fields. " * 3,
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "customer id"}},
            "required": ["id"],
        },
    }
    for i in range(10)
]


def _search(execution: str = "client", call_id: str = "ts_call") -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": call_id,
        "arguments": {"query": "customer records"},
        "execution": execution,
        "status": "completed",
    }


def _search_output(execution: str = "client", call_id: str = "ts_call") -> dict[str, Any]:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": execution,
        "status": "completed",
        "tools": TOOLS,
    }


def _program(call_id: str = "prog_call", code: str = "return 1;") -> dict[str, Any]:
    return {
        "type": "program",
        "id": "prog_1",
        "call_id": call_id,
        "code": code,
        "fingerprint": "fp_0123",
    }


def _program_call(call_id: str = "c_prog", caller: str = "prog_call") -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "crm_0",
        "arguments": '{"id": "a"}',
        "caller": {"type": "program", "caller_id": caller},
    }


def _program_output(call_id: str = "prog_call", result: str = "Ada") -> dict[str, Any]:
    return {
        "type": "program_output",
        "id": "po_1",
        "call_id": call_id,
        "result": result,
        "status": "completed",
    }


def _history() -> list[dict[str, Any]]:
    """One run using every item type: tools loaded by a client-side search and by the
    developer, a program calling a function, a setting changed, a compaction asked for."""
    return [
        {"role": "user", "content": "Find Ada's customer record."},
        {"type": "additional_tools", "role": "developer", "tools": TOOLS[:2]},
        _search(),
        _search_output(),
        {"type": "function_call", "call_id": "c1", "name": "crm_1", "arguments": '{"id": "a"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "not found"},
        _program(),
        _program_call(),
        {"type": "function_call_output", "call_id": "c_prog", "output": '{"name": "Ada"}'},
        _program_output(),
        {"role": "assistant", "content": "Ada's record: name Ada."},
        {"type": "configuration_update", "reasoning": {"effort": "low"}},
        {"role": "user", "content": "Thanks."},
        {"type": "compaction_trigger"},
    ]


def _filler(n: int = 3) -> list[dict[str, Any]]:
    return [
        m
        for _ in range(n)
        for m in (
            {"role": "user", "content": "more " * 1000},
            {"role": "assistant", "content": "ok"},
        )
    ]


# --------------------------------------------------------------------- reading


def _literals(tp: Any) -> set[str]:
    """The string literals a type annotation allows (through Required, Optional, Union)."""
    if get_origin(tp) is Literal:
        return {a for a in get_args(tp) if isinstance(a, str)}
    return {lit for arg in get_args(tp) for lit in _literals(arg)}


#: Every input item type of the openai SDK 3.57 (``ResponseInputItemParam``), written out: a
#: later SDK may add types (the check below says which), and CI installs the latest one, so
#: the list that must be read is this one, not whatever is installed.
SDK_3_57_ITEM_TYPES = {
    "additional_tools", "apply_patch_call", "apply_patch_call_output", "code_interpreter_call",
    "compaction", "compaction_trigger", "computer_call", "computer_call_output",
    "configuration_update", "custom_tool_call", "custom_tool_call_output", "file_search_call",
    "function_call", "function_call_output", "image_generation_call", "item_reference",
    "local_shell_call", "local_shell_call_output", "mcp_approval_request", "mcp_approval_response",
    "mcp_call", "mcp_list_tools", "message", "program", "program_output", "reasoning",
    "shell_call", "shell_call_output", "tool_search_call", "tool_search_output", "web_search_call",
}  # fmt: skip


def test_every_input_item_type_of_the_sdk_is_known() -> None:
    sdk = {
        lit
        for item in get_args(rip.ResponseInputItemParam)
        for lit in _literals(get_type_hints(item, include_extras=True).get("type"))
    }
    assert sdk >= SDK_3_57_ITEM_TYPES, SDK_3_57_ITEM_TYPES - sdk  # the SDK is 3.57 or later
    assert SDK_3_57_ITEM_TYPES <= _RESP_ITEM_TYPES, SDK_3_57_ITEM_TYPES - _RESP_ITEM_TYPES


def test_every_item_type_is_read_through_the_public_api() -> None:
    history = _history()
    for item in history:  # the fixtures are what the API takes
        ITEM.validate_python(item)
    validate_messages(history, format=FMT)
    est = estimate_request(history, model="gpt-5")  # the format is told from the items
    assert est.format == FMT and len(est.per_message) == len(history)
    result = prune(history, window=400_000, format=FMT)
    assert result.messages == history and result.pruned == ()
    sent: list[Any] = []
    ContextGuard("gpt-5", window=400_000).send(lambda r: sent.append(r.messages), history)
    assert sent == [history]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"type": "program", "id": "p", "code": "x", "fingerprint": "f"}, "call_id"),
        (_program_output() | {"call_id": 7}, "call_id"),
        (_search() | {"call_id": {"a": 1}}, "call_id"),
        (_search_output() | {"tools": "crm_0"}, "tools"),
        ({"type": "additional_tools", "role": "developer"}, "tools"),
    ],
)
def test_a_malformed_item_is_named(item: dict[str, Any], field: str) -> None:
    history = [{"role": "user", "content": "go"}, item]
    with pytest.raises(MessageFormatError) as caught:
        validate_messages(history, format=FMT)
    assert (caught.value.index, caught.value.field) == (1, field)
    with pytest.raises(MessageFormatError) as caught:
        ContextGuard("gpt-5", window=400_000, format=FMT).send(lambda r: "ok", history)
    assert (caught.value.index, caught.value.field) == (1, field)


# --------------------------------------------------------------------- estimating


def _added_tokens(items: list[dict[str, Any]], **kwargs: Any) -> int:
    base = [{"role": "user", "content": "hi"}]
    with_items = estimate_request(base + items, model="gpt-5", format=FMT, **kwargs).total
    return with_items - estimate_request(base, model="gpt-5", format=FMT).total


@pytest.mark.parametrize(
    "item",
    [{"type": "additional_tools", "role": "developer", "tools": TOOLS}, _search_output()],
    ids=["additional_tools", "tool_search_output"],
)
def test_loaded_tool_definitions_are_counted_as_tools_are(item: dict[str, Any]) -> None:
    as_tools = _added_tokens([], tools=TOOLS)
    as_item = _added_tokens([item] if item["type"] != "tool_search_output" else [_search(), item])
    assert as_tools > 500
    assert 0.9 * as_tools <= as_item <= 1.5 * as_tools


def test_a_programs_code_is_counted() -> None:
    code = "const r = await tools.crm_0({id: 'a'});\n" * 200
    tokens = estimate_tokens(code, "o200k_base")
    assert tokens <= _added_tokens([_program(code=code)]) <= 1.5 * tokens


# --------------------------------------------------------------------- pairing


def test_an_unanswered_client_tool_search_gets_an_empty_output_of_its_type() -> None:
    history = [{"role": "user", "content": "go"}, _search(), {"role": "user", "content": "?"}]
    result = prune(history, window=32_000, format=FMT)
    assert [(p.call_id, p.kind) for p in result.pruned] == [("ts_call", "missing")]
    added = result.messages[2]
    TypeAdapter(ResponseToolSearchOutputItemParamParam).validate_python(added)
    assert (added["call_id"], added["tools"]) == ("ts_call", [])
    sent: list[Any] = []
    ContextGuard("gpt-5", window=400_000).send(lambda r: sent.append(r.messages), history)
    assert sent[0] == result.messages


def test_a_server_tool_search_needs_no_output_from_the_client() -> None:
    """The server runs it and writes its output: a call left without one (an incomplete
    response) is not the client's to answer, and a server output pairs with no call."""
    history = [
        {"role": "user", "content": "go"},
        _search("server"),
        {"role": "user", "content": "-"},
    ]
    assert prune(history, window=32_000, format=FMT).messages == history
    for h in (history, [history[0], _search_output("server")]):
        ContextGuard("gpt-5", window=400_000).send(lambda r: "ok", h)


def test_a_running_program_is_sent_as_it_is() -> None:
    """A program waiting for its tool calls' outputs has no ``program_output`` yet: the
    server writes it once the program ends. No output is made up for it, whatever follows."""
    history = [
        {"role": "user", "content": "go"},
        _program(),
        _program_call(),
        {"type": "function_call_output", "call_id": "c_prog", "output": '{"name": "Ada"}'},
    ]
    for h in (history, [*history, {"role": "user", "content": "stop"}]):
        assert prune(h, window=32_000, format=FMT, run_start=True).messages == h
        result = ContextGuard("gpt-5", window=400_000).send(lambda r: "ok", h)
        assert result.request.messages == h


def _summarize(prompt: str, max_tokens: int) -> str:
    return "Summary: the user asked for records."


def _kept_tail(history: list[dict[str, Any]], keep_tokens: int) -> list[dict[str, Any]]:
    out = compact(history, _summarize, window=400_000, format=FMT, keep_tokens=keep_tokens)
    assert out.messages[-1] is history[-1]
    return out.messages


@pytest.mark.parametrize("keep_tokens", [1, 40, 80, 120, 200])
def test_compaction_keeps_a_program_with_its_calls_and_output(keep_tokens: int) -> None:
    program = [
        _program(),
        _program_call(),
        {"type": "function_call_output", "call_id": "c_prog", "output": "x " * 50},
        _program_call("c_prog2"),
        {"type": "function_call_output", "call_id": "c_prog2", "output": "y " * 50},
        _program_output(),
    ]
    done = {"type": "message", "role": "assistant", "content": "done"}
    history = [*_filler(), {"role": "user", "content": "go"}, *program, done]
    kept = _kept_tail(history, keep_tokens)
    found = [any(m is item for m in kept) for item in program]
    assert all(found) or not any(found), found


def test_compaction_keeps_a_running_program_with_its_calls() -> None:
    output = {"type": "function_call_output", "call_id": "c_prog", "output": "x " * 50}
    history = [*_filler(), {"role": "user", "content": "go"}, _program(), _program_call(), output]
    kept = _kept_tail(history, 60)
    assert any(m is history[-3] for m in kept)


@pytest.mark.parametrize(
    "item",
    [
        {"type": "additional_tools", "role": "developer", "tools": TOOLS[:2]},
        {"type": "configuration_update", "reasoning": {"effort": "low"}},
    ],
    ids=["additional_tools", "configuration_update"],
)
def test_compaction_keeps_loaded_tools_and_settings(item: dict[str, Any]) -> None:
    """They stay in effect for the rest of the conversation: a summary in their place would
    drop tools the model may call, or the settings the next responses are made with."""
    history = [*_filler(2), item, *_filler(2)]
    out = compact(history, _summarize, window=400_000, format=FMT, keep_tokens=100)
    assert out.summarized >= 5
    assert any(m is item for m in out.messages)


# --------------------------------------------------------------------- pruning


def test_old_loaded_tools_and_program_results_are_left_whole() -> None:
    """Tool definitions are not text the model read once: emptying a tool search's output
    would unload tools later calls use. A program's output is the server's, bound to the
    program it replays. The function output beside them is pruned."""
    big = _program_output(result="r " * 3000)
    history = [
        {"role": "user", "content": "go"},
        _search(),
        _search_output() | {"tools": TOOLS * 5},
        _program(),
        big,
        {"type": "function_call", "call_id": "c1", "name": "crm_1", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "z " * 3000},
        *_filler(),
    ]
    config = PruneConfig(threshold=100, tail_max=2_000, min_turns=0)
    result = prune(history, window=12_000, format=FMT, config=config)
    assert [(p.call_id, p.kind) for p in result.pruned] == [("c1", "old")]
    assert result.messages[2] is history[2] and result.messages[4] is big


# --------------------------------------------------------------------- compaction_trigger


def test_an_output_added_before_a_compaction_trigger_leaves_it_last() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "crm_1", "arguments": "{}"}
    history = [{"role": "user", "content": "go"}, call, {"type": "compaction_trigger"}]
    result = prune(history, window=32_000, format=FMT, run_start=True)
    assert [m["type"] for m in result.messages[1:]] == [
        "function_call",
        "function_call_output",
        "compaction_trigger",
    ]


@pytest.mark.parametrize("keep_tokens", [1, 100, 2_000])
def test_compaction_leaves_a_compaction_trigger_last(keep_tokens: int) -> None:
    history = [*_filler(), *_history()]
    assert _kept_tail(history, keep_tokens)[-1] == {"type": "compaction_trigger"}
