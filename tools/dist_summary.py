"""The figures of issue #14 (genesis.distributed on NCCL) from the logs tools/gpu-dist wrote, one line
per target with its verdict.

    python3 tools/dist_summary.py LOGDIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _rc(path: Path) -> str:
    try:
        code = path.read_text().strip()
    except OSError:
        return "not run"
    return "passed" if code == "0" else f"FAILED (exit {code}{', time limit' if code in ('124', '137') else ''})"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str]) -> int:
    logs = Path(argv[1] if len(argv) > 1 else ".")
    print("==== issue #14 summary (" + str(logs) + ")")
    print(f"  [functional] pytest tests/nn/test_nn_distributed_nccl.py: {_rc(logs / 'a_pytest.rc')}")
    ar = _load(logs / "b_allreduce.json")
    if ar:
        bw = ar["bus_gbps"]
        print(
            f"  [perf] all_reduce {ar['mib']} MiB bf16 bus bandwidth: genesis {bw['genesis']:.1f} GB/s, torch "
            f"{bw['torch']:.1f} GB/s, ratio {ar['ratio']:.3f} (target >= 0.95): {_verdict(ar['ratio'] >= 0.95)}"
        )
    else:
        print(f"  [perf] all_reduce bandwidth: no figures ({_rc(logs / 'b_allreduce.rc')})")
    one, two = _load(logs / "c_ddp1.json"), _load(logs / "c_ddp2.json")
    for name in ("genesis", "torch"):
        if one and two and name in one and name in two:
            scale = two[name]["tokens_per_s"] / one[name]["tokens_per_s"]
            print(
                f"  [perf] {name} GPT-2 small, 2 GPUs / 1 GPU tokens/s: {two[name]['tokens_per_s']:,.0f} / "
                f"{one[name]['tokens_per_s']:,.0f} = {scale:.3f} (efficiency {50 * scale:.1f} %; target >= 1.85)"
                + (f": {_verdict(scale >= 1.85)}" if name == "genesis" else " (reference)")
            )
    if two and "genesis_over_torch" in two:
        ratio = two["genesis_over_torch"]
        verdict = _verdict(ratio >= 1)
        print(f"  [perf] genesis DDP / torch DDP tokens/s on 2 GPUs: {ratio:.3f} (target >= 1.0): {verdict}")
    if two and "genesis" in two and "exposed_pct" in two["genesis"]:
        g = two["genesis"]
        direct = g.get("finalize_pct")
        print(
            f"  [perf] genesis exposed communication: bwd sync - no_sync {g['exposed_ms']:.2f} ms = "
            f"{g['exposed_pct']:.1f} % of a {g['step_ms']:.1f} ms step"
            + (f"; last kernel -> step ready {g['finalize_ms']:.2f} ms = {direct:.1f} %" if direct is not None else "")
            + f" (target < 10 %): {_verdict(max(g['exposed_pct'], direct or 0) < 10)}"
        )
        if "torch" in two and "exposed_pct" in two["torch"]:
            t = two["torch"]
            print(f"         torch DDP for reference: {t['exposed_ms']:.2f} ms = {t['exposed_pct']:.1f} % of its step")
    for part, what in (("c_ddp1", "bench_gpt_ddp 1 GPU"), ("c_ddp2", "bench_gpt_ddp 2 GPUs")):
        if not _load(logs / f"{part}.json"):
            print(f"  [perf] {what}: no figures ({_rc(logs / f'{part}.rc')})")
    for part, what in (
        ("d_one", "train_gpt 1 GPU, batch 2B"),
        ("d_two", "torchrun --nproc_per_node=2 examples/train_gpt.py, batch B"),
        ("d_nodes", "two simulated nodes (--nnodes=2, one GPU each), batch B"),
    ):
        print(f"  [functional] {what}: {_rc(logs / f'{part}.rc')}")
    try:
        curves = (logs / "d_compare.txt").read_text().strip().splitlines()
    except OSError:
        curves = ["loss curves: not compared"]
    for line in curves:
        print("  [functional] " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
