"""Linear + cross-entropy (a language model's head), forward + backward, genesis against torch, one process,
interleaved, on the GPU.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_linear_cross_entropy.py [--quick]
        [--chunks 512 1024 2048] [--no-compile]

The issue's shape: 8,192 tokens of 768 features onto 50,304 classes, bf16 input and weight, class-index
targets, mean reduction, no bias (GPT-2's tied head). Each case times ``loss = f(x, w, t); loss.backward()``
with ``x`` and ``w`` leaves (their ``.grad`` reset each time), CUDA-event medians after warm-up, rotating
among input sets. Both frameworks launch on the legacy default stream, so torch's events time genesis'
kernels too.

- genesis chunked: ``F.linear_cross_entropy(..., options=LinearCrossEntropyOptions(...))``, the fused op (the
  logits never whole; the gradients found with the forward), with genesis' "auto" chunk and with ``batch_chunk_size``;
- genesis reference: ``F.linear_cross_entropy`` without options (linear, then the fused cross-entropy);
- torch eager: ``cross_entropy(linear(x, w), t)``; torch.compile: the same function compiled.

Extra memory: the rise of each allocator's peak over what was allocated before the step, less the two
gradients the step leaves behind (x's and w's, in their dtypes), as MiB and as a share of the logits' size.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

import genesis
import genesis.nn as gnn
import genesis.nn.functional as gF
from bench_cross_entropy import genesis_peak, torch_peak
from timing import interleaved_us

ROWS, FEATURES, VOCAB = 8192, 768, 50304
SETS = 2
MIB = 2**20


def torch_head(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(torch.nn.functional.linear(x, w), t)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--chunks", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--profile", action="store_true", help="also list each variant's kernels (torch.profiler)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_linear_cross_entropy.py needs a CUDA device")
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"head {ROWS} x {FEATURES} -> {VOCAB} classes, bf16, mean reduction, forward + backward")
    logits_mib = ROWS * VOCAB * 2 / MIB
    tx, tw, tt, gx, gw, gt = [], [], [], [], [], []
    for i in range(SETS):
        g = torch.Generator(device="cuda").manual_seed(i)
        x = torch.randn(ROWS, FEATURES, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(VOCAB, FEATURES, device="cuda", dtype=torch.bfloat16, generator=g) / FEATURES**0.5
        t = torch.randint(0, VOCAB, (ROWS,), device="cuda", generator=g)
        tx.append(x.requires_grad_())
        tw.append(w.requires_grad_())
        tt.append(t)
        gx.append(genesis.from_dlpack(x.detach()).requires_grad_())
        gw.append(genesis.from_dlpack(w.detach()).requires_grad_())
        gt.append(genesis.from_dlpack(t))

    def torch_step(i: int, fn=torch_head) -> None:
        tx[i].grad = tw[i].grad = None
        fn(tx[i], tw[i], tt[i]).backward()

    def genesis_step(i: int, options=None) -> None:
        gx[i].grad = gw[i].grad = None
        gF.linear_cross_entropy(gx[i], gw[i], gt[i], options=options).backward()

    fns: dict[str, Callable[[int], None]] = {"torch eager": torch_step, "genesis reference": genesis_step}
    auto = gnn.LinearCrossEntropyOptions()
    fns["genesis chunked, auto"] = lambda i: genesis_step(i, auto)
    for n in args.chunks:
        options = gnn.LinearCrossEntropyOptions(batch_chunk_size=n)
        fns[f"genesis chunk {n}"] = lambda i, o=options: genesis_step(i, o)
    if not args.no_compile:
        compiled = torch.compile(torch_head)
        fns["torch.compile"] = lambda i: torch_step(i, compiled)
    times = interleaved_us(fns, 6 if args.quick else 20, SETS)
    grads_mib = (ROWS + VOCAB) * FEATURES * 2 / MIB  # the two bf16 gradients the step leaves behind
    peaks = {}
    for name, fn in fns.items():
        peaks[name] = (genesis_peak if name.startswith("genesis") else torch_peak)(fn) - grads_mib
    ref = "torch.compile" if "torch.compile" in fns else "torch eager"
    print(f"{'variant':24s} {'ms':>8s} {ref + ' / it':>22s} {'extra MiB':>10s} {'of logits':>10s}")
    for name, us in times.items():
        print(
            f"{name:24s} {us / 1e3:8.3f} {times[ref] / us:22.3f} {peaks[name]:10.0f} "
            f"{100 * peaks[name] / logits_mib:9.1f}%"
        )
    check(tx[0], tw[0], tt[0], gx[0], gw[0], gt[0], args.chunks[0])
    if args.profile:
        for name, fn in fns.items():
            profile_kernels(name, fn)


def profile_kernels(name: str, fn: Callable[[int], None], steps: int = 3) -> None:
    """GPU time per step of ``fn`` and its largest kernels, from torch.profiler (Triton's kernels included)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            fn(i % SETS)
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    busy = sum(e.self_device_time_total for e in kernels) / steps / 1e3
    print(f"{name}: GPU busy {busy:.3f} ms per step")
    for e in sorted(kernels, key=lambda e: -e.self_device_time_total)[:8]:
        print(f"   {e.self_device_time_total / steps / 1e3:7.3f} ms  x{e.count // steps:<4d} {e.key[:90]}")


def check(tx, tw, tt, gx, gw, gt, chunk: int) -> None:
    """The chunked op against float64 from the same bf16 operands (logits and their gradient unrounded)."""
    x64, w64 = (v.detach().double().requires_grad_() for v in (tx, tw))
    torch.nn.functional.cross_entropy(x64 @ w64.T, tt).backward()
    gx.grad = gw.grad = None
    options = gnn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    gF.linear_cross_entropy(gx, gw, gt, options=options).backward()
    for name, got, want in (("x", gx.grad, x64.grad), ("w", gw.grad, w64.grad)):
        got64 = torch.from_dlpack(got).double()
        print(f"  check chunk {chunk}: d{name} relative error {float((got64 - want).norm() / want.norm()):.2e}")


if __name__ == "__main__":
    main()
