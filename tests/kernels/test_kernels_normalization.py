"""LayerNorm / RMSNorm kernels (forward, fused backward, partial-sum reduction) against torch in float64."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, buf, make, sync

import genesis_kernels as gk
from genesis_kernels import normalization as kn

REL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 1e-2}


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double().cpu(), expected.double().cpu()
    assert torch.isfinite(a).all(), "non-finite values (unwritten output?)"
    # A reference that is zero up to roundoff (dweight of one-element rows) is compared absolutely.
    return float((a - e).norm() / e.norm().clamp_min(1e-6))


def poisoned(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def run(
    x: torch.Tensor,
    w: torch.Tensor | None,
    b: torch.Tensor | None,
    dy: torch.Tensor,
    *,
    rms: bool,
    eps: float = 1e-5,
    dx: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Forward and backward through the kernels; outputs poisoned first so unwritten elements show."""
    n, rows = x.shape[-1], x.shape[:-1]
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    y = poisoned(x.shape, x.dtype, x.device)
    mean = None if rms else poisoned(rows, acc, x.device)
    rstd = poisoned(rows, acc, x.device)
    gk.norm_forward(
        buf(x),
        None if w is None else buf(w),
        None if b is None else buf(b),
        buf(y),
        None if mean is None else buf(mean),
        buf(rstd),
        eps=eps,
        rms=rms,
    )
    dx = poisoned(x.shape, x.dtype, x.device) if dx is None else dx.fill_(float("nan"))
    dw = None if w is None else poisoned((n,), w.dtype, x.device)
    db = None if b is None else poisoned((n,), b.dtype, x.device)
    gk.norm_backward(
        buf(x),
        buf(dy),
        None if w is None else buf(w),
        None if mean is None else buf(mean),
        buf(rstd),
        buf(dx),
        None if dw is None else buf(dw),
        None if db is None else buf(db),
        rms=rms,
    )
    sync(x.device.type)
    out = {"y": y, "rstd": rstd, "dx": dx}
    if mean is not None:
        out["mean"] = mean
    if dw is not None:
        out["dw"] = dw
    if db is not None:
        out["db"] = db
    return out


def reference(x, w, b, dy, *, rms: bool, eps: float = 1e-5) -> dict[str, torch.Tensor]:
    """float64 torch: the output, the statistics and every gradient."""
    xx = x.detach().double().cpu().requires_grad_()
    ww = None if w is None else w.detach().double().cpu().requires_grad_()
    bb = None if b is None else b.detach().double().cpu().requires_grad_()
    n = x.shape[-1]
    if rms:
        y = torch.nn.functional.rms_norm(xx, (n,), ww, eps)
    else:
        y = torch.nn.functional.layer_norm(xx, (n,), ww, bb, eps)
    y.backward(dy.double().cpu())
    xd = xx.detach()
    var = (xd * xd).mean(-1) if rms else xd.var(-1, unbiased=False)
    ref = {"y": y.detach(), "rstd": (var + eps).rsqrt(), "dx": xx.grad, "mean": xd.mean(-1)}
    if ww is not None:
        ref["dw"] = ww.grad
    if bb is not None:
        ref["db"] = bb.grad
    return ref


def check(got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], dtype: str) -> None:
    for name, value in got.items():
        if value.numel() == 0:
            continue
        # The statistics are fp32 (fp64) whatever the input: held to fp32's bound.
        bound = REL["float32"] if name in ("mean", "rstd") and dtype != "float64" else REL[dtype]
        err = rel_err(value, ref[name])
        assert err <= bound, f"{name}: rel error {err:.3g} > {bound:g}"


SHAPES = [(1, 1), (7, 13), (3, 37), (2, 3, 129), (5, 1000), (1, 2053)]


# One-element rows are left out here: their dx is all cancellation (RMS: eps / (x^2 + eps) of its terms;
# LayerNorm: exactly 0, the difference of two equal terms), beyond a relative bound;
# test_rms_norm_one_element and test_layer_norm_one_element check them.
FP32_CASES = [(shape, rms) for shape in SHAPES for rms in (False, True) if shape[-1] != 1]


@pytest.mark.parametrize("shape,rms", FP32_CASES)
def test_norm_fp32(device: str, shape: tuple[int, ...], rms: bool) -> None:
    x, dy = make(shape, "float32", device), make(shape, "float32", device)
    w = make(shape[-1:], "float32", device)
    b = None if rms else make(shape[-1:], "float32", device)
    check(run(x, w, b, dy, rms=rms), reference(x, w, b, dy, rms=rms), "float32")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
@pytest.mark.parametrize("rms", [False, True])
def test_norm_dtypes(device: str, dtype: str, rms: bool) -> None:
    shape = (6, 77)
    x, dy = make(shape, dtype, device), make(shape, dtype, device)
    w = make(shape[-1:], dtype, device)
    b = None if rms else make(shape[-1:], dtype, device)
    check(run(x, w, b, dy, rms=rms), reference(x, w, b, dy, rms=rms), dtype)


@pytest.mark.parametrize("rms", [False, True])
def test_norm_bf16_input_fp32_weight(device: str, rms: bool) -> None:
    x, dy = make((5, 96), "bfloat16", device), make((5, 96), "bfloat16", device)
    w = make((96,), "float32", device)
    b = None if rms else make((96,), "float32", device)
    got = run(x, w, b, dy, rms=rms)
    assert got["y"].dtype == torch.bfloat16 and got["dw"].dtype == torch.float32
    check(got, reference(x, w, b, dy, rms=rms), "bfloat16")


@pytest.mark.parametrize("affine", ["none", "weight", "bias"])
def test_layer_norm_optional_affine(device: str, affine: str) -> None:
    x, dy = make((4, 33), "float32", device), make((4, 33), "float32", device)
    w = make((33,), "float32", device) if affine == "weight" else None
    b = make((33,), "float32", device) if affine == "bias" else None
    check(run(x, w, b, dy, rms=False), reference(x, w, b, dy, rms=False), "float32")


def test_rms_norm_without_weight(device: str) -> None:
    x, dy = make((4, 33), "float32", device), make((4, 33), "float32", device)
    check(run(x, None, None, dy, rms=True, eps=1e-6), reference(x, None, None, dy, rms=True, eps=1e-6), "float32")


def test_rms_norm_one_element(device: str) -> None:
    """Rows of one element: dx = w*dy*rstd*(1 - xhat^2) cancels to eps/(x^2+eps) of its terms, so the
    formula is checked in float64 (condition up to ~1e6 for |x| <= 3, eps 1e-5)."""
    x, dy, w = make((4, 1), "float64", device), make((4, 1), "float64", device), make((1,), "float64", device)
    got, ref = run(x, w, None, dy, rms=True), reference(x, w, None, dy, rms=True)
    for name in ("y", "rstd", "dx", "dw"):
        assert rel_err(got[name], ref[name]) <= 1e-9, name


def test_layer_norm_one_element(device: str) -> None:
    """Rows of one element: y = bias and dx = 0, as w*dy*rstd minus its own mean. The kernel may
    compute that difference with one fused multiply-add (one operand unrounded), so dx is held to fp32's
    unit roundoff of the terms it cancels, |w*dy|*rstd (rstd = 1/sqrt(eps) here), not to a relative bound
    against 0; everything else to the usual fp32 bound."""
    x, dy, w, b = (make(s, "float32", device) for s in ((5, 1), (5, 1), (1,), (1,)))
    got, ref = run(x, w, b, dy, rms=False), reference(x, w, b, dy, rms=False)
    for name in ("y", "mean", "rstd", "dw", "db"):
        assert rel_err(got[name], ref[name]) <= REL["float32"], name
    terms = (w.double() * dy.double()).abs().cpu() * ref["rstd"][:, None]
    assert (got["dx"].double().cpu().abs() <= 2.0**-24 * 2 * terms).all(), (got["dx"], terms)


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("layout", ["column_stride", "row_stride"])
def test_norm_strided(device: str, rms: bool, layout: str) -> None:
    wide = make((9, 2 * 41), "float32", device)
    x = wide[:, ::2] if layout == "column_stride" else wide[:, :41]
    dy = make((41, 9), "float32", device).t()  # column stride 9
    w = make((41,), "float32", device)
    b = None if rms else make((41,), "float32", device)
    dx = torch.empty((9, 82), device=device)[:, 1::2]
    check(run(x, w, b, dy, rms=rms, dx=dx), reference(x, w, b, dy, rms=rms), "float32")


@pytest.mark.parametrize("rms", [False, True])
def test_norm_layouts_of_one_shape_interleaved(device: str, rms: bool) -> None:
    """The launch layout is cached per (shape, strides): calls alternating between a contiguous input
    and strided ones of the same shape each get their own rows and strides."""
    w = make((41,), "float32", device)
    b = None if rms else make((41,), "float32", device)
    for _ in range(2):
        for layout in ("contiguous", "column_stride", "row_stride", "transposed_dy"):
            wide = make((9, 82), "float32", device)
            x = (
                wide[:, :41]
                if layout == "row_stride"
                else wide[:, ::2]
                if layout == "column_stride"
                else wide[:, :41].contiguous()
            )
            dy = make((41, 9), "float32", device).t() if layout == "transposed_dy" else make((9, 41), "float32", device)
            check(run(x, w, b, dy, rms=rms), reference(x, w, b, dy, rms=rms), "float32")


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("n", [33, 47, 64, 200])
def test_norm_long_rows(device: str, monkeypatch: pytest.MonkeyPatch, rms: bool, n: int) -> None:
    """The chunked path (rows longer than one block), with the thresholds lowered so shapes stay small.

    The data has a large common offset, which a one-read sum-of-squares variance would lose.
    """
    monkeypatch.setattr(kn, "_ONE_PASS_MAX", 32)
    monkeypatch.setattr(kn, "_CHUNK", 16)
    x = make((5, n), "float32", device) + (0 if rms else 100.0)
    dy = make((5, n), "float32", device)
    w, b = make((n,), "float32", device), None if rms else make((n,), "float32", device)
    check(run(x, w, b, dy, rms=rms), reference(x, w, b, dy, rms=rms), "float32")


def test_norm_many_rows_few_programs(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several row tiles per backward program, the last one ragged: the partial sums add up."""
    monkeypatch.setattr(kn, "sm_count", lambda: 1)
    x, dy = make((203, 24), "float32", device), make((203, 24), "float32", device)
    w, b = make((24,), "float32", device), make((24,), "float32", device)
    check(run(x, w, b, dy, rms=False), reference(x, w, b, dy, rms=False), "float32")


@pytest.mark.parametrize("rms", [False, True])
def test_norm_empty(device: str, rms: bool) -> None:
    x, dy = make((0, 7), "float32", device), make((0, 7), "float32", device)
    w = make((7,), "float32", device)
    b = None if rms else make((7,), "float32", device)
    got = run(x, w, b, dy, rms=rms)
    assert got["y"].shape == (0, 7) and torch.equal(got["dw"].cpu(), torch.zeros(7))
    if not rms:
        assert torch.equal(got["db"].cpu(), torch.zeros(7))


def test_norm_bad_arguments(device: str) -> None:
    x = make((3, 5), "float32", device)
    y, rstd = torch.empty_like(x), torch.empty(3, device=device)
    with pytest.raises(ValueError, match="weight"):
        gk.norm_forward(buf(x), buf(torch.ones(4, device=device)), None, buf(y), buf(rstd), buf(rstd), eps=1e-5)
    with pytest.raises(ValueError, match="shape mismatch"):
        gk.norm_forward(buf(x), None, None, buf(y[:2]), buf(rstd), buf(rstd), eps=1e-5)
    grid = make((4, 6, 5), "float32", device)[:, :3]  # leading dims with no single row stride
    with pytest.raises(ValueError, match="collapse"):
        gk.norm_forward(buf(grid), None, None, buf(grid.clone()), buf(rstd), buf(rstd), eps=1e-5)


@pytest.mark.gpu_tier
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(8192, 4096), (3, 65537), (1031, 12289), (4097, 127)])
@pytest.mark.parametrize("rms", [False, True])
def test_norm_big(device: str, dtype: str, shape: tuple[int, int], rms: bool) -> None:
    x, dy = make(shape, dtype, device), make(shape, dtype, device)
    w = make(shape[-1:], "float32", device).to(TORCH_DTYPES[dtype])
    b = None if rms else make(shape[-1:], dtype, device)
    check(run(x, w, b, dy, rms=rms), reference(x, w, b, dy, rms=rms), dtype)


def test_layer_norm_parameter_gradients_in_one_or_two_column_sum_launches(device: str) -> None:
    """dweight and dbias of one dtype are summed by one launch (the second output strided here); of two
    dtypes by one launch each. Both agree with float64."""
    x, dy = make((37, 50), "bfloat16", device), make((37, 50), "bfloat16", device)
    w, b = make((50,), "float32", device), make((50,), "float32", device)
    y, mean, rstd = torch.empty_like(x), torch.empty(37, device=device), torch.empty(37, device=device)
    gk.norm_forward(buf(x), buf(w), buf(b), buf(y), buf(mean), buf(rstd), eps=1e-5)  # (buffers: no refs held)
    ref = reference(x, w, b, dy, rms=False)
    for b_dtype, b_stride in (("float32", 2), ("bfloat16", 1)):
        dw = poisoned((50,), torch.float32, x.device)
        db_store = poisoned((50 * b_stride,), getattr(torch, b_dtype), x.device)
        db = db_store[::b_stride]
        dx = poisoned(x.shape, x.dtype, x.device)
        gk.norm_backward(buf(x), buf(dy), buf(w), buf(mean), buf(rstd), buf(dx), buf(dw), buf(db))
        sync(x.device.type)
        assert rel_err(dw, ref["dw"]) <= REL["float32"]
        assert rel_err(db, ref["db"]) <= REL[b_dtype]
        if b_stride == 2:  # the gaps of the strided output are left alone
            assert torch.isnan(db_store[1::2].float()).all()
