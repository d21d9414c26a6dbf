"""One launch of each kernel whose benchmark misses its target, for Nsight Compute to profile.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) ncu -k regex:"_attn|_matmul" \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        python3 benchmarks/profile_targets.py

The shapes are the benchmarks' (bench_attention.py, bench_matmul.py): causal attention forward and
backward, bf16, (4, 16, 4096, 128); the weight-gradient product dW = dy^T x of GPT-2's MLP,
768 x 3072 x 8192 with dy read transposed. Not a benchmark: one call each (compiled first, outside
the profiled launches only where the kernel is already in Triton's on-disk cache).
"""

from __future__ import annotations

import math

import torch

import genesis_kernels as gk


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def main() -> None:
    b, h, seq, d = 4, 16, 4096, 128
    q, k, v, g = (torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    out, dq, dk, dv = (torch.empty_like(q) for _ in range(4))
    lse = torch.empty(b, h, seq, device="cuda", dtype=torch.float32)
    s = torch.cuda.current_stream().cuda_stream
    scale = 1 / math.sqrt(d)
    gk.attention_forward(buf(q), buf(k), buf(v), buf(out), buf(lse), causal=True, scale=scale, stream=s)
    gk.attention_backward(buf(q), buf(k), buf(v), buf(out), buf(g), buf(lse), buf(dq), buf(dk), buf(dv),
                          causal=True, scale=scale, stream=s)  # fmt: skip
    m, n, kk = 768, 3072, 8192
    a = torch.randn(kk, m, device="cuda", dtype=torch.bfloat16).t().unsqueeze(0)  # dy^T, read transposed
    w = torch.randn(1, kk, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(1, m, n, device="cuda", dtype=torch.bfloat16)
    gk.matmul(buf(a), buf(w), buf(c))
    torch.cuda.synchronize()
    print("profiled: attention forward, backward (dkdv, dq), matmul 768x3072x8192 TN")


if __name__ == "__main__":
    main()
