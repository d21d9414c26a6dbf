"""Llama's small per-layer kernels, genesis against torch: the KV-cache write and the rotary embedding of q and k.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_llama_kernels.py [--reps 200]

Shapes of Llama-3.2-1B (8 key / value heads and 32 query heads of 64, bf16), issue #29:

* cache write, prefill: B=1, T=2,048 new tokens into a cache of M=2,304 slots (keys contiguous, values a
  (B, H, T, D) view of a (B, T, H, D) projection, as the attention layer makes them);
* cache write, decode: B=16, T=1, each sequence at its own position;
* rotary of q (1, 32, 2048, 64) and k (1, 8, 2048, 64), both transposed views of their projections, float32
  tables indexed by position ids on the device.

genesis: ``StaticKVCache.update`` (one fused launch for keys and values) and ``F.apply_rotary_emb(q, k=k)``
(one launch for q and k), with, beside them, the write through the generic advanced-index setitem that the
cache used before (``keys[index] = k``). torch: ``index_copy_`` on the flattened cache (bench_llama_decode's
torch cache), the advanced-index assignment ``keys[b, h, slots] = k``, and HF's rotate-half composite in the
operands' dtype. Each row: median microseconds of CUDA events per call (genesis and torch interleaved in one
process, after warm-up, input sets rotated), the GPU kernels' own time (CUPTI, torch.profiler), the host's
time to issue one call, GB/s of the bytes the op must move (read the new values, write them; rotary: read and
write q and k) over the event time, and torch_time / genesis_time (> 1: genesis faster). Before timing, each
genesis result is checked against torch's (bit-exact for the cache write; rotary within bf16 rounding).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import cast

import torch

import genesis
import genesis.nn.functional as GF
from genesis.generation import StaticKVCache
from timing import host_us, interleaved_us, kernel_us

SETS = 2
HEADS_Q, HEADS_KV, HEAD_DIM = 32, 8, 64


def _g(t: torch.Tensor) -> genesis.Tensor:
    return genesis.from_dlpack(t)


def _t(g: genesis.Tensor) -> torch.Tensor:
    return torch.from_dlpack(g)


class CacheWrite:
    """One cache-write case: new keys / values of B sequences of T tokens, each sequence at its own position."""

    def __init__(self, batch: int, tokens: int, max_len: int) -> None:
        gen = torch.Generator(device="cuda").manual_seed(0)
        B, H, T, D = batch, HEADS_KV, tokens, HEAD_DIM
        self.shape, self.max_len = (B, H, T, D), max_len
        self.k = [torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(SETS)]
        self.v = [
            torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            for _ in range(SETS)
        ]
        top = max_len - T + 1
        self.positions = (
            torch.randint(0, top, (B,), device="cuda", generator=gen)
            if T == 1
            else torch.zeros(B, dtype=torch.int64, device="cuda")
        )
        # torch: the flattened cache written with index_copy_, and the advanced-index assignment
        self.t_keys = torch.zeros(B, H, max_len, D, device="cuda", dtype=torch.bfloat16)
        self.t_values = torch.zeros_like(self.t_keys)
        heads = torch.arange(B * H, device="cuda")
        self.base, self.offsets = (heads * max_len).view(B, H, 1), torch.arange(T, device="cuda")
        self.b_ids, self.h_ids = (
            torch.arange(B, device="cuda").view(B, 1, 1),
            torch.arange(H, device="cuda").view(1, H, 1),
        )
        # genesis: the cache, its inputs viewing torch's memory
        self.cache = StaticKVCache(1, B, H, max_len, D, dtype=genesis.bfloat16, device="cuda")
        self.g_k, self.g_v = [_g(t) for t in self.k], [_g(t) for t in self.v]
        self.g_positions = _g(self.positions)
        self.g_index = self.cache.write_index(self.g_positions, T)

    def bytes_moved(self) -> int:
        return 2 * 2 * self.k[0].numel() * self.k[0].element_size()  # keys and values, read once, written once

    def torch_index_copy(self, i: int) -> None:
        B, _, T, D = self.shape
        rows = (self.base + (self.positions.view(-1, 1) + self.offsets).view(B, 1, T)).reshape(-1)
        self.t_keys.view(-1, D).index_copy_(0, rows, self.k[i].reshape(-1, D))
        self.t_values.view(-1, D).index_copy_(0, rows, self.v[i].reshape(-1, D))

    def torch_setitem(self, i: int) -> None:
        B, _, T, _ = self.shape
        slots = (self.positions.view(-1, 1) + self.offsets).clamp(0, self.max_len - 1).view(B, 1, T)
        self.t_keys[self.b_ids, self.h_ids, slots] = self.k[i]
        self.t_values[self.b_ids, self.h_ids, slots] = self.v[i]

    def genesis_update(self, i: int) -> None:
        with genesis.no_grad():
            self.cache.update(0, self.g_k[i], self.g_v[i], self.g_positions, self.g_index)

    def genesis_setitem(self, i: int) -> None:
        """The write as the cache made it before the fused op: two generic advanced-index setitems."""
        with genesis.no_grad():
            self.cache.keys[0][self.g_index] = self.g_k[i]
            self.cache.values[0][self.g_index] = self.g_v[i]

    def check(self) -> str:
        self.torch_index_copy(0)
        self.genesis_update(0)
        same = torch.equal(_t(self.cache.keys[0]), self.t_keys) and torch.equal(_t(self.cache.values[0]), self.t_values)
        if not same:
            raise AssertionError("genesis's cache write differs from torch's index_copy_")
        return "bit-exact"


class Rotary:
    """q and k of a prefill, (B, H, T, D) views of (B, T, H, D) projections, rotated by position ids."""

    def __init__(self, tokens: int) -> None:
        gen = torch.Generator(device="cuda").manual_seed(1)
        T, D = tokens, HEAD_DIM
        self.q = [
            torch.randn(1, T, HEADS_Q, D, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            for _ in range(SETS)
        ]
        self.k = [
            torch.randn(1, T, HEADS_KV, D, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            for _ in range(SETS)
        ]
        inv = 1.0 / 500000.0 ** (torch.arange(0, D, 2, dtype=torch.float64, device="cuda") / D)
        angles = torch.arange(4096, dtype=torch.float64, device="cuda")[:, None] * inv
        self.cos, self.sin = angles.cos().float(), angles.sin().float()
        self.position_ids = torch.arange(T, device="cuda").view(1, T)
        self.g_q, self.g_k = [_g(t) for t in self.q], [_g(t) for t in self.k]
        self.g_cos, self.g_sin, self.g_ids = _g(self.cos), _g(self.sin), _g(self.position_ids)

    def bytes_moved(self) -> int:
        return 2 * (self.q[0].numel() + self.k[0].numel()) * self.q[0].element_size()

    def torch_rotate_half(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """HF Llama's apply_rotary_pos_emb: cos / sin gathered, concatenated, in the operands' dtype."""
        c, s = self.cos[self.position_ids], self.sin[self.position_ids]  # (1, T, D / 2)
        c = torch.cat((c, c), -1).to(torch.bfloat16).unsqueeze(1)
        s = torch.cat((s, s), -1).to(torch.bfloat16).unsqueeze(1)

        def rotate_half(x: torch.Tensor) -> torch.Tensor:
            x1, x2 = x.chunk(2, -1)
            return torch.cat((-x2, x1), -1)

        q, k = self.q[i], self.k[i]
        return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s

    def genesis_pair(self, i: int) -> object:
        with genesis.no_grad():
            return GF.apply_rotary_emb(self.g_q[i], self.g_cos, self.g_sin, self.g_ids, k=self.g_k[i], seq_dim=2)

    def genesis_separate(self, i: int) -> object:
        with genesis.no_grad():
            q = GF.apply_rotary_emb(self.g_q[i], self.g_cos, self.g_sin, self.g_ids, seq_dim=2)
            return q, GF.apply_rotary_emb(self.g_k[i], self.g_cos, self.g_sin, self.g_ids, seq_dim=2)

    def check(self) -> str:
        ref_q, ref_k = self.torch_rotate_half(0)
        exact = (self.q[0].double(), self.k[0].double())
        c = torch.cat((self.cos, self.cos), -1).double()[self.position_ids].unsqueeze(1)
        s = torch.cat((self.sin, self.sin), -1).double()[self.position_ids].unsqueeze(1)

        def rope64(x: torch.Tensor) -> torch.Tensor:
            x1, x2 = x.chunk(2, -1)
            return x * c + torch.cat((-x2, x1), -1) * s

        out_q, out_k = cast(tuple, self.genesis_pair(0))
        errs = []
        for name, got, ref, x in (("q", out_q, ref_q, exact[0]), ("k", out_k, ref_k, exact[1])):
            want = rope64(x)
            g_err = ((_t(got).double() - want).norm() / want.norm()).item()
            t_err = ((ref.double() - want).norm() / want.norm()).item()
            if g_err > 2 * t_err + 1e-3:
                raise AssertionError(f"genesis rotary {name}: relative error {g_err:.2e} (torch's {t_err:.2e})")
            errs.append(f"{name} {g_err:.1e} (torch {t_err:.1e})")
        return "vs float64: " + ", ".join(errs)


def report(title: str, fns: dict[str, Callable[[int], object]], nbytes: int, reps: int, baseline: str) -> None:
    events = interleaved_us(fns, reps, SETS)
    kernels = kernel_us(fns, 20, SETS)
    host = host_us(fns, max(20, reps // 4), SETS)
    print(f"\n{title}")
    head = f"  {'variant':34s} {'events us':>10s} {'kernels us':>11s} {'host us':>8s} {'GB/s':>8s}"
    print(f"{head} {'vs ' + baseline:>14s}")
    for name in fns:
        ratio = events[baseline] / events[name]
        print(f"  {name:34s} {events[name]:10.1f} {kernels[name]:11.1f} {host[name]:8.1f} "
              f"{nbytes / events[name] / 1e3:8.0f} {ratio:14.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")

    for title, (batch, tokens) in (("cache write, prefill (B=1, T=2048, M=2304)", (1, 2048)),
                                   ("cache write, decode (B=16, T=1, M=2304)", (16, 1))):  # fmt: skip
        case = CacheWrite(batch, tokens, 2304)
        print(f"\n{title}: check {case.check()}")
        fns: dict[str, Callable[[int], object]] = {
            "torch index_copy_": case.torch_index_copy,
            "torch keys[b, h, slots] = k": case.torch_setitem,
            "genesis StaticKVCache.update": case.genesis_update,
            "genesis keys[index] = k (before)": case.genesis_setitem,
        }
        report(title, fns, case.bytes_moved(), args.reps, "torch index_copy_")

    rot = Rotary(2048)
    title = "rotary q (1, 32, 2048, 64) and k (1, 8, 2048, 64), bf16"
    print(f"\n{title}: check {rot.check()}")
    fns = {
        "torch rotate_half (HF)": rot.torch_rotate_half,
        "genesis apply_rotary_emb(q, k=k)": rot.genesis_pair,
        "genesis q and k separately": rot.genesis_separate,
    }
    report(title, fns, rot.bytes_moved(), args.reps, "torch rotate_half (HF)")


if __name__ == "__main__":
    main()
