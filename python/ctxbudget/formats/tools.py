"""Tool definitions in every provider's shape, read into :class:`ToolSpec` and written back.

The public entry points, with their documentation, are :func:`ctxbudget.messages.normalize_tools`
and :func:`ctxbudget.messages.convert_tools`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ctxbudget.formats.common import _genai_to_dict, _json_problem
from ctxbudget.formats.gemini import _snake
from ctxbudget.formats.model import FORMATS, MessageFormatError, ToolSpec

# Fields of a Gemini ``Tool`` that are built-in tools (google-genai 1.x: search, code
# execution, URL context, ...). Any field of a ``types.Tool`` object counts, these in a dict.
_GEMINI_BUILTINS = frozenset(
    {
        "code_execution",
        "computer_use",
        "enterprise_web_search",
        "exa_ai_search",
        "file_search",
        "google_maps",
        "google_search",
        "google_search_retrieval",
        "mcp_servers",
        "parallel_ai_search",
        "retrieval",
        "url_context",
    }
)


def _read_tools(tools: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """Tool definitions in any provider's shape (see messages.normalize_tools)."""
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        # A lone tool (a dict, a google-genai Tool) iterates as its keys or fields.
        raise MessageFormatError(
            f"expected a list of tools, got {type(tools).__name__}", None, "tools", None
        )
    return tuple(spec for index, raw in enumerate(tools) for spec in _read_tool(index, raw))


def _read_tool(index: int, raw: Any) -> list[ToolSpec]:
    """The tools of entry ``index`` of a tool list: one, or a Gemini ``Tool``'s several."""
    tool = _genai_to_dict(raw)
    if not isinstance(tool, Mapping):
        raise _tool_error(index, "", "expected a tool object")
    fields = _snake(tool)
    builtins = _gemini_builtins(fields, raw)
    if "function_declarations" in fields or builtins:
        return _read_gemini_tool(index, fields, builtins, raw)
    kind = fields.get("type")
    if kind == "function" and isinstance(fields.get("function"), Mapping):
        return [_function(index, fields["function"], ".function.", "parameters", raw)]
    if kind == "function" and "name" in fields:
        return [_function(index, fields, ".", "parameters", raw)]
    if "input_schema" in fields:
        if "name" not in fields:
            raise _tool_error(index, ".name", "missing")
        return [_function(index, fields, ".", "input_schema", raw)]
    if isinstance(kind, str) or "name" in fields:
        # Built-in: estimated as its whole object, written as JSON with ``default=str``.
        _check_tool_json(index, tool, "", strict=False)
        return [ToolSpec(str(fields.get("name", kind)), "", None, kind=str(kind), raw=raw)]
    raise _tool_error(index, "", "not a tool definition in any known shape")


def _read_gemini_tool(
    index: int, fields: Mapping[str, Any], builtins: list[tuple[str, Any]], raw: Any
) -> list[ToolSpec]:
    """A Gemini ``Tool``: its function declarations, then its built-in tools."""
    decls = fields.get("function_declarations") or []
    if not isinstance(decls, list | tuple):
        raise _tool_error(index, ".function_declarations", "expected a list")
    out: list[ToolSpec] = []
    for j, decl in enumerate(decls):
        if not isinstance(decl, Mapping):
            path = f".function_declarations[{j}]"
            raise _tool_error(index, path, "expected a function declaration object")
        d = _snake(decl)
        schema = "parameters_json_schema" if "parameters_json_schema" in d else "parameters"
        out.append(_function(index, d, f".function_declarations[{j}].", schema, raw))
    for key, value in builtins:
        _check_tool_json(index, value, f".{key}", strict=False)
        out.append(ToolSpec(key, "", None, kind=key, raw={key: value}))
    return out


def _gemini_builtins(fields: Mapping[str, Any], raw: Any) -> list[tuple[str, Any]]:
    """The built-in tools of a Gemini ``Tool`` (``fields``, read from ``raw``): each field other
    than its function declarations, as ``(snake_case name, value)``. A mapping with a ``type``,
    ``name`` or ``input_schema`` is another provider's tool; a plain mapping counts only when it
    names a known built-in (``_GEMINI_BUILTINS``), and then all its other fields count too (the
    provider gets them; counting them errs on the safe side)."""
    if fields.keys() & {"type", "name", "input_schema"}:
        return []
    found = [
        (_snake_key(k), v)
        for k, v in fields.items()
        if k != "function_declarations" and v is not None
    ]
    sdk = type(raw).__module__.startswith("google.genai")
    if not sdk and not any(k in _GEMINI_BUILTINS for k, _ in found):
        return []
    return found


def _snake_key(key: Any) -> str:
    """``googleSearch`` → ``google_search`` (JSON field names of the Gemini REST API)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key)).lower()


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
    return MessageFormatError(why, index, f"tools[{index}]{path}", None, item="tool")


def _write_tools(tools: Sequence[Any], to: str) -> list[Any]:
    """Function tools in ``to``'s schema shape (see messages.convert_tools)."""
    specs: list[ToolSpec] = []
    for index, raw in enumerate(tools):
        for spec in _read_tool(index, raw):
            if spec.kind != "function":
                raise MessageFormatError(
                    f"built-in tool {spec.kind!r} has no {to} form",
                    index,
                    f"tools[{index}]",
                    to,
                    item="tool",
                )
            specs.append(spec)
    # A function that declares no parameters takes none: an empty object schema.
    params = [dict(s.parameters or {"type": "object", "properties": {}}) for s in specs]
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
