"""Checks of numeric settings, made when an object is built: a setting that is not a number
(``None`` where one is needed, ``"10"``), not finite, or out of its range fails there, by
name, rather than later with an unrelated message (``'>' not supported between int and
str``) or never (a negative margin lowering every estimate below zero).
"""

from __future__ import annotations

import math
import numbers

__all__ = ["check_count", "check_real"]


def check_count(name: str, value: object, *, minimum: int = 0) -> None:
    """Refuse ``value`` unless it is an integer (any integer type, not a bool) of at least
    ``minimum``.

    Raises:
        TypeError: Not an integer.
        ValueError: Below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def check_real(name: str, value: object, *, minimum: float = 0.0, above: bool = False) -> None:
    """Refuse ``value`` unless it is a finite real number (not a bool) of at least
    ``minimum`` (above it, with ``above``).

    Raises:
        TypeError: Not a real number.
        ValueError: Not finite, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < minimum or (above and value == minimum):
        raise ValueError(
            f"{name} must be {'above' if above else 'at least'} {minimum}, got {value}"
        )
