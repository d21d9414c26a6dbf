"""A training step replayed as a CUDA graph against the same step run eagerly, genesis and torch.

The issue's MLP: 4 x (Linear 1024 -> ReLU), batch 64, float32, MSE loss, SGD (lr 0.01). One step is
zero_grad, forward, loss, backward, optimizer.step. Four cases, interleaved in one process:
  genesis eager, genesis graph replay, torch eager, torch graph replay (torch.cuda.CUDAGraph),
the graphs captured whole with static input / target buffers that each step refills from a set of
pre-made device batches (torch's "whole network capture" recipe). Each case is timed with CUDA
events around `steps` steps, after warm-up; medians over rounds.
    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_graphs.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

import genesis
import genesis.nn as gnn
import genesis.nn.functional as gF

WIDTH, BATCH, DEPTH, LR = 1024, 64, 4, 0.01


def _models():
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(
        *[m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())]
    ).cuda()
    gmodel = gnn.Sequential(*[m for _ in range(DEPTH) for m in (gnn.Linear(WIDTH, WIDTH), gnn.ReLU())])
    with genesis.no_grad():
        for gp, tp in zip(gmodel.parameters(), tmodel.parameters()):
            gp.copy_(genesis.tensor(tp.detach().cpu().numpy()))
    return gmodel.to("cuda"), tmodel


def _batches(n: int):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((BATCH, WIDTH)).astype(np.float32) for _ in range(n)]
    ys = [rng.standard_normal((BATCH, WIDTH)).astype(np.float32) for _ in range(n)]
    gen = [(genesis.tensor(x, device="cuda"), genesis.tensor(y, device="cuda")) for x, y in zip(xs, ys)]
    tor = [(torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")) for x, y in zip(xs, ys)]
    return gen, tor


class Case:
    """One way to run the step: `run(i)` does step i; `event`, `sync`, `stream` are its framework's."""

    def __init__(self, name, run, event, sync):
        self.name, self.run, self.event, self.sync = name, run, event, sync

    def time(self, steps: int) -> float:
        """Seconds per step, from CUDA events around `steps` steps on the current stream."""
        start, end = self.event(enable_timing=True), self.event(enable_timing=True)
        self.sync()
        start.record()
        for i in range(steps):
            self.run(i)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / steps


def genesis_cases(batches):
    def make():
        model, _ = _models()
        return model, genesis.optim.SGD(model.parameters(), lr=LR)

    model, opt = make()

    def eager(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        gF.mse_loss(model(x), y).backward()
        opt.step()

    gmodel, gopt = make()
    static_x, static_y = genesis.zeros(BATCH, WIDTH, device="cuda"), genesis.zeros(BATCH, WIDTH, device="cuda")
    static_x.copy_(batches[0][0])
    static_y.copy_(batches[0][1])
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(side):  # warm-up before capture, on a side stream (torch's recipe)
        for _ in range(3):
            gopt.zero_grad(set_to_none=True)
            gF.mse_loss(gmodel(static_x), static_y).backward()
            gopt.step()
    genesis.cuda.current_stream().wait_stream(side)
    graph = genesis.cuda.CUDAGraph()
    gopt.zero_grad(set_to_none=True)
    with genesis.cuda.graph(graph):
        gF.mse_loss(gmodel(static_x), static_y).backward()
        gopt.step()

    def replay(i):
        x, y = batches[i % len(batches)]
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()

    ev, sync = genesis.cuda.Event, genesis.cuda.synchronize
    return [Case("genesis eager", eager, ev, sync), Case("genesis graph", replay, ev, sync)], graph


def torch_cases(batches):
    def make():
        _, model = _models()
        return model, torch.optim.SGD(model.parameters(), lr=LR)

    model, opt = make()
    loss_fn = torch.nn.functional.mse_loss

    def eager(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    tmodel, topt = make()
    static_x, static_y = batches[0][0].clone(), batches[0][1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            topt.zero_grad(set_to_none=True)
            loss_fn(tmodel(static_x), static_y).backward()
            topt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    topt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(tmodel(static_x), static_y).backward()
        topt.step()

    def replay(i):
        x, y = batches[i % len(batches)]
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()

    ev, sync = torch.cuda.Event, torch.cuda.synchronize
    return [Case("torch eager", eager, ev, sync), Case("torch graph", replay, ev, sync)], graph


def check_same_math(gen_batches, tor_batches) -> float:
    """Replayed genesis step vs torch's eager step from the same weights: the largest parameter difference
    after a few steps (a sanity check that the graph does the work, not a bit-for-bit claim)."""
    gmodel, tmodel = _models()
    gopt, topt = genesis.optim.SGD(gmodel.parameters(), lr=LR), torch.optim.SGD(tmodel.parameters(), lr=LR)
    static_x, static_y = gen_batches[0][0].clone(), gen_batches[0][1].clone()
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(side):
        gopt.zero_grad(set_to_none=True)
        gF.mse_loss(gmodel(static_x), static_y).backward()
        gopt.step()
    genesis.cuda.current_stream().wait_stream(side)
    topt.zero_grad(set_to_none=True)
    torch.nn.functional.mse_loss(tmodel(tor_batches[0][0]), tor_batches[0][1]).backward()
    topt.step()
    graph = genesis.cuda.CUDAGraph()
    gopt.zero_grad(set_to_none=True)
    with genesis.cuda.graph(graph):
        gF.mse_loss(gmodel(static_x), static_y).backward()
        gopt.step()
    for (gx, gy), (tx, ty) in zip(gen_batches[1:4], tor_batches[1:4]):
        static_x.copy_(gx)
        static_y.copy_(gy)
        graph.replay()
        topt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(tmodel(tx), ty).backward()
        topt.step()
    genesis.cuda.synchronize()
    return max(
        float(np.abs(gp.detach().cpu().numpy() - tp.detach().cpu().numpy()).max())
        for gp, tp in zip(gmodel.parameters(), tmodel.parameters())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    parser.add_argument("--kernels", action="store_true", help="also list each case's GPU kernels per step")
    args = parser.parse_args()
    steps, rounds = (20, 3) if args.quick else (100, 9)
    gen_batches, tor_batches = _batches(8)
    print(
        f"max |genesis replay - torch eager| over the parameters after 4 steps: "
        f"{check_same_math(gen_batches, tor_batches):.2e}"
    )
    g_cases, _g_graph = genesis_cases(gen_batches)  # the graphs must outlive the timing
    t_cases, _t_graph = torch_cases(tor_batches)
    cases = g_cases + t_cases
    for case in cases:  # warm-up: compilation, caches, clocks
        case.time(max(5, steps // 5))
    samples: dict[str, list[float]] = {c.name: [] for c in cases}
    for _ in range(rounds):
        for case in cases:
            samples[case.name].append(case.time(steps))
    med = {name: statistics.median(v) * 1e6 for name, v in samples.items()}
    print(
        f"== MLP SGD step: {DEPTH} x Linear({WIDTH}) + ReLU, batch {BATCH}, float32 "
        f"(CUDA-event median of {rounds} rounds x {steps} steps, us per step) =="
    )
    for name, us in med.items():
        print(f"{name:>15} {us:9.1f}")
    print(f"genesis graph / torch graph:  {med['genesis graph'] / med['torch graph']:.2f}  (target <= 1.0)")
    print(f"torch eager / genesis graph:  {med['torch eager'] / med['genesis graph']:.2f}x (target >= 4)")
    print(f"genesis eager / torch eager:  {med['genesis eager'] / med['torch eager']:.2f}")
    if args.kernels:
        for case in cases:
            kernel_table(case, steps=20)


def kernel_table(case: Case, steps: int, top: int = 15) -> None:
    """The kernels one step of `case` runs (CUPTI through torch.profiler sees Triton's and graph-launched
    kernels too): GPU time per step and launches per step, largest first."""
    from torch.profiler import ProfilerActivity, profile

    case.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            case.run(i)
        case.sync()
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    busy = sum(e.self_device_time_total for e in events) / steps
    launches = sum(e.count for e in events) // steps
    print(f"-- {case.name}: GPU busy {busy:7.1f} us/step over {launches} kernels/step")
    for e in sorted(events, key=lambda e: e.self_device_time_total, reverse=True)[:top]:
        print(f"   {e.self_device_time_total / steps:8.1f} us {e.count // steps:4d} x  {e.key[:80]}")


if __name__ == "__main__":
    main()
