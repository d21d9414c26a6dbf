"""Shared helpers for the kernel tests: wrap torch tensors as buffers, make layouts, compare."""

from __future__ import annotations

import numpy as np
import torch

import genesis_kernels as gk

TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")


def buf(t: torch.Tensor) -> gk.Buffer:
    """A torch tensor's memory as a buffer (host memory under the interpreter, device memory on the GPU)."""
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


class Uploads:
    """The ``upload`` the multi-tensor launchers need: the table as a tensor on ``device``, kept alive here."""

    def __init__(self, device: str) -> None:
        self.device, self.keep = device, []

    def __call__(self, table: np.ndarray, key: object = None) -> int:
        t = torch.from_numpy(table.copy()).to(self.device)
        self.keep.append(t)
        return t.data_ptr()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def make(
    shape: tuple[int, ...],
    dtype: str,
    device: str,
    *,
    low: float = -3.0,
    high: float = 3.0,
    gen: torch.Generator | None = None,
) -> torch.Tensor:
    """Fresh random values (never zeros): normal-ish floats in [low, high], integers in range, random bools."""
    dt = TORCH_DTYPES[dtype]
    if dtype == "bool":
        t = torch.rand(shape, generator=gen) > 0.5
    elif dtype in FLOATS:
        t = torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low
    else:
        lo, hi = (0, 100) if dtype == "uint8" else (-50, 50)
        t = torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64)
    return t.to(dt).to(device)


def layout_variants(base: torch.Tensor) -> dict[str, torch.Tensor]:
    """The same logical 2-D values seen through several memory layouts."""
    rows, cols = base.shape
    return {
        "contiguous": base.clone(),
        "transposed": base.t().contiguous().t(),
        "sliced": torch.empty((rows, cols * 2), dtype=base.dtype, device=base.device).copy_(
            base.repeat_interleave(2, dim=1)
        )[:, ::2],
    }


def tol(dtype: str) -> dict[str, float]:
    return {
        "float32": dict(rtol=1e-5, atol=1e-6),
        "float64": dict(rtol=1e-12, atol=1e-12),
        "float16": dict(rtol=1e-3, atol=1e-3),
        "bfloat16": dict(rtol=8e-3, atol=8e-3),
    }.get(dtype, dict(rtol=0, atol=0))


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: str | None = None, **kw: float) -> None:
    dtype = dtype or str(actual.dtype).removeprefix("torch.")
    t = {**tol(dtype), **kw}
    if actual.dtype.is_floating_point:
        torch.testing.assert_close(actual.double().cpu(), expected.double().cpu(), equal_nan=True, **t)
    else:
        torch.testing.assert_close(actual.cpu(), expected.to(actual.dtype).cpu(), rtol=0, atol=0)
