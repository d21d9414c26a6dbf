"""Multi-tensor optimizer kernels (SGD, Adam / AdamW, total norm, clip) against torch.optim's per-tensor
rules, run in float64 as the reference; mixed sizes in one launch, each tensor's ragged last chunk."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import Uploads, buf, sync
from torch.optim.adam import adam as torch_adam
from torch.optim.sgd import sgd as torch_sgd

import genesis_kernels as gk
from genesis_kernels import optimizer as gko

# A full chunk plus a ragged one, odd sizes, a single element, an empty tensor.
SHAPES = [(gko.CHUNK + 37,), (3, 37), (1,), (0, 4), (129,)]
GPU_SHAPES = [(4 * gko.CHUNK + 3,), (768, 2304), (1,), (5,), (50304 // 8, 9)]


def _f64(t: torch.Tensor) -> torch.Tensor:
    """A float64 cpu copy (never the tensor itself: ``.double()`` of a float64 tensor is the same tensor)."""
    return t.to("cpu", torch.float64, copy=True)


def _rel(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double().cpu(), expected.double().cpu()
    return float((a - e).norm() / e.norm().clamp_min(1e-300))


def _tensors(shapes, dtype, device, scale=1.0):
    return [(torch.randn(s, dtype=torch.float64) * scale).to(dtype).to(device) for s in shapes]


ADAM_CASES = [
    dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
    dict(lr=2e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    dict(lr=2e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.3, decoupled_weight_decay=True, amsgrad=True),
    dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-4, weight_decay=0.1, maximize=True, amsgrad=True),
]


def _adam_run(device, shapes, dtype, case, on_device_step, steps=3):
    """Three steps of the kernel and of torch.optim.adam's single-tensor path (float64) from the same start."""
    params = _tensors(shapes, dtype, device)
    ref = [_f64(p) for p in params]
    amsgrad = case.get("amsgrad", False)
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    vmax = [torch.zeros_like(p) for p in params] if amsgrad else None
    rm, rv = [torch.zeros_like(p) for p in ref], [torch.zeros_like(p) for p in ref]
    rvmax = [torch.zeros_like(p) for p in ref]
    rsteps = [torch.tensor(0.0, dtype=torch.float64) for _ in ref]
    dsteps = [torch.zeros((), dtype=torch.float32, device=device) for _ in params]
    up = Uploads(device)
    for k in range(1, steps + 1):
        grads = _tensors(shapes, dtype, device)
        gk.optimizer.adam(
            [buf(p) for p in params],
            [buf(g) for g in grads],
            [buf(t) for t in m],
            [buf(t) for t in v],
            [buf(t) for t in vmax] if vmax is not None else None,
            steps=[buf(s) for s in dsteps] if on_device_step else None,
            step=None if on_device_step else float(k),
            lr=case["lr"],
            beta1=case["betas"][0],
            beta2=case["betas"][1],
            eps=case["eps"],
            weight_decay=case["weight_decay"],
            decoupled=case.get("decoupled_weight_decay", False),
            maximize=case.get("maximize", False),
            upload=up,
        )
        torch_adam(
            ref,
            [_f64(g) for g in grads],
            rm,
            rv,
            rvmax,
            rsteps,
            foreach=False,
            amsgrad=amsgrad,
            beta1=case["betas"][0],
            beta2=case["betas"][1],
            lr=case["lr"],
            weight_decay=case["weight_decay"],
            eps=case["eps"],
            maximize=case.get("maximize", False),
            decoupled_weight_decay=case.get("decoupled_weight_decay", False),
        )
    sync(device)
    if on_device_step:
        assert all(float(s) == steps for s in dsteps)
    return params, ref, (m, rm), (v, rv)


@pytest.mark.parametrize("case", ADAM_CASES, ids=["adam", "decay", "adamw-amsgrad", "maximize-amsgrad"])
@pytest.mark.parametrize("on_device_step", [True, False], ids=["device-step", "host-step"])
def test_adam_matches_torch(device: str, case: dict, on_device_step: bool) -> None:
    params, ref, (m, rm), (v, rv) = _adam_run(device, SHAPES, torch.float32, case, on_device_step)
    for gots, wants in ((params, ref), (m, rm), (v, rv)):
        _assert_close_per_tensor(gots, wants, 1e-5)


def _assert_close_per_tensor(gots, wants, rtol: float) -> None:
    """Each tensor within ``rtol`` of its reference, relative to the reference's norm, with a floor at
    ``rtol`` x the RMS of all the references of its kind: a one-element moment whose terms cancel
    (g + weight_decay * p near zero) carries its terms' fp32 rounding, not a fraction of its value."""
    every = torch.cat([w.double().cpu().flatten() for w in wants])
    rms = float(every.norm()) / max(every.numel(), 1) ** 0.5
    for got, want in zip(gots, wants):
        if want.numel():
            a, e = got.double().cpu(), want.double().cpu()
            assert float((a - e).norm()) <= rtol * max(float(e.norm()), rms * want.numel() ** 0.5)


def test_adam_float64_agrees_to_rounding(device: str) -> None:
    params, ref, _, _ = _adam_run(device, SHAPES, torch.float64, ADAM_CASES[2], True)
    for got, want in zip(params, ref):
        if want.numel():
            assert _rel(got, want) < 1e-13


@pytest.mark.gpu_tier
def test_adam_large_mixed_sizes_gpu(device: str) -> None:
    params, ref, _, _ = _adam_run(device, GPU_SHAPES, torch.float32, ADAM_CASES[2], True)
    for got, want in zip(params, ref):
        assert _rel(got, want) < 1e-5


@pytest.mark.parametrize("pdtype", [torch.bfloat16, torch.float16])
def test_adam_master_weights_update_fp32_copy_and_cast_back(device: str, pdtype: torch.dtype) -> None:
    shapes = [(gko.CHUNK + 3,), (5, 7)]
    master = _tensors(shapes, torch.float32, device)
    params = [w.to(pdtype) for w in master]
    ref = [_f64(w) for w in master]
    m = [torch.zeros_like(w) for w in master]
    v = [torch.zeros_like(w) for w in master]
    rm, rv = [torch.zeros_like(p) for p in ref], [torch.zeros_like(p) for p in ref]
    rsteps = [torch.tensor(0.0, dtype=torch.float64) for _ in ref]
    dsteps = [torch.zeros((), device=device) for _ in ref]
    up = Uploads(device)
    for _ in range(3):
        grads = _tensors(shapes, pdtype, device)
        gk.optimizer.adam(
            [buf(p) for p in params],
            [buf(g) for g in grads],
            [buf(t) for t in m],
            [buf(t) for t in v],
            None,
            steps=[buf(s) for s in dsteps],
            masters=[buf(w) for w in master],
            lr=1e-2,
            beta1=0.9,
            beta2=0.999,
            eps=1e-8,
            weight_decay=0.01,
            decoupled=True,
            upload=up,
        )
        torch_adam(
            ref, [_f64(g) for g in grads], rm, rv, [], rsteps, foreach=False, amsgrad=False,
            beta1=0.9, beta2=0.999, lr=1e-2, weight_decay=0.01, eps=1e-8, maximize=False,
            decoupled_weight_decay=True,
        )  # fmt: skip
    sync(device)
    for w, p, want in zip(master, params, ref):
        assert _rel(w, want) < 1e-5  # the master copy keeps fp32 accuracy
        assert torch.equal(p.cpu(), w.cpu().to(pdtype))  # the parameter is the master rounded


def test_adam_grad_scale_unscales_and_found_inf_skips(device: str) -> None:
    shapes = [(40,), (3, 3)]
    params = _tensors(shapes, torch.float32, device)
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    steps = [torch.zeros((), device=device) for _ in params]
    grads = _tensors(shapes, torch.float32, device)
    scaled = [g * 1024 for g in grads]
    scale = torch.tensor(1024.0, device=device)
    up = Uploads(device)
    kwargs = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, upload=up)
    before = [p.clone() for p in params]
    found = torch.tensor(1.0, device=device)
    gk.optimizer.adam(
        [buf(p) for p in params],
        [buf(g) for g in scaled],
        [buf(t) for t in m],
        [buf(t) for t in v],
        None,
        steps=[buf(s) for s in steps],
        grad_scale=buf(scale),
        found_inf=buf(found),
        **kwargs,
    )
    sync(device)
    assert all(torch.equal(a, b) for a, b in zip(params, before)) and all(float(s) == 0 for s in steps)
    found.zero_()
    gk.optimizer.adam(
        [buf(p) for p in params],
        [buf(g) for g in scaled],
        [buf(t) for t in m],
        [buf(t) for t in v],
        None,
        steps=[buf(s) for s in steps],
        grad_scale=buf(scale),
        found_inf=buf(found),
        **kwargs,
    )
    ref = [_f64(b) for b in before]
    torch_adam(
        ref, [_f64(g) for g in grads], [torch.zeros_like(r) for r in ref],
        [torch.zeros_like(r) for r in ref], [], [torch.tensor(0.0) for _ in ref], foreach=False,
        amsgrad=False, beta1=0.9, beta2=0.999, lr=1e-2, weight_decay=0.0, eps=1e-8, maximize=False,
    )  # fmt: skip
    sync(device)
    for p, want, s, g, gs in zip(params, ref, steps, grads, scaled):
        assert _rel(p, want) < 1e-5 and float(s) == 1
        assert _rel(gs, g) < 1e-6  # the gradient is stored back unscaled, as torch's fused Adam does


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1),
    dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True),
]


@pytest.mark.parametrize("case", SGD_CASES, ids=["plain", "momentum", "dampening-decay", "nesterov-maximize"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sgd_matches_torch(device: str, case: dict, dtype: torch.dtype) -> None:
    params = _tensors(SHAPES, dtype, device)
    ref = [_f64(p) for p in params]
    momentum = case.get("momentum", 0.0)
    bufs = [torch.full_like(p, float("nan")) for p in params]  # poison: the first step must overwrite
    rbufs: list = [None] * len(ref)
    up = Uploads(device)
    for k in range(3):
        grads = _tensors(SHAPES, dtype, device)
        gk.optimizer.sgd(
            [buf(p) for p in params],
            [buf(g) for g in grads],
            [buf(b) for b in bufs] if momentum else None,
            first_step=[k == 0] * len(params),
            lr=case["lr"],
            momentum=momentum,
            dampening=case.get("dampening", 0.0),
            weight_decay=case.get("weight_decay", 0.0),
            nesterov=case.get("nesterov", False),
            maximize=case.get("maximize", False),
            upload=up,
        )
        torch_sgd(
            ref,
            [_f64(g) for g in grads],
            rbufs,
            foreach=False,
            weight_decay=case.get("weight_decay", 0.0),
            momentum=momentum,
            lr=case["lr"],
            dampening=case.get("dampening", 0.0),
            nesterov=case.get("nesterov", False),
            maximize=case.get("maximize", False),
        )
    sync(device)
    # Element-wise, with an absolute floor: the data are O(1), and a one-element tensor that three
    # steps bring near zero has a relative error no kernel can bound (its rounding is relative to
    # the values that cancelled, not to the small result).
    tol = 1e-13 if dtype == torch.float64 else 1e-6
    for got, want in [*zip(params, ref), *(zip(bufs, rbufs) if momentum else ())]:
        torch.testing.assert_close(got.double().cpu(), want, rtol=tol, atol=tol)


def test_sgd_master_weights(device: str) -> None:
    shapes = [(gko.CHUNK + 9,), (4, 4)]
    master = _tensors(shapes, torch.float32, device)
    params = [w.to(torch.bfloat16) for w in master]
    bufs = [torch.empty_like(w) for w in master]
    ref = [_f64(w) for w in master]
    rbufs: list = [None, None]
    up = Uploads(device)
    for k in range(2):
        grads = _tensors(shapes, torch.bfloat16, device)
        gk.optimizer.sgd(
            [buf(p) for p in params],
            [buf(g) for g in grads],
            [buf(b) for b in bufs],
            first_step=[k == 0] * 2,
            masters=[buf(w) for w in master],
            lr=0.1,
            momentum=0.9,
            upload=up,
        )
        torch_sgd(
            ref, [_f64(g) for g in grads], rbufs, foreach=False, weight_decay=0.0, momentum=0.9,
            lr=0.1, dampening=0.0, nesterov=False, maximize=False,
        )  # fmt: skip
    sync(device)
    for w, p, want in zip(master, params, ref):
        assert _rel(w, want) < 1e-6
        assert torch.equal(p.cpu(), w.cpu().to(torch.bfloat16))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_total_norm_of_mixed_dtypes_and_clip(device: str, norm_type: float) -> None:
    f32 = _tensors(SHAPES, torch.float32, device)
    bf16 = _tensors([(33,), (gko.CHUNK + 1,)], torch.bfloat16, device)
    out = torch.full((), float("nan"), device=device)
    up = Uploads(device)
    gk.optimizer.total_norm([[buf(t) for t in f32], [buf(t) for t in bf16]], buf(out), norm_type=norm_type, upload=up)
    flat = torch.cat([_f64(t).reshape(-1) for t in f32 + bf16])
    want = torch.linalg.vector_norm(flat, norm_type)
    sync(device)
    assert _rel(out, want) < 1e-5
    # clip to a quarter of the norm: every gradient shrinks by max_norm / (norm + 1e-6)
    before = [_f64(t) for t in f32]
    gk.optimizer.clip_by_total_norm([buf(t) for t in f32], buf(out), max_norm=float(want) / 4, upload=up)
    sync(device)
    coef = (float(want) / 4) / (float(out) + 1e-6)
    for got, b in zip(f32, before):
        if b.numel():
            assert _rel(got, b * coef) < 1e-6


def test_clip_leaves_gradients_alone_below_max_norm_and_rounds_like_torch_in_bf16(device: str) -> None:
    grads = _tensors([(70,), (3, 5)], torch.bfloat16, device)
    norm = torch.linalg.vector_norm(torch.cat([g.float().reshape(-1) for g in grads])).to(torch.bfloat16)
    up = Uploads(device)
    before = [g.clone() for g in grads]
    gk.optimizer.clip_by_total_norm([buf(g) for g in grads], buf(norm), max_norm=1e6, upload=up)
    sync(device)
    assert all(torch.equal(a, b) for a, b in zip(grads, before))
    gk.optimizer.clip_by_total_norm([buf(g) for g in grads], buf(norm), max_norm=0.5, upload=up)
    coef = (torch.full_like(norm, 0.5) / (norm + 1e-6)).clamp(max=1.0)  # torch's own bf16 arithmetic
    sync(device)
    for got, b in zip(grads, before):
        assert _rel(got, b * coef) < 1e-2


def test_launchers_refuse_mismatched_or_strided_tensors() -> None:
    p = torch.randn(4, 6)
    up = Uploads("cpu")
    with pytest.raises(ValueError, match="contiguous"):
        gk.optimizer.sgd([buf(p.t())], [buf(p.t().contiguous())], None, lr=0.1, upload=up)
    with pytest.raises(ValueError, match="shape"):
        gk.optimizer.sgd([buf(p)], [buf(torch.randn(5))], None, lr=0.1, upload=up)
    with pytest.raises(TypeError, match="float32"):
        gk.optimizer.sgd([buf(p)], [buf(p.double())], None, lr=0.1, upload=up)
    with pytest.raises(ValueError, match="norm_type"):
        gk.optimizer.total_norm([[buf(p)]], buf(torch.empty(())), norm_type=0.0, upload=up)


def test_pack_gives_each_program_one_chunk_of_one_tensor() -> None:
    table, base, programs, key = gko.pack([gko.CHUNK * 2 + 1, 11, 0, 12, 5, 13], 2)
    assert base == 6 and programs == 4
    assert table[:base].tolist() == [gko.CHUNK * 2 + 1, 11, 0, 12, 5, 13]
    assert key == gko.pack([gko.CHUNK * 2 + 1, 11, 0, 12, 5, 13], 2)[3] != gko.pack([1, 11, 0, 12, 5, 13], 2)[3]
    assert table[base:].reshape(-1, 2).tolist() == [[0, 0], [0, gko.CHUNK], [0, 2 * gko.CHUNK], [2, 0]]
