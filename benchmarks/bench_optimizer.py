"""Multi-tensor optimizer steps, Genesis against torch on the GPU: AdamW, SGD momentum, clip_grad_norm_.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_optimizer.py [--check] [--quick]

One process, genesis and torch interleaved, CUDA-event medians after warm-up. The parameter set is
GPT-2 small's in 100 tensors (124.4 M fp32 parameters, sizes from 768 to 38.6 M); four such sets
are rotated so that neither side finds its data in L2. torch runs AdamW(fused=True) (the issue's
target), SGD(foreach=True) and clip_grad_norm_(foreach=True). ``--check`` compares one step of each
(genesis against torch, same inputs) and prints the max relative error. Needs a CUDA device.
"""

from __future__ import annotations

import argparse

import torch

import genesis
import genesis.nn as gnn
from timing import host_us, interleaved_us, kernel_us

SETS = 4


def gpt2_shapes() -> list[tuple[int, ...]]:
    """100 tensors of GPT-2 small: wte, wpe, 12 x (4 weight matrices + 4 vectors), ln_f (124.4 M)."""
    d = 768
    shapes: list[tuple[int, ...]] = [(50304, d), (1024, d)]
    for _ in range(12):
        shapes += [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d), (d,), (3 * d,), (d,), (4 * d,)]
    return shapes + [(d,), (d,)]


def make_sets(shapes, dtype=torch.float32, sets: int = SETS):
    """``sets`` pairs of (torch params, genesis params over the same memory), each with a gradient."""
    out = []
    for _ in range(sets):
        tps = [torch.nn.Parameter(torch.randn(s, device="cuda", dtype=dtype) * 0.02) for s in shapes]
        gps = []
        for tp in tps:
            tp.grad = torch.randn_like(tp) * 1e-3
            gp = gnn.Parameter(genesis.from_dlpack(tp.detach().clone()))
            gp.grad = genesis.from_dlpack(tp.grad.clone())
            gps.append(gp)
        out.append((tps, gps))
    return out


def rel_err(gps, tps) -> float:
    worst = 0.0
    for gp, tp in zip(gps, tps):
        a = torch.from_dlpack(gp.detach()).double()
        b = tp.detach().double()
        worst = max(worst, float((a - b).norm() / b.norm().clamp_min(1e-30)))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="compare genesis and torch numerically")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_optimizer.py needs a CUDA device")
    reps = 10 if args.quick else 30
    shapes = gpt2_shapes()
    n = sum(torch.Size(s).numel() for s in shapes)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  {len(shapes)} tensors, {n / 1e6:.1f} M")
    sets = make_sets(shapes)
    rows = []

    # AdamW: 28 bytes per fp32 parameter (read p, g, m, v; write p, m, v).
    t_opts = [torch.optim.AdamW(t, lr=1e-3, weight_decay=0.01, fused=True) for t, _ in sets]
    g_opts = [genesis.optim.AdamW(g, lr=1e-3, weight_decay=0.01, fused=True) for _, g in sets]
    adamw = {"genesis": lambda k: g_opts[k].step(), "torch": lambda k: t_opts[k].step()}
    res = interleaved_us(adamw, reps, SETS)
    rows.append(("AdamW fused fp32 124M/100", res["genesis"], res["torch"], 28 * n))
    res = kernel_us(adamw, 8, SETS)
    rows.append(("  AdamW kernels only", res["genesis"], res["torch"], 28 * n))
    res = host_us(adamw, reps, SETS)
    rows.append(("  AdamW host issue time", res["genesis"], res["torch"], 28 * n))

    # SGD momentum: 20 bytes per parameter (read p, g, buf; write p, buf).
    t_sgd = [torch.optim.SGD(t, lr=1e-3, momentum=0.9, foreach=True) for t, _ in sets]
    g_sgd = [genesis.optim.SGD(g, lr=1e-3, momentum=0.9) for _, g in sets]
    sgd = {"genesis": lambda k: g_sgd[k].step(), "torch": lambda k: t_sgd[k].step()}
    res = interleaved_us(sgd, reps, SETS)
    rows.append(("SGD momentum fp32 124M/100", res["genesis"], res["torch"], 20 * n))
    res = kernel_us(sgd, 8, SETS)
    rows.append(("  SGD kernels only", res["genesis"], res["torch"], 20 * n))

    # clip_grad_norm_: read every gradient twice, write it once (12 bytes per parameter).
    clip = {
        "genesis": lambda k: gnn.utils.clip_grad_norm_(sets[k][1], 1e9),
        "torch": lambda k: torch.nn.utils.clip_grad_norm_(sets[k][0], 1e9, foreach=True),
    }
    res = interleaved_us(clip, reps, SETS)
    rows.append(("clip_grad_norm_ fp32 124M/100", res["genesis"], res["torch"], 12 * n))
    res = kernel_us(clip, 8, SETS)
    rows.append(("  clip kernels only", res["genesis"], res["torch"], 12 * n))

    print(f"\n{'case':<32} {'genesis_us':>11} {'torch_us':>10} {'ratio':>7} {'genesis GB/s':>13}")
    for name, g_us, t_us, nbytes in rows:
        print(f"{name:<32} {g_us:11.1f} {t_us:10.1f} {t_us / g_us:6.2f}x {nbytes / g_us / 1e3:13.0f}")

    if args.check:
        check_sets = make_sets(shapes)
        tps, gps = check_sets[0]
        for name, topt, gopt in (
            ("AdamW fused", torch.optim.AdamW(tps, lr=1e-3, fused=True), genesis.optim.AdamW(gps, lr=1e-3, fused=True)),
            ("SGD momentum", torch.optim.SGD(tps, lr=0.1, momentum=0.9), genesis.optim.SGD(gps, lr=0.1, momentum=0.9)),
        ):
            for _ in range(3):
                topt.step()
                gopt.step()
            torch.cuda.synchronize()
            print(f"check {name:<14} max rel error {rel_err(gps, tps):.2e}")
        tn = torch.nn.utils.clip_grad_norm_(tps, 0.5)
        gn = gnn.utils.clip_grad_norm_(gps, 0.5)
        torch.cuda.synchronize()
        norm_err = abs(float(gn.item()) - float(tn)) / float(tn)
        grads_err = rel_err_grads(gps, tps)
        print(f"check clip_grad_norm_  norm rel error {norm_err:.2e}  grads max rel error {grads_err:.2e}")


def rel_err_grads(gps, tps) -> float:
    return rel_err([p.grad for p in gps], [p.grad for p in tps])


if __name__ == "__main__":
    main()
