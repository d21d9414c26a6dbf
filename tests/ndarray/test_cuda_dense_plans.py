"""The cuda backend's resolved entries for binary ops of one float width or two (bf16 + float32) and floating
unary ops (dense plans), without a GPU.

Device 0's allocator hands out host memory here and the kernels run in Triton's interpreter on it, so the
backend's own logic runs: the resolved entry (which takes the dense plan for contiguous operands of one
shape) must give what the general function gives, and what torch gives, for every layout it may see
(contiguous, non-contiguous, broadcast, offset and misaligned views, empty) and raise the same errors.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest
import torch

import genesis_storage as gs
from genesis_kernels.runtime import INTERPRET
from genesis_ndarray import registry
from genesis_ndarray.backends.cuda import elementwise as ew
from genesis_ndarray.dtypes import dtype_by_name
from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator

if not INTERPRET:  # a GPU machine: the cuda tests there run the same entries on the device
    pytest.skip("host-memory kernels need Triton's interpreter (TRITON_INTERPRET=1)", allow_module_level=True)


class HostRawAllocator(FakeRawAllocator):
    """'Device' segments that are host memory, so that interpreted kernels can read and write them."""

    def __init__(self) -> None:
        super().__init__(capacity=1 << 30)
        self.buffers: dict[int, np.ndarray] = {}

    def malloc(self, nbytes: int) -> int | None:
        buf = np.zeros(nbytes + 256, dtype=np.uint8)
        addr = (buf.ctypes.data + 255) // 256 * 256
        self.buffers[addr] = buf
        self.live[addr] = nbytes
        self.used += nbytes
        return addr

    def free(self, addr: int, nbytes: int) -> None:
        super().free(addr, nbytes)
        del self.buffers[addr]


@pytest.fixture(autouse=True)
def host_device():
    previous = set_allocator(0, CachingAllocator(HostRawAllocator()))
    yield
    set_allocator(0, previous)


def upload(t: torch.Tensor) -> gs.StridedView:
    t = t.contiguous()
    v = gs.empty(tuple(t.shape), str(t.dtype).removeprefix("torch."), 0)
    if v.numel:
        ctypes.memmove(v.ptr, t.data_ptr(), v.nbytes)
    return v


def download(v: gs.StridedView) -> torch.Tensor:
    dtype = getattr(torch, v.dtype)
    if not v.numel:
        return torch.empty(v.shape, dtype=dtype)
    _, lo, hi = gs.view.extent(v.shape, v.strides)
    raw = ctypes.string_at(v.ptr + lo * v.itemsize, (hi - lo + 1) * v.itemsize)
    flat = torch.frombuffer(bytearray(raw), dtype=dtype)
    return flat.as_strided(v.shape, v.strides, -lo).clone()


def entry(family: str, op: str, *dtypes: str):
    fn, _ = registry.table("cuda").resolved[(family, op, *(dtype_by_name[d] for d in dtypes))]
    return fn


def _close(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = {"rtol": 8e-3, "atol": 1e-2} if expected.dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(got, expected, **tol)


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum, "minimum": torch.minimum}


# operand dtypes: one dtype, or floats of two widths that widen exactly to the result (bf16 + float32 is
# autocast's residual add), which take the dense plan too, computing in the wider dtype as the general
# function does
PLAN_DTYPES = [(d, d) for d in ("float32", "float64", "bfloat16", "int64")] + [
    ("bfloat16", "float32"), ("float32", "bfloat16"), ("float32", "float64"),
]  # fmt: skip


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(("da", "db"), PLAN_DTYPES)
def test_binary_plan_equals_general_and_torch(op, da, db):
    a = (torch.randn(1000, dtype=torch.float64) * 5).to(getattr(torch, da))
    b = (torch.randn(1000, dtype=torch.float64) * 5).to(getattr(torch, db))
    va, vb = upload(a), upload(b)
    fast = entry("binary", op, da, db)
    assert not isinstance(fast, functools.partial)  # the plan, not the general function
    out = fast(va, vb)
    wide = str(torch.promote_types(a.dtype, b.dtype)).removeprefix("torch.")
    assert out.dtype == wide and out.shape == (1000,) and out.is_contiguous()
    _close(download(out), download(ew.binary(op, va, vb)))
    _close(download(out), BINARY[op](a, b))
    # a 0-d operand goes to the general function, and does not promote (torch's rule)
    zero_dim = torch.tensor(2.5, dtype=getattr(torch, db))
    _close(download(fast(va, upload(zero_dim))), BINARY[op](a, zero_dim))


@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_plan_falls_back_for_other_layouts(op):
    fast = entry("binary", op, "float32", "float32")
    a = torch.randn(6, 8, dtype=torch.float32)
    b = torch.randn(8, 6, dtype=torch.float32)
    va, vb = upload(a), upload(b)
    vbt = vb.as_strided((6, 8), (1, 6))  # non-contiguous (transposed)
    _close(download(fast(va, vbt)), BINARY[op](a, b.t()))
    row = upload(torch.randn(8, dtype=torch.float32))  # broadcast
    _close(download(fast(va, row)), BINARY[op](a, download(row)))
    # an offset view: contiguous but 4 bytes past a 16-byte boundary (the misaligned specialisation)
    tail_a, tail_b = va.as_strided((47,), (1,), 1), vb.as_strided((47,), (1,), 1)
    _close(download(fast(tail_a, tail_b)), BINARY[op](a.flatten()[1:], b.flatten()[1:]))
    empty = upload(torch.empty(0, 3, dtype=torch.float32))
    assert fast(empty, empty).shape == (0, 3)
    with pytest.raises(RuntimeError, match="size of tensor"):
        fast(va, upload(torch.randn(5, dtype=torch.float32)))


def test_binary_other_signatures_keep_the_general_entry():
    for key in (("sub", "bool", "bool"), ("add", "float16", "bfloat16"), ("add", "int32", "float32"),
                ("div", "float32", "float32")):  # fmt: skip
        fn = entry("binary", *key)
        assert isinstance(fn, functools.partial), key  # no plan: promotion that rounds, or a changing dtype
    with pytest.raises(RuntimeError, match="Subtraction"):
        v = upload(torch.tensor([True, False]))
        entry("binary", "sub", "bool", "bool")(v, v)


UNARY = {"exp": torch.exp, "relu": torch.relu, "neg": torch.neg, "sqrt": torch.sqrt, "tanh": torch.tanh}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_unary_plan_equals_general_and_torch(op, dtype):
    x = torch.rand(777, dtype=torch.float64).add(0.1).to(getattr(torch, dtype))
    vx = upload(x)
    fast = entry("unary", op, dtype)
    out = fast(vx)
    assert out.dtype == dtype and out.shape == (777,)
    _close(download(out), download(ew.unary(op, vx)))
    _close(download(out), UNARY[op](x))
    # non-contiguous, offset and empty inputs
    m = upload(torch.rand(5, 7, dtype=torch.float64).add(0.1).to(getattr(torch, dtype)))
    mt = m.as_strided((7, 5), (1, 7))
    _close(download(fast(mt)), UNARY[op](download(m).t()))
    _close(download(fast(m.as_strided((33,), (1,), 1))), UNARY[op](download(m).flatten()[1:34]))
    assert fast(upload(torch.empty(0, dtype=getattr(torch, dtype)))).shape == (0,)


def test_unary_integer_and_bool_results_keep_the_general_entry():
    for key in (("exp", "int64"), ("isnan", "float32"), ("bitwise_not", "float32")):
        assert isinstance(entry("unary", *key), functools.partial), key
