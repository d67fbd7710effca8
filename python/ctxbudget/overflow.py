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
5. **Wording positives**: one rule per wording family (``WORDING_RULES`` in
   :mod:`ctxbudget.overflow_rules`, with every table named here), most specific
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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ctxbudget import overflow_rules as rules
from ctxbudget.errors import ContextBudgetError, ContextOverflowError
from ctxbudget.overflow_rules import OverflowKind

__all__ = [
    "MAX_SCAN_CHARS",
    "Confidence",
    "OverflowInfo",
    "OverflowKind",
    "classify_overflow",
]


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
        input_cap: The limit is the input's alone (gpt-5's "Input tokens exceed the
            configured limit", Copilot's prompt limit), whichever rule is named: a code can
            name the error while its wording tells this.
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
    input_cap: bool = False

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
        if stripped[:1] in ("{", "[") and depth < rules.MAX_DEPTH:
            decoded = _decode_body(stripped[:MAX_SCAN_CHARS])
            if decoded is not None:
                self.walk(decoded, depth + 1)
                return
        self.add_text(value)

    def walk(self, node: object, depth: int = 0) -> None:
        """Read codes, types, params, statuses and messages from a decoded body."""
        self.nodes += 1
        if depth > rules.MAX_DEPTH or self.nodes > rules.MAX_NODES:
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
            if key in rules.CODE_KEYS:
                self.add_code(value)
            elif key in rules.TYPE_KEYS:
                self.types.add(value[:80].lower())
            elif key in rules.PARAM_KEYS:
                self.params.add(value[:200].lower())
            elif key in rules.PROVIDER_KEYS:
                self.provider = self.provider or value[:40].lower()
            elif key in rules.STATUS_KEYS and " " not in value:
                self.add_code(value)  # "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"
            elif " " in value or value.lstrip()[:1] in ("{", "["):
                self.add_string(value, depth)
        elif isinstance(value, int) and not isinstance(value, bool):
            if key in rules.FIELD_KEYS:
                self.fields[key] = int(value)
            elif key in rules.CODE_KEYS:
                self.add_code(value)
            elif key in rules.STATUS_KEYS:
                self.set_status(value)
        elif isinstance(value, (dict, list, tuple, Mapping)):
            self.walk(value, depth + 1)

    def read_prose(self) -> None:
        """Codes and params stated in prose, and a body embedded in a message."""
        for text in self.texts:
            lowered = text.lower()
            for needle, pattern in rules.TEXT_CODES:
                if needle in lowered:
                    for match in pattern.finditer(lowered):
                        self.add_code(match.group(1))
            if "(parameter=" in lowered:
                self.params.update(m.group(1) for m in rules.TEXT_PARAM.finditer(lowered))
            if self.status is None and ("status" in lowered or "error code" in lowered):
                status = rules.TEXT_STATUS.search(lowered)
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
    if end > 0 and "':" in text and text.count("{") + text.count("[") <= rules.MAX_BRACES:
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
        for needle, provider in rules.HOSTS:
            if needle in text:
                return provider
    if isinstance(error, BaseException):
        return rules.PACKAGES.get(type(error).__module__.partition(".")[0])
    return None


def _text_provider(text: str) -> str | None:
    for needle, provider in rules.TEXT_PROVIDERS:
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
    if sig.status in rules.NEGATIVE_STATUS:
        return True
    if not sig.classes.isdisjoint(rules.NEGATIVE_CLASSES) or not sig.types.isdisjoint(
        rules.NEGATIVE_TYPES
    ):
        return True
    if any(rules.NEGATIVE_CODE.search(code) for code in sig.codes):
        return True
    return "string_above_max_length" in sig.codes and not any(
        rules.CONTENT_PARAM.match(param) for param in sig.params
    )


def _structured_positive(sig: _Signals) -> tuple[str, OverflowKind, str | None] | None:
    """The structured rule that fired, as (name, kind, provider), or None."""
    for code in sorted(sig.codes):
        if rules.POSITIVE_CODE.search(code):
            return f"code:{code}", "input_overflow", rules.CODE_PROVIDERS.get(code)
    for type_ in sorted(sig.types):
        if type_ in rules.POSITIVE_TYPES:
            kind, provider = rules.POSITIVE_TYPES[type_]
            return f"type:{type_}", kind, provider
    if "string_above_max_length" in sig.codes:  # on message content: negatives ran first
        return "code:string_above_max_length", "request_too_large", "openai"
    for param in ("input_tokens", "input_text"):
        if param in sig.params:
            return f"param:{param}", "input_overflow", "vllm"
    if "n_prompt_tokens" in sig.fields and "n_ctx" in sig.fields:
        return "fields:n_prompt_tokens,n_ctx", "input_overflow", "llama.cpp"
    for name in sorted(sig.classes & rules.POSITIVE_CLASSES):
        return f"class:{name}", "input_overflow", None
    return None


def _read_numbers(text: str, fields: dict[str, int]) -> dict[str, int]:
    found: dict[str, int] = {}
    if "n_prompt_tokens" in fields:
        found["input"] = fields["n_prompt_tokens"]
    if "n_ctx" in fields:
        found["limit"] = fields["n_ctx"]
    for needle, pattern in rules.ROLE_PATTERNS:
        if needle not in text:
            continue
        match = pattern.search(text)
        if match is None:
            continue
        groups = {
            role: value
            for role, value in match.groupdict().items()
            if value and not rules.CUT_NUMBER.match(text, match.end(role))
        }
        if "input" in groups and "input" in found:
            continue  # keep the first input together with the parts stated beside it
        for role, value in groups.items():
            if role not in found:
                found[role] = int(value.replace(",", "").replace("_", "") or 0)
    return found


def _is_approximate(text: str) -> bool:
    needles, pattern = rules.APPROXIMATE
    return any(n in text for n in needles) and pattern.search(text) is not None


def _decide(sig: _Signals) -> OverflowInfo | None:
    if _structured_negative(sig):
        return None
    structured = _structured_positive(sig)
    text = _normalize(sig.texts)
    rule = next((r for r in rules.WORDING_RULES if r.matches(text)), None)
    if structured is None:
        if rules.NEGATIVE_TEXT.search(text):
            return None
        output_cap = rules.OUTPUT_CAP_TEXT.search(text) or not sig.params.isdisjoint(
            rules.OUTPUT_PARAMS
        )
        if output_cap and not rules.INPUT_MENTION.search(text):
            return None
        if rule is None:
            return _status_heuristic(sig, text)
        name, kind, provider = rule.name, rule.kind, rule.provider
    else:
        name, kind, provider = structured
        if rule is not None:
            kind, provider = rule.kind, provider or rule.provider
    tokens = rule is None or rule.tokens
    if kind != rules.BYTES and tokens and "token" not in text and rules.CHARACTERS.search(text):
        kind, tokens = rules.BYTES, False  # a length limit in characters, not a token window

    numbers = _read_numbers(text, sig.fields) if tokens and kind != rules.BYTES else {}
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
    if kind != rules.BYTES:
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
        input_cap=name in rules.INPUT_CAP_RULES
        or (rule is not None and rule.name in rules.INPUT_CAP_RULES),
    )


def _status_heuristic(sig: _Signals, text: str) -> OverflowInfo | None:
    no_body = "no body" in text or text == "error code: 400"
    if sig.status in (400, 413, None) and no_body and rules.NO_BODY.search(text):
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
    if any(rules.POSITIVE_CODE.search(code) for code in sig.codes):
        return True
    if not sig.types.isdisjoint(rules.POSITIVE_TYPES) or not sig.classes.isdisjoint(
        rules.POSITIVE_CLASSES
    ):
        return True
    return any(rules.CANDIDATE.search(text.lower()) for text in sig.texts)


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
