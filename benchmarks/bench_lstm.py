"""nn.LSTM forward + backward against torch's cuDNN LSTM on the GPU: one process, interleaved, CUDA-event medians.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_lstm.py [--quick] [--check]

The issue's shape: 2 layers, input and hidden 1,024, batch 64, 128 steps, sequence-first; float32 and
bfloat16 (both modules cast with .to(dtype), the same weights loaded into genesis from torch's state
dict). One step is the forward of the whole sequence plus the backward of a weighted sum of its outputs
(every parameter and the input get gradients). Four input sets are rotated.

float32: cuDNN runs its recurrent products in TF32 by default (torch.backends.cudnn.allow_tf32), so
genesis runs with set_float32_matmul_precision("high") (TF32) as well; ``--exact`` times genesis in exact
float32 ("highest") instead. Rows: latency (one step between the events), 4 back to back (the host runs
ahead of the GPU, as in a training loop), and genesis's host time to issue one step. The ratio printed is
torch_time / genesis_time (>= 1: genesis is faster). ``--check`` compares genesis's outputs and input
gradient with torch's at these shapes (relative errors).
"""

from __future__ import annotations

import argparse

import torch

import genesis
import genesis.nn as gnn
from timing import host_us, interleaved_us

LAYERS, INPUT, HIDDEN, BATCH, STEPS = 2, 1024, 1024, 64, 128
SETS = 4


class Case:
    """The two modules with the same weights and the input sets (genesis views torch's memory via DLPack)."""

    def __init__(self, dtype: torch.dtype, steps: int) -> None:
        torch.manual_seed(0)
        self.t_mod = torch.nn.LSTM(INPUT, HIDDEN, LAYERS).cuda().to(dtype)
        self.g_mod = gnn.LSTM(INPUT, HIDDEN, LAYERS, device="cuda", dtype=getattr(genesis, str(dtype)[6:]))
        self.g_mod.load_state_dict(self.t_mod.state_dict())
        shape = (steps, BATCH, INPUT)
        self.t_x = [torch.randn(shape, device="cuda", dtype=dtype).requires_grad_() for _ in range(SETS)]
        self.t_w = [torch.randn(steps, BATCH, HIDDEN, device="cuda", dtype=dtype) for _ in range(SETS)]
        self.g_x = [genesis.from_dlpack(t.detach()).requires_grad_() for t in self.t_x]
        self.g_w = [genesis.from_dlpack(t) for t in self.t_w]

    def torch_step(self, i: int) -> None:
        self.t_x[i].grad = None
        for p in self.t_mod.parameters():
            p.grad = None
        out, _ = self.t_mod(self.t_x[i])
        out.backward(self.t_w[i])

    def genesis_step(self, i: int) -> None:
        self.g_x[i].grad = None
        for p in self.g_mod.parameters():
            p.grad = None
        out, _ = self.g_mod(self.g_x[i])
        out.backward(self.g_w[i])


def check(case: Case) -> None:
    """Relative errors of genesis's output and input gradient against torch's (same inputs, same weights)."""
    case.torch_step(0)
    case.genesis_step(0)
    t_out, _ = case.t_mod(case.t_x[0])
    g_out, _ = case.g_mod(case.g_x[0])
    got = torch.from_dlpack(g_out.detach()).float()
    err = (got - t_out.detach().float()).norm() / t_out.detach().float().norm()
    gx = torch.from_dlpack(case.g_x[0].grad).float()
    gerr = (gx - case.t_x[0].grad.float()).norm() / case.t_x[0].grad.float().norm()
    print(f"  check: output rel err {err:.2e}, input grad rel err {gerr:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 steps instead of 128, fewer repetitions")
    parser.add_argument("--check", action="store_true", help="compare genesis's results with torch's")
    parser.add_argument("--exact", action="store_true", help="genesis in exact float32 (no TF32)")
    args = parser.parse_args()
    steps, reps = (16, 5) if args.quick else (STEPS, 20)
    genesis.set_float32_matmul_precision("highest" if args.exact else "high")
    print(f"LSTM {LAYERS} layers, input {INPUT}, hidden {HIDDEN}, batch {BATCH}, {steps} steps, forward + backward")
    print(f"device: {torch.cuda.get_device_name()}, cudnn {torch.backends.cudnn.version()}, "
          f"torch tf32 for cuDNN: {torch.backends.cudnn.allow_tf32}")  # fmt: skip
    for dtype in (torch.float32, torch.bfloat16):
        case = Case(dtype, steps)
        fns = {"torch": case.torch_step, "genesis": case.genesis_step}
        print(f"{str(dtype)[6:]}:")
        if args.check:
            check(case)
        lat = interleaved_us(fns, reps=reps, sets=SETS, warmup=3)
        thr = interleaved_us(fns, reps=max(3, reps // 4), sets=SETS, warmup=1, burst=4)
        host = host_us({"genesis": case.genesis_step}, reps=max(3, reps // 4), sets=SETS, warmup=1)
        for label, t in (("latency", lat), ("4 back to back", thr)):
            print(f"  {label:15s} torch {t['torch'] / 1e3:8.2f} ms   genesis {t['genesis'] / 1e3:8.2f} ms   "
                  f"ratio torch/genesis {t['torch'] / t['genesis']:.2f}")  # fmt: skip
        print(f"  genesis host time to issue one step: {host['genesis'] / 1e3:.2f} ms")
        del case
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
