"""Every public exception survives pickling with its message and attributes.

An agent loop run in worker processes (``multiprocessing``, ``concurrent.futures``, Celery,
Ray) sends a worker's exception to its parent by pickling it. The default pickling rebuilds an
exception as ``cls(*args)``; an ``__init__`` whose signature differs from ``args`` makes the
parent fail on an unpickling ``TypeError`` instead of seeing the real error.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

import ctxbudget
from ctxbudget import check_text, classify_overflow
from ctxbudget.compact import CompactionError
from ctxbudget.documents import DocumentConversionError, DocumentsExtraMissingError
from ctxbudget.errors import (
    ContextBudgetError,
    ContextOverflowError,
    ContextWindowError,
    FileTooLargeError,
    add_note,
)
from ctxbudget.messages import MessageFormatError, validate_messages
from ctxbudget.turns import PairingError


def _raised(fn: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        fn()
    return caught.value


def _overflow() -> ContextOverflowError:
    info = classify_overflow(
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your"
                " messages resulted in 202868 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    )
    assert info is not None
    return ContextOverflowError.from_info(info, model="gpt-4o")


def _pairing_error() -> PairingError:
    (violation,) = ctxbudget.validate_pairing([(0, "result", "call_1")])
    return PairingError("pruning", [violation])


EXCEPTIONS: dict[str, Any] = {
    "MessageFormatError": lambda: _raised(
        lambda: validate_messages([{"role": "user", "content": "a"}, {"role": 7, "content": "b"}])
    ),
    "MessageFormatError(tool)": lambda: MessageFormatError(
        "no name", 2, "function.name", "openai_chat", item="tool"
    ),
    "BinaryContentError": lambda: _raised(lambda: check_text(b"%PDF-1.7\n\x00\x01")),
    "ContextWindowError": lambda: ContextWindowError("gpt-4o", 128_000, 130_000, "too long"),
    "ContextOverflowError": _overflow,
    "ContextBudgetError": lambda: ContextBudgetError(
        "gpt-4o", 128_000, 140_000, "too long", input_tokens=124_000, component="conversation"
    ),
    "FileTooLargeError": lambda: FileTooLargeError("big.log", 10**9, 10**7),
    "DocumentConversionError": lambda: DocumentConversionError("a.pdf", "pdf", "encrypted"),
    "DocumentsExtraMissingError": lambda: DocumentsExtraMissingError(
        "install ctxbudget[documents]", name="pypdf"
    ),
    "CompactionError": lambda: CompactionError(
        "the summary was not smaller", reason="overflow", tokens_before=9_000, attempts=2
    ),
    "PairingError": _pairing_error,
}


def _same(a: BaseException, b: BaseException) -> None:
    assert type(a) is type(b)
    assert str(a) == str(b)
    assert a.args == b.args
    assert vars(a) == vars(b)


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_round_trip(name: str) -> None:
    error = EXCEPTIONS[name]()
    _same(pickle.loads(pickle.dumps(error)), error)
    # with a note an agent framework added on the way up (kept in the state pickled)
    add_note(error, "while sending turn 7")  # error.add_note, also on Python 3.10
    copy = pickle.loads(pickle.dumps(error))
    _same(copy, error)
    assert copy.__notes__ == ["while sending turn 7"]


def test_every_public_exception_is_covered() -> None:
    import importlib
    import inspect
    import pkgutil

    public = set()
    for module in pkgutil.iter_modules(ctxbudget.__path__):
        if module.name.startswith("_"):
            continue
        mod = importlib.import_module(f"ctxbudget.{module.name}")
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                public.add(obj.__name__)
    covered = {name.split("(")[0] for name in EXCEPTIONS}
    assert public <= covered, f"not covered: {sorted(public - covered)}"


def _fail_in_worker() -> None:
    validate_messages([{"role": "user", "content": [{"type": "image_url"}]}])


def test_error_reaches_the_parent_process() -> None:
    with ProcessPoolExecutor(1) as pool, pytest.raises(MessageFormatError) as caught:
        pool.submit(_fail_in_worker).result()
    assert caught.value.index == 0
    assert "image_url" in caught.value.field
