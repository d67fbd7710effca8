"""Checks of numeric settings, made when an object is built: a setting that is not a number
(``None`` where one is needed, ``"10"``), not finite, or out of its range fails there, by
name, rather than later with an unrelated message (``'>' not supported between int and
str``) or never (a negative margin lowering every estimate below zero).
"""

from __future__ import annotations

import decimal
import math
import numbers

__all__ = ["check_count", "check_real"]


def check_count(name: str, value: object, *, minimum: int = 0) -> None:
    """Refuse ``value`` unless it is a whole number (any integer type, or a float or
    ``Decimal`` without a fraction: ``2e4``; not a bool) of at least ``minimum``.

    Raises:
        TypeError: Not a whole number.
        ValueError: Below ``minimum``.
    """
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, float | decimal.Decimal) and math.isfinite(value) and value % 1 == 0
    )
    if isinstance(value, bool) or not whole:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:  # type: ignore[operator]
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def check_real(name: str, value: object, *, minimum: float = 0.0, above: bool = False) -> None:
    """Refuse ``value`` unless it is a finite real number (not a bool) of at least
    ``minimum`` (above it, with ``above``).

    Raises:
        TypeError: Not a real number.
        ValueError: Not finite, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real | decimal.Decimal):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < minimum or (above and value == minimum):
        raise ValueError(
            f"{name} must be {'above' if above else 'at least'} {minimum}, got {value}"
        )
