"""classify_overflow review: real wordings it missed (SGLang's input cap, vLLM's multimodal
prompt, llama.cpp's mid-generation overflow) and the exception group an ``asyncio.TaskGroup``
wraps a provider's overflow in. Each message is quoted from the source named beside it."""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ctxbudget.overflow import OverflowInfo, classify_overflow
from tests.conftest import LoopbackServer

openai = pytest.importorskip("openai")

_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_sdk_clients() -> Iterator[None]:
    """Close every SDK client a test made (a pool left to the GC warns at a random point)."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def chat(server: LoopbackServer, *, stream: bool = False) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10)
    _CLIENTS.append(client)
    response = client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": "hi"}], stream=stream
    )
    if stream:
        for _ in response:
            pass


def numbers(info: OverflowInfo | None) -> tuple[Any, ...] | None:
    if info is None:
        return None
    return (info.kind, info.requested_tokens, info.limit_tokens, info.input_tokens, info.input_fits)


# SGLang's scheduler, an input over max_req_input_len: validate_input_length in
# sgl-project/sglang python/sglang/srt/managers/utils.py; the request is aborted with a 400
# and the server's OpenAI error shape.
SGLANG_INPUT_CAP = {
    "object": "error",
    "message": "Input length (140000 tokens) exceeds the maximum allowed length (131072 tokens)."
    " Use a shorter input or enable --allow-auto-truncate.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}

# vLLM's input processor for a prompt with multimodal tokens, as a 400 body: the fixture in
# any-llm-client's tests, and vllm-project/vllm#12165 ("The prompt (total length 25938) is too
# long to fit into the model (context length 4096)").
VLLM_TOO_LONG_TO_FIT = {
    "error": {
        "object": "error",
        "message": "The prompt (total length 6287) is too long to fit into the model (context"
        " length 4096). Make sure that `max_model_len` is no smaller than the number of text"
        " tokens plus multimodal tokens. For image inputs, the number of image tokens depends"
        " on the number of images, and possibly their aspect ratios as well.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}

# llama.cpp's server when a slot's context fills during generation, relayed by LM Studio: an
# HTTP 500, or an error event after a 200 when streaming (lmstudio-bug-tracker#2322, #2339;
# llmmllab-api#88 shows it reaching the openai SDK as an APIError).
LLAMA_CPP_CONTEXT_FULL = {
    "error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}
}

OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 4097 tokens. However, your messages"
        " resulted in 6988 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}  # rahul2002m/ChatPDF#6


def test_sglang_input_over_the_maximum_allowed_length(loopback: LoopbackServer) -> None:
    loopback.reply(400, SGLANG_INPUT_CAP)
    with pytest.raises(openai.BadRequestError) as caught:
        chat(loopback)
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", 140000, 131072, 140000, False)
    assert info is not None
    # An input-only cap (max_req_input_len), budgeted as such (ctxbudget.limits).
    assert (info.rule, info.provider) == ("text:input tokens exceed", "sglang")
    assert numbers(classify_overflow(SGLANG_INPUT_CAP["message"])) == numbers(info)


def test_vllm_prompt_too_long_to_fit_into_the_model(loopback: LoopbackServer) -> None:
    loopback.reply(400, VLLM_TOO_LONG_TO_FIT)
    with pytest.raises(openai.BadRequestError) as caught:
        chat(loopback)
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", 6287, 4096, 6287, False)
    assert info is not None and info.provider == "vllm"
    # The offline engine raises it as a ValueError (vllm#12165).
    message = (
        "The prompt (total length 25938) is too long to fit into the model (context length"
        " 4096). Make sure that `max_model_len` is no smaller than the number of text tokens"
        " plus multimodal tokens."
    )
    assert numbers(classify_overflow(ValueError(message))) == (
        "input_overflow",
        25938,
        4096,
        25938,
        False,
    )


def test_llama_cpp_context_size_exceeded_as_a_500(loopback: LoopbackServer) -> None:
    loopback.reply(500, LLAMA_CPP_CONTEXT_FULL)
    with pytest.raises(openai.InternalServerError) as caught:
        chat(loopback)
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", None, None, None, None)
    assert info is not None and info.confidence == "medium"


def test_llama_cpp_context_size_exceeded_inside_a_stream(loopback: LoopbackServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "partial"}}]}
    loopback.reply(
        200,
        f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(LLAMA_CPP_CONTEXT_FULL)}\n\n",
        content_type="text/event-stream",
    )
    with pytest.raises(openai.APIError) as caught:
        chat(loopback, stream=True)
    assert numbers(classify_overflow(caught.value)) == ("input_overflow", None, None, None, None)


def test_lm_studio_relays_the_llama_cpp_wording() -> None:
    # LM Studio's engine error as an agent harness logged it (see the comment above).
    message = (
        "Engine protocol predict stream returned an error: "
        '{"code":500,"message":"Context size has been exceeded.","type":"server_error"}'
    )
    assert classify_overflow(message) is not None


# --------------------------------------------------------------------------------------------
# Exception groups: asyncio.TaskGroup (Python 3.11+) and anyio always wrap a task's error.

needs_groups = pytest.mark.skipif(
    not hasattr(builtins, "ExceptionGroup"), reason="no built-in ExceptionGroup"
)


@needs_groups
def test_overflow_raised_inside_a_task_group(loopback: LoopbackServer) -> None:
    loopback.reply(400, OPENAI_OVERFLOW)

    async def run() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.to_thread(chat, loopback))

    with pytest.raises(builtins.ExceptionGroup) as caught:
        asyncio.run(run())
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", 6988, 4097, 6988, False)
    assert info is not None and info.rule == "code:context_length_exceeded"


@needs_groups
def test_overflow_among_other_failures_in_a_group() -> None:
    rate_limited = ValueError(
        "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM):"
        " Limit 30000, Used 29000, Requested 2000."
    )
    overflow = ValueError("prompt is too long: 219898 tokens > 200000 maximum")  # pi#102
    group = builtins.ExceptionGroup("unhandled errors in a TaskGroup", [rate_limited, overflow])
    info = classify_overflow(group)
    assert numbers(info) == ("input_overflow", 219898, 200000, 219898, False)
    only_rate_limited = builtins.ExceptionGroup("unhandled errors", [rate_limited])
    assert classify_overflow(only_rate_limited) is None


@needs_groups
def test_nested_groups_stay_fast() -> None:
    """Looking through is bounded in all (eight exceptions), not per level: 8**3 members of
    16 kB each would take half a second."""
    leaf = ValueError("token limit context exceeded size " * 500)
    group: Exception = leaf
    for _ in range(3):
        group = builtins.ExceptionGroup("g", [group] * 8)
    start = time.perf_counter()
    assert classify_overflow(group) is None
    assert time.perf_counter() - start < 0.1


# --------------------------------------------------------------------------------------------
# Not looked through: __context__.


def test_an_error_raised_while_handling_an_overflow_is_not_one() -> None:
    """The guard retries inside its ``except`` block: a timeout on that retry has the first
    overflow as its ``__context__`` and must surface as the timeout it is."""
    try:
        try:
            raise ValueError("prompt is too long: 219898 tokens > 200000 maximum")
        except ValueError:
            raise TimeoutError("Request timed out.")  # noqa: B904 - the implicit context
    except TimeoutError as timeout:
        assert timeout.__context__ is not None
        assert classify_overflow(timeout) is None


# --------------------------------------------------------------------------- review of 2026-12-03

# GitHub Models / Azure AI Foundry's per-request cap, an HTTP 413 (cline#2115, Roo-Code#3344,
# dyad#1950): tokens, not the bytes a bare 413 means.
GITHUB_MODELS_CAP = {
    "error": {
        "code": "tokens_limit_reached",
        "message": "Request body too large for gpt-4o model. Max size: 8000 tokens.",
        "details": "Request body too large for gpt-4o model. Max size: 8000 tokens.",
    }
}


def test_github_models_cap_is_a_token_limit(loopback: LoopbackServer) -> None:
    loopback.reply(413, GITHUB_MODELS_CAP)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(loopback)
    info = classify_overflow(caught.value)
    assert info is not None
    assert (info.kind, info.limit_tokens, info.provider) == ("input_overflow", 8000, "github")
    alone = classify_overflow("413 " + GITHUB_MODELS_CAP["error"]["message"])
    assert alone is not None and (alone.kind, alone.limit_tokens) == ("input_overflow", 8000)


def test_the_guard_fits_under_the_github_models_cap(loopback: LoopbackServer) -> None:
    from ctxbudget import ContextGuard

    client = openai.OpenAI(base_url=f"{loopback.url}/v1", api_key="t", max_retries=0, timeout=10)
    _CLIENTS.append(client)
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "word " * 1800},
        ]
    history.append({"role": "user", "content": "and now?"})
    sent: list[int] = []

    def send(request: Any) -> Any:
        sent.append(request.input_tokens)
        if request.input_tokens > 7000:
            loopback.reply(413, GITHUB_MODELS_CAP)
        else:
            loopback.reply(200, {"id": "x", "object": "chat.completion", "created": 0,
                                 "model": "gpt-4o", "choices": [], "usage": {
                                     "prompt_tokens": request.input_tokens,
                                     "completion_tokens": 1, "total_tokens": 1}})  # fmt: skip
        return client.chat.completions.create(model="gpt-4o", **request.kwargs())

    result = ContextGuard("gpt-4o").send(send, history, max_tokens=1000)
    assert result.overflow is not None and result.overflow.limit_tokens == 8000
    assert sent[0] > 7000 >= sent[-1]


@pytest.mark.parametrize(
    "error",
    [
        {"error": {"code": "1261", "message": "Prompt exceeds max length"}},
        "Error code: 400 - {'error': {'code': '1261', 'message': 'Prompt exceeds max length'}}",
    ],
)
def test_zhipu_prompt_over_max_length_is_an_overflow(error: object) -> None:
    # zeroclaw#4124, cc-switch#6982 (z.ai / Zhipu GLM)
    info = classify_overflow(error)
    assert info is not None and info.kind == "input_overflow" and info.provider == "zhipu"


def test_openai_pythons_empty_400_is_the_low_confidence_no_body(loopback: LoopbackServer) -> None:
    # Cerebras answers an overflow with an empty 400: openai-python says "Error code: 400".
    loopback.reply(400, b"")
    with pytest.raises(openai.BadRequestError) as caught:
        chat(loopback)
    info = classify_overflow(caught.value)
    assert info is not None and (info.rule, info.confidence) == ("status:no body", "low")
    assert classify_overflow(openai.BadRequestError) is None  # (not an instance)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prompt is too long: 219_898 tokens > 200_000 maximum", (219_898, 200_000)),
        # Forms read as no number rather than as their first group:
        (
            "This model's maximum context length is 128 000 tokens. However, your messages"
            " resulted in 130 512 tokens.",
            (None, None),
        ),
        ("This model's maximum context length is 128k tokens.", (None, None)),
    ],
)
def test_a_number_is_never_read_as_its_first_group(
    text: str, expected: tuple[int | None, int | None]
) -> None:
    info = classify_overflow(text)
    assert info is not None
    assert (info.input_tokens, info.limit_tokens) == expected
