"""The optional ``langchain-core`` dependency, loaded only when a LangChain call needs it."""

from __future__ import annotations

from typing import Any


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
