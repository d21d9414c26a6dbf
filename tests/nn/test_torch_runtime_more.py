"""torch's runtime settings at genesis' top level against torch: autocast state, cpu threads, deterministic
mode, print options, warn-always, denormals, the default device and generator, dlpack, the Tensor leftovers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from device_support import requires_cuda


@pytest.fixture
def restore_printoptions():
    yield
    genesis.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.fixture
def deterministic_off():
    yield
    genesis.use_deterministic_algorithms(False)
    torch.use_deterministic_algorithms(False)


# ------------------------------------------------------------------ autocast state
def test_autocast_enable_and_dtype_match_torch():
    for lib in (torch, genesis):
        assert not lib.is_autocast_enabled("cpu")
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu")
        lib.set_autocast_dtype("cpu", lib.float16)
        assert lib.get_autocast_dtype("cpu") == lib.float16
        lib.set_autocast_enabled("cpu", False)
        assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cpu") == lib.float16  # the dtype outlives the switch
        lib.set_autocast_dtype("cpu", lib.bfloat16)
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled"):
        assert genesis.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert genesis.get_autocast_gpu_dtype() == genesis.float16
    with pytest.warns(DeprecationWarning):
        assert genesis.get_autocast_cpu_dtype() == genesis.bfloat16


def test_set_autocast_enabled_casts_ops_and_legacy_forms():
    a, b = genesis.randn(4, 4), genesis.randn(4, 4)
    genesis.set_autocast_enabled("cpu", True)
    try:
        assert (a @ b).dtype == genesis.bfloat16
    finally:
        genesis.set_autocast_enabled("cpu", False)
    assert (a @ b).dtype == genesis.float32
    with pytest.warns(DeprecationWarning):
        genesis.set_autocast_cpu_enabled(True)
    with pytest.warns(DeprecationWarning):
        genesis.set_autocast_cpu_dtype(genesis.float16)
    try:
        assert (a @ b).dtype == genesis.float16
    finally:
        genesis.set_autocast_enabled("cpu", False)
        genesis.set_autocast_dtype("cpu", genesis.bfloat16)
    with pytest.warns(DeprecationWarning):
        genesis.set_autocast_gpu_dtype(genesis.bfloat16)
    assert genesis.get_autocast_dtype("cuda") == genesis.bfloat16
    genesis.set_autocast_dtype("cuda", genesis.float16)
    with pytest.raises(RuntimeError, match="foo"):
        genesis.set_autocast_enabled("foo", True)


def test_autocast_region_sets_dtype_even_when_disabled_and_restores_it():
    for lib in (torch, genesis):
        with lib.autocast("cpu", dtype=lib.float16, enabled=False):
            assert lib.get_autocast_dtype("cpu") == lib.float16
            assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16


def test_autocast_nesting_counts_like_torch():
    counts = {}
    for lib in (torch, genesis):
        counts[lib.__name__] = [
            lib.autocast_increment_nesting(),
            lib.autocast_increment_nesting(),
            lib.autocast_decrement_nesting(),
            lib.autocast_decrement_nesting(),
        ]
    assert counts["genesis"] == counts["torch"] == [1, 2, 1, 0]


def test_autocast_cache_casts_a_parameter_once_per_region(device):
    w = genesis.randn(4, 4, device=device, requires_grad=True)
    x = genesis.randn(3, 4, device=device)
    assert genesis.is_autocast_cache_enabled()
    with genesis.autocast(device):
        y1, y2 = x @ w, (x * 2) @ w
        # one Cast node feeds both products
        assert y1.grad_fn.next_functions[1][0] is y2.grad_fn.next_functions[1][0]
        (y1.float().sum() + y2.float().sum()).backward()
    tw = torch.from_numpy(w.detach().cpu().numpy()).requires_grad_()
    tx = torch.from_numpy(x.cpu().numpy())
    with torch.autocast("cpu", dtype=genesis.get_autocast_dtype(device).torch):
        (((tx @ tw).float().sum()) + ((tx * 2) @ tw).float().sum()).backward()
    assert np.allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=2e-2, atol=2e-2)
    with genesis.autocast(device, cache_enabled=False):
        assert not genesis.is_autocast_cache_enabled()
        y1, y2 = x @ w, x @ w
        assert y1.grad_fn.next_functions[1][0] is not y2.grad_fn.next_functions[1][0]
    assert genesis.is_autocast_cache_enabled()


def test_autocast_cache_drops_a_stale_or_backwarded_cast(device):
    w = genesis.randn(4, 4, device=device, requires_grad=True)
    x = genesis.randn(2, 4, device=device)
    with genesis.autocast(device):
        (x @ w).float().sum().backward()  # frees the cached cast's graph
        (x @ w).float().sum().backward()  # a fresh cast: no "backward a second time" error
        with genesis.no_grad():
            w.add_(1.0)
        out = x @ w  # the cast of the updated weight, not the cached one
        ref = x.cpu().numpy() @ w.detach().cpu().numpy()
        assert np.allclose(out.float().detach().cpu().numpy(), ref, rtol=2e-2, atol=5e-2)
        genesis.clear_autocast_cache()
    genesis.set_autocast_cache_enabled(False)
    assert genesis.is_autocast_cache_enabled() is False
    genesis.set_autocast_cache_enabled(True)


# ------------------------------------------------------------------ threads, denormals, warn-always
def test_threads_are_the_cpu_backends():
    n = torch.get_num_threads()
    assert genesis.get_num_threads() == n
    genesis.set_num_threads(1)
    try:
        assert torch.get_num_threads() == 1 == genesis.get_num_threads()
    finally:
        genesis.set_num_threads(n)
    assert genesis.get_num_interop_threads() == torch.get_num_interop_threads()
    genesis.init_num_threads()
    with pytest.raises(RuntimeError, match="positive"):
        genesis.set_num_threads(0)


def test_flush_denormal_answers_as_torch_and_flushes_cpu_ops():
    supported = torch.set_flush_denormal(False)
    assert genesis.set_flush_denormal(True) == supported
    try:
        if supported:
            tiny = genesis.tensor([1e-39], dtype=genesis.float32)  # a float32 denormal
            assert (tiny * 1.0).item() == 0.0
    finally:
        genesis.set_flush_denormal(False)
    assert (genesis.tensor([1e-39]) * 1.0).item() != 0.0


def test_warn_always_flag():
    assert genesis.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    genesis.set_warn_always(True)
    assert genesis.is_warn_always_enabled()
    genesis.set_warn_always(False)
    assert not genesis.is_warn_always_enabled()


# ------------------------------------------------------------------ deterministic mode
def test_deterministic_flags_match_torch(deterministic_off):
    for mode in ("warn", "error", "default", 1, 2, 0):
        torch.set_deterministic_debug_mode(mode)
        genesis.set_deterministic_debug_mode(mode)
        assert genesis.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        assert genesis.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        assert (
            genesis.is_deterministic_algorithms_warn_only_enabled()
            == torch.is_deterministic_algorithms_warn_only_enabled()
        )
    genesis.use_deterministic_algorithms(True, warn_only=True)
    assert genesis.get_deterministic_debug_mode() == 1
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        genesis.set_deterministic_debug_mode("loud")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
        genesis.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="must be str or int"):
        genesis.set_deterministic_debug_mode(1.0)
    with pytest.raises(TypeError, match="must be bool"):
        genesis.use_deterministic_algorithms("yes")


def _atomic_ops(device: str) -> dict:
    x = genesis.zeros(5, 3, device=device)
    idx = genesis.tensor([0, 2, 2, 4], device=device)
    src = genesis.randn(4, 3, device=device)
    weight = genesis.randn(6, 3, device=device, requires_grad=True)
    return {
        "index_add_cuda_": lambda: x.index_add_(0, idx, src),
        "scatter_add_cuda_": lambda: x.scatter_add_(0, idx[:, None].expand(4, 3), src),
        "index_put_cuda_": lambda: x.index_put_((idx,), src, accumulate=True),
        # (embedding's backward accumulates through index_add on cuda)
        "embedding_dense_backward_cuda|index_add_cuda_": lambda: (
            genesis.nn.functional.embedding(idx, weight).sum().backward()
        ),
    }


def test_deterministic_mode_refuses_atomic_cuda_paths(device, deterministic_off):
    genesis.use_deterministic_algorithms(True)
    for name, op in _atomic_ops(device).items():
        if device == "cuda":
            with pytest.raises(RuntimeError, match=f"({name}).* does not have a deterministic implementation"):
                op()
        else:
            op()  # torch's cpu kernels are deterministic
    genesis.use_deterministic_algorithms(True, warn_only=True)
    for name, op in _atomic_ops(device).items():
        if device == "cuda":
            with pytest.warns(UserWarning, match=name):
                op()
        else:
            op()
    genesis.use_deterministic_algorithms(False)
    for op in _atomic_ops(device).values():
        op()


def test_deterministic_mode_reaches_the_cpu_backend(deterministic_off):
    genesis.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    genesis.use_deterministic_algorithms(False)
    assert not torch.are_deterministic_algorithms_enabled()


# ------------------------------------------------------------------ print options
# float32 (the default dtype): no dtype= suffix, whose name (torch. / genesis.) would shift the line wrapping
_PRINT_CASES = [
    lambda: torch.randn(3, 4),
    lambda: torch.randn(2000),
    lambda: torch.randn(30, 40) * 1e-5,
    lambda: torch.arange(1500).reshape(30, 50),
    lambda: torch.tensor([1.0, -2.0, 1e9]),
    lambda: torch.tensor([float("nan"), 1.5, float("inf")]),
    lambda: torch.tensor(3.25),
    lambda: torch.randn(4, 5, 6, 7) * 100,
]
_PRINT_OPTIONS = [
    {},
    dict(precision=2),
    dict(sci_mode=True),
    dict(sci_mode=False),
    dict(threshold=10, edgeitems=2),
    dict(linewidth=40),
    dict(profile="short"),
    dict(profile="full"),
    dict(threshold=5, edgeitems=0),
]


@pytest.mark.parametrize("options", _PRINT_OPTIONS, ids=str)
def test_set_printoptions_reprs_match_torch(options, restore_printoptions):
    torch.manual_seed(0)
    for make in _PRINT_CASES:
        t = make()
        torch.set_printoptions(**options)
        genesis.set_printoptions(**options)
        expected = repr(t).replace("torch.", "genesis.")
        assert repr(genesis.tensor(t.numpy())) == expected


def test_printoptions_on_device_and_bad_profile(device, restore_printoptions):
    genesis.set_printoptions(precision=1)
    assert repr(genesis.tensor([1.25, 2.5], device=device)).startswith("tensor([1.2, 2.5]")
    with pytest.raises(ValueError, match="profile"):
        genesis.set_printoptions(profile="long")


# ------------------------------------------------------------------ default device, generator, dlpack
def test_default_device_follows_torch_semantics():
    assert genesis.get_default_device() == genesis.device("cpu")
    genesis.set_default_device("cpu")
    assert genesis.zeros(2).device == genesis.device("cpu")
    genesis.set_default_device(None)
    with genesis.device("cpu") as d:
        assert d == genesis.device("cpu")
        assert genesis.get_default_device() == genesis.device("cpu")


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_default_device_cuda_reaches_factories(device):
    with genesis.device("cuda"):
        assert genesis.get_default_device().type == "cuda"
        for t in (genesis.zeros(2), genesis.randn(2), genesis.arange(3), genesis.tensor([1.0]), genesis.eye(2)):
            assert t.device.type == "cuda"
        assert genesis.from_numpy(np.ones(2)).device.type == "cpu"  # as torch.from_numpy
    assert genesis.zeros(2).device.type == "cpu"


def test_default_generator_is_the_global_cpu_stream():
    gen = genesis.default_generator
    gen.manual_seed(123)
    assert gen.initial_seed() == 123
    state = gen.get_state()
    a = genesis.rand(5).numpy()
    gen.set_state(state)
    assert np.array_equal(genesis.rand(5).numpy(), a)
    torch.default_generator.manual_seed(123)
    assert np.allclose(a, torch.rand(5).numpy())  # genesis' cpu stream is torch's generator, seeded alike


def test_get_device_module_and_to_dlpack(device):
    assert genesis.get_device_module("cuda") is genesis.cuda
    assert genesis.get_device_module(genesis.device("cuda:0")) is genesis.cuda
    with pytest.raises(RuntimeError, match="cpu"):
        genesis.get_device_module("cpu")
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        genesis.get_device_module(3.0)
    t = genesis.randn(3, 2, device=device)
    capsule = genesis.to_dlpack(t)
    assert type(capsule).__name__ == "PyCapsule"
    if device == "cpu":  # (genesis.from_dlpack reads a bare capsule as a cpu one)
        back = genesis.from_dlpack(capsule)
        assert np.array_equal(back.numpy(), t.numpy())
        assert np.array_equal(torch.from_dlpack(genesis.to_dlpack(t)).numpy(), t.numpy())


# ------------------------------------------------------------------ Tensor leftovers, div, OOM
def test_tensor_legacy_names_answer_as_torch(device):
    t = genesis.randn(3, device=device, requires_grad=True)
    tt = torch.randn(3, requires_grad=True)
    assert t.is_distributed() is tt.is_distributed() is False
    assert t.grad_dtype == genesis.float32
    t.grad_dtype = genesis.float32
    with pytest.raises(NotImplementedError, match="grad_dtype"):
        t.grad_dtype = genesis.float64
    with pytest.raises(RuntimeError, match="leaf"):
        _ = (t * 2).grad_dtype
    with pytest.raises(RuntimeError, match="leaf"):
        _ = (tt * 2).grad_dtype
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert t.volatile is False
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        t.reinforce(1.0)
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        tt.reinforce(1.0)
    dest, src = genesis.zeros(3, device=device), genesis.randn(3, device=device)
    loaded = dest.module_load(src)
    assert np.array_equal(dest.cpu().numpy(), src.cpu().numpy()) and loaded.grad_fn is None
    assert dest.module_load(src, assign=True).data_ptr() == src.data_ptr()


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_mode_matches_torch(device, mode):
    a = torch.randn(4, 5, dtype=torch.float64) * 10
    b = torch.randn(4, 5, dtype=torch.float64)
    ga, gb = genesis.tensor(a.numpy(), device=device), genesis.tensor(b.numpy(), device=device)
    assert np.allclose(ga.div(gb, rounding_mode=mode).cpu().numpy(), a.div(b, rounding_mode=mode).numpy())
    ia, ib = torch.randint(-20, 20, (6,)), torch.randint(1, 5, (6,))
    gi = genesis.tensor(ia.numpy(), device=device)
    out = gi.div(genesis.tensor(ib.numpy(), device=device), rounding_mode=mode)
    assert out.dtype == genesis.int64
    assert np.array_equal(out.cpu().numpy(), ia.div(ib, rounding_mode=mode).numpy())
    ga.div_(gb, rounding_mode=mode)
    assert np.allclose(ga.cpu().numpy(), a.div(b, rounding_mode=mode).numpy())
    with pytest.raises(RuntimeError, match="rounding_mode"):
        genesis.tensor([1.0], device=device).div(2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="rounding_mode"):
        torch.tensor([1.0]).div(2, rounding_mode="round")


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(genesis.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(genesis.OutOfMemoryError, MemoryError)
