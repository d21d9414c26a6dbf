"""Fused GELU / SiLU / SwiGLU against torch eager on the GPU: one process, interleaved, CUDA-event medians.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_activation.py [--check] [--quick]

Issue #10's target: GELU / SwiGLU forward + backward >= 1.2x torch eager. Shapes: the MLP activation of a
GPT-2-sized layer, (8192, 4 * 3072), for GELU (erf and tanh) and SiLU; for SwiGLU gate and up are the two
halves of one (8192, 2 * 8192) projection output (x.chunk(2, -1), read in place), against torch's
``F.silu(a) * b`` on the same halves. bfloat16 and float32. Each case times the forward alone (recording
the graph) and forward + backward (the input's gradient). Both run on the legacy default stream, so
torch's CUDA events time genesis too; four input sets are rotated so that L2 flatters neither side.
``--check`` compares both with a float64 reference at the same shapes and prints ||out - ref|| / ||ref||.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as TF

import genesis
import genesis.nn.functional as GF
from timing import interleaved_us

MLP_SHAPE = (8192, 4 * 3072)
SWIGLU_SHAPE = (8192, 2 * 8192)
SETS = 4

# name -> (input shape, torch fn, genesis fn); the gated ones take the input's two halves
OPS: dict[str, tuple[tuple[int, int], Callable, Callable]] = {
    "gelu": (MLP_SHAPE, TF.gelu, GF.gelu),
    "gelu_tanh": (MLP_SHAPE, lambda x: TF.gelu(x, approximate="tanh"), lambda x: GF.gelu(x, approximate="tanh")),
    "silu": (MLP_SHAPE, TF.silu, GF.silu),
    "swiglu": (
        SWIGLU_SHAPE,
        lambda x: TF.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1],
        lambda x: GF.swiglu(*x.chunk(2, -1)),
    ),
}


class Case:
    """Input sets shared by both frameworks (genesis views torch's memory through DLPack)."""

    def __init__(self, op: str, dtype: torch.dtype) -> None:
        shape, self.t_fn, self.g_fn = OPS[op]
        out_shape = (shape[0], shape[1] // 2) if op == "swiglu" else shape
        gen = torch.Generator(device="cuda").manual_seed(0)
        self.t_x = [torch.randn(shape, device="cuda", dtype=dtype, generator=gen).requires_grad_() for _ in range(SETS)]
        self.t_dy = [torch.randn(out_shape, device="cuda", dtype=dtype, generator=gen) for _ in range(SETS)]
        self.g_x = [genesis.from_dlpack(t.detach()).requires_grad_() for t in self.t_x]
        self.g_dy = [genesis.from_dlpack(t) for t in self.t_dy]

    def torch_fwd(self, i: int) -> torch.Tensor:
        return self.t_fn(self.t_x[i])

    def genesis_fwd(self, i: int):
        return self.g_fn(self.g_x[i])

    def torch_step(self, i: int) -> None:
        self.t_x[i].grad = None
        self.torch_fwd(i).backward(self.t_dy[i])

    def genesis_step(self, i: int) -> None:
        self.g_x[i].grad = None
        self.genesis_fwd(i).backward(self.g_dy[i])


def rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a.double() - ref).norm() / ref.norm())


def check(case: Case) -> str:
    """Relative errors of genesis and of torch against float64, for the output and the input's gradient."""
    x = case.t_x[0].detach().double().requires_grad_()
    ref = case.t_fn(x)
    ref.backward(case.t_dy[0].double())
    case.torch_step(0)
    t_y = case.torch_fwd(0).detach()
    case.genesis_step(0)
    g_y = torch.from_dlpack(case.genesis_fwd(0).detach())
    g_dx = torch.from_dlpack(case.g_x[0].grad)
    return (
        f"y genesis {rel(g_y, ref.detach()):.1e} torch {rel(t_y, ref.detach()):.1e}  "
        f"dx genesis {rel(g_dx, x.grad):.1e} torch {rel(case.t_x[0].grad, x.grad):.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="compare with a float64 reference, print rel errors")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_activation.py needs a CUDA device")
    reps = 15 if args.quick else 40
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    rows = []
    for dtype in (torch.bfloat16, torch.float32):
        for op in OPS:
            case = Case(op, dtype)
            name = f"{op} {str(dtype).removeprefix('torch.')}"
            if args.check:
                print(f"check {name}: {check(case)}", flush=True)
            fwd = interleaved_us({"genesis": case.genesis_fwd, "torch": case.torch_fwd}, reps, SETS)
            step = interleaved_us({"genesis": case.genesis_step, "torch": case.torch_step}, reps, SETS)
            rows.append((f"{name} fwd", fwd["genesis"], fwd["torch"]))
            rows.append((f"{name} fwd+bwd", step["genesis"], step["torch"]))
            print(f"{rows[-2]}\n{rows[-1]}", flush=True)
            del case
            torch.cuda.empty_cache()
    print(f"\n{'case':<26} {'genesis_us':>11} {'torch_us':>10} {'ratio(torch/genesis)':>21}")
    for name, g, t in rows:
        print(f"{name:<26} {g:11.1f} {t:10.1f} {t / g:21.2f}")


if __name__ == "__main__":
    main()
