"""Where a GPT training step spends its time: GPU kernels, host time, and the first step.

Uses bench_gpt.py's model and step (examples/train_gpt.py's GPT, bf16 autocast, AdamW, clipping).
Prints, for genesis and for torch eager on the same batches:
  - the first step's wall time and, for genesis, where its host time went (cProfile, cumulative);
  - per step after warm-up: wall time, GPU busy time (the sum of kernel durations the profiler saw),
    and so how much of the step the GPU idles waiting on the host;
  - the kernels that take the most GPU time per step, with their launch counts;
  - for genesis, a host profile (cProfile) of steady-state steps.
torch.profiler sees every kernel of the process through CUPTI, Triton's (genesis) as well as torch's.
    python3 benchmarks/profile_gpt.py            # GPT-2 small, 8 x 1024
    python3 benchmarks/profile_gpt.py --quick
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpt import TO_TORCH, Trainer, load


def first_step(trainer: Trainer, batch: tuple[np.ndarray, np.ndarray], show_profile: bool) -> float:
    profiler = cProfile.Profile()
    trainer.sync()
    start = time.perf_counter()
    profiler.enable()
    trainer.step(*batch)
    trainer.sync()
    profiler.disable()
    elapsed = time.perf_counter() - start
    if show_profile:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())
    return elapsed


def host_profile(trainer: Trainer, batches: list, top: int) -> None:
    """cProfile of steady-state steps: where the host time goes once everything is compiled."""
    profiler = cProfile.Profile()
    profiler.enable()
    for b in batches:
        trainer.step(*b)
    trainer.sync()
    profiler.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(order)
        stats.print_stats(r"genesis|built-in|triton", top)
        print(f"  host profile of {len(batches)} steps, by {order}:")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-6000:])


def host_phases(trainer: Trainer, batches: list) -> None:
    """Host time to issue each phase of a step (no synchronisation inside the step), then the wait for
    the GPU at its end: with real launches, which tools/profile_host.py stubs."""
    lib, script = trainer.lib, trainer.script
    phases: dict[str, list[float]] = {}
    for x, y in batches:
        trainer.sync()
        marks = [time.perf_counter()]
        xs, ys = lib.tensor(x, device="cuda"), lib.tensor(y, device="cuda")
        marks.append(time.perf_counter())
        with lib.autocast("cuda", dtype=lib.bfloat16):
            _, loss = trainer.model(xs, ys)
        marks.append(time.perf_counter())
        trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        marks.append(time.perf_counter())
        script.nn.utils.clip_grad_norm_(trainer.model.parameters(), 1.0)
        marks.append(time.perf_counter())
        trainer.optimizer.step()
        marks.append(time.perf_counter())
        trainer.sync()
        marks.append(time.perf_counter())
        names = ("upload", "forward", "backward", "clip", "optimizer", "wait for GPU")
        for name, a, b in zip(names, marks, marks[1:]):
            phases.setdefault(name, []).append((b - a) * 1e3)
    print("  host ms per phase (median):  " + "  ".join(f"{k} {sorted(v)[len(v) // 2]:.2f}" for k, v in phases.items()))


def kernel_profile(trainer: Trainer, batches: list, top: int) -> None:
    for b in batches[:2]:  # warm-up
        trainer.step(*b)
    trainer.sync()
    steps = batches[2:]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for b in steps:
            trainer.step(*b)
        trainer.sync()
        wall = (time.perf_counter() - start) / len(steps)
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    busy = sum(e.self_device_time_total for e in events) / 1e3 / len(steps)  # us -> ms
    idle = 100 * (1 - busy / (wall * 1e3))
    print(f"  wall {wall * 1e3:8.2f} ms/step   GPU busy {busy:8.2f} ms/step   idle {idle:5.1f} %")
    events.sort(key=lambda e: e.self_device_time_total, reverse=True)
    for e in events[:top]:
        per_step = e.self_device_time_total / 1e3 / len(steps)
        print(f"    {per_step:8.3f} ms  {e.count // len(steps):5d} x  {e.key[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.quick:
        config, batch = dict(vocab_size=8192, block_size=256, n_layer=4, n_head=8, n_embd=512), 8
    else:
        config, batch = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768), 8
    rng = np.random.default_rng(0)
    batches = [
        tuple(rng.integers(0, config["vocab_size"], size=(batch, config["block_size"])) for _ in range(2))
        for _ in range(6)
    ]
    for name, swap in (("genesis", None), ("torch", TO_TORCH)):
        trainer = Trainer(load(f"gpt_{name}", swap), config, batch)
        print(f"== {name}")
        elapsed = first_step(trainer, batches[0], show_profile=name == "genesis")
        print(f"  first step {elapsed:.2f} s")
        kernel_profile(trainer, batches, args.top if name == "genesis" else 12)
        host_phases(trainer, batches)
        if name == "genesis":
            host_profile(trainer, batches[:2], args.top)
        del trainer
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
