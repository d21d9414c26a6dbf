"""Forward sweep of the TMA flash-attention kernel against the pointer kernel and torch (GPU, < 4 min on an H100).

    PYTHONPATH=$(ls -d $PWD/packages/*/src | paste -sd:) python3 benchmarks/sweep_attention_tma.py [--reps 20]
        [--budget 150] [--d 128 64] [--no-ws] [--no-bwd]

Causal bf16 at (B, H, L, D) = (4, 16, 4096, 128) and (4, 32, 4096, 64). genesis_kernels.attention has two
forward kernels: the pointer kernel (_attn_fwd_kernel, cp.async loads) and the TMA kernel
(_attn_fwd_tma_kernel, tensor descriptors built on the device), chosen by _FWD_TMA and configured by
_FWD_TMA_CONFIGS[head dim] = (BLOCK_M, BLOCK_N, num_warps, num_stages, warp_specialize). Per shape:

1. check: every candidate of CANDIDATES is patched into _FWD_TMA_CONFIGS, compiled and run once. A candidate
   that fails to compile or to launch (out of shared memory, a warp-specialisation pass that gives up) is
   printed as 'skip' with the compiler's first error line (the MLIR reproducer it dumps is swallowed). One
   that runs must have taken the TMA kernel (its cache entry), and is compared with torch's sdpa (relative
   error of out; over 2e-2 is BAD and never chosen) and with the pointer kernel's lse (max abs difference).
2. time: the checked candidates, the pointer kernel at its shipped config, torch's flash and cuDNN
   backends, interleaved (benchmarks/timing.py's interleaved_us: CUDA-event medians, inputs rotated over 2
   sets), fastest first, with forward TFLOP/s and the ratio to cuDNN (> 1: faster than cuDNN).
3. forward + backward: genesis with the best TMA forward (backward at its shipped configs, fed the TMA
   kernel's lse; dq / dk / dv checked against torch), genesis with the pointer forward, torch flash and
   cuDNN, interleaved.

Last, a paste-ready _FWD_TMA_CONFIGS (the head dims where TMA won) and _FWD_TMA. ``--budget`` bounds the
seconds spent in phase 1 (candidates past it are skipped and said so); phases 2 and 3 always run. A CUDA
error that poisons the context (illegal address, ...) ends the GPU work and prints what was measured.
Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import triton
from torch.nn.attention import SDPBackend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_attention import SETS, Case, att, rel, torch_fwd, torch_fwd_bwd, usable
from timing import interleaved_us

SHAPES = [(4, 16, 4096, 128), (4, 32, 4096, 64)]
# (BLOCK_M, BLOCK_N, num_warps, num_stages, warp_specialize); the shipped table entry is tried first.
CANDIDATES = [
    (bm, bn, w, s, ws) for bm, bn, w, s, ws in itertools.product((128,), (64, 128), (4, 8), (2, 3, 4), (False, True))
]
BAD = 2e-2  # bf16 genesis vs bf16 torch at L = 4096: both ~4e-3 from the exact result
Config = tuple[int, int, int, int, bool]


class Poisoned(RuntimeError):
    """A CUDA error that leaves the context unusable: nothing more can run in this process."""


def _sticky(e: BaseException) -> bool:
    s = str(e).lower()
    return any(w in s for w in ("illegal", "misaligned", "unspecified launch failure", "device-side assert"))


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Redirect file descriptor 2 (where MLIR and ptxas write) to a temp file; yields a list that receives
    its lines on exit."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().splitlines())


def first_error(e: BaseException, err_lines: list[str]) -> str:
    """A one-line reason: the compiler's first 'error:' line if it printed one, else the exception."""
    for line in err_lines:
        if "error:" in line:
            return line.split("error:", 1)[1].strip()[:160]
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"


@contextlib.contextmanager
def forward_kernel(block_d: int, cfg: Config | None) -> Iterator[None]:
    """The TMA kernel at ``cfg`` (None: the pointer kernel at its shipped config) for the duration."""
    old_switch, old_cfg = att._FWD_TMA, att._FWD_TMA_CONFIGS.get(block_d)
    att._FWD_TMA = cfg is not None
    if cfg is not None:
        att._FWD_TMA_CONFIGS[block_d] = cfg
    try:
        yield
    finally:
        att._FWD_TMA = old_switch
        if old_cfg is not None:
            att._FWD_TMA_CONFIGS[block_d] = old_cfg


def with_kernel(case: Case, cfg: Config | None, fn: Callable[[int], None]) -> Callable[[int], None]:
    """``fn`` with the forward kernel set per call (two dict writes: nothing beside a ~1 ms launch)."""

    def run(i: int) -> None:
        with forward_kernel(case.block_d, cfg):
            fn(i)

    return run


def took_tma(case: Case, cfg: Config) -> bool:
    """Whether the last forward built (so launched) the TMA kernel at ``cfg``, untouched by the shrinking."""
    L, D = case.shape[2:]
    eff = att._fwd_tma_config(D, "bfloat16", L, L)
    return att._fwd_tma_key("bfloat16", True, True, eff, D) in att._FWD_TMA_KERNEL.cache and eff == cfg


def check(case: Case, cfg: Config | None, lse_ref: torch.Tensor | None) -> tuple[float, float]:
    """Run set 0's forward once with this kernel: (rel error of out against torch, max |lse - lse_ref|)."""
    with forward_kernel(case.block_d, cfg):
        case.fwd(0)
        torch.cuda.synchronize()
        if cfg is not None and not took_tma(case, cfg):  # (reads the patched table)
            raise RuntimeError("the TMA kernel was not taken (selection refused this case?)")
    err = rel(case.gen.out, case.ref["out"])
    lse_err = (case.gen.lse - lse_ref).abs().max().item() if lse_ref is not None else 0.0
    return err, lse_err


def sweep_shape(case: Case, args: argparse.Namespace, start: float) -> tuple[Config | None, dict[str, float]]:
    """Phases 1 and 2 at one shape: returns the best TMA config (None if none ran) and the timings."""
    B, H, L, D = case.shape
    tag = f"d{D}"
    # The pointer kernel first: the baseline and the lse reference.
    err, _ = check(case, None, None)
    lse_ref = case.gen.lse.clone()
    print(f"  {tag} pointer {att._FWD_CONFIGS[case.block_d]}: rel err {err:.2e}", flush=True)
    shipped = att._FWD_TMA_CONFIGS.get(case.block_d)
    cands = ([shipped] if shipped else []) + [c for c in CANDIDATES if c != shipped]
    if args.no_ws:
        cands = [c for c in cands if not c[4]]
    ok: list[tuple[Config, float, float]] = []
    for cfg in cands:
        if time.perf_counter() - start > args.budget:
            print(f"  {tag} tma {cfg}: skipped (time budget)", flush=True)
            continue
        t0 = time.perf_counter()
        try:
            with captured_stderr() as err_lines:
                err, lse_err = check(case, cfg, lse_ref)
        except Exception as e:  # compile errors, out of shared memory at load, ...
            if _sticky(e):
                raise Poisoned(f"{tag} tma {cfg}: {first_error(e, err_lines)}") from e
            print(f"  {tag} tma {cfg}: skip ({first_error(e, err_lines)[:110]})", flush=True)
            continue
        bad = not (err < BAD and math.isfinite(err) and lse_err < 1e-2)
        print(f"  {tag} tma {cfg}: ok in {time.perf_counter() - t0:4.1f} s, rel err {err:.2e}, "
              f"lse vs pointer {lse_err:.1e}{'  BAD' if bad else ''}", flush=True)  # fmt: skip
        if not bad:
            ok.append((cfg, err, lse_err))
    fns = {
        "pointer (shipped)": with_kernel(case, None, case.fwd),
        **{f"tma {cfg}": with_kernel(case, cfg, case.fwd) for cfg, _, _ in ok},
        **usable({
            "torch flash": torch_fwd(case, SDPBackend.FLASH_ATTENTION),
            "torch cudnn": torch_fwd(case, SDPBackend.CUDNN_ATTENTION),
        }),
    }  # fmt: skip
    us = interleaved_us(fns, args.reps, SETS, warmup=2)
    ref = us.get("torch cudnn")
    print(f"  {tag}: causal bf16 {B}x{H}x{L}x{D} forward, median of {args.reps} (interleaved), fastest first")
    for name, t in sorted(us.items(), key=lambda kv: kv[1]):
        ratio = f"  {ref / t:5.2f}x cuDNN" if ref else ""
        mark = "*" if name == f"tma {shipped}" else " "
        print(f"   {mark}{name:<36} {t:8.1f} us  {case.flops / t / 1e6:5.0f} TFLOP/s{ratio}")
    tma = [(t, name) for name, t in us.items() if name.startswith("tma ")]
    best = None
    if tma:
        t, name = min(tma)
        best = next(cfg for cfg, _, _ in ok if f"tma {cfg}" == name)
        print(
            f"  BEST tma {tag}: {best}  {t:.1f} us ({case.flops / t / 1e6:.0f} TFLOP/s); "
            f"pointer {us['pointer (shipped)']:.1f} us ({case.flops / us['pointer (shipped)'] / 1e6:.0f} TFLOP/s)"
        )
    print(flush=True)
    return best, us


def fwd_bwd(case: Case, best: Config | None, reps: int) -> None:
    """Phase 3: the whole training step of attention, genesis (TMA and pointer forward) against torch."""
    D = case.shape[3]
    if best is not None:  # the backward reads the TMA forward's out and lse: check its gradients too
        with forward_kernel(case.block_d, best):
            case.fwd_bwd(0)
        torch.cuda.synchronize()
        errs = ", ".join(f"{n} {rel(getattr(case.gen, n), case.ref[n]):.1e}" for n in ("dq", "dk", "dv"))
        print(f"  d{D} backward after the TMA forward {best}: rel err {errs}")
    fns = {"genesis, pointer fwd": with_kernel(case, None, case.fwd_bwd)}
    if best is not None:
        fns["genesis, tma fwd"] = with_kernel(case, best, case.fwd_bwd)
    fns.update(usable({
        "torch flash": torch_fwd_bwd(case, SDPBackend.FLASH_ATTENTION),
        "torch cudnn": torch_fwd_bwd(case, SDPBackend.CUDNN_ATTENTION),
    }))  # fmt: skip
    fwd_bwd_table(case, fns, reps, print)
    print(flush=True)


def fwd_bwd_table(case: Case, fns: dict[str, Callable[[int], None]], reps: int, write: Callable[[str], object]) -> None:
    """Time ``fns`` (forward + backward each) interleaved and write them fastest first, with TFLOP/s
    (3.5x the forward's FLOPs: the backward recomputes S and dP) and the ratio to torch's cuDNN."""
    B, H, L, D = case.shape
    us = interleaved_us(fns, reps, SETS)
    write(f"  d{D}: forward + backward, causal bf16 {B}x{H}x{L}x{D}, median of {reps} (interleaved)")
    ref = us.get("torch cudnn")
    for name, t in sorted(us.items(), key=lambda kv: kv[1]):
        ratio = f"  {ref / t:5.2f}x cuDNN" if ref else ""
        write(f"    {name:<24} {t:9.1f} us  {3.5 * case.flops / t / 1e6:5.0f} TFLOP/s{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--budget", type=float, default=150.0, help="seconds for the compile + check phase")
    parser.add_argument("--d", type=int, nargs="*", default=[s[3] for s in SHAPES], help="head dims to sweep")
    parser.add_argument("--no-ws", action="store_true", help="leave out the warp_specialize=True candidates")
    parser.add_argument("--no-bwd", action="store_true", help="skip the forward + backward comparison")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_attention_tma.py needs a CUDA device")
    start = time.perf_counter()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    print(f"shipped: _FWD_TMA = {att._FWD_TMA}, _FWD_TMA_CONFIGS = {att._FWD_TMA_CONFIGS}", flush=True)
    results: dict[int, tuple[Config | None, dict[str, float]]] = {}
    try:
        for shape in SHAPES:
            if shape[3] not in args.d:
                continue
            case = Case(shape)
            best, us = sweep_shape(case, args, start)
            results[case.block_d] = (best, us)
            print(f"sweep of d{shape[3]} done at {time.perf_counter() - start:.0f} s", flush=True)
            if not args.no_bwd:
                fwd_bwd(case, best, max(5, args.reps // 2))
            del case
            torch.cuda.empty_cache()
    except Poisoned as e:
        print(f"\nCUDA context lost, no more GPU work: {e}", flush=True)
    except Exception as e:
        if not _sticky(e):
            raise
        print(f"\nCUDA context lost, no more GPU work: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    table = dict(att._FWD_TMA_CONFIGS)
    wins = []
    print("\nSummary (forward, causal bf16):")
    for block_d, (best, us) in sorted(results.items()):
        ptr = us["pointer (shipped)"]
        if best is None:
            print(f"  d{block_d}: no TMA candidate ran; keep the pointer kernel ({ptr:.1f} us)")
            table.pop(block_d, None)
            continue
        t = us[f"tma {best}"]
        won = t < ptr
        print(f"  d{block_d}: tma {best} {t:.1f} us vs pointer {ptr:.1f} us: {ptr / t:.2f}x "
              f"({'TMA' if won else 'pointer'} wins)")  # fmt: skip
        if won:
            table[block_d] = best
            wins.append(block_d)
        else:
            table.pop(block_d, None)
    print("\nPaste into attention.py (head dims where the pointer kernel won are left out, so it serves them):")
    print(f"_FWD_TMA = {bool(table)}")
    print("_FWD_TMA_CONFIGS: dict[int, tuple[int, int, int, int, bool]] = {")
    for block_d, cfg in sorted(table.items()):
        print(f"    {block_d}: {cfg},")
    print("}")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
