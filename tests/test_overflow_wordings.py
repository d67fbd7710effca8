"""classify_overflow on wordings of the review of 2026-12-04 that it missed or read no numbers
from: Moonshot's v1 API, xAI's gRPC SDK, LM Studio's mid-generation overflow and its 2023
wording, vLLM's offline engine, oMLX and ctransformers. Each message is quoted from the issue
named beside it; one goes through the real OpenAI SDK against a loopback server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxbudget.overflow import OverflowInfo, classify_overflow
from tests.conftest import LoopbackServer


def numbers(info: OverflowInfo | None) -> tuple[Any, ...] | None:
    if info is None:
        return None
    return (info.kind, info.provider, info.limit_tokens, info.input_tokens, info.requested_tokens)


# Where the input alone is stated, it is also what was requested (no output counted).


# MoonshotAI/MoonshotAI-Cookbook#18 (moonshot-v1-8k): the window holds input + max_tokens, the
# message states neither count.
MOONSHOT_V1 = {
    "error": {
        "message": "model max length exceeded, max length:8192",
        "type": "invalid_request_error",
    }
}


@pytest.mark.parametrize(
    "error",
    [
        MOONSHOT_V1,
        f"Error code: 400 - {MOONSHOT_V1!r}",
        Exception(MOONSHOT_V1["error"]["message"]),
    ],
)
def test_moonshot_v1_model_max_length(error: object) -> None:
    info = classify_overflow(error)
    assert numbers(info) == ("input_overflow", "moonshot", 8192, None, None)


def test_moonshot_v1_through_the_openai_sdk(loopback: LoopbackServer) -> None:
    openai = pytest.importorskip("openai")
    loopback.reply(400, json.dumps(MOONSHOT_V1).encode())
    client = openai.OpenAI(base_url=f"{loopback.url}/v1", api_key="test", max_retries=0)
    try:
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="moonshot-v1-8k", messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        client.close()
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", "moonshot", 8192, None, None)
    assert info is not None and info.confidence == "high"


# UKGovernmentBEIS/inspect_ai PR #5208: xAI's gRPC SDK, status INVALID_ARGUMENT, the code in
# brackets in the details.
XAI_DETAILS = (
    "Failed to start sampling: [input_too_large] Current message (1149677 tokens) exceeds"
    " budget (975424 tokens)"
)


class _RpcError(Exception):
    """Shaped like grpc's errors: ``details()`` a method, the text in the ``str``."""

    def details(self) -> str:
        return XAI_DETAILS


@pytest.mark.parametrize(
    "error",
    [
        XAI_DETAILS,
        _RpcError(
            "<_InactiveRpcError of RPC that terminated with: status = "
            f'StatusCode.INVALID_ARGUMENT details = "{XAI_DETAILS}">'
        ),
        {
            "code": "input_too_large",
            "message": "Current message (1149677 tokens) exceeds budget (975424 tokens)",
        },
    ],
)
def test_xai_input_too_large(error: object) -> None:
    info = classify_overflow(error)
    assert info is not None
    assert (info.kind, info.limit_tokens, info.input_tokens) == (
        "input_overflow",
        975424,
        1149677,
    )
    assert info.input_fits is False


def test_an_input_too_large_code_alone_is_an_overflow() -> None:
    info = classify_overflow({"error": {"code": "input_too_large", "message": "rejected"}})
    assert info is not None and info.rule == "code:input_too_large"


LOCAL_SERVERS = [
    # lmstudio-bug-tracker#1024: the context filled while generating
    (
        "Reached context length of 32000 tokens with model (arch: gpt-oss) that does not"
        " currently support mid-generation context overflow. Try reloading with a larger"
        " context length or shortening the prompt/chat.",
        ("input_overflow", "lmstudio", 32000, None, None),
    ),
    # lmstudio-ai/examples#29 (2023)
    (
        "[ERROR] Error: Input length 6491 exceeds context length 1500",
        ("input_overflow", None, 1500, 6491, 6491),
    ),
    # hiyouga/LlamaFactory#7723: vLLM's offline engine
    (
        "ValueError: Prompt length of 5016 is longer than the maximum model length of 4096.",
        ("input_overflow", "vllm", 4096, 5016, 5016),
    ),
    # ValueCell-ai/ClawX#658: oMLX
    (
        "400 Prompt too long: 41911 tokens exceeds max context window of 32768 tokens",
        ("input_overflow", None, 32768, 41911, 41911),
    ),
    # AIAnytime/Llama2-Medical-Chatbot#14: ctransformers
    (
        "Number of tokens (815) exceeded maximum context length (512).",
        ("input_overflow", None, 512, 815, 815),
    ),
]
#: Every wording above, for the checks that each rule and number pattern reads something
#: (``tests/test_overflow.py``).
WORDINGS = [
    MOONSHOT_V1["error"]["message"],
    XAI_DETAILS,
    *(text for text, _ in LOCAL_SERVERS),
]


@pytest.mark.parametrize(("text", "expected"), LOCAL_SERVERS)
def test_local_servers_state_input_and_limit(text: str, expected: tuple[Any, ...]) -> None:
    info = classify_overflow(text)
    assert numbers(info) == expected
    assert info is not None and info.confidence == "high"
    if info.input_tokens is not None:
        assert info.input_fits is False


@pytest.mark.parametrize(
    "text",
    [
        # Near misses: an output that reached its own cap, a batch of embeddings, a budget
        # that is not the context's.
        "Reached max tokens (4096) for this response.",
        "Too many tokens in batch. Max is 16384 got 17555",
        "Monthly budget (500 USD) exceeded for this project.",
    ],
)
def test_near_misses_stay_unrecognised(text: str) -> None:
    assert classify_overflow(text) is None
