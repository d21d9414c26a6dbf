"""Where the host time of two host-bound benchmark steps goes, on the GPU machine (about 30 s).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/profile_host_steps.py [--profile 25]

The bf16 LayerNorm forward + backward at (8192, 4096) and the fused AdamW step over GPT-2 small's
124 M parameters (100 tensors) run at their kernels' speed only when the host issues them faster than
the GPU runs them. For each step this prints, genesis beside torch:

- host issue time: perf_counter around one call, the GPU drained before it (median);
- the GPU timeline of one call (torch.profiler / CUPTI): when the first kernel starts after the call
  begins, the kernels' busy time, the idle gaps between them, and when the last one ends;
- a cProfile of genesis's calls (each call after a drain, so the wait for the GPU is not counted),
  by own time: where the Python goes on this machine, with its real launches and allocator.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import statistics
import time
from collections.abc import Callable

import torch

import genesis
import genesis.nn.functional as GF
from bench_optimizer import gpt2_shapes, make_sets


def host_us(fn: Callable[[], object], reps: int = 50) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def timeline(fn: Callable[[], object]) -> str:
    """One call under CUPTI: first kernel start, busy, gaps and last kernel end, in us from the call's start."""
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("__step__"):
            fn()
        torch.cuda.synchronize()
    events = prof.events()
    step = next(e for e in events if e.name == "__step__")
    t0 = step.time_range.start
    kernels = sorted(
        (e for e in events if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0),
        key=lambda e: e.time_range.start,
    )
    if not kernels:
        return "no kernels recorded"
    busy = sum(e.time_range.elapsed_us() for e in kernels)
    gaps = sum(max(0, b.time_range.start - a.time_range.end) for a, b in itertools.pairwise(kernels))
    first, last = kernels[0].time_range.start - t0, kernels[-1].time_range.end - t0
    names = ", ".join(f"{e.name[:28]} {e.time_range.elapsed_us():.0f}" for e in kernels[:8])
    return (
        f"host {step.time_range.elapsed_us():.0f}  first kernel at {first:.0f}  busy {busy:.0f}  gaps {gaps:.0f}"
        f"  last ends {last:.0f}  ({len(kernels)} kernels: {names}{' ...' if len(kernels) > 8 else ''})"
    )


def profile_calls(fn: Callable[[], object], calls: int, lines: int) -> None:
    profiler = cProfile.Profile()
    for _ in range(calls):
        torch.cuda.synchronize()
        profiler.enable()
        fn()
        profiler.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(profiler)
    print(f"  Python calls per step: {sum(s[1] for s in stats.stats.values()) / calls:.0f}")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(lines)


def norm_steps() -> dict[str, Callable[[], object]]:
    shape = (8192, 4096)
    t_x = torch.randn(shape, device="cuda", dtype=torch.bfloat16).requires_grad_()
    t_dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    t_w = (1 + 0.1 * torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)).requires_grad_()
    t_b = (0.1 * torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)).requires_grad_()
    g_x = genesis.from_dlpack(t_x.detach()).requires_grad_()
    g_dy = genesis.from_dlpack(t_dy)
    g_w = genesis.from_dlpack(t_w.detach()).requires_grad_()
    g_b = genesis.from_dlpack(t_b.detach()).requires_grad_()
    n_x = genesis.randn(shape, device="cuda", dtype=genesis.bfloat16).requires_grad_()  # genesis-owned memory

    def genesis_step(x=g_x) -> None:
        for t in (x, g_w, g_b):
            t.grad = None
        GF.layer_norm(x, shape[-1:], g_w, g_b, 1e-5).backward(g_dy)

    def torch_step() -> None:
        for t in (t_x, t_w, t_b):
            t.grad = None
        torch.nn.functional.layer_norm(t_x, shape[-1:], t_w, t_b, 1e-5).backward(t_dy)

    return {
        "genesis": genesis_step,
        "genesis (own memory)": lambda: genesis_step(n_x),
        "genesis forward": lambda: GF.layer_norm(g_x, shape[-1:], g_w, g_b, 1e-5),
        "torch": torch_step,
        "torch forward": lambda: torch.nn.functional.layer_norm(t_x, shape[-1:], t_w, t_b, 1e-5),
    }


def adamw_steps() -> dict[str, Callable[[], object]]:
    ((tps, gps),) = make_sets(gpt2_shapes(), sets=1)
    t_opt = torch.optim.AdamW(tps, lr=1e-3, weight_decay=0.01, fused=True)
    g_opt = genesis.optim.AdamW(gps, lr=1e-3, weight_decay=0.01, fused=True)
    return {"genesis": g_opt.step, "torch": t_opt.step}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", type=int, default=25, help="cProfile lines per genesis step")
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    for title, make in (
        ("LayerNorm bf16 (8192, 4096) forward + backward", norm_steps),
        ("AdamW fused 124 M / 100", adamw_steps),
    ):
        steps = make()
        print(f"\n=== {title}")
        for name, fn in steps.items():
            print(f"  {name:<22} host issue {host_us(fn):8.1f} us   {timeline(fn)}")
        profile_calls(steps["genesis"], 50, args.profile)


if __name__ == "__main__":
    main()
