"""Choosing which items to shrink: the largest first, as few as possible."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxbudget import _core

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Selection", "select_largest"]


@dataclass(frozen=True, slots=True)
class Selection:
    """The result of :func:`select_largest`.

    Attributes:
        indices: Chosen indices, in the order chosen (largest first, oldest first on ties).
        freed: Sum of the chosen sizes.
        shortfall: How much of ``need`` is still missing; 0 when ``freed >= need``.
    """

    indices: list[int]
    freed: int
    shortfall: int


#: Beyond what the core's 64-bit integers hold.
_INT64 = 1 << 63


def select_largest(
    sizes: Sequence[int] | npt.NDArray[np.int64],
    need: int,
    *,
    protected: Iterable[int] = (),
) -> Selection:
    """Pick the fewest items, largest first, whose sizes add up to at least ``need``.

    Used to decide which tool outputs to replace by stubs when a request overflows: freeing
    the largest first touches the fewest messages. Ties go to the oldest (lowest index).
    Items of size 0 free nothing and are never chosen.

    Args:
        sizes: Non-negative sizes (e.g. token counts), a sequence of ints or an ``int64``
            numpy array (read without copying into Python objects).
        need: How much must be freed. ``need <= 0`` selects nothing.
        protected: Indices that must never be chosen (e.g. the fresh tail).

    Returns:
        A :class:`Selection`; its ``shortfall`` is positive when even every allowed item is
        not enough (then every allowed item of non-zero size is chosen).

    Raises:
        ValueError: A negative size, or a protected index out of range or negative.

    >>> select_largest([5, 1, 9, 3], 10).indices
    [2, 0]
    >>> select_largest([5, 1, 9, 3], 10, protected=[2])
    Selection(indices=[0, 3, 1], freed=9, shortfall=1)
    """
    protected = list(protected)
    if any(isinstance(p, int) and not -_INT64 <= p < _INT64 for p in protected):
        raise ValueError(f"a protected index is out of range for {len(sizes)} items")
    if isinstance(need, int) and need >= _INT64:
        return _select_past_int64(sizes, need, protected)
    if isinstance(need, int) and need < -_INT64:
        need = 0  # selects nothing, as any ``need <= 0`` (the sizes are still checked)
    indices, freed, shortfall = _core.select_largest(sizes, need, protected)
    return Selection(indices=indices, freed=freed, shortfall=shortfall)


def _select_past_int64(
    sizes: Sequence[int] | npt.NDArray[np.int64], need: int, protected: list[int]
) -> Selection:
    """:func:`select_largest` for a ``need`` past what the core's 64-bit integers hold: every
    allowed item, largest first (the lower index first among equal sizes), short by the rest;
    sizes that add up past the 64-bit limit are the core's error (it checks the arguments).
    (This took the core's choice for a ``need`` of the limit: one item near it, and a
    shortfall though items were left.)"""
    _core.select_largest(sizes, 0, protected)
    values = [int(size) for size in sizes]
    skip = set(protected)
    order = sorted(
        (i for i, size in enumerate(values) if size > 0 and i not in skip),
        key=lambda i: (-values[i], i),
    )
    indices: list[int] = []
    freed = 0
    for i in order:
        if freed >= need:
            break
        indices.append(i)
        freed += values[i]
        if freed >= _INT64:  # as the core says for a smaller need
            raise ValueError("the selected sizes sum to more than i64::MAX")
    return Selection(indices=indices, freed=freed, shortfall=need - freed)
