"""Flash attention (genesis_kernels.attention) against torch's sdpa on the GPU: one process, interleaved,
CUDA-event medians after warm-up, inputs rotated among 4 sets so L2 flatters neither side.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_attention.py [--check] [--quick]

Cases (issue #10): causal forward + backward, bf16, (B, H, L, D) = (4, 16, 4096, 128) against torch's
flash backend (sdpa_kernel(FLASH_ATTENTION)) and against torch's default choice (cuDNN on Hopper);
forward-only TFLOP/s of both; decode (B=8, H=32, Lq=1, Lk=8192, D=128) forward. Genesis is timed at the
kernel level (launchers on torch's tensors and stream); torch through its sdpa (+ autograd for the
backward). ``--check`` prints the relative error ||genesis - torch|| / ||torch|| of the output and each
gradient at the benchmark shapes. Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
from collections.abc import Callable

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import genesis_kernels as gk

SETS = 4


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def interleaved(fns: dict[str, Callable[[int], None]], reps: int, warmup: int = 3) -> dict[str, float]:
    """Median milliseconds per call of each function (called with the input set's index), alternating."""
    for fn in fns.values():
        for i in range(warmup):
            fn(i % SETS)
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(reps):
        for name, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(r % SETS)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {k: statistics.median(v) for k, v in times.items()}


class Genesis:
    """Preallocated outputs for one shape; forward and forward + backward through the launchers."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, causal: bool) -> None:
        self.causal, self.scale = causal, 1.0 / math.sqrt(q.shape[-1])
        self.out = torch.empty_like(q)
        self.lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
        self.dq, self.dk, self.dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(k)

    def forward(self, q, k, v) -> None:
        s = torch.cuda.current_stream().cuda_stream
        gk.attention_forward(buf(q), buf(k), buf(v), buf(self.out), buf(self.lse), causal=self.causal,
                             scale=self.scale, stream=s)  # fmt: skip

    def backward(self, q, k, v, g) -> None:
        s = torch.cuda.current_stream().cuda_stream
        gk.attention_backward(buf(q), buf(k), buf(v), buf(self.out), buf(g), buf(self.lse), buf(self.dq),
                              buf(self.dk), buf(self.dv), causal=self.causal, scale=self.scale, stream=s)  # fmt: skip


def torch_fwd_bwd(backend, q, k, v, g, causal: bool) -> None:
    ctx = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
    with ctx:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.backward(g)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="compare numerically with torch at these shapes")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_attention.py needs a CUDA device")
    reps = 5 if args.quick else 15
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    rows: list[tuple[str, float, float, str]] = []
    training(rows, reps, args.check)
    torch.cuda.empty_cache()
    decode(rows, reps, args.check)
    print(f"\n{'case':<52} {'genesis_us':>10} {'torch_us':>10} {'ratio':>7}  note")
    for name, g_ms, t_ms, note in rows:
        print(f"{name:<52} {g_ms * 1e3:10.1f} {t_ms * 1e3:10.1f} {t_ms / g_ms:6.2f}x  {note}")
    print(f"peak memory (torch allocator, both sides): {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")


def training(rows: list, reps: int, check: bool) -> None:
    """Causal forward + backward and forward only at the training shape."""
    dt = torch.bfloat16
    B, H, L, D = 4, 16, 4096, 128
    qs = [torch.randn(B, H, L, D, device="cuda", dtype=dt, requires_grad=True) for _ in range(SETS)]
    ks = [torch.randn(B, H, L, D, device="cuda", dtype=dt, requires_grad=True) for _ in range(SETS)]
    vs = [torch.randn(B, H, L, D, device="cuda", dtype=dt, requires_grad=True) for _ in range(SETS)]
    gs = [torch.randn(B, H, L, D, device="cuda", dtype=dt) for _ in range(SETS)]
    gen = Genesis(qs[0], ks[0], causal=True)

    def g_fwd_bwd(i: int) -> None:
        gen.forward(qs[i].detach(), ks[i].detach(), vs[i].detach())
        gen.backward(qs[i].detach(), ks[i].detach(), vs[i].detach(), gs[i])

    def t_fwd_bwd(backend):
        def run(i: int) -> None:
            qs[i].grad = ks[i].grad = vs[i].grad = None
            torch_fwd_bwd(backend, qs[i], ks[i], vs[i], gs[i], True)

        return run

    t = interleaved(
        {"genesis": g_fwd_bwd, "flash": t_fwd_bwd(SDPBackend.FLASH_ATTENTION), "default": t_fwd_bwd(None)}, reps
    )
    name = f"causal fwd+bwd bf16 {B}x{H}x{L}x{D}"
    rows.append((name + " vs flash", t["genesis"], t["flash"], ""))
    rows.append((name + " vs default(cudnn)", t["genesis"], t["default"], ""))

    flops = 4 * B * H * L * L * D / 2  # causal: half of the two L x L x D products

    def t_fwd(backend):
        def run(i: int) -> None:
            ctx = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
            with ctx, torch.no_grad():
                torch.nn.functional.scaled_dot_product_attention(qs[i], ks[i], vs[i], is_causal=True)

        return run

    t = interleaved(
        {
            "genesis": lambda i: gen.forward(qs[i].detach(), ks[i].detach(), vs[i].detach()),
            "flash": t_fwd(SDPBackend.FLASH_ATTENTION),
            "default": t_fwd(None),
        },
        reps,
    )
    for other in ("flash", "default"):
        tf = f"{flops / t['genesis'] / 1e9:.0f} vs {flops / t[other] / 1e9:.0f} TFLOP/s"
        rows.append((f"causal fwd bf16 {B}x{H}x{L}x{D} vs {other}", t["genesis"], t[other], tf))

    if check:
        i = 0
        for q in (qs[i], ks[i], vs[i]):
            q.grad = None
        torch_fwd_bwd(None, qs[i], ks[i], vs[i], gs[i], True)
        with torch.no_grad():
            ref = torch.nn.functional.scaled_dot_product_attention(qs[i], ks[i], vs[i], is_causal=True)
        g_fwd_bwd(i)
        torch.cuda.synchronize()
        errs = [rel(gen.out, ref), rel(gen.dq, qs[i].grad), rel(gen.dk, ks[i].grad), rel(gen.dv, vs[i].grad)]
        print("check causal bf16: rel err out / dq / dk / dv = " + " / ".join(f"{e:.2e}" for e in errs))


def decode(rows: list, reps: int, check: bool) -> None:
    """One query against an 8192-key cache (the split-KV path)."""
    dt = torch.bfloat16
    B, H, Lk, D = 8, 32, 8192, 128
    qs = [torch.randn(B, H, 1, D, device="cuda", dtype=dt) for _ in range(SETS)]
    ks = [torch.randn(B, H, Lk, D, device="cuda", dtype=dt) for _ in range(SETS)]
    vs = [torch.randn(B, H, Lk, D, device="cuda", dtype=dt) for _ in range(SETS)]
    gen = Genesis(qs[0], ks[0], causal=False)

    def t_dec(i: int) -> None:
        torch.nn.functional.scaled_dot_product_attention(qs[i], ks[i], vs[i])

    t = interleaved({"genesis": lambda i: gen.forward(qs[i], ks[i], vs[i]), "default": t_dec}, reps * 2)
    gbs = 2 * B * H * Lk * D * 2 / (t["genesis"] * 1e-3) / 1e9
    rows.append((f"decode fwd bf16 B{B} H{H} Lq1 Lk{Lk} D{D}", t["genesis"], t["default"], f"{gbs:.0f} GB/s"))
    if check:
        ref = torch.nn.functional.scaled_dot_product_attention(qs[0], ks[0], vs[0])
        gen.forward(qs[0], ks[0], vs[0])
        torch.cuda.synchronize()
        print(f"check decode bf16: rel err out = {rel(gen.out, ref):.2e}")


if __name__ == "__main__":
    main()
