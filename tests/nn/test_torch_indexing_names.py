"""torch's indexing names (issue #30 item 5, part B 2): values and gradients against torch in float64 on both
devices (repeated indices, include_self both ways, ties and zeros for the reductions' gradients), and torch's
error classes on bad input."""

from __future__ import annotations

import pytest
import torch
from names_helpers import assert_same, check, fresh, to_genesis

import genesis


def idx(values, device=None):
    """The same int64 index in torch (device None) or genesis."""
    t = torch.tensor(values)
    return t if device is None else to_genesis(t, device)


def _i(m, values, device):
    return idx(values) if m is torch else idx(values, device)


def test_take_put(device):
    check(lambda m, x: m.take(x, _i(m, [[0, -1], [5, 2]], device)), [fresh((2, 3))], device)
    # repeated indices only when accumulating: without, torch documents the result as undefined (its cpu
    # keeps the last write, a GPU whichever write lands last)
    for accumulate, index in ((False, [1, 4, -6]), (True, [1, 4, 1])):
        check(
            lambda m, x, s, a=accumulate, i=index: m.put(x, _i(m, i, device), s, accumulate=a),
            [fresh((2, 3)), fresh((3,))],
            device,
        )


def test_index_copy_fill(device):
    check(lambda m, x, s: m.index_copy(x, 1, _i(m, [2, 0], device), s), [fresh((3, 4)), fresh((3, 2))], device)
    check(lambda m, x: m.index_fill(x, 1, _i(m, [0, 2, 0], device), -2.5), [fresh((3, 4))], device)
    check(lambda m, x, v: x.index_fill(0, _i(m, [1], device), v), [fresh((3, 4)), fresh(())], device)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(device, accumulate):
    def op(m, x, v):
        return m.index_put(x, (_i(m, [0, 2, 0], device), _i(m, [1, 1, 1], device)), v, accumulate=accumulate)

    if accumulate:
        check(op, [fresh((3, 4)), fresh((3,))], device)
    else:  # repeated positions written twice: torch keeps one unspecified value, so distinct positions here
        check(lambda m, x, v: m.index_put(x, (_i(m, [0, 2], device),), v), [fresh((3, 4)), fresh((4,))], device)
    check(
        lambda m, x, v: m.index_put(x, (_i(m, [1, 1], device),), v, accumulate=True), [fresh((3, 2)), fresh(())], device
    )


def test_masked_scatter(device):
    mask = torch.tensor([True, False, True])
    check(lambda m, x, s: m.masked_scatter(x, to(m, mask, device), s), [fresh((2, 3)), fresh((5,))], device)
    check(
        lambda m, x, s: m.masked_scatter(x, to(m, torch.ones(2, 3).bool(), device), s),
        [fresh((3,)), fresh((6,))],
        device,
    )


def to(m, t, device):
    return t if m is torch else to_genesis(t, device)


def _ties(shape):
    """Small integers as float64: amax / amin see ties, prod sees zeros."""
    return torch.randint(-2, 3, shape).double()


def _off(include_self):
    """Without self's values, self must not tie with src: torch still counts such a self value among the
    maxima sharing the gradient (its src then gets half of a gradient that is all its own)."""
    return 0.0 if include_self else 0.5


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(device, reduce, include_self):
    # src of index's shape: torch's own backward refuses a larger src
    index = torch.tensor([[0, 1, 0, 3], [2, 0, 0, 0], [0, 3, 3, 1]])
    for x, src in ((fresh((4, 5)), fresh((3, 4))), (_ties((4, 5)) + _off(include_self), _ties((3, 4)))):

        def op(m, x, s):
            return m.scatter_reduce(x, 0, to(m, index, device), s, reduce, include_self=include_self)

        check(op, [x, src], device)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(device, reduce, include_self):
    index = torch.tensor([0, 2, 0, 0])
    for x, src in ((fresh((3, 4)), fresh((3, 4))), (_ties((3, 4)) + _off(include_self), _ties((3, 4)))):

        def op(m, x, s):
            return m.index_reduce(x, 1, to(m, index, device), s, reduce, include_self=include_self)

        with _quiet():
            check(op, [x, src], device)


def _quiet():
    """Silences torch's "index_reduce() is in beta" warning."""
    import warnings

    quiet = warnings.catch_warnings()
    quiet.__enter__()
    warnings.simplefilter("ignore")
    return _Exit(quiet)


class _Exit:
    def __init__(self, quiet):
        self.quiet = quiet

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quiet.__exit__(*exc)


def test_integer_reductions(device):
    x, src = torch.tensor([-7, 2, 3]), torch.tensor([2, 2, 5])
    index = torch.tensor([0, 0, 2])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            want = x.scatter_reduce(0, index, src, reduce, include_self=include_self)
            got = to_genesis(x, device).scatter_reduce(
                0, to_genesis(index, device), to_genesis(src, device), reduce, include_self=include_self
            )
            assert_same(got, want)


def test_in_place_forms(device):
    x = fresh((3, 4))
    want = x.clone()
    got = to_genesis(x, device)
    for op in (
        lambda m, t: t.index_copy_(
            0, to(m, torch.tensor([1]), device), to(m, torch.ones(1, 4, dtype=torch.float64), device)
        ),
        lambda m, t: t.index_fill_(1, to(m, torch.tensor([3]), device), 2.0),
        lambda m, t: t.index_put_(
            (to(m, torch.tensor([0, 0]), device),), to(m, torch.ones(4, dtype=torch.float64), device), True
        ),
        lambda m, t: t.put_(to(m, torch.tensor([5]), device), to(m, torch.tensor([9.0], dtype=torch.float64), device)),
        lambda m, t: t.masked_scatter_(
            to(m, torch.tensor([True, False, False, True]), device), to(m, x.reshape(-1), device)
        ),
        lambda m, t: t.scatter_reduce_(0, to(m, torch.tensor([[2, 0, 1, 2]]), device), to(m, x[:1], device), "amax"),
        lambda m, t: t.index_reduce_(0, to(m, torch.tensor([2]), device), to(m, x[:1], device), "prod"),
    ):
        with _quiet():
            assert op(torch, want) is want
            assert op(genesis, got) is got
        assert_same(got, want)
    assert (
        genesis.index_put_(
            got, (to_genesis(torch.tensor([1]), device),), genesis.zeros(4, dtype=genesis.float64, device=device)
        )
        is got
    )


def test_in_place_gradient_through_non_leaf(device):
    x, s = fresh((3, 4)), fresh((3, 2))

    def op(m, x, s):
        y = x * 2
        y.index_copy_(1, to(m, torch.tensor([3, 0]), device), s)
        return y

    check(op, [x, s], device)


@pytest.mark.parametrize(
    "kwargs", [{}, {"return_inverse": True}, {"return_counts": True}, {"return_inverse": True, "return_counts": True}]
)
def test_unique(device, kwargs):
    x = torch.randint(0, 5, (4, 6))
    assert_same(genesis.unique(to_genesis(x, device), **kwargs), torch.unique(x, **kwargs))
    assert_same(to_genesis(x, device).unique(**kwargs), x.unique(**kwargs))
    assert_same(genesis.unique_consecutive(to_genesis(x, device), **kwargs), torch.unique_consecutive(x, **kwargs))
    rows = torch.tensor([[1, 2, 0], [1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 5, 1], [0, 4, 9]])
    for dim in (0, 1, -1):
        y = rows if dim == 0 else rows.t().contiguous()
        assert_same(genesis.unique(to_genesis(y, device), dim=dim, **kwargs), torch.unique(y, dim=dim, **kwargs))
        assert_same(
            genesis.unique_consecutive(to_genesis(y, device), dim=dim, **kwargs),
            torch.unique_consecutive(y, dim=dim, **kwargs),
        )
    f = fresh((7,)).repeat(2)
    assert_same(genesis.unique(to_genesis(f, device), **kwargs), torch.unique(f, **kwargs))


def test_isin_unravel_nonzero_triangles(device):
    a, b = torch.randint(0, 8, (3, 5)), torch.randint(0, 8, (4,))
    ga, gb = to_genesis(a, device), to_genesis(b, device)
    for invert in (False, True):
        assert_same(genesis.isin(ga, gb, invert=invert), torch.isin(a, b, invert=invert))
    assert_same(genesis.isin(ga, 3), torch.isin(a, 3))
    assert_same(genesis.isin(3, gb), torch.isin(3, b))
    assert_same(genesis.isin(ga, gb.double()), torch.isin(a, b.double()))
    flat = torch.tensor([7, -1, 0, 13, 5])
    assert_same(genesis.unravel_index(to_genesis(flat, device), (2, 4)), torch.unravel_index(flat, (2, 4)))
    assert_same(
        genesis.unravel_index(to_genesis(torch.tensor(3), device), (2, 4)), torch.unravel_index(torch.tensor(3), (2, 4))
    )
    z = torch.tensor([[0, 1, 2], [3, 0, 0]])
    assert_same(genesis.argwhere(to_genesis(z, device)), torch.argwhere(z))
    assert_same(to_genesis(z, device).argwhere(), z.argwhere())
    for size, fill in ((5, -1), (2, 9), (0, -1)):
        got = genesis.nonzero_static(to_genesis(z, device), size=size, fill_value=fill)
        assert_same(got, torch.nonzero_static(z, size=size, fill_value=fill))
    for args in ((3, 4, 1), (4, 3, -1), (0, 4), (5, 5, 10), (3, 3, -5)):
        assert_same(genesis.tril_indices(*args, device=device), torch.tril_indices(*args))
        assert_same(genesis.triu_indices(*args, device=device), torch.triu_indices(*args))
    assert_same(
        genesis.tril_indices(3, 3, dtype=genesis.int32, device=device), torch.tril_indices(3, 3, dtype=torch.int32)
    )


def _raises(op, cls, match, device):
    x = fresh((2, 3))
    with pytest.raises(cls, match=match):
        op(torch, x, None)
    with pytest.raises(cls, match=match):
        op(genesis, to_genesis(x, device), device)


def _t(m, values, device, dtype=None):
    t = torch.tensor(values, dtype=dtype)
    return t if m is torch else to_genesis(t, device)


ERRORS = {
    "take_bounds": (
        lambda m, x, d: m.take(x, _t(m, [7], d)),
        IndexError,
        "out of range: tried to access index 7 on a tensor of 6",
    ),
    "take_dtype": (
        lambda m, x, d: m.take(x, _t(m, [1.0], d)),
        RuntimeError,
        "Expected a long tensor for index, but got Float",
    ),
    "put_count": (
        lambda m, x, d: x.put(_t(m, [1, 2], d), _t(m, [1.0], d, torch.float64)),
        IndexError,
        "same number of elements",
    ),
    "put_dtype": (
        lambda m, x, d: x.put(_t(m, [1], d), _t(m, [1.0], d)),
        RuntimeError,
        "expected to have the same dtype",
    ),
    "put_bounds": (lambda m, x, d: x.put(_t(m, [6], d), _t(m, [1.0], d, torch.float64)), IndexError, "out of range"),
    "index_copy_shape": (
        lambda m, x, d: x.index_copy(0, _t(m, [0], d), x[:1, :2]),
        RuntimeError,
        "must have same slice shapes",
    ),
    "index_copy_dtype": (
        lambda m, x, d: x.index_copy(0, _t(m, [0], d), x[:1].float()),
        RuntimeError,
        "expected to have the same dtype",
    ),
    "index_copy_bounds": (
        lambda m, x, d: x.index_copy(0, _t(m, [2], d), x[:1]),
        IndexError,
        "index 2 is out of bounds for dimension 0 with size 2",
    ),
    "index_fill_bounds": (
        lambda m, x, d: x.index_fill(1, _t(m, [0, 3], d), 5),
        IndexError,
        "index 3 is out of bounds for dimension 1 with size 3",
    ),
    "index_fill_value": (
        lambda m, x, d: x.index_fill(1, _t(m, [0], d), x[0, :2]),
        RuntimeError,
        "only supports a 0-dimensional value tensor",
    ),
    "index_fill_2d_index": (
        lambda m, x, d: x.index_fill(1, _t(m, [[0]], d), 5),
        RuntimeError,
        "Index has to be a vector/scalar",
    ),
    "index_put_dtype": (
        lambda m, x, d: x.index_put((_t(m, [0], d),), _t(m, 1.0, d)),
        RuntimeError,
        "Index put requires the source and destination dtypes match",
    ),
    "index_reduce_name": (
        lambda m, x, d: x.index_reduce(0, _t(m, [0, 0], d), x, "sum"),
        RuntimeError,
        "Expected reduce to be one of prod, mean, amax or amin",
    ),
    "index_reduce_shape": (
        lambda m, x, d: x.index_reduce(0, _t(m, [0, 0], d), x[:, :2], "prod"),
        RuntimeError,
        "source tensor shape must match self tensor shape",
    ),
    "index_reduce_count": (
        lambda m, x, d: x.index_reduce(0, _t(m, [0, 0, 1], d), x, "prod"),
        RuntimeError,
        r"Number of indices \(3\) should be equal to source.size\(dim\)",
    ),
    "index_reduce_dtype": (
        lambda m, x, d: x.index_reduce(0, _t(m, [0, 0], d), x.float(), "prod"),
        RuntimeError,
        "must have the same scalar type",
    ),
    "scatter_reduce_dtype": (
        lambda m, x, d: x.scatter_reduce(0, _t(m, [[0, 0]], d), x.float(), "sum"),
        RuntimeError,
        "Expected self.dtype to be equal to src.dtype",
    ),
    "scatter_reduce_bounds": (
        lambda m, x, d: x.scatter_reduce(0, _t(m, [[0, 5]], d), x, "sum"),
        RuntimeError,
        "index 5 is out of bounds for dimension 0 with size 2",
    ),
    "scatter_reduce_size": (
        lambda m, x, d: x.scatter_reduce(0, _t(m, [[0, 0, 0, 0]], d), x, "sum"),
        RuntimeError,
        "to be no larger than self",
    ),
    "scatter_reduce_ndim": (
        lambda m, x, d: x.scatter_reduce(0, _t(m, [0, 0], d), x, "sum"),
        RuntimeError,
        "Index tensor must have the same number of dimensions",
    ),
    "masked_scatter_count": (
        lambda m, x, d: x.masked_scatter(_t(m, [True, False, True], d), x[0]),
        RuntimeError,
        "Number of elements of source < number of ones in mask",
    ),
    "masked_scatter_mask_dtype": (
        lambda m, x, d: x.masked_scatter(_t(m, [1, 0, 1], d, torch.uint8), x),
        RuntimeError,
        "only supports boolean masks",
    ),
    "masked_scatter_dtype": (
        lambda m, x, d: x.masked_scatter(_t(m, [True, False, True], d), x.float()),
        RuntimeError,
        "expected self and source to have same dtypes",
    ),
    "unravel_dtype": (lambda m, x, d: m.unravel_index(x, (2, 3)), TypeError, "expected 'indices' to be integer dtype"),
    "unravel_shape": (
        lambda m, x, d: m.unravel_index(_t(m, [3], d), (-2, 4)),
        ValueError,
        "'shape' cannot have negative values",
    ),
    "nonzero_static_size": (
        lambda m, x, d: m.nonzero_static(x, size=-1),
        RuntimeError,
        "'size' must be an non-negative integer",
    ),
    "tril_indices_col": (lambda m, x, d: m.tril_indices(3, -1), RuntimeError, "col must be non-negative"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name, device):
    op, cls, match = ERRORS[name]
    with _quiet():
        _raises(op, cls, match, device)
