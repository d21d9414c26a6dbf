"""Residual add + RMSNorm, fused (F.add_rms_norm) against the same two ops in torch eager and torch.compile.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_add_norm.py [--quick] [--no-compile]

A pre-norm block's step, ``s = residual + h; y = rms_norm(s) * weight``, in bfloat16 at (8*1024, 768) (a
GPT-2-small batch of tokens) and (2048, 2048) (Llama-3.2-1B's hidden size), issue #28. Rows, each the
median microseconds of CUDA events per call (one process, the variants interleaved, four input sets
rotated so that L2 flatters none, after warm-up):

* fwd: the forward alone, recording the graph (h, residual and weight require grad);
* fwd+bwd: forward and backward with gradients for both outputs (y feeds the block, s the next residual
  add), through ``genesis.autograd.backward`` / ``torch.autograd.backward``;
* host issue time: perf_counter around one fwd+bwd call with the GPU idle before it.

Variants: genesis fused (``F.add_rms_norm``), genesis unfused (``residual + h`` then ``F.rms_norm``),
torch eager (the same two ops), torch.compile of those two ops (Inductor fuses them). The last column is
the eager-torch time over each variant's (> 1: faster than torch eager). Before timing, each variant's
outputs and gradients are compared with a float64 reference (relative error ||got - ref|| / ||ref||).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

import genesis
import genesis.nn.functional as GF
from timing import host_us, interleaved_us

SHAPES = [(8 * 1024, 768), (2048, 2048)]
SETS = 4
EPS = 1e-6


def _g(t: torch.Tensor) -> genesis.Tensor:
    return genesis.from_dlpack(t)


def torch_two_ops(h: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s = r + h
    return torch.nn.functional.rms_norm(s, (s.shape[-1],), w, EPS), s


class Case:
    """Input sets shared by every variant (genesis views torch's memory through DLPack)."""

    def __init__(self, shape: tuple[int, int], compiled: Callable | None) -> None:
        gen = torch.Generator(device="cuda").manual_seed(0)
        bf16 = torch.bfloat16

        def rand(*size: int) -> torch.Tensor:
            return torch.randn(*size, device="cuda", dtype=bf16, generator=gen)

        self.shape, self.compiled = shape, compiled
        self.t_h = [rand(*shape).requires_grad_() for _ in range(SETS)]
        self.t_r = [rand(*shape).requires_grad_() for _ in range(SETS)]
        self.t_dy = [rand(*shape) for _ in range(SETS)]
        self.t_ds = [rand(*shape) for _ in range(SETS)]
        self.t_w = (1 + 0.1 * rand(shape[-1])).requires_grad_()
        self.g_h = [_g(t.detach()).requires_grad_() for t in self.t_h]
        self.g_r = [_g(t.detach()).requires_grad_() for t in self.t_r]
        self.g_dy, self.g_ds = [_g(t) for t in self.t_dy], [_g(t) for t in self.t_ds]
        self.g_w = _g(self.t_w.detach()).requires_grad_()

    # ---- forwards: (y, s)
    def fused(self, i: int):
        return GF.add_rms_norm(self.g_h[i], self.g_r[i], self.shape[-1:], self.g_w, EPS)

    def unfused(self, i: int):
        s = self.g_r[i] + self.g_h[i]
        return GF.rms_norm(s, self.shape[-1:], self.g_w, EPS), s

    def eager(self, i: int):
        return torch_two_ops(self.t_h[i], self.t_r[i], self.t_w)

    def compile(self, i: int):
        assert self.compiled is not None
        return self.compiled(self.t_h[i], self.t_r[i], self.t_w)

    # ---- forward + backward
    def step(self, name: str) -> Callable[[int], None]:
        fwd = getattr(self, name)
        is_torch = name in ("eager", "compile")
        leaves = (self.t_h, self.t_r) if is_torch else (self.g_h, self.g_r)
        weight = self.t_w if is_torch else self.g_w
        grads = (self.t_dy, self.t_ds) if is_torch else (self.g_dy, self.g_ds)
        backward = torch.autograd.backward if is_torch else genesis.autograd.backward

        def run(i: int) -> None:
            leaves[0][i].grad = leaves[1][i].grad = weight.grad = None
            y, s = fwd(i)
            backward([y, s], [grads[0][i], grads[1][i]])

        return run


def check(case: Case, names: list[str]) -> str:
    """Relative errors of y, s and the three gradients of each variant against float64, on set 0."""
    h, r = case.t_h[0].detach().double().requires_grad_(), case.t_r[0].detach().double().requires_grad_()
    w = case.t_w.detach().double().requires_grad_()
    y, s = torch_two_ops(h, r, w)
    torch.autograd.backward([y, s], [case.t_dy[0].double(), case.t_ds[0].double()])
    refs = {"y": y.detach(), "s": s.detach(), "dh": h.grad, "dr": r.grad, "dw": w.grad}
    parts = []
    for name in names:
        case.step(name)(0)
        gy, gs = getattr(case, name)(0)
        is_torch = name in ("eager", "compile")
        leaves = (case.t_h[0], case.t_r[0], case.t_w) if is_torch else (case.g_h[0], case.g_r[0], case.g_w)
        got = {"y": gy, "s": gs, "dh": leaves[0].grad, "dr": leaves[1].grad, "dw": leaves[2].grad}
        errs = []
        for key, ref in refs.items():
            t = got[key].detach() if is_torch else torch.from_dlpack(got[key].detach())
            errs.append(f"{key} {float((t.double() - ref).norm() / ref.norm()):.1e}")
        parts.append(f"{name}: " + " ".join(errs))
    return "\n  ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_add_norm.py needs a CUDA device")
    reps = 20 if args.quick else 100
    compiled = None if args.no_compile else torch.compile(torch_two_ops, dynamic=False)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  bfloat16", flush=True)
    names = ["fused", "unfused", "eager"] + ([] if compiled is None else ["compile"])
    rows = []
    for shape in SHAPES:
        case = Case(shape, compiled)
        print(f"check {shape}:\n  {check(case, names)}", flush=True)
        fwd = interleaved_us({n: getattr(case, n) for n in names}, reps, SETS)
        step = interleaved_us({n: case.step(n) for n in names}, reps, SETS)
        host = host_us({n: case.step(n) for n in names}, reps, SETS)
        for label, times in (("fwd", fwd), ("fwd+bwd", step), ("fwd+bwd host issue", host)):
            for n in names:
                rows.append((f"{shape} {label}", n, times[n], times["eager"]))
        del case
        torch.cuda.empty_cache()
    print(f"\n{'case':<36} {'variant':<9} {'us':>9} {'ratio(eager/variant)':>21}")
    for case_name, variant, us, eager in rows:
        print(f"{case_name:<36} {variant:<9} {us:9.1f} {eager / us:21.2f}")
    print("fused: F.add_rms_norm; unfused: genesis residual + h then F.rms_norm; eager / compile: torch")


if __name__ == "__main__":
    main()
