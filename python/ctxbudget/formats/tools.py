"""Tool definitions in every provider's shape, read into :class:`ToolSpec` and written back.

The public entry points, with their documentation, are :func:`ctxbudget.messages.normalize_tools`
and :func:`ctxbudget.messages.convert_tools`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxbudget.formats.common import _genai_to_dict, _json_problem
from ctxbudget.formats.gemini import _snake
from ctxbudget.formats.model import FORMATS, MessageFormatError, ToolSpec


def _read_tools(tools: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """Tool definitions in any provider's shape (see messages.normalize_tools)."""
    out: list[ToolSpec] = []
    for index, raw in enumerate(tools):
        tool = _genai_to_dict(raw)
        if not isinstance(tool, Mapping):
            raise MessageFormatError("expected a tool object", index, "tools", None)
        fields = _snake(tool)
        if "function_declarations" in fields:
            decls = fields["function_declarations"] or []
            if not isinstance(decls, list | tuple):
                raise _tool_error(index, ".function_declarations", "expected a list")
            for j, decl in enumerate(decls):
                if not isinstance(decl, Mapping):
                    path = f".function_declarations[{j}]"
                    raise _tool_error(index, path, "expected a function declaration object")
                d = _snake(decl)
                schema = "parameters_json_schema" if "parameters_json_schema" in d else "parameters"
                out.append(_function(index, d, f".function_declarations[{j}].", schema, raw))
            continue
        kind = fields.get("type")
        if kind == "function" and isinstance(fields.get("function"), Mapping):
            out.append(_function(index, fields["function"], ".function.", "parameters", raw))
        elif kind == "function" and "name" in fields:
            out.append(_function(index, fields, ".", "parameters", raw))
        elif "input_schema" in fields:
            if "name" not in fields:
                raise _tool_error(index, ".name", "missing")
            out.append(_function(index, fields, ".", "input_schema", raw))
        elif isinstance(kind, str) or "name" in fields:
            # Built-in: estimated as its whole object, written as JSON with ``default=str``.
            _check_tool_json(index, tool, "", strict=False)
            out.append(ToolSpec(str(fields.get("name", kind)), "", None, kind=str(kind), raw=raw))
        else:
            raise MessageFormatError(
                "not a tool definition in any known shape", index, "tools", None
            )
    return tuple(out)


def _function(index: int, fn: Mapping[str, Any], path: str, schema: str, raw: Any) -> ToolSpec:
    """A function tool from its fields ``fn`` (at ``path`` in tool ``index``), its JSON schema
    at key ``schema``. What the estimator writes as JSON text (name, description, schema) is
    checked here, so that a bad value fails naming the tool and field, not in ``json.dumps``."""
    name, description, params = (
        _check_tool_json(index, fn.get(key, default), f"{path}{key}")
        for key, default in (("name", ""), ("description", None), (schema, None))
    )
    return ToolSpec(name, description or "", params, raw=raw)


def _check_tool_json(index: int, value: Any, path: str, *, strict: bool = True) -> Any:
    """``value`` (the field at ``path`` of tool ``index``) itself, after checking that it can be
    written as JSON text (see ``common._json_problem``)."""
    problem = _json_problem(value, strict=strict)
    if problem is not None:
        where, why = problem
        raise _tool_error(index, f"{path}{where}", why)
    return value


def _tool_error(index: int, path: str, why: str) -> MessageFormatError:
    """An error naming the tool's position (``index``) and the field, ``tools[i]<path>``."""
    return MessageFormatError(why, index, f"tools[{index}]{path}", None)


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
