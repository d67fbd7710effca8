"""Real provider SDKs against a loopback HTTP server answering with real error bodies.

Each test makes the SDK send a real request to 127.0.0.1, lets it raise its own exception
from the real HTTP response, and classifies that exception. Bodies and statuses come from
the shared catalog (``data/overflow``). SDKs that are not installed are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ctxbudget.overflow import OverflowInfo, classify_overflow
from tests.conftest import LoopbackServer

OPENAI_SPLIT = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested"
        " 4201 tokens (3177 in the messages, 1024 in the completion). Please reduce the length"
        " of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def numbers(info: OverflowInfo | None) -> tuple[Any, ...] | None:
    if info is None:
        return None
    return (
        info.kind,
        info.requested_tokens,
        info.limit_tokens,
        info.input_tokens,
        info.output_tokens,
        info.input_fits,
    )


# --------------------------------------------------------------------------------------------
# openai

openai = pytest.importorskip("openai")


#: SDK clients made by the running test, closed when it ends.
_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_sdk_clients() -> Iterator[None]:
    """Close every SDK client a test made: a connection pool left to the garbage collector
    raises a ResourceWarning at a random later point, which filterwarnings=error turns into a
    failure of whichever test is running then."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def closing(client: Any) -> Any:
    """``client``, closed at the end of the test."""
    _CLIENTS.append(client)
    return client


def openai_client(server: LoopbackServer) -> Any:
    return closing(
        openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10)
    )


def chat(client: Any) -> None:
    client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], max_tokens=1024
    )


OPENAI_OVERFLOWS: list[tuple[str, int, object, tuple[Any, ...], str]] = [
    (
        "openai-completion-split",
        400,
        OPENAI_SPLIT,
        ("combined_overflow", 4201, 4096, 3177, 1024, True),
        "code:context_length_exceeded",
    ),
    (
        "openai-functions",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your"
                " messages resulted in 202868 tokens (202767 in the messages, 101 in the"
                " functions). Please reduce the length of the messages or functions.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        ("input_overflow", 202868, 128000, 202868, None, False),
        "code:context_length_exceeded",
    ),
    (
        "deepseek-invalid-request-code",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 131072 tokens. However, you"
                " requested 131134 tokens (122942 in the messages, 8192 in the completion)."
                " Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
        ("combined_overflow", 131134, 131072, 122942, 8192, True),
        "text:maximum context length",
    ),
    (
        "groq-no-numbers",
        400,
        {
            "error": {
                "message": "Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        ("input_overflow", None, None, None, None, None),
        "code:context_length_exceeded",
    ),
    (
        "vllm-oldest-top-level-object",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 16384 tokens. However, you"
            " requested 19591 tokens (9591 in the messages, 10000 in the completion). Please"
            " reduce the length of the messages or completion. None",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        ("combined_overflow", 19591, 16384, 9591, 10000, True),
        "text:maximum context length",
    ),
    (
        "vllm-current-int-code",
        400,
        {
            "error": {
                "message": "You passed 120000 input tokens and requested 16000 output tokens."
                " However, the model's context length is only 131072 tokens, resulting in a"
                " maximum input length of 115072 tokens. Please reduce the length of the input"
                " prompt.",
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            }
        },
        ("combined_overflow", 136000, 131072, 120000, 16000, True),
        "param:input_tokens",
    ),
    (
        "llamacpp-fields",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 4476,
                "n_ctx": 4096,
            }
        },
        ("input_overflow", 4476, 4096, 4476, None, False),
        "type:exceed_context_size_error",
    ),
    (
        "fastchat-40303",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens. However, your"
            " messages resulted in 3503 tokens. Please reduce the length of the messages.",
            "code": 40303,
        },
        ("input_overflow", 3503, 2048, 3503, None, False),
        "code:40303",
    ),
    (
        "sglang-escaped-apostrophe",
        400,
        b'{"object":"error","message":"The input (61709 tokens) is longer than the'
        b' model\\\'s context length (40960 tokens).","type":"BadRequestError",'
        b'"param":null,"code":400}',
        ("input_overflow", 61709, 40960, 61709, None, False),
        "text:longer than the model's context length",
    ),
    (
        "openrouter-provider-error-in-metadata",
        400,
        {
            "error": {
                "message": "Provider returned error",
                "code": 400,
                "metadata": {
                    "raw": json.dumps(OPENAI_SPLIT),
                    "provider_name": "Together",
                },
            }
        },
        ("combined_overflow", 4201, 4096, 3177, 1024, True),
        "code:context_length_exceeded",
    ),
    (
        "xai-string-error",
        400,
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains"
            " 149617 tokens.",
        },
        ("input_overflow", 149617, 131072, 149617, None, False),
        "text:maximum prompt length",
    ),
    (
        "tgi-422",
        422,
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <="
            " 8192. Given: 6204 `inputs` tokens and 2047 `max_new_tokens`",
            "error_type": "validation",
        },
        ("combined_overflow", 8251, 8192, 6204, 2047, True),
        "text:inputs tokens + max_new_tokens",
    ),
    (
        "ollama-error-string",
        400,
        {
            "error": "the prompt is longer than the context length currently available to the"
            " model; shorten the prompt, adjust the context length in settings, or use a model"
            " with a longer context length"
        },
        ("input_overflow", None, None, None, None, False),
        "text:prompt longer than the context length",
    ),
    (
        "openai-string-above-max-length",
        400,
        {
            "error": {
                "message": "Invalid 'messages[5].content': string too long. Expected a string"
                " with maximum length 10485760, but got a string with length 10605342 instead.",
                "type": "invalid_request_error",
                "param": "messages[5].content",
                "code": "string_above_max_length",
            }
        },
        ("request_too_large", None, None, None, None, None),
        "code:string_above_max_length",
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "want", "rule"),
    [case[1:] for case in OPENAI_OVERFLOWS],
    ids=[case[0] for case in OPENAI_OVERFLOWS],
)
def test_openai_sdk_overflow(
    loopback: LoopbackServer, status: int, body: object, want: tuple[Any, ...], rule: str
) -> None:
    loopback.reply(status, body)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(openai_client(loopback))
    assert caught.value.status_code == status
    info = classify_overflow(caught.value)
    assert numbers(info) == want
    assert info is not None and info.rule == rule


OPENAI_NEGATIVES: list[tuple[str, int, object]] = [
    (
        "tpm-429",
        429,
        {
            "error": {
                "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per"
                " min (TPM): Limit 30000, Used 28000, Requested 4000. Please try again in 4s.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    ),
    (
        "tpm-request-too-large-429",
        429,
        {
            "error": {
                "message": "Request too large for gpt-4-turbo-preview in organization org-abc"
                " on tokens per min (TPM): Limit 30000, Requested 36000. The input or output"
                " tokens must be reduced in order to run successfully.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    ),
    (
        "quota-429",
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing"
                " details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        },
    ),
    (
        "groq-tpm-413",
        413,
        {
            "error": {
                "message": "Request too large for model `llama-3.3-70b-versatile` in"
                " organization `org_1` service tier `on_demand` on tokens per minute (TPM):"
                " Limit 6000, Requested 14810, please reduce your message size and try again.",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
    ),
    (
        "invalid-key-401",
        401,
        {
            "error": {
                "message": "Incorrect API key provided: test. You can find your API key at"
                " https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    ),
    (
        "max-tokens-cap",
        400,
        {
            "error": {
                "message": "max_tokens is too large: 20480. This model supports at most 16384"
                " completion tokens, whereas you provided 20480.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "invalid_value",
            }
        },
    ),
    (
        "vllm-output-only",
        400,
        {
            "object": "error",
            "message": "max_tokens=140000 cannot be greater than"
            " max_model_len=max_total_tokens=131072. Please request fewer output tokens.",
            "type": "BadRequestError",
            "param": "max_tokens",
            "code": 400,
        },
    ),
    (
        "azure-content-filter",
        400,
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure"
                " OpenAI's content management policy.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {"code": "ResponsibleAIPolicyViolation"},
            }
        },
    ),
    (
        "user-string-too-long",
        400,
        {
            "error": {
                "message": "Invalid 'user': string too long. Expected a string with maximum"
                " length 64, but got a string with length 100 instead.",
                "type": "invalid_request_error",
                "param": "user",
                "code": "string_above_max_length",
            }
        },
    ),
    (
        "temperature",
        400,
        {
            "error": {
                "message": "Invalid value for 'temperature': expected a number <= 2.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "invalid_value",
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("status", "body"),
    [case[1:] for case in OPENAI_NEGATIVES],
    ids=[case[0] for case in OPENAI_NEGATIVES],
)
def test_openai_sdk_look_alikes(loopback: LoopbackServer, status: int, body: object) -> None:
    loopback.reply(status, body)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(openai_client(loopback))
    assert classify_overflow(caught.value) is None


def test_openai_sdk_responses_stream_error_event(loopback: LoopbackServer) -> None:
    """An overflow that arrives as an SSE ``error`` event inside a 200 stream."""
    event = {
        "type": "error",
        "sequence_number": 2,
        "error": {
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model. Please adjust your"
            " input and try again.",
            "param": "input",
        },
    }
    loopback.reply(
        200,
        f"event: error\ndata: {json.dumps(event)}\n\n",
        content_type="text/event-stream",
    )
    client = openai_client(loopback)
    with pytest.raises(openai.APIError) as caught:
        for _ in client.responses.create(model="gpt-5", input="hi", stream=True):
            pass
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", None, None, None, None, None)
    assert info is not None and info.rule == "code:context_length_exceeded"


def test_openai_sdk_error_wrapped_by_the_caller(loopback: LoopbackServer) -> None:
    loopback.reply(400, OPENAI_SPLIT)
    try:
        try:
            chat(openai_client(loopback))
        except openai.BadRequestError as exc:
            raise RuntimeError("agent step failed") from exc
    except RuntimeError as wrapper:
        assert numbers(classify_overflow(wrapper)) == (
            "combined_overflow",
            4201,
            4096,
            3177,
            1024,
            True,
        )


# --------------------------------------------------------------------------------------------
# anthropic


def anthropic_call(server: LoopbackServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = closing(
        anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0, timeout=10)
    )
    client.messages.create(
        model="claude-loopback-test", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
    )


def anthropic_body(type_: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": type_, "message": message},
        "request_id": "req_011CVjxiYzEFcAQC4Fk87zw2",
    }


ANTHROPIC_OVERFLOWS: list[tuple[str, int, dict[str, Any], tuple[Any, ...], str]] = [
    (
        "prompt-too-long",
        400,
        anthropic_body(
            "invalid_request_error", "prompt is too long: 219898 tokens > 200000 maximum"
        ),
        ("input_overflow", 219898, 200000, 219898, None, False),
        "text:prompt is too long",
    ),
    (
        "combined",
        400,
        anthropic_body(
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 187254 + 20000 > 200000,"
            " decrease input length or `max_tokens` and try again",
        ),
        ("combined_overflow", 207254, 200000, 187254, 20000, True),
        "text:exceed context limit",
    ),
    (
        "413-request-too-large",
        413,
        {
            "type": "error",
            "error": {"type": "request_too_large", "message": "Request exceeds the maximum size"},
        },
        ("request_too_large", None, None, None, None, None),
        "type:request_too_large",
    ),
    (
        "413-vertex-prompt-too-long",
        413,
        anthropic_body("invalid_request_error", "Prompt is too long"),
        ("input_overflow", None, None, None, None, None),
        "text:prompt is too long",
    ),
    (
        "413-context-window",
        413,
        anthropic_body("invalid_request_error", "Request size exceeds model context window"),
        ("input_overflow", None, None, None, None, None),
        "text:request size exceeds model context window",
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "want", "rule"),
    [case[1:] for case in ANTHROPIC_OVERFLOWS],
    ids=[case[0] for case in ANTHROPIC_OVERFLOWS],
)
def test_anthropic_sdk_overflow(
    loopback: LoopbackServer,
    status: int,
    body: dict[str, Any],
    want: tuple[Any, ...],
    rule: str,
) -> None:
    anthropic = pytest.importorskip("anthropic")
    loopback.reply(status, body)
    with pytest.raises(anthropic.APIStatusError) as caught:
        anthropic_call(loopback)
    assert caught.value.status_code == status
    info = classify_overflow(caught.value)
    assert numbers(info) == want
    assert info is not None and info.rule == rule
    assert info.provider == "anthropic"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            429,
            anthropic_body(
                "rate_limit_error",
                "This request would exceed the rate limit for your organization of 20,000"
                " input tokens per minute. Please reduce the prompt length or the maximum"
                " tokens requested, or try again later.",
            ),
        ),
        (401, anthropic_body("authentication_error", "invalid x-api-key")),
        (529, anthropic_body("overloaded_error", "Overloaded")),
        (
            400,
            anthropic_body(
                "invalid_request_error",
                "max_tokens: 128000 > 64000, which is the maximum allowed number of output"
                " tokens for claude-sonnet-4-5",
            ),
        ),
        (
            400,
            anthropic_body(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
        ),
    ],
    ids=["itpm-429", "auth-401", "overloaded-529", "output-cap", "credit-balance"],
)
def test_anthropic_sdk_look_alikes(
    loopback: LoopbackServer, status: int, body: dict[str, Any]
) -> None:
    anthropic = pytest.importorskip("anthropic")
    loopback.reply(status, body)
    with pytest.raises(anthropic.APIStatusError) as caught:
        anthropic_call(loopback)
    assert classify_overflow(caught.value) is None


# --------------------------------------------------------------------------------------------
# google-genai


def gemini_call(server: LoopbackServer) -> None:
    genai = pytest.importorskip("google.genai")
    client = closing(
        genai.Client(api_key="test", http_options={"base_url": server.url, "timeout": 10_000})
    )
    client.models.generate_content(model="gemini-2.5-pro", contents="hi")


def test_google_genai_sdk_overflow(loopback: LoopbackServer) -> None:
    errors = pytest.importorskip("google.genai.errors")
    loopback.reply(
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (25270) exceeds the maximum number of tokens"
                " allowed (4000).",
                "status": "INVALID_ARGUMENT",
            }
        },
    )
    with pytest.raises(errors.ClientError) as caught:
        gemini_call(loopback)
    info = classify_overflow(caught.value)
    assert numbers(info) == ("input_overflow", 25270, 4000, 25270, None, False)
    assert info is not None
    assert (info.rule, info.provider) == ("text:input token count exceeds the maximum", "gemini")


def test_google_genai_sdk_double_encoded(loopback: LoopbackServer) -> None:
    errors = pytest.importorskip("google.genai.errors")
    inner = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "The input token count (3475108) exceeds the maximum number of"
                " tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
        indent=2,
    )
    loopback.reply(400, {"error": {"message": inner, "code": 400, "status": "Bad Request"}})
    with pytest.raises(errors.ClientError) as caught:
        gemini_call(loopback)
    assert numbers(classify_overflow(caught.value)) == (
        "input_overflow",
        3475108,
        1048576,
        3475108,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com",
                        }
                    ],
                }
            },
        ),
        (
            429,
            {
                "error": {
                    "code": 429,
                    "message": "Resource has been exhausted (e.g. check quota).",
                    "status": "RESOURCE_EXHAUSTED",
                }
            },
        ),
    ],
    ids=["bad-key-400", "resource-exhausted-429"],
)
def test_google_genai_sdk_look_alikes(
    loopback: LoopbackServer, status: int, body: dict[str, Any]
) -> None:
    errors = pytest.importorskip("google.genai.errors")
    loopback.reply(status, body)
    with pytest.raises(errors.APIError) as caught:
        gemini_call(loopback)
    assert classify_overflow(caught.value) is None


def test_google_genai_error_built_directly() -> None:
    errors = pytest.importorskip("google.genai.errors")
    err = errors.ClientError(
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (25270) exceeds the maximum number of tokens"
                " allowed (4000).",
                "status": "INVALID_ARGUMENT",
            }
        },
    )
    assert numbers(classify_overflow(err)) == ("input_overflow", 25270, 4000, 25270, None, False)


# --------------------------------------------------------------------------------------------
# botocore (Bedrock Runtime, rest-json errors with x-amzn-ErrorType)


def bedrock_call(server: LoopbackServer) -> None:
    session = pytest.importorskip("botocore.session")
    config = pytest.importorskip("botocore.config")
    client = session.get_session().create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=config.Config(retries={"total_max_attempts": 1}),
    )
    try:
        client.converse(
            modelId="anthropic.claude-3-5-sonnet",
            messages=[{"role": "user", "content": [{"text": "hi"}]}],
        )
    finally:
        # Close the connection pool now: a socket left to the garbage collector raises a
        # ResourceWarning at a random later point, which filterwarnings=error turns into a
        # failure of whichever test is running then.
        client.close()


def bedrock_reply(server: LoopbackServer, status: int, code: str, message: str) -> None:
    server.reply(
        status,
        {"message": message},
        headers={
            "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        },
    )


@pytest.mark.parametrize(
    ("message", "want"),
    [
        (
            "Input is too long for requested model.",
            ("input_overflow", None, None, None, None, None),
        ),
        (
            "The model returned the following errors: prompt is too long: 204698 tokens > 200000"
            " maximum",
            ("input_overflow", 204698, 200000, 204698, None, False),
        ),
        (
            "The model returned the following errors: input length and `max_tokens` exceed"
            " context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and"
            " try again",
            ("combined_overflow", 203192, 200000, 195000, 8192, True),
        ),
        (
            "1 validation error detected: Value at 'body' failed to satisfy constraint: Member"
            " must have length less than or equal to 25000000",
            ("request_too_large", None, None, None, None, None),
        ),
    ],
    ids=["input-too-long", "prompt-too-long", "combined", "body-size"],
)
def test_botocore_bedrock_overflow(
    loopback: LoopbackServer, message: str, want: tuple[Any, ...]
) -> None:
    exceptions = pytest.importorskip("botocore.exceptions")
    bedrock_reply(loopback, 400, "ValidationException", message)
    with pytest.raises(exceptions.ClientError) as caught:
        bedrock_call(loopback)
    info = classify_overflow(caught.value)
    assert numbers(info) == want
    assert info is not None and info.provider == "bedrock"


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (429, "ThrottlingException", "Too many tokens, please wait before trying again."),
        (400, "ThrottlingException", "Too many tokens per day, please wait before trying again."),
        (
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        (400, "ValidationException", "The provided model identifier is invalid."),
    ],
    ids=["throttle-429", "throttle-tpd", "access-denied", "bad-model-id"],
)
def test_botocore_bedrock_look_alikes(
    loopback: LoopbackServer, status: int, code: str, message: str
) -> None:
    exceptions = pytest.importorskip("botocore.exceptions")
    bedrock_reply(loopback, status, code, message)
    with pytest.raises(exceptions.ClientError) as caught:
        bedrock_call(loopback)
    assert classify_overflow(caught.value) is None


def test_botocore_event_stream_error_built_directly() -> None:
    exceptions = pytest.importorskip("botocore.exceptions")
    err = exceptions.EventStreamError(
        {
            "Error": {
                "Code": "validationException",
                "Message": "Input is too long for requested model.",
            }
        },
        "InvokeModelWithResponseStream",
    )
    info = classify_overflow(err)
    assert numbers(info) == ("input_overflow", None, None, None, None, None)
    assert info is not None and info.provider == "bedrock"


# --------------------------------------------------------------------------------------------
# httpx (or its fork httpx2): a raw HTTP client's status error carries the body in .response


def test_httpx_status_error(loopback: LoopbackServer) -> None:
    try:
        import httpx
    except ImportError:
        httpx = pytest.importorskip("httpx2")
    loopback.reply(400, OPENAI_SPLIT)
    with httpx.Client(timeout=10) as client:
        response = client.post(f"{loopback.url}/v1/chat/completions", json={})
        with pytest.raises(httpx.HTTPStatusError) as caught:
            response.raise_for_status()
    assert numbers(classify_overflow(caught.value)) == (
        "combined_overflow",
        4201,
        4096,
        3177,
        1024,
        True,
    )
