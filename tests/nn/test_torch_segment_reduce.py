"""genesis.segment_reduce against torch.segment_reduce: every reduction, initial values, offsets, slices of
more than one element, empty segments, gradients, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis

LENGTHS = [2, 0, 3, 1, 4]


def _data(rows: int, *rest: int) -> np.ndarray:
    values = np.random.default_rng(rows).standard_normal((rows, *rest))
    if not rest:  # a tie inside the first segment: max / min share its gradient (torch's rule for 1-D data;
        values[1] = values[0]  # with wider slices torch's backward counts ties inconsistently across columns)
    return values


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 0.5])
@pytest.mark.parametrize("rest", [(), (3,)])
def test_values_and_gradients_match_torch(device, reduce: str, initial: float | None, rest: tuple) -> None:
    values = _data(sum(LENGTHS), *rest)
    x = genesis.tensor(values, device=device, requires_grad=True)
    lengths = genesis.tensor(LENGTHS, device=device)
    out = genesis.segment_reduce(x, reduce, lengths=lengths, initial=initial)
    tx = torch.tensor(values, requires_grad=True)
    ref = torch.segment_reduce(tx, reduce, lengths=torch.tensor(LENGTHS), initial=initial)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-12, equal_nan=True)
    weights = np.random.default_rng(7).standard_normal(tuple(ref.shape))
    finite = np.isfinite(ref.detach().numpy())  # an empty segment's -inf / nan carries no gradient
    (out * genesis.tensor(np.where(finite, weights, 0.0), device=device)).sum().backward()
    (ref * torch.tensor(np.where(finite, weights, 0.0))).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_offsets_give_the_lengths_result(device) -> None:
    values = _data(10)
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    out = genesis.segment_reduce(genesis.tensor(values, device=device), "sum", offsets=genesis.tensor(offsets))
    ref = torch.segment_reduce(torch.tensor(values), "sum", offsets=torch.tensor(offsets))
    np.testing.assert_allclose(out.cpu().numpy(), ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lengths=[1, 2]), "sum to data.size"),
        (dict(lengths=[2, -1, 9]), "negative value"),
        (dict(), "Either lengths or offsets"),
        (dict(lengths=LENGTHS, indices=LENGTHS), "indices based reduction"),
        (dict(lengths=LENGTHS, reduce="median"), "reduce argument must be"),
        (dict(lengths=LENGTHS, axis=1), "last dimension of lengths"),
    ],
)
def test_errors_match_torch(device, kwargs: dict, match: str) -> None:
    kwargs = dict(kwargs)  # (the parametrized dict is shared by the cpu and cuda cases: popping it changed the next)
    values = _data(10, 2)
    reduce = kwargs.pop("reduce", "sum")
    as_genesis = {k: genesis.tensor(v, device=device) for k, v in kwargs.items() if k != "axis"}
    as_torch = {k: torch.tensor(v) for k, v in kwargs.items() if k != "axis"}
    axis = kwargs.get("axis", 0)
    with pytest.raises(RuntimeError, match=match):
        torch.segment_reduce(torch.tensor(values), reduce, axis=axis, **as_torch)
    with pytest.raises(RuntimeError, match=match):
        genesis.segment_reduce(genesis.tensor(values, device=device), reduce, axis=axis, **as_genesis)
