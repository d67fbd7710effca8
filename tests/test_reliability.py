"""SPEC I1-I3, D1, E3: bad input gets a clear exception, history is never mutated, threads are safe.

Every check goes through the public API (``import ctxbudget``). "Clear" means a ``TypeError`` or
``ValueError`` subclass (``MessageFormatError`` naming message index and field for a bad message),
never a ``RecursionError``, a bare ``KeyError``/``AttributeError`` from deep inside, or a Rust
``PanicException``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxbudget as cb
from ctxbudget import CompactionError, MessageFormatError

FORMATS = ("openai_chat", "openai_responses", "anthropic", "gemini")
DEEP = 10_000


def _deep_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        child: dict[str, Any] = {}
        node["a"] = child
        node = child
    return root


def _deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


_DEEP_JSON = "[" * DEEP + "]" * DEEP


def _conversation(fmt: str, turns: int = 6, output: str = "line of output\n" * 200) -> list[Any]:
    """A small agent run in ``fmt``: question, tool call, tool result, answer, per turn."""
    msgs: list[Any] = []
    for i in range(turns):
        cid = f"call_{i}"
        if fmt == "openai_chat":
            msgs += [
                {"role": "user", "content": [{"type": "text", "text": f"question {i}"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"cmd": ["ls", "-l"]}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": cid, "content": output},
                {"role": "assistant", "content": f"answer {i}"},
            ]
        elif fmt == "openai_responses":
            msgs += [
                {"role": "user", "content": [{"type": "input_text", "text": f"question {i}"}]},
                {
                    "type": "function_call",
                    "call_id": cid,
                    "name": "bash",
                    "arguments": '{"cmd": ["ls"]}',
                },
                {"type": "function_call_output", "call_id": cid, "output": output},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"answer {i}"}],
                },
            ]
        elif fmt == "anthropic":
            msgs += [
                {"role": "user", "content": [{"type": "text", "text": f"question {i}"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": ["ls"]}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": cid,
                            "content": [{"type": "text", "text": output}],
                        },
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                        },
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]},
            ]
        else:
            msgs += [
                {"role": "user", "parts": [{"text": f"question {i}"}]},
                {
                    "role": "model",
                    "parts": [{"function_call": {"id": cid, "name": "bash", "args": {"c": [1]}}}],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "function_response": {
                                "id": cid,
                                "name": "bash",
                                "response": {"result": output},
                            }
                        }
                    ],
                },
                {"role": "model", "parts": [{"text": f"answer {i}"}]},
            ]
    return msgs


def _deep_conversation(fmt: str) -> tuple[list[Any], int, str]:
    """A conversation whose message 1 nests 10,000 deep; (messages, index, field prefix)."""
    if fmt == "openai_chat":
        call = {"id": "c", "type": "function", "function": {"name": "x", "arguments": _DEEP_JSON}}
        msgs: list[Any] = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
        return msgs, 1, "tool_calls[0].function.arguments"
    if fmt == "openai_responses":
        msgs = [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "x", "arguments": _DEEP_JSON},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
        ]
        return msgs, 1, "arguments"
    if fmt == "anthropic":
        use = {"type": "tool_use", "id": "c", "name": "x", "input": _deep_dict(DEEP)}
        msgs = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]},
        ]
        return msgs, 1, "content[0].input"
    msgs = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"function_call": {"name": "x", "args": _deep_dict(DEEP)}}]},
        {"role": "user", "parts": [{"function_response": {"name": "x", "response": {}}}]},
    ]
    return msgs, 1, "parts[0].function_call.args"


def _entry_points(fmt: str) -> dict[str, Callable[[list[Any]], object]]:
    calls: dict[str, Callable[[list[Any]], object]] = {
        "validate_messages": lambda m: cb.validate_messages(m, fmt),
        "estimate_request": lambda m: cb.estimate_request(m, format=fmt),
        "prune": lambda m: cb.prune(m, window=50_000, format=fmt),
    }
    for to in FORMATS:
        calls[f"convert_messages->{to}"] = lambda m, to=to: cb.convert_messages(
            m, to, source=fmt, strict=False
        )
    return calls


# --------------------------------------------------------------------------- I1: deep nesting


@pytest.mark.parametrize("fmt", FORMATS)
def test_deeply_nested_arguments_raise_message_format_error(fmt: str) -> None:
    msgs, index, field = _deep_conversation(fmt)
    snapshot = copy.deepcopy(msgs) if fmt in ("openai_chat", "openai_responses") else None
    for name, call in _entry_points(fmt).items():
        try:
            call(msgs)
        except MessageFormatError as e:
            assert "nested deeper" in str(e), name
            assert (e.index, e.field) == (index, field), name
        else:
            # Chat Completions arguments are a string: estimating and pruning can count it
            # as text without parsing it; everything that reads it as JSON refuses it.
            assert fmt == "openai_chat" and name in ("estimate_request", "prune"), name
    if snapshot is not None:
        assert msgs == snapshot


@pytest.mark.parametrize(
    ("fmt", "message", "field"),
    [
        (
            "anthropic",
            {"role": "user", "content": [{"type": "search_result", "x": None}]},
            "content[0]",
        ),
        ("openai_responses", {"type": "web_search_call", "x": None}, "message"),
        ("gemini", {"role": "user", "parts": [{"executable_code": None}]}, "parts[0]"),
    ],
)
def test_deeply_nested_verbatim_blocks_raise_message_format_error(
    fmt: str, message: dict[str, Any], field: str
) -> None:
    """Blocks kept verbatim (kinds we do not model) are estimated as JSON: depth matters too."""
    message = copy.deepcopy(message)
    target = message["content"][0] if fmt == "anthropic" else message
    if fmt == "gemini":
        message["parts"][0]["executable_code"] = _deep_dict(DEEP)
    else:
        target["x"] = _deep_dict(DEEP)
    for name, call in _entry_points(fmt).items():
        with pytest.raises(MessageFormatError, match="nested deeper") as info:
            call([message])
        assert (info.value.index, info.value.field) == (0, field), name


def test_deep_gemini_function_response_is_clear() -> None:
    response = {"name": "x", "response": {"r": _deep_list(DEEP)}}
    msgs = [
        {"role": "model", "parts": [{"function_call": {"name": "x", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": response}]},
    ]
    with pytest.raises(MessageFormatError, match="nested deeper") as info:
        cb.estimate_request(msgs)
    assert (info.value.index, info.value.field) == (1, "parts[0].function_response.response")


def test_moderately_nested_arguments_still_work() -> None:
    depth = 100
    msgs, _, _ = _deep_conversation("anthropic")
    msgs[1]["content"][0]["input"] = _deep_dict(depth)
    assert cb.validate_messages(msgs) == "anthropic"
    chat = cb.convert_messages(msgs, "openai_chat").messages
    assert cb.convert_messages(chat, "anthropic").messages[1] == msgs[1]
    assert cb.estimate_request(msgs).total > depth


def test_deep_tool_result_text_converts_to_gemini() -> None:
    """A tool result that is deep JSON text is kept as text, not parsed into a RecursionError."""
    chat = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": _DEEP_JSON},
    ]  # fmt: skip
    out = cb.convert_messages(chat, "gemini").messages
    assert out[1]["parts"][0]["function_response"]["response"] == {"result": _DEEP_JSON}


# --------------------------------------------------------------------------- I1: wrong types


@pytest.mark.parametrize("value", [["x"], {"k": 1}, {1, 2}])
@pytest.mark.parametrize(
    ("fmt", "make", "field"),
    [
        ("openai_chat", lambda v: {"role": v, "content": "hi"}, "role"),
        ("openai_responses", lambda v: {"type": v, "role": "user"}, "type"),
        ("anthropic", lambda v: {"role": "user", "content": [{"type": v}]}, "content[0].type"),
    ],
)
def test_unhashable_role_or_type_is_a_format_error(
    fmt: str, make: Callable[[object], dict[str, Any]], field: str, value: object
) -> None:
    message = make(value)
    with pytest.raises(MessageFormatError) as info:
        cb.validate_messages([message], fmt)
    assert (info.value.index, info.value.field) == (0, field)
    # Detection skips the field instead of raising "unhashable type".
    assert cb.detect_format([message]) in FORMATS
    with pytest.raises(MessageFormatError):
        cb.estimate_request([message], format=fmt)


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"function_call": {"id": 5, "name": "x", "args": {}}}, "parts[0].function_call.id"),
        ({"function_call": {"name": "x", "args": [1, 2]}}, "parts[0].function_call.args"),
        ({"function_call": {"name": "x", "args": "{}"}}, "parts[0].function_call.args"),
        ({"function_response": {"id": ["c"], "name": "x"}}, "parts[0].function_response.id"),
        (
            {"function_response": {"name": "x", "response": {"b": b"\x00", "s": {1}}}},
            "parts[0].function_response.response",
        ),
    ],
)
def test_bad_gemini_function_fields_are_format_errors(part: dict[str, Any], field: str) -> None:
    msgs = [{"role": "model", "parts": [part]}]
    for name, call in _entry_points("gemini").items():
        with pytest.raises(MessageFormatError) as info:
            call(msgs)
        assert (info.value.index, info.value.field) == (0, field), name


@pytest.mark.parametrize("bad", [None, 5, 1.5, object()])
def test_non_list_messages_are_format_errors(bad: object) -> None:
    calls: list[Callable[[], object]] = [
        lambda: cb.detect_format(bad),  # type: ignore[arg-type]
        lambda: cb.validate_messages(bad),  # type: ignore[arg-type]
        lambda: cb.convert_messages(bad, "anthropic"),  # type: ignore[arg-type]
        lambda: cb.estimate_request(bad),  # type: ignore[arg-type]
        lambda: cb.prune(bad, window=10_000),  # type: ignore[arg-type]
        lambda: cb.compact(bad, lambda p, n: "s", window=10_000),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(MessageFormatError, match="expected a list of messages"):
            call()


def test_generator_is_refused_not_read_as_empty() -> None:
    """A generator used up by format detection used to convert to [] and validate as fine."""

    def gen() -> Iterator[dict[str, Any]]:
        yield {"role": "user", "content": "hi"}
        yield {"role": "assistant", "content": "hello"}

    for call in (
        lambda: cb.convert_messages(gen(), "anthropic"),  # type: ignore[arg-type]
        lambda: cb.validate_messages(gen()),  # type: ignore[arg-type]
        lambda: cb.detect_format(gen()),  # type: ignore[arg-type]
    ):
        with pytest.raises(MessageFormatError, match="got generator"):
            call()
    # Tuples are sequences and work everywhere.
    pair = tuple(gen())
    assert cb.convert_messages(pair, "anthropic").messages == list(pair)
    assert cb.estimate_request(pair).total == cb.estimate_request(list(pair)).total


# --------------------------------------------------------------------------- I1: Rust boundary


@pytest.mark.parametrize(
    "fn", [cb.estimate_tokens, cb.check_text, cb.validate_text, cb.detect_type]
)
def test_text_functions_on_random_bytes_surrogates_and_wrong_types(
    fn: Callable[[Any], object],
) -> None:
    data = os.urandom(1 << 16)
    with contextlib.suppress(ValueError):  # binary content is refused with BinaryContentError
        fn(data)
    for bad in (None, 5, ["a"]):
        with pytest.raises(TypeError):
            fn(bad)
    for text in ("\ud800", "a\udfffb"):
        with pytest.raises((TypeError, ValueError)):
            fn(text)


def test_surrogates_in_messages_are_clear_errors() -> None:
    msgs = [{"role": "user", "content": "a\ud800b"}]
    with pytest.raises(ValueError):
        cb.estimate_request(msgs)
    with pytest.raises(ValueError):
        cb.truncate_output("\ud800" * 1000, max_tokens=10, spill=False)
    # pairing compares ids as written, surrogates and all (tests/test_bad_inputs.py)
    assert [v.kind for v in cb.validate_pairing([(0, "call", "\ud800")])] == ["missing_result"]


def test_hundred_megabyte_inputs() -> None:
    big = "word " * (20 * 1024 * 1024)  # 100 MiB
    assert cb.estimate_tokens(big) > 10_000_000
    result = cb.truncate_output(big, max_tokens=500, spill=False)
    assert result.truncated and result.kept_tokens <= 500
    assert len(cb.check_text(big.encode())) == len(big)


# --------------------------------------------------------------------------- I1: fuzzing

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["role", "content", "type", "parts", "tool_calls", "tool_call_id", "function", "id",
     "name", "arguments", "input", "text", "call_id", "output", "function_call", "args",
     "function_response", "response", "tool_use_id", "source", "image_url", "inline_data"]
)  # fmt: skip
_values = st.sampled_from(
    ["user", "assistant", "model", "tool", "system", "function_call", "function_call_output",
     "message", "text", "tool_use", "tool_result", "image", "input_text", "image_url"]
) | _json  # fmt: skip
_message = st.recursive(
    st.dictionaries(_keys, _values, max_size=5),
    lambda inner: st.dictionaries(_keys, _values | inner | st.lists(inner, max_size=3), max_size=5),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_message | _json, max_size=4), st.sampled_from((None, *FORMATS)))
def test_fuzzed_messages_only_raise_clear_errors(messages: list[Any], fmt: str | None) -> None:
    snapshot = copy.deepcopy(messages)
    calls: list[Callable[[], object]] = [
        lambda: cb.validate_messages(messages, fmt),
        lambda: cb.estimate_request(messages, format=fmt),
        lambda: cb.prune(messages, window=20_000, format=fmt),
        *(lambda to=to: cb.convert_messages(messages, to, source=fmt) for to in FORMATS),
    ]
    for call in calls:
        try:
            call()
        except (TypeError, ValueError) as e:
            assert not isinstance(e, RecursionError)
            assert "unhashable" not in str(e) and "object is not" not in str(e), e
    assert messages == snapshot


# --------------------------------------------------------------------------- D1: no mutation


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_entry_point_mutates_history(fmt: str, tmp_path: Path) -> None:
    msgs = _conversation(fmt)
    snapshot = copy.deepcopy(msgs)
    ids = [id(m) for m in msgs]

    def summarize(prompt: str, max_tokens: int) -> str:
        return "Goal: list files. Progress: done."

    async def asummarize(prompt: str, max_tokens: int) -> str:
        return "Goal: list files. Progress: done."

    cb.estimate_request(msgs, format=fmt)
    estimator = cb.RequestEstimator(format=fmt)
    estimator.estimate(msgs)
    estimator.estimate(msgs)
    tracker = cb.CalibrationTracker(format=fmt)
    tracker.estimate(msgs)
    tracker.observe(msgs, {"prompt_tokens": 5000})
    pruned = cb.prune(msgs, window=8_000, format=fmt)
    assert pruned.pruned, "the window is small enough that something is pruned"
    cb.Pruner(window=8_000, format=fmt).prune(msgs)
    cb.prune(msgs, window=8_000, format=fmt, run_start=True)
    cb.compact(msgs, summarize, window=8_000, format=fmt)
    asyncio.run(cb.acompact(msgs, asummarize, window=8_000, format=fmt))
    for to in FORMATS:
        cb.convert_messages(msgs, to, source=fmt, strict=False)
    cb.validate_messages(msgs, fmt)
    store = cb.DirectorySpillStore(tmp_path)
    text = "line of output\n" * 2000
    cb.truncate_output(text, max_tokens=100, spill=store)
    assert msgs == snapshot
    assert [id(m) for m in msgs] == ids


def test_no_mutation_of_genai_objects() -> None:
    types = pytest.importorskip("google.genai.types")
    contents = [
        types.Content(role="user", parts=[types.Part(text="question " * 50)]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="bash", args={"c": ["ls"]}))],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="bash", response={"result": "out\n" * 3000}
                    )
                )
            ],
        ),
        types.Content(role="model", parts=[types.Part(text="done")]),
        types.Content(role="user", parts=[types.Part(text="next")]),
    ]
    before = [c.model_dump() for c in contents]
    cb.estimate_request(contents)
    cb.prune(contents, window=4_000)
    cb.compact(contents, lambda p, n: "short summary", window=4_000)
    cb.convert_messages(contents, "openai_chat")
    assert [c.model_dump() for c in contents] == before


# --------------------------------------------------------------------------- E3: compaction


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (None, "returned NoneType"),
        (42, "returned int"),
        (b"summary", "returned bytes"),
        ("   ", "empty summary"),
        ("summary \ud800", "not valid Unicode"),
        ("word " * 2_000_000, "not smaller"),
    ],
)
def test_bad_summaries_fail_explicitly(reply: object, match: str) -> None:
    msgs = _conversation("openai_chat", turns=10)
    snapshot = copy.deepcopy(msgs)
    calls = 0

    def summarize(prompt: str, max_tokens: int) -> Any:
        nonlocal calls
        calls += 1
        return reply

    with pytest.raises(CompactionError, match=match):
        cb.compact(msgs, summarize, window=16_000)
    assert calls == 1  # no loop
    assert msgs == snapshot


def test_failing_and_hanging_summarizers_fail_explicitly() -> None:
    msgs = _conversation("anthropic", turns=10)
    snapshot = copy.deepcopy(msgs)

    def boom(prompt: str, max_tokens: int) -> str:
        raise ConnectionError("provider down")

    with pytest.raises(CompactionError, match="ConnectionError: provider down"):
        cb.compact(msgs, boom, window=16_000)

    async def hang_then_raise(prompt: str, max_tokens: int) -> str:
        await asyncio.sleep(0.05)
        raise TimeoutError("too slow")

    with pytest.raises(CompactionError, match="TimeoutError: too slow"):
        asyncio.run(cb.acompact(msgs, hang_then_raise, window=16_000))

    # The overflow retry is bounded: max_attempts calls, then an explicit failure.
    calls = 0

    def always_overflows(prompt: str, max_tokens: int) -> str:
        nonlocal calls
        calls += 1
        raise cb.ContextWindowError("m", 1000, 2000, "prompt is too long")

    with pytest.raises(CompactionError):
        cb.compact(msgs, always_overflows, window=16_000, max_attempts=3)
    assert 1 <= calls <= 4
    assert msgs == snapshot


def test_async_summarizer_given_to_sync_compact() -> None:
    msgs = _conversation("openai_chat", turns=10)

    async def summarize(prompt: str, max_tokens: int) -> str:
        return "summary"

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        with pytest.raises(CompactionError, match="call acompact"):
            cb.compact(msgs, summarize, window=16_000)


# --------------------------------------------------------------------------- I3: threads

THREADS = 8


def _run_threads(work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def run(k: int) -> None:
        try:
            barrier.wait()
            work(k)
        except BaseException as e:  # reported below, with the thread's traceback
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_request_estimator_shared_by_threads() -> None:
    convs = [_conversation("openai_chat", turns=n) for n in (2, 4, 6, 8)]
    expected = [cb.estimate_request(c).total for c in convs]
    estimator = cb.RequestEstimator()

    def work(k: int) -> None:
        for j in range(200):
            i = (k + j) % len(convs)
            assert estimator.estimate(convs[i]).total == expected[i]

    _run_threads(work)


def test_pruner_shared_by_threads() -> None:
    convs = [_conversation("openai_chat", turns=n) for n in (3, 6, 9)]
    expected = [cb.prune(c, window=8_000).tokens_after for c in convs]
    pruner = cb.Pruner(window=8_000)

    def work(k: int) -> None:
        for j in range(60):
            i = (k + j) % len(convs)
            assert pruner.prune(convs[i]).tokens_after == expected[i]

    _run_threads(work)


def test_calibration_tracker_shared_by_threads() -> None:
    tracker = cb.CalibrationTracker()
    convs = [_conversation("openai_chat", turns=n) for n in (2, 4)]

    def work(k: int) -> None:
        for j in range(200):
            c = convs[(k + j) % 2]
            conv = f"conv-{k % 4}"
            est = tracker.estimate(c, conversation=conv)
            assert est.total > 0
            tracker.observe(c, {"prompt_tokens": est.raw.total + 100}, conversation=conv)

    _run_threads(work)
    assert tracker.estimate(convs[0]).total > 0


def test_spill_store_shared_by_threads(tmp_path: Path) -> None:
    store = cb.DirectorySpillStore(tmp_path, max_total_bytes=None)
    paths: list[str] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        for j in range(200):
            text = f"thread {k} item {j}\n" * 20
            path = store.write(text, label="same label")
            assert Path(path).read_text(encoding="utf-8") == text
            with lock:
                paths.append(path)
            if j % 50 == 0:
                store.cleanup()

    _run_threads(work)
    assert len(set(paths)) == THREADS * 200
