"""gather / scatter / scatter_add / index_select / index_add / masked_fill / masked_select / nonzero /
take_along_dim / embedding on NDArray against torch, on every device: layouts (contiguous, transposed,
sliced), negative dims, 0-d and zero-size arrays, repeated indices, and torch's errors."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, raises_like, random_tensor, to_torch

import genesis_ndarray as nd
from device_support import HAS_CUDA, requires_cuda

LAYOUTS = ("contiguous", "transposed", "sliced")


def _array(t: torch.Tensor, device, layout: str = "contiguous") -> nd.NDArray:
    """An NDArray holding t's values, contiguous or as a non-contiguous view (t at least 2-d for those)."""
    if layout == "contiguous":
        return from_torch(t, device)
    if layout == "transposed":
        return from_torch(t.transpose(0, -1).contiguous(), device).transpose(0, -1)
    wide = torch.stack([t, random_tensor(t.shape, t.dtype)], dim=-1)  # every other element along the last dim
    return from_torch(wide.reshape(*t.shape[:-1], 2 * t.shape[-1]), device)[..., ::2]


def _index(shape, high, dtype=torch.int64) -> torch.Tensor:
    """Random indices in [0, high) (repeats likely)."""
    return torch.randint(0, high, shape, dtype=dtype)


def _unique_index(shape, dim, size) -> torch.Tensor:
    """Indices in [0, size) with no repeat along ``dim`` (shape[dim] <= size): scatter is then deterministic."""
    keys = torch.rand(*shape[:dim], size, *shape[dim + 1 :])
    return keys.argsort(dim=dim).narrow(dim, 0, shape[dim])


def _small_ints(shape, dtype) -> torch.Tensor:
    """Nonzero integers in [-8, 8] as ``dtype`` (exact in every float type)."""
    t = torch.randint(1, 9, shape) * (torch.randint(0, 2, shape) * 2 - 1)
    return t.to(dtype)


# ------------------------------------------------------------------ gather
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(device, layout, dim):
    t = random_tensor((4, 5, 6))
    shape = [3, 4, 5]
    shape[dim] = 7  # longer than the source along dim: repeats
    index = _index(tuple(shape), t.shape[dim])
    got = _array(t, device, layout).gather(dim, from_torch(index, device))
    assert_same(got, torch.gather(t, dim, index))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.uint8, torch.bool])
def test_gather_dtypes_and_int32_index(device, dtype):
    t = random_tensor((6, 5), dtype)
    index = _index((6, 8), 5, torch.int32)
    assert_same(from_torch(t, device).gather(1, from_torch(index, device)), torch.gather(t, 1, index))


def test_gather_zero_d_and_zero_size(device):
    s = random_tensor(())
    idx = torch.tensor([0, 0, 0])
    assert_same(from_torch(s, device).gather(0, from_torch(idx, device)), s.gather(0, idx))
    assert_same(from_torch(s, device).gather(-1, from_torch(torch.tensor(0), device)), s.gather(-1, torch.tensor(0)))
    t = random_tensor((3, 4))
    empty = torch.zeros(3, 0, dtype=torch.int64)
    assert_same(from_torch(t, device).gather(1, from_torch(empty, device)), t.gather(1, empty))
    z = random_tensor((0, 4))
    assert_same(
        from_torch(z, device).gather(1, from_torch(torch.zeros(0, 2, dtype=torch.int64), device)),
        z.gather(1, torch.zeros(0, 2, dtype=torch.int64)),
    )


# ------------------------------------------------------------------ scatter
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_tensor_and_scalar(device, layout, dim):
    t = random_tensor((4, 5, 6))
    shape = [3, 4, 5]
    shape[dim] = 3
    index = _unique_index(tuple(shape), dim % 3, t.shape[dim])
    src = random_tensor((4, 5, 6))  # larger than index: only its leading block is read
    x = _array(t, device, layout)
    assert_same(x.scatter(dim, from_torch(index, device), _array(src, device, layout)), t.scatter(dim, index, src))
    assert_same(x.scatter(dim, from_torch(index, device), -2.5), t.scatter(dim, index, -2.5))
    assert_same(x, t)  # out of place: x unchanged
    x.scatter_(dim, from_torch(index, device), _array(src, device, layout))  # in place through a view
    assert_same(x, t.scatter(dim, index, src))


def test_scatter_scalar_casts_like_torch(device):
    ints = random_tensor((3, 4), torch.int64)
    bools = random_tensor((3, 4), torch.bool)
    index = _unique_index((3, 2), 1, 4)
    for t, value in ((ints, -1.7), (ints, 2.9), (bools, 0.5), (bools, 0)):
        assert_same(from_torch(t, device).scatter(1, from_torch(index, device), value), t.scatter(1, index, value))


def test_scatter_zero_d(device):
    s = random_tensor(())
    got = from_torch(s, device).scatter(0, from_torch(torch.tensor(0), device), from_torch(torch.tensor(4.0), device))
    assert_same(got, s.scatter(0, torch.tensor(0), torch.tensor(4.0)))


# ------------------------------------------------------------------ scatter_add
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16])
def test_scatter_add_repeated_indices_accumulate(device, layout, dim, dtype):
    # float16 values are small integers: sums are exact whatever the order of the atomic adds
    t = _small_ints((4, 6), dtype) if dtype == torch.float16 else random_tensor((4, 6), dtype)
    index = (
        torch.tensor([[0, 1, 1, 3, 3, 3], [3, 3, 0, 0, 2, 2]]).t()
        if dim == 0
        else torch.tensor([[0, 0, 5, 5, 5], [1, 1, 1, 1, 1], [2, 4, 2, 4, 2], [5, 5, 0, 0, 3]])
    )
    src = _small_ints(index.shape, dtype) if dtype == torch.float16 else random_tensor(index.shape, dtype)
    x = _array(t, device, layout)
    expected = t.scatter_add(dim, index, src)
    assert_same(x.scatter_add(dim, from_torch(index, device), from_torch(src, device)), expected)
    x.scatter_add_(dim, from_torch(index, device), from_torch(src, device))
    assert_same(x, expected)


def test_scatter_add_bool(device):
    t = torch.tensor([False, False, True, False])
    index, src = torch.tensor([0, 0, 1, 3]), torch.tensor([True, True, False, False])
    got = from_torch(t, device).scatter_add(0, from_torch(index, device), from_torch(src, device))
    assert_same(got, t.scatter_add(0, index, src))


# ------------------------------------------------------------------ index_select
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -2])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select(device, layout, dim, index_dtype):
    t = random_tensor((4, 5, 6))
    index = torch.tensor([3, 0, 3, 1, 1, 2], dtype=index_dtype)
    got = _array(t, device, layout).index_select(dim, from_torch(index, device))
    assert_same(got, t.index_select(dim, index))


def test_index_select_zero_d_and_empty(device):
    t = random_tensor((4, 5))
    zero_d = torch.tensor(3)
    assert_same(from_torch(t, device).index_select(1, from_torch(zero_d, device)), t.index_select(1, zero_d))
    empty = torch.tensor([], dtype=torch.int64)
    assert_same(from_torch(t, device).index_select(0, from_torch(empty, device)), t.index_select(0, empty))
    s = random_tensor(())
    for idx in (torch.tensor(0), torch.tensor([0])):
        assert_same(from_torch(s, device).index_select(0, from_torch(idx, device)), s.index_select(0, idx))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int16, torch.bool])
def test_index_select_dtypes(device, dtype):
    t = random_tensor((5, 3), dtype)
    index = torch.tensor([4, 4, 0])
    assert_same(from_torch(t, device).index_select(0, from_torch(index, device)), t.index_select(0, index))


# ------------------------------------------------------------------ index_add
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("alpha", [1, 2.5])
def test_index_add_repeated_indices_accumulate(device, layout, dim, alpha):
    t = random_tensor((4, 5, 6))
    index = torch.tensor([3, 0, 3, 3, 1])
    src_shape = list(t.shape)
    src_shape[dim] = len(index)
    src = random_tensor(tuple(src_shape))
    x = _array(t, device, layout)
    expected = t.index_add(dim, index, src, alpha=alpha)
    assert_same(x.index_add(dim, from_torch(index, device), _array(src, device, layout), alpha), expected)
    assert_same(x, t)
    x.index_add_(dim, from_torch(index, device), from_torch(src, device), alpha)
    assert_same(x, expected)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16, torch.bfloat16, torch.int8, torch.bool])
def test_index_add_dtypes(device, dtype):
    # 16-bit floats hold small integers: sums are exact, whichever order and width they are added in
    make = _small_ints if dtype in (torch.float16, torch.bfloat16) else random_tensor
    t, src = make((5, 3), dtype), make((4, 3), dtype)
    index = torch.tensor([4, 1, 4, 4], dtype=torch.int32)
    got = from_torch(t, device).index_add(0, from_torch(index, device), from_torch(src, device))
    assert_same(got, t.index_add(0, index, src))


def test_index_add_zero_d(device):
    s, v = random_tensor(()), random_tensor(())
    got = from_torch(s, device).index_add(0, from_torch(torch.tensor([0]), device), from_torch(v, device))
    assert_same(got, s.index_add(0, torch.tensor([0]), v))


# ------------------------------------------------------------------ masked_fill / masked_select
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_fill(device, layout):
    t = random_tensor((4, 6))
    mask = random_tensor((4, 6), torch.bool)
    x = _array(t, device, layout)
    assert_same(x.masked_fill(from_torch(mask, device), 3.5), t.masked_fill(mask, 3.5))
    value = torch.tensor(-2.0, dtype=torch.float64)  # a 0-d value of another dtype
    assert_same(x.masked_fill(from_torch(mask, device), from_torch(value, device)), t.masked_fill(mask, value))
    assert_same(x, t)
    row = random_tensor((6,), torch.bool)  # broadcast over rows
    x.masked_fill_(from_torch(row, device), -1.0)
    assert_same(x, t.masked_fill(row, -1.0))


def test_masked_fill_broadcasts_self_out_of_place(device):
    t = random_tensor((6,))
    mask = random_tensor((3, 6), torch.bool)
    assert_same(from_torch(t, device).masked_fill(from_torch(mask, device), 1.0), t.masked_fill(mask, 1.0))


@pytest.mark.parametrize(
    "dtype, value",
    [(torch.int64, 1.7), (torch.int64, -1.7), (torch.bool, 0.5), (torch.uint8, True), (torch.float16, 2)],
)
def test_masked_fill_value_casts_like_torch(device, dtype, value):
    t = random_tensor((3, 4), dtype)
    mask = random_tensor((3, 4), torch.bool)
    assert_same(from_torch(t, device).masked_fill(from_torch(mask, device), value), t.masked_fill(mask, value))


def test_masked_fill_zero_d_and_empty(device):
    s, m = random_tensor(()), torch.tensor(True)
    assert_same(from_torch(s, device).masked_fill(from_torch(m, device), 7.0), s.masked_fill(m, 7.0))
    e = random_tensor((0, 3))
    me = torch.zeros(0, 3, dtype=torch.bool)
    assert_same(from_torch(e, device).masked_fill(from_torch(me, device), 7.0), e.masked_fill(me, 7.0))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_select(device, layout):
    t = random_tensor((5, 4))
    mask = random_tensor((5, 4), torch.bool)
    assert_same(_array(t, device, layout).masked_select(from_torch(mask, device)), t.masked_select(mask))
    row = random_tensor((4,), torch.bool)  # broadcast
    assert_same(_array(t, device, layout).masked_select(from_torch(row, device)), t.masked_select(row))
    small = random_tensor((4,))  # self broadcast against a larger mask
    assert_same(from_torch(small, device).masked_select(from_torch(mask, device)), small.masked_select(mask))


def test_masked_select_zero_d_and_empty(device):
    s = random_tensor(())
    for m in (torch.tensor(True), torch.tensor(False)):
        assert_same(from_torch(s, device).masked_select(from_torch(m, device)), s.masked_select(m))
    t = random_tensor((3, 4))
    none = torch.zeros(3, 4, dtype=torch.bool)
    assert_same(from_torch(t, device).masked_select(from_torch(none, device)), t.masked_select(none))
    e = random_tensor((0, 4))
    assert_same(
        from_torch(e, device).masked_select(from_torch(torch.zeros(0, 4, dtype=torch.bool), device)),
        e.masked_select(torch.zeros(0, 4, dtype=torch.bool)),
    )


# ------------------------------------------------------------------ nonzero
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.uint8])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero(device, dtype, layout):
    t = random_tensor((4, 5), dtype) * random_tensor((4, 5), torch.bool).to(dtype)  # about half zeros
    x = _array(t, device, layout)
    assert_same(x.nonzero(), torch.nonzero(t))
    got = x.nonzero(as_tuple=True)
    expected = torch.nonzero(t, as_tuple=True)
    assert len(got) == len(expected) == 2
    for g, e in zip(got, expected):
        assert_same(g, e)


def test_nonzero_zero_d_empty_and_nan(device):
    for s in (torch.tensor(2.5), torch.tensor(0.0)):
        assert_same(from_torch(s, device).nonzero(), s.nonzero())
        (got,) = from_torch(s, device).nonzero(as_tuple=True)
        assert_same(got, s.nonzero(as_tuple=True)[0])
    e = random_tensor((0, 3))
    assert_same(from_torch(e, device).nonzero(), e.nonzero())
    t = torch.tensor([[0.0, float("nan")], [-0.0, 1.0]])
    assert_same(from_torch(t, device).nonzero(), t.nonzero())


# ------------------------------------------------------------------ take_along_dim
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_take_along_dim(device, dim):
    t = random_tensor((4, 5, 6))
    shape = [4, 5, 6]
    shape[dim] = 3
    index = _index(tuple(shape), t.shape[dim])
    assert_same(
        _array(t, device, "transposed").take_along_dim(from_torch(index, device), dim), t.take_along_dim(index, dim)
    )


def test_take_along_dim_broadcasts_and_flattens(device):
    t = random_tensor((4, 5))
    index = _index((1, 3), 5)  # broadcast over rows
    assert_same(from_torch(t, device).take_along_dim(from_torch(index, device), 1), t.take_along_dim(index, 1))
    index = _index((3, 1, 2), 5)  # ... and self broadcast over a new leading size
    t3 = random_tensor((1, 4, 5))
    assert_same(from_torch(t3, device).take_along_dim(from_torch(index, device), 2), t3.take_along_dim(index, 2))
    flat = _index((7,), 20)
    assert_same(from_torch(t, device).take_along_dim(from_torch(flat, device)), t.take_along_dim(flat))


def test_take_along_dim_errors(device):
    t = random_tensor((4, 5))
    x = from_torch(t, device)
    idx32 = torch.zeros(4, 1, dtype=torch.int32)
    raises_like(
        lambda: t.take_along_dim(idx32, 1),
        lambda: x.take_along_dim(from_torch(idx32, device), 1),
        match="Long but got Int",
    )
    flat = torch.zeros(3, dtype=torch.int64)
    raises_like(
        lambda: t.take_along_dim(flat, 1),
        lambda: x.take_along_dim(from_torch(flat, device), 1),
        match="same number of dimensions",
    )
    # torch's CPU kernel wraps an out-of-range index along dim silently; here it raises like gather
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.take_along_dim(from_torch(torch.full((4, 1), 9), device), 1)


# ------------------------------------------------------------------ embedding
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_embedding(device, layout, shape, index_dtype):
    w = random_tensor((7, 5))
    idx = _index(shape, 7, index_dtype)
    got = _array(w, device, layout).embedding(from_torch(idx, device))
    assert_same(got, torch.nn.functional.embedding(idx, w))


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.int64, torch.bool])
def test_embedding_dtypes(device, dtype):
    w = random_tensor((6, 3), dtype)
    idx = _index((4, 2), 6)
    assert_same(from_torch(w, device).embedding(from_torch(idx, device)), torch.nn.functional.embedding(idx, w))


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_embedding_backward(device, padding_idx, dtype):
    """The weight gradient of torch.nn.functional.embedding (padding row left at zero), repeated indices summed."""
    idx = _index((4, 5), 6)
    idx[0, :3] = 2  # a repeated index, which is also a padding_idx case
    g = random_tensor((4, 5, 3), dtype)
    w = torch.zeros(6, 3, dtype=dtype, requires_grad=True)
    torch.nn.functional.embedding(idx, w, padding_idx=padding_idx).backward(g)
    got = from_torch(g, device).embedding_backward(from_torch(idx, device), 6, padding_idx)
    assert_same(got, w.grad)
    # torch views the gradient as (indices.numel(), D): any shape with those elements works
    flat = from_torch(g.reshape(20, 3), device).embedding_backward(from_torch(idx, device), 6, padding_idx)
    assert_same(flat, w.grad)


# cuda only: torch's CPU kernel (the cpu backend's) adds half types in the half type, one rounding per add.
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_embedding_backward_half_types_accumulate_wide(device, dtype):
    """Half-type gradients on cuda add up in float32 and round once (as torch's CUDA kernel): the float64 sum,
    rounded, within the dtype's tolerance (every row is hit several times)."""
    idx = _index((40,), 3)
    g = random_tensor((40, 4), dtype)
    expected = torch.zeros(3, 4, dtype=torch.float64).index_add_(0, idx, g.double()).to(dtype)
    assert_same(from_torch(g, device).embedding_backward(from_torch(idx, device), 3), expected)


# (id, call(embedding, weight, T)): run with torch.embedding on torch tensors, then with NDArray.embedding;
# ``T`` turns a torch tensor into the same library's (identity for torch).
EMBEDDING_ERRORS = [
    ("out_of_range", lambda emb, w, T: emb(w, T(torch.tensor([[0, 7]]))), "index out of range in self"),
    ("negative", lambda emb, w, T: emb(w, T(torch.tensor([-1]))), "index out of range in self"),
    ("float_indices", lambda emb, w, T: emb(w, T(torch.tensor([1.0]))), "Long, Int; but got torch.FloatTensor"),
    ("one_d_weight", lambda emb, w, T: emb(w[0], T(torch.tensor([1]))), "'weight' must be 2-D"),
]


@pytest.mark.parametrize("case", EMBEDDING_ERRORS, ids=[c[0] for c in EMBEDDING_ERRORS])
def test_embedding_errors_match_torch(device, case):
    _, call, match = case
    w = random_tensor((5, 3))
    raises_like(
        lambda: call(torch.embedding, w, lambda t: t),
        lambda: call(lambda weight, idx: weight.embedding(idx), from_torch(w, device), lambda t: from_torch(t, device)),
        match,
    )


# ------------------------------------------------------------------ errors, as torch raises them
# Each case runs once on a torch tensor and once on the NDArray with the same values: ``x`` is
# either, and ``T`` turns a torch argument into the same library's (identity for torch).
_LONG, _F64, _BOOL = torch.int64, torch.float64, torch.bool
ERR_CASES = [
    ("gather_out_of_range", lambda x, T: x.gather(1, T(torch.tensor([[0, 7]]))), "out of bounds"),
    ("gather_negative", lambda x, T: x.gather(1, T(torch.tensor([[-1]]))), "out of bounds"),
    ("gather_float_index", lambda x, T: x.gather(1, T(torch.zeros(1, 1))), "int32/int64"),
    ("gather_rank", lambda x, T: x.gather(1, T(torch.zeros(2, dtype=_LONG))), "same number of dimensions"),
    ("gather_too_big", lambda x, T: x.gather(1, T(torch.zeros(5, 1, dtype=_LONG))), "no larger than"),
    ("gather_bad_dim", lambda x, T: x.gather(2, T(torch.zeros(1, 1, dtype=_LONG))), "Dimension out of range"),
    ("scatter_out_of_range", lambda x, T: x.scatter(0, T(torch.tensor([[4]])), 1.0), "out of bounds"),
    ("scatter_src_dtype", lambda x, T: x.scatter(0, T(torch.tensor([[0]])), T(torch.ones(1, 1, dtype=_F64))), "dtype"),
    (
        "scatter_src_small",
        lambda x, T: x.scatter(1, T(torch.zeros(2, 2, dtype=_LONG)), T(torch.ones(1, 1))),
        "no larger",
    ),
    (
        "scatter_add_out_of_range",
        lambda x, T: x.scatter_add(1, T(torch.tensor([[0, 3, -1]])), T(torch.ones(1, 3))),
        "out of bounds",
    ),
    (
        "scatter_add_float_index",
        lambda x, T: x.scatter_add(1, T(torch.zeros(1, 1)), T(torch.ones(1, 1))),
        "int32/int64",
    ),
    ("index_select_out_of_range", lambda x, T: x.index_select(0, T(torch.tensor([1, 4]))), "out of bounds"),
    ("index_select_float_index", lambda x, T: x.index_select(0, T(torch.tensor([1.0]))), "int32 or int64"),
    (
        "index_select_int16_index",
        lambda x, T: x.index_select(0, T(torch.tensor([1], dtype=torch.int16))),
        "int32 or int64",
    ),
    ("index_select_matrix_index", lambda x, T: x.index_select(0, T(torch.zeros(1, 1, dtype=_LONG))), "vector"),
    ("index_add_out_of_range", lambda x, T: x.index_add(1, T(torch.tensor([5])), T(torch.ones(4, 1))), "out of bounds"),
    ("index_add_negative", lambda x, T: x.index_add(1, T(torch.tensor([-1])), T(torch.ones(4, 1))), "out of bounds"),
    ("index_add_float_index", lambda x, T: x.index_add(1, T(torch.tensor([1.0])), T(torch.ones(4, 1))), "int32/int64"),
    (
        "index_add_source_dtype",
        lambda x, T: x.index_add(1, T(torch.tensor([1])), T(torch.ones(4, 1, dtype=_F64))),
        "same scalar type",
    ),
    ("index_add_count", lambda x, T: x.index_add(1, T(torch.tensor([1])), T(torch.ones(4, 2))), "Number of indices"),
    (
        "index_add_shape",
        lambda x, T: x.index_add(1, T(torch.tensor([1])), T(torch.ones(3, 1))),
        "must match self tensor shape",
    ),
    ("masked_fill_long_mask", lambda x, T: x.masked_fill(T(torch.ones(4, 5, dtype=_LONG)), 1.0), "boolean masks"),
    (
        "masked_fill_vector_value",
        lambda x, T: x.masked_fill(T(torch.ones(4, 5, dtype=_BOOL)), T(torch.ones(1))),
        "0-dimensional value",
    ),
    (
        "masked_fill__needs_self_shape",
        lambda x, T: x[0].masked_fill_(T(torch.ones(4, 5, dtype=_BOOL)), 1.0),
        "broadcast shape",
    ),
    ("masked_select_uint8_mask", lambda x, T: x.masked_select(T(torch.ones(4, 5, dtype=torch.uint8))), "BoolTensor"),
    ("masked_select_shapes", lambda x, T: x.masked_select(T(torch.ones(3, dtype=_BOOL))), "must match"),
]


@pytest.mark.parametrize("case", ERR_CASES, ids=[c[0] for c in ERR_CASES])
def test_errors_match_torch(device, case):
    _, fn, match = case
    t = random_tensor((4, 5))
    x = from_torch(t, device)
    raises_like(lambda: fn(t, lambda a: a), lambda: fn(x, lambda a: from_torch(a, device)), match)


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_out_of_range_is_index_error_on_every_dim(device, dim):
    # torch's CPU kernel raises IndexError along dim 0 but RuntimeError along the others; both
    # devices here raise IndexError, naming the index, the dim and its size.
    x = from_torch(random_tensor((4, 5)), device)
    with pytest.raises(IndexError, match=f"index 9 is out of bounds for dimension {dim} with size {4 + dim}"):
        x.index_select(dim, from_torch(torch.tensor([0, 9]), device))


def test_out_of_range_leaves_later_launches_working(device):
    x = from_torch(random_tensor((3, 4)), device)
    with pytest.raises(RuntimeError):
        x.gather(1, from_torch(torch.tensor([[4]]), device))
    index = torch.tensor([[3, 0]])
    assert_same(x.gather(1, from_torch(index, device)), to_torch(x).gather(1, index))


# ------------------------------------------------------------------ devices
@pytest.mark.skipif(not HAS_CUDA, reason="device mismatch needs cpu and cuda")
@pytest.mark.cuda
def test_cuda_ops_refuse_cpu_index_naming_devices():
    x = from_torch(random_tensor((3, 4)), "cuda")
    idx = from_torch(torch.tensor([[0, 1]]), "cpu")
    for fn in (
        lambda: x.gather(1, idx),
        lambda: x.scatter(1, idx, 1.0),
        lambda: x.index_select(1, idx[0]),
        lambda: x.masked_fill(from_torch(torch.ones(4, dtype=torch.bool), "cpu"), 1.0),
    ):
        with pytest.raises(RuntimeError, match="same device") as info:
            fn()
        assert "cpu" in str(info.value) and "cuda" in str(info.value)
