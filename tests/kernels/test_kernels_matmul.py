"""Batched matmul against torch (float64 references)."""

from __future__ import annotations

import importlib

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (17, 19, 23), (64, 33, 70)])
def test_matmul(device: str, dtype: str, mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    a = make((2, m, k), dtype, device, low=-1, high=1)
    b = make((2, k, n), dtype, device, low=-1, high=1)
    out = torch.empty(2, m, n, dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    ref = (a.double() @ b.double()).to(a.dtype)
    # Half types: exact products, float32 accumulation, one rounding: the dtype's default (about one ulp).
    t = {"float32": dict(rtol=1e-5, atol=1e-5 * k**0.5), "float64": dict(rtol=1e-12, atol=1e-12)}.get(dtype, {})
    assert_close(out, ref, dtype, **t)


@pytest.mark.parametrize("case", ["transposed_a", "transposed_b", "batch_broadcast", "zero_k", "tf32", "sliced"])
def test_matmul_layouts(device: str, case: str) -> None:
    m, n, k = 21, 18, 35
    a = make((3, m, k), "float32", device, low=-1, high=1)
    b = make((3, k, n), "float32", device, low=-1, high=1)
    tf32 = False
    if case == "transposed_a":
        a = a.transpose(1, 2).contiguous().transpose(1, 2)
    elif case == "transposed_b":
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    elif case == "batch_broadcast":
        b = make((1, k, n), "float32", device).expand(3, k, n)
    elif case == "zero_k":
        a, b = a[:, :, :0], b[:, :0, :]
    elif case == "sliced":
        a = make((3, m, 2 * k), "float32", device)[:, :, ::2]
    else:
        tf32 = True
    out = torch.empty(3, m, n, device=device)
    gk.matmul(buf(a), buf(b), buf(out), allow_tf32=tf32)
    sync(device)
    t = dict(rtol=5e-3, atol=5e-3) if tf32 else dict(rtol=1e-5, atol=1e-5)
    assert_close(out, (a.double() @ b.double()).float(), **t)


# The tensor-core path: persistent TMA kernel (M, N >= 64, K >= 16, 16-byte aligned rows).
_ACTS = {
    "none": lambda x: x,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


def _stored(shape: tuple[int, int, int], transposed: bool, dtype: str, device: str) -> torch.Tensor:
    """A (B, R, C) operand, stored row-major or as its transpose (a transposed view, no copy)."""
    b, r, c = shape
    if transposed:
        return make((b, c, r), dtype, device, low=-1, high=1).transpose(1, 2)
    return make((b, r, c), dtype, device, low=-1, high=1)


@pytest.fixture
def tensor_core_path():
    """Asserts that the test launched the TMA kernel (not the pointer fallback)."""
    import importlib

    mm = importlib.import_module("genesis_kernels.matmul")

    calls = []
    original = mm._matmul_tma
    mm._PLANS.clear()  # plans resolved by earlier tests would skip the choice this fixture watches

    def spy(*args):  # type: ignore[no-untyped-def]
        took = original(*args)
        calls.append(took)
        return took

    mm._matmul_tma = spy
    yield calls
    mm._matmul_tma = original
    assert calls and all(plan is not None for plan in calls), "the tensor-core (TMA) path was not taken"


def _check(out: torch.Tensor, ref: torch.Tensor, rtol: float) -> None:
    assert not out.isnan().any(), "an output element was never written"
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < rtol, f"relative error {err:.2e} >= {rtol}"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_matmul_tensor_core_layouts(device: str, dtype: str, layout: str, tensor_core_path) -> None:
    m, n, k = 72, 104, 40  # no dimension a multiple of the tile; rows 16-byte aligned (TMA)
    a = _stored((1, m, k), layout[0] == "T", dtype, device)
    b = _stored((1, k, n), layout[1] == "T", dtype, device)
    out = torch.full((1, m, n), float("nan"), dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


@pytest.mark.parametrize("case", ["batched", "shared_b_folded", "shared_a", "transposed_batched"])
def test_matmul_tensor_core_batches(device: str, case: str, tensor_core_path) -> None:
    bsz, m, n, k = 3, 72, 88, 48
    a = make((bsz, m, k), "bfloat16", device, low=-1, high=1)
    b = make((bsz, k, n), "bfloat16", device, low=-1, high=1)
    if case == "shared_b_folded":
        b = make((1, k, n), "bfloat16", device, low=-1, high=1).expand(bsz, k, n)
    elif case == "shared_a":
        a = make((1, m, k), "bfloat16", device, low=-1, high=1).expand(bsz, m, k)
    elif case == "transposed_batched":
        a = _stored((bsz, m, k), True, "bfloat16", device)
        b = _stored((bsz, k, n), True, "bfloat16", device)
    out = torch.full((bsz, m, n), float("nan"), dtype=torch.bfloat16, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


@pytest.mark.parametrize("act", list(_ACTS))
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_matmul_bias_activation_epilogue(device: str, act: str, dtype: str) -> None:
    m, n, k = 67, 80, 32  # bfloat16: the TMA kernel; float32 (exact): the pointer kernel
    a = make((1, m, k), dtype, device, low=-1, high=1)
    w = make((n, k), dtype, device, low=-1, high=1)  # a Linear weight: out = a @ w^T
    bias = make((n,), dtype, device, low=-1, high=1)
    out = torch.full((1, m, n), float("nan"), dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(w.t().unsqueeze(0)), buf(out), bias=buf(bias), activation=act)  # both paths
    sync(device)
    ref = _ACTS[act](a.double() @ w.double().t() + bias.double())
    _check(out, ref, 1e-2 if dtype == "bfloat16" else 1e-5)


@pytest.mark.parametrize("layout", ["NT", "NN"])
def test_matmul_tf32_tensor_cores(device: str, layout: str) -> None:
    # NT reads both operands K-major (TMA + tf32 tensor cores); NN takes the pointer kernel in tf32.
    m, n, k = 96, 64, 64
    a = make((1, m, k), "float32", device, low=-1, high=1)
    b = _stored((1, k, n), layout[1] == "T", "float32", device)
    out = torch.full((1, m, n), float("nan"), device=device)
    gk.matmul(buf(a), buf(b), buf(out), allow_tf32=True)
    sync(device)
    _check(out, a.double() @ b.double(), 1e-3)


def test_matmul_zero_k_with_bias_is_the_bias(device: str) -> None:
    a = make((1, 5, 0), "float32", device)
    b = make((1, 0, 7), "float32", device)
    bias = make((7,), "float32", device)
    out = torch.full((1, 5, 7), float("nan"), device=device)
    gk.matmul(buf(a), buf(b), buf(out), bias=buf(bias), activation="relu")
    sync(device)
    assert torch.equal(out, torch.relu(bias).expand(1, 5, 7))


def test_matmul_rejects_bad_epilogue(device: str) -> None:
    a = make((1, 4, 3), "float32", device)
    b = make((1, 3, 5), "float32", device)
    out = torch.empty(1, 4, 5, device=device)
    with pytest.raises(ValueError, match="activation"):
        gk.matmul(buf(a), buf(b), buf(out), activation="tanhh")
    with pytest.raises(ValueError, match=r"bias must have shape \(5,\)"):
        gk.matmul(buf(a), buf(b), buf(out), bias=buf(make((4,), "float32", device)))


@pytest.mark.gpu_tier
@pytest.mark.parametrize("mnk", [(8192, 768, 3072), (768, 3072, 8192), (1000, 2304, 768), (4099, 50304, 64)])
def test_matmul_tensor_core_training_shapes(device: str, mnk: tuple[int, int, int], tensor_core_path) -> None:
    m, n, k = mnk
    a = make((1, m, k), "bfloat16", device, low=-1, high=1)
    b = _stored((1, k, n), True, "bfloat16", device)
    out = torch.full((1, m, n), float("nan"), dtype=torch.bfloat16, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


@pytest.mark.gpu_tier
@pytest.mark.parametrize("allow_tf32", [True, False])
def test_matmul_float32_wide_output(device: str, allow_tf32: bool) -> None:
    """float32 with N >= 2048 (the wide-tile shape class of 16-bit inputs): the kernel's shared memory
    must fit (128 x 256 fp32 tiles did not: OutOfResources on an H100)."""
    m, n, k = 300, 2304, 96
    a = make((1, m, k), "float32", device, low=-1, high=1)
    b = _stored((1, k, n), True, "float32", device)
    out = torch.full((1, m, n), float("nan"), device=device)
    gk.matmul(buf(a), buf(b), buf(out), allow_tf32=allow_tf32)
    sync(device)
    _check(out, a.double() @ b.double(), 1e-3 if allow_tf32 else 1e-5)


_MATMUL_MODULE = importlib.import_module("genesis_kernels.matmul")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("act", ["none", "relu"])
def test_matmul_split_k(device: str, dtype: str, act: str) -> None:
    """Few output tiles and a long K: K is split over several programs, float32 (float64) partials
    are summed by a second kernel that also adds the bias and applies the activation."""
    bsz, m, n, k = 2, 20, 30, 600
    a = make((bsz, m, k), dtype, device, low=-1, high=1)
    w = make((bsz, n, k), dtype, device, low=-1, high=1)  # read transposed: strided B
    bias = make((n,), dtype, device, low=-1, high=1)
    out = torch.full((bsz, m, n), float("nan"), dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(w.transpose(1, 2)), buf(out), bias=buf(bias), activation=act)
    sync(device)
    assert _MATMUL_MODULE._SPLIT_SUM.cache, "the split-K path did not run"
    ref = _ACTS[act](a.double() @ w.double().transpose(1, 2) + bias.double())
    _check(out, ref, {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2}[dtype])


@pytest.mark.gpu_tier
def test_matmul_split_k_small_batch_linear(device: str) -> None:
    """The 4-layer MLP benchmark's Linear (batch 64, 1024 -> 1024, float32): 16 tiles for 132 SMs."""
    a = make((1, 64, 1024), "float32", device, low=-1, high=1)
    w = make((1024, 1024), "float32", device, low=-1, high=1)
    bias = make((1024,), "float32", device, low=-1, high=1)
    out = torch.full((1, 64, 1024), float("nan"), device=device)
    gk.matmul(buf(a), buf(w.t().unsqueeze(0)), buf(out), bias=buf(bias), activation="relu")
    sync(device)
    _check(out, torch.relu(a.double() @ w.double().t() + bias.double()), 1e-5)


@pytest.fixture
def stream_k_path():
    """Forces stream-K wherever the TMA kernel runs (which shapes choose it on their own is
    test_stream_k_shape_classes's business) and asserts that the test launched it."""
    calls = []
    original, original_pays = _MATMUL_MODULE._stream_k_plan, _MATMUL_MODULE._stream_k_pays
    _MATMUL_MODULE._PLANS.clear()
    _MATMUL_MODULE._stream_k_pays = lambda tiles, k_tiles, sms: True

    def spy(*args):  # type: ignore[no-untyped-def]
        took = original(*args)
        calls.append(took)
        return took

    _MATMUL_MODULE._stream_k_plan = spy
    yield calls
    _MATMUL_MODULE._stream_k_plan, _MATMUL_MODULE._stream_k_pays = original, original_pays
    _MATMUL_MODULE._PLANS.clear()
    assert calls and all(plan is not None for plan in calls), "the stream-K path was not taken"


# Shapes that take stream-K and cut like a GPT's weight gradients on an H100: fewer tiles than programs
# (each tile cut between several), one badly filled wave or two (all balanced), and more than two waves
# (whole waves data-parallel, the rest balanced). Under the interpreter the TMA tiles are 64 x 32 (K step
# 32) on 4 "SMs" (runtime.sm_count): 3, 6 and 9 tiles; on an H100, 128 x 128 on 132 SMs: 4, 64 and 300
# tiles. Dimensions are multiples of 8 (16-byte rows for TMA) but mostly not of their tile, and K (the
# interpreter's) not of its step (the last step reads zeros past the end).
_SK_SHAPES = {
    "cpu": [(64, 88, 1016), (72, 72, 1000), (152, 88, 1000)],
    "cuda": [(200, 136, 4104), (1000, 1000, 4096), (2504, 1880, 2048)],
}


@pytest.mark.parametrize("shape", [0, 1, 2])
@pytest.mark.parametrize("layout", ["TN", "NN", "NT", "TT"])
def test_matmul_stream_k_layouts(device: str, shape: int, layout: str, stream_k_path) -> None:
    """x^T dy (TN: A read transposed in place, the weight gradient) and the other layouts, through
    stream-K: tiles finished by one program and tiles summed from several programs' partials."""
    m, n, k = _SK_SHAPES[device][shape]
    a = _stored((1, m, k), layout[0] == "T", "bfloat16", device)
    b = _stored((1, k, n), layout[1] == "T", "bfloat16", device)
    out = torch.full((1, m, n), float("nan"), dtype=torch.bfloat16, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


@pytest.mark.parametrize("act", ["relu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_stream_k_epilogue(device: str, act: str, dtype: str, stream_k_path) -> None:
    """Bias and activation are applied once, both on tiles a program finishes and in the fix-up pass."""
    m, n, k = _SK_SHAPES[device][2]
    a = _stored((1, m, k), True, dtype, device)
    b = make((1, k, n), dtype, device, low=-1, high=1)
    bias = make((n,), dtype, device, low=-1, high=1)
    out = torch.full((1, m, n), float("nan"), dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(b), buf(out), bias=buf(bias), activation=act)
    sync(device)
    _check(out, _ACTS[act](a.double() @ b.double() + bias.double()), 1e-2)


def test_matmul_stream_k_deterministic_and_replannable(device: str, stream_k_path) -> None:
    """The partials are summed in program order, not arrival order: two runs agree bit for bit; a
    second product of the same plan (other buffers) is right too (the scratch is reused)."""
    m, n, k = _SK_SHAPES[device][2]
    outs = []
    for seed in (0, 0, 1):
        torch.manual_seed(seed)
        a = _stored((1, m, k), True, "bfloat16", device)
        b = make((1, k, n), "bfloat16", device, low=-1, high=1)
        out = torch.full((1, m, n), float("nan"), dtype=torch.bfloat16, device=device)
        gk.matmul(buf(a), buf(b), buf(out))
        sync(device)
        _check(out, a.double() @ b.double(), 1e-2)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize(
    "tiles, k_tiles, sms, expected",
    [
        (144, 128, 132, True),  # 3072 x 768 weight gradient in 128 x 128 tiles (float32 out): a second wave 9 % full
        (165, 128, 132, True),  # a second wave 25 % full
        (166, 128, 132, False),
        (132, 128, 132, False),  # exactly one full wave
        (108, 128, 132, False),  # 2304 x 768: one wave, 82 % full (data-parallel measured faster)
        (72, 128, 132, False),  # 768 x 3072 in 128 x 256 tiles
        (36, 128, 132, True),  # 768 x 768: 27 % of the SMs
        (66, 32, 132, True),  # half a wave, the shortest K that pays
        (67, 32, 132, False),
        (2358, 128, 132, False),  # 50304 x 768: 18 waves, 99% full
        (36, 31, 132, False),  # K too short for partials to pay
        (144, 12, 132, False),  # K = 768
        (512, 64, 132, False),  # 4096^3 in 128 x 256 tiles: 97% full
    ],
)
def test_stream_k_shape_classes(tiles: int, k_tiles: int, sms: int, expected: bool) -> None:
    assert _MATMUL_MODULE._stream_k_pays(tiles, k_tiles, sms) is expected


@pytest.mark.parametrize(
    "m, n, k, a_t, out, expected",
    [
        (2304, 768, 8192, True, 2, (128, 128, 4, False)),  # qkv weight gradient: one wave of 128 x 128
        (768, 768, 8192, True, 2, (128, 128, 4, True)),  # attention projection's: 36 tiles, stream-K
        (3072, 768, 8192, True, 2, (128, 256, 8, False)),  # MLP's: 144 tiles of 128 x 128, so 128 x 256
        (768, 3072, 8192, True, 2, (128, 256, 8, False)),  # wide N
        (50304, 768, 8192, True, 2, (128, 256, 8, False)),  # LM head's
        (8192, 768, 50304, False, 2, (128, 128, 4, False)),  # LM head's input gradient: A untransposed
        (8192, 2304, 768, False, 2, (128, 256, 8, False)),  # a forward
        # float32 outputs (the weight gradients of float32 master weights under autocast): 128 x 128 tiles
        (3072, 768, 8192, True, 4, (128, 128, 4, True)),  # 144 tiles: stream-K evens the second wave
        (768, 3072, 8192, True, 4, (128, 128, 4, True)),
        (2304, 768, 8192, True, 4, (128, 128, 4, False)),  # 108 tiles: one wave
        (50304, 768, 8192, True, 4, (128, 128, 4, False)),
    ],
)
def test_tma_config_shape_classes(monkeypatch, m: int, n: int, k: int, a_t: bool, out: int, expected: tuple) -> None:
    """The configurations sweep_matmul_wgrad.py measured fastest on an H100 (132 SMs), per GPT-2 shape, and
    sweep_matmul_step.py on an H200 (four warps for 128 x 128 tiles; stream-K for a nearly empty second wave)."""
    monkeypatch.setattr(_MATMUL_MODULE, "INTERPRET", False)
    monkeypatch.setattr(_MATMUL_MODULE, "sm_count", lambda: 132)
    cfg = _MATMUL_MODULE._tma_config(2, m, n, k, False, a_t, out)
    assert (cfg.bm, cfg.bn, cfg.warps, cfg.stream_k) == expected


def test_stream_k_ranges_cover_every_iteration_once() -> None:
    """The fix-up pass's owner formula agrees with the main kernel's ranges: each K step of each tile
    belongs to exactly one program, and every tile cut between programs lands in slots the owners wrote."""
    for tiles, k_tiles, programs in [(144, 128, 132), (108, 128, 132), (36, 128, 132), (6, 32, 4), (5, 33, 4)]:
        iters = tiles * k_tiles
        ranges = [(p * iters // programs, (p + 1) * iters // programs) for p in range(programs)]
        assert ranges[0][0] == 0 and ranges[-1][1] == iters
        assert all(ranges[p][1] == ranges[p + 1][0] for p in range(programs - 1))
        written = set()
        for p, (s, e) in enumerate(ranges):
            first, last = s // k_tiles, (e - 1) // k_tiles
            for t in range(first, last + 1):
                lo, hi = max(s - t * k_tiles, 0), min(e - t * k_tiles, k_tiles)
                if (lo, hi) != (0, k_tiles):
                    assert t in (first, last)
                    written.add((p, 2 * p + (t != first), t))
        for t in range(tiles):
            p_lo = ((t * k_tiles + 1) * programs - 1) // iters
            p_hi = ((t + 1) * k_tiles * programs - 1) // iters
            assert ranges[p_lo][0] <= t * k_tiles < ranges[p_lo][1]
            assert ranges[p_hi][0] <= (t + 1) * k_tiles - 1 < ranges[p_hi][1]
            if p_lo < p_hi:
                for p in range(p_lo, p_hi + 1):
                    first = ranges[p][0] // k_tiles
                    assert (p, 2 * p + (t != first), t) in written


@pytest.mark.gpu_tier
@pytest.mark.parametrize("mn", [(3072, 768), (2304, 768), (768, 3072), (768, 768)])
def test_matmul_stream_k_weight_gradient_shapes(device: str, mn: tuple[int, int], stream_k_path) -> None:
    """GPT-2-small's weight gradients dW = dy^T x over 8192 rows through stream-K (forced: on an H100 only
    the 768 x 768 one chooses it), partials and fix-up at the real sizes."""
    m, n = mn
    a = _stored((1, m, 8192), True, "bfloat16", device)
    b = make((1, 8192, n), "bfloat16", device, low=-1, high=1)
    out = torch.full((1, m, n), float("nan"), dtype=torch.bfloat16, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


class _FakeGraph:
    def __init__(self) -> None:
        self.kept: list = []

    def keep_alive(self, obj) -> None:  # type: ignore[no-untyped-def]
        self.kept.append(obj)


def test_matmul_stream_k_under_capture(device: str, monkeypatch, stream_k_path) -> None:
    """Under a (simulated) graph capture the partials live in the graph's own scratch block, which the
    main kernel's device-side descriptors share: the partials must sit past them (on the GPU)."""
    from genesis_storage import graphs

    graph = _FakeGraph()  # one capture: every launch of it shares the graph's largest scratch block
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: True)
    monkeypatch.setattr(graphs, "current_capture", lambda: graph)
    m, n, k = _SK_SHAPES[device][2]
    a = _stored((1, m, k), True, "bfloat16", device)
    b = make((1, k, n), "bfloat16", device, low=-1, high=1)
    out = torch.full((1, m, n), float("nan"), dtype=torch.bfloat16, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    _check(out, a.double() @ b.double(), 1e-2)


def _accumulated(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, **kwargs) -> torch.Tensor:
    """``out`` after ``matmul(a, b, out, accumulate=True)``, and the float64 reference of it."""
    ref = out.double() + a.double() @ b.double()
    gk.matmul(buf(a), buf(b), buf(out), accumulate=True, **kwargs)
    sync(out.device.type)
    return ref


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["NN", "TN"])
def test_matmul_accumulate_tensor_cores_into_float32(device: str, dtype: str, layout: str, tensor_core_path) -> None:
    """A chunked weight gradient: a 16-bit product added to a float32 output in the TMA kernel's epilogue,
    twice over (each partial product rounded only at the float32 sum)."""
    m, n, k = 136, 72, 48
    out = make((1, m, n), "float32", device, low=-1, high=1)
    ref = out.double()
    for _ in range(2):
        a = _stored((1, m, k), layout[0] == "T", dtype, device)
        b = _stored((1, k, n), layout[1] == "T", dtype, device)
        ref = ref + a.double() @ b.double()
        gk.matmul(buf(a), buf(b), buf(out), accumulate=True)
    sync(device)
    _check(out, ref, 1e-6)  # 16-bit operands are exact in the float32 accumulator; one float32 rounding per sum


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_accumulate_pointer_kernel(device: str, dtype: str) -> None:
    m, n, k = 37, 45, 29
    a = make((1, m, k), dtype, device, low=-1, high=1)
    b = make((1, k, n), dtype, device, low=-1, high=1)
    out = make((1, m, n), dtype, device, low=-1, high=1)
    ref = _accumulated(a, b, out)
    _check(out, ref, {"float32": 1e-6, "float64": 1e-13}[dtype])


def test_matmul_accumulate_split_k_with_bias(device: str) -> None:
    """Split-K's second pass adds the old output after the bias: out += a @ b + bias."""
    bsz, m, n, k = 2, 20, 30, 600
    a = make((bsz, m, k), "float32", device, low=-1, high=1)
    b = make((bsz, k, n), "float32", device, low=-1, high=1)
    bias = make((n,), "float32", device, low=-1, high=1)
    out = make((bsz, m, n), "float32", device, low=-1, high=1)
    ref = out.double() + a.double() @ b.double() + bias.double()
    _MATMUL_MODULE._SPLIT_SUM.cache.clear()
    _MATMUL_MODULE._PLANS.clear()
    gk.matmul(buf(a), buf(b), buf(out), bias=buf(bias), accumulate=True)
    sync(device)
    assert _MATMUL_MODULE._SPLIT_SUM.cache, "the split-K path did not run"
    _check(out, ref, 1e-6)


def test_matmul_accumulate_empty_k_keeps_the_output(device: str) -> None:
    a = make((1, 5, 0), "float32", device)
    b = make((1, 0, 7), "float32", device)
    out = make((1, 5, 7), "float32", device, low=-1, high=1)
    before = out.clone()
    gk.matmul(buf(a), buf(b), buf(out), accumulate=True)
    sync(device)
    assert torch.equal(out, before)


@pytest.mark.gpu_tier
def test_matmul_accumulate_weight_gradient_shapes(device: str) -> None:
    """The chunked language-model head's weight gradient: dz^T (classes x rows, a transposed view) @ x (rows x
    features) added into float32 (classes x features), the wide shape class; and a 16-bit output, which the
    pointer kernel accumulates."""
    classes, rows, features = 2304, 256, 192
    dz = make((1, rows, classes), "bfloat16", device, low=-1, high=1).transpose(1, 2)
    x = make((1, rows, features), "bfloat16", device, low=-1, high=1)
    out = make((1, classes, features), "float32", device, low=-1, high=1)
    ref = _accumulated(dz, x, out)
    _check(out, ref, 1e-6)
    out16 = make((1, classes, features), "bfloat16", device, low=-1, high=1)
    ref16 = _accumulated(dz, x, out16)
    _check(out16, ref16, 1e-2)
