"""genesis.cuda.set_sync_debug_mode / get_sync_debug_mode: torch.cuda's names and values; on cuda every
implicit host wait (item(), tolist(), a copy to the cpu, nonzero, an index of unknown range) warns in
"warn" mode and raises RuntimeError in "error" mode, while ops that wait for nothing run; on the cpu it
changes nothing."""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch

import genesis
from device_support import requires_cuda


@pytest.fixture(autouse=True)
def _restore_mode():
    yield
    genesis.cuda.set_sync_debug_mode(0)


def test_names_values_and_bad_modes_as_torch() -> None:
    for name in ("set_sync_debug_mode", "get_sync_debug_mode"):
        assert name in genesis.cuda.__all__
        ours = inspect.signature(getattr(genesis.cuda, name)).parameters
        assert list(ours) == list(inspect.signature(getattr(torch.cuda, name)).parameters)
    for mode, value in (("warn", 1), ("error", 2), ("default", 0), (1, 1), (2, 2), (0, 0)):
        genesis.cuda.set_sync_debug_mode(mode)
        assert genesis.cuda.get_sync_debug_mode() == value
    with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected one of `default`, `warn`, `error`"):
        genesis.cuda.set_sync_debug_mode("loud")


def test_cpu_reads_are_not_synchronising() -> None:
    genesis.cuda.set_sync_debug_mode("error")
    x = genesis.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.sum().item() == pytest.approx(float(x.numpy().sum()), rel=1e-5)
        assert len(x.tolist()) == 4
        assert x.nonzero().shape[1] == 2


# The sync debug mode reports waits on cuda streams: these cases have no cpu variant (cpu reads are
# checked by test_cpu_reads_are_not_synchronising).
CUDA_ONLY = pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])


@CUDA_ONLY
def test_error_mode_refuses_each_host_read(device) -> None:
    x = genesis.randn(4, 3, device=device)
    genesis.cuda.set_sync_debug_mode("error")
    for read in (lambda: x.sum().item(), x.tolist, x.cpu, lambda: x.nonzero(), lambda: x[x > 0]):
        with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
            read()
    unknown = (x[:, 0] > 0).long()  # values the host does not know: the bounds check must wait
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation: index_select"):
        x.index_select(0, unknown)
    genesis.cuda.set_sync_debug_mode("default")
    assert x.index_select(0, unknown).shape == (4, 3)


@CUDA_ONLY
def test_warn_mode_warns_and_goes_on(device) -> None:
    x = genesis.randn(5, device=device)
    genesis.cuda.set_sync_debug_mode("warn")
    with pytest.warns(UserWarning, match="called a synchronizing CUDA operation: item"):
        value = x.max().item()
    genesis.cuda.set_sync_debug_mode(0)
    assert value == pytest.approx(float(x.cpu().numpy().max()))


@CUDA_ONLY
def test_ops_with_known_index_ranges_wait_for_nothing(device) -> None:
    """argmax positions, integer clamps and aranges carry bounds the host knows: embedding, gather and an
    indexed write through them run in "error" mode, with torch's values."""
    weight = genesis.randn(7, 3, device=device)
    logits = genesis.randn(4, 7, device=device)
    target = genesis.zeros(2, 10, 3, device=device)
    rows = genesis.randn(2, 4, 3, device=device)
    position = genesis.tensor([1, 6], device=device)
    expected_target = target.cpu().numpy().copy()
    genesis.cuda.set_sync_debug_mode("error")
    token = logits.argmax(-1)
    embedded = genesis.nn.functional.embedding(token, weight)
    # distinct slots per row (which of two writes to one slot lands is undefined, in torch as here)
    slots = (position.view(2, 1) + genesis.arange(4, device=device)).clamp(0, 9)  # (2, 4) in [0, 9]
    batch = genesis.arange(2, device=device).view(2, 1)
    target[batch, slots] = rows
    picked = logits.gather(1, slots.clamp(0, 4))  # a clamp that bites: [6, 9] -> 4
    genesis.cuda.set_sync_debug_mode("default")
    t_logits, t_weight = torch.from_numpy(logits.cpu().numpy()), torch.from_numpy(weight.cpu().numpy())
    t_slots = (torch.tensor([1, 6]).view(2, 1) + torch.arange(4)).clamp(0, 9)
    assert torch.equal(torch.from_numpy(embedded.cpu().numpy()), t_weight[t_logits.argmax(-1)])
    assert torch.equal(torch.from_numpy(picked.cpu().numpy()), t_logits.gather(1, t_slots.clamp(0, 4)))
    t_target = torch.from_numpy(expected_target)
    t_target[torch.arange(2).view(2, 1), t_slots] = torch.from_numpy(rows.cpu().numpy())
    assert torch.equal(torch.from_numpy(target.cpu().numpy()), t_target)


@CUDA_ONLY
def test_index_copy_checks_bounds_on_the_host_only_when_unknown(device) -> None:
    """index_copy_ keeps torch's IndexError for a bad index; an index of known range needs no device read."""
    x = genesis.zeros(5, 2, device=device)
    src = genesis.randn(3, 2, device=device)
    genesis.cuda.set_sync_debug_mode("error")
    x.index_copy_(0, genesis.arange(1, 4, device=device), src)  # an arange: bounds known
    with pytest.raises(IndexError, match="index_copy_\\(\\): index 7 is out of bounds for dimension 0 with size 5"):
        x.index_copy_(0, genesis.tensor([0, 7, 2], device=device), src)  # uploaded: exact bounds, no read
    unknown = genesis.arange(3, device=device) * 2  # arithmetic: bounds unknown to the host
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
        x.index_copy_(0, unknown, src)
    genesis.cuda.set_sync_debug_mode("default")
    expected = torch.zeros(5, 2)
    expected[1:4] = torch.from_numpy(src.cpu().numpy())
    assert torch.equal(torch.from_numpy(x.cpu().numpy()), expected)
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 0 with size 5"):
        x.index_copy_(0, unknown + 2, src)


@CUDA_ONLY
def test_sampling_waits_for_nothing(device) -> None:
    """genesis.generation.sample_next_token with top-k and top-p (topk / sort positions scattered back) and
    a scatter of the drawn tokens into a seen-mask run in "error" mode; the tokens lie in each row's top k."""
    from genesis.generation import sample_next_token

    logits = genesis.randn(3, 11, device=device)
    seen = genesis.zeros(3, 11, dtype=genesis.bool, device=device)
    genesis.cuda.set_sync_debug_mode("error")
    token = sample_next_token(logits, temperature=0.7, top_k=4, top_p=0.9)
    seen.scatter_(1, token.view(-1, 1), True)
    genesis.cuda.set_sync_debug_mode("default")
    t_logits, t_token = torch.from_numpy(logits.cpu().numpy()), torch.from_numpy(token.cpu().numpy())
    allowed = t_logits.topk(4, dim=-1).indices
    assert all(int(t_token[b]) in allowed[b].tolist() for b in range(3))
    expected = torch.zeros(3, 11, dtype=torch.bool).scatter(1, t_token.view(-1, 1), True)
    assert torch.equal(torch.from_numpy(seen.cpu().numpy()), expected)
