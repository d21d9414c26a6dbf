"""Residual add + LayerNorm / RMSNorm kernels (forward, fused backward with the gradient of s) against
torch in float64."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, buf, make, sync

import genesis_kernels as gk

# Relative error (norm of the difference over the norm of the reference, float64 torch on the same
# inputs). A 16-bit output is one rounding of an fp32 value: relative error about half an ulp,
# 2**-9 (bf16) / 2**-12 (fp16) per element; 2**-7 / 2**-9 leaves room for the rounding of s, which the
# norm then reads (as torch's eager composition does), and of the fp32 statistics.
REL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2.0**-7, "float16": 2.0**-9}


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double().cpu(), expected.double().cpu()
    assert torch.isfinite(a).all(), "non-finite values (unwritten output?)"
    return float((a - e).norm() / e.norm().clamp_min(1e-6))


def poisoned(shape, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def run(x, r, w, b, dy, ds, *, rms: bool, s_dtype: torch.dtype, eps: float = 1e-5) -> dict[str, torch.Tensor]:
    """Forward and backward through the kernels; every output poisoned first so unwritten elements show."""
    n, rows, dev = x.shape[-1], x.shape[:-1], x.device
    acc = torch.float64 if s_dtype == torch.float64 else torch.float32
    s, y = poisoned(x.shape, s_dtype, dev), poisoned(x.shape, dy.dtype, dev)
    mean = None if rms else poisoned(rows, acc, dev)
    rstd = poisoned(rows, acc, dev)
    opt = lambda t: None if t is None else buf(t)
    gk.add_norm_forward(buf(x), buf(r), opt(w), opt(b), buf(s), buf(y), opt(mean), buf(rstd), eps=eps, rms=rms)
    dx = poisoned(x.shape, s_dtype, dev)
    dw = None if w is None else poisoned((n,), w.dtype, dev)
    db = None if b is None else poisoned((n,), b.dtype, dev)
    gk.add_norm_backward(buf(s), buf(dy), opt(ds), opt(w), opt(mean), buf(rstd), buf(dx), opt(dw), opt(db), rms=rms)
    sync(dev.type)
    out = {"s": s, "y": y, "rstd": rstd, "dx": dx}
    for name, t in (("mean", mean), ("dw", dw), ("db", db)):
        if t is not None:
            out[name] = t
    return out


def reference(x, r, w, b, dy, ds, *, rms: bool, s_dtype: torch.dtype, eps: float = 1e-5):
    """float64 torch on s rounded to its dtype (what the norm reads): s, y, the statistics, every gradient."""
    s = (x.double() + r.double()).to(s_dtype).double().cpu().requires_grad_()
    ww = None if w is None else w.detach().double().cpu().requires_grad_()
    bb = None if b is None else b.detach().double().cpu().requires_grad_()
    n = s.shape[-1]
    if rms:
        y = torch.nn.functional.rms_norm(s, (n,), ww, eps)
        rstd = torch.rsqrt(s.detach().pow(2).mean(-1) + eps)
    else:
        y = torch.nn.functional.layer_norm(s, (n,), ww, bb, eps)
        rstd = torch.rsqrt(s.detach().var(-1, unbiased=False) + eps)
    y.backward(dy.double().cpu())
    out = {"s": s.detach(), "y": y.detach(), "rstd": rstd, "dx": s.grad + (0 if ds is None else ds.double().cpu())}
    if not rms:
        out["mean"] = s.detach().mean(-1)
    if ww is not None:
        out["dw"] = ww.grad
    if bb is not None:
        out["db"] = bb.grad
    return out


def check(got: dict, ref: dict, dtype: str) -> None:
    assert got.keys() == ref.keys()
    for name, value in ref.items():
        err = rel_err(got[name], value)
        assert err < REL[dtype], f"{name}: relative error {err:.3g} (limit {REL[dtype]:.3g})"


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("shape", [(5, 48), (3, 2, 33)])
def test_add_norm_matches_torch(device, rms, dtype, shape):
    tdt = TORCH_DTYPES[dtype]
    x, r, dy, ds = (make(shape, dtype, device) for _ in range(4))
    w = make(shape[-1:], dtype, device, low=0.5, high=1.5)
    b = None if rms else make(shape[-1:], dtype, device)
    got = run(x, r, w, b, dy, ds, rms=rms, s_dtype=tdt)
    check(got, reference(x, r, w, b, dy, ds, rms=rms, s_dtype=tdt), dtype)


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_mixed_dtypes_float32_residual_bf16_input_fp32_params(device, rms):
    # The residual stream in float32, a bf16 block output: s is float32 (torch's promotion), y too.
    x = make((6, 40), "bfloat16", device)
    r, dy, ds = (make((6, 40), "float32", device) for _ in range(3))
    w = make((40,), "float32", device, low=0.5, high=1.5)
    b = None if rms else make((40,), "float32", device)
    got = run(x, r, w, b, dy, ds, rms=rms, s_dtype=torch.float32)
    check(got, reference(x, r, w, b, dy, ds, rms=rms, s_dtype=torch.float32), "float32")


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
@pytest.mark.parametrize("n", [40, 8192 + 40], ids=["one-pass", "long-rows"])
def test_the_gradient_of_the_bf16_addend_written_in_the_same_pass(device, rms, n):
    """dx_low: the float32 sum rounded once to bf16, the same values as casting dx afterwards (one rounding of
    the same float32 value either way), and dx itself unchanged by it."""
    x = make((3, n), "bfloat16", device)
    r, dy, ds = (make((3, n), "float32", device) for _ in range(3))
    w = make((n,), "float32", device, low=0.5, high=1.5)
    b = None if rms else make((n,), "float32", device)
    acc = torch.float32
    s, y = poisoned(x.shape, acc, x.device), poisoned(x.shape, acc, x.device)
    mean, rstd = (None if rms else poisoned((3,), acc, x.device)), poisoned((3,), acc, x.device)
    opt = lambda t: None if t is None else buf(t)
    gk.add_norm_forward(buf(x), buf(r), buf(w), opt(b), buf(s), buf(y), opt(mean), buf(rstd), eps=1e-5, rms=rms)
    dx, alone = poisoned(x.shape, acc, x.device), poisoned(x.shape, acc, x.device)
    low = poisoned(x.shape, torch.bfloat16, x.device)
    args = (buf(s), buf(dy), buf(ds), buf(w), opt(mean), buf(rstd))
    gk.add_norm_backward(*args, buf(dx), dx_low=buf(low), rms=rms)
    gk.add_norm_backward(*args, buf(alone), rms=rms)
    sync(device)
    assert torch.equal(dx, alone) and torch.equal(low, dx.to(torch.bfloat16))


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_no_ds_no_weight_and_bf16_s_with_fp32_y(device, rms):
    # ds None: only y is used; no weight / bias; y in float32 from a bf16 s (autocast's float32 norm).
    x, r = make((4, 24), "bfloat16", device), make((4, 24), "bfloat16", device)
    dy = make((4, 24), "float32", device)
    got = run(x, r, None, None, dy, None, rms=rms, s_dtype=torch.bfloat16)
    ref = reference(x, r, None, None, dy, None, rms=rms, s_dtype=torch.bfloat16)
    for name in ("y", "rstd", "mean"):  # y from the rounded s is exact up to float32 arithmetic
        if name in ref:
            assert rel_err(got[name], ref[name]) < REL["float32"], name
    assert rel_err(got["s"], ref["s"]) == 0.0
    assert rel_err(got["dx"], ref["dx"]) < REL["bfloat16"]


def test_strided_rows_and_columns(device):
    # Rows of a wider buffer (row stride 2N) and a transposed (column-strided) operand.
    base = make((4, 64), "float32", device)
    x = base[:, :32]
    r = make((32, 4), "float32", device).t()
    dy, ds = make((4, 32), "float32", device), make((4, 32), "float32", device)
    w = make((32,), "float32", device)
    got = run(x, r, w, None, dy, ds, rms=True, s_dtype=torch.float32)
    check(got, reference(x, r, w, None, dy, ds, rms=True, s_dtype=torch.float32), "float32")


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_long_rows_take_the_two_launch_path(device, rms):
    n = 8192 + 40  # past the one-pass limit
    x, r, dy, ds = (make((2, n), "float32", device) for _ in range(4))
    w = make((n,), "float32", device)
    b = None if rms else make((n,), "float32", device)
    got = run(x, r, w, b, dy, ds, rms=rms, s_dtype=torch.float32)
    check(got, reference(x, r, w, b, dy, ds, rms=rms, s_dtype=torch.float32), "float32")


def test_empty_rows_give_zero_parameter_gradients(device):
    x = make((0, 16), "float32", device)
    w = make((16,), "float32", device)
    got = run(x, x, w, None, x, x, rms=True, s_dtype=torch.float32)
    assert got["dw"].abs().sum().item() == 0


def test_bad_buffers_raise(device):
    x = make((3, 8), "float32", device)
    out = make((3, 8), "float32", device)
    rstd = make((3,), "float32", device)
    with pytest.raises(ValueError, match="shape mismatch"):
        gk.add_norm_forward(buf(x), buf(make((3, 9), "float32", device)), None, None, buf(out), buf(out), None,
                            buf(rstd), eps=1e-5, rms=True)  # fmt: skip
    with pytest.raises(ValueError, match="weight"):
        gk.add_norm_forward(buf(x), buf(x), buf(make((9,), "float32", device)), None, buf(out), buf(out), None,
                            buf(rstd), eps=1e-5, rms=True)  # fmt: skip
    with pytest.raises(ValueError, match="rstd"):
        gk.add_norm_forward(buf(x), buf(x), None, None, buf(out), buf(out), None,
                            buf(make((3,), "float16", device)), eps=1e-5, rms=True)  # fmt: skip
    with pytest.raises(ValueError, match="mean"):
        gk.add_norm_forward(buf(x), buf(x), None, None, buf(out), buf(out), None, buf(rstd), eps=1e-5, rms=False)


def test_layouts_of_one_block_size_do_not_share_an_alignment_specialisation(device):
    """Rows of 48 and of 33 elements take the same tiles; the kernel compiled for the 16-divisible rows (vector
    loads) must not serve the 33-wide ones (on the GPU that read is a misaligned-address fault)."""
    from genesis_kernels import add_norm as an

    for shape in ((5, 48), (3, 2, 33)):
        x, r, dy, ds = (make(shape, "float32", device) for _ in range(4))
        w = make(shape[-1:], "float32", device, low=0.5, high=1.5)
        got = run(x, r, w, None, dy, ds, rms=True, s_dtype=torch.float32)
        want = reference(x, r, w, None, dy, ds, rms=True, s_dtype=torch.float32)
        assert rel_err(got["y"], want["y"]) < REL["float32"]
    keys = [k for k in an._FWD.cache if isinstance(k, tuple) and len(k) == 3]
    aligned_ints = {k[-1] for k in keys}  # (plan key, aligned pointers, aligned integers)
    assert ("N", "xr", "rr", "sr", "yr") in aligned_ints and () in aligned_ints, keys


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_statistics_not_kept(device, rms):
    """rstd (and mean) None: inference, nothing reads them; s and y are as with them kept."""
    shape = (6, 40)
    x, r = make(shape, "float32", device), make(shape, "float32", device)
    w = make(shape[-1:], "float32", device, low=0.5, high=1.5)
    b = None if rms else make(shape[-1:], "float32", device)
    s, y = poisoned(shape, torch.float32, x.device), poisoned(shape, torch.float32, x.device)
    opt = lambda t: None if t is None else buf(t)
    gk.add_norm_forward(buf(x), buf(r), buf(w), opt(b), buf(s), buf(y), None, None, eps=1e-5, rms=rms)
    sync(x.device.type)
    want_s = x.double().cpu() + r.double().cpu()
    ww, bb = w.double().cpu(), None if b is None else b.double().cpu()
    want_y = (
        torch.nn.functional.rms_norm(want_s, (40,), ww, 1e-5)
        if rms
        else torch.nn.functional.layer_norm(want_s, (40,), ww, bb, 1e-5)
    )
    assert rel_err(s, want_s) < REL["float32"] and rel_err(y, want_y) < REL["float32"]
    with pytest.raises(ValueError, match="mean without rstd"):
        gk.add_norm_forward(buf(x), buf(r), buf(w), opt(b), buf(s), buf(y), buf(s[:, 0]), None, eps=1e-5, rms=rms)
