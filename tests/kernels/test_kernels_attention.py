"""Flash attention forward / backward (and the split-KV decode path) against a float64 torch reference."""

from __future__ import annotations

import ctypes
import importlib
import math
from collections.abc import Callable

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk
from genesis_kernels.runtime import PlanTable

TD = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
TOL = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 1e-2}


def _probabilities(q, k, mask, causal, scale, keep, p):
    """softmax(q k^T scale + mask) (dropped by ``keep`` and rescaled) in float64; fully masked rows: zeros."""
    kk = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
    s = q @ kk.transpose(-2, -1) * scale
    if causal:
        lq, lk = s.shape[-2:]
        s = s.masked_fill(~torch.ones(lq, lk, dtype=torch.bool, device=s.device).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    dead = (s == float("-inf")).all(-1, keepdim=True)
    w = torch.softmax(s.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    if keep is not None:
        w = w * keep / (1 - p)
    return w


def _reference(q, k, v, mask, causal, scale, keep, p):
    """The attention output in float64: probabilities times v."""
    return _probabilities(q, k, mask, causal, scale, keep, p) @ v.repeat_interleave(q.shape[1] // k.shape[1], 1)


def _magnitudes(q, k, v, dout, mask, causal, scale, keep, p):
    """Norms of what each result is summed from, term by term in absolute value: |P||V| for the output,
    |P|^T|dO| for dV, |dS||K| and |dS|^T|Q| for dQ and dK with |dS| <= |P| (|dO||V|^T + delta's terms).
    Rounding is relative to these: the results themselves cancel (a query that sees one key has
    dS = P (dP - delta) = 0 exactly, and hundreds of averaged zero-mean values are small)."""
    group = q.shape[1] // k.shape[1]
    w = _probabilities(q, k, mask, causal, scale, keep, p).abs()
    kk, vv = k.abs().repeat_interleave(group, 1), v.abs().repeat_interleave(group, 1)
    dp = dout.abs() @ vv.transpose(-2, -1)
    ds = w * (dp + (w * dp).sum(-1, keepdim=True))

    def per_kv_head(t):
        return t.unflatten(1, (k.shape[1], group)).sum(2)

    out = (w @ vv).norm()
    dq = (scale * ds @ kk).norm()
    dk = per_kv_head(scale * ds.transpose(-2, -1) @ q.abs()).norm()
    dv = per_kv_head(w.transpose(-2, -1) @ dout.abs()).norm()
    return out.item(), (dq.item(), dk.item(), dv.item())


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    a, ref = a.double().cpu(), ref.double().cpu()
    assert not a.isnan().any(), "NaN in the result (an element left unwritten?)"
    return ((a - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _check(
    device,
    b,
    hq,
    hkv,
    lq,
    lk,
    d,
    dtype="float32",
    *,
    causal=False,
    mask=None,
    p=0.0,
    layout="bhld",
    scale=None,
    seed=7,
    offset=12,
):
    dt = TD[dtype]

    def t(h, length):
        if layout == "blhd":  # (B, L, H, D) memory seen as (B, H, L, D), as torch's sdpa accepts it
            return make((b, length, h, d), dtype, device, low=-2, high=2).transpose(1, 2)
        return make((b, h, length, d), dtype, device, low=-2, high=2)

    q, k, v = t(hq, lq), t(hkv, lk), t(hkv, lk)
    scale = 1 / math.sqrt(d) if scale is None else scale
    full_mask = None if mask is None else mask.to(device).expand(b, hq, lq, lk)
    mbuf = None if full_mask is None else buf(full_mask)
    out = torch.full((b, hq, lq, d), float("nan"), dtype=dt, device=device)
    lse = torch.full((b, hq, lq), float("nan"), device=device)
    gk.attention_forward(buf(q), buf(k), buf(v), buf(out), buf(lse), mask=mbuf, causal=causal, scale=scale,
                         dropout_p=p, seed=seed, offset=offset)  # fmt: skip
    keep = None
    if p > 0:  # the keep mask from the random family's stream: counter offset + flat (b, h, i, j) index
        u = torch.empty((b, hq, lq, lk), device=device)
        gk.rand(buf(u), seed, offset)
        keep = (u >= p).double()
    dout = make((b, hq, lq, d), dtype, device, low=-1, high=1)
    grads = [torch.full(x.shape, float("nan"), dtype=dt, device=device) for x in (q, k, v)]
    gk.attention_backward(buf(q), buf(k), buf(v), buf(out), buf(dout), buf(lse), *map(buf, grads), mask=mbuf,
                          causal=causal, scale=scale, dropout_p=p, seed=seed, offset=offset)  # fmt: skip
    sync(device)
    qd, kd, vd = (x.double().detach().requires_grad_() for x in (q, k, v))
    ref = _reference(qd, kd, vd, full_mask, causal, scale, keep, p)
    with torch.no_grad():
        out_terms, grad_terms = _magnitudes(qd, kd, vd, dout.double(), full_mask, causal, scale, keep, p)
    if lq * d:
        _rel(out, ref)  # (its NaN check)
        err = (out.double().cpu() - ref.detach().cpu()).norm().item()
        assert err <= TOL[dtype] * max(ref.norm().item(), out_terms)
    if ref.numel():
        ref.backward(dout.double())
        for got, want, terms in zip(grads, (qd.grad, kd.grad, vd.grad), grad_terms):
            if want.numel() and terms > 0:
                _rel(got, want)  # (its NaN check)
                err = (got.double().cpu() - want.cpu()).norm().item()
                assert err <= TOL[dtype] * max(want.norm().item(), terms)
            elif want.numel():  # nothing flows there (masked, dropped, or no query): exactly zero
                assert got.abs().max().item() == 0
    return out, lse


@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,causal",
    [
        (1, 2, 2, 20, 24, 16, False),
        (1, 2, 1, 33, 17, 32, True),  # GQA, causal with Lq > Lk (top-left alignment)
        (1, 1, 1, 17, 40, 20, True),  # head dim 20 padded to 32, causal with Lq < Lk
        (2, 3, 3, 1, 5, 16, False),
    ],
)
def test_attention_forward_backward(device, b, hq, hkv, lq, lk, d, causal):
    _check(device, b, hq, hkv, lq, lk, d, causal=causal)


def test_attention_bool_mask_with_fully_masked_row(device):
    mask = torch.rand(7, 19) < 0.6
    mask[3] = False  # nothing visible: zeros out, zero gradients
    out, lse = _check(device, 1, 2, 2, 7, 19, 16, mask=mask)
    assert out[:, :, 3].abs().max().item() == 0 and torch.isinf(lse[:, :, 3]).all()


def test_attention_float_mask_broadcast_and_transposed_layout(device):
    mask = torch.randn(2, 1, 9, 21)
    mask[..., :3] = float("-inf")
    _check(device, 2, 2, 1, 9, 21, 32, mask=mask, layout="blhd")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_attention_half_precision(device, dtype):
    _check(device, 1, 2, 2, 24, 24, 32, dtype, causal=True)


def test_attention_negative_scale(device):
    # the forward's row max over raw products (the scale folded into exp2) holds for a positive scale only
    _check(device, 1, 2, 2, 9, 13, 16, causal=True, scale=-0.3)
    _check(device, 1, 2, 1, 10, 70, 16, scale=-0.2)


def test_attention_dropout_regenerates_the_mask(device):
    _check(device, 1, 2, 1, 12, 20, 16, p=0.3)


def test_attention_backward_plan_takes_each_calls_buffers_and_dropout_position(device):
    """The backward's launches are planned once per signature: later calls of the same shapes (fresh
    buffers, another point of the dropout stream) fill in their own addresses, seed and offset."""
    _check(device, 1, 2, 1, 12, 20, 16, p=0.3, seed=3, offset=0)  # plans this signature (or reuses it)
    planned = len(att._BWD_PLANS)
    for seed, offset in ((3, 500), (11, 12), (3, 0)):
        _check(device, 1, 2, 1, 12, 20, 16, p=0.3, seed=seed, offset=offset)
    assert len(att._BWD_PLANS) == planned


def test_attention_decode_split_kv(device):
    # 3 queries against 600 keys: the split-KV path (partials combined), causal and a bool mask
    mask = torch.rand(3, 600) < 0.7
    _check(device, 1, 2, 1, 3, 600, 16, mask=mask)
    _check(device, 1, 1, 1, 2, 520, 16, causal=True)


def test_attention_empty(device):
    _check(device, 1, 2, 2, 0, 5, 16)
    out, _ = _check(device, 1, 2, 2, 4, 0, 16)  # no keys: zeros, as torch's math path
    assert out.abs().max().item() == 0


def test_attention_bad_shapes(device):
    q = torch.zeros(1, 3, 4, 16, device=device)
    kv = torch.zeros(1, 2, 4, 16, device=device)
    lse = torch.zeros(1, 3, 4, device=device)
    with pytest.raises(ValueError, match="not a multiple"):
        gk.attention_forward(buf(q), buf(kv), buf(kv), buf(q), buf(lse), scale=1.0)


@pytest.mark.gpu_tier
@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,dtype,causal",
    [
        (2, 4, 2, 300, 300, 96, "bfloat16", True),
        (1, 4, 4, 1000, 777, 128, "bfloat16", False),
        (1, 2, 1, 513, 1024, 64, "float16", True),
        (1, 2, 2, 200, 333, 128, "float32", False),
        (1, 2, 2, 130, 130, 256, "bfloat16", True),
        (1, 2, 2, 100, 90, 40, "bfloat16", False),
    ],
)
def test_attention_gpu_shapes(device, b, hq, hkv, lq, lk, d, dtype, causal):
    _check(device, b, hq, hkv, lq, lk, d, dtype, causal=causal, layout="blhd" if d == 128 else "bhld")


@pytest.mark.gpu_tier
def test_attention_gpu_masks_dropout_decode(device):
    _check(device, 2, 4, 4, 200, 300, 64, "bfloat16", mask=torch.rand(200, 300) < 0.5, p=0.1)
    _check(device, 2, 4, 2, 200, 300, 128, "bfloat16", mask=torch.randn(2, 4, 200, 300))
    _check(device, 2, 8, 2, 1, 4096, 128, "bfloat16")
    _check(device, 2, 8, 8, 16, 3000, 64, "float16", causal=True)


# ---------------------------------------------------------------- the TMA forward (Hopper tensor descriptors)
# The hot case (16-bit, no mask, no dropout, head dim 64 / 128, aligned) runs _attn_fwd_tma_kernel; the
# interpreter executes its descriptors too (zero-filled out-of-bounds rows, clipped stores), so these run on
# both tiers. Which kernel ran is read off the two Kernels' caches, emptied before the call.
att = importlib.import_module("genesis_kernels.attention")


def _routed(monkeypatch) -> Callable[[], str]:
    """Empty both forward kernels' caches; the returned function names the one a call then built."""
    monkeypatch.setattr(att._FWD_TMA_KERNEL, "cache", {})
    monkeypatch.setattr(att._FWD, "cache", {})
    monkeypatch.setattr(att, "_FWD_PLANS", PlanTable())  # (a plan holds its kernel: the call must plan, and so build)

    def which() -> str:
        tma, ptr = bool(att._FWD_TMA_KERNEL.cache), bool(att._FWD.cache)
        assert tma != ptr, f"expected exactly one forward kernel built, got tma={tma} pointer={ptr}"
        return "tma" if tma else "pointer"

    return which


def _forward_reference(q, k, v, causal, scale):
    """Output and natural-log logsumexp per row in float64 (no mask: every row sees a key when Lk > 0)."""
    qd, kd, vd = (t.double().cpu() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    s = qd @ kd.repeat_interleave(group, 1).transpose(-2, -1) * scale
    if causal:
        lq, lk = s.shape[-2:]
        s = s.masked_fill(~torch.ones(lq, lk, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ vd.repeat_interleave(group, 1), torch.logsumexp(s, -1)


def _forward(device, q, k, v, causal, scale=None, **kw):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device=device)
    lse = torch.full(q.shape[:3], float("nan"), device=device)
    gk.attention_forward(buf(q), buf(k), buf(v), buf(out), buf(lse), causal=causal, scale=scale, **kw)
    sync(device)
    return out, lse


def _qkv(device, b, hq, hkv, lq, lk, d, dtype, layout="bhld"):
    def t(h, length):
        if layout == "blhd":  # (B, L, H, D) memory seen as (B, H, L, D): strides no 3-D view could fold
            return make((b, length, h, d), dtype, device, low=-2, high=2).transpose(1, 2)
        return make((b, h, length, d), dtype, device, low=-2, high=2)

    return t(hq, lq), t(hkv, lk), t(hkv, lk)


def _check_tma(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout="bhld", scale=None):
    q, k, v = _qkv(device, b, hq, hkv, lq, lk, d, dtype, layout)
    which = _routed(monkeypatch)
    out, lse = _forward(device, q, k, v, causal, scale)
    assert which() == "tma"
    ref, ref_lse = _forward_reference(q, k, v, causal, 1 / math.sqrt(d) if scale is None else scale)
    assert _rel(out, ref) <= TOL[dtype]
    # lse comes from fp32 scores of the exact 16-bit inputs: far tighter than the output's rounding.
    assert _rel(lse, ref_lse) <= 1e-4
    return out, lse


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,tiles",
    [
        (1, 2, 1, 150, 133, 64, None),  # GQA; ragged Lq and Lk at the table's tiles (one full key block)
        (2, 2, 2, 45, 100, 64, (32, 16, 4, 2, False)),  # many blocks, Lq < Lk, ragged both
        (1, 4, 2, 70, 37, 128, (16, 32, 4, 2, False)),  # BLOCK_N > BLOCK_M, Lq > Lk: rows past Lk see all keys
    ],
)
def test_attention_tma_forward(device, monkeypatch, b, hq, hkv, lq, lk, d, tiles, dtype, causal):
    if tiles is not None:
        monkeypatch.setitem(att._FWD_TMA_CONFIGS, d, tiles)
    _check_tma(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal)


def test_attention_tma_forward_layouts_and_scale(device, monkeypatch):
    # (B, L, H, D) read in place through 4-D descriptors; a negative scale (no raw-max shortcut)
    _check_tma(device, monkeypatch, 2, 4, 2, 33, 47, 64, "bfloat16", True, layout="blhd")
    _check_tma(device, monkeypatch, 1, 2, 2, 20, 29, 64, "float16", False, scale=-0.2)
    # extent-1 batch and head dims with strides TMA could not take: never stepped, so replaced
    q, k, v = (make((1, 1, 24, 64), "bfloat16", device, low=-2, high=2) for _ in range(3))
    q, k, v = (t.as_strided(t.shape, (7, 3, 64, 1)) for t in (q, k, v))
    which = _routed(monkeypatch)
    out, lse = _forward(device, q, k, v, True)
    assert which() == "tma"
    ref, ref_lse = _forward_reference(q, k, v, True, 1 / 8)
    assert _rel(out, ref) <= TOL["bfloat16"] and _rel(lse, ref_lse) <= 1e-4


def test_attention_tma_matches_pointer_kernel(device, monkeypatch):
    q, k, v = _qkv(device, 2, 4, 1, 90, 77, 128, "bfloat16")
    which = _routed(monkeypatch)
    out, lse = _forward(device, q, k, v, True)
    assert which() == "tma"
    monkeypatch.setattr(att, "_FWD_TMA", False)
    which = _routed(monkeypatch)
    out_p, lse_p = _forward(device, q, k, v, True)
    assert which() == "pointer"
    assert _rel(out, out_p) <= 4e-3  # one rounding of P and of the output apart at most
    assert _rel(lse, lse_p) <= 1e-5


def _unaligned(t: torch.Tensor) -> torch.Tensor:
    """The same values at a base address 2 bytes past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 8, dtype=t.dtype, device=t.device)
    view = flat[1 : 1 + t.numel()].view(t.shape)
    view.copy_(t)
    return view


@pytest.mark.parametrize(
    "case", ["hot", "switch_off", "bool_mask", "dropout", "float32", "head_dim_96", "head_dim_32", "unaligned",
             "head_dim_stride", "decode_split", "no_keys"],
)  # fmt: skip
def test_attention_tma_selection(device, monkeypatch, case):
    """The hot case takes the TMA kernel; everything it does not cover keeps the pointer kernel."""
    dtype, d, lq, lk, kw = "bfloat16", 64, 19, 23, {}
    if case == "float32":
        dtype = "float32"
    elif case == "head_dim_96":
        d = 96
    elif case == "head_dim_32":  # a power of two, but not in _FWD_TMA_CONFIGS
        d = 32
    elif case == "decode_split":
        lq, lk = 2, 600
    elif case == "no_keys":
        lk = 0
    q, k, v = _qkv(device, 1, 2, 1, lq, lk, d, dtype)
    if case == "switch_off":
        monkeypatch.setattr(att, "_FWD_TMA", False)
    elif case == "bool_mask":  # all visible: the same result as no mask (the tensor outlives its buffer)
        mask = torch.ones(1, 2, lq, lk, dtype=torch.bool, device=device)
        kw["mask"] = buf(mask)
    elif case == "dropout":
        kw.update(dropout_p=0.2, seed=3)
    elif case == "unaligned":
        q = _unaligned(q)
    elif case == "head_dim_stride":
        k = k.transpose(-2, -1).contiguous().transpose(-2, -1)
    which = _routed(monkeypatch)
    out, lse = _forward(device, q, k, v, True, **kw)
    assert which() == ("tma" if case == "hot" else "pointer")
    if case != "dropout":
        ref, ref_lse = _forward_reference(q, k, v, True, 1 / math.sqrt(d))
        if lk:
            assert _rel(out, ref) <= TOL[dtype] and _rel(lse, ref_lse) <= 1e-4
        else:  # no keys: zeros and lse = +inf
            assert out.abs().max().item() == 0 and torch.isinf(lse).all()


@pytest.mark.gpu_tier
@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,dtype,causal,layout",
    [
        (2, 8, 2, 1000, 1000, 128, "bfloat16", True, "bhld"),
        (1, 4, 4, 777, 1031, 64, "float16", False, "blhd"),
        (2, 4, 1, 1100, 517, 64, "bfloat16", True, "bhld"),  # Lq > Lk, MQA
        (1, 2, 2, 4096, 4096, 128, "bfloat16", True, "blhd"),
    ],
)
def test_attention_tma_gpu_shapes(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout):
    _check_tma(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout)


# ---------------------------------------------------------------- the TMA backward (Hopper tensor descriptors)
# The hot case takes _attn_bwd_dkdv_tma_kernel and _attn_bwd_dq_tma_kernel (each while its table has the
# head dim); the interpreter runs their descriptors too, so these run on both tiers. Which kernel served
# each half is read off the four Kernels' caches, emptied before the call.
def _bwd_routed(monkeypatch) -> Callable[[], dict[str, str | None]]:
    """Empty the backward kernels' caches; the returned function names, for dK / dV and for dQ, the kernel a
    call then built ("tma", "pointer", or None where that half had nothing to do)."""
    pairs = {"dkdv": (att._DKDV_TMA_KERNEL, att._DKDV), "dq": (att._DQ_TMA_KERNEL, att._DQ)}
    for kernels in pairs.values():
        for kern in kernels:
            monkeypatch.setattr(kern, "cache", {})
    monkeypatch.setattr(att, "_BWD_PLANS", PlanTable())  # (a plan holds its kernels: the call must plan, and so build)

    def which() -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for name, (tma_kernel, pointer) in pairs.items():
            tma, ptr = bool(tma_kernel.cache), bool(pointer.cache)
            assert not (tma and ptr), f"{name}: both kernels built"
            out[name] = "tma" if tma else "pointer" if ptr else None
        return out

    return which


def _grad_like(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A NaN-filled gradient of ``t``'s shape in ``layout`` (so an element left unwritten shows)."""
    b, h, length, d = t.shape
    if layout == "blhd":  # stored through (B, L, H, D) descriptors as the inputs are read
        return torch.full((b, length, h, d), float("nan"), dtype=t.dtype, device=t.device).transpose(1, 2)
    return torch.full(t.shape, float("nan"), dtype=t.dtype, device=t.device)


def _backward(device, q, k, v, out, lse, dout, causal, scale, layout="bhld", **kw) -> list[torch.Tensor]:
    grads = [_grad_like(t, layout) for t in (q, k, v)]
    gk.attention_backward(buf(q), buf(k), buf(v), buf(out), buf(dout), buf(lse), *map(buf, grads), causal=causal,
                          scale=scale, **kw)  # fmt: skip
    sync(device)
    return grads


def _grad_reference(q, k, v, dout, causal, scale) -> tuple[torch.Tensor, ...]:
    """dq, dk, dv in float64 (autograd of the explicit softmax math, on the inputs' device)."""
    qd, kd, vd = (t.double().detach().requires_grad_() for t in (q, k, v))
    _reference(qd, kd, vd, None, causal, scale, None, 0.0).backward(dout.double())
    return qd.grad, kd.grad, vd.grad


# The TMA backward's tests run both TMA kernels at both head dims whatever the shipped tables hold (the H100
# sweep leaves some head dims to the pointer kernels, and may change): these tables are the tests' own.
_TEST_DKDV_TMA = {64: (64, 128, 8, 3), 128: (64, 64, 4, 2)}
_TEST_DQ_TMA = {64: (128, 64, 8, 3), 128: (128, 64, 8, 3)}


@pytest.fixture
def bwd_tables(monkeypatch):
    monkeypatch.setattr(att, "_DKDV_TMA_CONFIGS", dict(_TEST_DKDV_TMA))
    monkeypatch.setattr(att, "_DQ_TMA_CONFIGS", dict(_TEST_DQ_TMA))


def _check_tma_backward(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout="bhld", scale=None,
                        expect=("tma", "tma")):  # fmt: skip
    q, k, v = _qkv(device, b, hq, hkv, lq, lk, d, dtype, layout)
    scale = 1 / math.sqrt(d) if scale is None else scale
    out, lse = _forward(device, q, k, v, causal, scale)
    dout = make((b, hq, lq, d), dtype, device, low=-1, high=1)
    which = _bwd_routed(monkeypatch)
    grads = _backward(device, q, k, v, out, lse, dout, causal, scale, layout)
    assert which() == {"dkdv": expect[0], "dq": expect[1]}
    for name, got, want in zip(("dq", "dk", "dv"), grads, _grad_reference(q, k, v, dout, causal, scale)):
        err = _rel(got, want)  # (and its NaN check: every element written)
        assert err <= TOL[dtype], f"{name}: rel error {err:.2e}"
    return q, k, v, out, lse, dout, grads


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,dkdv_tiles,dq_tiles",
    [
        # GQA; ragged Lq and Lk at the tables' tiles (dK / dV: 128 keys against 64-row query steps)
        (1, 2, 1, 150, 133, 64, None, None),
        # many blocks both ways, Lq < Lk (keys no causal query sees: zero dK / dV), BLOCK_M > BLOCK_N in dK / dV
        (2, 2, 2, 45, 100, 64, (32, 16, 4, 2), (16, 32, 4, 2)),
        # MQA-like group of 4, Lq > Lk (rows past Lk see every key), BLOCK_N > BLOCK_M in dK / dV
        (1, 4, 1, 70, 37, 128, (16, 32, 4, 2), (32, 16, 4, 2)),
        # a few queries, one block smaller than the tables' tiles. Not 3 or so: causal rows that see 1-3 keys
        # make dS = P (dP - delta) all cancellation, so bf16 rounding (P, dS, the saved output) alone puts dq
        # near 1e-2 of float64 (2.0e-2 worst over 20 draws at Lq = 3, the pointer kernels the same; 7.9e-3
        # at 17)
        (2, 2, 2, 17, 40, 128, None, None),
    ],
)
@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward(device, monkeypatch, b, hq, hkv, lq, lk, d, dkdv_tiles, dq_tiles, dtype, causal):
    if dkdv_tiles is not None:
        monkeypatch.setitem(att._DKDV_TMA_CONFIGS, d, dkdv_tiles)
    if dq_tiles is not None:
        monkeypatch.setitem(att._DQ_TMA_CONFIGS, d, dq_tiles)
    _check_tma_backward(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal)


@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward_layouts_and_scale(device, monkeypatch):
    # (B, L, H, D) inputs and gradients read and written in place through 4-D descriptors
    _check_tma_backward(device, monkeypatch, 2, 4, 2, 33, 47, 64, "bfloat16", True, layout="blhd")
    _check_tma_backward(device, monkeypatch, 1, 2, 1, 40, 21, 128, "float16", False, layout="blhd")
    # a negative scale: the masks select after the exponential, so no other path is needed
    _check_tma_backward(device, monkeypatch, 1, 2, 2, 20, 29, 64, "float16", True, scale=-0.2)


@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward_matches_pointer_kernels(device, monkeypatch):
    monkeypatch.setitem(att._DKDV_TMA_CONFIGS, 128, (32, 64, 4, 2))  # several key blocks and query steps
    q, k, v, out, lse, dout, grads = _check_tma_backward(device, monkeypatch, 2, 4, 1, 90, 77, 128, "bfloat16", True)
    monkeypatch.setattr(att, "_BWD_TMA", False)
    which = _bwd_routed(monkeypatch)
    pointer = _backward(device, q, k, v, out, lse, dout, True, 1 / math.sqrt(128))
    assert which() == {"dkdv": "pointer", "dq": "pointer"}
    for got, want in zip(grads, pointer):
        assert _rel(got, want) <= 4e-3  # a rounding of P, dS and the gradient apart at most


@pytest.mark.parametrize(
    "case", ["hot", "switch_off", "bool_mask", "float_mask", "dropout", "float32", "head_dim_96", "head_dim_32",
             "unaligned", "head_dim_stride", "grad_dtype", "dq_table_only", "dkdv_table_only", "no_keys",
             "no_queries"],
)  # fmt: skip
@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward_selection(device, monkeypatch, case):
    """The hot case takes both TMA kernels; everything they do not cover keeps the pointer kernels."""
    dtype, d, lq, lk, kw = "bfloat16", 64, 19, 23, {}
    expect = {"dkdv": "pointer", "dq": "pointer"}
    if case == "hot":
        expect = {"dkdv": "tma", "dq": "tma"}
    elif case == "float32":
        dtype = "float32"
    elif case == "head_dim_96":
        d = 96
    elif case == "head_dim_32":  # a power of two, but in neither table
        d = 32
    elif case == "dq_table_only":
        monkeypatch.delitem(att._DKDV_TMA_CONFIGS, 64)
        expect = {"dkdv": "pointer", "dq": "tma"}
    elif case == "dkdv_table_only":
        monkeypatch.delitem(att._DQ_TMA_CONFIGS, 64)
        expect = {"dkdv": "tma", "dq": "pointer"}
    elif case == "no_keys":  # dK / dV have nothing to do; dQ writes zeros
        lk = 0
        expect = {"dkdv": None, "dq": "pointer"}
    elif case == "no_queries":  # dQ has nothing to do; dK / dV write zeros
        lq = 0
        expect = {"dkdv": "pointer", "dq": None}
    q, k, v = _qkv(device, 1, 2, 1, lq, lk, d, dtype)
    scale = 1 / math.sqrt(d)
    out, lse = _forward(device, q, k, v, True, scale)
    dout = make((1, 2, lq, d), dtype, device, low=-1, high=1)
    if case == "switch_off":
        monkeypatch.setattr(att, "_BWD_TMA", False)
    elif case in ("bool_mask", "float_mask"):  # changes nothing (the tensor outlives its buffer)
        mask = torch.ones(1, 2, lq, lk, dtype=torch.bool, device=device)
        if case == "float_mask":
            mask = torch.zeros(mask.shape, device=device)
        kw["mask"] = buf(mask)
    elif case == "dropout":
        kw.update(dropout_p=0.2, seed=3)
    elif case == "unaligned":
        dout = _unaligned(dout)
    elif case == "head_dim_stride":
        v = v.transpose(-2, -1).contiguous().transpose(-2, -1)
    which = _bwd_routed(monkeypatch)
    if case == "grad_dtype":  # fp32 gradients of bf16 inputs: the pointer kernels convert at the store
        grads = [torch.full(t.shape, float("nan"), device=device) for t in (q, k, v)]
        gk.attention_backward(buf(q), buf(k), buf(v), buf(out), buf(dout), buf(lse), *map(buf, grads), causal=True,
                              scale=scale)  # fmt: skip
        sync(device)
    else:
        grads = _backward(device, q, k, v, out, lse, dout, True, scale, **kw)
    assert which() == expect
    if case != "dropout":
        for got, want in zip(grads, _grad_reference(q, k, v, dout, True, scale)):
            if want.numel() and want.abs().max() > 0:
                assert _rel(got, want) <= TOL[dtype]
            elif want.numel():  # nothing flows there (no keys, or no queries): exactly zero
                assert got.abs().max().item() == 0


def _clobbering(fn, per_program: int):
    """``fn`` with what the GPU launcher does for a kernel with device-side descriptors: each of its programs
    takes ``per_program`` bytes from the start of the stream's scratch and writes its descriptors there
    (here: NaN bytes over all of them, before the launch)."""
    from genesis_kernels import runtime

    def launch(grid, stream, args):
        n = grid[0] * grid[1] * grid[2] * per_program
        ctypes.memset(runtime.scratch(n, stream), 0xFF, n)
        fn(grid, stream, args)

    launch.global_scratch = per_program
    launch._consts = fn._consts
    return launch


@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward_delta_clear_of_descriptor_scratch(device, monkeypatch):
    # delta (the backward's rowsum(dO * O)) lives in the same stream scratch that serves the TMA kernels'
    # descriptors: it must lie past what their programs write. On the GPU the launcher writes them there;
    # the interpreter writes none, so there NaN bytes stand in for them (_clobbering).
    from genesis_kernels import runtime

    runtime.scratch(1 << 20, 0)  # a block big enough that neither request below moves it
    args = (device, monkeypatch, 1, 4, 2, 50, 70, 64, "bfloat16", True)
    _check_tma_backward(*args)  # builds (and caches) both kernels
    if runtime.INTERPRET:
        for kern in (att._DKDV_TMA_KERNEL, att._DQ_TMA_KERNEL):
            for key, fn in list(kern.cache.items()):
                kern.cache[key] = _clobbering(fn, 640)
        att._BWD_PLANS.clear()  # the plans hold the kernels they were made with: plan again, with these
    q, k, v = _qkv(device, 1, 4, 2, 50, 70, 64, "bfloat16")
    out, lse = _forward(device, q, k, v, True, 0.125)
    dout = make((1, 4, 50, 64), "bfloat16", device, low=-1, high=1)
    grads = _backward(device, q, k, v, out, lse, dout, True, 0.125)
    for got, want in zip(grads, _grad_reference(q, k, v, dout, True, 0.125)):
        assert _rel(got, want) <= TOL["bfloat16"]


@pytest.mark.gpu_tier
@pytest.mark.parametrize(
    "b,hq,hkv,lq,lk,d,dtype,causal,layout",
    [
        (2, 8, 2, 1000, 1000, 128, "bfloat16", True, "bhld"),
        (1, 4, 4, 777, 1031, 64, "float16", False, "blhd"),
        (2, 4, 1, 1100, 517, 64, "bfloat16", True, "bhld"),  # Lq > Lk, MQA
        (1, 4, 2, 517, 1100, 128, "float16", True, "blhd"),  # Lq < Lk: keys no query sees
        (1, 2, 2, 4096, 4096, 128, "bfloat16", True, "blhd"),
    ],
)
@pytest.mark.usefixtures("bwd_tables")
def test_attention_tma_backward_gpu_shapes(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout):
    _check_tma_backward(device, monkeypatch, b, hq, hkv, lq, lk, d, dtype, causal, layout)
