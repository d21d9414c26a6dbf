"""Fused cross-entropy (forward + backward) against torch eager, one process, interleaved, on the GPU.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_cross_entropy.py [--check] [--compile]

The issue's target shape: logits 8192 x 50,304 bf16 (a GPT-2 batch), class-index targets, mean reduction;
plus label smoothing with ignored rows. Each case times ``loss = cross_entropy(x, t); loss.backward()`` with
``x`` a leaf (its ``.grad`` reset each time), CUDA-event medians after warm-up, rotating among 4 input sets
so that L2 flatters neither side. Both frameworks launch on the legacy default stream, so torch's events
time genesis' kernels too. Peak memory: the rise of each framework's own allocator peak over what was
allocated before the step (torch.cuda.max_memory_allocated, genesis.cuda.max_memory_allocated); it
includes the logits' gradient that the step leaves behind. ``--compile`` adds torch.compile (slow to
compile); ``--check`` compares genesis with torch at these shapes (float32 reference from the same bf16
logits) and prints the relative errors.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

import genesis
import genesis.nn.functional as gF
from timing import interleaved_us

ROWS, VOCAB = 8192, 50304
SETS = 4
MIB = 2**20


def torch_peak(fn: Callable[[int], None]) -> float:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn(0)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / MIB


def genesis_peak(fn: Callable[[int], None]) -> float:
    genesis.cuda.synchronize()
    genesis.cuda.reset_peak_memory_stats()
    base = genesis.cuda.memory_allocated()
    fn(0)
    genesis.cuda.synchronize()
    return (genesis.cuda.max_memory_allocated() - base) / MIB


def make_sets(smoothing_case: bool) -> tuple[list, list, list, list]:
    """SETS input sets: torch leaves and targets, and genesis views of the same memory (DLPack)."""
    tx, tt, gx, gt = [], [], [], []
    for i in range(SETS):
        g = torch.Generator(device="cuda").manual_seed(i)
        x = torch.randn(ROWS, VOCAB, device="cuda", dtype=torch.bfloat16, generator=g) * 2
        t = torch.randint(0, VOCAB, (ROWS,), device="cuda", generator=g)
        if smoothing_case:
            t[::7] = -100
        tx.append(x.requires_grad_())
        tt.append(t)
        gx.append(genesis.from_dlpack(x.detach()).requires_grad_())
        gt.append(genesis.from_dlpack(t))
    return tx, tt, gx, gt


def run_case(name: str, kwargs: dict, args: argparse.Namespace, rows: list) -> None:
    tx, tt, gx, gt = make_sets(bool(kwargs))

    def torch_step(i: int, fn=torch.nn.functional.cross_entropy) -> None:
        tx[i].grad = None
        fn(tx[i], tt[i], **kwargs).backward()

    def genesis_step(i: int) -> None:
        gx[i].grad = None
        gF.cross_entropy(gx[i], gt[i], **kwargs).backward()

    def genesis_grad(i: int) -> None:  # autograd.grad: the gradient handed back, no .grad accumulation
        genesis.autograd.grad(gF.cross_entropy(gx[i], gt[i], **kwargs), [gx[i]])

    def torch_grad(i: int) -> None:
        torch.autograd.grad(torch.nn.functional.cross_entropy(tx[i], tt[i], **kwargs), [tx[i]])

    fns: dict[str, Callable[[int], None]] = {"genesis": genesis_step, "torch": torch_step}
    fns["genesis_grad"], fns["torch_grad"] = genesis_grad, torch_grad
    if args.compile:
        compiled = torch.compile(torch.nn.functional.cross_entropy)
        fns["torch_compile"] = lambda i: torch_step(i, compiled)
    reps = 10 if args.quick else 30
    t = interleaved_us(fns, reps, SETS)
    peaks = {
        "genesis": genesis_peak(genesis_step),
        "torch": torch_peak(torch_step),
        "genesis_grad": genesis_peak(genesis_grad),
        "torch_grad": torch_peak(torch_grad),
    }
    if args.compile:
        peaks["torch_compile"] = torch_peak(fns["torch_compile"])
    for tag, g, ref in (("backward", "genesis", "torch"), ("autograd.grad", "genesis_grad", "torch_grad")):
        rows.append((f"{name} {tag}", t[g], t[ref], peaks[g], peaks[ref]))
    if args.compile:
        rows.append(
            (f"{name} vs torch.compile", t["genesis"], t["torch_compile"], peaks["genesis"], peaks["torch_compile"])
        )
    if args.check:
        check(tx[1], tt[1], gx[1], gt[1], kwargs)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def check(tx, tt, gx, gt, kwargs: dict) -> None:
    """genesis (bf16 in, fp32 math) against torch's float32 result from the same bf16 logits."""
    ref_x = tx.detach().float().requires_grad_()
    ref = torch.nn.functional.cross_entropy(ref_x, tt, **kwargs)
    ref.backward()
    gx.grad = None
    loss = gF.cross_entropy(gx, gt, **kwargs)
    loss.backward()
    got_loss = torch.from_dlpack(loss.detach().to(genesis.float32)).float()
    got_grad = torch.from_dlpack(gx.grad).float()
    max_abs = float((got_grad - ref_x.grad).abs().max())
    print(
        f"  check {kwargs or 'plain'}: loss rel err {_rel(got_loss, ref.detach()):.2e}   "
        f"grad rel err {_rel(got_grad, ref_x.grad):.2e}   grad max abs err {max_abs:.2e}"
    )
    del ref_x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="compare genesis with torch at the benchmark shapes")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (compiles first: slow)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_cross_entropy.py needs a CUDA device")
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  logits {ROWS} x {VOCAB} bf16")
    rows: list[tuple[str, float, float, float, float]] = []
    run_case("ce mean", {}, args, rows)
    run_case("ce smooth0.1+ignore", dict(label_smoothing=0.1, ignore_index=-100), args, rows)
    head = f"{'case':<38} {'genesis_us':>10} {'torch_us':>9} {'ratio':>6}"
    print(f"\n{head} {'genesis_MiB':>11} {'torch_MiB':>9} {'mem':>5}")
    for name, g, t, gm, tm in rows:
        print(f"{name:<38} {g:10.1f} {t:9.1f} {t / g:6.2f} {gm:+11.0f} {tm:+9.0f} {gm / tm if tm else 0:5.2f}")
    print("ratio = torch / genesis time (> 1: genesis faster); mem = genesis / torch extra peak memory")


if __name__ == "__main__":
    main()
