"""The optional ``langchain-core`` dependency, loaded only when a LangChain call needs it."""

from __future__ import annotations

from typing import Any

from ctxbudget.formats.common import json_text


def _is_langchain(obj: object) -> bool:
    return type(obj).__module__.startswith("langchain") and hasattr(obj, "content")


def _langchain() -> Any:
    try:
        from langchain_core import messages as lc_messages
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "LangChain messages need langchain-core: pip install langchain-core"
        ) from exc
    return lc_messages


#: The LangChain message classes written directly, and their Chat Completions roles.
_PLAIN_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
    "SystemMessage": "system",
}


def _plain_openai_dict(message: Any, lc: Any) -> dict[str, Any] | None:
    """What ``convert_to_openai_messages([message])`` gives for a plain message, built
    directly (LangChain's converter costs about 15 us a message); ``None`` for anything else.

    Plain: a ``HumanMessage``, ``AIMessage``, ``ToolMessage`` or ``SystemMessage`` (those very
    classes) with string content, a system message without an ``__openai_role__``, an AI
    message without invalid tool calls or a ``reasoning_content`` (LangChain's converter drops
    those; ``messages._langchain_one`` adds them to its dict). The dict is
    LangChain's own, key for key (``tests/test_messages.py`` compares them): role, name when
    set, tool calls (arguments as ``json.dumps(args, ensure_ascii=False)``), a refusal when
    set, the tool call id, content.
    """
    kind = type(message)
    role = _PLAIN_ROLES.get(kind.__name__)
    if role is None or kind is not getattr(lc, kind.__name__, None):
        return None
    content = message.content
    extra = message.additional_kwargs
    if type(content) is not str or (role == "system" and "__openai_role__" in extra):
        return None
    if role == "assistant" and (message.invalid_tool_calls or "reasoning_content" in extra):
        return None
    out: dict[str, Any] = {"role": role}
    if message.name:
        out["name"] = message.name
    if role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "type": "function",
                "id": call["id"],
                "function": {
                    "name": call["name"],
                    "arguments": json_text(call["args"]),
                },
            }
            for call in message.tool_calls
        ]
    if extra.get("refusal"):
        out["refusal"] = extra["refusal"]
    if role == "tool":
        out["tool_call_id"] = message.tool_call_id
    out["content"] = content
    return out
