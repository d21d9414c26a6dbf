"""genesis.distributed on NCCL: two processes, one GPU each (the 2-GPU machine, nvidia-h200-x2).

Skipped here, with the reason, where there are fewer than two GPUs or no CuPy (the NCCL binding);
with GENESIS_REQUIRE_NCCL=1 (tools/gpu-dist) that is an error instead. Plain pytest runs it: each test
starts its own processes, one per GPU.
The workers are in dist_helpers_nccl.py; each checks its own results.
"""

from __future__ import annotations

import os
import time

import pytest
import torch.multiprocessing as mp

from device_support import HAS_CUDA


def _two_gpus_and_nccl() -> str | None:
    if not HAS_CUDA:
        return "no CUDA device on this machine (the NCCL tests run on the 2-GPU machine)"
    import genesis

    if genesis.cuda.device_count() < 2:
        return "the NCCL tests need two GPUs (nvidia-h200-x2)"
    try:
        genesis.distributed.nccl.nccl_module()
    except RuntimeError as e:
        return f"CuPy's NCCL binding cannot be used: {e}"
    return None


REASON = _two_gpus_and_nccl()
if REASON is not None and os.environ.get("GENESIS_REQUIRE_NCCL") == "1":  # tools/gpu-dist: a skip is a failure
    raise RuntimeError(f"GENESIS_REQUIRE_NCCL=1, but the NCCL tests cannot run: {REASON}")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_nccl_collectives_exact_for_several_dtypes_and_sizes_async_ordering():
    import dist_helpers
    import dist_helpers_nccl

    mp.spawn(dist_helpers_nccl.collectives, args=(2, dist_helpers.free_port()), nprocs=2)


def test_nccl_ddp_gradients_equal_the_whole_batch():
    import dist_helpers
    import dist_helpers_nccl

    mp.spawn(dist_helpers_nccl.ddp, args=(2, dist_helpers.free_port()), nprocs=2)


@pytest.mark.parametrize("mode", ["dies", "stalls"])
def test_nccl_a_rank_that_dies_or_stalls_makes_the_other_fail_within_the_timeout(mode, tmp_path):
    import queue as queues

    import dist_helpers
    import dist_helpers_nccl

    ctx = mp.get_context("spawn")  # its own processes: mp.spawn would kill rank 0 as soon as rank 1 fails
    outcome, port = ctx.Queue(), dist_helpers.free_port()
    logs = [tmp_path / f"rank{r}.log" for r in range(2)]
    procs = [
        ctx.Process(target=dist_helpers_nccl.failing, args=(r, 2, port, outcome, mode, str(logs[r]))) for r in range(2)
    ]
    start = time.monotonic()
    for p in procs:
        p.start()
    try:
        raised, message, waited = outcome.get(timeout=dist_helpers_nccl.TIMEOUT * 8 + 30)  # rank 0's; a hang: Empty
    except queues.Empty:
        raised, message, waited = False, "rank 0 reported nothing (a hang; the stacks are in its log)", float("nan")
    finally:
        for p in procs:
            p.join(timeout=20)
            if p.is_alive():  # hung: end it, so that the GPU is free for the next test
                p.kill()
                p.join(5)

    def report() -> str:  # everything needed to diagnose a failure from the output alone
        lines = [f"mode {mode}: rank 0 -> raised={raised} after {waited:.1f} s: {message}"]
        lines += [f"exit codes {[p.exitcode for p in procs]}, {time.monotonic() - start:.1f} s in all"]
        for r, log in enumerate(logs):
            text = log.read_text() if log.exists() else "(no log)"
            lines += [f"----- rank {r} log -----", text[-6000:]]
        return "\n".join(lines)

    print(report())  # in the test's output (-s, or pytest's captured stdout of a failure)
    assert raised, report()
    assert "on rank 0" in message and "aborted" in message, report()  # the watchdog's RuntimeError
    assert waited < dist_helpers_nccl.TIMEOUT + 15, report()
    if mode == "stalls":  # the group's timeout, not the default ten minutes
        assert waited >= 0.8 * dist_helpers_nccl.TIMEOUT, report()
    assert procs[1].exitcode == 3, report()
