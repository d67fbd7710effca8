"""Malformed input named by a clear error, never an internal one (SPEC I1), from a fuzz run:
each case below raised AttributeError, IndexError, RecursionError, UnicodeEncodeError or
OverflowError from inside the library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ctxbudget
from ctxbudget import (
    ContextGuard,
    ContextWindowBudget,
    GuardedRequest,
    estimate_request,
    select_largest,
    validate_pairing,
)
from ctxbudget.call_ids import unique_call_ids
from ctxbudget.messages import MessageFormatError, validate_messages
from ctxbudget.prune import prune


def _send(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


BAD_FUNCTION = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": 5}],
    },
]


@pytest.mark.parametrize(
    "call",
    [
        lambda: ContextGuard("gpt-4o").send(_send, BAD_FUNCTION),
        lambda: estimate_request(
            [{"role": "assistant", "content": None, "tool_calls": [np.float64(1.0)]}]
        ),
        lambda: validate_messages([{"role": _deep(10_000), "content": "hi"}]),
        lambda: estimate_request([{"role": _deep(10_000), "content": "hi"}]),
        lambda: estimate_request(
            [{"role": "user", "content": [{"type": "image", "source": _deep(10_000)}]}]
        ),
    ],
)
def test_malformed_messages_are_message_format_errors(call: Callable[[], Any]) -> None:
    with pytest.raises(MessageFormatError) as caught:
        call()
    assert len(str(caught.value)) < 300  # a huge or deep value is shown cut short


def test_renaming_ids_leaves_malformed_calls_to_the_checks() -> None:
    assert unique_call_ids(BAD_FUNCTION) == BAD_FUNCTION


def test_a_long_wrong_role_is_shown_cut_short() -> None:
    with pytest.raises(MessageFormatError, match="role") as caught:
        validate_messages([{"role": "x" * 10_000_000, "content": "hi"}])
    assert len(str(caught.value)) < 300


def test_an_id_without_utf8_form_is_paired_as_written() -> None:
    assert validate_pairing([(0, "call", "\ud800"), (1, "result", "\ud800")]) == []
    (missing,) = validate_pairing([(0, "call", "\ud800")])
    assert missing.call_id == "\ud800"
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "\ud800", "content": "out"},
        {"role": "assistant", "content": "ok"},
    ]
    assert prune(chat, window=16_000, model="gpt-4o").fits


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: ctxbudget.encoding_for_model(None), TypeError),
        (lambda: estimate_request([{"role": "user", "content": "x"}], model=1), TypeError),
        (lambda: ContextWindowBudget(float("nan")), TypeError),
        (lambda: ContextWindowBudget(True), TypeError),
        (lambda: ctxbudget.register_model("fz", window=float("inf")), TypeError),
        (lambda: select_largest([1, 2], 10, protected=[2**100]), ValueError),
        (
            lambda: ContextGuard("gpt-4o").send(
                _send, [{"role": "user", "content": "x"}], max_tokens=float("inf")
            ),
            TypeError,
        ),
        (
            lambda: ContextGuard("gpt-4o").send(
                _send, [{"role": "user", "content": "x"}], max_tokens="100"
            ),
            TypeError,
        ),
    ],
)
def test_arguments_of_the_wrong_kind_are_named(
    call: Callable[[], Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        call()


def test_a_need_beyond_64_bits_selects_everything() -> None:
    chosen = select_largest([1, 2], 2**63)
    assert chosen.indices == [1, 0] and chosen.shortfall == 2**63 - 3


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"head_lines": 2**100}, ValueError),
        ({"threshold": float("nan")}, TypeError),
        ({"head_chars": True}, TypeError),
    ],
)
def test_prune_config_numbers_are_checked(fields: dict[str, Any], error: type[Exception]) -> None:
    # head_lines=2**100 failed later with OverflowError; a NaN threshold passed silently.
    from ctxbudget.prune import PruneConfig

    with pytest.raises(error):
        PruneConfig(**fields)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": _deep(10_000)},  # too deep to write as JSON
        {"type": "server_tool_use", "input": {"q": "\udc80"}},  # no UTF-8 form
    ],
)
def test_a_bad_block_kept_as_it_is_names_its_message(block: dict[str, Any]) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [block]},
    ]
    with pytest.raises(MessageFormatError, match=r"^message 2, ") as caught:
        estimate_request(messages, format="anthropic")
    assert caught.value.index == 2
