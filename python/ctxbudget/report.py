"""``ctxbudget inspect``: what a conversation costs, and what pruning would make of it."""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.byte_order import UTF8_BOM
from ctxbudget.errors import BinaryContentError
from ctxbudget.formats.common import as_mapping, shown
from ctxbudget.models import model_info
from ctxbudget.prune import Pruner, PruneResult
from ctxbudget.request import RequestEstimate, estimate_request
from ctxbudget.text import check_text, cut_at_end

__all__ = [
    "Inspection",
    "inspect_conversation",
    "load_conversation",
    "parse_conversation",
    "print_inspection",
    "printable",
]

#: Model assumed when neither the file nor ``--model`` names one.
DEFAULT_MODEL = "gpt-4o"


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request read from a JSON file."""

    messages: list[Any]
    tools: list[Any] | None
    system: Any
    model: str
    max_tokens: int | None = None
    #: The message format the body's shape says (``None``: detected from the messages).
    format: str | None = None


_NOT_A_CONVERSATION = (
    "expected a list of messages, or a request body with 'messages' (Chat Completions,"
    " Anthropic), 'input' (Responses) or 'contents' (Gemini)"
)


def load_conversation(path: Path, model: str | None = None) -> Conversation:
    """A JSON list of messages, or a request body as sent to the provider: Chat Completions or
    Anthropic (``messages``, ``system``), Responses (``input``, ``instructions``) or Gemini
    (``contents``, ``systemInstruction``); with ``tools``, ``model`` and the output cap
    (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``,
    ``generationConfig.maxOutputTokens``) when it has them. A UTF-8 byte order mark is skipped.

    Raises:
        OSError: The file cannot be read.
        BinaryContentError: The file is not UTF-8 text (names the type: a PNG, a PDF, ...).
        ValueError: The file is not such JSON, or its output cap is not a positive integer.
    """
    with path.open("rb") as file:
        _check_start(file.read(_HEAD_BYTES))
        file.seek(0)
        return parse_conversation(file.read(), model)


#: What :func:`load_conversation` reads before it reads the rest: enough to tell a JSON file
#: from a log or a binary file.
_HEAD_BYTES = 1 << 16


def _check_start(head: bytes) -> None:
    """Refuse a file whose first bytes ``head`` show it is not a JSON list or object, before
    the rest of it is read (a log of gigabytes given by mistake).

    Raises:
        BinaryContentError: They are not text (names the type, as for the whole file).
        ValueError: They are text that starts with something else.
    """
    lead = head.removeprefix(UTF8_BOM).lstrip(b" \t\r\n")
    if not lead or lead[:1] in (b"[", b"{"):
        return
    try:
        check_text(head)
    except BinaryContentError as err:
        if not cut_at_end(head, err):
            raise
    raise ValueError(
        "not JSON: expected a list of messages or a request body, but it starts with"
        f" {lead[:24].decode('utf-8', 'replace')!r}"
    )


def parse_conversation(raw: bytes, model: str | None = None) -> Conversation:
    """:func:`load_conversation` of the file's bytes ``raw`` (a conversation on stdin)."""
    text = check_text(raw)  # a binary file named by its type (BinaryContentError)
    if not text.removeprefix("\ufeff").strip():
        raise ValueError("empty: expected a JSON list of messages or a request body")
    try:
        data = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}{_json_lines_hint(text, err)}") from None
    if isinstance(data, list):
        return Conversation(data, None, None, model or DEFAULT_MODEL)
    if not isinstance(data, dict):
        raise ValueError(_NOT_A_CONVERSATION)
    fmt: str | None = None
    tools = data.get("tools")
    if "messages" in data:
        messages, system = data["messages"], data.get("system")
    elif "input" in data:
        messages, system, fmt = data["input"], data.get("instructions"), "openai_responses"
        if isinstance(messages, str):  # Responses takes a plain string as one user message
            messages = [{"role": "user", "content": messages}]
    elif "contents" in data:
        messages, fmt = data["contents"], "gemini"
        system = _gemini_system(data.get("systemInstruction", data.get("system_instruction")))
        tools = _gemini_tools(tools)
    else:
        raise ValueError(_NOT_A_CONVERSATION)
    if not isinstance(messages, list):
        raise ValueError(_NOT_A_CONVERSATION)
    named = data.get("model")
    if model is None and named is not None and not isinstance(named, str):
        raise ValueError(f"the request's model must be a string, got {type(named).__name__}")
    model = model or (named if isinstance(named, str) else None) or DEFAULT_MODEL
    return Conversation(messages, tools, system, model, _output_cap(data), fmt)


def _json_lines_hint(text: str, err: json.JSONDecodeError) -> str:
    """What to do with JSON Lines (an agent's log, a fine-tuning set: one value a line), which
    fails as one document with a bare "Extra data", or ``""`` for other bad JSON."""
    if not err.msg.startswith("Extra data") or not text[: err.pos].rstrip(" \t\r").endswith("\n"):
        return ""
    try:  # the second line a value too, not a stray bracket
        json.JSONDecoder().raw_decode(text, err.pos)
    except json.JSONDecodeError:
        return ""
    return (
        "; this is JSON Lines, one value a line, and inspect reads one JSON document:"
        " `jq -s . FILE` makes lines of messages a list, `sed -n 1p FILE` takes one request"
    )


def _gemini_system(system: Any) -> Any:
    """A Gemini system instruction, without the ``role`` some bodies give it (``"system"``,
    which a content's role cannot be; the provider ignores it)."""
    if isinstance(system, dict):
        return {k: v for k, v in system.items() if k != "role"}
    return system


#: The camelCase names of a Gemini REST body's function tools, which ``estimate_request``
#: reads in the SDK's snake_case.
_GEMINI_TOOL_KEYS = {"functionDeclarations": "function_declarations"}
_GEMINI_DECLARATION_KEYS = {"parametersJsonSchema": "parameters_json_schema"}


def _gemini_tools(tools: Any) -> Any:
    """A Gemini REST body's ``tools`` with their function declarations' field names in
    snake_case (new dicts; anything else as it is)."""
    if not isinstance(tools, list):
        return tools
    out = []
    for tool in tools:
        if isinstance(tool, dict):
            tool = {_GEMINI_TOOL_KEYS.get(k, k): v for k, v in tool.items()}
            decls = tool.get("function_declarations")
            if isinstance(decls, list):
                tool["function_declarations"] = [
                    {_GEMINI_DECLARATION_KEYS.get(k, k): v for k, v in d.items()}
                    if isinstance(d, dict)
                    else d
                    for d in decls
                ]
        out.append(tool)
    return out


def _output_cap(body: dict[str, Any]) -> int | None:
    """The output cap a request body sets (the first found), or ``None``.

    Raises:
        ValueError: A cap that is set but not a positive integer.
    """
    found = [
        (key, body[key])
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens")
        if body.get(key) is not None
    ]
    for name in ("generationConfig", "generation_config"):
        config = body.get(name)
        if isinstance(config, dict):
            found += [
                (f"{name}.{key}", config[key])
                for key in ("maxOutputTokens", "max_output_tokens")
                if config.get(key) is not None
            ]
    for key, value in found:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(
                f"the request's {key} is {value!r}: expected a positive whole number of tokens"
            )
    return found[0][1] if found else None


@dataclass(frozen=True, slots=True)
class Inspection:
    """A conversation's cost against a window, and its pruned view."""

    conversation: Conversation
    estimate: RequestEstimate
    budget: ContextWindowBudget
    pruned: PruneResult
    max_tokens: int | None

    @property
    def reserve(self) -> int:
        return self.budget.reserve(self.max_tokens)

    @property
    def fill(self) -> float:
        """(input + reserve) / window."""
        return (self.estimate.total + self.reserve) / self.budget.window


def inspect_conversation(
    conv: Conversation, *, window: int | None = None, max_tokens: int | None = None
) -> Inspection:
    """Estimate ``conv`` and prune it against the model's window (or ``window``);
    ``max_tokens`` defaults to the request body's.

    Raises:
        ValueError: The model is unknown and no ``window`` given, or ``max_tokens`` leaves no
            room for input in the window.
    """
    if max_tokens is None:
        max_tokens = conv.max_tokens
    if window is None:
        if model_info(conv.model) is None:
            model = shown(conv.model)  # (cut short: a body's model may be anything)
            raise ValueError(f"unknown model {model}: give its context window with --window")
        budget = ContextWindowBudget.for_model(conv.model)
    else:
        budget = ContextWindowBudget.for_model(conv.model, window=window)
    if max_tokens is not None and max_tokens >= budget.window:
        raise ValueError(
            f"max_tokens {max_tokens:,} leaves no room for input in the"
            f" {budget.window:,}-token window"
        )
    est = estimate_request(
        conv.messages, system=conv.system, tools=conv.tools, model=conv.model,
        max_tokens=max_tokens, format=conv.format,
    )  # fmt: skip
    pruner = Pruner(budget=budget, model=conv.model, format=conv.format)
    pruned = pruner.prune(
        conv.messages, system=conv.system, tools=conv.tools, max_tokens=max_tokens
    )
    return Inspection(conv, est, budget, pruned, max_tokens)


#: Columns of a row of the largest messages before its preview (index, role, tokens, share).
_ROW_PREFIX = 37
#: Narrowest preview shown; a terminal with less room gets none.
_MIN_PREVIEW = 10


def _layout() -> tuple[int, int]:
    """(bar width, preview width: 0 for none) that keep the report's lines within the
    terminal (``COLUMNS``; 80 when stdout is not one), so that its rows do not wrap."""
    columns = shutil.get_terminal_size().columns - 1
    bar = max(10, min(30, columns - len("window [] 1000%  does NOT fit")))
    preview = min(50, columns - _ROW_PREFIX - len("..."))
    return bar, preview if preview >= _MIN_PREVIEW else 0


def _bar(fill: float, width: int = 30) -> str:
    full = min(width, round(fill * width))
    return "#" * full + "." * (width - full)


def printable(text: str, stream: TextIO | None = None) -> str:
    """``text`` safe to print on ``stream`` (default: stdout): control and other
    non-printable characters escaped (``\\x1b``, ``\\n``, ``\\u202e``), as well as the
    characters the stream's encoding lacks (``\\xe9`` on an ASCII terminal).

    >>> printable("evil\\x1b[31m.txt")
    'evil\\\\x1b[31m.txt'
    """
    if not text.isprintable():
        text = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
        )
    encoding = getattr(stream or sys.stdout, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding Python does not know: the text as it is
        return text


#: Width of the role column of the largest messages.
ROLE_WIDTH = 12
#: Where a message or block keeps its text, in the order looked at.
_TEXT_KEYS = (
    "text", "content", "output", "parts", "tool_calls", "summary", "result", "response",
    "function_response", "functionResponse",
)  # fmt: skip


def _preview(message: Any, width: int = 50) -> tuple[str, str]:
    """(role, the start of its text) of a message, read without converting more of it than
    the preview shows (a message may hold hundreds of megabytes)."""
    m = as_mapping(message) or {}
    role = printable(str(m.get("role") or _kind(m.get("type"))))
    if len(role) > ROLE_WIDTH:
        role = role[: ROLE_WIDTH - 3] + "..."
    # Read past the width: collapsing whitespace shortens the snippet, and a text cut at a
    # space must still read as cut ("...").
    text = " ".join(_snippet(m, 2 * width + 1).split())  # newlines and tabs as single spaces
    return role, printable(text[:width]) + ("..." if len(text) > width else "")


def _kind(item_type: Any) -> str:
    """What a Responses item without a role is shown as: ``function_call``,
    ``computer_call``, ... as ``tool call``, their outputs as ``tool result``."""
    kind = str(item_type or "?")
    if kind.endswith("_call_output"):
        return "tool result"
    if kind.endswith("_call"):
        return "tool call"
    return kind.replace("_", " ")


def _snippet(value: Any, limit: int, depth: int = 0) -> str:
    """The start of ``value``'s text, about ``limit`` characters or fewer."""
    if isinstance(value, str):
        return value[:limit]
    if limit <= 0 or depth > 8:
        return ""
    mapping = as_mapping(value) if not isinstance(value, list | tuple) else None
    if mapping is not None:
        call = _call(mapping)
        if call is not None:
            name = str(call[0])[:limit]
            return f"{name}({_snippet(call[1], limit - len(name) - 1, depth + 1)})"
        for key in _TEXT_KEYS:
            if mapping.get(key) not in (None, "", [], {}):
                return _snippet(mapping[key], limit, depth + 1)
        return _json_start(mapping, limit)
    if isinstance(value, list | tuple):
        pieces: list[str] = []
        used = 0
        for item in itertools.islice(value, limit):
            if used >= limit:
                break
            piece = _snippet(item, limit - used, depth + 1)
            if piece:
                pieces.append(piece)
                used += len(piece) + 1
        return " ".join(pieces)
    return _json_start(value, limit)


def _call(block: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(name, arguments) when ``block`` is a tool call in any format, else ``None``."""
    if block.get("type") in ("function_call", "custom_tool_call", "tool_use", "server_tool_use"):
        return block.get("name", ""), block.get("arguments", block.get("input", ""))
    function = block.get("function")
    if isinstance(function, Mapping) and "name" in function:  # Chat Completions tool call
        return function["name"], function.get("arguments", "")
    for key in ("function_call", "functionCall"):  # Gemini
        call = block.get(key)
        if isinstance(call, Mapping):
            return call.get("name", ""), call.get("args", "")
    return None


def _json_start(value: Any, limit: int) -> str:
    """The start of ``value`` as compact JSON, of which only about ``limit`` characters (of
    strings, keys and items, in order) are converted."""
    return json.dumps(_clip(value, [limit]), ensure_ascii=False, default=str)[:limit]


def _clip(value: Any, left: list[int]) -> Any:
    """``value`` cut to about ``left[0]`` characters of JSON, which it takes from ``left``."""
    left[0] -= 1
    if isinstance(value, str):
        value = value[: max(0, left[0])]
        left[0] -= len(value)
        return value
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for item in value:
            if left[0] <= 0:
                items.append("...")
                break
            items.append(_clip(item, left))
        return items
    mapping = as_mapping(value)
    if mapping is None:
        return type(value).__name__
    fields: dict[str, Any] = {}
    for key, item in mapping.items():
        if left[0] <= 0:
            fields["..."] = "..."
            break
        name = str(key)[: max(0, left[0])]
        left[0] -= len(name)
        fields[name] = _clip(item, left)
    return fields


def print_inspection(ins: Inspection, name: str, top: int = 5) -> None:
    """Print the report of ``ctxbudget inspect``."""
    est, budget = ins.estimate, ins.budget
    print(
        f"{name}: {_count(len(ins.conversation.messages), 'message')} ({est.format}), model"
        f" {printable(_cut(ins.conversation.model))}, encoding {est.encoding}"
    )
    print(
        f"window {budget.window:,} = input up to {budget.window - ins.reserve:,}"
        f" + {ins.reserve:,} kept for the answer"
    )
    print(
        f"input  {est.total:,} tokens ({est.accuracy.value}): system {est.system:,},"
        f" tools {est.tools:,}, framing {est.framing:,}, messages {est.conversation:,}"
    )
    verdict = "fits" if budget.fits(est, max_tokens=ins.max_tokens) else "does NOT fit"
    bar_width, preview_width = _layout()
    print(f"window [{_bar(ins.fill, bar_width)}] {ins.fill:.0%}  {verdict}")
    print()
    header = f"{'#':>5}  {'role':<{ROLE_WIDTH}} {'tokens':>8}  {'share':>5}"
    print(f"largest messages:\n{header}{'  start' if preview_width else ''}")
    for i in largest(est.per_message, top):
        role, text = _preview(ins.conversation.messages[i], max(1, preview_width))
        share = est.per_message[i] / max(1, est.total)
        row = f"{i:>5}  {role:<{ROLE_WIDTH}} {est.per_message[i]:>8,}  {share:>5.0%}"
        print(f"{row}  {text}" if preview_width else row)
    print()
    _print_plan(ins)


def _print_plan(ins: Inspection) -> None:
    pruned = ins.pruned
    if pruned.pruned:
        print(
            f"pruning: {len(pruned.pruned)} tool outputs become stubs:"
            f" {pruned.tokens_before:,} -> {pruned.tokens_after:,} tokens"
            f" ({'fits' if pruned.fits else 'still does not fit'})"
        )
    else:
        print("pruning: nothing to stub (no old tool output past the threshold)")
    if not pruned.fits:
        print(
            "the guard would then compact the older turns into a summary (given a"
            " summarizer) and stub the largest fresh results"
        )


def largest(per_message: Sequence[int], top: int) -> list[int]:
    """Indices of the ``top`` largest messages, largest first."""
    return sorted(range(len(per_message)), key=lambda i: -per_message[i])[:top]


def _count(n: int, noun: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _cut(name: str, most: int = 120) -> str:
    """``name`` cut to ``most`` characters (a body's model field may hold anything)."""
    return name if len(name) <= most else f"{name[:most]}... ({len(name):,} characters)"
