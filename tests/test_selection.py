from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxbudget
from ctxbudget import Selection, select_largest
from tests import reference


def test_issue_example() -> None:
    assert select_largest([5, 1, 9, 3], 10).indices == [2, 0]


def test_result_fields() -> None:
    assert select_largest([5, 1, 9, 3], 10) == Selection(indices=[2, 0], freed=14, shortfall=0)


def test_ties_go_to_the_oldest() -> None:
    assert select_largest([4, 7, 4, 7, 4], 15).indices == [1, 3, 0]


def test_protected_indices_are_never_chosen() -> None:
    selection = select_largest([5, 1, 9, 3], 10, protected=[2])
    assert 2 not in selection.indices
    assert selection.indices == [0, 3, 1]
    assert selection.shortfall == 1


def test_shortfall_when_everything_is_not_enough() -> None:
    selection = select_largest([2, 3], 100)
    assert selection.indices == [1, 0]
    assert (selection.freed, selection.shortfall) == (5, 95)


@pytest.mark.parametrize("need", [0, -5])
def test_nothing_needed_selects_nothing(need: int) -> None:
    assert select_largest([5, 1, 9], need) == Selection(indices=[], freed=0, shortfall=0)


def test_zero_sizes_are_never_chosen() -> None:
    assert select_largest([0, 0, 2], 5).indices == [2]


def test_empty_sizes() -> None:
    assert select_largest([], 3) == Selection(indices=[], freed=0, shortfall=3)


def test_numpy_sizes() -> None:
    sizes = np.array([5, 1, 9, 3], dtype=np.int64)
    assert select_largest(sizes, 10).indices == [2, 0]


def test_numpy_sizes_of_another_dtype_are_accepted() -> None:
    sizes = np.array([5, 1, 9, 3], dtype=np.int32)
    assert select_largest(sizes, 10).indices == [2, 0]


def test_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="-4"):
        select_largest([3, -4], 1)


@pytest.mark.parametrize("protected", [[7], [-1]])
def test_bad_protected_index_is_refused(protected: list[int]) -> None:
    with pytest.raises(ValueError):
        select_largest([3, 4], 1, protected=protected)


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError):
        select_largest("abc", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        select_largest([1.5, 2.0], 1)  # type: ignore[list-item]


def test_overflowing_sum_is_an_error_not_a_crash() -> None:
    with pytest.raises(ValueError):
        select_largest([2**62, 2**62, 2**62], 2**63 - 1)


def test_exported_from_the_package() -> None:
    assert ctxbudget.select_largest is select_largest


sizes_st = st.lists(st.integers(min_value=0, max_value=50), max_size=9)


@given(sizes=sizes_st, need=st.integers(min_value=-5, max_value=300), data=st.data())
def test_matches_the_reference(sizes: list[int], need: int, data: st.DataObject) -> None:
    protected = set(data.draw(st.lists(st.integers(0, max(len(sizes) - 1, 0)), max_size=3)))
    protected = {p for p in protected if p < len(sizes)}
    got = select_largest(sizes, need, protected=sorted(protected))
    assert (got.indices, got.freed, got.shortfall) == reference.select_largest(
        sizes, need, protected
    )
    assert not protected & set(got.indices)
    assert got.freed == sum(sizes[i] for i in got.indices)
    if got.shortfall == 0:
        # the fewest items that can reach `need`: no smaller subset does
        assert len(got.indices) == reference.min_items_to_reach(sizes, need, protected)


def test_a_need_past_64_bits_takes_every_allowed_item() -> None:
    # Sizes near the 64-bit limit: the core's answer for a need of the limit was one item,
    # with a shortfall though two were left.
    big = 2**63 - 1
    with pytest.raises(ValueError, match="i64::MAX"):
        select_largest([big, big, big], 2**64)
    got = select_largest([5, 9, 0, 9, 5], 2**63, protected=[1])
    assert (got.indices, got.freed, got.shortfall) == ([3, 0, 4], 19, 2**63 - 19)
    with pytest.raises(ValueError):
        select_largest([1, -1], 2**63)  # the sizes are still checked
