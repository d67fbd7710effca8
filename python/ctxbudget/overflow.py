"""Recognise a provider's "context too long" error, with the numbers it states (SPEC F1, F5).

:func:`classify_overflow` takes whatever the caller caught — an SDK exception (openai,
anthropic, google-genai, botocore, litellm, httpx, ...), our own
:class:`~ctxbudget.errors.ContextBudgetError`, a response body (dict or JSON string, nested or
double-encoded) or a plain message — and answers with an :class:`OverflowInfo`, or ``None``
when the error is something else.

The decision runs in this order; the first step that decides wins:

1. **Our own errors**: :class:`~ctxbudget.errors.ContextBudgetError` and
   :class:`~ctxbudget.errors.ContextOverflowError` carry their numbers.
2. **Structured negatives**: HTTP 401/402/403/429; rate-limit, quota, auth and content-filter
   codes and types (``rate_limit_exceeded``, ``insufficient_quota``, ``ThrottlingException``,
   ``RESOURCE_EXHAUSTED``, ``content_filter``, ...); SDK classes such as ``RateLimitError``;
   ``string_above_max_length`` on a parameter that is not message content.
3. **Structured positives**: ``code`` ``context_length_exceeded`` and its relatives,
   ``model_max_prompt_tokens_exceeded``, FastChat ``40303``, ``type``
   ``exceed_context_size_error`` / ``request_too_large``, vLLM's ``param=input_tokens``,
   llama.cpp's ``n_prompt_tokens``/``n_ctx``, ``string_above_max_length`` on message content,
   LiteLLM's ``ContextWindowExceededError``.
4. **Wording negatives**: rate limits (``per minute``, ``TPM``, ``rate limit``), quota, auth,
   content filters, and output caps (``supports at most N completion tokens``, ``cannot be
   greater than max_model_len``, ``param=max_tokens``) unless the message also talks about
   the input (vLLM's "max_tokens is too large ... your request has N input tokens" is a
   combined overflow, not a cap).
5. **Wording positives**: one rule per wording family (see ``_WORDING_RULES``), most specific
   first; each rule knows its kind, whether its numbers are tokens, and whether its wording
   says the input alone is over the window.
6. **Status heuristics** (low confidence): an HTTP 413 that nothing above explained, or a
   bare ``400 (no body)``.
7. **The cause**: the members of an exception group (``asyncio.TaskGroup``), and an
   exception raised ``from`` a provider error (``raise AgentError(...) from exc``), are
   looked through, at most eight exceptions in all, unless the wrapper is itself a negative.

Numbers are read by small role patterns (limit, total, input, output, draft, excess), not by
one regex per message, so a new sentence from a known family still yields its numbers. They
are read only when the rule that matched talks about tokens: never from characters, bytes,
error codes such as MiniMax's ``(2013)``, or from rate-limit errors (rejected before).

Only the first :data:`MAX_SCAN_CHARS` characters of each text are scanned.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ctxbudget.errors import ContextBudgetError, ContextOverflowError

__all__ = [
    "MAX_SCAN_CHARS",
    "Confidence",
    "OverflowInfo",
    "OverflowKind",
    "classify_overflow",
]

OverflowKind = Literal["input_overflow", "combined_overflow", "request_too_large"]
"""``input_overflow``: the input alone is over the window (or we cannot tell it fits).
``combined_overflow``: input plus reserved output are over, the input alone fits.
``request_too_large``: over a size limit in bytes or characters, not a token window."""

Confidence = Literal["high", "medium", "low"]

MAX_SCAN_CHARS: Final = 16_384
"""How many characters of each text (message, body, ``str(error)``) are scanned at most."""

_BUDGET_RULE: Final = "type:ContextBudgetError"


@dataclass(frozen=True, slots=True)
class OverflowInfo:
    """A recognised context-overflow error and the numbers the provider stated.

    Attributes:
        kind: ``"input_overflow"``, ``"combined_overflow"`` or ``"request_too_large"``.
        requested_tokens: The total the provider compared with its window: stated, or
            derived as input + output (+ draft) or limit + excess. ``None`` when not stated.
        limit_tokens: The stated window or cap.
        input_tokens: The stated input (prompt) count.
        output_tokens: The stated output reserve (``max_tokens``) that was counted.
        input_fits: ``True`` when only input + reserved output overflowed (the input alone is
            under the limit): lower the output reserve instead of compacting. ``False`` when
            the input alone is over. ``None`` when the message does not say.
        provider: A short provider id (``"openai"``, ``"anthropic"``, ``"bedrock"``,
            ``"gemini"``, ``"vllm"``, ``"openrouter"``, ...) when recognisable.
        rule: The rule that matched: ``"code:..."``, ``"type:..."``, ``"param:..."``,
            ``"class:..."``, ``"fields:..."``, ``"text:..."`` or ``"status:..."``.
        confidence: ``"high"``: a structured field only overflow errors carry, or a wording
            rule whose token numbers were read. ``"medium"``: a wording rule without token
            numbers. ``"low"``: a status-code heuristic (a 413 nothing else explained, a bare
            ``400 (no body)``); act on it only if your own estimate is near the window.
        exact: ``False`` when the provider qualified its counts (``about``, ``at least``) or
            they are our own estimate; such counts are bounds, not measurements.
        excess_tokens: How far over the limit the request was, when stated (Cohere, Ollama).
    """

    kind: OverflowKind
    requested_tokens: int | None = None
    limit_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_fits: bool | None = None
    provider: str | None = None
    rule: str = ""
    confidence: Confidence = "high"
    exact: bool = True
    excess_tokens: int | None = None

    @property
    def measured_input_tokens(self) -> int | None:
        """The provider's exact count of the input, for calibration (SPEC F5).

        A stated count is a free, exact measurement of what the request really weighed; the
        calibration tracker anchors its next estimate on it. ``None`` when the provider did
        not state one, qualified it (``at least``, ``about``), or the error is our own
        preflight (an estimate, not a measurement).
        """
        if not self.exact or self.rule == _BUDGET_RULE:
            return None
        return self.input_tokens

    @property
    def output_reserve_cut(self) -> int | None:
        """By how many tokens the output reserve (``max_tokens``) must shrink to fit.

        Set only when :attr:`input_fits` is ``True``: then lower the reserve by this much
        instead of compacting. When the counts are not exact (vLLM's ``at least``) it is a
        minimum; add a margin.
        """
        if not self.input_fits or self.requested_tokens is None or self.limit_tokens is None:
            return None
        return max(self.requested_tokens - self.limit_tokens, 0)

    @property
    def output_tokens_that_fit(self) -> int | None:
        """The largest output reserve that fits beside the stated input, when ``input_fits``."""
        if not self.input_fits or self.input_tokens is None or self.limit_tokens is None:
            return None
        return self.limit_tokens - self.input_tokens


# --------------------------------------------------------------------------------------------
# Rules. Every pattern runs on lower-cased text with whitespace collapsed, and only when its
# ``needle`` (a plain substring the pattern cannot match without) is present: a substring
# test costs nanoseconds, a regex search over a long message microseconds.

_N: Final = "[0-9][0-9,]*"  # 42328 or 42,328; commas are dropped when read


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    needle: str
    pattern: re.Pattern[str]
    kind: OverflowKind
    provider: str | None
    input_alone: bool  # the wording says the input alone is compared with the window
    tokens: bool  # the numbers in this wording are token counts

    def matches(self, text: str) -> bool:
        return self.needle in text and self.pattern.search(text) is not None


def _rule(
    name: str,
    needle: str,
    pattern: str | None = None,
    *,
    provider: str | None = None,
    kind: OverflowKind = "input_overflow",
    input_alone: bool = False,
    tokens: bool = True,
) -> _Rule:
    regex = re.compile(pattern.replace("{N}", _N) if pattern else re.escape(needle))
    return _Rule(f"text:{name}", needle, regex, kind, provider, input_alone, tokens)


_BYTES: Final = "request_too_large"

# Step 5, the wording families, most specific first. Byte and character limits come first:
# their numbers are not tokens.
_WORDING_RULES: Final[tuple[_Rule, ...]] = (
    _rule(
        "string too long",
        "string too long",
        r"invalid '(?:messages|input)\[[0-9]+\](?:\.(?:content|output|text|parts)[^']*)?': "
        r"string too long",
        provider="openai",
        kind=_BYTES,
        tokens=False,
    ),
    _rule(
        "request payload size exceeds the limit",
        "payload size exceeds the limit",
        provider="gemini",
        kind=_BYTES,
        tokens=False,
    ),
    _rule(
        "request exceeds the maximum size",
        "request exceeds the maximum size",
        provider="anthropic",
        kind=_BYTES,
        tokens=False,
    ),
    _rule(
        "member must have length less than or equal",
        "member must have length less than or equal",
        r"value at '[^']*(?:body|messages?|content|prompt|input|system)[^']*' failed to"
        r" satisfy constraint: member must have length less than or equal",
        provider="bedrock",
        kind=_BYTES,
        tokens=False,
    ),
    _rule("expected maxlength", "expected maxlength:", provider="bedrock", tokens=False),
    _rule(
        "request size exceeds model context window",
        "context window",
        r"request size exceeds (?:the )?model(?:'s)? context window",
        provider="anthropic",
    ),
    _rule(
        "exceed context limit",
        "context limit",
        r"exceeds? (?:the )?context limit",
        provider="anthropic",
    ),
    _rule(
        "model maximum context length",
        "model maximum context length",
        r"prompt is too long: ?{N}, model maximum context length|model maximum context length:",
        provider="fireworks",
    ),
    _rule("prompt is too long", "prompt is too long", provider="anthropic"),
    _rule(
        "input is too long for requested model",
        "input is too long for",
        r"input is too long for (?:the )?requested model",
        provider="bedrock",
    ),
    _rule("too many input tokens", "too many input tokens", provider="bedrock"),
    _rule(
        "prompt tokens exceed model maximum",
        "model maximum (",
        r"prompt tokens \({N}\) exceeds? (?:the )?model maximum \(",
        provider="bedrock",
    ),
    _rule(
        "input token count exceeds the maximum",
        "input token count",
        r"input token count.{0,24}?exceeds the maximum|input token count is {N} but"
        r" (?:the )?model only supports",
        provider="gemini",
    ),
    _rule("maximum prompt length", "maximum prompt length is", provider="xai"),
    _rule(
        "context length is only",
        "context length is only",
        r"context length is only {N} tokens",
        provider="vllm",
    ),
    _rule(
        "longer than the maximum model length",
        "longer than the maximum model length",
        provider="vllm",
    ),
    _rule(
        "input prompt is too long",
        ") is too long",
        # vLLM's input processor, for a prompt with multimodal tokens: "The prompt (total
        # length 25938) is too long to fit into the model (context length 4096)" (vllm#12165).
        r"input prompt \({N} tokens\) is too long|prompt \(total length {N}\) is too long to fit",
        provider="vllm",
    ),
    _rule(
        "maximum context length",
        "maximum context length",
        r"maximum context length (?:is|of) [0-9]",
    ),
    _rule(
        "longer than the model's context length",
        "context length",
        r"longer than the model'?s (?:maximum )?context length",
    ),
    _rule(
        "exceeds the model's maximum context length",
        "maximum context length",
        r"exceeds (?:the )?model'?s maximum context length",
    ),
    _rule(
        "input tokens exceed",
        "input",
        r"input tokens? (?:count )?exceed"
        # SGLang's scheduler, an input over its max_req_input_len (an input-only cap):
        # "Input length (N tokens) exceeds the maximum allowed length (L tokens)"
        # (sglang python/sglang/srt/managers/utils.py, validate_input_length).
        r"|input length \({N} tokens\) exceeds the maximum allowed length",
    ),
    _rule(
        "token count exceeds the limit",
        "limit",
        r"token count (?:of )?{N} exceeds (?:the )?limit of [0-9]"
        # What exceeds the limit must be the messages or tokens: "Image count exceeds the
        # configured limit of 8" is no context window.
        r"|(?:messages?|input|prompt|tokens?|token count) exceeds? the configured limit",
    ),
    _rule(
        "exceeds the available context size",
        "exceeds the available context size",
        provider="llama.cpp",
    ),
    _rule(
        "context length of only",
        "context length",
        r"context length of only {N} tokens|greater than the context length",
        provider="lmstudio",
    ),
    _rule(
        "context window exceeds limit",
        "context window exceeds",
        r"context window exceeds (?:the )?limit",
        provider="minimax",
    ),
    _rule(
        "exceeded model token limit",
        "model token limit",
        r"exceeded (?:the )?model token limit",
        provider="moonshot",
    ),
    _rule(
        "too large for model with maximum context length",
        "maximum context length",
        r"too large for model with {N} maximum context length",
        provider="mistral",
    ),
    _rule(
        "current length while limit",
        "while limit is",
        r"current length is {N} while limit is [0-9]",
        provider="cerebras",
        input_alone=True,
    ),
    _rule(
        "range of input length",
        "range of input length should be",
        provider="dashscope",
        input_alone=True,
    ),
    _rule(
        "too many tokens: size limit exceeded",
        "too many tokens: size limit exceeded",
        provider="cohere",
        input_alone=True,
    ),
    _rule(
        "too many tokens: total number of tokens",
        "too many tokens: total number of tokens",
        provider="cohere",
    ),
    _rule(
        "inputs tokens + max_new_tokens",
        "max_new_tokens",
        r"inputs`? tokens \+ `?max_new_tokens`? must be",
        provider="tgi",
    ),
    _rule(
        "inputs must have less than",
        "must have less than",
        r"inputs`? must have less than [0-9]",
        provider="tgi",
    ),
    _rule(
        "prompt longer than the context length",
        "context length",
        r"prompt (?:is )?(?:too long; exceeded (?:max )?context length|longer than the context"
        r" length)|input length exceeds the (?:maximum )?context length",
        provider="ollama",
        input_alone=True,
    ),
    _rule(
        "exceeds the context window",
        "context",
        r"exceed(?:s|ed)? (?:the |its |your )?(?:model'?s )?(?:max(?:imum)? )?context"
        r" (?:window|length|size)\b",
    ),
    _rule(
        "reduce the length of the messages",
        "reduce the length of the",
        r"reduce the length of the (?:input )?messages",
    ),
    _rule(
        "context length exceeded",
        "exceeded",
        r"context[_ ](?:length|window)[_ ]exceeded|contextwindowexceedederror"
        # llama.cpp's server when a slot's context fills, as an HTTP 500 or an error event in
        # a 200 stream, also relayed by LM Studio: {"error":{"code":500,"message":"Context
        # size has been exceeded.","type":"server_error"}} (lmstudio-bug-tracker#2322, #2339).
        r"|context size has been exceeded",
    ),
    _rule(
        "request too large",
        "large",
        r"request entity too large|payload too large|request_too_large",
        kind=_BYTES,
        tokens=False,
    ),
)

# Step 4. Rate limits, quota, auth and content filters never describe a context overflow.
_NEGATIVE_TEXT: Final = re.compile(
    r"per (?:minute|min\b|hour|day|second)|\((?:tpm|rpm|tpd|rpd|itpm|otpm)\)|rate[ _-]?limit"
    r"|please wait before trying again|too many requests|quota|api key not valid"
    r"|incorrect api key|invalid api key|invalid x-api-key|content management policy"
    r"|content[_ ]filter|responsibleaipolicyviolation"
)
# An output cap (``max_tokens`` over the model's output limit) is not an overflow, unless the
# message also talks about the input: then the reserve was too big for what is left.
_OUTPUT_CAP_TEXT: Final = re.compile(
    r"maximum allowed number of output tokens|supports at most [0-9][0-9,]* completion tokens"
    r"|cannot be greater than max_model_len|please request fewer output tokens"
    r"|max(?:imum)?[ _-]?(?:output[ _-]|completion[ _-]|new[ _-])?tokens?`?'?\s?"
    r"(?:is too large|must be|cannot|exceeds?|:\s?[0-9][0-9,]* >|=)"
)
_INPUT_MENTION: Final = re.compile(r"input|prompt|messages")
_OUTPUT_PARAMS: Final = frozenset({"max_tokens", "max_completion_tokens", "max_output_tokens"})
# Characters without tokens: a length limit in characters (an image prompt, a field).
_CHARACTERS: Final = re.compile(r"\bcharacters?\b")

# Step 2. Structured negatives.
_NEGATIVE_STATUS: Final = frozenset({401, 402, 403, 429})
_NEGATIVE_CODE: Final = re.compile(
    r"rate_?limit|quota|throttl|resource_exhausted|invalid_api_key|api_key_invalid"
    r"|unauthenticated|unauthorized|permission_denied|accessdenied|content_filter"
    r"|responsibleaipolicyviolation|content_policy|spend_limit|billing"
)
_NEGATIVE_TYPES: Final = frozenset(
    {
        "rate_limit_error",
        "tokens",
        "requests",
        "insufficient_quota",
        "authentication_error",
        "permission_error",
        "billing_error",
    }
)
_NEGATIVE_CLASSES: Final = frozenset(
    {
        "RateLimitError",
        "AuthenticationError",
        "PermissionDeniedError",
        "ThrottlingException",
        "ServiceQuotaExceededException",
        "TooManyRequests",
        "ResourceExhausted",
        "Unauthenticated",
        "PermissionDenied",
        "ContentPolicyViolationError",
        "ContentFilterFinishReasonError",
    }
)

# Step 3. Structured positives.
_POSITIVE_CODE: Final = re.compile(
    r"context_?(?:length|window)_?exceeded|max_prompt_tokens_exceeded|prompt_too_long"
    r"|input_too_long|^40303$"
)
_CODE_PROVIDERS: Final = {"40303": "fastchat", "model_max_prompt_tokens_exceeded": "copilot"}
_POSITIVE_TYPES: Final[dict[str, tuple[OverflowKind, str | None]]] = {
    "exceed_context_size_error": ("input_overflow", "llama.cpp"),
    "context_length_exceeded": ("input_overflow", None),
    "request_too_large": ("request_too_large", "anthropic"),
}
#: Parameters that hold message content: a string too long there is content that pruning can
#: shorten (not an id, a name or a call id, which it cannot).
_CONTENT_PARAM: Final = re.compile(
    r"^(?:(?:messages|input|contents?)(?:\[[0-9]+\](?:\.(?:content|output|text|parts)\b.*)?)?"
    r"|prompt)$"
)
_POSITIVE_CLASSES: Final = frozenset({"ContextWindowExceededError", "ContextWindowOverflowError"})

# Without one of these words (or a structured positive) there is nothing to read further.
_CANDIDATE: Final = re.compile(
    r"token|context|too[ _]long|too[ _]large|length|size|exceed|limit|payload|no body|overflow"
)
# Step 6, low confidence: "400 status code (no body)" (Cerebras, Mistral through openai-node).
_NO_BODY: Final = re.compile(r"^(?:error: ?)?4(?:00|13)\s?(?:status code)?\s?\(no body\)")

# Codes stated in prose: botocore, azure-core "(code) msg\nCode: ...", .NET "ErrorCode: ...",
# and vLLM's "(parameter=input_tokens, value=N)" suffix.
_TEXT_CODES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("an error occurred (", re.compile(r"an error occurred \(([\w.]+)\)")),
    ("code: ", re.compile(r"(?:^|\n)\s*code: ([a-z_][\w.]*)")),
    ("errorcode: ", re.compile(r"errorcode: ([a-z_][\w.]*)")),
    ("(", re.compile(r"^\(([a-z_][\w.]*)\) ")),
)
_TEXT_PARAM: Final = re.compile(r"\(parameter=(\w+)")
# A status stated in prose: "Error code: 429 - ...", "Status 400. Body: ...", "status 400:".
_TEXT_STATUS: Final = re.compile(r"(?:error code|status code|status)[:=]? ?([1-5][0-9]{2})\b")

# --------------------------------------------------------------------------------------------
# Numbers: role patterns with named groups (limit, total, input, functions, output, draft,
# excess), each behind a needle. The first match of each role wins.


#: A pattern that starts with a number: searched, it would be tried from every digit of a long
#: run (an echoed list of token ids), each try backtracking over the rest of the run.
_LEADING_NUMBER: Final = re.compile(r"\(\?P<\w+>\{N\}\)")


def _roles(*specs: tuple[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The role patterns, ``{N}`` a number; one that starts with a number only matches from
    the start of one (linear in a long digit run, not quadratic)."""
    return tuple(
        (needle, re.compile(_from_number_start(p).replace("{N}", _N))) for needle, p in specs
    )


def _from_number_start(pattern: str) -> str:
    return f"(?<![0-9,]){pattern}" if _LEADING_NUMBER.match(pattern) else pattern


_ROLE_PATTERNS: Final = _roles(
    # Anthropic "input + output > limit".
    ("+", r"(?P<input>{N})\s?\+\s?(?P<output>{N})\s?>\s?(?P<limit>{N})"),
    # Limits.
    ("maximum context length", r"maximum context length(?: is| of)?:? (?P<limit>{N})"),
    ("context length is only", r"context length is only (?P<limit>{N}) tokens"),
    # "context length (4096 tokens)" (SGLang, Together); "(context length 4096)" (vLLM).
    ("context length", r"(?:context length \(|\(context length )(?P<limit>{N})(?: tokens)?\)"),
    ("limit of", r"exceed(?:s|ed)? (?:the )?(?:configured |maximum )?limit of (?P<limit>{N})"),
    ("maximum", r"> (?P<limit>{N}) maximum"),
    ("tokens allowed", r"maximum number of tokens allowed \(?(?P<limit>{N})"),
    ("context window of", r"context window of (?P<limit>{N})"),
    ("maximum prompt length is", r"maximum prompt length is (?P<limit>{N})"),
    # llama.cpp "context size (L tokens)"; SGLang "maximum allowed length (L tokens)".
    (" tokens)", r"(?:context size|maximum allowed length) \((?P<limit>{N}) tokens\)"),
    ("context length of only", r"context length of only (?P<limit>{N}) tokens"),
    ("token limit:", r"token limit: (?P<limit>{N})"),
    ("maximum context length", r"model with (?P<limit>{N}) maximum context length"),
    ("while limit is", r"while limit is (?P<limit>{N})"),
    ("range of input length", r"range of input length should be \[[0-9]+, ?(?P<limit>{N})\]"),
    ("limit for this model is", r"limit for this model is (?P<limit>{N})"),
    ("cannot exceed", r"cannot exceed (?P<limit>{N})"),
    ("must be <=", r"must be <= (?P<limit>{N})"),
    ("must have less than", r"must have less than (?P<limit>{N}) tokens"),
    ("only supports up to", r"only supports up to (?P<limit>{N})"),
    ("max input tokens:", r"max input tokens: (?P<limit>{N})"),
    ("maximum model length of", r"maximum model length of (?P<limit>{N})"),
    ("model maximum (", r"model maximum \((?P<limit>{N})\)"),
    # Totals, which may include the output reserve.
    ("requested ", r"requested (?:about |a total of |approximately )?(?P<total>{N}) tokens"),
    ("for a total of", r"for a total of (?:at least )?(?P<total>{N}) tokens"),
    ("(requested:", r"\(requested: (?P<total>{N})\)"),
    ("requested tokens (", r"requested tokens \((?P<total>{N})\)"),
    ("received ", r"received (?P<total>{N})"),
    ("current length is", r"current length is (?P<total>{N})"),
    # Inputs.
    ("resulted in", r"resulted in (?P<input>{N}) tokens"),
    (
        "in the messages",
        r"(?P<input>{N}) in the messages(?:, (?P<functions>{N}) in the functions)?",
    ),
    (" in your prompt", r"(?P<input>{N}) in your prompt"),
    (" of text input", r"(?P<input>{N}) of text input(?:, (?P<functions>{N}) of tool input)?"),
    ("tokens from the input", r"(?P<input>{N}) tokens from the input"),
    (" input tokens", r"(?P<input>{N}) input tokens"),
    ("input token count", r"input token count (?:is |of )?\(?(?P<input>{N})"),
    ("prompt is too long:", r"prompt is too long: (?P<input>{N})"),
    (" tokens)", r"input(?: length| prompt)? \((?P<input>{N}) tokens\)"),
    ("given:", r"given: (?P<input>{N})"),
    ("prompt contains", r"prompt contains (?P<input>{N}) tokens(?: and (?P<draft>{N}) draft)?"),
    ("prompt token count", r"prompt token count (?:of |is )?(?P<input>{N})"),
    ("request (", r"request \((?P<input>{N}) tokens\)"),
    ("keep the first", r"keep the first (?P<input>{N}) tokens"),
    ("request contains", r"request contains (?P<input>{N}) tokens"),
    ("prompt tokens (", r"prompt tokens \((?P<input>{N})\)"),
    ("input token count:", r"input token count: (?P<input>{N})"),
    ("prompt (", r"prompt \((?:total )?length (?P<input>{N})\)"),
    # Output reserve.
    (" the completion", r"(?P<output>{N}) (?:in|for) the completion"),
    (" in the output", r"(?P<output>{N}) in the output"),
    ("tokens for the completion", r"(?P<output>{N}) tokens for the completion"),
    (" output tokens", r"requested (?P<output>{N}) output tokens"),
    ("max_new_tokens", r"(?P<output>{N}) `?max_new_tokens"),
    ("is too large:", r"is too large: (?P<output>{N})"),
    # Excess over the limit.
    (" by ", r"exceeded (?:max context length )?by (?P<excess>{N}) tokens"),
)
_APPROXIMATE: Final = (
    ("about ", "at least ", "approximately ", "~"),
    re.compile(r"\babout [0-9]|at least [0-9]|approximately [0-9]|~\s?[0-9]"),
)

# Provider hints, in this order: a structured field (litellm ``llm_provider``, OpenRouter
# ``provider_name``, botocore's operation), the request's host, the exception's package, a
# word in the text, the rule's own provider.
_HOSTS: Final = (
    ("openai.azure.com", "azure"),
    ("azure", "azure"),
    ("api.openai.com", "openai"),
    ("anthropic.com", "anthropic"),
    ("openrouter.ai", "openrouter"),
    ("deepseek.com", "deepseek"),
    ("groq.com", "groq"),
    ("cerebras.ai", "cerebras"),
    ("together", "together"),
    ("fireworks.ai", "fireworks"),
    ("mistral.ai", "mistral"),
    ("x.ai", "xai"),
    ("moonshot", "moonshot"),
    ("dashscope", "dashscope"),
    ("cohere", "cohere"),
    ("googleapis.com", "gemini"),
)
_PACKAGES: Final = {
    "anthropic": "anthropic",
    "google": "gemini",
    "mistralai": "mistral",
    "cohere": "cohere",
    "groq": "groq",
    "ollama": "ollama",
    "botocore": "bedrock",
}
_TEXT_PROVIDERS: Final = (
    ("fireworks", "fireworks"),
    ("openrouter", "openrouter"),
    ("this endpoint's maximum context length", "openrouter"),
    ("middle-out", "openrouter"),
    ("anthropic", "anthropic"),
    ("xai:", "xai"),
    ("x.ai", "xai"),
    ("groq", "groq"),
    ("ollama", "ollama"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
    ("cerebras", "cerebras"),
    ("together", "together"),
    ("cohere", "cohere"),
    ("dashscope", "dashscope"),
    ("internalerror.algo", "dashscope"),
    ("moonshot", "moonshot"),
    ("kimi", "moonshot"),
    ("minimax", "minimax"),
    ("azure", "azure"),
    ("bedrock", "bedrock"),
    ("when calling the invokemodel", "bedrock"),
    ("when calling the converse", "bedrock"),
    ("vertex", "gemini"),
    ("gemini", "gemini"),
    ("generativelanguage", "gemini"),
    ("vllm", "vllm"),
    ("(parameter=input_", "vllm"),
    ("sglang", "sglang"),
    ("allow-auto-truncate", "sglang"),  # SGLang's advice: "enable --allow-auto-truncate"
    ("lm studio", "lmstudio"),
    ("lmstudio", "lmstudio"),
    ("llama.cpp", "llama.cpp"),
)

_CODE_KEYS: Final = frozenset({"code", "error_code", "errorcode", "reason", "finish_reason"})
_TYPE_KEYS: Final = frozenset({"type", "error_type", "__type", "errortype"})
_PARAM_KEYS: Final = frozenset({"param", "parameter"})
_STATUS_KEYS: Final = frozenset(
    {"status", "status_code", "statuscode", "raw_status_code", "httpstatuscode", "http_status"}
)
_FIELD_KEYS: Final = frozenset({"n_prompt_tokens", "n_ctx"})
_PROVIDER_KEYS: Final = frozenset({"provider_name", "llm_provider"})
_MAX_NODES: Final = 256
_MAX_DEPTH: Final = 8
_MAX_BRACES: Final = 128  # ast.literal_eval recurses in C: refuse deeply nested reprs


# --------------------------------------------------------------------------------------------
# Collecting the signals


class _Signals:
    """Everything read from the error before deciding. Cheap to fill, never raises."""

    __slots__ = (
        "classes",
        "codes",
        "error",
        "fields",
        "nodes",
        "params",
        "provider",
        "raw",
        "status",
        "texts",
        "types",
    )

    def __init__(self, error: object, status: int | None) -> None:
        self.error = error
        self.status = status
        self.codes: set[str] = set()
        self.types: set[str] = set()
        self.params: set[str] = set()
        self.texts: list[str] = []  # what the wording rules read
        self.raw: list[str] = []  # texts that may still hold an undecoded body
        self.fields: dict[str, int] = {}
        self.classes: frozenset[str] = frozenset()
        self.provider: str | None = None
        self.nodes = 0

    def set_status(self, value: object) -> None:
        if (
            self.status is None
            and isinstance(value, int)
            and not isinstance(value, bool)
            and 100 <= value <= 599
        ):
            self.status = int(value)

    def add_code(self, value: object) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int):
            if 100 <= value <= 599:  # vLLM, Gemini and proxies put the HTTP status in "code"
                self.set_status(value)
            else:
                self.codes.add(str(int(value)))
        elif isinstance(value, str) and value:
            self.codes.add(value[:80].lower())

    def add_text(self, value: str) -> None:
        text = value[:MAX_SCAN_CHARS]
        if any(text in seen for seen in self.texts):
            return  # the body's message repeats str(error): scan it once
        self.texts.append(text)
        if "{" in text:
            self.raw.append(text)

    def add_string(self, value: str, depth: int = 0) -> None:
        """A message or body: decode it when it is JSON (possibly again), else keep the text."""
        stripped = value[: MAX_SCAN_CHARS + 64].lstrip()
        if stripped[:1] in ("{", "[") and depth < _MAX_DEPTH:
            decoded = _decode_body(stripped[:MAX_SCAN_CHARS])
            if decoded is not None:
                self.walk(decoded, depth + 1)
                return
        self.add_text(value)

    def walk(self, node: object, depth: int = 0) -> None:
        """Read codes, types, params, statuses and messages from a decoded body."""
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return
        if isinstance(node, (dict, Mapping)):
            for count, (key, value) in enumerate(node.items()):
                if count >= 64:
                    break
                self._walk_item(key.lower() if isinstance(key, str) else "", value, depth)
        elif isinstance(node, (list, tuple)):
            for item in node[:32]:
                self.walk(item, depth + 1)
        elif isinstance(node, str):
            self.add_string(node, depth)

    def _walk_item(self, key: str, value: object, depth: int) -> None:
        if isinstance(value, str):
            if key in _CODE_KEYS:
                self.add_code(value)
            elif key in _TYPE_KEYS:
                self.types.add(value[:80].lower())
            elif key in _PARAM_KEYS:
                self.params.add(value[:200].lower())
            elif key in _PROVIDER_KEYS:
                self.provider = self.provider or value[:40].lower()
            elif key in _STATUS_KEYS and " " not in value:
                self.add_code(value)  # "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"
            elif " " in value or value.lstrip()[:1] in ("{", "["):
                self.add_string(value, depth)
        elif isinstance(value, int) and not isinstance(value, bool):
            if key in _FIELD_KEYS:
                self.fields[key] = int(value)
            elif key in _CODE_KEYS:
                self.add_code(value)
            elif key in _STATUS_KEYS:
                self.set_status(value)
        elif isinstance(value, (dict, list, tuple, Mapping)):
            self.walk(value, depth + 1)

    def read_prose(self) -> None:
        """Codes and params stated in prose, and a body embedded in a message."""
        for text in self.texts:
            lowered = text.lower()
            for needle, pattern in _TEXT_CODES:
                if needle in lowered:
                    for match in pattern.finditer(lowered):
                        self.add_code(match.group(1))
            if "(parameter=" in lowered:
                self.params.update(m.group(1) for m in _TEXT_PARAM.finditer(lowered))
            if self.status is None and ("status" in lowered or "error code" in lowered):
                status = _TEXT_STATUS.search(lowered)
                if status is not None:
                    self.set_status(int(status.group(1)))
        if self.nodes == 0:  # no decoded body yet: look for one inside the message
            for text in self.raw[:4]:
                decoded = _decode_body(text[text.find("{") :])
                if decoded is not None:
                    self.walk(decoded, 1)


_DECODER: Final = json.JSONDecoder()


def _decode_body(text: str) -> object | None:
    """Decode JSON, a Python repr or a Ruby hash at the start of ``text``; None if none."""
    attempts = [text]
    if "=>" in text:  # Ruby: {"error" => {...}}
        attempts.append(text.replace('" => ', '": ').replace('"=>', '":'))
    if "\\'" in text:  # JSON with a stray escaped apostrophe (SGLang: model\'s)
        attempts.append(text.replace("\\'", "'"))
    for attempt in attempts:
        try:
            decoded: object = _DECODER.raw_decode(attempt)[0]
        except (ValueError, RecursionError):
            continue
        return decoded
    end = text.rfind("}")
    if end > 0 and "':" in text and text.count("{") + text.count("[") <= _MAX_BRACES:
        try:
            evaluated: object = ast.literal_eval(text[: end + 1])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return evaluated
    return None


def _attr(obj: object, name: str) -> Any:
    """``getattr`` that survives properties that raise."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _safe_str(obj: object) -> str:
    try:
        text = str(obj)
    except Exception:
        return ""
    return text[:MAX_SCAN_CHARS] if isinstance(text, str) else ""


_CLASS_NAMES: dict[type, frozenset[str]] = {}


def _class_names(cls: type) -> frozenset[str]:
    """The names of ``cls`` and its bases, cached per class (SDK classes are few)."""
    names = _CLASS_NAMES.get(cls)
    if names is None:
        names = frozenset(klass.__name__ for klass in cls.__mro__)
        if len(_CLASS_NAMES) < 512:
            _CLASS_NAMES[cls] = names
    return names


def _read_attributes(error: object, sig: _Signals) -> None:
    """The cheap half of an SDK exception: status, code, type, param, botocore's response."""
    for name in ("status_code", "status"):
        value = _attr(error, name)
        if isinstance(value, str):
            sig.add_code(value)  # google-genai: "INVALID_ARGUMENT"
        else:
            sig.set_status(value)
    sig.add_code(_attr(error, "code"))  # openai: the body's code; google: the HTTP status
    sig.add_code(_attr(error, "error_code"))  # anthropic: error.details.error_code
    value = _attr(error, "type")
    if isinstance(value, str):
        sig.types.add(value[:80].lower())
    value = _attr(error, "param")
    if isinstance(value, str):
        sig.params.add(value[:200].lower())
    response = _attr(error, "response")
    if isinstance(response, dict):  # botocore: the parsed error response
        meta = response.get("ResponseMetadata")
        if isinstance(meta, Mapping):
            sig.set_status(meta.get("HTTPStatusCode"))
        err = response.get("Error")
        if isinstance(err, Mapping):
            sig.add_code(err.get("Code"))
            message = err.get("Message")
            if isinstance(message, str):
                sig.add_text(message)
        operation = _attr(error, "operation_name")
        if isinstance(operation, str):
            bedrock = "Converse" in operation or "InvokeModel" in operation
            sig.provider = "bedrock" if bedrock else "aws"
    elif response is not None:
        sig.set_status(_attr(response, "status_code"))


def _read_bodies(error: object, sig: _Signals) -> None:
    """The rest: the body, the message, and the response text when there is no body."""
    first = sig.texts[-1] if sig.texts else ""
    for name in ("message", "api_message"):
        value = _attr(error, name)
        if isinstance(value, str) and value and value not in first:
            sig.add_string(value)
    body = _attr(error, "body")  # openai, anthropic
    if isinstance(body, (dict, list)):
        sig.walk(body)
    elif isinstance(body, str) and body not in first:
        sig.add_string(body)
    details = _attr(error, "details")  # google-genai: the response JSON
    if isinstance(details, (dict, list)):
        sig.walk(details)
    if body is None:
        response = _attr(error, "response")  # httpx.HTTPStatusError: the body is only here
        if response is not None and not isinstance(response, dict):
            text = _attr(response, "text")
            if isinstance(text, str):
                sig.add_string(text)
    provider = _attr(error, "llm_provider")  # litellm
    if sig.provider is None and isinstance(provider, str) and provider:
        sig.provider = provider[:40].lower()


def _provider_of(error: object) -> str | None:
    """The provider from the request's host, else from the exception's package."""
    for holder in (_attr(error, "request"), _attr(_attr(error, "response"), "request")):
        url = _attr(holder, "url")
        if url is None:
            continue
        host = _attr(url, "host")
        text = host if isinstance(host, str) else _safe_str(url)
        for needle, provider in _HOSTS:
            if needle in text:
                return provider
    if isinstance(error, BaseException):
        return _PACKAGES.get(type(error).__module__.partition(".")[0])
    return None


def _text_provider(text: str) -> str | None:
    for needle, provider in _TEXT_PROVIDERS:
        if needle in text:
            return provider
    return None


# --------------------------------------------------------------------------------------------
# Deciding


def _normalize(texts: list[str]) -> str:
    joined = "\n".join(texts)
    if "\\" in joined:
        joined = joined.replace("\\'", "'").replace('\\"', '"').replace("\\n", " ")
    return " ".join(joined.lower().split())


def _structured_negative(sig: _Signals) -> bool:
    if sig.status in _NEGATIVE_STATUS:
        return True
    if not sig.classes.isdisjoint(_NEGATIVE_CLASSES) or not sig.types.isdisjoint(_NEGATIVE_TYPES):
        return True
    if any(_NEGATIVE_CODE.search(code) for code in sig.codes):
        return True
    return "string_above_max_length" in sig.codes and not any(
        _CONTENT_PARAM.match(param) for param in sig.params
    )


def _structured_positive(sig: _Signals) -> tuple[str, OverflowKind, str | None] | None:
    """The structured rule that fired, as (name, kind, provider), or None."""
    for code in sorted(sig.codes):
        if _POSITIVE_CODE.search(code):
            return f"code:{code}", "input_overflow", _CODE_PROVIDERS.get(code)
    for type_ in sorted(sig.types):
        if type_ in _POSITIVE_TYPES:
            kind, provider = _POSITIVE_TYPES[type_]
            return f"type:{type_}", kind, provider
    if "string_above_max_length" in sig.codes:  # on message content: negatives ran first
        return "code:string_above_max_length", "request_too_large", "openai"
    for param in ("input_tokens", "input_text"):
        if param in sig.params:
            return f"param:{param}", "input_overflow", "vllm"
    if "n_prompt_tokens" in sig.fields and "n_ctx" in sig.fields:
        return "fields:n_prompt_tokens,n_ctx", "input_overflow", "llama.cpp"
    for name in sorted(sig.classes & _POSITIVE_CLASSES):
        return f"class:{name}", "input_overflow", None
    return None


def _read_numbers(text: str, fields: dict[str, int]) -> dict[str, int]:
    found: dict[str, int] = {}
    if "n_prompt_tokens" in fields:
        found["input"] = fields["n_prompt_tokens"]
    if "n_ctx" in fields:
        found["limit"] = fields["n_ctx"]
    for needle, pattern in _ROLE_PATTERNS:
        if needle not in text:
            continue
        match = pattern.search(text)
        if match is None:
            continue
        groups = {role: value for role, value in match.groupdict().items() if value}
        if "input" in groups and "input" in found:
            continue  # keep the first input together with the parts stated beside it
        for role, value in groups.items():
            if role not in found:
                found[role] = int(value.replace(",", "") or 0)
    return found


def _is_approximate(text: str) -> bool:
    needles, pattern = _APPROXIMATE
    return any(n in text for n in needles) and pattern.search(text) is not None


def _decide(sig: _Signals) -> OverflowInfo | None:
    if _structured_negative(sig):
        return None
    structured = _structured_positive(sig)
    text = _normalize(sig.texts)
    rule = next((r for r in _WORDING_RULES if r.matches(text)), None)
    if structured is None:
        if _NEGATIVE_TEXT.search(text):
            return None
        output_cap = _OUTPUT_CAP_TEXT.search(text) or not sig.params.isdisjoint(_OUTPUT_PARAMS)
        if output_cap and not _INPUT_MENTION.search(text):
            return None
        if rule is None:
            return _status_heuristic(sig, text)
        name, kind, provider = rule.name, rule.kind, rule.provider
    else:
        name, kind, provider = structured
        if rule is not None:
            kind, provider = rule.kind, provider or rule.provider
    tokens = rule is None or rule.tokens
    if kind != _BYTES and tokens and "token" not in text and _CHARACTERS.search(text):
        kind, tokens = _BYTES, False  # a length limit in characters, not a token window

    numbers = _read_numbers(text, sig.fields) if tokens and kind != _BYTES else {}
    limit = numbers.get("limit")
    input_tokens = numbers.get("input")
    if input_tokens is not None and "functions" in numbers:
        input_tokens += numbers["functions"]
    output = numbers.get("output")
    excess = numbers.get("excess")
    requested = numbers.get("total")
    if requested is None and input_tokens is not None:
        requested = input_tokens + (output or 0) + numbers.get("draft", 0)
    if requested is None and limit is not None and excess is not None:
        requested = limit + excess

    input_fits: bool | None = None
    if input_tokens is not None and limit is not None:
        if input_tokens >= limit:
            input_fits = False
        elif output is not None:
            input_fits = True
    elif rule is not None and rule.input_alone:
        input_fits = False
    if kind != _BYTES:
        kind = "combined_overflow" if input_fits else "input_overflow"
    stated = limit is not None or requested is not None
    return OverflowInfo(
        kind=kind,
        requested_tokens=requested,
        limit_tokens=limit,
        input_tokens=input_tokens,
        output_tokens=output,
        input_fits=input_fits,
        provider=sig.provider or _provider_of(sig.error) or _text_provider(text) or provider,
        rule=name,
        confidence="high" if structured is not None or stated else "medium",
        exact=not _is_approximate(text),
        excess_tokens=excess,
    )


def _status_heuristic(sig: _Signals, text: str) -> OverflowInfo | None:
    if sig.status in (400, 413, None) and "no body" in text and _NO_BODY.search(text):
        rule = "status:no body"
    elif sig.status == 413:
        rule = "status:413"
    else:
        return None
    kind: OverflowKind = "request_too_large" if sig.status == 413 else "input_overflow"
    provider = sig.provider or _provider_of(sig.error) or _text_provider(text)
    return OverflowInfo(kind=kind, provider=provider, rule=rule, confidence="low")


def _from_own_error(error: ContextBudgetError | ContextOverflowError) -> OverflowInfo:
    if isinstance(error, ContextOverflowError) and error.info is not None:
        return error.info
    window, requested = error.context_window, error.requested_tokens
    input_tokens: int | None = None
    output: int | None = None
    exact, provider = True, None
    if isinstance(error, ContextBudgetError):
        input_tokens, output = error.input_tokens, error.reserved_output
        exact, provider = error.exact, "ctxbudget"
    input_fits: bool | None = None
    if input_tokens is not None and window is not None:
        input_fits = input_tokens < window
    return OverflowInfo(
        kind="combined_overflow" if input_fits else "input_overflow",
        requested_tokens=requested,
        limit_tokens=window,
        input_tokens=input_tokens,
        output_tokens=output,
        input_fits=input_fits,
        provider=provider,
        rule=error.rule or f"type:{type(error).__name__}",
        confidence="high",
        exact=exact,
    )


def _worth_reading(sig: _Signals) -> bool:
    """False when nothing in the error could make it an overflow (the fast exit)."""
    if sig.status == 413 or sig.fields:
        return True
    if any(_POSITIVE_CODE.search(code) for code in sig.codes):
        return True
    if not sig.types.isdisjoint(_POSITIVE_TYPES) or not sig.classes.isdisjoint(_POSITIVE_CLASSES):
        return True
    return any(_CANDIDATE.search(text.lower()) for text in sig.texts)


_MAX_LOOKED_THROUGH: Final = 8


class _Visits:
    """How many more exceptions one call may look through (causes and group members):
    a bound on the work for chains that loop and groups nested in groups."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = _MAX_LOOKED_THROUGH


def _classify(error: object, status_code: int | None, visits: _Visits) -> OverflowInfo | None:
    if error is None or isinstance(error, (bool, int, float, complex)):
        return None
    if isinstance(error, (ContextBudgetError, ContextOverflowError)):
        return _from_own_error(error)
    sig = _Signals(error, None)
    sig.set_status(status_code)
    if isinstance(error, str):
        sig.add_string(error)
    elif isinstance(error, (bytes, bytearray, memoryview)):
        sig.add_string(bytes(error[:MAX_SCAN_CHARS]).decode("utf-8", "replace"))
    elif not isinstance(error, BaseException) and isinstance(error, (Mapping, list, tuple)):
        sig.walk(error)
    elif type(error).__module__ == "builtins" and not _attr(error, "__dict__"):
        sig.add_text(_safe_str(error))  # a bare ValueError, TimeoutError...: no SDK fields
    else:  # an SDK exception, or any error-like object
        sig.classes = _class_names(type(error))
        _read_attributes(error, sig)
        if _structured_negative(sig):
            return None
        sig.add_text(_safe_str(error))
        _read_bodies(error, sig)
    if _worth_reading(sig):
        sig.read_prose()
        info = _decide(sig)
        if info is not None:
            return info
    if _structured_negative(sig):
        return None  # a rate-limited wrapper: its cause is not why the call failed
    return _look_through(error, visits)


def _look_through(error: object, visits: _Visits) -> OverflowInfo | None:
    """The provider's error inside a wrapper: an exception group's members, then the
    ``__cause__`` (``raise AgentError(...) from exc``).

    Not ``__context__``: an exception raised while handling an overflow (the retry after
    recovery timing out, inside the ``except`` block) has the overflow as its context,
    and is no overflow.
    """
    for inner in (*_group_members(error), _attr(error, "__cause__")):
        if not isinstance(inner, BaseException) or visits.left <= 0:
            continue
        visits.left -= 1
        info = _classify(inner, None, visits)
        if info is not None:
            return info
    return None


def _group_members(error: object) -> tuple[BaseException, ...]:
    """The exceptions of an exception group, else none.

    ``asyncio.TaskGroup`` and anyio's task groups always raise an ``ExceptionGroup``, even
    for one failed task, so an agent running its calls in a task group catches the
    provider's overflow only inside one. Read by duck typing: Python 3.10 has no built-in
    group (the ``exceptiongroup`` backport has the same ``exceptions`` tuple).
    """
    if not isinstance(error, BaseException):
        return ()
    members = _attr(error, "exceptions")
    if not isinstance(members, tuple):
        return ()
    return tuple(m for m in members[:_MAX_LOOKED_THROUGH] if isinstance(m, BaseException))


def classify_overflow(error: object, *, status_code: int | None = None) -> OverflowInfo | None:
    """Recognise a "context too long" error from any provider, with the numbers it states.

    Structured signals are read first (SDK exception attributes, the body, JSON nested in
    the body or in its message), then hard negatives (rate limits, quota, auth, output caps,
    content filters), then the wording. The module docstring gives the full order.

    Args:
        error: An SDK exception (openai, anthropic, google-genai, botocore, litellm, httpx,
            ...), a :class:`~ctxbudget.errors.ContextBudgetError`, a response body (``dict``,
            JSON string, possibly nested or double-encoded, or a Python ``repr``), or a plain
            message. An exception raised ``from`` a provider error is looked through.
        status_code: The HTTP status, when the caller knows it and ``error`` does not carry
            it (a body or a message on its own).

    Returns:
        An :class:`OverflowInfo` when the error is a context overflow or a request over the
        provider's size limit, else ``None``. It never raises: odd objects, properties that
        raise and huge strings (only the first :data:`MAX_SCAN_CHARS` characters of each text
        are read) all give ``None`` or an answer.

    >>> info = classify_overflow("prompt is too long: 219898 tokens > 200000 maximum")
    >>> info.kind, info.requested_tokens, info.limit_tokens, info.rule
    ('input_overflow', 219898, 200000, 'text:prompt is too long')
    >>> body = {"error": {"code": "context_length_exceeded", "message": (
    ...     "This model's maximum context length is 4096 tokens. However, you requested 4201"
    ...     " tokens (3177 in the messages, 1024 in the completion).")}}
    >>> info = classify_overflow(body, status_code=400)
    >>> info.kind, info.input_fits, info.output_reserve_cut, info.rule
    ('combined_overflow', True, 105, 'code:context_length_exceeded')
    >>> print(classify_overflow("Rate limit reached: Limit 30000, Requested 30601 tokens per min"))
    None
    """
    try:
        return _classify(error, status_code, _Visits())
    except Exception:  # never let the classifier hide the caller's real error
        return None
