"""torch-style repr: tensor([...], device='cuda:0', dtype=genesis.float16, grad_fn=<MulBackward>)."""

from __future__ import annotations

import numpy as np

from genesis_ndarray import float32, get_default_dtype, int64

_IMPLICIT = ("bool",)


def tensor_repr(t) -> str:
    data = t.data
    if data.dtype.numpy is None:  # bfloat16: print through float32
        data = data.astype(float32)
    arr = np.asarray(data.numpy())
    prefix = "tensor("
    if arr.size == 0:
        body = "[]" if arr.ndim == 1 else f"[], size={tuple(arr.shape)}"
    else:
        body = np.array2string(
            arr, separator=", ", prefix=prefix, precision=4, threshold=1000, edgeitems=3,
            floatmode="maxprec_equal" if arr.dtype.kind == "f" else "maxprec",
        )
    parts = [body]
    if t.device.type != "cpu":
        parts.append(f"device='{t.device}'")
    if t.dtype not in (get_default_dtype(), int64) and t.dtype.name not in _IMPLICIT:
        parts.append(f"dtype=genesis.{t.dtype.name}")
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        parts.append("requires_grad=True")
    return prefix + ", ".join(parts) + ")"
