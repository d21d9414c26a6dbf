"""The native launch path (driver_launch.py, native_launcher.c).

On every tier the C launcher is built and called with a stand-in for cuLaunchKernel (a ctypes
callback that reads each parameter through the pointer the driver would read): each argument type
arrives as the kernel's ABI wants it, constexpr slots are skipped, Triton's two scratch pointers come
last, and bad arguments or a failing driver raise. On the GPU a kernel taking every argument type the
path converts gives the same result through it as through Triton's C launcher, from the main thread
and from a new thread (which has no current context until the path makes one).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
import torch

from genesis_kernels import driver_launch

_PROTO = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    *[ctypes.c_uint] * 7,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
)
_READ = {"p": ctypes.c_uint64, "Q": ctypes.c_uint64, "q": ctypes.c_int64, "I": ctypes.c_uint32,
         "i": ctypes.c_int32, "f": ctypes.c_float, "d": ctypes.c_double}  # fmt: skip


@pytest.fixture
def fake_driver():
    """The launcher module with a recording cuLaunchKernel; the real entry point is put back after."""
    try:
        module = driver_launch.build_module()
    except Exception as exc:  # pragma: no cover - a machine without a C compiler
        pytest.skip(f"the native launcher cannot be built here: {exc}")
    calls: list[dict] = []
    result = [0]

    def record(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        codes = calls_codes[0]
        values = [_READ[c].from_address(params[i]).value for i, c in enumerate(codes)]
        calls.append(dict(function=function, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                          stream=stream, values=values, extra=extra))  # fmt: skip
        return result.pop(0) if len(result) > 1 else result[0]

    calls_codes = [""]
    callback = _PROTO(record)
    saved = module.get_driver()
    module.set_driver(ctypes.cast(callback, ctypes.c_void_p).value)
    try:
        yield module, calls, calls_codes, result
    finally:
        module.set_driver(saved)


def test_type_codes():
    assert driver_launch.type_codes(["*fp32", "*bf16", "i32", "u32", "i64", "u64", "fp32", "fp64", "constexpr"]) == (
        b"ppiIqQfdc"
    )
    for odd in ("fp16", "bf16", "i1", "i8", "u8", "i16", "nvTmaDesc"):
        assert driver_launch.type_codes(["*fp32", odd]) is None


def test_arguments_reach_the_driver_as_the_abi_wants(fake_driver):
    module, calls, codes, _ = fake_driver
    launcher = module.Launcher(0xF00D, 256, 4096, b"pcqiIQfdc")
    codes[0] = "pqiIQfdpp"  # what the driver reads: the runtime arguments, then the two scratch pointers
    args = (0xDEADBEEF00, None, -(2**40) - 3, -7, 2**32 - 1, 2**64 - 1, 2.5, 3, 16)
    launcher((3, 2, 1), 0xABC, args)
    (call,) = calls
    assert call["function"] == 0xF00D and call["grid"] == (3, 2, 1) and call["block"] == (256, 1, 1)
    assert call["shared"] == 4096 and call["stream"] == 0xABC and call["extra"] is None
    assert call["values"] == [0xDEADBEEF00, -(2**40) - 3, -7, 2**32 - 1, 2**64 - 1, 2.5, 3.0, 0, 0]
    launcher((1, 1, 1), 0, args, 0x5000)  # a kernel with global scratch gets its address
    assert calls[-1]["values"][-2:] == [0x5000, 0]
    launcher((1, 1, 1), 0, (None, *args[1:]))  # an optional pointer the kernel leaves alone: null
    assert calls[-1]["values"][0] == 0
    wide = module.Launcher(1, 32, 0, b"i" * 200)  # the index kernels take 80 and more arguments
    codes[0] = "i" * 200 + "pp"
    wide((1, 1, 1), 0, tuple(range(200)))
    assert calls[-1]["values"] == [*range(200), 0, 0]


def test_empty_grids_launch_nothing_and_attributes_stick(fake_driver):
    module, calls, codes, _ = fake_driver
    launcher = module.Launcher(1, 128, 0, b"pc")
    codes[0] = "ppp"
    for grid in ((0, 1, 1), (4, 0, 1), (4, 1, 0)):
        launcher(grid, 0, (16, None))
    assert calls == []
    launcher._consts, launcher.global_scratch = (64,), 0  # what the Python launchers keep on a launch fn
    assert launcher._consts == (64,) and launcher.global_scratch == 0 and launcher.block == 128


def test_bad_arguments_raise(fake_driver):
    module, calls, _, _ = fake_driver
    launcher = module.Launcher(1, 128, 0, b"pi")
    with pytest.raises(TypeError, match="1 kernel arguments given, the kernel takes 2"):
        launcher((1, 1, 1), 0, (16,))
    with pytest.raises(OverflowError, match="does not fit i32"):
        launcher((1, 1, 1), 0, (16, 2**31))
    with pytest.raises(TypeError):
        launcher((1, 1, 1), 0, (16, "seven"))
    with pytest.raises(TypeError, match="grid must be a 3-tuple"):
        launcher((1, 1), 0, (16, 1))
    with pytest.raises(ValueError, match="unknown kernel argument type code"):
        module.Launcher(1, 128, 0, b"px")
    assert calls == []


def test_repeat_launches_n_times_with_the_same_arguments(fake_driver):
    module, calls, codes, _ = fake_driver
    launcher = module.Launcher(9, 64, 0, b"pic")
    codes[0] = "pipp"
    launcher.repeat(5, (2, 1, 1), 3, (0x1000, -4, None))
    assert len(calls) == 5 and all(c["values"] == [0x1000, -4, 0, 0] and c["grid"] == (2, 1, 1) for c in calls)
    with pytest.raises(TypeError):
        launcher.repeat(2, (2, 1, 1), 3)


def test_driver_errors_raise_and_a_missing_context_is_made(fake_driver):
    module, calls, codes, result = fake_driver
    codes[0] = "ppp"
    made = []
    launcher = module.Launcher(1, 128, 0, b"p", lambda err: made.append(err) or True)
    result[:] = [201, 0]  # CUDA_ERROR_INVALID_CONTEXT, then success
    launcher((1, 1, 1), 0, (16,))
    assert made == [201] and len(calls) == 2
    result[:] = [700]
    with pytest.raises(RuntimeError, match="CUDA error 700"):
        launcher((1, 1, 1), 0, (16,))


def test_eligibility_follows_the_launch_attributes():
    class Runner:
        num_ctas, launch_cooperative_grid, launch_pdl, profile_scratch_size = 1, False, False, 0

    assert driver_launch.eligible(Runner())
    for attr, value in (("num_ctas", 2), ("launch_cooperative_grid", True), ("launch_pdl", True)):
        runner = Runner()
        setattr(runner, attr, value)
        assert not driver_launch.eligible(runner)


needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="launches need the GPU")


def _mixed_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def mixed(out_ptr, x_ptr, n, big, a, b, idx_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, (x * a + b.to(tl.float32)) + (big - 3 * 2**40).to(tl.float32), mask=mask)
        tl.store(idx_ptr + offs, offs.to(tl.int64) + big, mask=mask)

    return mixed


@needs_gpu
def test_native_path_matches_the_triton_launcher_on_the_gpu():
    from genesis_kernels.runtime import Kernel

    kernel = Kernel(_mixed_kernel())
    types = {"out_ptr": "*fp32", "x_ptr": "*fp32", "n": "i32", "big": "i64", "a": "fp32", "b": "fp64"}
    types["idx_ptr"] = "*i64"
    enabled = driver_launch.ENABLED
    try:
        driver_launch.ENABLED = False
        reference = kernel.build("c", types, {"BLOCK": 256}, num_warps=4)
        driver_launch.ENABLED = True
        ours = kernel.build("native", types, {"BLOCK": 256}, num_warps=4)
    finally:
        driver_launch.ENABLED = enabled
    assert type(ours).__name__ == "Launcher" and type(reference).__name__ == "function"
    n, big = 200, 3 * 2**40 + 5
    x = torch.randn(256, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    results = []
    for launch in (reference, ours):
        out = torch.full((256,), float("nan"), device="cuda")
        idx = torch.zeros(256, dtype=torch.int64, device="cuda")
        launch((1, 1, 1), stream, (out.data_ptr(), x.data_ptr(), n, big, 1.5, -0.25, idx.data_ptr(), None))
        torch.cuda.synchronize()
        results.append((out.cpu(), idx.cpu()))
    expected = x[:n].cpu().double() * 1.5 - 0.25 + 5
    # float32 arithmetic (x * a + b may contract to one fma): within 2 ulps of the largest value (|y| < 16)
    np.testing.assert_allclose(results[1][0][:n].numpy(), expected.numpy(), rtol=0, atol=2 * 2.0**-23 * 16)
    assert torch.isnan(results[1][0][n:]).all()  # nothing written past n
    assert torch.equal(results[1][1][:n], torch.arange(n) + big)
    assert torch.equal(results[0][0][:n], results[1][0][:n]) and torch.equal(results[0][1], results[1][1])


@needs_gpu
def test_native_path_launches_from_a_new_thread():
    import genesis

    a = genesis.randn(4096, device="cuda")
    b = genesis.randn(4096, device="cuda")
    expected = (a.cpu().numpy() + b.cpu().numpy()).astype(np.float32)
    out: list = []
    errors: list = []

    def worker() -> None:
        try:
            out.append((a + b).cpu().numpy())
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert not errors, errors
    np.testing.assert_array_equal(out[0], expected)
