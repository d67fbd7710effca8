"""Telling a message's format from its shape, for :func:`ctxbudget.messages.detect_format`."""

from __future__ import annotations

from collections.abc import Mapping

from ctxbudget.formats.anthropic import _ANTH_BLOCK_TYPES
from ctxbudget.formats.common import _is_genai_object
from ctxbudget.formats.model import MessageFormat
from ctxbudget.formats.openai_chat import _CHAT_PART_TYPES
from ctxbudget.formats.openai_responses import _RESP_ITEM_TYPES, _RESP_PART_TYPES


def _vote(message: object) -> MessageFormat | None:
    """The format a single message proves, or ``None`` if it fits several."""
    if _is_genai_object(message):
        return "gemini"
    if not isinstance(message, Mapping):
        return None
    if "parts" in message or message.get("role") == "model":
        return "gemini"
    kind = message.get("type")
    if isinstance(kind, str) and kind != "message" and kind in _RESP_ITEM_TYPES:
        return "openai_responses"
    role = message.get("role")
    if role == "tool" or "tool_calls" in message or "tool_call_id" in message:
        return "openai_chat"
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            btype = block.get("type")
            if not isinstance(btype, str):
                continue
            if btype in _ANTH_BLOCK_TYPES:
                return "anthropic"
            if btype in _RESP_PART_TYPES:
                return "openai_responses"
            if btype in _CHAT_PART_TYPES and btype != "text":
                return "openai_chat"
            if btype == "text" and "cache_control" in block:
                return "anthropic"
    if kind == "message":
        return "openai_responses"
    return None
