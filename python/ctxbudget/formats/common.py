"""Helpers every format reader and writer shares.

:class:`_Reader` and :class:`_Writer` turn a bad field into a :class:`MessageFormatError` naming
the message and field path; the functions below encode what several formats spell alike (data
URLs, base64, tool-call arguments, made-up call ids, google-genai objects).
"""

from __future__ import annotations

import contextlib
import json
import reprlib
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from ctxbudget._core import json_text_of, register_plain_model
from ctxbudget.formats.model import Message, MessageFormatError, Part

_SYNTH_ID = "ctxb_call_"


# --------------------------------------------------------------------------- field access


def as_mapping(obj: object) -> Mapping[str, Any] | None:
    """``obj`` as a mapping: itself, or the fields of a pydantic model (the message and block
    objects of the openai and anthropic SDKs, which their docs append to a history as they
    come), unset fields left out; ``None`` for anything else."""
    if isinstance(obj, Mapping):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        fields = dump(exclude_none=True)
        if isinstance(fields, Mapping):
            return fields
    return None


def field_refs(message: object, keys: tuple[str, ...]) -> tuple[Any, ...] | None:
    """The objects in a message's fields ``keys``, as the caches compare them from one turn to
    the next to tell it unchanged (and as the core's ``unchanged_prefix`` reads them): a dict's
    values; a plain pydantic model's (the provider SDKs' messages, see :func:`plain_model`)
    from its instance ``__dict__``, then its extra fields (``reasoning_content`` on an openai
    message from DeepSeek or vLLM); ``None`` for anything else, which the caches read anew
    every turn."""
    if isinstance(message, dict):
        return tuple(map(message.get, keys))
    if not plain_model(type(message)):
        return None
    fields = getattr(message, "__dict__", None)
    if not isinstance(fields, dict):
        return None
    extra = getattr(message, "__pydantic_extra__", None)
    if not isinstance(extra, dict) or not extra:
        return tuple(map(fields.get, keys))
    return tuple(fields[k] if k in fields else extra.get(k) for k in keys)


def unreadable_refs(keys: tuple[str, ...]) -> tuple[Any, ...]:
    """Stand-ins for the fields of a message :func:`field_refs` cannot read: new objects, the
    same as nothing a later turn holds, so that the message is read anew every turn."""
    return tuple(object() for _ in keys)


_PLAIN_MODELS: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def plain_model(cls: type) -> bool:
    """Whether ``cls`` is a pydantic model whose dump is its instances' fields: the declared
    ones in ``__dict__``, the extra ones in ``__pydantic_extra__``, under their own names (no
    computed fields, root model, serializers, aliases in the dump or ``model_dump`` of its
    own, and no mapping). The core's ``unchanged_prefix`` asks the same (this function is
    registered with it, and called once per class a call)."""
    try:
        return _PLAIN_MODELS[cls]
    except (KeyError, TypeError):
        pass
    try:
        found = _reads_as_plain_model(cls)
    except Exception:  # an odd class: read anew every turn, which is always right
        found = False
    with contextlib.suppress(TypeError):  # a class that takes no weak reference: asked anew
        _PLAIN_MODELS[cls] = found
    return found


def _reads_as_plain_model(cls: type) -> bool:
    if getattr(cls, "__pydantic_fields__", None) is None or issubclass(cls, Mapping):
        return False
    from pydantic import BaseModel  # installed: the class is a pydantic model

    decorators = getattr(cls, "__pydantic_decorators__", None)
    config = getattr(cls, "model_config", None)
    return (
        getattr(cls, "model_dump", None) is BaseModel.model_dump
        and not getattr(cls, "__pydantic_computed_fields__", None)
        and not getattr(cls, "__pydantic_root_model__", False)
        and decorators is not None
        and not getattr(decorators, "model_serializers", None)
        and not getattr(decorators, "field_serializers", None)
        and not (isinstance(config, Mapping) and config.get("serialize_by_alias"))
    )


register_plain_model(plain_model)


def field_columns(messages: Sequence[Any], keys: tuple[str, ...]) -> list[list[Any]] | None:
    """Per key, the messages' field objects (see :func:`field_refs`); ``None`` when a message
    has none to read."""
    if all(type(m) is dict for m in messages):
        return [list(map(dict.get, messages, repeat(key))) for key in keys]
    rows = [field_refs(m, keys) for m in messages]
    if any(r is None for r in rows):
        return None
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in keys]


class _Reader:
    """Typed field access that fails with the message index and field path."""

    __slots__ = ("fmt", "index")

    def __init__(self, fmt: str, index: int) -> None:
        self.fmt = fmt
        self.index = index

    def fail(self, path: str, why: str) -> MessageFormatError:
        return MessageFormatError(why, self.index, path, self.fmt)

    def mapping(self, obj: object, path: str) -> Mapping[str, Any]:
        found = as_mapping(obj)
        if found is None:
            raise self.fail(path or "message", f"expected an object, got {type(obj).__name__}")
        return found

    def str_(self, obj: Mapping[str, Any], key: str, path: str, *, required: bool = True) -> Any:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            what = "missing" if key not in obj else f"expected a string, got {type(value).__name__}"
            raise self.fail(f"{path}{key}", what)
        return value

    def list_(self, obj: object, path: str) -> list[Any]:
        if not isinstance(obj, list | tuple):
            raise self.fail(path, f"expected a list, got {type(obj).__name__}")
        return list(obj)


def _read_content(
    r: _Reader, content: object, path: str, read_part: Callable[[_Reader, object, str], Part]
) -> tuple[tuple[Part, ...], str]:
    """A string or a list of parts → (parts, style ``"str"`` or ``"list"``)."""
    if isinstance(content, str):
        return ((Part("text", text=content),) if content else ()), "str"
    if not isinstance(content, list | tuple):
        raise r.fail(path, f"expected a string or a list, got {type(content).__name__}")
    return tuple(read_part(r, b, f"{path}[{i}]") for i, b in enumerate(content)), "list"


class _Writer:
    """Collects what a conversion would lose; raises in strict mode.

    ``system`` is how many messages made of the caller's separate system prompt lead the list
    written: an error names the caller's message index (or the ``system`` field), not the
    position in that longer list.
    """

    __slots__ = ("fmt", "index", "strict", "system")

    def __init__(self, fmt: str, strict: bool, system: int = 0) -> None:
        self.fmt = fmt
        self.strict = strict
        self.system = system
        self.index: int | None = None

    def lossy(self, path: str, why: str) -> None:
        if not self.strict:
            return
        index = self.index
        if index is not None and self.system:
            index, path = (index - self.system, path) if index >= self.system else (None, "system")
        raise MessageFormatError(
            f"{why}; cannot write it as {self.fmt} without loss (strict=False drops it)",
            index,
            path,
            self.fmt,
        )


def _rest(obj: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    known_set = set(known)
    return {k: v for k, v in obj.items() if k not in known_set}


def _same(part: Part | Message, fmt: str) -> bool:
    return part.provider == fmt


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 80, 80


def message_list(messages: Any, fmt: str | None) -> list[Any]:
    """``messages`` as a new list, after refusing what is not a list of messages: a single
    message dict (or a string) would be read key by key (or character by character) and
    refused with a puzzling "expected a message dict, got str". Any other iterable, a
    generator too, is read once."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise MessageFormatError(
            f"expected a list of messages, got {type(messages).__name__}", None, "messages", fmt
        )
    return list(messages)


def shown(value: Any) -> str:
    """``repr(value)`` cut short, for an error message: a 10 MB string or a value nested
    10,000 deep in the wrong field must not make the message (or its making) blow up."""
    return _SHOWN.repr(value)


def public_fields(extra: Mapping[Any, Any]) -> dict[Any, Any]:
    """The fields of ``extra`` but ``_``-prefixed private ones (keys that are not strings kept)."""
    return {k: v for k, v in extra.items() if not (isinstance(k, str) and k.startswith("_"))}


def _extra(part: Part | Message, fmt: str) -> dict[str, Any]:
    """Unmodelled fields, public ones only, written back only to their own format."""
    if part.provider != fmt:
        return {}
    return public_fields(part.extra)


#: Chat Completions assistant fields the model reads that no other format has: a refusal
#: (``ChatCompletionMessage.refusal``), a reference to an earlier audio reply, a legacy
#: ``function_call``.
_CHAT_ONLY_FIELDS = ("refusal", "audio", "function_call")


def _message_loss(message: Message, fmt: str, w: _Writer) -> bool:
    """Report what a Chat Completions message carries at its own level that ``fmt`` cannot:
    a participant ``name``, the fields of :data:`_CHAT_ONLY_FIELDS`, a legacy ``function``
    result. Returns whether the whole message has no ``fmt`` form (a ``function`` result:
    dropped when not strict, with the ``function_call`` it answers). Fields of Anthropic
    blocks are checked too (:func:`_anthropic_fields_loss`)."""
    if message.provider == fmt:
        return False
    _anthropic_fields_loss(message.parts, fmt, w, "content")
    _gemini_fields_loss(message.parts, fmt, w)
    if message.provider != "openai_chat":
        return False
    if message.name is not None:
        w.lossy("name", f"{fmt} messages have no participant name")
    for key in _CHAT_ONLY_FIELDS:
        if message.extra.get(key) is not None:
            w.lossy(key, f"the Chat Completions {key!r} field has no {fmt} form")
    if message.role == "function":
        w.lossy("role", f"a legacy function result has no {fmt} form")
        return True
    return False


#: Anthropic block fields a conversion to another format must not drop silently.
_ANTHROPIC_MEANINGFUL = frozenset({"cache_control", "citations", "title", "context"})


def _anthropic_fields_loss(parts: Iterable[Part], fmt: str, w: _Writer, path: str) -> None:
    """Report the fields of Anthropic blocks (tool results' blocks too) that ``fmt`` has no
    place for and that mean something to the model or the cache: ``cache_control``,
    ``citations``, a document's ``title`` or ``context``, a tool result's ``is_error``. Other
    fields the SDK's blocks carry (a tool call's ``caller`` of ``{"type": "direct"}``) say
    nothing another provider could use."""
    for i, part in enumerate(parts):
        if part.provider != "anthropic" or part.kind == "other":  # "other": lossy when written
            continue
        for key, value in public_fields(part.extra).items():
            if key in _ANTHROPIC_MEANINGFUL and value is not None and value != [] and value != {}:
                w.lossy(f"{path}[{i}].{key}", f"the Anthropic {key!r} field has no {fmt} form")
        if part.is_error and fmt != "anthropic":
            w.lossy(f"{path}[{i}].is_error", f"a tool result's error flag has no {fmt} form")
        _anthropic_fields_loss(part.content, fmt, w, f"{path}[{i}].content")


def _gemini_fields_loss(parts: Iterable[Part], fmt: str, w: _Writer) -> None:
    """Report what a Gemini function response carries beside its JSON that ``fmt`` has no
    place for in a converted result: media its tool returned (``parts``: screenshots,
    files), and whether more responses follow (``will_continue``) or when the model reads it
    (``scheduling``)."""
    for i, part in enumerate(parts):
        if part.provider != "gemini" or part.kind != "tool_result":
            continue
        kept = part.extra.get("_fr", {})
        for key, camel, why in (
            ("parts", "parts", "the media a Gemini function response carries"),
            ("will_continue", "willContinue", "a Gemini function response's will_continue"),
            ("scheduling", "scheduling", "a Gemini function response's scheduling"),
        ):
            if kept.get(key) or kept.get(camel):
                w.lossy(f"parts[{i}].function_response.{key}", f"{why} has no {fmt} form here")


def _signature(part: Part, fmt: str, w: _Writer, path: str) -> Any:
    if part.signature is None:
        return None
    if part.provider == fmt:
        return part.signature
    w.lossy(path, f"opaque {part.provider} data (signature) is only valid for {part.provider}")
    return None


def _call_id(part: Part, w: _Writer) -> str:
    return part.call_id or f"{_SYNTH_ID}{w.index}"


# --------------------------------------------------------------------------- encodings


#: Deepest JSON nesting accepted in tool-call arguments and tool responses. Python's ``json``
#: recurses once per level and the interpreter stops near 1000 frames; past this depth a
#: later ``json.dumps`` (estimating, converting) would raise ``RecursionError`` far from the
#: message, so the reader refuses it with the message index and field instead.
_MAX_JSON_DEPTH = 256
_TOO_DEEP = f"JSON value nested deeper than {_MAX_JSON_DEPTH} levels"


def _too_deep(r: _Reader, path: str) -> MessageFormatError:
    return r.fail(path, _TOO_DEEP)


def _check_depth(r: _Reader, value: Any, path: str) -> Any:
    """``value`` itself, after checking (without recursion) that it nests at most so deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > _MAX_JSON_DEPTH:
            raise _too_deep(r, path)
        stack.extend((child, depth + 1) for child in children)
    return value


#: Integers below 2**2048 have at most 617 digits: fewer than any limit the interpreter can
#: set on converting an integer to text (``sys.set_int_max_str_digits``, at least 640).
_SAFE_INT_BITS = 2048


def _json_problem(value: Any, *, strict: bool = True) -> tuple[str, str] | None:
    """Where and why ``json.dumps(value, ensure_ascii=False).encode()`` would fail: (the field
    path below ``value``, the reason), or ``None`` when it would not.

    Estimating and converting write tool-call arguments, tool schemas and blocks kept
    verbatim as JSON text long after they were read; this check, made when they are read,
    lets that fail with the message and field instead of a bare ``TypeError`` (bytes, a set,
    a tuple key), ``ValueError`` (an integer too long to write) or ``UnicodeEncodeError`` (a
    lone surrogate: no UTF-8 form, so no JSON text a provider reads). A value nested deeper
    than :data:`_MAX_JSON_DEPTH` is reported at its root (path ``""``). Walked without
    recursion. ``strict=False`` is for what is written with ``default=str`` (blocks kept
    verbatim, built-in tools): any other leaf object is written as its ``str``, so it passes.
    """
    # An entry: (item, depth, parent entry, key or index, whether an index); the path is
    # joined from the parent entries only when something fails.
    stack: list[tuple[Any, int, Any, Any, bool]] = [(value, 1, None, None, False)]
    while stack:
        entry = stack.pop()
        item, depth = entry[0], entry[1]
        why = None
        if isinstance(item, str):
            why = _no_utf8(item)
        elif isinstance(item, dict) or (not strict and isinstance(item, Mapping)):
            if depth > _MAX_JSON_DEPTH:
                return "", _TOO_DEEP
            for key, child in item.items():
                if isinstance(key, str):
                    why = _no_utf8(key)
                elif key is None or isinstance(key, int | float):
                    why = _no_int_text(key)
                else:
                    why = f"a key of type {type(key).__name__} (JSON keys are strings)"
                if why:
                    return _entry_path((key, depth + 1, entry, key, False)), why
                stack.append((child, depth + 1, entry, key, False))
        elif isinstance(item, list | tuple):
            if depth > _MAX_JSON_DEPTH:
                return "", _TOO_DEEP
            stack.extend((child, depth + 1, entry, i, True) for i, child in enumerate(item))
        elif isinstance(item, int):
            why = _no_int_text(item)
        elif strict and not (item is None or isinstance(item, float)):
            why = f"not a JSON value: {type(item).__name__}"
        if why:
            return _entry_path(entry), why
    return None


def _no_utf8(text: str) -> str | None:
    if text.isascii():  # a flag of the string: no scan
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"text with a lone surrogate at position {e.start} (no UTF-8 form)"
    return None


def _no_int_text(number: Any) -> str | None:
    if not isinstance(number, int) or number.bit_length() <= _SAFE_INT_BITS:
        return None
    try:
        int.__repr__(number)
    except ValueError:
        return "not a JSON value: an integer too long to write as text"
    return None


def _entry_path(entry: tuple[Any, int, Any, Any, bool]) -> str:
    labels: list[str] = []
    while entry[2] is not None:
        labels.append(f"[{entry[3]}]" if entry[4] else f".{entry[3]}")
        entry = entry[2]
    return "".join(reversed(labels))


def _check_json(r: _Reader, value: Any, path: str, *, strict: bool = True) -> Any:
    """``value`` itself, after checking that it can be written as JSON text (see
    :func:`_json_problem`); the error names the field below ``path`` (``""``: the message)."""
    problem = _json_problem(value, strict=strict)
    if problem is None:
        return value
    where, why = problem
    raise r.fail(f"{path}{where}" if path else (where.removeprefix(".") or "message"), why)


def _parse_args(r: _Reader, raw: str, path: str) -> Any:
    """Tool-call arguments string → its JSON value; ``None`` when it is not JSON."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    except RecursionError:
        raise _too_deep(r, path) from None
    # Only a string with that many brackets can nest that deep: skip the walk otherwise.
    if raw.count("{") + raw.count("[") > _MAX_JSON_DEPTH:
        _check_depth(r, value, path)
    return value


#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call.
_ENCODE_JSON = json.JSONEncoder(ensure_ascii=False).encode


def json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, the text a tool call's arguments are sent
    and counted as: written by the core for plain JSON values (the same text, without the
    encoder's two microseconds a call), by Python's encoder for anything else (raising as it
    raises)."""
    text = json_text_of(value)
    return text if text is not None else _ENCODE_JSON(value)


def _args_string(part: Part) -> str:
    if part.raw_arguments is not None:
        return part.raw_arguments
    return json_text(part.arguments if part.arguments is not None else {})


def _args_object(part: Part, w: _Writer, path: str) -> Any:
    if "_custom" in part.extra:  # a Chat Completions custom tool call: free-form text input
        w.lossy(path, "a custom tool call takes free-form text and this format needs an object")
        return {"_raw_arguments": part.raw_arguments or ""}
    if part.arguments is not None:
        return part.arguments
    if part.raw_arguments is None or not part.raw_arguments.strip():
        return {}
    w.lossy(path, "tool-call arguments are not valid JSON and this format needs an object")
    return {"_raw_arguments": part.raw_arguments}


def _parse_data_url(url: str) -> tuple[str | None, str | None]:
    """``data:image/png;base64,XXXX`` → (``image/png``, ``XXXX``)."""
    if not url.startswith("data:"):
        return None, None
    head, _, payload = url.partition(",")
    media = head[5:].split(";", 1)[0] or None
    return media, payload if ";base64" in head else None


#: Which provider's file store a format's file ids point into (OpenAI's two APIs share one).
_FILE_STORE = {
    "openai_chat": "OpenAI",
    "openai_responses": "OpenAI",
    "anthropic": "Anthropic",
    "gemini": "Gemini",
}


def _url_kind(part: Part, fmt: str, w: _Writer, path: str) -> str | None:
    """How ``part.url`` can be written in ``fmt``: ``"url"`` (a URL anyone can fetch, or a
    data URL), ``"file"`` (a file id in the store ``fmt`` reads: OpenAI ``file-...``,
    Anthropic ``file_...``), or ``None`` (a file id in another provider's store: no other
    provider can open it, so it is lossy, and dropped when not strict).

    The view keeps a file id and a URL in the same field; the URL schemes tell them apart.
    """
    url = part.url or ""
    if url.startswith(("http://", "https://", "data:", "gs://")):
        return "url"
    store = _FILE_STORE.get(part.provider or "")
    if store == _FILE_STORE[fmt]:
        return "file"
    w.lossy(path, f"a file id of the {store or 'unknown'} file store cannot be read by {fmt}")
    return None


def _data_url(media_type: str | None, data: str | bytes | None) -> str:
    payload = data if isinstance(data, str) else _b64(data or b"")
    return f"data:{media_type or 'application/octet-stream'};base64,{payload}"


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _as_b64(data: str | bytes) -> str:
    return data if isinstance(data, str) else _b64(data)


def _parts_text(parts: Iterable[Part]) -> str:
    """The text parts of a tool result as one text (Gemini's function response holds one):
    a line each, as LangChain joins them (joined end to end, ``exit code 1`` and
    ``stderr: disk full`` read ``exit code 1stderr: disk full``)."""
    return "\n".join(p.text for p in parts if p.kind == "text")


def _is_genai_object(obj: object) -> bool:
    return type(obj).__module__.startswith("google.genai") and hasattr(obj, "parts")


def _genai_to_dict(obj: Any) -> Any:
    if type(obj).__module__.startswith("google.genai") and hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    return obj
