"""Token counts that say how they were made: EXACT from the model's own tokenizer, or ESTIMATE.

When you have the model's tokenizer, counts are exact: wrap a HuggingFace
``tokenizers.Tokenizer`` (or a ``tokenizer.json`` path), a ``tiktoken.Encoding``, or any
``Callable[[str], int]``. Otherwise the Rust estimator gives a fast estimate in the encoding that
fits the model best (:func:`encoding_for_model`), or ``conservative`` for unknown models.

>>> count = count_tokens("Hello, world!", "gpt-4o")
>>> count.accuracy is Accuracy.ESTIMATE, count.encoding
(True, 'o200k')
>>> exact = TokenCounter.from_callable(lambda text: len(text.split()), name="words")
>>> exact.count("three little words")
TokenCount(tokens=3, accuracy=<Accuracy.EXACT: 'exact'>, encoding='words')
"""

from __future__ import annotations

import enum
import errno
import numbers
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ctxbudget.models import encoding_for_model
from ctxbudget.tokens import DEFAULT_ENCODING, ENCODINGS, estimate_batch, estimate_tokens

__all__ = [
    "Accuracy",
    "TokenCount",
    "TokenCounter",
    "count_tokens",
    "counter_for",
    "encoding_for_model",
]


class Accuracy(enum.Enum):
    """How a count was obtained."""

    #: Counted by the model's own tokenizer.
    EXACT = "exact"
    #: Estimated by the Rust estimator (no tokenizer).
    ESTIMATE = "estimate"


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A token count and whether it is exact.

    Attributes:
        tokens: The number of tokens.
        accuracy: :attr:`Accuracy.EXACT` or :attr:`Accuracy.ESTIMATE`.
        encoding: The estimator encoding, or the name of the exact tokenizer.
    """

    tokens: int
    accuracy: Accuracy
    encoding: str

    @property
    def exact(self) -> bool:
        """True when the count came from the model's own tokenizer."""
        return self.accuracy is Accuracy.EXACT

    def __int__(self) -> int:
        return self.tokens


class TokenCounter:
    """Counts tokens of text, exactly (a tokenizer) or by estimate (the Rust estimator).

    Build one with :meth:`estimator`, :meth:`from_huggingface`, :meth:`from_tokenizer_file`,
    :meth:`from_tiktoken`, :meth:`from_callable`, or let :func:`counter_for` pick.

    >>> TokenCounter.estimator("cl100k").count("").tokens
    0
    """

    __slots__ = ("_count", "_estimator_encoding", "accuracy", "name")

    def __init__(self, count: Callable[[str], int], accuracy: Accuracy, name: str) -> None:
        self._count = count
        self.accuracy = accuracy
        self.name = name
        # Set only by :meth:`estimator`: then ``count_many`` can use the parallel batch.
        self._estimator_encoding: str | None = None

    def __repr__(self) -> str:
        return f"TokenCounter(name={self.name!r}, accuracy={self.accuracy.name})"

    def count(self, text: str) -> TokenCount:
        """Count the tokens of ``text``.

        Raises:
            TypeError: The counting callable returned something other than an ``int``.
            ValueError: It returned a negative number.
        """
        return TokenCount(self._checked(self._count(text)), self.accuracy, self.name)

    def tokens(self, text: str) -> int:
        """The number of tokens in ``text``, checked as :meth:`count` checks it, without the
        label: for callers that add up many counts of one counter.

        Raises:
            TypeError: The counting callable returned something other than an ``int``.
            ValueError: It returned a negative number.
        """
        return self._checked(self._count(text))

    def count_many(self, texts: Iterable[str]) -> list[TokenCount]:
        """Count many texts (the estimator does them in parallel).

        Raises:
            TypeError: ``texts`` is one ``str`` or ``bytes`` (it iterates as characters).
        """
        if isinstance(texts, str | bytes):
            raise TypeError(
                f"count_many takes a list of texts, not one {type(texts).__name__}: use count"
            )
        items = list(texts)
        if self._estimator_encoding is not None:
            counts = estimate_batch(items, self._estimator_encoding).tolist()
        else:
            counts = [self._checked(self._count(t)) for t in items]
        return [TokenCount(n, self.accuracy, self.name) for n in counts]

    def _checked(self, value: object) -> int:
        """``value``, what the counting callable returned, as a token count: an ``int`` (any
        integral type but ``bool``) that is not negative."""
        if type(value) is not int:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                tokens = hasattr(value, "__len__") and not isinstance(value, str | bytes)
                hint = " (return len(tokens), not the tokens)" if tokens else ""
                shown = repr(value)
                shown = shown if len(shown) <= 40 else shown[:37] + "..."
                raise TypeError(
                    f"token counter {self.name!r} returned {type(value).__name__} {shown};"
                    f" expected an int, the number of tokens{hint}"
                )
            value = int(value)
        if value < 0:
            raise ValueError(
                f"token counter {self.name!r} returned {value}; expected the number of tokens,"
                " 0 or more"
            )
        return value

    @classmethod
    def estimator(cls, encoding: str = DEFAULT_ENCODING) -> TokenCounter:
        """The Rust estimator for ``encoding`` (one of ``ENCODINGS``, any case): an ESTIMATE."""
        name = _encoding_name(encoding)
        if name is None:
            raise ValueError(f"unknown encoding {encoding!r}; expected one of {ENCODINGS}")
        counter = cls(lambda text: estimate_tokens(text, name), Accuracy.ESTIMATE, name)
        counter._estimator_encoding = name
        return counter

    @classmethod
    def from_huggingface(cls, tokenizer: Any, name: str | None = None) -> TokenCounter:
        """A HuggingFace ``tokenizers.Tokenizer``: EXACT, without special tokens added.

        Truncation and padding set on the tokenizer (many ``tokenizer.json`` files ship with
        them), now or after the counter is made, are ignored: while the tokenizer has either
        on, the counter encodes with a copy that has both turned off, so a long text is not cut
        to ``max_length`` and a short one is not padded. ``tokenizer`` itself is not changed.
        The copy is made again when tokens are added to the tokenizer, not when its normalizer,
        pre-tokenizer or model is replaced (make a new counter then). Special tokens the
        tokenizer adds around a text (BOS, EOS) are not counted.
        """
        if not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(f"expected a tokenizers.Tokenizer, not {type(tokenizer).__name__}")

        def count(text: str) -> int:
            # The settings are read at each call: the caller may turn truncation on later.
            untruncated = _without_truncation(tokenizer)
            try:
                return len(untruncated.encode(text, add_special_tokens=False).ids)
            except TypeError:
                # A lone surrogate (output decoded with errors="surrogateescape") is refused as
                # "TextInputSequence must be str": say what is wrong, as the estimator does.
                if isinstance(text, str):
                    text.encode("utf-8")
                raise

        return cls(count, Accuracy.EXACT, name or "huggingface")

    @classmethod
    def from_tokenizer_file(cls, path: str | os.PathLike[str]) -> TokenCounter:
        """A HuggingFace ``tokenizer.json`` file (needs ``pip install ctxbudget[tokenizers]``)."""
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "exact counts from tokenizer.json need the `tokenizers` package: "
                "pip install 'ctxbudget[tokenizers]'"
            ) from exc
        name = os.fspath(path)
        if not os.path.isfile(name):
            raise FileNotFoundError(errno.ENOENT, "no tokenizer file", name)
        try:
            tokenizer = Tokenizer.from_file(name)
        except Exception as exc:  # the tokenizers library raises a bare Exception
            raise ValueError(
                f"{name}: not a tokenizer.json the tokenizers library reads: {exc}"
            ) from exc
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return cls.from_huggingface(tokenizer, name=os.fspath(path))

    @classmethod
    def from_tiktoken(cls, encoding: Any) -> TokenCounter:
        """A ``tiktoken.Encoding``: EXACT; special-token text counts as ordinary text."""
        if not callable(getattr(encoding, "encode_ordinary", None)):
            raise TypeError(f"expected a tiktoken.Encoding, not {type(encoding).__name__}")
        return cls(
            lambda text: len(encoding.encode_ordinary(text)),
            Accuracy.EXACT,
            str(getattr(encoding, "name", "tiktoken")),
        )

    @classmethod
    def from_callable(
        cls, count: Callable[[str], int], name: str = "callable", *, exact: bool = True
    ) -> TokenCounter:
        """Any ``Callable[[str], int]``; EXACT unless ``exact=False``."""
        if not callable(count):
            raise TypeError(f"expected a callable, not {type(count).__name__}")
        return cls(count, Accuracy.EXACT if exact else Accuracy.ESTIMATE, name)


def counter_for(source: object = None) -> TokenCounter:
    """The right counter for ``source``.

    ``source`` may be: ``None`` (the default estimator encoding), a :class:`TokenCounter`, an
    estimator encoding name (``"o200k"``, ...), a model name (see :func:`encoding_for_model`),
    a path to a ``tokenizer.json``, a ``tokenizers.Tokenizer``, a ``tiktoken.Encoding``, or a
    ``Callable[[str], int]``.

    >>> counter_for("claude-sonnet-4").name
    'conservative'
    >>> counter_for(len).accuracy
    <Accuracy.EXACT: 'exact'>
    """
    if source is None:
        return TokenCounter.estimator()
    if isinstance(source, TokenCounter):
        return source
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.lower().endswith(".json")
    ):
        # A tokenizer file: a missing one is an error, not an estimate in its place.
        return TokenCounter.from_tokenizer_file(os.fspath(source))
    if isinstance(source, str):
        encoding = _encoding_name(source) or encoding_for_model(source)
        return TokenCounter.estimator(encoding)
    module = type(source).__module__
    if module.startswith("tokenizers"):
        return TokenCounter.from_huggingface(source)
    if module.startswith("tiktoken"):
        return TokenCounter.from_tiktoken(source)
    if callable(source):
        return TokenCounter.from_callable(source, getattr(source, "__name__", "callable"))
    raise TypeError(f"cannot count tokens with {type(source).__name__}")


#: tiktoken's names of the encodings we estimate, which ``estimate_tokens`` takes too.
_TIKTOKEN_NAMES = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


def _encoding_name(name: str) -> str | None:
    """``name`` as one of ``ENCODINGS`` (case and surrounding spaces ignored; tiktoken's
    ``cl100k_base`` and ``o200k_base`` too), else ``None``."""
    key = name.strip().lower()
    key = _TIKTOKEN_NAMES.get(key, key)
    return key if key in ENCODINGS else None


#: Copies of HuggingFace tokenizers with truncation and padding off, by the original's id:
#: (original, its truncation and padding settings and vocabulary size, the copy); a few, the
#: newest kept.
_UNTRUNCATED: OrderedDict[int, tuple[Any, tuple[Any, ...], Any]] = OrderedDict()
_UNTRUNCATED_LOCK = threading.Lock()
_UNTRUNCATED_KEPT = 8


def _without_truncation(tokenizer: Any) -> Any:
    """``tokenizer``, or when it truncates or pads, a copy that does neither: made once per
    tokenizer and settings (copying a large vocabulary takes tens of milliseconds, and
    :func:`count_tokens` makes a counter per call)."""
    truncation, padding = (
        getattr(tokenizer, "truncation", None),
        getattr(tokenizer, "padding", None),
    )
    if not (truncation or padding):
        return tokenizer
    # Tokens added since the copy was made must be in the copy too.
    settings = (truncation, padding, tokenizer.get_vocab_size(with_added_tokens=True))
    with _UNTRUNCATED_LOCK:
        hit = _UNTRUNCATED.get(id(tokenizer))
        if hit is not None and hit[0] is tokenizer and hit[1] == settings:
            _UNTRUNCATED.move_to_end(id(tokenizer))
            return hit[2]
    untruncated = type(tokenizer).from_str(tokenizer.to_str())
    untruncated.no_truncation()
    untruncated.no_padding()
    with _UNTRUNCATED_LOCK:
        _UNTRUNCATED[id(tokenizer)] = (tokenizer, settings, untruncated)
        while len(_UNTRUNCATED) > _UNTRUNCATED_KEPT:
            _UNTRUNCATED.popitem(last=False)
    return untruncated


def count_tokens(text: str, source: object = None) -> TokenCount:
    """Count ``text`` with :func:`counter_for(source) <counter_for>`; the result says if exact.

    >>> count_tokens("Hello", len)
    TokenCount(tokens=5, accuracy=<Accuracy.EXACT: 'exact'>, encoding='len')
    """
    return counter_for(source).count(text)
