"""Compare per-step loss curves that examples/train_gpt.py wrote with --loss-log: the first file is the
reference, each other is compared with it step by step.

    python3 tools/compare_losses.py one_gpu.json two_gpus.json two_nodes.json --rtol 0.02

Prints, per file, the largest absolute and relative difference from the reference and at which step,
and PASS / FAIL against ``--rtol`` (relative to the reference's loss at that step). Exits 1 when a curve
is missing, has another length, or fails; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def compare(reference: list[float], other: list[float]) -> tuple[float, float, int]:
    """(largest |difference|, largest |difference| / |reference|, the step of the largest relative one)."""
    diffs = [abs(a - b) for a, b in zip(reference, other)]
    rel = [d / max(abs(a), 1e-12) for d, a in zip(diffs, reference)]
    worst = max(range(len(rel)), key=rel.__getitem__)
    return max(diffs), rel[worst], worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="--loss-log files; the first is the reference")
    parser.add_argument("--rtol", type=float, default=0.02, help="largest relative difference that passes")
    args = parser.parse_args(argv)
    curves = {}
    for path in args.logs:
        if not path.exists():
            print(f"  {path.name}: MISSING (that run failed; see its log)")
            continue
        log = json.loads(path.read_text())
        curves[path] = log
    ref_path = args.logs[0]
    if ref_path not in curves:
        print("FAIL: the reference curve is missing")
        return 1
    reference = curves[ref_path]["losses"]
    print(
        f"  reference {ref_path.name}: {len(reference)} steps, world {curves[ref_path]['world_size']} x batch "
        f"{curves[ref_path]['batch_size']}; loss {reference[0]:.4f} -> {reference[-1]:.4f}"
    )
    ok = len(curves) == len(args.logs) and len(reference) > 1
    for path in args.logs[1:]:
        if path not in curves:
            continue
        log = curves[path]
        losses = log["losses"]
        if len(losses) != len(reference):
            print(f"  {path.name}: FAIL, {len(losses)} steps against {len(reference)}")
            ok = False
            continue
        worst_abs, worst_rel, step = compare(reference, losses)
        passed = worst_rel <= args.rtol
        ok &= passed
        print(
            f"  {path.name} (world {log['world_size']} x batch {log['batch_size']}): max |diff| {worst_abs:.2e}, "
            f"max rel {worst_rel:.2e} at step {step} ({reference[step]:.4f} vs {losses[step]:.4f}); "
            f"final {losses[-1]:.4f}: {'PASS' if passed else 'FAIL'} (rtol {args.rtol:g})"
        )
    print("loss curves: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
