"""classify_overflow on real SDK exceptions: the non-overflow fast path (target <= 20 us, it
may run on every error of a hot loop) and a full overflow with its numbers.

The exceptions are real ``openai`` exceptions built from real HTTP responses (no network).
Run with ``python -m pytest benches/bench_overflow.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ctxbudget.overflow import classify_overflow

openai = pytest.importorskip("openai")
try:
    import httpx
except ImportError:  # openai releases built on the httpx2 fork
    httpx = pytest.importorskip("httpx2")


def status_error(cls: Any, status: int, body: dict[str, Any]) -> Any:
    """An openai exception exactly as the SDK builds it from a response."""
    request = httpx.Request("POST", "http://127.0.0.1:8000/v1/chat/completions")
    response = httpx.Response(status, request=request, json=body)
    message = f"Error code: {status} - {body['error']['message']}"
    return cls(message, response=response, body=body["error"])


RATE_LIMIT = {
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per min"
        " (TPM): Limit 30000, Used 28000, Requested 4000. Please try again in 4s.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
BAD_PARAMETER = {
    "error": {
        "message": "Invalid value for 'temperature': expected a number between 0 and 2.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "invalid_value",
    }
}
OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 131072 tokens. However, you requested"
        " 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the"
        " length of the messages or completion.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}


def test_non_overflow_bad_request(benchmark: Any) -> None:
    benchmark.group = "classify-overflow"
    err = status_error(openai.BadRequestError, 400, BAD_PARAMETER)
    assert benchmark(classify_overflow, err) is None


def test_non_overflow_rate_limit(benchmark: Any) -> None:
    benchmark.group = "classify-overflow"
    err = status_error(openai.RateLimitError, 429, RATE_LIMIT)
    assert benchmark(classify_overflow, err) is None


def test_non_overflow_plain_exception(benchmark: Any) -> None:
    benchmark.group = "classify-overflow"
    err = TimeoutError("The read operation timed out")
    assert benchmark(classify_overflow, err) is None


def test_overflow_with_numbers(benchmark: Any) -> None:
    benchmark.group = "classify-overflow"
    err = status_error(openai.BadRequestError, 400, OVERFLOW)
    info = benchmark(classify_overflow, err)
    assert info is not None and info.input_fits and info.output_reserve_cut == 62


def test_overflow_from_a_message_string(benchmark: Any) -> None:
    benchmark.group = "classify-overflow"
    message = f"Error code: 400 - {OVERFLOW!r}"
    info = benchmark(classify_overflow, message)
    assert info is not None and info.requested_tokens == 131134


def test_overflow_with_an_echoed_digit_run(benchmark: Any) -> None:
    """An overflow message that echoes 16k digits (a list of token ids) beside the phrases
    that number patterns follow: a pattern starting with a number was tried from every
    digit, 9 s here before it matched only from a number's start."""
    phrases = ", ".join(
        ["+", "in the messages", "in your prompt", "input tokens", "max_new_tokens"]
    )
    error = Exception(f"maximum context length exceeded. {phrases} ids={'1' * 16_000}")
    info = benchmark(classify_overflow, error)
    assert info is not None
