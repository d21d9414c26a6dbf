"""torch's shape / joining / splitting names (issue #30 item 5, part B 1): values and gradients against torch
in float64 on both devices, and torch's error classes on bad input."""

from __future__ import annotations

import pytest
import torch
from names_helpers import assert_same, check, fresh, to_genesis

import genesis


def _as_strided_write(x, s):
    out = x.clone()
    out.as_strided((2, 2), (1, 3), 1).copy_(s)
    return out


# name -> (op(lib, *inputs), input shapes)
CASES = {
    "select": (lambda m, x: m.select(x, 1, -2), [(3, 4, 2)]),
    "select_method": (lambda m, x: x.select(0, 2), [(3, 4)]),
    "select_scatter": (lambda m, x, s: m.select_scatter(x, s, 1, 2), [(3, 4), (3,)]),
    "slice_scatter": (lambda m, x, s: m.slice_scatter(x, s, 1, 0, 4, 2), [(3, 5), (3, 2)]),
    "slice_scatter_default": (lambda m, x, s: m.slice_scatter(x, s), [(3, 5), (3, 5)]),
    "diagonal_scatter": (lambda m, x, s: m.diagonal_scatter(x, s, 1), [(3, 4), (3,)]),
    "diagonal_scatter_dims": (lambda m, x, s: m.diagonal_scatter(x, s, -1, 0, 2), [(3, 2, 4), (2, 2)]),
    # torch 2.13's own gradient of as_strided_scatter's input is wrong (it is nonzero on the overwritten
    # region, zero elsewhere): torch's side is the same write spelled as a clone and a copy into its view.
    "as_strided_scatter": (
        lambda m, x, s: m.as_strided_scatter(x, s, (2, 2), (1, 3), 1) if m is genesis else _as_strided_write(x, s),
        [(3, 4), (2, 2)],
    ),
    "as_strided": (lambda m, x: m.as_strided(x, (2, 3), (1, 2), 1), [(3, 4)]),
    "tensor_split_sections": (lambda m, x: m.tensor_split(x, 3, 1), [(2, 7)]),
    "tensor_split_indices": (lambda m, x: m.tensor_split(x, [1, -1, 10]), [(7, 2)]),
    "hsplit": (lambda m, x: m.hsplit(x, 3), [(2, 6)]),
    "hsplit_1d": (lambda m, x: m.hsplit(x, [2, 3]), [(6,)]),
    "vsplit": (lambda m, x: m.vsplit(x, [1]), [(4, 2)]),
    "dsplit": (lambda m, x: m.dsplit(x, 2), [(2, 3, 4)]),
    "split_with_sizes": (lambda m, x: m.split_with_sizes(x, [1, 3], 1), [(2, 4)]),
    "unsafe_split": (lambda m, x: m.unsafe_split(x, 2), [(5, 2)]),
    "unsafe_split_with_sizes": (lambda m, x: m.unsafe_split_with_sizes(x, [2, 3]), [(5,)]),
    "unsafe_chunk": (lambda m, x: m.unsafe_chunk(x, 3, -1), [(2, 7)]),
    "unbind": (lambda m, x: m.unbind(x, 1), [(2, 3, 2)]),
    "diag_vector": (lambda m, x: m.diag(x, -2), [(3,)]),
    "diag_matrix": (lambda m, x: m.diag(x, 1), [(3, 4)]),
    "diag_embed": (lambda m, x: m.diag_embed(x, 1, 0, 2), [(2, 3)]),
    "diag_embed_default": (lambda m, x: m.diag_embed(x), [(2, 3)]),
    "diagflat": (lambda m, x: m.diagflat(x, -1), [(2, 2)]),
    "fliplr": (lambda m, x: m.fliplr(x), [(3, 4, 2)]),
    "flipud": (lambda m, x: m.flipud(x), [(3, 4)]),
    "rot90": (lambda m, x: m.rot90(x), [(2, 3)]),
    "rot90_k2": (lambda m, x: m.rot90(x, 2, [1, 2]), [(2, 3, 4)]),
    "rot90_k-1": (lambda m, x: m.rot90(x, -1, [2, 0]), [(2, 3, 4)]),
    "msort": (lambda m, x: m.msort(x), [(5, 3)]),
    "ravel": (lambda m, x: m.ravel(x.t()), [(3, 4)]),
    "moveaxis": (lambda m, x: m.moveaxis(x, [0, 1], [2, 0]), [(2, 3, 4)]),
    "repeat_interleave_int": (lambda m, x: m.repeat_interleave(x, 3, 1), [(2, 3)]),
    "repeat_interleave_flat": (lambda m, x: m.repeat_interleave(x, 2), [(2, 3)]),
    "atleast_1d": (lambda m, x, y: m.atleast_1d(x, y), [(), (2, 3)]),
    "atleast_2d": (lambda m, x, y: m.atleast_2d([x, y]), [(), (3,)]),
    "atleast_3d": (lambda m, x, y, z: m.atleast_3d(x, y, z), [(), (3,), (2, 3)]),
    "atleast_3d_one": (lambda m, x: m.atleast_3d(x), [(2, 3)]),
    "hstack": (lambda m, x, y: m.hstack([x, y]), [(2, 1), (2, 3)]),
    "hstack_1d": (lambda m, x, y: m.hstack([x, y]), [(), (3,)]),
    "vstack": (lambda m, x, y: m.vstack([x, y]), [(3,), (2, 3)]),
    "row_stack": (lambda m, x, y: m.row_stack((x, y)), [(3,), (3,)]),
    "dstack": (lambda m, x, y: m.dstack([x, y]), [(3,), (1, 3)]),
    "column_stack": (lambda m, x, y, z: m.column_stack([x, y, z]), [(3,), (3, 2), (3,)]),
    "concat": (lambda m, x, y: m.concat([x, y], 1), [(2, 1), (2, 3)]),
    "concatenate": (lambda m, x, y: m.concatenate([x, y], axis=-1), [(2, 1), (2, 3)]),
    "block_diag": (lambda m, x, y, z: m.block_diag(x, y, z), [(2, 3), (), (2,)]),
    "broadcast_tensors": (lambda m, x, y: m.broadcast_tensors(x, y), [(2, 1), (3,)]),
    "meshgrid_ij": (lambda m, x, y, z: m.meshgrid(x, y, z, indexing="ij"), [(2,), (3,), ()]),
    "meshgrid_xy": (lambda m, x, y, z: m.meshgrid([x, y, z], indexing="xy"), [(2,), (3,), (4,)]),
    "cartesian_prod": (lambda m, x, y: m.cartesian_prod(x, y), [(2,), (3,)]),
    "cartesian_prod_one": (lambda m, x: m.cartesian_prod(x), [(3,)]),
    "combinations": (lambda m, x: m.combinations(x), [(4,)]),
    "combinations_r3_replacement": (lambda m, x: m.combinations(x, 3, with_replacement=True), [(3,)]),
    "combinations_too_long": (lambda m, x: m.combinations(x, 5), [(4,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name, device):
    op, shapes = CASES[name]
    check(op, [fresh(s) for s in shapes], device)


def test_repeat_interleave_tensor_repeats_and_output_size(device):
    x = fresh((3, 2))
    for repeats in ([2, 0, 3], [1]):
        r = torch.tensor(repeats)
        check(lambda m, x, r=r: m.repeat_interleave(x, to(m, r, device), dim=0), [x], device)
    r = torch.tensor([1, 2, 0])
    check(lambda m, x: x.repeat_interleave(to(m, r, device), 0, output_size=3), [x], device)
    got = genesis.repeat_interleave(genesis.tensor([2, 0, 1], device=device))
    assert_same(got, torch.repeat_interleave(torch.tensor([2, 0, 1])))
    assert genesis.repeat_interleave(genesis.tensor([], dtype=genesis.int64, device=device)).shape == (0,)


def test_tensor_split_tensor_indices(device):
    x = fresh((7,))
    for arg in (torch.tensor([1, 5]), torch.tensor(3)):
        check(lambda m, x, arg=arg: m.tensor_split(x, arg if m is torch else to_genesis(arg, "cpu")), [x], device)


def to(m, t, device):
    return t if m is torch else to_genesis(t, device)


def test_integer_and_mixed_dtypes(device):
    a, b = torch.randint(-5, 5, (2, 2)), torch.randint(-5, 5, (3,)).to(torch.int32)
    ga, gb = to_genesis(a, device), to_genesis(b, device)
    assert_same(genesis.block_diag(ga, gb), torch.block_diag(a, b))
    assert_same(genesis.hstack([ga.reshape(-1), gb]), torch.hstack([a.reshape(-1), b]))
    assert_same(genesis.diag(gb), torch.diag(b))
    assert_same(genesis.rot90(ga, 3), torch.rot90(a, 3))


def test_broadcast_shapes():
    assert genesis.broadcast_shapes((2, 1), (3,), 1, ()) == torch.broadcast_shapes((2, 1), (3,), 1, ())
    assert isinstance(genesis.broadcast_shapes((2, 3)), genesis.Size)
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4"):
        genesis.broadcast_shapes((2, 3), (4, 3))


def test_meshgrid_warns_without_indexing(device):
    x = genesis.arange(3, device=device)
    with pytest.warns(UserWarning, match="indexing argument"):
        grids = genesis.meshgrid(x, x)
    assert grids[0].shape == (3, 3)


def test_views_share_memory(device):
    x = genesis.zeros(3, 4, device=device)
    x.select(1, 2).fill_(1.0)
    x.unbind(0)[1].fill_(2.0)
    x.tensor_split(2, 1)[0][0].fill_(3.0)
    want = torch.zeros(3, 4)
    want[:, 2] = 1.0
    want[1] = 2.0
    want[0, :2] = 3.0
    assert_same(x, want)


def _raises(fn_g, fn_t, cls, match):
    with pytest.raises(cls, match=match):
        fn_t()
    with pytest.raises(cls, match=match):
        fn_g()


ERRORS = {
    "select_index": (
        lambda m, x: m.select(x, 0, 5),
        IndexError,
        r"select\(\): index 5 out of range for tensor of size \[3, 4\]",
    ),
    "select_dim": (lambda m, x: x.select(2, 0), IndexError, "Dimension out of range"),
    "select_scatter_shape": (
        lambda m, x: m.select_scatter(x, x[0, :3], 0, 0),
        RuntimeError,
        r"src size = \[3\], slice size = \[4\]",
    ),
    "slice_scatter_shape": (
        lambda m, x: m.slice_scatter(x, x[:, :3], 0),
        RuntimeError,
        "expected src to have a size equal",
    ),
    "diagonal_scatter_shape": (
        lambda m, x: m.diagonal_scatter(x, x[0]),
        RuntimeError,
        "expected src to have a size equal",
    ),
    "diag_3d": (lambda m, x: m.diag(x.reshape(3, 2, 2)), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
    "hsplit_divisible": (lambda m, x: m.hsplit(x, 3), RuntimeError, "not divisible by the split_size 3"),
    "vsplit_1d": (lambda m, x: m.vsplit(x[0], 2), RuntimeError, "requires a tensor with at least 2 dimension"),
    "dsplit_2d": (lambda m, x: m.dsplit(x, 2), RuntimeError, "requires a tensor with at least 3 dimension"),
    "tensor_split_zero": (lambda m, x: m.tensor_split(x, 0), RuntimeError, "number of sections must be larger than 0"),
    "split_with_sizes": (lambda m, x: x.split_with_sizes([1, 1]), RuntimeError, "split_with_sizes expects split_sizes"),
    "fliplr_1d": (lambda m, x: m.fliplr(x[0]), RuntimeError, r"Input must be >= 2-d."),
    "flipud_0d": (lambda m, x: m.flipud(x[0, 0]), RuntimeError, r"Input must be >= 1-d."),
    "rot90_dims": (lambda m, x: m.rot90(x, 1, [0, 0]), RuntimeError, "expected rotation dims to be different"),
    "rot90_count": (lambda m, x: m.rot90(x, 1, [0, 1, 2]), RuntimeError, "expected total rotation dims == 2"),
    "rot90_1d": (lambda m, x: m.rot90(x[0]), RuntimeError, "expected total dims >= 2"),
    "repeat_negative": (lambda m, x: m.repeat_interleave(x, -1), RuntimeError, "Repeats must be non-negative"),
    "diag_embed_same_dims": (
        lambda m, x: m.diag_embed(x, 0, 0, 0),
        RuntimeError,
        "diagonal dimensions cannot be identical",
    ),
    "block_diag_3d": (lambda m, x: m.block_diag(x.reshape(3, 2, 2)), RuntimeError, "Input 0 has 3 dimensions"),
    "meshgrid_indexing": (
        lambda m, x: m.meshgrid(x[0], indexing="foo"),
        RuntimeError,
        'indexing must be one of "xy" or "ij"',
    ),
    "meshgrid_2d": (lambda m, x: m.meshgrid(x, indexing="ij"), RuntimeError, "Expected 0D or 1D tensor"),
    "combinations_2d": (lambda m, x: m.combinations(x), RuntimeError, r"Expect a 1D vector, but got shape \[3, 4\]"),
    "combinations_negative": (lambda m, x: m.combinations(x[0], -1), RuntimeError, "Expect a non-negative number"),
    "broadcast_tensors": (lambda m, x: m.broadcast_tensors(x, x[:2]), RuntimeError, "must match the size of tensor b"),
    "hstack_empty": (lambda m, x: m.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name, device):
    op, cls, match = ERRORS[name]
    x = fresh((3, 4))
    _raises(lambda: op(genesis, to_genesis(x, device)), lambda: op(torch, x), cls, match)


def test_repeat_interleave_tensor_errors(device):
    x, gx = torch.tensor([1, 2, 3]), genesis.tensor([1, 2, 3], device=device)
    r, gr = torch.tensor([1, 2]), genesis.tensor([1, 2], device=device)
    _raises(
        lambda: genesis.repeat_interleave(gx, gr),
        lambda: torch.repeat_interleave(x, r),
        RuntimeError,
        r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2",
    )
    r, gr = torch.tensor([1, -1, 1]), genesis.tensor([1, -1, 1], device=device)
    _raises(
        lambda: genesis.repeat_interleave(gx, gr),
        lambda: torch.repeat_interleave(x, r),
        RuntimeError,
        "repeats can not be negative",
    )
    r, gr = torch.tensor([1, 2, 0]), genesis.tensor([1, 2, 0], device=device)
    _raises(
        lambda: genesis.repeat_interleave(gx, gr, output_size=2),
        lambda: torch.repeat_interleave(x, r, output_size=2),
        RuntimeError,
        "allocated size does not match",
    )
