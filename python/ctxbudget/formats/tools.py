"""Tool definitions in every provider's shape, read into :class:`ToolSpec` and written back.

The public entry points, with their documentation, are :func:`ctxbudget.messages.normalize_tools`
and :func:`ctxbudget.messages.convert_tools`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxbudget.formats.common import _genai_to_dict
from ctxbudget.formats.gemini import _snake
from ctxbudget.formats.model import FORMATS, MessageFormatError, ToolSpec


def _read_tools(tools: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """Tool definitions in any provider's shape (see messages.normalize_tools)."""
    out: list[ToolSpec] = []
    for index, raw in enumerate(tools):
        tool = _genai_to_dict(raw)
        if not isinstance(tool, Mapping):
            raise MessageFormatError("expected a tool object", index, "tools", None)
        tool = _snake(tool)
        if "function_declarations" in tool:
            for decl in tool["function_declarations"] or []:
                d = _snake(decl)
                params = d.get("parameters_json_schema", d.get("parameters"))
                out.append(ToolSpec(d.get("name", ""), d.get("description") or "", params, raw=raw))
            continue
        kind = tool.get("type")
        if kind == "function" and isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            params = fn.get("parameters")
            out.append(ToolSpec(fn.get("name", ""), fn.get("description") or "", params, raw=raw))
        elif kind == "function" and "name" in tool:
            params = tool.get("parameters")
            out.append(ToolSpec(tool["name"], tool.get("description") or "", params, raw=raw))
        elif "input_schema" in tool:
            params = tool["input_schema"]
            out.append(ToolSpec(tool["name"], tool.get("description") or "", params, raw=raw))
        elif isinstance(kind, str) or "name" in tool:
            out.append(ToolSpec(str(tool.get("name", kind)), "", None, kind=str(kind), raw=raw))
        else:
            raise MessageFormatError(
                "not a tool definition in any known shape", index, "tools", None
            )
    return tuple(out)


def _write_tools(tools: Sequence[Any], to: str) -> list[Any]:
    """Function tools in ``to``'s schema shape (see messages.convert_tools)."""
    specs = _read_tools(tools)
    for index, spec in enumerate(specs):
        if spec.parameters is None:
            raise MessageFormatError(
                f"built-in tool {spec.kind!r} has no {to} form", index, "tools", to
            )
    params = [dict(s.parameters or {}) for s in specs]
    if to == "openai_chat":
        return [
            {
                "type": "function",
                "function": {"name": s.name, "description": s.description, "parameters": p},
            }
            for s, p in zip(specs, params, strict=True)
        ]
    if to == "openai_responses":
        return [
            {"type": "function", "name": s.name, "description": s.description, "parameters": p}
            for s, p in zip(specs, params, strict=True)
        ]
    if to == "anthropic":
        return [
            {"name": s.name, "description": s.description, "input_schema": p}
            for s, p in zip(specs, params, strict=True)
        ]
    if to == "gemini":
        decls = [
            {"name": s.name, "description": s.description, "parameters_json_schema": p}
            for s, p in zip(specs, params, strict=True)
        ]
        return [{"function_declarations": decls}]
    raise ValueError(f"unknown message format {to!r}; expected one of {FORMATS}")
