"""The provider-neutral view every message format is read into and written from.

A conversation becomes a tuple of :class:`Message` made of :class:`Part`; a tool definition
becomes a :class:`ToolSpec`. Fields a format has that the view does not model travel in
``extra`` and are written back only to the format they came from. All of these are public as
``ctxbudget.messages.<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

MessageFormat = Literal["openai_chat", "openai_responses", "anthropic", "gemini"]
#: Every wire format understood, in detection-tie order.
FORMATS: tuple[MessageFormat, ...] = ("openai_chat", "openai_responses", "anthropic", "gemini")

PartKind = Literal[
    "text", "image", "document", "audio", "file", "tool_call", "tool_result", "reasoning", "other"
]


class MessageFormatError(ValueError):
    """A message that is not valid in its format, or a field a conversion cannot carry.

    Attributes:
        index: Position of the message in the list, or of the tool in the tool list for a tool
            definition (``None`` for a request-level problem).
        field: The offending field, as a path (``"content[1].image_url"``, ``"tools[0].name"``).
        format: The format being read or written.
        reason: What is wrong, without the position (the message's last part).
        item: What ``index`` counts (``"message"``, ``"tool"``, ...).
    """

    __module__ = "ctxbudget.messages"  # the public name, as tracebacks show it

    def __init__(
        self, message: str, index: int | None, field: str, fmt: str | None, *, item: str = "message"
    ) -> None:
        where = f"{item} {index}" if index is not None else "request"
        super().__init__(f"{where}, field {field!r}: {message}")
        self.reason = message
        self.index = index
        self.field = field
        self.format = fmt
        self.item = item

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls ``cls(*args)`` with the one formatted message, which this
        # signature refuses: a worker process's error would fail to reach its parent.
        fields = (self.reason, self.index, self.field, self.format, self.item)
        return (_rebuild_format_error, fields, self.__dict__)


def _rebuild_format_error(
    reason: str, index: int | None, field: str, fmt: str | None, item: str
) -> MessageFormatError:
    return MessageFormatError(reason, index, field, fmt, item=item)


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a message, in a provider-neutral shape.

    Attributes:
        kind: ``text``, ``image``, ``document``, ``audio``, ``file``, ``tool_call``,
            ``tool_result``, ``reasoning`` or ``other`` (kept verbatim in :attr:`extra`).
        text: The text (for ``reasoning``, the visible thinking or summary text).
        media_type: MIME type of inline media (``image/png``, ``application/pdf``, ...).
        data: Base64 payload of inline media (``bytes`` when the caller gave raw bytes).
        url: Remote or data URL, or a provider file URI.
        detail: OpenAI image ``detail`` (``low``/``high``/``auto``).
        call_id: Tool-call id for ``tool_call`` and ``tool_result``.
        name: Tool name (``tool_call``; ``tool_result`` when the format names it), or a file name.
        arguments: Tool-call arguments as a JSON value (a dict, normally).
        raw_arguments: The arguments string exactly as given (OpenAI formats), if any.
        content: The parts of a ``tool_result``.
        is_error: ``tool_result`` reported an error.
        signature: Opaque provider data that must go back unchanged (Anthropic thinking
            signature or redacted data, Responses ``encrypted_content``, Gemini
            ``thought_signature``).
        provider: Format that produced :attr:`signature` or :attr:`extra`.
        extra: Fields this view does not model, written back only to the same format.
    """

    kind: PartKind
    text: str = ""
    media_type: str | None = None
    data: str | bytes | None = None
    url: str | None = None
    detail: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: Any = None
    raw_arguments: str | None = None
    content: tuple[Part, ...] = ()
    is_error: bool = False
    signature: Any = None
    provider: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """One message in the internal view.

    Attributes:
        role: ``system``, ``developer``, ``user``, ``assistant`` or ``tool`` (one OpenAI Chat
            tool result; other formats carry results as ``tool_result`` parts of a ``user``
            message).
        parts: The content, in order.
        name: Chat Completions participant name.
        style: How the source wrote its content (``str``, ``list``, ``none``, ``absent``), so a
            same-format round trip writes it back the same way.
        provider: The format the message was read from.
        extra: Message-level fields this view does not model (same-format only).
        source: The caller's original object, shared (never copied) by later rewrites.
    """

    role: str
    parts: tuple[Part, ...]
    name: str | None = None
    style: str = "list"
    provider: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    source: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model, in a provider-neutral shape.

    Attributes:
        name: Tool name.
        description: Its description.
        parameters: JSON schema of its arguments (``None`` for a provider built-in tool, or a
            function that declares none).
        kind: ``function`` or the provider's built-in type (``web_search_20250305``, ...).
        raw: The caller's original tool object.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    kind: str = "function"
    raw: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ConvertedMessages:
    """Messages written in a target format.

    Attributes:
        format: The target format.
        messages: The messages (``contents`` for Gemini, ``input`` for Responses).
        system: The system prompt the target takes outside its message list (Anthropic
            ``system``, Gemini ``system_instruction``), or ``None``.
    """

    format: MessageFormat
    messages: list[Any]
    system: Any = None
