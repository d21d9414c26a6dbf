"""Backward sweep of the TMA flash-attention kernels against the pointer kernels and torch (GPU, < 3 min on an H100).

    PYTHONPATH=$(ls -d $PWD/packages/*/src | paste -sd:) python3 benchmarks/sweep_attention_bwd_tma.py [--reps 30]
        [--budget 100] [--d 128 64] [--log FILE]

Causal bf16 at (B, H, L, D) = (4, 16, 4096, 128) and (4, 32, 4096, 64). genesis_kernels.attention's backward
is a delta pre-pass, a dK / dV kernel and a dQ kernel; each of the two has a pointer version (cp.async loads;
_DKDV_CONFIGS / _DQ_CONFIGS) and a TMA version (device-built tensor descriptors; _DKDV_TMA_CONFIGS /
_DQ_TMA_CONFIGS[head dim] = (BLOCK_M, BLOCK_N, num_warps, num_stages)), the TMA one serving a head dim while
_BWD_TMA is set and its table has it. The two kernels are swept separately ("groups": dkdv d128, dq d128, ...):

1. check: per group the pointer kernel, then every candidate of CANDIDATES (the shipped entry first), taken
   round-robin over the groups so a short ``--budget`` (seconds for this phase) still reaches every group;
   past the budget only the baselines (the pointer kernel and the shipped config) still run. Each is patched
   in, compiled and run once with the other kernel at its shipped config; a candidate that fails to compile
   or to launch (out of shared memory, ...) is printed as 'skip' with the compiler's first error line. One
   that runs must have taken the TMA kernel (its cache entry), and its gradients (dK and dV, or dQ) are
   compared with torch's sdpa (relative error; over 2e-2 is BAD and never chosen).
2. time: per group the checked candidates and the pointer kernel, each timed as the whole backward (delta +
   dK / dV + dQ, the other kernel at its shipped config), interleaved with torch's flash and cuDNN backward
   alone (torch.autograd.grad on a retained forward graph), fastest first, with backward TFLOP/s (2.5 x the
   causal forward's 4 B H L^2 D / 2) and the ratio to cuDNN (> 1: faster than cuDNN).
3. forward + backward: genesis with each group's best (TMA or pointer) and as shipped, torch flash and cuDNN,
   interleaved; the best combination's gradients are checked again.

Last, a paste-ready _BWD_TMA / _DKDV_TMA_CONFIGS / _DQ_TMA_CONFIGS block: a head dim where the pointer kernel won
is left out of that table (so the pointer kernel serves it); one not measured keeps its shipped entry. A CUDA
error that poisons the context (illegal address, ...) ends the GPU work and prints what was measured. Stdout
stays short (~8 k characters); ``--log`` also writes every line, with the full error messages, to a file.
Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_attention import SETS, Case, att, rel, torch_fwd_bwd, usable
from sweep_attention_tma import Poisoned, _sticky, captured_stderr, first_error, fwd_bwd_table
from timing import interleaved_us

SHAPES = [(4, 16, 4096, 128), (4, 32, 4096, 64)]
KERNELS = ("dkdv", "dq")
TABLES = {"dkdv": "_DKDV_TMA_CONFIGS", "dq": "_DQ_TMA_CONFIGS"}
POINTER_TABLES = {"dkdv": "_DKDV_CONFIGS", "dq": "_DQ_CONFIGS"}
GRADS = {"dkdv": ("dk", "dv"), "dq": ("dq",)}
# (BLOCK_M, BLOCK_N, num_warps, num_stages), most promising first (the budget cuts the tail). Offline sm_90
# compile (ptxas -v, bf16): dkdv d128 64x128 8w 2st 255 regs (spills only outside the inner loops), 3st spills
# inside them, 32x128 8w 240-254 regs; dq d128 128x64 8w 176 regs, 128x128 8w 2st 225 regs and 197 KB of
# shared memory; d64 fits everywhere but at 4 warps with 128-row tiles.
CANDIDATES: dict[str, dict[int, list[tuple[int, int, int, int]]]] = {
    "dkdv": {
        128: [(64, 128, 8, 2), (32, 128, 8, 3), (64, 128, 8, 3), (32, 128, 8, 2), (64, 64, 8, 3), (64, 64, 4, 2),
              (64, 128, 16, 2)],
        64: [(64, 128, 8, 3), (64, 128, 8, 2), (32, 128, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (32, 128, 4, 3)],
    },
    "dq": {
        128: [(128, 64, 8, 3), (128, 64, 8, 2), (128, 128, 8, 2), (128, 32, 8, 3), (64, 64, 4, 3), (64, 128, 4, 2),
              (128, 64, 16, 2)],
        64: [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 2), (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3)],
    },
}  # fmt: skip
BAD = 2e-2  # bf16 genesis vs bf16 torch at L = 4096: both ~4e-3 from the exact result
Config = tuple[int, int, int, int]
POINTER = "pointer"
Choice = Config | str  # a TMA config, or POINTER


class Out:
    """Stdout (kept short) and the --log file (everything)."""

    def __init__(self, path: str | None) -> None:
        self.file: TextIO | None = open(path, "w") if path else None  # closed in main

    def __call__(self, line: str = "", detail: str = "") -> None:
        """Print ``line``; the log gets ``line`` and ``detail`` (e.g. a whole error message)."""
        print(line, flush=True)
        if self.file:
            self.file.write(line + "\n" + (detail + "\n" if detail else ""))
            self.file.flush()

    def log(self, text: str) -> None:
        """The log file only."""
        if self.file:
            self.file.write(text + "\n")
            self.file.flush()


@contextlib.contextmanager
def backward_kernels(block_d: int, choices: dict[str, Choice]) -> Iterator[None]:
    """The backward with ``choices[kernel]`` (a TMA config, or POINTER: the pointer kernel at its shipped config)
    for the kernels named; the others as shipped."""
    saved = {k: dict(getattr(att, TABLES[k])) for k in KERNELS}
    old_switch = att._BWD_TMA
    try:
        for kernel, choice in choices.items():
            table = getattr(att, TABLES[kernel])
            if choice == POINTER:
                table.pop(block_d, None)
            else:
                table[block_d] = choice
                att._BWD_TMA = True
        yield
    finally:
        att._BWD_TMA = old_switch
        for kernel, table in saved.items():
            live = getattr(att, TABLES[kernel])
            live.clear()
            live.update(table)


def with_kernels(block_d: int, choices: dict[str, Choice], fn: Callable[[int], None]) -> Callable[[int], None]:
    """``fn`` with the backward kernels set per call (dict writes: nothing beside a ~1.5 ms backward)."""

    def run(i: int) -> None:
        with backward_kernels(block_d, choices):
            fn(i)

    return run


def took_tma(case: Case, kernel: str, cfg: Config) -> bool:
    """Whether the last backward built (so launched) the TMA kernel at ``cfg``, untouched by the shrinking."""
    L, D = case.shape[2:]
    eff = att._bwd_tma_config(kernel, D, L, L)
    cache = (att._DKDV_TMA_KERNEL if kernel == "dkdv" else att._DQ_TMA_KERNEL).cache
    return eff == cfg and att._bwd_tma_key("bfloat16", True, eff, D) in cache


def check(case: Case, kernel: str, choice: Choice) -> float:
    """Set 0's forward + backward with this kernel: the worst relative error of its gradients against torch."""
    with backward_kernels(case.block_d, {kernel: choice}):
        case.fwd_bwd(0)
        torch.cuda.synchronize()
        if choice != POINTER and not took_tma(case, kernel, choice):  # type: ignore[arg-type]
            raise RuntimeError("the TMA kernel was not taken (selection refused this case?)")
    return max(rel(getattr(case.gen, n), case.ref[n]) for n in GRADS[kernel])


def label(choice: Choice) -> str:
    return POINTER if choice == POINTER else f"tma {choice}"


def torch_bwd(case: Case, backend: SDPBackend) -> Callable[[int], None]:
    """torch's backward alone: autograd.grad through a retained forward graph of each input set."""
    graphs = []
    for i in range(SETS):
        q, k, v = (t[i].detach().requires_grad_() for t in (case.q, case.k, case.v))
        with sdpa_kernel(backend):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        graphs.append((out, (q, k, v)))

    def run(i: int) -> None:
        out, leaves = graphs[i]
        torch.autograd.grad(out, leaves, case.g[i], retain_graph=True)

    return run


def phase_check(cases: dict[int, Case], args: argparse.Namespace, out: Out, start: float) -> dict[tuple, list]:
    """Phase 1, round-robin over the groups: {(block_d, kernel): [(choice, error), ...]} of those that ran."""
    queues: dict[tuple[int, str], list[Choice]] = {}
    for block_d in cases:
        for kernel in KERNELS:
            shipped = getattr(att, TABLES[kernel]).get(block_d)
            cands = [c for c in CANDIDATES[kernel].get(block_d, []) if c != shipped]
            queues[(block_d, kernel)] = [POINTER] + ([shipped] if shipped else []) + cands
    ok: dict[tuple, list] = {g: [] for g in queues}
    rank = 0
    while any(rank < len(q) for q in queues.values()):
        for (block_d, kernel), queue in queues.items():
            if rank >= len(queue):
                continue
            choice, tag = queue[rank], f"{kernel} d{block_d} {label(queue[rank])}"
            # The pointer kernel and the shipped config (ranks 0 and 1) always run: the baselines.
            if time.perf_counter() - start > args.budget and rank > 1:
                out(f"  {tag}: skipped (time budget)")
                continue
            t0 = time.perf_counter()
            err_lines: list[str] = []
            try:
                with captured_stderr() as err_lines:
                    err = check(cases[block_d], kernel, choice)
            except Exception as e:  # compile errors, out of shared memory at load, ...
                if _sticky(e):
                    raise Poisoned(f"{tag}: {first_error(e, err_lines)}") from e
                out(f"  {tag}: skip ({first_error(e, err_lines)[:100]})", detail="\n".join([str(e), *err_lines]))
                continue
            bad = not (err < BAD and math.isfinite(err))
            out(f"  {tag}: ok {time.perf_counter() - t0:4.1f} s, rel err {err:.1e}{'  BAD' if bad else ''}")
            if not bad:
                ok[(block_d, kernel)].append((choice, err))
        rank += 1
    return ok


def phase_time(case: Case, kernel: str, ok: list, reps: int, out: Out) -> tuple[Choice | None, dict[str, float]]:
    """Phase 2 for one group: the whole backward per choice against torch's; returns the fastest choice."""
    B, H, L, D = case.shape
    fns = {label(c): with_kernels(case.block_d, {kernel: c}, case.bwd) for c, _ in ok}
    fns.update(usable({"torch flash bwd": torch_bwd(case, SDPBackend.FLASH_ATTENTION),
                       "torch cudnn bwd": torch_bwd(case, SDPBackend.CUDNN_ATTENTION)}))  # fmt: skip
    case.fwd(0)  # the backward reads this forward's out and lse
    us = interleaved_us(fns, reps, SETS, warmup=2)
    ref = us.get("torch cudnn bwd")
    flops = 2.5 * case.flops
    shipped = getattr(att, TABLES[kernel]).get(case.block_d)
    other = "dq" if kernel == "dkdv" else "dkdv"
    other_cfg = getattr(att, TABLES[other]).get(case.block_d)
    other_cfg = other_cfg or f"pointer {getattr(att, POINTER_TABLES[other])[case.block_d]}"
    out(f"  {kernel} d{D}: causal bf16 {B}x{H}x{L}x{D} backward (delta + dK/dV + dQ; {other} at {other_cfg}), "
        f"median of {reps}, fastest first ('*' shipped)")  # fmt: skip
    for name, t in sorted(us.items(), key=lambda kv: kv[1]):
        ratio = f"  {ref / t:5.2f}x cuDNN" if ref else ""
        mark = "*" if shipped and name == label(shipped) else " "
        name = f"{name} {getattr(att, POINTER_TABLES[kernel])[case.block_d]}" if name == POINTER else name
        out(f"   {mark}{name:<30} {t:8.1f} us  {flops / t / 1e6:5.0f} TFLOP/s{ratio}")
    mine = [(t, name) for name, t in us.items() if not name.startswith("torch")]
    if not mine:
        return None, us
    t, name = min(mine)
    best = next(c for c, _ in ok if label(c) == name)
    out(f"  BEST {kernel} d{D}: {label(best)}  {t:.1f} us\n")
    return best, us


def fwd_bwd(case: Case, best: dict[str, Choice], reps: int, out: Out) -> None:
    """Phase 3: the whole training step of attention, genesis (best and shipped) against torch."""
    D = case.shape[3]
    with backward_kernels(case.block_d, best):
        case.fwd_bwd(0)
        torch.cuda.synchronize()
    errs = ", ".join(f"{n} {rel(getattr(case.gen, n), case.ref[n]):.1e}" for n in ("dq", "dk", "dv"))
    out(f"  d{D} best combination {dict((k, label(c)) for k, c in best.items())}: rel err {errs}")
    fns = {"genesis best": with_kernels(case.block_d, best, case.fwd_bwd), "genesis shipped": case.fwd_bwd}
    fns.update(usable({"torch flash": torch_fwd_bwd(case, SDPBackend.FLASH_ATTENTION),
                       "torch cudnn": torch_fwd_bwd(case, SDPBackend.CUDNN_ATTENTION)}))  # fmt: skip
    fwd_bwd_table(case, fns, reps, out)
    out()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--budget", type=float, default=100.0, help="seconds for the compile + check phase")
    parser.add_argument("--d", type=int, nargs="*", default=[s[3] for s in SHAPES], help="head dims to sweep")
    parser.add_argument("--log", default=None, help="also write everything (full error messages) to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_attention_bwd_tma.py needs a CUDA device")
    out = Out(args.log)
    start = time.perf_counter()
    if not att._BWD_TMA:  # switched off: the pointer kernels are what ships, for both kernels
        for kernel in KERNELS:
            getattr(att, TABLES[kernel]).clear()
        att._BWD_TMA = True
    out(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    out(f"shipped: _BWD_TMA = {att._BWD_TMA}, _DKDV_TMA_CONFIGS = {att._DKDV_TMA_CONFIGS}, "
        f"_DQ_TMA_CONFIGS = {att._DQ_TMA_CONFIGS}; forward: _FWD_TMA_CONFIGS = {att._FWD_TMA_CONFIGS}")  # fmt: skip
    best: dict[int, dict[str, Choice]] = {}
    timings: dict[tuple[int, str], dict[str, float]] = {}
    cases: dict[int, Case] = {}
    try:
        for shape in SHAPES:
            if shape[3] in args.d:
                case = Case(shape)
                cases[case.block_d] = case
        ok = phase_check(cases, args, out, start)
        out(f"checks done at {time.perf_counter() - start:.0f} s\n")
        for block_d, case in cases.items():
            for kernel in KERNELS:
                choice, us = phase_time(case, kernel, ok[(block_d, kernel)], args.reps, out)
                timings[(block_d, kernel)] = us
                if choice is not None:
                    best.setdefault(block_d, {})[kernel] = choice
        for block_d, case in cases.items():
            if best.get(block_d):
                fwd_bwd(case, best[block_d], max(5, args.reps // 2), out)
    except Poisoned as e:
        out(f"\nCUDA context lost, no more GPU work: {e}")
    except Exception as e:
        if not _sticky(e):
            raise
        out(f"\nCUDA context lost, no more GPU work: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    tables = {k: dict(getattr(att, TABLES[k])) for k in KERNELS}
    notes = []
    for block_d in sorted({s[3] for s in SHAPES}):
        for kernel in KERNELS:
            choice = best.get(block_d, {}).get(kernel)
            if choice is None:
                notes.append(f"{kernel} d{block_d}: not measured, shipped entry kept")
            elif choice == POINTER:
                tables[kernel].pop(block_d, None)
                notes.append(f"{kernel} d{block_d}: pointer kernel won")
            else:
                tables[kernel][block_d] = choice
                us = timings[(block_d, kernel)]
                ptr = f"{us[POINTER]:.1f} us" if POINTER in us else "not run"
                notes.append(f"{kernel} d{block_d}: {label(choice)} {us[label(choice)]:.1f} us (pointer {ptr})")
    out("Summary: " + "; ".join(notes))
    out("\nPaste into attention.py (head dims where the pointer kernels won are left out, so they serve them):")
    out(f"_BWD_TMA = {any(tables.values())}")
    for kernel in KERNELS:
        out(f"{TABLES[kernel]}: dict[int, tuple[int, int, int, int]] = {{")
        for block_d, cfg in sorted(tables[kernel].items()):
            out(f"    {block_d}: {cfg},")
        out("}")
    out(f"total {time.perf_counter() - start:.0f} s")
    if out.file:
        out.file.close()


if __name__ == "__main__":
    main()
