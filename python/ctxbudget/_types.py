"""Type aliases shared across modules (kept here so no module imports another just for them)."""

from __future__ import annotations

__all__ = ["BytesLike"]

#: What the Rust core reads as raw bytes without copying: any C-contiguous buffer.
BytesLike = bytes | bytearray | memoryview
