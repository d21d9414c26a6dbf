"""Host time of one kernel launch, and of the small eager ops, genesis beside torch (GPU machine).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_launch.py

Isolated launch of a 4-argument kernel (two pointers, an i32 size, an fp32 scalar: ``y = x * alpha``
over 1,024 values), by three paths:
  - Triton's public path, ``kernel[grid](...)`` with torch tensors;
  - Triton's C launcher called directly (launch_abi.py, the path genesis took until now);
  - genesis' native launcher (driver_launch.py / native_launcher.c): one C call, one cuLaunchKernel;
and the floor under every path: cuLaunchKernel alone, called in a C loop with the arguments converted once.
Then the full-stack small ops the eager issue is judged by: ``a + b`` on 1,024 fp32 values (with and
without requires_grad) and ``empty(1 MiB)`` + free, genesis against torch.

Each figure is the median over rounds of the host time per call in a burst of calls issued back to back
(the GPU drained before each burst, and bursts short enough that the launch queue never fills).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import triton
import triton.language as tl

import genesis
from genesis_kernels import driver_launch
from genesis_kernels.runtime import Kernel

BURST = 200
ROUNDS = 50


@triton.jit
def _scale(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


def host_us(fn: Callable[[], object], sync: Callable[[], object]) -> float:
    for _ in range(BURST):
        fn()
    sync()
    times = []
    for _ in range(ROUNDS):
        sync()
        start = time.perf_counter()
        for _ in range(BURST):
            fn()
        times.append((time.perf_counter() - start) / BURST * 1e6)
    sync()
    return statistics.median(times)


def launch_paths() -> dict[str, float]:
    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    types = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "alpha": "fp32"}
    kernel = Kernel(_scale)
    enabled = driver_launch.ENABLED
    try:
        driver_launch.ENABLED = False
        c_launcher = kernel.build("c", types, {"BLOCK": 1024}, num_warps=4)
        driver_launch.ENABLED = True
        ours = kernel.build("driver", types, {"BLOCK": 1024}, num_warps=4)
    finally:
        driver_launch.ENABLED = enabled
    stream = torch.cuda.current_stream().cuda_stream
    args = (x.data_ptr(), y.data_ptr(), n, 2.0, None)  # the constexpr's slot, as the launchers pass it
    out = {}
    out["Triton public kernel[grid](...)"] = host_us(
        lambda: _scale[(1,)](x, y, n, 2.0, BLOCK=1024), torch.cuda.synchronize
    )
    out["Triton C launcher, called directly"] = host_us(
        lambda: c_launcher((1, 1, 1), stream, args), torch.cuda.synchronize
    )
    out["genesis native launcher"] = host_us(lambda: ours((1, 1, 1), stream, args), torch.cuda.synchronize)
    if hasattr(ours, "repeat"):  # the floor: cuLaunchKernel alone, called from a C loop
        out["cuLaunchKernel alone (C loop)"] = (
            host_us(lambda: ours.repeat(BURST, (1, 1, 1), stream, args), torch.cuda.synchronize) / BURST
        )
    for name, launch in (("c", c_launcher), ("driver", ours)):
        y.zero_()
        launch((1, 1, 1), stream, args)
        torch.cuda.synchronize()
        assert torch.equal(y, x * 2.0), f"{name} path computed a wrong result"
    return out


def small_ops() -> list[tuple[str, float, float]]:
    rows = []
    ga, gb = genesis.randn(1024, device="cuda"), genesis.randn(1024, device="cuda")
    ta, tb = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    gs, ts = genesis.cuda.synchronize, torch.cuda.synchronize
    rows.append(("a + b (1,024 fp32)", host_us(lambda: ga + gb, gs), host_us(lambda: ta + tb, ts)))
    gag, gbg = ga.clone().requires_grad_(), gb.clone().requires_grad_()
    tag, tbg = ta.clone().requires_grad_(), tb.clone().requires_grad_()
    rows.append(("a + b, requires_grad", host_us(lambda: gag + gbg, gs), host_us(lambda: tag + tbg, ts)))
    rows.append(
        (
            "empty(1 MiB) + free",
            host_us(lambda: genesis.empty(262144, device="cuda"), gs),
            host_us(lambda: torch.empty(262144, device="cuda"), ts),
        )
    )
    return rows


def main() -> None:
    print(f"{torch.cuda.get_device_name()}; triton {triton.__version__}; host us per call (median)")
    for name, us in launch_paths().items():
        print(f"  {name:40s} {us:7.2f}")
    print(f"  {'op':30s} {'genesis':>8s} {'torch':>8s} {'genesis / torch':>16s}")
    for name, g, t in small_ops():
        print(f"  {name:30s} {g:8.2f} {t:8.2f} {g / t:16.2f}")


if __name__ == "__main__":
    main()
