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
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        integral = arr.dtype.kind != "f" or bool(np.all(finite == np.round(finite)))
        # torch: integral floats print as "1.", others with 4 decimals, in scientific form
        # when the magnitudes span more than 1000x or leave [1e-4, 1e8).
        scientific = False
        if arr.dtype.kind == "f" and finite.size and not integral:
            mags = np.abs(finite[finite != 0]).astype(np.float64)
            if mags.size:
                scientific = mags.max() / mags.min() > 1000 or mags.max() >= 1e8 or mags.min() < 1e-4
        body = np.array2string(
            arr,
            separator=", ",
            prefix=prefix,
            precision=4,
            threshold=1000,
            edgeitems=3,
            floatmode="maxprec" if integral else "fixed",
            suppress_small=False,
            formatter={"float_kind": lambda v: f"{v:.4e}"} if scientific else None,
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
