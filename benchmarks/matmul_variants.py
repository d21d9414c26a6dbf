"""Matmul kernel variants against cuBLAS, one GPU call: which design and configuration to ship.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/matmul_variants.py [--quick]

An experiment, not the shipped launcher: variants are launched through Triton's own
``kernel[grid]`` with torch tensors so that configurations can be swept freely. For each
shape it prints torch's time and, per variant and configuration, the ratio torch / variant
(> 1: faster than cuBLAS), whether the PTX uses wgmma, and the relative error.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch
import triton
import triton.language as tl

from genesis_kernels.matmul import _grouped, _matmul_kernel


@triton.jit
def _tma_persistent(
    a,
    b,
    c,
    M,
    N,
    K,
    sa,
    sb,
    sc,
    A_T: tl.constexpr,
    B_T: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    FLATTEN: tl.constexpr,
    WS: tl.constexpr,
    STAGES: tl.constexpr,
):
    if A_T:
        a_desc = tl.make_tensor_descriptor(a, shape=[K, M], strides=[sa, 1], block_shape=[BK, BM])
    else:
        a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[sa, 1], block_shape=[BM, BK])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b, shape=[N, K], strides=[sb, 1], block_shape=[BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[sb, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[sc, 1], block_shape=[BM, BN])
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=FLATTEN, warp_specialize=WS):
        pid_m, pid_n = _grouped(tile, num_m, num_n, GROUP_M)
        om = pid_m * BM
        on = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in tl.range(k_tiles, num_stages=STAGES):
            ok = ki * BK
            if A_T:
                av = a_desc.load([ok, om]).T
            else:
                av = a_desc.load([om, ok])
            if B_T:
                bv = b_desc.load([on, ok]).T
            else:
                bv = b_desc.load([ok, on])
            acc = tl.dot(av, bv, acc)
        c_desc.store([om, on], acc.to(c.dtype.element_ty))


@triton.jit
def _tma_tiled(
    a,
    b,
    c,
    M,
    N,
    K,
    sa,
    sb,
    sc,
    A_T: tl.constexpr,
    B_T: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    STAGES: tl.constexpr,
):
    if A_T:
        a_desc = tl.make_tensor_descriptor(a, shape=[K, M], strides=[sa, 1], block_shape=[BK, BM])
    else:
        a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[sa, 1], block_shape=[BM, BK])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b, shape=[N, K], strides=[sb, 1], block_shape=[BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[sb, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[sc, 1], block_shape=[BM, BN])
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    pid_m, pid_n = _grouped(tl.program_id(0), num_m, num_n, GROUP_M)
    om = pid_m * BM
    on = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in tl.range(tl.cdiv(K, BK), num_stages=STAGES):
        ok = ki * BK
        if A_T:
            av = a_desc.load([ok, om]).T
        else:
            av = a_desc.load([om, ok])
        if B_T:
            bv = b_desc.load([on, ok]).T
        else:
            bv = b_desc.load([ok, on])
        acc = tl.dot(av, bv, acc)
    c_desc.store([om, on], acc.to(c.dtype.element_ty))


def median_ms(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def interleaved(fns: dict, reps: int) -> dict:
    for fn in fns.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    times: dict = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times[k].append(s.elapsed_time(e))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    print(torch.cuda.get_device_name(), "triton", triton.__version__, "torch", torch.__version__, "SMs", sms)

    shapes = [
        (4096, 4096, 4096, "NN"),
        (8192, 8192, 8192, "NN"),
        (8192, 3072, 768, "NN"),
        (8192, 768, 3072, "NT"),
        (768, 3072, 8192, "TN"),
        (8192, 50304, 768, "NT"),
    ]
    if args.quick:
        shapes = shapes[:1]
    for M, N, K, layout in shapes:
        run_shape(M, N, K, layout, sms, reps=10 if args.quick else 25)


def run_shape(M: int, N: int, K: int, layout: str, sms: int, reps: int) -> None:
    dtype = torch.bfloat16
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    a_store = torch.randn((K, M) if a_t else (M, K), device="cuda", dtype=dtype)
    b_store = torch.randn((N, K) if b_t else (K, N), device="cuda", dtype=dtype)
    a = a_store.t() if a_t else a_store
    b = b_store.t() if b_t else b_store
    c = torch.empty(M, N, device="cuda", dtype=dtype)
    ref = a.double() @ b.double()
    flops = 2 * M * N * K
    fns = {"torch": lambda: torch.matmul(a, b, out=c)}
    meta = {}

    def ptr_variant(bm, bn, bk, w, s):
        def run():
            grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), 1, 1)
            return _matmul_kernel[grid](
                a,
                b,
                c,
                M,
                N,
                K,
                0,
                a.stride(0),
                a.stride(1),
                0,
                b.stride(0),
                b.stride(1),
                0,
                c.stride(0),
                1,
                ACC=tl.float32,
                PRECISION="ieee",
                INT64=False,
                A_K_CONTIG=a.stride(1) == 1,
                B_N_CONTIG=b.stride(1) == 1,
                BLOCK_M=bm,
                BLOCK_N=bn,
                BLOCK_K=bk,
                GROUP_M=8,
                num_warps=w,
                num_stages=s,
            )

        return run

    def tma_variant(bm, bn, bk, w, s, flatten, ws, persistent):
        sa = a_store.stride(0)
        sb = b_store.stride(0)

        def run():
            if persistent:
                tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
                return _tma_persistent[(min(sms, tiles),)](
                    a_store,
                    b_store,
                    c,
                    M,
                    N,
                    K,
                    sa,
                    sb,
                    c.stride(0),
                    A_T=a_t,
                    B_T=b_t,
                    BM=bm,
                    BN=bn,
                    BK=bk,
                    GROUP_M=8,
                    NUM_SMS=sms,
                    FLATTEN=flatten,
                    WS=ws,
                    STAGES=s,
                    num_warps=w,
                    num_stages=s,
                )
            grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
            return _tma_tiled[grid](
                a_store,
                b_store,
                c,
                M,
                N,
                K,
                sa,
                sb,
                c.stride(0),
                A_T=a_t,
                B_T=b_t,
                BM=bm,
                BN=bn,
                BK=bk,
                GROUP_M=8,
                STAGES=s,
                num_warps=w,
                num_stages=s,
            )

        return run

    variants = {}
    for cfg in [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3)]:
        variants[f"ptr {cfg}"] = ptr_variant(*cfg)
    for cfg in [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3)]:
        variants[f"tma-tiled {cfg}"] = tma_variant(*cfg, False, False, False)
        variants[f"tma-pers {cfg}"] = tma_variant(*cfg, True, False, True)
        variants[f"tma-pers-ws {cfg}"] = tma_variant(*cfg, True, True, True)
    for name, run in variants.items():
        try:
            c.fill_(float("nan"))
            ck = run()
            torch.cuda.synchronize()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            ptx = ck.asm.get("ptx", "") if ck is not None and hasattr(ck, "asm") else ""
            meta[name] = (err, "wgmma" in ptx, getattr(ck, "n_regs", -1), getattr(ck, "n_spills", -1))
            fns[name] = run
        except Exception as exc:  # an experiment: report and go on
            print(f"  {name}: failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
    t = interleaved(fns, reps=reps)
    print(f"\n{M}x{N}x{K} {layout} bf16: torch {t['torch'] * 1e3:.1f} us ({flops / t['torch'] / 1e9:.0f} TFLOP/s)")
    for name in sorted(meta, key=lambda n: t[n]):
        err, wg, regs, spills = meta[name]
        print(
            f"  {name:<34} {t['torch'] / t[name]:5.2f}x  {flops / t[name] / 1e9:6.0f} TFLOP/s  "
            f"err {err:.1e} wgmma={wg} regs={regs} spills={spills}",
            flush=True,
        )


if __name__ == "__main__":
    main()
