"""Fused LayerNorm / RMSNorm against torch eager on the GPU: one process, interleaved, CUDA-event medians.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_normalization.py [--check] [--quick]

The issue's shape: (8192, 4096) rows, bfloat16 and float32, weight and bias (RMSNorm: weight) in the
input's dtype. Each case times the forward alone (recording the graph: x, weight and bias require grad)
and forward + backward (the gradients of x, weight and bias), through genesis.nn.functional against
torch.nn.functional. Both run on the legacy default stream, so torch's CUDA events time genesis too.
Four input sets are rotated so that L2 flatters neither side. ``--check`` compares both with a float64
reference at the same shapes and prints the relative errors ||out - ref|| / ||ref||.

Two more rows per case separate the kernels from the host: "kernels only" launches genesis's two
kernels on preallocated buffers (GPU time alone), and "8 back to back" times eight forward + backward
steps between one pair of events, so the host runs ahead of the GPU as it does in a training loop.
"""

from __future__ import annotations

import argparse

import torch

import genesis
import genesis.nn.functional as GF
import genesis_kernels as gk
from timing import host_us, interleaved_us

SHAPE = (8192, 4096)
SETS = 4


class Case:
    """Input sets shared by both frameworks (genesis views torch's memory through DLPack)."""

    def __init__(self, op: str, dtype: torch.dtype) -> None:
        self.op, self.dtype = op, dtype
        n = SHAPE[-1]
        gen = torch.Generator(device="cuda").manual_seed(0)
        self.t_x = [torch.randn(SHAPE, device="cuda", dtype=dtype, generator=gen).requires_grad_() for _ in range(SETS)]
        self.t_dy = [torch.randn(SHAPE, device="cuda", dtype=dtype, generator=gen) for _ in range(SETS)]
        self.t_w = (1 + 0.1 * torch.randn(n, device="cuda", dtype=dtype, generator=gen)).requires_grad_()
        self.t_b = (0.1 * torch.randn(n, device="cuda", dtype=dtype, generator=gen)).requires_grad_()
        self.g_x = [genesis.from_dlpack(t.detach()).requires_grad_() for t in self.t_x]
        self.g_dy = [genesis.from_dlpack(t) for t in self.t_dy]
        self.g_w = genesis.from_dlpack(self.t_w.detach()).requires_grad_()
        self.g_b = genesis.from_dlpack(self.t_b.detach()).requires_grad_()

    def torch_fwd(self, i: int) -> torch.Tensor:
        x = self.t_x[i]
        if self.op == "rms_norm":
            return torch.nn.functional.rms_norm(x, SHAPE[-1:], self.t_w, 1e-6)
        return torch.nn.functional.layer_norm(x, SHAPE[-1:], self.t_w, self.t_b, 1e-5)

    def genesis_fwd(self, i: int):
        x = self.g_x[i]
        if self.op == "rms_norm":
            return GF.rms_norm(x, SHAPE[-1:], self.g_w, 1e-6)
        return GF.layer_norm(x, SHAPE[-1:], self.g_w, self.g_b, 1e-5)

    def torch_step(self, i: int) -> None:
        for t in (self.t_x[i], self.t_w, self.t_b):
            t.grad = None
        self.torch_fwd(i).backward(self.t_dy[i])

    def genesis_step(self, i: int) -> None:
        for t in (self.g_x[i], self.g_w, self.g_b):
            t.grad = None
        self.genesis_fwd(i).backward(self.g_dy[i])


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


class KernelOnly:
    """The two kernels launched straight on torch's memory, outputs preallocated: the GPU time alone,
    so the full-stack rows minus these are genesis's host cost per call (where the GPU waited on it)."""

    def __init__(self, case: Case) -> None:
        rows, n = SHAPE
        rms = case.op == "rms_norm"
        self.rms, self.eps = rms, 1e-6 if rms else 1e-5
        self.x = [buf(t.detach()) for t in case.t_x]
        self.dy = [buf(t) for t in case.t_dy]
        self.w = buf(case.t_w.detach())
        self.b = None if rms else buf(case.t_b.detach())
        keep = [torch.empty(SHAPE, device="cuda", dtype=case.dtype) for _ in range(2)]
        keep += [torch.empty(rows, device="cuda") for _ in range(2)]
        keep += [torch.empty(n, device="cuda", dtype=case.dtype) for _ in range(2)]
        self._keep = keep  # the buffers below point into these
        self.y, self.dx, self.mean, self.rstd, self.dw, self.db = (buf(t) for t in keep)

    def fwd(self, i: int) -> None:
        mean = None if self.rms else self.mean
        gk.norm_forward(self.x[i], self.w, self.b, self.y, mean, self.rstd, eps=self.eps, rms=self.rms)

    def bwd(self, i: int) -> None:
        mean = None if self.rms else self.mean
        db = None if self.rms else self.db
        gk.norm_backward(self.x[i], self.dy[i], self.w, mean, self.rstd, self.dx, self.dw, db, rms=self.rms)


def rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a.double() - ref).norm() / ref.norm())


def check(case: Case) -> str:
    """Relative errors of genesis and of torch against float64, for the output and every gradient."""
    x, dy = case.t_x[0].detach().double().requires_grad_(), case.t_dy[0].double()
    w, b = case.t_w.detach().double().requires_grad_(), case.t_b.detach().double().requires_grad_()
    if case.op == "rms_norm":
        ref = torch.nn.functional.rms_norm(x, SHAPE[-1:], w, 1e-6)
    else:
        ref = torch.nn.functional.layer_norm(x, SHAPE[-1:], w, b, 1e-5)
    ref.backward(dy)
    refs = {"y": ref.detach(), "dx": x.grad, "dw": w.grad, "db": b.grad}
    case.torch_step(0)
    gy = case.genesis_fwd(0)
    case.genesis_step(0)
    t_out = {"y": case.torch_fwd(0).detach(), "dx": case.t_x[0].grad, "dw": case.t_w.grad, "db": case.t_b.grad}
    g_out = {"y": gy.detach(), "dx": case.g_x[0].grad, "dw": case.g_w.grad, "db": case.g_b.grad}
    parts = []
    for name, r in refs.items():
        if r is None:
            continue
        g = torch.from_dlpack(g_out[name])
        parts.append(f"{name} genesis {rel(g, r):.1e} torch {rel(t_out[name], r):.1e}")
    return "  ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="compare with a float64 reference, print rel errors")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_normalization.py needs a CUDA device")
    reps = 20 if args.quick else 50
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  shape {SHAPE}", flush=True)
    rows = []
    for dtype in (torch.bfloat16, torch.float32):
        for op in ("layer_norm", "rms_norm"):
            case = Case(op, dtype)
            name = f"{op} {str(dtype).removeprefix('torch.')}"
            if args.check:
                print(f"check {name}: {check(case)}", flush=True)
            fwd = interleaved_us({"genesis": case.genesis_fwd, "torch": case.torch_fwd}, reps, SETS)
            step = interleaved_us({"genesis": case.genesis_step, "torch": case.torch_step}, reps, SETS)
            kernels = KernelOnly(case)
            bare = interleaved_us({"fwd": kernels.fwd, "bwd": kernels.bwd}, reps, SETS)
            rows.append((f"{name} fwd", fwd["genesis"], fwd["torch"]))
            rows.append((f"{name} fwd+bwd", step["genesis"], step["torch"]))
            run = interleaved_us({"genesis": case.genesis_step, "torch": case.torch_step}, reps, SETS, burst=8)
            rows.append((f"{name} kernels only: fwd", bare["fwd"], fwd["torch"]))
            rows.append((f"{name} kernels only: fwd+bwd", bare["fwd"] + bare["bwd"], step["torch"]))
            rows.append((f"{name} fwd+bwd, 8 back to back", run["genesis"], run["torch"]))
            host = host_us({"genesis": case.genesis_step, "torch": case.torch_step}, reps, SETS)
            rows.append((f"{name} fwd+bwd, host issue time", host["genesis"], host["torch"]))
            print("\n".join(str(r) for r in rows[-6:]), flush=True)
            del case
            torch.cuda.empty_cache()
    print(f"\n{'case':<42} {'genesis_us':>11} {'torch_us':>10} {'ratio(torch/genesis)':>21}")
    for name, g, t in rows:
        print(f"{name:<42} {g:11.1f} {t:10.1f} {t / g:21.2f}")
    print("kernels only: genesis's kernels on preallocated buffers, against torch's full call")
    print("8 back to back: eight steps between the events, the host free to run ahead (per-step time)")
    print("host issue time: perf_counter around one call, the GPU idle before it (no wait for it counted)")


if __name__ == "__main__":
    main()
