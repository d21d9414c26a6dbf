"""StridedView.permuted: the same elements as as_strided with the permuted shape and strides, without
re-validation (a permutation reaches exactly the elements its source reaches)."""

from __future__ import annotations

import itertools

import pytest

import genesis_storage as gs
from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator


@pytest.fixture(autouse=True)
def fake_device():
    previous = set_allocator(0, CachingAllocator(FakeRawAllocator()))
    yield
    set_allocator(0, previous)


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (1, 0, 3), ()])
def test_permuted_matches_as_strided(shape):
    base = gs.empty(shape, "float32", 0)
    source = base.as_strided(shape, base.strides, base.offset)
    for order in itertools.permutations(range(len(shape))):
        got = source.permuted(order)
        want = source.as_strided(tuple(shape[d] for d in order), tuple(source.strides[d] for d in order))
        assert (got.shape, got.strides, got.offset, got.ptr, got.numel, got.dtype) == (
            want.shape, want.strides, want.offset, want.ptr, want.numel, want.dtype,
        )  # fmt: skip
        assert got.is_contiguous() == want.is_contiguous()
        assert got.storage is source.storage


def test_permuted_keeps_an_offset_view_offset():
    base = gs.empty((10, 6), "float16", 0)
    window = base.as_strided((3, 4), (6, 1), 13)
    t = window.permuted((1, 0))
    assert (t.shape, t.strides, t.offset, t.ptr) == ((4, 3), (1, 6), 13, window.ptr)


@pytest.mark.parametrize("order", [(0,), (0, 0), (0, 2), (1, 0, 2, 3)])
def test_permuted_refuses_what_is_not_a_permutation(order):
    view = gs.empty((2, 3), "float32", 0)
    with pytest.raises(ValueError, match="not a permutation"):
        view.permuted(order)
