"""Token estimation: fast, tokenizer-free counts for every common encoding."""

from __future__ import annotations

from ctxbudget import _core
from ctxbudget.tool_output import BytesLike

__all__ = ["DEFAULT_ENCODING", "ENCODINGS", "estimate_tokens"]

#: Encoding used when none is given.
DEFAULT_ENCODING = "o200k"

#: Every encoding the estimator has tables for. ``conservative`` is never below any other.
ENCODINGS: tuple[str, ...] = tuple(_core.encodings())


def estimate_tokens(text: str | BytesLike, encoding: str = DEFAULT_ENCODING) -> int:
    """Estimate how many tokens ``text`` takes in ``encoding``, without a tokenizer.

    One pass over the text emulates the tokenizer's pre-tokenization and turns each piece
    into a token estimate with tables fitted against the real tokenizers. Large inputs are
    processed with the interpreter released.

    Args:
        text: A ``str`` or UTF-8 ``bytes``/``bytearray``/``memoryview``. Invalid UTF-8 in
            bytes is tolerated (counted byte by byte), never an error.
        encoding: One of :data:`ENCODINGS` (``"o200k"``, ``"cl100k"``, ``"llama3"``,
            ``"qwen3"``, ``"conservative"``).

    Returns:
        The estimated token count (0 for empty text).

    Raises:
        ValueError: Unknown encoding.
        TypeError: ``text`` is neither ``str`` nor bytes-like.

    >>> estimate_tokens("")
    0
    >>> 1 <= estimate_tokens("Hello, world!") <= 6
    True
    """
    return _core.estimate_tokens(text, encoding)
