"""Generated pointwise kernels (genesis_kernels.codegen) against torch eager and torch.compile on the GPU.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_codegen.py [--quick] [--no-compile]

Two chains of issue #28, forward + backward (the gradients of every input), bfloat16, shapes that fill
the chip (a GPT-2-sized MLP activation, 8192 x 3072, and its residual stream):

``bias_gelu_residual_cast``  out = gelu(x + bias) + residual, stored in bfloat16; residual is float32
``dropout_residual``         out = dropout(x, 0.1) + residual

genesis runs each chain as one generated kernel forward and one backward (genesis_autograd.fused_pointwise);
torch eager runs its ops one by one; torch.compile fuses them with Inductor. One process, interleaved,
CUDA-event medians over four rotated input sets (so L2 flatters no one); ratios are torch / genesis.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as TF

import genesis
import genesis_autograd
from genesis_kernels.codegen import ProgramBuilder, programs
from timing import interleaved_us

ROWS, COLS = 8192, 3072
SETS = 4


def _bias_gelu_residual_cast():
    b = ProgramBuilder()
    x, bias, residual = b.input(), b.input(), b.input()
    b.output(b.gelu(x + bias) + residual, "bfloat16")
    return b.build()


def _torch_bias_gelu_residual_cast(x, bias, residual):
    return (TF.gelu(x + bias) + residual).to(torch.bfloat16)


def _torch_dropout_residual(x, residual):
    return TF.dropout(x, 0.1) + residual


CHAINS: dict[str, tuple[Callable, Callable, list[tuple[tuple[int, ...], torch.dtype]]]] = {
    "bias_gelu_residual_cast": (
        _bias_gelu_residual_cast,
        _torch_bias_gelu_residual_cast,
        [((ROWS, COLS), torch.bfloat16), ((COLS,), torch.bfloat16), ((ROWS, COLS), torch.float32)],
    ),
    "dropout_residual": (
        lambda: programs.dropout_residual(0.1),
        _torch_dropout_residual,
        [((ROWS, COLS), torch.bfloat16), ((ROWS, COLS), torch.bfloat16)],
    ),
}


class Case:
    """Input sets shared by the three runners (genesis views torch's memory through DLPack)."""

    def __init__(self, name: str, compile_torch: bool) -> None:
        make_program, self.t_fn, specs = CHAINS[name]
        self.program = make_program()
        self.c_fn = torch.compile(self.t_fn) if compile_torch else None
        gen = torch.Generator(device="cuda").manual_seed(0)
        self.t_in = [
            [torch.randn(s, device="cuda", dtype=dt, generator=gen).requires_grad_() for s, dt in specs]
            for _ in range(SETS)
        ]
        self.g_in = [[genesis.from_dlpack(t.detach()).requires_grad_() for t in ins] for ins in self.t_in]
        self.dy = [torch.randn((ROWS, COLS), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(SETS)]
        self.g_dy = [genesis.from_dlpack(t) for t in self.dy]

    def genesis_step(self, i: int) -> None:
        for x in self.g_in[i]:
            x.grad = None
        out = genesis_autograd.fused_pointwise(self.program, *self.g_in[i])
        out.backward(self.g_dy[i].to(out.dtype))

    def _torch_step(self, fn: Callable, i: int) -> None:
        for x in self.t_in[i]:
            x.grad = None
        out = fn(*self.t_in[i])
        out.backward(self.dy[i].to(out.dtype))

    def torch_step(self, i: int) -> None:
        self._torch_step(self.t_fn, i)

    def compiled_step(self, i: int) -> None:
        self._torch_step(self.c_fn, i)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_codegen.py needs a CUDA device")
    reps = 15 if args.quick else 40
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    rows = []
    for name in CHAINS:
        case = Case(name, not args.no_compile)
        fns = {"genesis": case.genesis_step, "torch": case.torch_step}
        if case.c_fn is not None:
            fns["compile"] = case.compiled_step
        us = interleaved_us(fns, reps, SETS, warmup=5)
        rows.append((name, us))
        print(name, {k: round(v, 1) for k, v in us.items()}, flush=True)
        del case
        torch.cuda.empty_cache()
    head = f"{'genesis_us':>11} {'eager_us':>9} {'compile_us':>11} {'eager/gen':>10} {'compile/gen':>12}"
    print(f"\n{'fwd+bwd, bf16':<26} {head}")
    for name, us in rows:
        g, t, c = us["genesis"], us["torch"], us.get("compile", float("nan"))
        print(f"{name:<26} {g:11.1f} {t:9.1f} {c:11.1f} {t / g:10.2f} {c / g:12.2f}")


if __name__ == "__main__":
    main()
