"""The LSTM benchmark's per-step recurrent products over matmul configurations, against cuBLAS (~2 min, H100).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_rnn_step.py [--reps 12] [--jobs 16]

benchmarks/bench_lstm.py (2 layers, hidden 1024, batch 64, 128 steps) runs per layer and step one
recurrent product and one fused cell, forward and backward (genesis_ndarray/backends/cuda/rnn.py):

    forward             hg = h @ W_hh^T      64 x 1024 @ 1024 x 4096   (W_hh read transposed in place)
    backward            dh = dgates @ W_hh   64 x 4096 @ 4096 x 1024   (W_hh as stored: N-major B)
    backward, W^T copy  the same product reading a transposed copy of W_hh (K-major B: lets TF32 use TMA)

Each step waits for the previous one, so what counts is a step's latency in a chain. Every candidate is
timed as the loop runs it: 128 launches back to back on one stream, each step's left operand its own
slot, one output buffer; a GPU spin (torch.cuda._sleep) as long as the host needs to issue the chain
goes first, so the GPU never waits for the host and the CUDA events time the GPU alone. Medians of
``--reps`` chains, candidates interleaved; µs per step = chain / 128. Candidates, each checked against a
float64 reference of its first step (relative error <= 1e-2) before timing:

    auto        matmul's own choice today (no config: ``_config`` / ``_split_k``, or ``_tma_config``)
    latency     ``genesis_kernels.matmul.latency_config`` (what STEP_CONFIG's "latency" takes)
    P ...       PointerConfig grid: tile bm x bn x bk (bm 32 / 64, bn 32..128), split-K 1..8
    T ...       TmaConfig grid (where TMA reads the layout): bm 64 / 128, bn 32..128, data-parallel or SK
    stage 2     warps 4 / 8 and stages 2..5 around the three best of the grid

float32 runs TF32 on both sides (cuBLAS with allow_tf32, as cuDNN's default in the benchmark). Also
timed: torch.matmul on the same chain (cuBLAS, ``ratio`` = torch / genesis), and the fused LSTM cells
(the rest of a step). Kernels are compiled first by ``--jobs`` processes into Triton's disk cache.
Ends with the best per product and the line to put in rnn.py's STEP_CONFIG (and
BACKWARD_TRANSPOSED_WEIGHT). ``--smoke`` runs tiny shapes in Triton's interpreter on a CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

if "--smoke" in sys.argv and not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import genesis_kernels as gk

mm = sys.modules["genesis_kernels.matmul"]  # the package's ``matmul`` attribute is the function
P, T = mm.PointerConfig, mm.TmaConfig
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROWS, HIDDEN, GATES, STEPS = 64, 1024, 4, 128
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
ROLES = ("forward", "backward", "backward W^T copy")
Config = Any  # PointerConfig | TmaConfig | None ("auto")


class Product:
    """One role's chain in one dtype: STEPS left operands (one slot per step), B, one output."""

    def __init__(self, dtype: str, role: str, steps: int = STEPS) -> None:
        dt, h = DTYPES[dtype], HIDDEN
        self.k, self.n = (h, GATES * h) if role == "forward" else (GATES * h, h)
        self.dtype = dtype
        self.a = torch.randn(steps, ROWS, self.k, device=DEVICE, dtype=dt)
        w = (torch.randn(GATES * h, h, device=DEVICE) * self.k**-0.5).to(dt)  # W_hh as nn.LSTM stores it
        self.b = {"forward": w.t(), "backward": w, "backward W^T copy": w.t().contiguous().t()}[role]
        self.out = torch.empty(ROWS, self.n, device=DEVICE, dtype=dt)
        self.ref = self.a[0].double() @ self.b.double()
        item = self.a.element_size()
        self.a_ptrs = [self.a.data_ptr() + t * ROWS * self.k * item for t in range(steps)]
        self.stream = torch.cuda.current_stream().cuda_stream if DEVICE == "cuda" else 0

    def plan(self, config: Config) -> Callable[..., None]:
        a = gk.Buffer(self.a.data_ptr(), (1, ROWS, self.k), (0, self.k, 1), self.dtype)
        b = gk.Buffer(self.b.data_ptr(), (1, self.k, self.n), (0, *self.b.stride()), self.dtype)
        out = gk.Buffer(self.out.data_ptr(), (1, ROWS, self.n), (0, self.n, 1), self.dtype)
        plan = gk.matmul_plan(a, b, out, allow_tf32=True, config=config)
        if plan is None:
            raise RuntimeError("no plan")
        return plan

    def checked(self, config: Config) -> Callable[[], None]:
        """The chain of ``config``'s plan, after one step checked against float64."""
        plan = self.plan(config)
        b, o, s = self.b.data_ptr(), self.out.data_ptr(), self.stream
        self.out.fill_(float("nan"))
        plan(self.a_ptrs[0], b, o, o, s)
        err = ((self.out.double() - self.ref).norm() / self.ref.norm()).item()
        if not err <= 1e-2:  # NaN (unwritten output) fails too
            raise RuntimeError(f"relative error {err:.2e}")

        def chain() -> None:
            for p in self.a_ptrs:
                plan(p, b, o, o, s)

        return chain

    def torch_chain(self) -> None:
        for t in range(self.a.shape[0]):
            torch.matmul(self.a[t], self.b, out=self.out)


def cell_chains(dtype: str) -> dict[str, Callable[[], None]]:
    """The fused LSTM cells as the loops launch them (forward; backward with two incoming gradients)."""
    dt, h, g = DTYPES[dtype], HIDDEN, GATES * HIDDEN
    x = [torch.rand(STEPS * ROWS, n, device=DEVICE, dtype=dt) for n in (g, g, h, h, h, g, g, h)]
    xg, hg, cs, hs, go, ws, dg, dc = x
    fwd = gk.cell_plan("lstm", dtype, h, (g, g, h, h, h, g), {"HAS_BI": False, "HAS_BH": True})
    bwd = gk.cell_plan("lstm_backward", dtype, h, (h, h, 0, h, h, h, g, g, h), {"NDH": 2, "HAS_DC": True})
    s = torch.cuda.current_stream().cuda_stream if DEVICE == "cuda" else 0

    def p(t: torch.Tensor, step: int, cols: int) -> int:  # the address of a step's rows
        return t.data_ptr() + step * ROWS * cols * t.element_size()

    def forward() -> None:
        for i in range(STEPS - 1):
            fwd(ROWS, (p(xg, i, g), hg.data_ptr(), hg.data_ptr(), hg.data_ptr(), p(cs, i, h), p(hs, i + 1, h),
                       p(cs, i + 1, h), p(ws, i, g)), s)  # fmt: skip

    def backward() -> None:
        for i in range(STEPS - 1, 0, -1):
            bwd(ROWS, (p(go, i, h), dc.data_ptr(), dc.data_ptr(), dc.data_ptr(), p(cs, i - 1, h), p(cs, i, h),
                       p(ws, i, g), p(dg, i, g), dc.data_ptr()), s)  # fmt: skip

    return {"cell forward": forward, "cell backward": backward}


def label(config: Config, latency: Config = None) -> str:
    """A candidate's name in the tables: "auto", "latency = ..." (the latency rule's pick), or its configuration."""
    if config is None:
        return "auto"
    c = config
    if isinstance(c, P):
        text = f"P {c.bm}x{c.bn}x{c.bk} w{c.warps} s{c.stages} split{c.split}"
    else:
        text = (
            f"T {'SK' if c.stream_k else 'DP'} {c.bm}x{c.bn}x{c.bk} w{c.warps} s{c.stages} ws{int(c.warp_specialize)}"
        )
    return f"latency = {text}" if config == latency else text


def grid(dtype: str, role: str, sms: int) -> list[Config]:
    """Stage 1: matmul's choice, the latency rule, pointer tiles x split-K, TMA tiles where TMA can read."""
    k, n = (HIDDEN, GATES * HIDDEN) if role == "forward" else (GATES * HIDDEN, HIDDEN)
    bks = (32, 64) if dtype == "float32" else (64, 128)
    out: list[Config] = [None, mm.latency_config(dtype, ROWS, n, k)]
    for bm in (64, 32):
        for bn in (32, 64, 128):
            for bk in bks if bm == 64 else bks[:1]:
                for split in (1, 2, 4, 8):
                    programs = -(-ROWS // bm) * -(-n // bn) * split
                    if programs <= 2 * sms and k // (bk * split) >= 2:
                        out.append(P(bm, bn, bk, 4 if bm * bn <= 4096 else 8, 3, split))
    if dtype == "bfloat16" or role != "backward":  # TF32's TMA kernel needs B K-major
        for bm, bn in ((64, 32), (64, 64), (64, 128), (128, 64), (128, 128)):
            for sk in (False, True):
                out.append(T(bm, bn, bks[0], 4 if bm == 64 or sk else 8, 4, stream_k=sk, warp_specialize=not sk))
    return list(dict.fromkeys(out))


def neighbours(config: Config) -> list[Config]:
    """Stage 2: warps and pipeline stages around a good configuration (and warp specialisation for TMA)."""
    if config is None:
        return []
    out = [config._replace(warps=w, stages=s) for w in (4, 8) for s in (2, 3, 4, 5)]
    if isinstance(config, T) and not config.stream_k:
        out += [c._replace(warp_specialize=not c.warp_specialize) for c in out]
    return out


_WORKER_PRODUCTS: dict[tuple[str, str], Product] = {}


def _compile(job: tuple[str, str, Config]) -> None:
    """Pool worker: build one plan (its kernels land in Triton's disk cache); failures are the parent's to see."""
    dtype, role, config = job
    key = (dtype, role)
    if key not in _WORKER_PRODUCTS:
        _WORKER_PRODUCTS[key] = Product(dtype, role, steps=1)
    try:
        _WORKER_PRODUCTS[key].plan(config)
    except Exception:  # reported when the parent builds it
        pass


_POOL: list[Any] = []  # the compile processes, started once


def precompile(jobs: list[tuple[str, str, Config]], workers: int) -> None:
    """Compile the candidates in ``workers`` processes first (the parent then loads them from the cache)."""
    if workers <= 1 or DEVICE != "cuda" or not jobs:
        return
    import multiprocessing as mp

    try:
        if not _POOL:
            _POOL.append(mp.get_context("spawn").Pool(workers))
        _POOL[0].map(_compile, jobs, chunksize=1)
    except Exception as exc:  # the parent compiles what is missing, one at a time
        print(f"  (parallel compile failed: {type(exc).__name__}: {exc}; compiling serially)", flush=True)


class Timer:
    """Median GPU microseconds of chains, interleaved, each after a GPU spin covering its issue time."""

    def __init__(self) -> None:
        self.cycles_per_us = 0.0
        if DEVICE == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1000)
            start.record()
            torch.cuda._sleep(10_000_000)
            end.record()
            end.synchronize()
            self.cycles_per_us = 10_000_000 / (start.elapsed_time(end) * 1e3)

    def us(self, chains: dict[str, Callable[[], None]], reps: int) -> tuple[dict[str, float], dict[str, float]]:
        """(GPU µs per chain, host µs to issue one) of each chain."""
        host: dict[str, float] = {}
        for name, fn in chains.items():
            fn()
            t0 = time.perf_counter()
            fn()
            host[name] = (time.perf_counter() - t0) * 1e6
            if DEVICE == "cuda":
                torch.cuda.synchronize()
        times: dict[str, list[float]] = {k: [] for k in chains}
        names = list(chains)
        for r in range(reps):
            order = names[r % len(names) :] + names[: r % len(names)]
            events = []
            for name in order:
                if DEVICE == "cuda":
                    torch.cuda._sleep(int(self.cycles_per_us * (1.5 * host[name] + 50)))
                    ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    ev[0].record()
                    chains[name]()
                    ev[1].record()
                    events.append((name, ev))
                else:
                    t0 = time.perf_counter()
                    chains[name]()
                    times[name].append((time.perf_counter() - t0) * 1e6)
            if DEVICE == "cuda":
                torch.cuda.synchronize()
                for name, (e0, e1) in events:
                    times[name].append(e0.elapsed_time(e1) * 1e3)
        return {k: statistics.median(v) for k, v in times.items()}, host


def sweep(dtype: str, role: str, reps: int, jobs: int, stage2: bool, timer: Timer, limit: int) -> dict[str, Any]:
    """Both stages for one product; prints its table and returns the timings by label."""
    prod = Product(dtype, role)
    results: dict[str, tuple[float, float, Config]] = {}  # label -> (µs per step, host µs per step, config)

    def run(cands: list[Config], again: list[Config]) -> None:
        cands = again + [c for c in dict.fromkeys(cands) if label(c, lat) not in results][:limit]
        precompile([(dtype, role, c) for c in cands], jobs)
        chains: dict[str, Callable[[], None]] = {"torch (cuBLAS)": prod.torch_chain}
        configs: dict[str, Config] = {}
        for c in cands:
            try:
                chains[label(c, lat)] = prod.checked(c)
                configs[label(c, lat)] = c
            except Exception as exc:  # a sweep: report the candidate and go on
                print(f"    {label(c, lat)}: skipped: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
        gpu, host = timer.us(chains, reps)
        steps = prod.a.shape[0]
        for name, us in gpu.items():
            results[name] = (us / steps, host[name] / steps, configs.get(name))

    sms = mm.sm_count()
    lat = mm.latency_config(dtype, ROWS, prod.n, prod.k)
    run(grid(dtype, role, sms), [])
    if stage2:  # the three best again (same round as their neighbours), and their neighbours
        top = [results[k][2] for _, k in sorted((v[0], k) for k, v in results.items() if v[2] is not None)[:3]]
        run([n for c in top for n in neighbours(c)], top)
    ref = results["torch (cuBLAS)"][0]
    print(f"\n{dtype} {role}: {ROWS} x {prod.k} @ {prod.k} x {prod.n}, chain of {STEPS}; µs per step (GPU), "
          f"ratio = cuBLAS / this, host µs per step to issue")  # fmt: skip
    for name, (us, host_us, _) in sorted(results.items(), key=lambda kv: kv[1][0]):
        print(f"    {name:<34} {us:8.2f} us   ratio {ref / us:5.2f}   host {host_us:6.2f} us", flush=True)
    return results


def step_line(dtype: str, role: str, results: dict[str, Any]) -> str:
    """The STEP_CONFIG entry (and BACKWARD_TRANSPOSED_WEIGHT where it applies) of the winner."""
    best = min((v[0], k) for k, v in results.items() if k != "torch (cuBLAS)")[1]
    cfg = results[best][2]
    value = '"auto"' if best == "auto" else ('"latency"' if best.startswith("latency") else repr(cfg))
    prec = "tf32" if dtype == "float32" else "half"
    line = f'    ("{prec}", "{"forward" if role == "forward" else "backward"}"): {value},'
    if role != "forward":
        line += f'   with BACKWARD_TRANSPOSED_WEIGHT["{prec}"] = {role != "backward"}'
    others = ", ".join(f"{k} {v[0]:.2f}" for k, v in results.items() if k.startswith(("auto", "latency", "torch")))
    return f"{best} ({results[best][0]:.2f} us/step; {others}):\n{line}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="compile processes")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds; after it, no stage 2")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, few candidates (CPU: interpreter)")
    args = parser.parse_args()
    global ROWS, HIDDEN, STEPS
    limit = 1000
    if args.smoke:
        ROWS, HIDDEN, STEPS, args.reps, limit, args.budget = 16, 32, 2, 1, 3, 0
    start = time.time()
    torch.manual_seed(0)
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (Triton interpreter)"
    print(f"{name}, torch {torch.__version__}, SMs {mm.sm_count()}, {args.jobs} compile processes", flush=True)
    timer = Timer()
    best = {}
    for dtype in DTYPES:
        cells, host = timer.us(cell_chains(dtype), args.reps)
        per_step = [f"{k} {v / (STEPS - 1):.2f} us/step (host {host[k] / (STEPS - 1):.2f})" for k, v in cells.items()]
        print(f"\n{dtype} fused LSTM cells (the rest of a step): " + ", ".join(per_step))
        for role in ROLES:
            stage2 = time.time() - start < args.budget
            best[dtype, role] = sweep(dtype, role, args.reps, args.jobs, stage2, timer, limit)
            print(f"    [{time.time() - start:5.0f} s]", flush=True)
    print("\nBest per product, and the line for genesis_ndarray/backends/cuda/rnn.py STEP_CONFIG:")
    for (dtype, role), results in best.items():
        print(f"  {dtype} {role}: {step_line(dtype, role, results)}")
    print("Forward: one line. Backward: the faster of the two backward rows, with its BACKWARD_TRANSPOSED_WEIGHT.")
    print(f"total {time.time() - start:.0f} s")
    for pool in _POOL:
        pool.terminate()


if __name__ == "__main__":
    main()
