"""Genesis matmul against torch (cuBLAS) on the GPU: one process, interleaved, CUDA-event medians.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_matmul.py [--quick]

The cases are issue #10's targets: square bf16 / fp16 products, a batched product, tf32, and
the GPT-2-small training shapes (M = 8192 rows; N, K in {768, 2304, 3072, 50304}) in each
operand layout a Linear layer's forward and backward use:

    forward   y  = x  @ W^T   "NT" (W is (N, K) row-major, read transposed)
    dgrad     dx = dy @ W     "NN"
    wgrad     dW = dy^T @ x   "TN" (dy is (M, N) row-major, read transposed)

Each case rotates among several input sets so that L2 flatters neither side, and reports
torch_time / genesis_time (> 1: Genesis is faster) and Genesis's TFLOP/s. The kernel is driven
through genesis_kernels.matmul on the same memory torch uses; the last case times the full
stack (genesis.nn.functional.linear forward + backward) against torch's.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import torch

import genesis_kernels as gk


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def interleaved(fns: dict[str, Callable[[int], None]], sets: int, reps: int) -> dict[str, float]:
    """Median ms of each function (called with the input-set index), alternating every repetition."""
    for fn in fns.values():
        for i in range(2 * sets):
            fn(i % sets)
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(reps):
        for name, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(r % sets)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {k: statistics.median(v) for k, v in times.items()}


def operand(rows: int, cols: int, transposed: bool, dtype: torch.dtype) -> torch.Tensor:
    """A (rows, cols) operand, stored row-major or as the transpose of a row-major (cols, rows) matrix."""
    if transposed:
        return torch.randn(cols, rows, device="cuda", dtype=dtype).t()
    return torch.randn(rows, cols, device="cuda", dtype=dtype)


def case(name: str, m: int, n: int, k: int, layout: str, dtype: torch.dtype, batch: int, reps: int) -> float:
    tf32 = dtype == torch.float32
    flops = 2 * batch * m * n * k
    per_set = batch * (m * k + k * n) * dtype.itemsize
    sets = max(2, min(4, (400 << 20) // max(per_set, 1)))
    if batch > 1:
        a = [torch.randn(batch, m, k, device="cuda", dtype=dtype) for _ in range(sets)]
        b = [torch.randn(batch, k, n, device="cuda", dtype=dtype) for _ in range(sets)]
    else:
        a = [operand(m, k, layout[0] == "T", dtype) for _ in range(sets)]
        b = [operand(k, n, layout[1] == "T", dtype) for _ in range(sets)]
    out = torch.empty(batch, m, n, device="cuda", dtype=dtype)
    a3 = [x if x.ndim == 3 else x.unsqueeze(0) for x in a]
    b3 = [x if x.ndim == 3 else x.unsqueeze(0) for x in b]
    ga = [buf(x) for x in a3]
    gb = [buf(x) for x in b3]
    go = buf(out)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    ref = torch.matmul(a3[0].double(), b3[0].double())
    gk.matmul(ga[0], gb[0], go, allow_tf32=tf32)
    err = ((out.double() - ref).norm() / ref.norm()).item()
    t = interleaved(
        {
            "genesis": lambda i: gk.matmul(ga[i], gb[i], go, allow_tf32=tf32),
            "torch": lambda i: torch.matmul(a3[i], b3[i], out=out),
        },
        sets,
        reps,
    )
    ratio = t["torch"] / t["genesis"]
    print(
        f"{name:<40} genesis {t['genesis'] * 1e3:8.1f} us ({flops / t['genesis'] / 1e9:4.0f} TFLOP/s)  "
        f"torch {t['torch'] * 1e3:8.1f} us ({flops / t['torch'] / 1e9:4.0f})  ratio {ratio:5.2f}x  err {err:.1e}",
        flush=True,
    )
    return ratio


def linear_stack(reps: int) -> float:
    """genesis.nn.functional.linear forward + backward (bf16) against torch's, full stack."""
    import genesis

    m, k, n = 8192, 768, 3072
    xt = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    wt = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    bt = torch.randn(n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    gt = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    xg, wg, bg = (genesis.from_dlpack(t.detach()).requires_grad_() for t in (xt, wt, bt))
    gg = genesis.from_dlpack(gt)

    def run_genesis(_: int) -> None:
        genesis.nn.functional.linear(xg, wg, bg).backward(gg)

    def run_torch(_: int) -> None:
        torch.nn.functional.linear(xt, wt, bt).backward(gt)

    t = interleaved({"genesis": run_genesis, "torch": run_torch}, 1, reps)
    ratio = t["torch"] / t["genesis"]
    print(
        f"{'linear fwd+bwd 8192x768->3072 bf16 (stack)':<40} genesis {t['genesis'] * 1e3:8.1f} us  "
        f"torch {t['torch'] * 1e3:8.1f} us  ratio {ratio:5.2f}x",
        flush=True,
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 10 if args.quick else 30
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    ratios: dict[str, float] = {}
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    squares = [(4096, bf16), (4096, fp16), (8192, bf16), (8192, fp16)]
    for size, dt in squares[:1] if args.quick else squares:
        name = f"{size}^3 {str(dt)[6:]}"
        ratios[name] = case(name, size, size, size, "NN", dt, 1, reps)
    if not args.quick:
        ratios["batched 32x1024^3 bf16"] = case("batched 32x1024^3 bf16", 1024, 1024, 1024, "NN", bf16, 32, reps)
        ratios["8192^3 tf32 (NT)"] = case("8192^3 tf32 (NT)", 8192, 8192, 8192, "NT", fp32, 1, reps)
        for width, hidden in ((768, 2304), (768, 3072), (3072, 768), (768, 50304)):
            # a Linear(width -> hidden) over 8192 rows: forward, dgrad, wgrad
            ratios[f"fwd 8192x{width}->{hidden}"] = case(
                f"fwd  x@W^T  M=8192 K={width} N={hidden}", 8192, hidden, width, "NT", bf16, 1, reps
            )
            ratios[f"dgrad {hidden}->{width}"] = case(
                f"dgrad dy@W  M=8192 K={hidden} N={width}", 8192, width, hidden, "NN", bf16, 1, reps
            )
            ratios[f"wgrad {hidden}x{width}"] = case(
                f"wgrad dy^T@x M={hidden} K=8192 N={width}", hidden, width, 8192, "TN", bf16, 1, reps
            )
    ratios["linear stack"] = linear_stack(reps)
    print("\nsummary (torch time / genesis time):")
    for name, r in ratios.items():
        print(f"  {name:<28} {r:5.2f}x")
    print(f"  geometric mean               {statistics.geometric_mean(ratios.values()):5.2f}x")


if __name__ == "__main__":
    main()
