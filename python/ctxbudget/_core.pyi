"""Type stubs for the Rust core. Kept in sync with rust/py.rs (checked by mypy.stubtest)."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "DictVersions",
    "TextStream",
    "check_text",
    "count_newlines",
    "detect_type",
    "encodings",
    "estimate_batch",
    "estimate_tokens",
    "json_text_of",
    "register_plain_model",
    "same_value",
    "select_largest",
    "unchanged_prefix",
    "validate_pairing",
    "validate_text",
    "weigh_messages",
]

_BytesLike = bytes | bytearray | memoryview

def validate_text(data: _BytesLike, /) -> None: ...
def check_text(data: _BytesLike, /) -> str: ...
def detect_type(data: _BytesLike, /) -> str | None: ...
def count_newlines(data: str | _BytesLike, /) -> int: ...
def estimate_tokens(
    text: str | _BytesLike, /, encoding: str = "o200k", *, parallel: bool = False
) -> int: ...
def estimate_batch(
    texts: Iterable[str | _BytesLike], /, encoding: str = "o200k"
) -> npt.NDArray[np.int64]: ...
def encodings() -> list[str]: ...
def json_text_of(value: object, /) -> str | None: ...
def weigh_messages(
    messages: list[Any],
    /,
    format: str,
    encoding: str,
    weights: tuple[float, float, float, float, float],
) -> tuple[
    list[tuple[tuple[Any, ...], tuple[bool, float, float, int, int, bool]] | None],
    tuple[float, float, float] | None,
]: ...
def select_largest(
    sizes: Sequence[int] | npt.NDArray[np.int64], need: int, /, protected: Sequence[int]
) -> tuple[list[int], int, int]: ...
def validate_pairing(
    events: Iterable[tuple[int, int | str, str]], /
) -> list[tuple[str, str, list[int]]]: ...

@final
class DictVersions:
    supported: bool
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[type[DictVersions], tuple[()]]: ...

@final
class TextStream:
    def __new__(cls, encodings: list[str], /) -> TextStream: ...
    def feed(self, data: _BytesLike, /) -> None: ...
    def finish(self) -> tuple[int, list[int], int]: ...

def same_value(a: Any, b: Any, /) -> bool: ...
def register_plain_model(predicate: Callable[[type], bool]) -> None: ...
def unchanged_prefix(
    messages: list[Any],
    previous: list[Any],
    refs: list[list[Any]],
    keys: tuple[str, ...],
    seen: DictVersions | None = None,
) -> int: ...
