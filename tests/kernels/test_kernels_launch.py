"""The launch path and layout logic: caching, no recompiles on new shapes, collapsing."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk
from genesis_kernels.buffer import collapse
from genesis_kernels.elementwise import BINARY


def test_buffer_validates() -> None:
    b = gk.Buffer(0x1000, (2, 3), None, "float32")
    assert b.strides == (3, 1)
    with pytest.raises(TypeError):
        gk.Buffer(0, (2,), (1,), "complex64")
    with pytest.raises(ValueError):
        gk.Buffer(0, (2, 3), (1,), "float32")


def test_collapse_merges_and_reorders() -> None:
    assert collapse((4, 5, 6), [(30, 6, 1), (30, 6, 1)]) == ((120,), [(1,), (1,)])
    # Fully transposed: dims reordered by the output's strides, then merged.
    assert collapse((4, 5), [(1, 4), (1, 4)]) == ((20,), [(1,), (1,)])
    # One transposed operand: nothing merges.
    assert collapse((4, 5), [(5, 1), (1, 4)]) == ((4, 5), [(5, 1), (1, 4)])
    # Size-1 dims drop out; broadcast dims keep stride 0.
    assert collapse((1, 3, 1, 2), [(6, 2, 2, 1), (0, 0, 0, 1)]) == ((3, 2), [(2, 1), (0, 1)])


def test_new_shapes_do_not_recompile(device: str) -> None:
    for n in (17, 33, 1000):
        a = make((n,), "float32", device)
        out = torch.empty(n, device=device)
        gk.binary("add", buf(a), buf(a), buf(out), compute_dtype="float32")
    sync(device)
    keys = [k for k in BINARY.cache if k[0] == "add" and k[1] == "float32" and k[6]]
    # One specialisation per alignment class at most, whatever the sizes.
    assert len(keys) <= 2


def test_unknown_op_and_bad_shapes() -> None:
    b = gk.Buffer(0, (3,), (1,), "float32")
    with pytest.raises(ValueError):
        gk.unary("nope", b, b)
    with pytest.raises(ValueError):
        gk.binary("add", b, gk.Buffer(0, (4,), (1,), "float32"), b, compute_dtype="float32")
