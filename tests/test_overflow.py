"""classify_overflow: every real case in the shared catalog, unseen paraphrases, look-alike
negatives, every input shape, the errors, and the calibration feedback."""

from __future__ import annotations

import dataclasses
import doctest
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbudget import errors, overflow, overflow_rules
from ctxbudget.errors import (
    ContextBudgetError,
    ContextOverflowError,
    ContextWindowError,
)
from ctxbudget.overflow import MAX_SCAN_CHARS, OverflowInfo, classify_overflow
from tests.conftest import shared_data_dir, shared_data_hint
from tests.test_overflow_wordings import WORDINGS

NUMBER_FIELDS = ("requested_tokens", "limit_tokens", "input_tokens", "output_tokens", "input_fits")


def load_cases() -> list[dict[str, Any]]:
    data = shared_data_dir()
    if data is None:
        return []
    cases: list[dict[str, Any]] = json.loads(
        (data / "overflow" / "cases.json").read_text(encoding="utf-8")
    )
    return cases


CASES = load_cases()
needs_data = pytest.mark.skipif(not CASES, reason=shared_data_hint())


class ProviderError(Exception):
    """An exception shaped like an SDK's: status_code, code, type, param, message."""

    def __init__(self, case: dict[str, Any]) -> None:
        super().__init__(case["message"])
        self.message = case["message"]
        self.status_code = case["status"]
        self.code = case["code"]
        self.type = case["type"]
        self.param = case["param"]


def expected(case: dict[str, Any]) -> tuple[Any, ...] | None:
    if not case["is_overflow"]:
        return None
    return (case["kind"], *(case[name] for name in NUMBER_FIELDS))


def observed(info: OverflowInfo | None) -> tuple[Any, ...] | None:
    if info is None:
        return None
    return (info.kind, *(getattr(info, name) for name in NUMBER_FIELDS))


# --------------------------------------------------------------------------------------------
# The catalog's real cases: class, kind and every number, from the message and from an
# exception carrying the same fields as attributes.


@needs_data
@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_catalog_case(case: dict[str, Any]) -> None:
    from_message = classify_overflow(case["message"], status_code=case["status"])
    from_exception = classify_overflow(ProviderError(case))
    assert observed(from_message) == expected(case)
    assert observed(from_exception) == expected(case)
    if from_exception is not None:
        assert from_exception.rule.partition(":")[0] in {"code", "type", "param", "fields", "text"}


@needs_data
def test_catalog_has_the_documented_size() -> None:
    assert len(CASES) == 51
    assert sum(case["is_overflow"] for case in CASES) == 41


def test_shared_data_is_found_beside_the_checkout() -> None:
    data = shared_data_dir()
    if data is None:
        pytest.skip(shared_data_hint())
    assert (data / "overflow" / "CATALOG.md").is_file()
    if "CTXBUDGET_SHARED_DATA" not in os.environ:
        assert data == Path(__file__).resolve().parents[2] / "shared" / "data"


PROVIDERS = {
    "anthropic-prompt-too-long-ts": "anthropic",
    "bedrock-invoke-stream": "bedrock",
    "cohere-v2": "cohere",
    "copilot": "copilot",
    "dashscope": "dashscope",
    "fastchat": "fastchat",
    "fireworks": "fireworks",
    "gemini-double-encoded": "gemini",
    "kimi": "moonshot",
    "llamacpp-new": "llama.cpp",
    "lmstudio": "lmstudio",
    "minimax": "minimax",
    "mistral": "mistral",
    "ollama-cloud": "ollama",
    "openrouter-via-litellm": "openrouter",
    "tgi-total": "tgi",
    "vllm-mid-via-litellm": "vllm",
    "xai-json": "xai",
}


@needs_data
@pytest.mark.parametrize("case_id", sorted(PROVIDERS))
def test_provider_is_recognised(case_id: str) -> None:
    case = next(case for case in CASES if case["id"] == case_id)
    info = classify_overflow(case["message"], status_code=case["status"])
    assert info is not None
    assert info.provider == PROVIDERS[case_id]


@needs_data
def test_no_numbers_from_codes_characters_or_bytes() -> None:
    for case_id in ("minimax", "bedrock-maxlength", "openai-string-above-max-length"):
        case = next(case for case in CASES if case["id"] == case_id)
        info = classify_overflow(case["message"])
        assert info is not None
        assert info.requested_tokens is None and info.limit_tokens is None, case_id
        assert info.input_tokens is None and info.excess_tokens is None, case_id


# --------------------------------------------------------------------------------------------
# Unseen messages: other numbers, other members of the same wording families.

Expect = dict[str, Any]
PARAPHRASES: list[tuple[str, str, Expect]] = [
    (
        # GitHub Models / Azure AI Foundry, an HTTP 413 with code tokens_limit_reached
        # (cline#2115, Roo-Code#3344).
        "github-models",
        "Request body too large for gpt-4o-mini model. Max size: 8000 tokens.",
        {"kind": "input_overflow", "limit_tokens": 8000, "input_tokens": None},
    ),
    (
        # Zhipu / z.ai, code 1261 (zeroclaw#4124).
        "zhipu",
        "Prompt exceeds max length",
        {"kind": "input_overflow", "limit_tokens": None},
    ),
    (
        "openai-messages",
        "This model's maximum context length is 16385 tokens. However, your messages resulted"
        " in 17012 tokens. Please reduce the length of the messages.",
        {
            "kind": "input_overflow",
            "requested_tokens": 17012,
            "limit_tokens": 16385,
            "input_tokens": 17012,
            "input_fits": False,
        },
    ),
    (
        "openai-completion-split-commas",
        "This model's maximum context length is 32,768 tokens. However, you requested 34,000"
        " tokens (30,000 in the messages, 4,000 in the completion). Please reduce the length of"
        " the messages or completion.",
        {
            "kind": "combined_overflow",
            "requested_tokens": 34000,
            "limit_tokens": 32768,
            "input_tokens": 30000,
            "output_tokens": 4000,
            "input_fits": True,
        },
    ),
    (
        "openai-functions-parts-only",
        "This model's maximum context length is 8192 tokens. However, you requested 9210"
        " tokens (8710 in the messages, 500 in the functions).",
        {
            "kind": "input_overflow",
            "requested_tokens": 9210,
            "limit_tokens": 8192,
            "input_tokens": 9210,
            "input_fits": False,
        },
    ),
    (
        "openai-legacy-embeddings",
        "This model's maximum context length is 8191 tokens, however you requested 10000 tokens"
        " (10000 in your prompt; 0 for the completion). Please reduce your prompt; or"
        " completion length.",
        {
            "kind": "input_overflow",
            "requested_tokens": 10000,
            "limit_tokens": 8191,
            "input_tokens": 10000,
            "output_tokens": 0,
            "input_fits": False,
        },
    ),
    (
        "openai-three-part-split",
        "This model's maximum context length is 16385 tokens. However, you requested 10297"
        " tokens (7297 in the messages, 1000 in the functions, and 2000 in the completion).",
        {
            "kind": "combined_overflow",
            "requested_tokens": 10297,
            "limit_tokens": 16385,
            "input_tokens": 8297,
            "output_tokens": 2000,
            "input_fits": True,
        },
    ),
    (
        "openrouter-tool-input",
        "This endpoint's maximum context length is 163840 tokens. However, you requested about"
        " 200000 tokens (150000 of text input, 2000 of tool input, 48000 in the output).",
        {
            "kind": "combined_overflow",
            "requested_tokens": 200000,
            "limit_tokens": 163840,
            "input_tokens": 152000,
            "output_tokens": 48000,
            "input_fits": True,
        },
    ),
    (
        "requested-tokens-exceed-context-window",
        "Requested tokens (9000) exceed context window of 8192",
        {"kind": "input_overflow", "requested_tokens": 9000, "limit_tokens": 8192},
    ),
    (
        "gpt5-configured-limit",
        "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in"
        " 280001 tokens. Please reduce the length of the messages.",
        {
            "kind": "input_overflow",
            "requested_tokens": 280001,
            "limit_tokens": 272000,
            "input_tokens": 280001,
            "input_fits": False,
        },
    ),
    (
        "anthropic-combined",
        "input length and `max_tokens` exceed context limit: 180000 + 32000 > 200000, decrease"
        " input length or `max_tokens` and try again",
        {
            "kind": "combined_overflow",
            "requested_tokens": 212000,
            "limit_tokens": 200000,
            "input_tokens": 180000,
            "output_tokens": 32000,
            "input_fits": True,
        },
    ),
    (
        "bedrock-converse-claude-combined",
        "An error occurred (ValidationException) when calling the Converse operation: The model"
        " returned the following errors: input length and `max_tokens` exceed context limit:"
        " 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
        {
            "kind": "combined_overflow",
            "requested_tokens": 203192,
            "limit_tokens": 200000,
            "input_tokens": 195000,
            "output_tokens": 8192,
            "input_fits": True,
            "provider": "bedrock",
        },
    ),
    (
        "gemini-count",
        "The input token count (1500000) exceeds the maximum number of tokens allowed (1048576).",
        {
            "kind": "input_overflow",
            "requested_tokens": 1500000,
            "limit_tokens": 1048576,
            "input_tokens": 1500000,
            "input_fits": False,
            "provider": "gemini",
        },
    ),
    (
        "vertex-only-supports",
        "Unable to submit request because the input token count is 40000 but model only"
        " supports up to 32768. Reduce the input token count and try again.",
        {
            "kind": "input_overflow",
            "requested_tokens": 40000,
            "limit_tokens": 32768,
            "input_tokens": 40000,
            "input_fits": False,
        },
    ),
    (
        "xai",
        "This model's maximum prompt length is 256000 but the request contains 300000 tokens.",
        {
            "kind": "input_overflow",
            "requested_tokens": 300000,
            "limit_tokens": 256000,
            "input_tokens": 300000,
            "input_fits": False,
        },
    ),
    (
        "openrouter-output",
        "This endpoint's maximum context length is 128000 tokens. However, you requested about"
        " 140000 tokens (120000 of text input, 20000 in the output). Please reduce the length"
        ' of either one, or use the "middle-out" transform to compress your prompt'
        " automatically.",
        {
            "kind": "combined_overflow",
            "requested_tokens": 140000,
            "limit_tokens": 128000,
            "input_tokens": 120000,
            "output_tokens": 20000,
            "input_fits": True,
            "exact": False,
        },
    ),
    (
        "mistral-draft",
        "Prompt contains 40000 tokens and 10 draft tokens, too large for model with 32768"
        " maximum context length",
        {
            "kind": "input_overflow",
            "requested_tokens": 40010,
            "limit_tokens": 32768,
            "input_tokens": 40000,
            "input_fits": False,
        },
    ),
    (
        "mistral-no-draft",
        "Prompt contains 33354 tokens, too large for model with 32768 maximum context length",
        {
            "kind": "input_overflow",
            "requested_tokens": 33354,
            "limit_tokens": 32768,
            "input_tokens": 33354,
            "input_fits": False,
        },
    ),
    (
        "cohere-size-limit",
        "too many tokens: size limit exceeded by 1200 tokens. Try using shorter or fewer"
        " inputs, or setting prompt_truncation='AUTO'. The limit for this model is 128000"
        " tokens.",
        {
            "kind": "input_overflow",
            "requested_tokens": 129200,
            "limit_tokens": 128000,
            "input_fits": False,
            "excess_tokens": 1200,
        },
    ),
    (
        "cohere-legacy",
        "too many tokens: total number of tokens (prompt and prediction) cannot exceed 4096 -"
        " received 4500. Try using a shorter prompt or a smaller max_tokens value.",
        {
            "kind": "input_overflow",
            "requested_tokens": 4500,
            "limit_tokens": 4096,
            "input_fits": None,
        },
    ),
    (
        "kimi",
        "Invalid request: Your request exceeded model token limit: 131072 (requested: 140000)",
        {
            "kind": "input_overflow",
            "requested_tokens": 140000,
            "limit_tokens": 131072,
            "input_fits": None,
        },
    ),
    (
        "dashscope",
        "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]",
        {"kind": "input_overflow", "limit_tokens": 30720, "input_fits": False},
    ),
    (
        "fireworks",
        "The prompt is too long: 70000, model maximum context length: 65536",
        {
            "kind": "input_overflow",
            "requested_tokens": 70000,
            "limit_tokens": 65536,
            "input_tokens": 70000,
            "input_fits": False,
        },
    ),
    (
        "sglang-old",
        "The input (70000 tokens) is longer than the model's context length (65536 tokens).",
        {
            "kind": "input_overflow",
            "requested_tokens": 70000,
            "limit_tokens": 65536,
            "input_tokens": 70000,
            "input_fits": False,
        },
    ),
    (
        "sglang-new",
        "Requested token count exceeds the model's maximum context length of 32768 tokens. You"
        " requested a total of 33000 tokens: 30000 tokens from the input messages and 3000"
        " tokens for the completion. Please reduce the number of tokens in the input messages"
        " or the completion to fit within the limit.",
        {
            "kind": "combined_overflow",
            "requested_tokens": 33000,
            "limit_tokens": 32768,
            "input_tokens": 30000,
            "output_tokens": 3000,
            "input_fits": True,
        },
    ),
    (
        "copilot",
        "prompt token count of 150000 exceeds the limit of 128000",
        {
            "kind": "input_overflow",
            "requested_tokens": 150000,
            "limit_tokens": 128000,
            "input_tokens": 150000,
            "input_fits": False,
        },
    ),
    (
        "vllm-current",
        "You passed 120000 input tokens and requested 16000 output tokens. However, the model's"
        " context length is only 131072 tokens, resulting in a maximum input length of 115072"
        " tokens. Please reduce the length of the input prompt. (parameter=input_tokens,"
        " value=120000)",
        {
            "kind": "combined_overflow",
            "requested_tokens": 136000,
            "limit_tokens": 131072,
            "input_tokens": 120000,
            "output_tokens": 16000,
            "input_fits": True,
            "rule": "param:input_tokens",
            "provider": "vllm",
        },
    ),
    (
        "vllm-characters",
        "You passed 200000 input characters and requested 1000 output tokens. However, the"
        " model's context length is only 32768 tokens, resulting in a maximum input length of"
        " 31768 tokens (at most 95304 characters). Please reduce the length of the input"
        " prompt. (parameter=input_text, value=200000)",
        {
            "kind": "input_overflow",
            "requested_tokens": None,
            "limit_tokens": 32768,
            "input_tokens": None,
            "output_tokens": 1000,
            "input_fits": None,
        },
    ),
    (
        "vllm-engine",
        "Input prompt (5000 tokens) is too long and exceeds limit of 4096",
        {
            "kind": "input_overflow",
            "requested_tokens": 5000,
            "limit_tokens": 4096,
            "input_tokens": 5000,
            "input_fits": False,
        },
    ),
    (
        "vllm-decoder",
        "The decoder prompt (length 40000) is longer than the maximum model length of 32768."
        " Make sure that `max_model_len` is no smaller than the number of text tokens.",
        {
            "kind": "input_overflow",
            "requested_tokens": 40000,
            "limit_tokens": 32768,
            "input_tokens": 40000,
            "input_fits": False,
        },
    ),
    (
        "vllm-tokens-in-the-messages",
        "This model's maximum context length is 32768 tokens. However, you requested 33000"
        " tokens in the messages, Please reduce the length of the messages.",
        {"kind": "input_overflow", "requested_tokens": 33000, "limit_tokens": 32768},
    ),
    (
        "llamacpp",
        "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
        {
            "kind": "input_overflow",
            "requested_tokens": 9000,
            "limit_tokens": 8192,
            "input_tokens": 9000,
            "input_fits": False,
            "provider": "llama.cpp",
        },
    ),
    (
        "llamacpp-old",
        "the request exceeds the available context size, try increasing it",
        {"kind": "input_overflow", "requested_tokens": None, "confidence": "medium"},
    ),
    (
        "tgi-less-than",
        "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000",
        {
            "kind": "input_overflow",
            "requested_tokens": 5000,
            "limit_tokens": 4096,
            "input_tokens": 5000,
            "input_fits": False,
        },
    ),
    (
        "tgi-combined",
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given:"
        " 3000 `inputs` tokens and 2000 `max_new_tokens`",
        {
            "kind": "combined_overflow",
            "requested_tokens": 5000,
            "limit_tokens": 4096,
            "input_tokens": 3000,
            "output_tokens": 2000,
            "input_fits": True,
        },
    ),
    (
        "lmstudio",
        "Trying to keep the first 9000 tokens when context the overflows. However, the model is"
        " loaded with context length of only 8192 tokens, which is not enough.",
        {
            "kind": "input_overflow",
            "requested_tokens": 9000,
            "limit_tokens": 8192,
            "input_tokens": 9000,
            "input_fits": False,
        },
    ),
    (
        "ollama-mlx",
        "input length (9000 tokens) exceeds the model's maximum context length (8192 tokens)",
        {
            "kind": "input_overflow",
            "requested_tokens": 9000,
            "limit_tokens": 8192,
            "input_tokens": 9000,
            "input_fits": False,
        },
    ),
    (
        "ollama-cloud",
        "prompt too long; exceeded max context length by 128 tokens",
        {
            "kind": "input_overflow",
            "requested_tokens": None,
            "excess_tokens": 128,
            "input_fits": False,
        },
    ),
    (
        "ollama-embed",
        "the input length exceeds the context length",
        {"kind": "input_overflow", "input_fits": False},
    ),
    (
        "cerebras",
        "Please reduce the length of the messages or completion. Current length is 70000 while"
        " limit is 65536",
        {
            "kind": "input_overflow",
            "requested_tokens": 70000,
            "limit_tokens": 65536,
            "input_fits": False,
        },
    ),
    (
        "titan",
        "Too many input tokens. Max input tokens: 8192, request input token count: 9000",
        {
            "kind": "input_overflow",
            "requested_tokens": 9000,
            "limit_tokens": 8192,
            "input_tokens": 9000,
            "input_fits": False,
        },
    ),
    (
        "litellm-wrapped-anthropic",
        "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError:"
        " AnthropicException - prompt is too long: 210000 tokens > 200000 maximum",
        {
            "kind": "input_overflow",
            "requested_tokens": 210000,
            "limit_tokens": 200000,
            "input_tokens": 210000,
            "provider": "anthropic",
        },
    ),
    (
        "roo-code-lowercased",
        "this model's maximum context length is 65536 tokens. however, you requested 70000"
        " tokens (62000 in the messages, 8000 in the completion). please reduce the length of"
        " the messages or completion.",
        {
            "kind": "combined_overflow",
            "requested_tokens": 70000,
            "limit_tokens": 65536,
            "input_tokens": 62000,
            "output_tokens": 8000,
            "input_fits": True,
        },
    ),
    (
        "responses-api",
        "Your input exceeds the context window of this model. Please adjust your input and try"
        " again.",
        {"kind": "input_overflow", "requested_tokens": None, "confidence": "medium"},
    ),
    (
        "anthropic-413-window",
        "Request size exceeds model context window",
        {"kind": "input_overflow", "provider": "anthropic"},
    ),
    (
        "azure-dotnet",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in"
        " 8577 tokens. Please reduce the length of the messages. Status: 400 (model_error)"
        " ErrorCode: context_length_exceeded",
        {
            "kind": "input_overflow",
            "requested_tokens": 8577,
            "limit_tokens": 8192,
            "rule": "code:context_length_exceeded",
        },
    ),
    (
        "zai-finish-reason",
        '{"choices": [{"finish_reason": "model_context_window_exceeded", "index": 0}]}',
        {"kind": "input_overflow", "rule": "code:model_context_window_exceeded"},
    ),
]


@pytest.mark.parametrize(
    ("message", "want"), [(m, w) for _, m, w in PARAPHRASES], ids=[i for i, _, _ in PARAPHRASES]
)
def test_unseen_overflow_messages(message: str, want: Expect) -> None:
    info = classify_overflow(message)
    assert info is not None
    got = {name: getattr(info, name) for name in want}
    assert got == want


# --------------------------------------------------------------------------------------------
# Look-alikes that must not fire.

NEGATIVES: list[tuple[str, str, int | None]] = [
    (
        "openai-tpm-429",
        "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit"
        " 30000, Used 28000, Requested 4000. Please try again in 4s.",
        429,
    ),
    (
        "openai-tpm-no-status",
        "Request too large for gpt-4-turbo-preview in organization org-abc on tokens per min"
        " (TPM): Limit 30000, Requested 36000. The input or output tokens must be reduced in"
        " order to run successfully.",
        None,
    ),
    (
        "openai-rpm",
        "Rate limit reached for requests per minute (RPM): Limit 3, Used 3, Requested 1.",
        None,
    ),
    (
        "anthropic-itpm-no-status",
        "This request would exceed the rate limit for your organization of 20,000 input tokens"
        " per minute. Please reduce the prompt length or the maximum tokens requested, or try"
        " again later.",
        None,
    ),
    ("bedrock-throttle", "Too many tokens, please wait before trying again.", None),
    (
        "openai-quota",
        "You exceeded your current quota, please check your plan and billing details.",
        None,
    ),
    (
        "gemini-resource-exhausted",
        '{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",'
        ' "status": "RESOURCE_EXHAUSTED"}}',
        None,
    ),
    (
        "vertex-quota",
        "Quota exceeded for aiplatform.googleapis.com/generate_content_input_tokens_per_minute"
        "_per_base_model with base model: gemini-1.5-pro.",
        400,
    ),
    (
        "openai-401",
        "Incorrect API key provided: sk-abc***. You can find your API key at"
        " https://platform.openai.com/account/api-keys.",
        None,
    ),
    ("openai-403", "Project `proj_abc` does not have access to model `gpt-4o`", 403),
    (
        "anthropic-401",
        '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
        None,
    ),
    (
        "gemini-bad-key-400",
        '{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",'
        ' "status": "INVALID_ARGUMENT"}}',
        400,
    ),
    (
        "openai-max-tokens-cap",
        "max_tokens is too large: 100000. This model supports at most 16384 completion tokens,"
        " whereas you provided 100000.",
        400,
    ),
    (
        "anthropic-max-tokens-cap",
        "max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for"
        " claude-sonnet-4-20250514",
        400,
    ),
    (
        "vllm-output-only",
        "max_tokens=140000 cannot be greater than max_model_len=max_total_tokens=131072. Please"
        " request fewer output tokens.",
        400,
    ),
    (
        "gemini-max-output",
        "Unable to submit request because it has a maxOutputTokens value of 100000 but the"
        " supported range is from 1 (inclusive) to 65537 (exclusive).",
        400,
    ),
    (
        "max-tokens-limit",
        "max tokens exceeds the limit of 8192 for this model",
        400,
    ),
    (
        "azure-content-filter",
        "The response was filtered due to the prompt triggering Azure OpenAI's content"
        " management policy.",
        400,
    ),
    (
        "string-too-long-on-user",
        '{"error": {"message": "Invalid \'user\': string too long. Expected a string with'
        ' maximum length 256, but got a string with length 300 instead.", "param": "user",'
        ' "code": "string_above_max_length"}}',
        400,
    ),
    (
        "messages-array-too-long",
        "Invalid 'messages': array too long. Expected an array with maximum length 2048, but got"
        " an array with length 2049 instead.",
        400,
    ),
    ("go-context-deadline", "context deadline exceeded (Client.Timeout exceeded)", None),
    ("recursion", "maximum recursion depth exceeded while calling a Python object", None),
    ("temperature", "Invalid value for 'temperature': expected a number <= 2.", 400),
    ("model-not-found", "The model `gpt-5-ultra` does not exist or you do not have access", 404),
    (
        "overloaded",
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        529,
    ),
]


@pytest.mark.parametrize(
    ("message", "status"), [(m, s) for _, m, s in NEGATIVES], ids=[i for i, _, _ in NEGATIVES]
)
def test_look_alikes_do_not_fire(message: str, status: int | None) -> None:
    assert classify_overflow(message, status_code=status) is None


@pytest.mark.parametrize(
    "message",
    [
        "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413"
        " Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>",
        "Request payload size exceeds the limit: 20971520 bytes.",
        "Request exceeds the maximum size",
        "Your prompt is too long. The maximum length is 4000 characters.",
    ],
)
def test_size_limits_in_bytes_or_characters_carry_no_token_numbers(message: str) -> None:
    info = classify_overflow(message, status_code=413)
    assert info is not None
    assert info.kind == "request_too_large"
    assert (info.requested_tokens, info.limit_tokens, info.input_tokens) == (None, None, None)


def test_a_bare_413_is_a_low_confidence_size_error() -> None:
    info = classify_overflow("Error code: 413", status_code=413)
    assert info is not None
    assert (info.kind, info.rule, info.confidence) == ("request_too_large", "status:413", "low")


def test_groq_413_tpm_is_not_an_overflow() -> None:
    message = (
        "413 Request too large for model llama-3.3-70b in organization org_1 service tier"
        " on_demand on tokens per minute (TPM): Limit 10000, Requested 21247, please reduce"
        " your message size and try again."
    )
    assert classify_overflow(message, status_code=413) is None


def test_no_body_400_is_a_low_confidence_guess() -> None:
    info = classify_overflow("400 status code (no body)")
    assert info is not None
    assert (info.rule, info.confidence) == ("status:no body", "low")


# --------------------------------------------------------------------------------------------
# Generalisation: the catalog's templates with numbers drawn at random.

TEMPLATES: list[tuple[str, str]] = [
    (
        "This model's maximum context length is {L} tokens. However, you requested {T} tokens"
        " ({N} in the messages, {O} in the completion).",
        "split",
    ),
    ("prompt is too long: {N} tokens > {L} maximum", "input"),
    ("input length and `max_tokens` exceed context limit: {N} + {O} > {L}", "sum"),
    ("The input token count ({N}) exceeds the maximum number of tokens allowed ({L}).", "input"),
    ("The input ({N} tokens) is longer than the model's context length ({L} tokens).", "input"),
    ("request ({N} tokens) exceeds the available context size ({L} tokens)", "input"),
    ("prompt token count of {N} exceeds the limit of {L}", "input"),
    (
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= {L}. Given: {N}"
        " `inputs` tokens and {O} `max_new_tokens`",
        "sum",
    ),
    (
        "You passed {N} input tokens and requested {O} output tokens. However, the model's"
        " context length is only {L} tokens.",
        "sum",
    ),
    ("This model's maximum prompt length is {L} but the request contains {N} tokens.", "input"),
]


@settings(max_examples=300, deadline=None)
@given(
    template=st.sampled_from(TEMPLATES),
    limit=st.integers(1_000, 2_000_000),
    extra=st.integers(1, 1_000_000),
    output=st.integers(1, 200_000),
    commas=st.booleans(),
)
def test_templates_with_random_numbers(
    template: tuple[str, str], limit: int, extra: int, output: int, commas: bool
) -> None:
    text, shape = template
    fmt = "{:,}" if commas and "{T}" in text else "{}"
    if shape == "input":
        n, o = limit + extra, None
    else:
        n, o = max(limit - output + extra, 1), output
    total = n + (o or 0)
    message = text.format(
        L=fmt.format(limit), N=fmt.format(n), O=fmt.format(o), T=fmt.format(total)
    )
    info = classify_overflow(message)
    assert info is not None
    assert (info.limit_tokens, info.input_tokens, info.output_tokens) == (limit, n, o)
    assert info.requested_tokens == total
    assert info.input_fits == (n < limit if o is not None else False)
    assert info.kind == ("combined_overflow" if info.input_fits else "input_overflow")


@settings(max_examples=200, deadline=None)
@given(limit=st.integers(1_000, 10**6), used=st.integers(0, 10**6), asked=st.integers(1, 10**6))
def test_rate_limits_never_fire_whatever_the_numbers(limit: int, used: int, asked: int) -> None:
    for message in (
        f"Rate limit reached for gpt-4o on tokens per min (TPM): Limit {limit}, Used {used},"
        f" Requested {asked}.",
        f"Request too large for model m on tokens per minute (TPM): Limit {limit}, Requested"
        f" {asked}, please reduce your message size and try again.",
        f"This request would exceed the rate limit of {limit:,} input tokens per minute.",
    ):
        assert classify_overflow(message) is None
        assert classify_overflow(message, status_code=413) is None


# --------------------------------------------------------------------------------------------
# Input shapes.

OPENAI_MESSAGE = (
    "This model's maximum context length is 4096 tokens. However, you requested 4201 tokens"
    " (3177 in the messages, 1024 in the completion). Please reduce the length of the messages"
    " or completion."
)
OPENAI_BODY = {
    "error": {
        "message": OPENAI_MESSAGE,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def assert_openai_split(info: OverflowInfo | None) -> None:
    assert info is not None
    assert observed(info) == ("combined_overflow", 4201, 4096, 3177, 1024, True)


def test_dict_body() -> None:
    info = classify_overflow(OPENAI_BODY)
    assert_openai_split(info)
    assert info is not None and info.rule == "code:context_length_exceeded"


def test_json_string_body() -> None:
    assert_openai_split(classify_overflow(json.dumps(OPENAI_BODY)))


def test_python_repr_body_in_a_message() -> None:
    assert_openai_split(classify_overflow(f"Error code: 400 - {OPENAI_BODY!r}"))


def test_double_encoded_body() -> None:
    inner = json.dumps(OPENAI_BODY, indent=2)
    outer = json.dumps({"error": {"message": inner, "code": 400, "status": "Bad Request"}})
    info = classify_overflow(outer)
    assert_openai_split(info)
    assert info is not None and info.rule == "code:context_length_exceeded"


def test_triple_encoded_body() -> None:
    once = json.dumps({"error": {"message": json.dumps(OPENAI_BODY)}})
    twice = json.dumps({"error": {"message": once}})
    assert_openai_split(classify_overflow(twice))


def test_openrouter_raw_provider_error_nested_in_metadata() -> None:
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": json.dumps(OPENAI_BODY), "provider_name": "DeepInfra"},
        }
    }
    info = classify_overflow(body)
    assert_openai_split(info)
    assert info is not None and info.provider == "deepinfra"


def test_body_as_bytes() -> None:
    assert_openai_split(classify_overflow(json.dumps(OPENAI_BODY).encode()))


def test_list_wrapped_body() -> None:
    assert_openai_split(classify_overflow([OPENAI_BODY]))


def test_status_code_keyword_decides_a_rate_limit() -> None:
    message = "Please reduce the length of the messages or completion."
    assert classify_overflow(message) is not None
    assert classify_overflow(message, status_code=429) is None


def test_status_code_inside_the_body_is_read() -> None:
    body = {"error": {"code": 429, "message": "Please reduce the length of the messages."}}
    assert classify_overflow(body) is None


def test_exception_chained_from_the_provider_error() -> None:
    provider = ValueError(OPENAI_MESSAGE)
    try:
        try:
            raise provider
        except ValueError as exc:
            raise RuntimeError("agent step failed") from exc
    except RuntimeError as wrapper:
        assert_openai_split(classify_overflow(wrapper))


def test_a_rate_limited_wrapper_is_not_looked_through() -> None:
    class RateLimitError(Exception):
        status_code = 429

    wrapper = RateLimitError("slow down")
    wrapper.__cause__ = ValueError(OPENAI_MESSAGE)
    assert classify_overflow(wrapper) is None


def test_sdk_attributes_without_a_message() -> None:
    class BadRequestError(Exception):
        status_code = 400
        code = "context_length_exceeded"
        type = "invalid_request_error"
        param = "messages"

    info = classify_overflow(BadRequestError("Error code: 400"))
    assert info is not None
    assert (info.kind, info.rule, info.requested_tokens) == (
        "input_overflow",
        "code:context_length_exceeded",
        None,
    )


def test_httpx_style_error_with_the_body_only_in_the_response() -> None:
    class Response:
        status_code = 400
        text = json.dumps(OPENAI_BODY)

    class HTTPStatusError(Exception):
        response = Response()

    err = HTTPStatusError("Client error '400 Bad Request' for url 'http://127.0.0.1/v1'")
    assert_openai_split(classify_overflow(err))


def test_botocore_shaped_response() -> None:
    class ClientError(Exception):
        operation_name = "Converse"
        response = {  # noqa: RUF012 - the botocore shape
            "Error": {
                "Code": "ValidationException",
                "Message": "Input is too long for requested model.",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    info = classify_overflow(ClientError("An error occurred (ValidationException)"))
    assert info is not None
    assert (info.kind, info.provider) == ("input_overflow", "bedrock")


def test_litellm_context_window_class() -> None:
    class BadRequestError(Exception):
        status_code = 400

    class ContextWindowExceededError(BadRequestError):
        llm_provider = "openrouter"

    info = classify_overflow(ContextWindowExceededError("litellm.ContextWindowExceededError"))
    assert info is not None
    assert (info.rule, info.provider) == ("class:ContextWindowExceededError", "openrouter")


# --------------------------------------------------------------------------------------------
# It never raises.


class Hostile(Exception):
    """Every attribute the classifier might read raises."""

    def __getattribute__(self, name: str) -> Any:
        if name in {"__class__", "__cause__", "__context__", "__traceback__", "args"}:
            return object.__getattribute__(self, name)
        raise RuntimeError(f"no {name} for you")

    def __str__(self) -> str:
        raise RuntimeError("no str either")


class WeirdMapping(dict[str, Any]):
    def items(self) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    "value",
    [
        None,
        0,
        413,
        3.5,
        True,
        b"\xff\xfe\x00",
        "",
        "{",
        "{'unterminated': ",
        "[" * 100_000,
        "{" * 50_000 + "'a': 1" + "}" * 50_000,
        '{"a": ' * 5_000 + "1" + "}" * 5_000,
        object(),
        Hostile("x"),
        WeirdMapping(a=1),
        {"error": None},
        {1: 2, None: "x", ("t",): {"code": 3.5}},
        [None, 1, [2, [3]]],
        {"error": {"code": True, "message": 12}},
        Exception(),
    ],
    ids=repr,
)
def test_never_raises_on_odd_input(value: object) -> None:
    assert classify_overflow(value) is None or isinstance(classify_overflow(value), OverflowInfo)


def test_deeply_nested_body_does_not_crash() -> None:
    nested: dict[str, Any] = {"error": {"message": OPENAI_MESSAGE}}
    for _ in range(2_000):
        nested = {"error": nested}
    classify_overflow(nested)  # may or may not find it; must not raise


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_random_text(text: str) -> None:
    result = classify_overflow(text)
    assert result is None or isinstance(result, OverflowInfo)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["code", "type", "param", "message", "error", "status", "x"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_never_raises_on_random_bodies(body: object) -> None:
    for value in (body, json.dumps(body)):
        result = classify_overflow(value)
        assert result is None or isinstance(result, OverflowInfo)


def test_only_the_first_max_scan_chars_are_read() -> None:
    padding = "x" * (MAX_SCAN_CHARS + 10)
    assert classify_overflow(OPENAI_MESSAGE + padding) is not None
    assert classify_overflow(padding + OPENAI_MESSAGE) is None


def test_huge_string_is_fast_enough() -> None:
    import time

    huge = "context " * 12_000_000  # ~96 MB
    start = time.perf_counter()
    classify_overflow(huge)
    assert time.perf_counter() - start < 0.5


# --------------------------------------------------------------------------------------------
# Feedback for calibration and the output reserve (SPEC F5).


def test_a_stated_input_count_is_a_measurement() -> None:
    info = classify_overflow("prompt is too long: 219898 tokens > 200000 maximum")
    assert info is not None
    assert info.measured_input_tokens == 219898
    assert info.output_reserve_cut is None  # the input alone is over: compact, not the reserve


def test_input_fits_says_how_much_to_cut_from_the_reserve() -> None:
    info = classify_overflow(OPENAI_BODY)
    assert info is not None
    assert info.input_fits
    assert info.output_reserve_cut == 105  # 4201 - 4096
    assert info.output_tokens_that_fit == 919  # 4096 - 3177
    assert info.measured_input_tokens == 3177


def test_qualified_counts_are_not_measurements() -> None:
    at_least = (
        "This model's maximum context length is 48000 tokens. However, you requested 16384"
        " output tokens and your prompt contains at least 31617 input tokens, for a total of at"
        " least 48001 tokens."
    )
    info = classify_overflow(at_least)
    assert info is not None
    assert (info.exact, info.input_tokens, info.measured_input_tokens) == (False, 31617, None)
    assert info.output_reserve_cut == 1  # a minimum when the count is a lower bound


def test_no_measurement_without_a_stated_input() -> None:
    info = classify_overflow("Please reduce the length of the messages or completion.")
    assert info is not None
    assert (info.measured_input_tokens, info.output_reserve_cut) == (None, None)


# --------------------------------------------------------------------------------------------
# Our own errors.


def test_budget_error_is_classified_with_its_numbers() -> None:
    err = ContextBudgetError(
        "gpt-4o", 128000, 140000, "too long", input_tokens=124000, reserved_output=16000
    )
    info = classify_overflow(err)
    assert info is not None
    assert observed(info) == ("combined_overflow", 140000, 128000, 124000, 16000, True)
    assert (info.rule, info.provider) == ("type:ContextBudgetError", "ctxbudget")
    assert info.output_reserve_cut == 12000
    assert info.measured_input_tokens is None  # our estimate is not a measurement


def test_budget_error_without_a_split() -> None:
    info = classify_overflow(ContextBudgetError(None, 8192, 9000, "too long"))
    assert info is not None
    assert observed(info) == ("input_overflow", 9000, 8192, None, None, None)


def test_overflow_error_round_trips_its_info() -> None:
    info = classify_overflow(OPENAI_BODY)
    assert info is not None
    err = ContextOverflowError.from_info(info, model="gpt-4")
    assert classify_overflow(err) is info
    assert (err.context_window, err.requested_tokens, err.rule) == (
        4096,
        4201,
        "code:context_length_exceeded",
    )
    assert "input plus reserved output" in err.reason


def test_overflow_error_without_info() -> None:
    err = ContextOverflowError("m", 1000, 1200, "too long", "text:prompt is too long")
    info = classify_overflow(err)
    assert info is not None
    assert (info.requested_tokens, info.limit_tokens, info.rule) == (
        1200,
        1000,
        "text:prompt is too long",
    )


def test_error_hierarchy() -> None:
    assert issubclass(ContextWindowError, RuntimeError)
    assert issubclass(ContextOverflowError, ContextWindowError)
    assert issubclass(ContextBudgetError, ContextWindowError)
    assert not issubclass(ContextWindowError, ValueError)


@pytest.mark.parametrize(
    "err",
    [
        ContextWindowError("m", 10, 11, "why", "rule"),
        ContextOverflowError("m", 4096, 4201, "why", "code:context_length_exceeded"),
        ContextOverflowError.from_info(
            OverflowInfo("combined_overflow", 4201, 4096, 3177, 1024, True, None, "r"),
            model="gpt-4",
        ),
        ContextBudgetError(
            "m", 10, 11, "why", input_tokens=5, reserved_output=6, component="tools", exact=True
        ),
        ContextBudgetError(None, None, None, ""),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_pickle_with_every_attribute(err: ContextWindowError) -> None:
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is type(err)
    assert copy.__dict__ == err.__dict__
    assert str(copy) == str(err)
    assert copy.args == err.args


def test_error_messages_are_clear() -> None:
    over = ContextOverflowError("gpt-4o", 128000, 202868, "input alone", "code:x")
    assert str(over) == (
        "provider rejected the request as too long for gpt-4o: 202,868 tokens requested,"
        " window 128,000 (input alone) [rule=code:x]"
    )
    budget = ContextBudgetError(None, 8192, None, "system prompt alone", component="system")
    assert str(budget) == (
        "request over the context budget: ? tokens requested, window 8,192"
        " (system prompt alone; component=system)"
    )


def test_binary_content_error_is_unchanged() -> None:
    err = errors.BinaryContentError("not text", 3, "nul", "pdf")
    assert isinstance(err, ValueError)
    assert (str(err), err.offset, err.reason, err.detected_type) == ("not text", 3, "nul", "pdf")


def test_overflow_info_is_a_frozen_slots_value_and_pickles() -> None:
    info = classify_overflow(OPENAI_BODY)
    assert info is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.kind = "input_overflow"  # type: ignore[misc]
    assert not hasattr(info, "__dict__")
    assert pickle.loads(pickle.dumps(info)) == info


@pytest.mark.parametrize("module", [overflow, errors], ids=lambda m: m.__name__)
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------------------------
# The rule table is exercised: every wording rule and number pattern fires on at least one
# real or paraphrased message above (a rule nothing triggers is dead weight or a typo).


def all_examples() -> list[str]:
    messages = [case["message"] for case in CASES if case["is_overflow"]]
    messages += [message for _, message, _ in PARAPHRASES]
    messages += WORDINGS
    messages += [
        "Request size exceeds model context window",
        "Too many input tokens. Max input tokens: 8192, request input token count: 9000",
        "Validation Error: prompt tokens (35000) exceed model maximum (32000)",
        "<html><title>413 Request Entity Too Large</title></html>",
    ]
    return [overflow._normalize([message]) for message in messages]


def test_every_example_is_classified() -> None:
    missed = [text for text in all_examples() if classify_overflow(text, status_code=413) is None]
    assert missed == []


def test_every_wording_rule_fires_somewhere() -> None:
    if not CASES:
        pytest.skip(shared_data_hint())
    texts = all_examples()
    unused = [
        rule.name for rule in overflow_rules.WORDING_RULES if not any(map(rule.matches, texts))
    ]
    assert unused == []


def test_every_number_pattern_reads_something() -> None:
    if not CASES:
        pytest.skip(shared_data_hint())
    texts = all_examples()
    unused = [
        pattern.pattern
        for needle, pattern in overflow_rules.ROLE_PATTERNS
        if not any(needle in text and pattern.search(text) for text in texts)
    ]
    assert unused == []


def test_needles_are_inside_what_their_pattern_matches() -> None:
    for text in all_examples():
        for rule in overflow_rules.WORDING_RULES:
            match = rule.pattern.search(text)
            if match is not None:
                assert rule.needle in text, rule.name


def test_status_stated_in_prose() -> None:
    assert classify_overflow("Error code: 429 - Please reduce the length of the messages.") is None
    info = classify_overflow("API error occurred: Status 413. Body: request entity too large")
    assert info is not None and info.kind == "request_too_large"


# Each alternative of the catalog's recommended wording union (CATALOG.md section 2, step 4),
# in a sentence of its own: all of them are recognised.
CATALOG_WORDINGS = [
    "prompt is too long",
    "Input is too long for requested model.",
    "Your input exceeds the context window of this model.",
    "The input token count (5) exceeds the maximum number of tokens allowed (4).",
    "This model's maximum prompt length is 4 but the request contains 5 tokens.",
    "Please reduce the length of the messages.",
    "This model's maximum context length is 4,096 tokens.",
    "the model's context length is only 4096 tokens",
    "The input (5 tokens) is longer than the model's context length (4 tokens).",
    "prompt token count of 5 exceeds the limit of 4",
    "the request exceeds the available context size, try increasing it",
    "tokens to keep from the initial prompt is greater than the context length",
    "the model is loaded with context length of only 4096 tokens",
    "invalid params, context window exceeds limit",
    "Your request exceeded model token limit: 4",
    "Prompt contains 5 tokens, too large for model with 4 maximum context length",
    "input length and `max_tokens` exceed context limit: 3 + 2 > 4",
    "Your messages exceed the configured limit.",
    "Current length is 5 while limit is 4",
    "model maximum context length: 4",
    "Range of input length should be [1, 4]",
    "too many tokens: size limit exceeded by 1 tokens.",
    "too many tokens: total number of tokens (prompt and prediction) cannot exceed 4 - received 5",
    "`inputs` tokens + `max_new_tokens` must be <= 4. Given: 3 `inputs` tokens and 2"
    " `max_new_tokens`",
    "`inputs` must have less than 4 tokens. Given: 5",
    "prompt too long; exceeded context length by 1 tokens",
    "the prompt is longer than the context length",
    "the input length exceeds the context length",
    "input length (5 tokens) exceeds the model's maximum context length (4 tokens)",
    "Request size exceeds model context window",
    "Request payload size exceeds the limit: 4 bytes.",
    "expected maxLength: 4, actual: 5",
    "request_too_large",
    "Request exceeds the maximum size",
    "Value at 'body' failed to satisfy constraint: Member must have length less than or equal to 4",
    "413 Request Entity Too Large",
    "Payload Too Large",
    "context_length_exceeded",
    "finish_reason: model_context_window_exceeded",
]


@pytest.mark.parametrize("message", CATALOG_WORDINGS)
def test_every_catalog_wording_is_recognised(message: str) -> None:
    info = classify_overflow(message)
    assert info is not None
    text = overflow._normalize([message])
    for rule in overflow_rules.WORDING_RULES:
        if rule.pattern.search(text):
            assert rule.needle in text, rule.name


def test_attributes_set_on_a_builtin_exception_are_read() -> None:
    err = ValueError("Please reduce the length of the messages.")
    assert classify_overflow(err) is not None
    err.status_code = 429  # type: ignore[attr-defined]
    assert classify_overflow(err) is None
