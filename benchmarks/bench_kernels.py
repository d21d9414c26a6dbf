"""Genesis kernels against torch on the GPU: one process, interleaved, medians of CUDA-event times.

    PYTHONPATH=packages/genesis-kernels/src:packages/genesis-storage/src python3 benchmarks/bench_kernels.py [--quick]

Prints one line per case with both medians and the ratio torch_time / genesis_time
(> 1 means Genesis is faster), plus achieved bandwidth as a share of the measured
device-to-device copy bandwidth. Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch

import genesis_kernels as gk


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def interleaved(fns: dict[str, Callable[[], None]], reps: int, warmup: int = 3) -> dict[str, float]:
    """Median milliseconds per call of each function, alternating between them every repetition."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {k: statistics.median(v) for k, v in times.items()}


def report(name: str, g_ms: float, t_ms: float, nbytes: int | None = None, copy_gbs: float | None = None) -> None:
    line = f"{name:<44} genesis {g_ms * 1e3:9.1f} us   torch {t_ms * 1e3:9.1f} us   ratio {t_ms / g_ms:5.2f}x"
    if nbytes is not None:
        gbs = nbytes / (g_ms * 1e-3) / 1e9
        line += f"   {gbs:7.0f} GB/s"
        if copy_gbs:
            line += f" ({100 * gbs / copy_gbs:5.1f}% of copy)"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller tensors, fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_kernels.py needs a CUDA device")
    reps = 10 if args.quick else 30
    mib = 64 if args.quick else 256
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  tensors of {mib} MiB")

    # Copy bandwidth: the ceiling for memory-bound kernels (read + write).
    n32 = mib * 2**20 // 4
    src, dst = torch.randn(n32, device="cuda"), torch.empty(n32, device="cuda")
    t = interleaved({"genesis": lambda: gk.copy(buf(src), buf(dst)), "torch": lambda: dst.copy_(src)}, reps)
    copy_gbs = 2 * src.numel() * 4 / (t["torch"] * 1e-3) / 1e9
    report("copy fp32 (torch copy_ = bandwidth ref)", t["genesis"], t["torch"], 2 * n32 * 4, copy_gbs)

    for dtype in (torch.float32, torch.bfloat16):
        n = mib * 2**20 // dtype.itemsize
        side = int(n**0.5)
        a = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        o = torch.empty(n, device="cuda", dtype=dtype)
        cdt = "float32"
        for op, tfn in (("add", torch.add), ("mul", torch.mul)):
            t = interleaved(
                {
                    "genesis": partial(gk.binary, op, buf(a), buf(b), buf(o), compute_dtype=cdt),
                    "torch": partial(tfn, a, b, out=o),
                },
                reps,
            )
            report(f"{op} {str(dtype)[6:]} contiguous", t["genesis"], t["torch"], 3 * n * dtype.itemsize, copy_gbs)
        a2 = a[: side * side].view(side, side)
        b2t = b[: side * side].view(side, side).t()
        o2 = o[: side * side].view(side, side)
        for op, tfn in (("add", torch.add), ("mul", torch.mul)):
            t = interleaved(
                {
                    "genesis": partial(gk.binary, op, buf(a2), buf(b2t), buf(o2), compute_dtype=cdt),
                    "torch": partial(tfn, a2, b2t, out=o2),
                },
                reps,
            )
            report(
                f"{op} {str(dtype)[6:]} one operand transposed",
                t["genesis"],
                t["torch"],
                3 * side * side * dtype.itemsize,
                copy_gbs,
            )
        del a, b, o

    x = torch.randn(8192, 8192, device="cuda")
    for label, dims in (("sum over last dim", (1,)), ("sum over first dim", (0,)), ("sum over all", (0, 1))):
        out = torch.empty(tuple(s for d, s in enumerate(x.shape) if d not in dims), device="cuda")
        t = interleaved(
            {
                "genesis": lambda dims=dims, out=out: gk.reduce("sum", buf(x), buf(out), dims),
                "torch": lambda dims=dims, out=out: torch.sum(x, dim=dims, out=out),
            },
            reps,
        )
        report(f"{label} 8192x8192 fp32", t["genesis"], t["torch"], x.numel() * 4, copy_gbs)

    x = torch.randn(8192, 8192, device="cuda")
    y = torch.empty_like(x)
    t = interleaved({"genesis": lambda: gk.softmax(buf(x), buf(y)), "torch": lambda: torch.softmax(x, -1, out=y)}, reps)
    report("softmax 8192x8192 fp32", t["genesis"], t["torch"], 2 * x.numel() * 4, copy_gbs)
    for dtype in (torch.bfloat16, torch.float32):
        a = torch.randn(4096, 4096, device="cuda", dtype=dtype)
        b = torch.randn(4096, 4096, device="cuda", dtype=dtype)
        o = torch.empty(4096, 4096, device="cuda", dtype=dtype)
        a3, b3, o3 = a.unsqueeze(0), b.unsqueeze(0), o.unsqueeze(0)
        t = interleaved(
            {"genesis": partial(gk.matmul, buf(a3), buf(b3), buf(o3)), "torch": partial(torch.matmul, a, b, out=o)},
            max(3, reps // 3),
        )
        tflops = 2 * 4096**3 / (t["genesis"] * 1e-3) / 1e12
        report(f"matmul 4096^3 {str(dtype)[6:]} ({tflops:.0f} TFLOP/s)", t["genesis"], t["torch"])

    # Launch overhead: host wall time per small op in a tight loop (buffers built once, as the
    # ndarray layer would cache them); the GPU work (1,024 elements) is negligible.
    a, b, o = (torch.randn(1024, device="cuda") for _ in range(3))
    ba, bb, bo = buf(a), buf(b), buf(o)
    loops = 2000 if args.quick else 20000
    for _ in range(100):
        gk.binary("add", ba, bb, bo, compute_dtype="float32")
        torch.add(a, b, out=o)
    results = {}
    for name, fn in (
        ("genesis", lambda: gk.binary("add", ba, bb, bo, compute_dtype="float32")),
        ("torch out=", lambda: torch.add(a, b, out=o)),
        ("torch a + b", lambda: a + b),
    ):
        samples = []
        for _ in range(5):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(loops):
                fn()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - start) / loops * 1e3)
        results[name] = statistics.median(samples)
    for name in ("torch out=", "torch a + b"):
        report(f"small add 1024 elems, wall/op vs {name}", results["genesis"], results[name])

    # Indexing on 10^7 elements. Genesis checks bounds on the device and reads the error flag back,
    # which waits for the stream (the CUDA-event time includes that round trip); torch asserts on
    # the device instead. masked_select: both sides count first (torch syncs for the size too).
    n = 10**7
    x = torch.randn(n, device="cuda")
    idx = torch.randint(0, n, (n,), device="cuda")
    out = torch.empty(n, device="cuda")
    rows = x.view(n // 100, 100)
    ridx = torch.randint(0, n // 100, (n // 100,), device="cuda")
    rout = torch.empty(n // 100, 100, device="cuda")
    # Each once as the kernels see an index of unknown values (the device check and its wait), once with
    # the index's range known on the host, as the full stack knows it for an index made by randint /
    # arange / an upload (genesis_ndarray's known ranges): no device check, no wait.
    for label, known in (
        ("gather 1e7 fp32 (int64 index)", None),
        ("gather 1e7 fp32, index range known", (0, n - 1, False)),
    ):
        t = interleaved(
            {
                "genesis": lambda known=known: gk.gather(buf(x), 0, buf(idx), buf(out), index_range=known),
                "torch": lambda: torch.gather(x, 0, idx, out=out),
            },
            reps,
        )
        report(label, t["genesis"], t["torch"], n * (4 + 8 + 4), copy_gbs)
    for label, known in (
        ("index_select 1e5 rows x 100 fp32", None),
        ("index_select 1e5 x 100, index range known", (0, n // 100 - 1, False)),
    ):
        t = interleaved(
            {
                "genesis": lambda known=known: gk.index_select(buf(rows), 0, buf(ridx), buf(rout), index_range=known),
                "torch": lambda: torch.index_select(rows, 0, ridx, out=rout),
            },
            reps,
        )
        report(label, t["genesis"], t["torch"], 2 * n * 4, copy_gbs)
    mask = torch.rand(n, device="cuda") > 0.5

    def genesis_masked_select() -> None:
        m = gk.nonzero_count(buf(mask))
        o = torch.empty(m, device="cuda")
        gk.masked_select(buf(x), buf(mask), buf(o))

    t = interleaved({"genesis": genesis_masked_select, "torch": lambda: torch.masked_select(x, mask)}, reps)
    report("masked_select 1e7 fp32 (half true)", t["genesis"], t["torch"], n * (4 + 1) + n * 2, copy_gbs)


if __name__ == "__main__":
    main()
