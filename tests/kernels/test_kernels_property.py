"""Hypothesis drives random shapes and strides through the elementwise and reduction paths."""

from __future__ import annotations

import os

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernels_helpers import assert_close, buf, make

import genesis_kernels as gk

# The interpreter runs on host memory; on a GPU machine (interpreter off) these run on CUDA.
DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") else "cuda"
EXAMPLES = 25 if DEVICE == "cpu" else 100


@st.composite
def strided_views(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random views of one logical shape: permuted, sliced with steps, broadcast dims."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=rank, max_size=rank)))

    def view() -> torch.Tensor:
        steps = [draw(st.integers(1, 3)) for _ in shape]
        base = make(tuple(s * k for s, k in zip(shape, steps)), "float32", DEVICE)
        t = base[tuple(slice(None, None, k) for k in steps)]
        perm = draw(st.permutations(range(rank)))
        t = t.permute(*perm).contiguous().permute(*[perm.index(i) for i in range(rank)]) if draw(st.booleans()) else t
        if draw(st.booleans()) and rank > 1:
            d = draw(st.integers(0, rank - 1))
            t = t.narrow(d, 0, min(1, shape[d])).expand(shape) if shape[d] > 0 else t
        return t

    return view(), view()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(strided_views(), st.sampled_from(["add", "mul", "maximum", "sub"]))
def test_binary_random_strides(views: tuple[torch.Tensor, torch.Tensor], op: str) -> None:
    a, b = views
    out = torch.empty(a.shape, device=DEVICE)
    gk.binary(op, buf(a), buf(b), buf(out), compute_dtype="float32")
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    ref = {"add": torch.add, "mul": torch.mul, "maximum": torch.maximum, "sub": torch.sub}[op](a.double(), b.double())
    assert_close(out, ref.float())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(strided_views(), st.data())
def test_reduce_random_strides(views: tuple[torch.Tensor, torch.Tensor], data: st.DataObject) -> None:
    x, _ = views
    rank = x.dim()
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    op = data.draw(st.sampled_from(["sum", "max"] if x.numel() else ["sum"]))
    if op == "max" and any(x.shape[d] == 0 for d in dims):
        op = "sum"
    out = torch.empty(tuple(s for d, s in enumerate(x.shape) if d not in dims), device=DEVICE)
    gk.reduce(op, buf(x), buf(out), dims)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    ref = x.double().sum(dims) if op == "sum" else x.double().amax(dims)
    assert_close(out, ref.float(), rtol=1e-5, atol=1e-5)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(strided_views())
def test_copy_random_strides(views: tuple[torch.Tensor, torch.Tensor]) -> None:
    src, dst_like = views
    out = torch.empty(dst_like.shape[::-1], dtype=torch.bfloat16, device=DEVICE).permute(
        *reversed(range(dst_like.dim()))
    )
    gk.copy(buf(src), buf(out))
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    assert torch.equal(out.cpu(), src.bfloat16().cpu())
