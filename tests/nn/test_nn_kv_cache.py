"""StaticKVCache.update's fused write (genesis_autograd.kv_cache_write_) against torch references.

The reference is torch's own write of the same slots, token by token (so that where the clamp sends several
tokens to one slot the last one stays, which the fused write promises); caches start from random values so
that a slot the write must leave alone is checked too. The gradient path (k / v requiring grad) is held
against torch's autograd through the same indexed assignment, in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from genesis.generation import StaticKVCache

_DTYPES = {"float32": (genesis.float32, torch.float32), "bfloat16": (genesis.bfloat16, torch.bfloat16)}


def _g(t: torch.Tensor, device: str, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().numpy(), device=device, requires_grad=requires_grad)


def _torch_written(cache: torch.Tensor, new: torch.Tensor, positions: list[int]) -> torch.Tensor:
    out = cache.clone()
    for b, p in enumerate(positions):
        for t in range(new.shape[2]):
            out[b, :, min(max(p + t, 0), cache.shape[2] - 1)] = new[b, :, t].to(cache.dtype)
    return out


def _filled(cache: StaticKVCache, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Random starting values in every layer's caches (copied in place: the cache keeps its tensors)."""
    for layer in range(cache.num_layers):
        cache.keys[layer].copy_(_g(keys[layer], str(cache.device)).to(cache.dtype))
        cache.values[layer].copy_(_g(values[layer], str(cache.device)).to(cache.dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_update_writes_prefill_and_decode_steps(device: str, dtype: str) -> None:
    B, H, M, D = 3, 2, 8, 4
    cache = StaticKVCache(2, B, H, M, D, dtype=_DTYPES[dtype][0], device=device)
    start_k, start_v = torch.randn(2, B, H, M, D), torch.randn(2, B, H, M, D)
    _filled(cache, start_k, start_v)
    want_k, want_v = start_k[1].to(_DTYPES[dtype][1]), start_v[1].to(_DTYPES[dtype][1])
    for T, positions in ((3, [0, 2, 5]), (1, [3, 5, 7]), (1, [4, 6, 7])):
        k = torch.randn(B, H, T, D)
        v = torch.randn(B, T, H, D).transpose(1, 2)  # the projection's (B, T, H, D) memory, as in attention
        pos = genesis.tensor(positions, dtype=genesis.int64, device=device)
        gv = _g(v.transpose(1, 2).contiguous(), device).transpose(1, 2)
        version = cache.keys[1]._version[0]
        with genesis.no_grad():
            keys, values = cache.update(1, _g(k, device), gv, pos, cache.write_index(pos, T))
        want_k, want_v = _torch_written(want_k, k, positions), _torch_written(want_v, v, positions)
        assert keys is cache.keys[1] and values is cache.values[1]
        assert keys._version[0] == version + 1, "an in-place write bumps the cache's version counter"
        np.testing.assert_array_equal(keys.float().cpu().numpy(), want_k.float().numpy())
        np.testing.assert_array_equal(values.float().cpu().numpy(), want_v.float().numpy())
    np.testing.assert_array_equal(cache.keys[0].float().cpu().numpy(), start_k[0].to(_DTYPES[dtype][1]).float())


def test_update_clamps_and_the_last_token_stays(device: str) -> None:
    B, H, M, D, T = 3, 2, 4, 3, 3
    cache = StaticKVCache(1, B, H, M, D, device=device)
    start_k, start_v = torch.randn(1, B, H, M, D), torch.randn(1, B, H, M, D)
    _filled(cache, start_k, start_v)
    k, v = torch.randn(B, H, T, D), torch.randn(B, H, T, D)
    positions = [3, -2, 9]  # past the end, before the start
    keys, values = cache.update(0, _g(k, device), _g(v, device), genesis.tensor(positions, device=device))
    np.testing.assert_array_equal(keys.cpu().numpy(), _torch_written(start_k[0], k, positions).numpy())
    np.testing.assert_array_equal(values.cpu().numpy(), _torch_written(start_v[0], v, positions).numpy())


def test_update_lets_gradients_flow_to_the_new_keys_and_values(device: str) -> None:
    # grad mode on and k / v requiring grad: the recorded setitem path, against torch's autograd (float64)
    B, H, M, D, T = 2, 2, 6, 3, 2
    positions = [1, 3]
    cache = StaticKVCache(1, B, H, M, D, dtype=genesis.float64, device=device)
    start = torch.randn(B, H, M, D, dtype=torch.float64)
    cache.keys[0].copy_(_g(start, device))
    cache.values[0].copy_(_g(start, device))
    k, v = torch.randn(B, H, T, D, dtype=torch.float64), torch.randn(B, H, T, D, dtype=torch.float64)
    wk, wv = torch.randn(B, H, M, D, dtype=torch.float64), torch.randn(B, H, M, D, dtype=torch.float64)
    gk_, gv_ = _g(k, device, True), _g(v, device, True)
    keys, values = cache.update(0, gk_ * 1.5, gv_ * 1.5, genesis.tensor(positions, device=device))
    ((keys * _g(wk, device)).sum() + (values * _g(wv, device)).sum()).backward()

    tk, tv = k.clone().requires_grad_(), v.clone().requires_grad_()
    ref_k, ref_v = start.clone(), start.clone()
    b, h = torch.arange(B).view(B, 1, 1), torch.arange(H).view(1, H, 1)
    slots = (torch.tensor(positions).view(B, 1) + torch.arange(T)).view(B, 1, T)
    ref_k[b, h, slots] = tk * 1.5
    ref_v[b, h, slots] = tv * 1.5
    ((ref_k * wk).sum() + (ref_v * wv).sum()).backward()
    np.testing.assert_allclose(keys.detach().cpu().numpy(), ref_k.detach().numpy(), rtol=1e-12)
    assert gk_.grad is not None and gv_.grad is not None and tk.grad is not None and tv.grad is not None
    np.testing.assert_allclose(gk_.grad.cpu().numpy(), tk.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gv_.grad.cpu().numpy(), tv.grad.numpy(), rtol=1e-12)


def test_a_leaf_cache_that_requires_grad_is_refused_as_torch_refuses_it(device: str) -> None:
    cache = StaticKVCache(1, 1, 1, 4, 2, device=device)
    cache.keys[0].requires_grad_()
    new, pos = genesis.randn(1, 1, 1, 2, device=device), genesis.zeros(1, dtype=genesis.int64, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        cache.update(0, new, new, pos)
    tkeys = torch.zeros(1, 1, 4, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        tkeys[0, 0, 0] = torch.randn(2)


def test_update_refuses_bad_operands(device: str) -> None:
    cache = StaticKVCache(1, 2, 3, 5, 4, device=device)
    good, pos = genesis.randn(2, 3, 1, 4, device=device), genesis.zeros(2, dtype=genesis.int64, device=device)
    with pytest.raises(RuntimeError, match=r"expected keys and values of shape \(2, 3, T, 4\), got \(2, 3, 1, 4\) "
                                           r"and \(2, 3, 2, 4\)"):  # fmt: skip
        cache.update(0, good, genesis.randn(2, 3, 2, 4, device=device), pos)
    with pytest.raises(RuntimeError, match=r"positions must be a \(2,\) tensor"):
        cache.update(0, good, good, genesis.zeros(3, dtype=genesis.int64, device=device))
    with pytest.raises(RuntimeError, match="positions must be int32 / int64"):
        cache.update(0, good, good, genesis.zeros(2, device=device))
