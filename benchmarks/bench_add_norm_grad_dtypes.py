"""The fused add + LayerNorm backward kernel with the normed output's gradient in float32 or in bfloat16.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_add_norm_grad_dtypes.py

Under bf16 autocast a GPT-2 block's residual stream ``s`` is float32. genesis.compile's add + norm pass writes
the normed output in bfloat16 where only Linears read it, so the Linears' input gradient, which the backward
kernel reads as ``dy``, comes in bfloat16 instead of float32 (benchmarks/profile_gpt_kernels.py). This times
``genesis_kernels.add_norm_backward`` at a GPT-2 batch, (8192, 768), ``s`` / ``ds`` / ``dx`` float32 and a
float32 weight with its gradients, for both ``dy`` dtypes, interleaved with CUDA events (benchmarks/timing.py):
a bf16 ``dy`` reads 12.6 MB fewer of about 88 MB, so a slower mixed-dtype kernel is the kernel's doing.
"""

from __future__ import annotations

import torch

import genesis_kernels as gk
from timing import interleaved_us

ROWS, N, SETS = 8192, 768, 4


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def main() -> None:
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    f32 = torch.float32
    s = [torch.randn(ROWS, N, device="cuda") for _ in range(SETS)]
    ds = [torch.randn(ROWS, N, device="cuda") for _ in range(SETS)]
    dy = {dt: [torch.randn(ROWS, N, device="cuda").to(dt) for _ in range(SETS)] for dt in (f32, torch.bfloat16)}
    w = torch.randn(N, device="cuda")
    mean = torch.randn(ROWS, device="cuda")
    rstd = torch.rand(ROWS, device="cuda") + 0.5
    dx = torch.empty(ROWS, N, device="cuda")
    dw, db = torch.empty(N, device="cuda"), torch.empty(N, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    fns = {}
    for dt, grads in dy.items():

        def run(i: int, grads=grads) -> None:
            gk.add_norm_backward(
                buf(s[i]), buf(grads[i]), buf(ds[i]), buf(w), buf(mean), buf(rstd), buf(dx), buf(dw), buf(db),
                stream=stream,
            )  # fmt: skip

        fns[f"dy {str(dt).removeprefix('torch.')}"] = run
    times = interleaved_us(fns, reps=60, sets=SETS)
    base = times["dy float32"]
    for name, us in times.items():
        print(f"  {name:14s} {us:8.1f} us   float32-dy time / this {base / us:5.2f}x")


if __name__ == "__main__":
    main()
