"""One call of each operation whose benchmark misses its target, genesis beside torch, for Nsight Compute.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) ncu --profile-from-start off --csv --page details \
        --section SpeedOfLight --section Occupancy --section LaunchStats \
        python3 benchmarks/profile_targets.py > ncu.csv
    python3 benchmarks/profile_targets.py --summarize ncu.csv      # one line per kernel

Every operation runs once untimed first (compiles, cuDNN plans, allocator warm-up); only the second
round, between cudaProfilerStart and cudaProfilerStop, is profiled. The shapes are the benchmarks':

- attention: causal, bf16, (4, 16, 4096, 128), forward + backward (bench_attention.py); genesis, then
  torch's default SDPA backend (cuDNN on Hopper);
- norms: LayerNorm and RMSNorm, bf16 (8192, 4096), forward + backward (bench_normalization.py);
- gelu: erf GELU, bf16 (8192, 12288), forward + backward (bench_activation.py);
- matmul: GPT-2's MLP weight gradient dW = dy^T x, 768 x 3072 x 8192 with dy read transposed.

Not a benchmark: the summary's durations are under the profiler's replay (clocks locked to base), so
compare kernels within one report, not with bench_* timings.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Callable

import torch
import torch.nn.functional as TF

import genesis
import genesis.nn.functional as GF
import genesis_kernels as gk


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def leaves(*tensors: torch.Tensor) -> tuple[list[torch.Tensor], list[genesis.Tensor]]:
    """The same memory as torch leaves and genesis leaves (through DLPack), each requiring grad."""
    t = [x.detach().requires_grad_() for x in tensors]
    g = [genesis.from_dlpack(x.detach()).requires_grad_() for x in tensors]
    return t, g


def step(forward: Callable[[], object], dy: object, params: list) -> Callable[[], None]:
    """forward().backward(dy) with the leaves' gradients cleared first (no accumulation kernels)."""

    def run() -> None:
        for p in params:
            p.grad = None
        forward().backward(dy)  # type: ignore[attr-defined]

    return run


def attention_ops() -> dict[str, Callable[[], object]]:
    b, h, seq, d = 4, 16, 4096, 128
    (tq, tk, tv), (gq, gk_, gv) = leaves(
        *(torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    )
    t_dy = torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16)
    g_dy = genesis.from_dlpack(t_dy)
    return {
        "attention genesis": step(
            lambda: GF.scaled_dot_product_attention(gq, gk_, gv, is_causal=True), g_dy, [gq, gk_, gv]
        ),
        "attention torch": step(
            lambda: TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True), t_dy, [tq, tk, tv]
        ),
    }


def norm_ops() -> dict[str, Callable[[], object]]:
    shape = (8192, 4096)
    (tx, tw, tb), (gx, gw, gb) = leaves(
        torch.randn(shape, device="cuda", dtype=torch.bfloat16),
        1 + 0.1 * torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16),
        0.1 * torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16),
    )
    t_dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    g_dy = genesis.from_dlpack(t_dy)
    n = shape[-1:]
    return {
        "layer_norm genesis": step(lambda: GF.layer_norm(gx, n, gw, gb, 1e-5), g_dy, [gx, gw, gb]),
        "layer_norm torch": step(lambda: TF.layer_norm(tx, n, tw, tb, 1e-5), t_dy, [tx, tw, tb]),
        "rms_norm genesis": step(lambda: GF.rms_norm(gx, n, gw, 1e-6), g_dy, [gx, gw]),
        "rms_norm torch": step(lambda: TF.rms_norm(tx, n, tw, 1e-6), t_dy, [tx, tw]),
    }


def gelu_ops() -> dict[str, Callable[[], object]]:
    shape = (8192, 4 * 3072)
    (tx,), (gx,) = leaves(torch.randn(shape, device="cuda", dtype=torch.bfloat16))
    t_dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    g_dy = genesis.from_dlpack(t_dy)
    return {
        "gelu genesis": step(lambda: GF.gelu(gx), g_dy, [gx]),
        "gelu torch": step(lambda: TF.gelu(tx), t_dy, [tx]),
    }


def matmul_ops() -> dict[str, Callable[[], object]]:
    m, n, k = 768, 3072, 8192
    a = torch.randn(k, m, device="cuda", dtype=torch.bfloat16).t().unsqueeze(0)  # dy^T, read transposed
    w = torch.randn(1, k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(1, m, n, device="cuda", dtype=torch.bfloat16)
    return {
        "matmul TN genesis": lambda: gk.matmul(buf(a), buf(w), buf(c)),
        "matmul TN torch": lambda: torch.matmul(a, w),
    }


TARGETS = {"attention": attention_ops, "norms": norm_ops, "gelu": gelu_ops, "matmul": matmul_ops}


def profile(targets: list[str]) -> None:
    ops: dict[str, Callable[[], object]] = {}
    for name in targets:
        ops.update(TARGETS[name]())
    for fn in ops.values():  # compile, plan and allocate outside the profiled range
        fn()
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    for name, fn in ops.items():
        torch.cuda.synchronize()
        with torch.cuda.nvtx.range(name):
            cudart.cudaProfilerStart()
            fn()
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()
        print(f"profiled: {name}", flush=True)


# (ncu metric, column title); Block Size and Grid Size are columns of every row, the rest metrics
_COLUMNS = [
    ("Duration", "us"),
    ("DRAM Throughput", "DRAM%"),
    ("Compute (SM) Throughput", "SM%"),
    ("Registers Per Thread", "regs"),
    ("Achieved Occupancy", "occ%"),
    ("Grid Size", "grid"),
    ("Block Size", "block"),
]
_TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}


def summarize(path: str) -> None:
    """One line per profiled kernel of ncu's ``--csv --page details`` output, in launch order."""
    kernels: dict[str, dict[str, str]] = {}
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # drop the program's own output
    for row in csv.DictReader(lines):
        entry = kernels.setdefault(row["ID"], {"name": row["Kernel Name"]})
        entry["Grid Size"], entry["Block Size"] = row["Grid Size"], row["Block Size"]
        value = row["Metric Value"].replace(",", "")
        if row["Metric Name"] == "Duration":
            value = f"{float(value) * _TO_US.get(row['Metric Unit'], math.nan):.1f}"
        entry[row["Metric Name"]] = value
    print(f"{'kernel':<64} " + " ".join(f"{title:>9}" for _, title in _COLUMNS))
    for entry in kernels.values():
        cells = " ".join(f"{entry.get(metric, '-').replace(' ', ''):>9}" for metric, _ in _COLUMNS)
        print(f"{entry['name'][:64]:<64} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("targets", nargs="*", default=list(TARGETS), help=f"of {list(TARGETS)} (default all)")
    parser.add_argument("--summarize", metavar="CSV", help="condense an ncu --csv --page details report")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
    else:
        profile(args.targets)


if __name__ == "__main__":
    main()
