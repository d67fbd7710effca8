"""The core's JSON text of tool-call inputs: ``json.dumps(value, ensure_ascii=False)``, to the
character, for every plain JSON value (the walks of Anthropic and Gemini messages count it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget._core import json_text_of
from ctxbudget.request import estimate_request

#: Strings with what the encoder escapes (quotes, backslashes, every control character),
#: non-ASCII text, and lone surrogates (no UTF-8 form: Python's encoder writes them).
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from(list('"\\\b\f\n\r\t\x00\x1f\x7f\u2028é中😀')),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(),
    ),
    max_size=12,
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
KEYS = st.one_of(TEXT, st.integers(-5, 5), st.booleans(), st.none(), st.floats(-2, 2))
PLAIN = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=24,
)


def _dumps(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


@settings(max_examples=3000, deadline=None)
@given(PLAIN)
def test_plain_values_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert json_text_of(value) == _dumps(value)


class Text(str):
    pass


class Number(int):
    pass


def _nested(lists: int) -> Any:
    """A string in ``lists`` lists, one in the other."""
    value: Any = "leaf"
    for _ in range(lists):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"a": Text("subclass of str")},
        {"n": Number(3)},
        [1, {2, 3}],
        {"x": b"bytes"},
        {"after a float": [1.5, object()]},  # given up on at the float, still not plain
        {1: object()},  # given up on at the key, still not plain
        _nested(257),  # the Python readers' depth limit
    ],
)
def test_values_that_are_not_plain_json_are_refused(value: Any) -> None:
    assert json_text_of(value) is None


def test_the_depth_limit_is_the_python_readers() -> None:
    assert json_text_of(_nested(256)) == json.dumps(_nested(256))


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_a_tool_call_input_counts_its_json_text(fmt: str) -> None:
    """Through the walks: the input's text is what is counted (a longer string, more)."""

    def request(command: str) -> int:
        args = {"command": command, "timeout": 30, "flags": [True, None]}
        if fmt == "anthropic":
            call = {"type": "tool_use", "id": "t1", "name": "bash", "input": args}
            msgs = [
                {"role": "user", "content": "Run it."},
                {"role": "assistant", "content": [call]},
            ]
        else:
            call = {"function_call": {"name": "bash", "args": args}}
            msgs = [
                {"role": "user", "parts": [{"text": "Run it."}]},
                {"role": "model", "parts": [call]},
            ]
        return estimate_request(msgs, model="gpt-4o", format=fmt).components.conversation

    short, longer = request("ls"), request("ls -la /tmp/some/where && cat notes.txt")
    assert longer > short
