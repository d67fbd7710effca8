"""Tool-output stubs, written in each format's own shape.

A stub replaces the text of a tool result. It keeps the result where it was, with its call id
(so pairing stays valid), and says in its text: which tool, how big the output was, how it
began, and how to get the data again. The result's base64 images and documents go with it
when the pruning weighed them (``PruneConfig.prune_media``; the stub says how many), else
they are kept as they are; every other block of the message is kept (Anthropic and Gemini
carry several results, or text, in one message).

Changed messages are new objects made by shallow copies: every block, part and attachment
that is not replaced is the caller's own object, shared and never modified.

The three texts, verbatim (``{...}`` filled in):

``PRUNED``::

    [ctxbudget: tool output pruned] {tool} returned {tokens} tokens ({lines} lines[, {n} images
    or files]); the output was removed from the context to save space. It began:
    {head}
    [...]
    To see it again, call {tool} again with a narrower request (a filter, a line range, a
    smaller limit) or read the data in parts.

``INTERRUPTED`` (a result the model never read: its run failed after the tool ran)::

    [ctxbudget: tool output not read] {tool} returned {tokens} tokens ({lines} lines), but the
    run stopped before the model read them; the output was removed so the conversation can
    continue. It began:
    {head}
    [...]
    If you still need it, call {tool} again with a narrower request (a filter, a line range,
    a smaller limit) or read the data in parts.

``MISSING`` (a call whose result was never recorded)::

    [ctxbudget: no tool output] The run stopped before {tool} returned a result; the call may
    not have completed. If you still need it, call {tool} again.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ctxbudget.embedded_media import has_media
from ctxbudget.formats.common import as_mapping
from ctxbudget.turns import anthropic_block_text

__all__ = ["STUB_PREFIX", "is_stub", "missing_text", "stub_text"]

#: Every stub text starts with this; a stub is never stubbed again.
STUB_PREFIX = "[ctxbudget: "

_HOW = "a narrower request (a filter, a line range, a smaller limit) or read the data in parts"


#: What a stub holds beside its head: its wording (under 400 characters) and the tool's name,
#: twice. A longer text is no stub, whatever it starts with.
_STUB_OVERHEAD = 1024
#: The closing sentences of the stub texts.
_ENDINGS = (f" again with {_HOW}.", " again.")


def is_stub(text: str, head_chars: int = 200) -> bool:
    """The text is a stub written by ctxbudget with a head of at most ``head_chars``
    characters: it starts and ends as stubs do and is no longer than one. A tool output that
    only starts like a stub (a page or file quoting one) is not one, and can be pruned.

    >>> is_stub(missing_text("bash")), is_stub("[ctxbudget: no tool output] " + "x" * 5000)
    (True, False)
    """
    return (
        text.startswith(STUB_PREFIX)
        and len(text) <= head_chars + _STUB_OVERHEAD
        and text.endswith(_ENDINGS)
    )


def _line_count(text: str) -> int:
    """Lines of ``text``: a final newline ends the last line, it does not start another."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _after_blank_lines(text: str) -> str:
    """``text`` from its first line with something on it (all of a text of blank lines
    goes): found by C-speed string methods, at any length."""
    first = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, first) + 1 :]


def _head(text: str, max_chars: int, max_lines: int) -> tuple[str, bool]:
    """The first lines of ``text`` after any blank ones, within ``max_lines`` and
    ``max_chars``, and whether that leaves something out."""
    text = _after_blank_lines(text)
    lines = text.split("\n", max_lines)
    head = "\n".join(lines[:max_lines])
    cut = len(lines) > max_lines
    if len(head) > max_chars:
        head = head[:max_chars]
        cut = True
    return head.rstrip(), cut or len(head) < len(text.rstrip())


def stub_text(
    tool: str | None,
    text: str,
    tokens: int,
    *,
    interrupted: bool = False,
    head_chars: int = 200,
    head_lines: int = 4,
    media: int = 0,
) -> str:
    """The stub that replaces a tool output (see the module docstring for the wording);
    ``media``: the images and documents it held, which go with it.

    >>> print(stub_text("bash", "a.py\\nb.py\\n" * 50, 1200, head_lines=2))
    [ctxbudget: tool output pruned] bash returned 1,200 tokens (100 lines); the output was \
removed from the context to save space. It began:
    a.py
    b.py
    [...]
    To see it again, call bash again with a narrower request (a filter, a line range, a \
smaller limit) or read the data in parts.
    """
    name = tool or "the tool"
    lines = _line_count(text)
    head, cut = _head(text, head_chars, head_lines)
    held = f", {media:,} image{'s' if media != 1 else ''} or file{'s' if media != 1 else ''}"
    size = f"{tokens:,} tokens ({lines:,} line{'s' if lines != 1 else ''}{held if media else ''})"
    began = f" It began:\n{head}\n" + ("[...]\n" if cut else "") if head else "\n"
    if interrupted:
        return (
            f"{STUB_PREFIX}tool output not read] {name} returned {size}, but the run stopped"
            " before the model read them; the output was removed so the conversation can"
            f" continue.{began}If you still need it, call {name} again with {_HOW}."
        )
    return (
        f"{STUB_PREFIX}tool output pruned] {name} returned {size}; the output was removed from"
        f" the context to save space.{began}To see it again, call {name} again with {_HOW}."
    )


def missing_text(tool: str | None) -> str:
    """The result given to a call whose result was never recorded.

    >>> missing_text("bash")  # doctest: +NORMALIZE_WHITESPACE
    '[ctxbudget: no tool output] The run stopped before bash returned a result; the call may
    not have completed. If you still need it, call bash again.'
    """
    name = tool or "the tool"
    return (
        f"{STUB_PREFIX}no tool output] The run stopped before {name} returned a result; the"
        f" call may not have completed. If you still need it, call {name} again."
    )


_RESULTS_FIELD = {
    "openai_chat": "content",
    "openai_responses": "output",
    "anthropic": "content",
    "gemini": "parts",
}


def results_ref(fmt: str, m: Any) -> Any:
    """The field holding a message's tool results (a new object there means a new result):
    of a dict, or an object such as google-genai's ``Content``."""
    field = _RESULTS_FIELD[fmt]
    if type(m) is dict or isinstance(m, Mapping):
        return m.get(field)
    return getattr(m, field, None)


def result_refs(fmt: str, m: Any, slots: Iterable[int]) -> tuple[Any, ...]:
    """The results field of ``m`` and, when it is a list, its blocks at ``slots``: the objects
    the size and stub caches compare from one turn to the next (a field replaced, or a block
    replaced in its list in place, holds a new result; an edit inside a block needs
    ``invalidate``)."""
    field = results_ref(fmt, m)
    if not isinstance(field, list):
        return (field,)
    n = len(field)
    return (field, *(field[s] if 0 <= s < n else None for s in slots))


def same_refs(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two :func:`result_refs` hold the very same objects."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


# --------------------------------------------------------------------------- writers


def _keep_non_text(content: Any, text_types: tuple[str, ...], drop_media: bool) -> list[Any]:
    """The blocks of a result's content that are not text (with ``drop_media``, nor base64
    media: they go with the stub)."""
    if not isinstance(content, list):
        return []
    return [
        b
        for b in content
        if not (isinstance(b, Mapping) and b.get("type") in text_types)
        and not (drop_media and has_media(_block(b)))
    ]


def replace_results(
    fmt: str, message: Any, stubs: Mapping[int, str], *, drop_media: bool = False
) -> dict[str, Any]:
    """A new message with the results at ``stubs``' slots replaced by their stub texts.

    Non-text parts of a replaced result are kept, but for base64 media with ``drop_media``
    (the stub says how many went: :func:`stub_text`); a ``computer_call_output``, whose
    output is a screenshot and nothing else, then holds a blank one. Everything else is
    shared with ``message`` (a shallow copy of the message, and of the changed block or
    part only).
    """
    m: dict[str, Any] = dict(message) if isinstance(message, Mapping) else _dump(message)
    if fmt == "openai_chat":
        (text,) = stubs.values()
        # a tool message's image or file parts (providers that take them there) are kept
        kept = _keep_non_text(m.get("content"), ("text",), drop_media)
        m["content"] = [{"type": "text", "text": text}, *kept] if kept else text
    elif fmt == "openai_responses":
        (text,) = stubs.values()
        if m.get("type") == "shell_call_output":
            m["output"] = [_shell_stub(m.get("output"), text)]
        elif m.get("type") == "computer_call_output":
            if drop_media:
                m["output"] = {"type": "computer_screenshot", "image_url": _BLANK_SCREENSHOT}
        else:
            types = ("input_text", "output_text", "text")
            kept = _keep_non_text(m.get("output"), types, drop_media)
            m["output"] = [{"type": "input_text", "text": text}, *kept] if kept else text
    elif fmt == "anthropic":
        content = list(m["content"])
        for slot, text in stubs.items():
            block = dict(_block(content[slot]))
            inner = block.get("content")
            kept = [  # the stub stands for its text, search results and text documents too
                b
                for b in (inner if isinstance(inner, list) else ())
                if anthropic_block_text(_block(b)) is None
                and not (drop_media and has_media(_block(b)))
            ]
            block["content"] = [{"type": "text", "text": text}, *kept] if kept else text
            content[slot] = block
        m["content"] = content
    elif fmt == "gemini":
        parts = list(m["parts"])
        for slot, text in stubs.items():
            part = dict(_block(parts[slot]))
            key = "function_response" if "function_response" in part else "functionResponse"
            fr = dict(part[key])
            fr["response"] = {"result": text}
            if drop_media and has_media(fr.get("parts")):
                fr.pop("parts")
            part[key] = fr
            parts[slot] = part
        m["parts"] = parts
    else:  # pragma: no cover - formats are checked by the callers
        raise ValueError(f"unknown message format {fmt!r}")
    return m


#: A blank 1x1 PNG: a ``computer_call_output`` must be a screenshot, it has no text form.
_BLANK_SCREENSHOT = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGP4DwABAQEAsTj2FAAAAABJRU5ErkJggg=="
)


def is_blank_screenshot(output: Any) -> bool:
    """Whether a ``computer_call_output``'s output is the blank screenshot of a stub."""
    found = as_mapping(output) if output is not None else None
    return found is not None and found.get("image_url") == _BLANK_SCREENSHOT


def _responses_output(call_type: str | None, call_id: str, text: str) -> dict[str, Any]:
    """The Responses output item that answers a call item of type ``call_type``.

    OpenAI pairs a call only with the output of its own type (a ``function_call_output``
    for a ``custom_tool_call`` is refused: 400 "No tool output found for custom tool call"),
    and each output type has its own shape: ``local_shell_call_output`` names the call in
    ``id``, ``shell_call_output`` holds stdout/stderr chunks, ``apply_patch_call_output``
    needs a status, ``computer_call_output`` holds only a screenshot (a blank one), and
    ``tool_search_output`` only tool definitions (none: it has no text to say why).
    """
    if call_type == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": text}
    if call_type == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call_id, "output": text}
    if call_type == "shell_call":
        chunk = {"stdout": "", "stderr": text, "outcome": {"type": "timeout"}}
        return {"type": "shell_call_output", "call_id": call_id, "output": [chunk]}
    if call_type == "apply_patch_call":
        return {"type": "apply_patch_call_output", "call_id": call_id, "status": "failed",
                "output": text}  # fmt: skip
    if call_type == "tool_search_call":  # loads no tools: the model may search again
        return {"type": "tool_search_output", "call_id": call_id, "execution": "client",
                "status": "incomplete", "tools": []}  # fmt: skip
    if call_type == "computer_call":
        screenshot = {"type": "computer_screenshot", "image_url": _BLANK_SCREENSHOT}
        return {"type": "computer_call_output", "call_id": call_id, "output": screenshot}
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _shell_stub(chunks: Any, text: str) -> dict[str, Any]:
    """The one chunk that replaces a ``shell_call_output``'s chunks: the stub as its stdout,
    with the outcome the command had (its last chunk's)."""
    outcome: Any = {"type": "timeout"}
    for chunk in chunks if isinstance(chunks, list) else ():
        found = as_mapping(chunk)
        if found is not None and found.get("outcome") is not None:
            outcome = found["outcome"]
    return {"stdout": text, "stderr": "", "outcome": outcome}


def result_message(
    fmt: str, call_id: str, tool: str | None, text: str, call_type: str | None = None
) -> dict[str, Any]:
    """A new message carrying one tool result (OpenAI formats), or one result block/part.

    For Anthropic the value is a ``tool_result`` block and for Gemini a ``function_response``
    part: they go into a user message (see :func:`with_results`). For Responses,
    ``call_type`` is the type of the call item answered (``custom_tool_call``,
    ``local_shell_call``, ...; ``None``: a ``function_call``): the output is of its type.
    """
    if fmt == "openai_chat":
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    if fmt == "openai_responses":
        return _responses_output(call_type, call_id, text)
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": call_id, "content": text}
    fr: dict[str, Any] = {"name": tool or "", "response": {"result": text}}
    if not call_id.startswith("ctxb_call_"):
        fr = {"id": call_id} | fr
    return {"function_response": fr}


def with_results(fmt: str, message: Any | None, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Anthropic/Gemini: ``blocks`` added to user message ``message`` (a new message).

    ``blocks`` (results in the order of their calls) go right after the results ``message``
    already has, before the blocks or parts that follow them. Gemini without call ids pairs
    responses with the calls of a tool name in order, and the calls left unanswered are that
    name's last ones: results put first would take the earlier calls' places. ``None`` makes
    a new user message holding only ``blocks``.
    """
    if fmt == "anthropic":
        if message is None:
            return {"role": "user", "content": blocks}
        m = dict(message)
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        results = [b for b in content or [] if _block(b).get("type") == "tool_result"]
        rest = [b for b in content or [] if _block(b).get("type") != "tool_result"]
        m["content"] = [*results, *blocks, *rest]
        return m
    if message is None:
        return {"role": "user", "parts": blocks}
    m = dict(message) if isinstance(message, Mapping) else _dump(message)
    parts = list(m.get("parts") or [])
    after = 1 + max((i for i, p in enumerate(parts) if _is_response(_block(p))), default=-1)
    m["parts"] = [*parts[:after], *blocks, *parts[after:]]
    return m


def _is_response(part: Mapping[str, Any]) -> bool:
    return part.get("function_response") is not None or part.get("functionResponse") is not None


def history_model(history: Sequence[Any]) -> Callable[[Any], Any] | None:
    """The ``model_validate`` of the history's message class when the history is SDK models
    of one class (google-genai ``Content``), else ``None``: the messages ctxbudget makes
    (dicts) become objects of that class, so a rewritten history keeps one message type."""
    first = history[0] if history else None
    cls = type(first)
    validate = getattr(cls, "model_validate", None)
    if first is None or isinstance(first, Mapping) or validate is None:
        return None
    if not all(type(m) is cls for m in history):
        return None
    return validate  # type: ignore[no-any-return]


def in_history_type(out: list[Any], history: Sequence[Any]) -> list[Any]:
    """``out`` with the messages ctxbudget made (dicts) turned into objects of the history's
    message class (see :func:`history_model`). Anything else is returned as it is.
    """
    validate = history_model(history)
    if validate is None:
        return out
    return [validate(m) if isinstance(m, Mapping) else m for m in out]


def _block(block: Any) -> Mapping[str, Any]:
    """A content block or part as a mapping (an SDK object's fields)."""
    found = as_mapping(block)
    if found is None:
        raise TypeError(f"expected a content block, got {type(block).__name__}")
    return found


def _dump(message: Any) -> dict[str, Any]:
    dump = getattr(message, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected a message dict, got {type(message).__name__}")
    return dict(dump(exclude_none=True))
