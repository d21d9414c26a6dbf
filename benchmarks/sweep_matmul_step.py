"""The GPT-2-small training step's matmuls as the step makes them, against torch, with config candidates.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_matmul_step.py [--reps 20]

benchmarks/sweep_matmul_wgrad.py times the products with bf16 outputs. A genesis training step under bf16
autocast makes some of them differently (benchmarks/profile_gpt_kernels.py lists them): the forward adds the
float32 bias in the epilogue, and every product whose gradient goes to a float32 tensor (the weight
gradients of the float32 master weights, the input gradients of layers fed by a float32 LayerNorm output)
writes float32 straight from the accumulator. torch writes bf16 there and casts in a second kernel, so for
those calls torch's figure is the product plus the cast ("torch mm + cast"), and its bare product is shown too.

Each call is listed with its count per step (12 layers and the LM head); the shipped config (marked ``*``,
from ``matmul._tma_config``) and the candidates are planned through ``matmul_plan(config=...)``, checked
against a float64 reference (relative error <= 1e-2), and timed interleaved with torch (CUDA-event medians,
input sets rotated; the shipped plan is timed twice, first and last, and the spread of the two shows what
the order of the calls does to a figure). The summary gives the step's total matmul time for the shipped
choice, for the best candidate per call, and for torch, so that a config-table change can be judged by what
the step gains.
"""

from __future__ import annotations

import argparse

import torch

import genesis_kernels as gk
from sweep_matmul_wgrad import buf, interleaved_us, mm, operand

Cfg = mm.TmaConfig
# (name, M, N, K, layout, output dtype, bias, calls per step); layouts as in sweep_matmul_wgrad.py
CALLS = [
    ("qkv fwd", 8192, 2304, 768, "NT", torch.bfloat16, True, 12),
    ("attn.proj fwd", 8192, 768, 768, "NT", torch.bfloat16, True, 12),
    ("fc fwd", 8192, 3072, 768, "NT", torch.bfloat16, True, 12),
    ("mlp.proj fwd", 8192, 768, 3072, "NT", torch.bfloat16, True, 12),
    ("lm_head fwd", 8192, 50304, 768, "NT", torch.bfloat16, False, 1),
    ("lm_head dgrad", 8192, 768, 50304, "NN", torch.float32, False, 1),
    ("lm_head wgrad", 50304, 768, 8192, "TN", torch.float32, False, 1),
    ("mlp.proj dgrad", 8192, 3072, 768, "NN", torch.bfloat16, False, 12),
    ("mlp.proj wgrad", 768, 3072, 8192, "TN", torch.float32, False, 12),
    ("fc dgrad", 8192, 768, 3072, "NN", torch.float32, False, 12),
    ("fc wgrad", 3072, 768, 8192, "TN", torch.float32, False, 12),
    ("attn.proj dgrad", 8192, 768, 768, "NN", torch.bfloat16, False, 12),
    ("attn.proj wgrad", 768, 768, 8192, "TN", torch.float32, False, 12),
    ("qkv dgrad", 8192, 768, 2304, "NN", torch.float32, False, 12),
    ("qkv wgrad", 2304, 768, 8192, "TN", torch.float32, False, 12),
]
CANDIDATES = [
    Cfg(128, 128, 64, 8, 4),
    Cfg(128, 256, 64, 8, 3),
    Cfg(128, 256, 64, 8, 2),
    Cfg(256, 128, 64, 8, 3),
    Cfg(256, 128, 64, 8, 2),
    Cfg(128, 128, 64, 8, 3),
    Cfg(128, 128, 64, 4, 4),
    Cfg(128, 128, 64, 8, 4, stream_k=True, warp_specialize=False),
    Cfg(128, 128, 64, 4, 4, stream_k=True, warp_specialize=False),
]


def label(cfg: Cfg) -> str:
    ws = " ws" if cfg.warp_specialize else ""
    return f"{'SK' if cfg.stream_k else 'DP'} {cfg.bm}x{cfg.bn}x{cfg.bk} w{cfg.warps} s{cfg.stages}{ws}"


def sweep(name: str, m: int, n: int, k: int, layout: str, odt: torch.dtype, bias: bool, reps: int) -> dict:
    sets = max(2, min(4, (400 << 20) // ((m * k + k * n) * 2)))
    a = [operand(m, k, layout[0] == "T") for _ in range(sets)]
    b = [operand(k, n, layout[1] == "T") for _ in range(sets)]
    bvec = torch.randn(n, device="cuda", dtype=torch.float32) if bias else None
    out = torch.empty(1, m, n, device="cuda", dtype=odt)
    low = torch.empty(1, m, n, device="cuda", dtype=torch.bfloat16)
    ga, gb, go = [buf(x) for x in a], [buf(x) for x in b], buf(out)
    gbias = buf(bvec) if bias else None
    ref = a[0][0].double() @ b[0][0].double() + (bvec.double() if bias else 0)
    stream = torch.cuda.current_stream().cuda_stream
    bias_ptr = gbias.ptr if gbias is not None else go.ptr
    fns: dict = {}
    if bias:  # torch's autocast Linear: bf16 bias, addmm with the bias in cuBLAS's epilogue
        b16 = bvec.bfloat16()
        fns["torch"] = lambda i: torch.addmm(b16, a[i][0], b[i][0], out=low[0])
    else:
        fns["torch"] = lambda i: torch.mm(a[i][0], b[i][0], out=low[0])
    if odt == torch.float32:
        fns["torch mm + cast"] = lambda i: out[0].copy_(torch.mm(a[i][0], b[i][0], out=low[0]))
    shipped = gk.matmul_plan(ga[0], gb[0], go, bias=gbias)
    plans = {"shipped *": shipped}
    for cfg in CANDIDATES:
        try:
            plans[label(cfg)] = gk.matmul_plan(ga[0], gb[0], go, bias=gbias, config=cfg)
        except Exception as exc:  # a sweep: report and go on
            print(f"    {label(cfg)}: no plan: {type(exc).__name__}: {str(exc)[:120]}")
    for key, plan in list(plans.items()):
        try:
            out.fill_(float("nan"))
            plan(ga[0].ptr, gb[0].ptr, go.ptr, bias_ptr, stream)
            torch.cuda.synchronize()
            err = ((out[0].double() - ref).norm() / ref.norm()).item()
            if not err <= 1e-2:
                raise RuntimeError(f"relative error {err:.2e}")
        except Exception as exc:
            print(f"    {key}: skipped: {type(exc).__name__}: {str(exc)[:160]}")
            del plans[key]
            continue
        fns[key] = lambda i, plan=plan: plan(ga[i].ptr, gb[i].ptr, go.ptr, bias_ptr, stream)
    if "shipped *" in plans:  # the same plan timed again, last: the spread between the two is the noise
        plans["shipped (again)"] = plans["shipped *"]
        fns["shipped (again)"] = fns["shipped *"]
    t = interleaved_us(fns, reps=reps, sets=sets)
    torch_us = t.get("torch mm + cast", t["torch"])
    flops = 2 * m * n * k
    print(
        f"  {name:<16} {layout} M={m} N={n} K={k} out {str(odt)[6:]}{' +bias' if bias else ''}: "
        f"torch {t['torch']:.1f} us" + (f", + cast {torch_us:.1f} us" if odt == torch.float32 else "")
    )
    ranked = sorted((v, k_) for k_, v in t.items() if k_ in plans)
    for us, key in ranked:
        print(f"    {key:<28} {us:8.1f} us  torch/genesis {torch_us / us:5.2f}x  ({flops / us / 1e6:4.0f} TFLOP/s)")
    return dict(torch=torch_us, torch_mm=t["torch"], shipped=t["shipped *"], best=ranked[0][0], best_key=ranked[0][1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    totals = dict(torch=0.0, torch_mm=0.0, shipped=0.0, best=0.0)
    for name, m, n, k, layout, odt, bias, count in CALLS:
        r = sweep(name, m, n, k, layout, odt, bias, args.reps)
        for key in totals:
            totals[key] += count * r[key]
        print(f"    -> best {r['best_key']}: x{count} per step saves {count * (r['shipped'] - r['best']):.0f} us")
    print("\nper step (ms): " + ", ".join(f"{k} {v / 1e3:.2f}" for k, v in totals.items()))
    shipped, best = totals["torch"] / totals["shipped"], totals["torch"] / totals["best"]
    print(f"torch / shipped {shipped:.3f}, torch / best {best:.3f}")


if __name__ == "__main__":
    main()
