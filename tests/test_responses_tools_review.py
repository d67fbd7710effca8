"""Responses tool items other than ``function_call``, and call ids that are not strings.

Item shapes are checked against the installed ``openai`` SDK's input-item types (the
reference for what the API takes), not against ctxbudget's own output.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import ResponseCustomToolCallOutputParam
from openai.types.responses import response_input_param as rip
from pydantic import TypeAdapter

from ctxbudget import ContextGuard, MessageFormatError, PruneConfig, prune
from ctxbudget.call_ids import unique_call_ids
from ctxbudget.stubs import replace_results, result_message, stub_text
from ctxbudget.turns import ScanCache, result_text, scan

FMT = "openai_responses"

#: The SDK's type of each call item's output.
OUTPUT_TYPES: dict[str, Any] = {
    "function_call_output": rip.FunctionCallOutput,
    "custom_tool_call_output": ResponseCustomToolCallOutputParam,
    "local_shell_call_output": rip.LocalShellCallOutput,
    "shell_call_output": rip.ShellCallOutput,
    "apply_patch_call_output": rip.ApplyPatchCallOutput,
    "computer_call_output": rip.ComputerCallOutput,
}


def _local_shell(i: int, call_id: str = "call_1") -> dict[str, Any]:
    action = {"type": "exec", "command": ["ls"], "env": {}}
    return {
        "type": "local_shell_call",
        "id": f"lsh_{i}",
        "call_id": call_id,
        "status": "completed",
        "action": action,
    }


def _local_shell_output(text: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "local_shell_call_output", "id": call_id, "output": text}


CALLS: dict[str, dict[str, Any]] = {
    "function_call": {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
    "custom_tool_call": {
        "type": "custom_tool_call",
        "call_id": "c1",
        "name": "patch",
        "input": "*** Begin Patch",
    },
    "local_shell_call": _local_shell(1, "c1"),
    "computer_call": {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "c1",
        "status": "completed",
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
    },
}


def _check_output(item: dict[str, Any], call_id: str) -> None:
    """``item`` is a valid SDK output item that answers ``call_id``."""
    kind = item["type"]
    TypeAdapter(OUTPUT_TYPES[kind]).validate_python(item)
    assert item["id" if kind == "local_shell_call_output" else "call_id"] == call_id


# --------------------------------------------------------------------- local_shell_call_output


def test_local_shell_output_answers_its_call() -> None:
    history = [{"role": "user", "content": "ls"}, _local_shell(1), _local_shell_output("a.py")]
    infos = scan(history, FMT)
    assert infos[2].kind == "results"
    assert [r[0] for r in infos[2].results] == ["call_1"]


def test_guard_adds_no_stub_before_a_local_shell_output() -> None:
    history = [
        {"role": "user", "content": "ls"},
        _local_shell(1),
        _local_shell_output('{"output": "a.py"}'),
        {"role": "user", "content": "thanks"},
    ]
    sent: list[list[Any]] = []

    def send(request: Any) -> dict[str, Any]:
        sent.append(request.messages)
        return {}

    ContextGuard("gpt-4o", window=32_000).send(send, history)
    assert sent[0] == history


def test_edited_local_shell_output_id_is_noticed() -> None:
    history = [{"role": "user", "content": "ls"}, _local_shell(1), _local_shell_output("a.py")]
    cache = ScanCache(FMT)
    cache.scan(history)
    history[2]["id"] = "call_9"
    assert cache.scan(history)[2].results[0][0] == "call_9"


def test_reused_local_shell_ids_are_renamed_in_the_output_too() -> None:
    history = [
        {"role": "user", "content": "ls"},
        _local_shell(1, "call_0"),
        _local_shell_output("a", "call_0"),
        _local_shell(2, "call_0"),
        _local_shell_output("b", "call_0"),
    ]
    out = unique_call_ids(history, FMT)
    assert out[3]["call_id"] == out[4]["id"] != "call_0"
    assert out[3]["id"] == "lsh_2"  # the item's own id is not the call's
    assert history[4]["id"] == "call_0"


def test_old_local_shell_output_is_stubbed_in_its_own_shape() -> None:
    filler = [
        m
        for _ in range(3)
        for m in (
            {"role": "user", "content": "more " * 1000},
            {"role": "assistant", "content": "ok"},
        )
    ]
    history = [{"role": "user", "content": "ls"}, _local_shell(1), _local_shell_output("x " * 3000)]
    config = PruneConfig(threshold=100, tail_max=2_000, min_turns=0)
    result = prune(history + filler, window=12_000, format=FMT, config=config)
    assert [(p.call_id, p.kind) for p in result.pruned] == [("call_1", "old")]
    stub = result.messages[2]
    _check_output(stub, "call_1")
    assert stub["output"].startswith("[ctxbudget: tool output pruned]")


# --------------------------------------------------------------------- missing outputs


@pytest.mark.parametrize("call_type", sorted(CALLS))
def test_missing_output_has_the_call_items_type(call_type: str) -> None:
    history = [
        {"role": "user", "content": "go"},
        CALLS[call_type],
        {"role": "user", "content": "?"},
    ]
    result = prune(history, window=32_000, format=FMT)
    assert [(p.call_id, p.kind) for p in result.pruned] == [("c1", "missing")]
    added = result.messages[2]
    assert added["type"] == f"{call_type}_output"
    _check_output(added, "c1")


@pytest.mark.parametrize(
    "call_type",
    [
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
    ],
)
def test_missing_output_item_is_valid_for_the_sdk(call_type: str) -> None:
    item = result_message(FMT, "c1", "tool", "[ctxbudget: no tool output] ...", call_type)
    assert item["type"] == f"{call_type}_output"
    _check_output(item, "c1")


# --------------------------------------------------------------------- unhashable ids

UNHASHABLE = {
    "openai_chat": (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": ["a"], "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        "tool_calls[0].id",
    ),
    FMT: (
        {"type": "function_call", "call_id": {"a": 1}, "name": "ls", "arguments": "{}"},
        "call_id",
    ),
    "anthropic": (
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": ["a"], "name": "ls", "input": {}}],
        },
        "content[0].id",
    ),
    "gemini": (
        {"role": "model", "parts": [{"function_call": {"id": ["a"], "name": "ls", "args": {}}}]},
        "parts[0].function_call.id",
    ),
}


def _first(fmt: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": "go"}]}
    return {"role": "user", "content": "go"}


@pytest.mark.parametrize("fmt", sorted(UNHASHABLE))
def test_unhashable_call_id_is_a_format_error(fmt: str) -> None:
    call, field = UNHASHABLE[fmt]
    history = [_first(fmt), call]
    with pytest.raises(MessageFormatError) as caught:
        unique_call_ids(history, fmt)
    assert (caught.value.index, caught.value.field) == (1, field)
    guard = ContextGuard("gpt-4o", window=32_000, format=fmt)
    with pytest.raises(MessageFormatError) as caught:
        guard.send(lambda r: {}, history)
    assert (caught.value.index, caught.value.field) == (1, field)


# --------------------------------------------------------------------- shell_call_output


def _shell_output() -> dict[str, Any]:
    chunks = [
        {"stdout": "a.py\n" * 500, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "warning: slow disk", "outcome": {"type": "exit", "exit_code": 1}},
    ]
    return {"type": "shell_call_output", "call_id": "c1", "output": chunks}


def test_shell_output_text_is_its_stdout_and_stderr() -> None:
    text, other = result_text(FMT, _shell_output(), 0)
    assert text.startswith("a.py\n") and text.endswith("warning: slow disk")
    assert (text.count("a.py"), other) == (500, 0)


def test_shell_output_stub_keeps_the_shell_output_shape() -> None:
    original = _shell_output()
    text, _ = result_text(FMT, original, 0)
    stub = stub_text("shell", text, 1_500)
    new = replace_results(FMT, original, {0: stub})
    _check_output(new, "c1")
    assert new["output"] == [
        {"stdout": stub, "stderr": "", "outcome": {"type": "exit", "exit_code": 1}}
    ]
    assert result_text(FMT, new, 0) == (stub, 0)
    assert len(original["output"]) == 2  # the caller's item is not changed


def _shell_and_patch_history() -> list[dict[str, Any]]:
    shell = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "c1",
        "status": "completed",
        "action": {"commands": ["ls"], "timeout_ms": 1000, "max_output_length": 4096},
    }
    patch = {
        "type": "apply_patch_call",
        "id": "ap_1",
        "call_id": "c2",
        "status": "completed",
        "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-x = 1\n+x = 2\n"},
    }
    patch_output = {"type": "apply_patch_call_output", "call_id": "c2", "status": "completed"}
    return [
        {"role": "user", "content": "List the files, then fix a.py."},
        shell,
        _shell_output(),
        patch,
        patch_output,
        {"role": "user", "content": "Thanks."},
    ]


def test_shell_and_apply_patch_histories_are_read() -> None:
    from ctxbudget import estimate_request, validate_messages

    history = _shell_and_patch_history()
    validate_messages(history, format=FMT)
    est = estimate_request(history, model="gpt-5")
    assert est.format == FMT and len(est.per_message) == 6
    # The shell output is the largest part of the request: its text is counted.
    assert est.per_message[2] > 500
    result = ContextGuard("gpt-5", window=400_000).send(lambda request: "ok", history)
    assert result.request.messages == history


def test_a_shell_call_left_unanswered_gets_a_shell_output_stub() -> None:
    history = _shell_and_patch_history()
    del history[2]  # the shell call's output was lost
    view = prune(history, window=400_000, format=FMT).messages
    stub = view[2]
    assert stub["type"] == "shell_call_output"
    _check_output(stub, "c1")
