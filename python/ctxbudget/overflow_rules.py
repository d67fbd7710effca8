"""The rules :func:`~ctxbudget.overflow.classify_overflow` decides by: the wordings of
providers' "context too long" errors, the codes, types, classes and statuses that say an error
is one or is not, and the patterns that read the numbers a message states.

Data, not logic: each table is read by :mod:`ctxbudget.overflow`, whose docstring says in which
order they are tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

OverflowKind = Literal["input_overflow", "combined_overflow", "request_too_large"]
"""``input_overflow``: the input alone is over the window (or we cannot tell it fits).
``combined_overflow``: input plus reserved output are over, the input alone fits.
``request_too_large``: over a size limit in bytes or characters, not a token window."""


# --------------------------------------------------------------------------------------------
# Rules. Every pattern runs on lower-cased text with whitespace collapsed, and only when its
# ``needle`` (a plain substring the pattern cannot match without) is present: a substring
# test costs nanoseconds, a regex search over a long message microseconds.

_N: Final = "[0-9][0-9,_]*"  # 42328, 42,328 or 42_328; commas and underscores are dropped
#: After a number a rule read: it goes on in a form not read (``128 000``, ``128k``,
#: ``1.200.000``), so the number read would be its first group; none is taken.
CUT_NUMBER: Final = re.compile(r"[.][0-9]| [0-9]{3}(?![0-9])|k\b")


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


BYTES: Final = "request_too_large"
#: Rules of provider errors whose stated limit is the input's alone (not input + output):
#: gpt-5's configured input limit, Copilot's prompt limit.
INPUT_CAP_RULES: Final = frozenset(
    {
        "text:input tokens exceed",
        "text:prompt token count exceeds the limit",
        "code:model_max_prompt_tokens_exceeded",
    }
)

# Step 5, the wording families, most specific first. Byte and character limits come first:
# their numbers are not tokens.
WORDING_RULES: Final[tuple[_Rule, ...]] = (
    _rule(
        "string too long",
        "string too long",
        r"invalid '(?:messages|input)\[[0-9]+\](?:\.(?:content|output|text|parts)[^']*)?': "
        r"string too long",
        provider="openai",
        kind=BYTES,
        tokens=False,
    ),
    _rule(
        "request payload size exceeds the limit",
        "payload size exceeds the limit",
        provider="gemini",
        kind=BYTES,
        tokens=False,
    ),
    _rule(
        "request exceeds the maximum size",
        "request exceeds the maximum size",
        provider="anthropic",
        kind=BYTES,
        tokens=False,
    ),
    _rule(
        "member must have length less than or equal",
        "member must have length less than or equal",
        r"value at '[^']*(?:body|messages?|content|prompt|input|system)[^']*' failed to"
        r" satisfy constraint: member must have length less than or equal",
        provider="bedrock",
        kind=BYTES,
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
    # Zhipu / z.ai: {"error":{"code":"1261","message":"Prompt exceeds max length"}}
    # (zeroclaw#4124, cc-switch#6982).
    _rule("prompt exceeds max length", "prompt exceeds max length", provider="zhipu"),
    # GitHub Models and Azure AI Foundry's per-request cap, an HTTP 413 with the code
    # tokens_limit_reached: "Request body too large for gpt-4o model. Max size: 8000 tokens."
    # (cline#2115, Roo-Code#3344): tokens, not bytes.
    _rule(
        "request body too large, max size in tokens",
        "max size:",
        r"request body too large for .{0,80}? model\. max size: {N} tokens",
        provider="github",
    ),
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
        # xAI's gRPC SDK: "[input_too_large] Current message (N tokens) exceeds budget (L
        # tokens)" in the details of an INVALID_ARGUMENT (inspect_ai#5208)
        "input too large",
        "input_too_large",
        r"\[input_too_large\]|current message \({N} tokens\) exceeds budget",
        provider="xai",
    ),
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
        # GitHub Copilot's prompt limit ("prompt token count of N exceeds the limit of L"):
        # the input's alone (its max_prompt_tokens)
        "prompt token count exceeds the limit",
        "prompt token count",
        r"prompt token count (?:of )?{N} exceeds (?:the )?limit of [0-9]",
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
        # and the context filled while generating: "Reached context length of N tokens with
        # model ... that does not currently support mid-generation context overflow"
        r"context length of only {N} tokens|greater than the context length"
        r"|reached context length of {N} tokens|mid-generation context overflow",
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
        # Moonshot's v1 API: "model max length exceeded, max length:8192" (input + max_tokens)
        "model max length exceeded",
        "max length exceeded",
        r"model max length exceeded",
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
        kind=BYTES,
        tokens=False,
    ),
)

# Step 4. Rate limits, quota, auth and content filters never describe a context overflow.
NEGATIVE_TEXT: Final = re.compile(
    r"per (?:minute|min\b|hour|day|second)|\((?:tpm|rpm|tpd|rpd|itpm|otpm)\)|rate[ _-]?limit"
    r"|please wait before trying again|too many requests|quota|api key not valid"
    r"|incorrect api key|invalid api key|invalid x-api-key|content management policy"
    r"|content[_ ]filter|responsibleaipolicyviolation"
)
# An output cap (``max_tokens`` over the model's output limit) is not an overflow, unless the
# message also talks about the input: then the reserve was too big for what is left.
OUTPUT_CAP_TEXT: Final = re.compile(
    r"maximum allowed number of output tokens|supports at most [0-9][0-9,]* completion tokens"
    r"|cannot be greater than max_model_len|please request fewer output tokens"
    r"|max(?:imum)?[ _-]?(?:output[ _-]|completion[ _-]|new[ _-])?tokens?`?'?\s?"
    r"(?:is too large|must be|cannot|exceeds?|:\s?[0-9][0-9,]* >|=)"
)
INPUT_MENTION: Final = re.compile(r"input|prompt|messages")
OUTPUT_PARAMS: Final = frozenset({"max_tokens", "max_completion_tokens", "max_output_tokens"})
# Characters without tokens: a length limit in characters (an image prompt, a field).
CHARACTERS: Final = re.compile(r"\bcharacters?\b")

# Step 2. Structured negatives.
NEGATIVE_STATUS: Final = frozenset({401, 402, 403, 429})
NEGATIVE_CODE: Final = re.compile(
    r"rate_?limit|quota|throttl|resource_exhausted|invalid_api_key|api_key_invalid"
    r"|unauthenticated|unauthorized|permission_denied|accessdenied|content_filter"
    r"|responsibleaipolicyviolation|content_policy|spend_limit|billing"
)
NEGATIVE_TYPES: Final = frozenset(
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
NEGATIVE_CLASSES: Final = frozenset(
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
POSITIVE_CODE: Final = re.compile(
    r"context_?(?:length|window)_?exceeded|max_prompt_tokens_exceeded|prompt_too_long"
    r"|input_too_long|input_too_large|^40303$"
)
CODE_PROVIDERS: Final = {
    "40303": "fastchat",
    "model_max_prompt_tokens_exceeded": "copilot",
    "input_too_large": "xai",
}
POSITIVE_TYPES: Final[dict[str, tuple[OverflowKind, str | None]]] = {
    "exceed_context_size_error": ("input_overflow", "llama.cpp"),
    "context_length_exceeded": ("input_overflow", None),
    "request_too_large": ("request_too_large", "anthropic"),
}
#: Parameters that hold message content: a string too long there is content that pruning can
#: shorten (not an id, a name or a call id, which it cannot).
CONTENT_PARAM: Final = re.compile(
    r"^(?:(?:messages|input|contents?)(?:\[[0-9]+\](?:\.(?:content|output|text|parts)\b.*)?)?"
    r"|prompt)$"
)
POSITIVE_CLASSES: Final = frozenset({"ContextWindowExceededError", "ContextWindowOverflowError"})

# Without one of these words (or a structured positive) there is nothing to read further.
CANDIDATE: Final = re.compile(
    r"token|context|too[ _]long|too[ _]large|length|size|exceed|limit|payload|no body|overflow"
    r"|^error code: 400$"
)
# Step 6, low confidence: "400 status code (no body)" (Cerebras, Mistral through openai-node).
#: openai-python says so as "Error code: 400" and nothing more (its body empty).
NO_BODY: Final = re.compile(
    r"^(?:error: ?)?4(?:00|13)\s?(?:status code)?\s?\(no body\)|^error code: 400$"
)

# Codes stated in prose: botocore, azure-core "(code) msg\nCode: ...", .NET "ErrorCode: ...",
# and vLLM's "(parameter=input_tokens, value=N)" suffix.
TEXT_CODES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("an error occurred (", re.compile(r"an error occurred \(([\w.]+)\)")),
    ("code: ", re.compile(r"(?:^|\n)\s*code: ([a-z_][\w.]*)")),
    ("errorcode: ", re.compile(r"errorcode: ([a-z_][\w.]*)")),
    ("(", re.compile(r"^\(([a-z_][\w.]*)\) ")),
)
TEXT_PARAM: Final = re.compile(r"\(parameter=(\w+)")
# A status stated in prose: "Error code: 429 - ...", "Status 400. Body: ...", "status 400:".
TEXT_STATUS: Final = re.compile(r"(?:error code|status code|status)[:=]? ?([1-5][0-9]{2})\b")

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


ROLE_PATTERNS: Final = _roles(
    # Anthropic "input + output > limit".
    ("+", r"(?P<input>{N})\s?\+\s?(?P<output>{N})\s?>\s?(?P<limit>{N})"),
    # Limits.
    # "... maximum context length (512)." (ctransformers)
    ("maximum context length", r"maximum context length(?: is| of)?:? \(?(?P<limit>{N})"),
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
    ("max size:", r"max size: (?P<limit>{N}) tokens"),
    ("range of input length", r"range of input length should be \[[0-9]+, ?(?P<limit>{N})\]"),
    ("limit for this model is", r"limit for this model is (?P<limit>{N})"),
    ("cannot exceed", r"cannot exceed (?P<limit>{N})"),
    ("must be <=", r"must be <= (?P<limit>{N})"),
    ("must have less than", r"must have less than (?P<limit>{N}) tokens"),
    ("only supports up to", r"only supports up to (?P<limit>{N})"),
    ("max input tokens:", r"max input tokens: (?P<limit>{N})"),
    ("maximum model length of", r"maximum model length of (?P<limit>{N})"),
    ("model maximum (", r"model maximum \((?P<limit>{N})\)"),
    ("max length:", r"max length: ?(?P<limit>{N})"),
    ("exceeds budget", r"exceeds budget \((?P<limit>{N}) tokens\)"),
    ("reached context length of", r"reached context length of (?P<limit>{N})"),
    ("exceeds context length", r"exceeds (?:the )?context length (?P<limit>{N})"),
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
    ("too long:", r"prompt (?:is )?too long: (?P<input>{N})"),
    ("prompt length of", r"prompt length of (?P<input>{N})"),
    ("input length ", r"input length (?P<input>{N}) exceeds"),
    ("number of tokens (", r"number of tokens \((?P<input>{N})\)"),
    ("current message (", r"current message \((?P<input>{N}) tokens\)"),
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
APPROXIMATE: Final = (
    ("about ", "at least ", "approximately ", "~"),
    re.compile(r"\babout [0-9]|at least [0-9]|approximately [0-9]|~\s?[0-9]"),
)

# Provider hints, in this order: a structured field (litellm ``llm_provider``, OpenRouter
# ``provider_name``, botocore's operation), the request's host, the exception's package, a
# word in the text, the rule's own provider.
HOSTS: Final = (
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
PACKAGES: Final = {
    "anthropic": "anthropic",
    "google": "gemini",
    "mistralai": "mistral",
    "cohere": "cohere",
    "groq": "groq",
    "ollama": "ollama",
    "botocore": "bedrock",
}
TEXT_PROVIDERS: Final = (
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

CODE_KEYS: Final = frozenset({"code", "error_code", "errorcode", "reason", "finish_reason"})
TYPE_KEYS: Final = frozenset({"type", "error_type", "__type", "errortype"})
PARAM_KEYS: Final = frozenset({"param", "parameter"})
STATUS_KEYS: Final = frozenset(
    {"status", "status_code", "statuscode", "raw_status_code", "httpstatuscode", "http_status"}
)
FIELD_KEYS: Final = frozenset({"n_prompt_tokens", "n_ctx"})
PROVIDER_KEYS: Final = frozenset({"provider_name", "llm_provider"})
MAX_NODES: Final = 256
MAX_DEPTH: Final = 8
MAX_BRACES: Final = 128  # ast.literal_eval recurses in C: refuse deeply nested reprs
