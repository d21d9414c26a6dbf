"""The launch path and layout logic: caching, no recompiles on new shapes, collapsing."""

from __future__ import annotations

import os

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk
from genesis_kernels.buffer import collapse
from genesis_kernels.elementwise import BINARY, BINARY_DENSE
from genesis_kernels.tiled import _BINARY as TILED_BINARY


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
    keys = [k for k in BINARY_DENSE.cache if k[:2] == ("add", "float32")]
    # One specialisation per alignment class at most, whatever the sizes.
    assert len(keys) <= 2


def test_dense_and_strided_paths(device: str) -> None:
    # Same-layout dense operands (including a transposed-but-dense trio) take the few-argument
    # dense kernel; a lone transposed operand of a matrix takes the tiled kernel (tiled.py), and
    # one of a rank-3 tensor the strided one. All must be right.
    a = make((37, 29), "float32", device)
    b = make((37, 29), "float32", device)
    for x, y in ((a, b), (a.t(), b.t()), (a, b.t().contiguous().t())):
        out = torch.empty(x.shape, device=device).t().contiguous().t() if x.stride(0) == 1 else torch.empty_like(x)
        gk.binary("mul", buf(x), buf(y), buf(out), compute_dtype="float32")
        sync(device)
        torch.testing.assert_close(out, x * y)
        gk.unary("exp", buf(x), buf(out))
        sync(device)
        torch.testing.assert_close(out, x.exp())
    scalar_out = torch.empty(7, device=device)
    gk.binary("sub", 2.5, buf(scalar_out[:0]), buf(scalar_out[:0]), compute_dtype="float32")  # empty: no launch
    gk.binary("sub", 2.5, buf(b[0, :7]), buf(scalar_out), compute_dtype="float32")
    sync(device)
    torch.testing.assert_close(scalar_out, 2.5 - b[0, :7])
    assert any(k[:2] == ("mul", "float32") for k in TILED_BINARY.cache)  # the lone transposed matrix
    c = make((5, 7, 3), "float32", device)
    d = make((3, 7, 5), "float32", device).permute(2, 1, 0)
    out3 = torch.empty_like(c)
    gk.binary("mul", buf(c), buf(d), buf(out3), compute_dtype="float32")
    sync(device)
    torch.testing.assert_close(out3, c * d)
    assert any(k[:2] == ("mul", "float32") for k in BINARY.cache)  # the strided case ran


def test_unknown_op_and_bad_shapes() -> None:
    b = gk.Buffer(0, (3,), (1,), "float32")
    with pytest.raises(ValueError):
        gk.unary("nope", b, b)
    with pytest.raises(ValueError):
        gk.binary("add", b, gk.Buffer(0, (4,), (1,), "float32"), b, compute_dtype="float32")


def test_divisibility_attrs_follow_argument_order_in_every_process() -> None:
    # Triton's disk-cache key includes str(attrs): the same kernel must give the same string however the
    # aligned names are iterated (a set's order changes between processes), or every process recompiles.
    import subprocess
    import sys

    from genesis_kernels.runtime import divisibility_attrs

    names = ["x", "y", "out", "n", "scratch"]
    attrs = divisibility_attrs(names, ["scratch", "x", "out"])
    assert list(attrs) == [(0,), (2,), (4,)] and attrs == divisibility_attrs(names, ["out", "scratch", "x"])
    code = (
        "from genesis_kernels.runtime import divisibility_attrs;"
        "print(str(divisibility_attrs(['x', 'y', 'out', 'n', 'scratch'], {'scratch', 'x', 'out'})))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(seen) == 1, seen


class _CountingCuda:
    """The runtime's driver calls, counted; malloc hands out fake device addresses."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.next = 1 << 40

    def ensure_context(self) -> int:
        self.calls.append("cuCtxGetCurrent")
        return 0xC0

    def malloc(self, nbytes: int) -> int:
        self.calls.append("cuMemAlloc")
        self.next += nbytes
        return self.next - nbytes


def test_scratch_is_keyed_by_device_and_stream_without_a_driver_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """runtime.scratch on the GPU branch: a hit is a dict read (no cuCtxGetCurrent), a miss or a larger
    request makes the context current and allocates; each (current device, stream) has its own block."""
    import genesis_kernels.runtime as rt
    from genesis_storage.device import _tls

    fake = _CountingCuda()
    monkeypatch.setattr(rt, "INTERPRET", False)
    monkeypatch.setattr(rt, "_cuda", fake)
    monkeypatch.setattr(rt, "_scratch", {})
    p = rt.scratch(1000, 7)
    assert fake.calls == ["cuCtxGetCurrent", "cuMemAlloc"]
    assert rt.scratch(1024, 7) == p and rt.scratch(256, 7) == p  # hits: no driver call
    assert fake.calls == ["cuCtxGetCurrent", "cuMemAlloc"]
    other_stream = rt.scratch(1000, 8)
    assert other_stream != p and len(fake.calls) == 4
    bigger = rt.scratch(4096, 7)  # grows: a new block (the old one stays alive for queued kernels)
    assert bigger != p and len(fake.calls) == 6 and rt.scratch(4096, 7) == bigger
    monkeypatch.setattr(_tls, "device", 1)  # another device, same stream handle: another block
    on_one = rt.scratch(1000, 7)
    assert on_one not in (p, bigger) and len(fake.calls) == 8
    monkeypatch.setattr(_tls, "device", 0)
    assert rt.scratch(1000, 7) == bigger and len(fake.calls) == 8
