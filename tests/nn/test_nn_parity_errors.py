"""Bad arguments, op by op, against torch on every device: each case runs the same call with torch
(on the cpu) and with genesis (on the device under test) and asserts the class torch raises, and,
where the case names one, the words of torch's message (the shapes and values it names).

tests/nn/test_nn_parity_checks.py has the first cases of issue #13 (cat([]), chunk(0), negative sizes,
arange bounds, in-place casts); this file is the broad table.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import genesis

LONG_FROM_FLOAT = "result type Float can't be cast to the desired output type Long"


def _t(m, values, d, dtype=None):
    """A tensor of ``values`` in module ``m`` (torch or genesis); torch's always on the cpu."""
    if m is torch:
        return torch.tensor(values, dtype=None if dtype is None else getattr(torch, dtype))
    return genesis.tensor(values, dtype=dtype, device=d)


def _z(m, *shape, d, dtype=None):
    if m is torch:
        return torch.zeros(shape, dtype=None if dtype is None else getattr(torch, dtype))
    return genesis.zeros(*shape, dtype=dtype, device=d)


def _dev(m, d):
    return "cpu" if m is torch else d


# (id, call(module, device), the part of torch's message that must match, or None for the class only)
FACTORIES = [
    # torch 2.13's zeros words it "zeros: Dimension size must be non-negative." (its other factories as below)
    ("zeros-negative", lambda m, d: m.zeros((2, -1), device=_dev(m, d)), None),
    ("zeros-negative-varargs", lambda m, d: m.zeros(2, -1, device=_dev(m, d)), None),
    ("ones-negative", lambda m, d: m.ones((-3,), device=_dev(m, d)), r"negative dimension -3"),
    ("empty-negative", lambda m, d: m.empty(-1, device=_dev(m, d)), r"negative dimension -1"),
    ("full-negative", lambda m, d: m.full((2, -2), 1.0, device=_dev(m, d)), r"negative dimension -2"),
    ("rand-negative", lambda m, d: m.rand(-1, 3, device=_dev(m, d)), r"negative dimension -1"),
    ("randn-negative", lambda m, d: m.randn(3, -5, device=_dev(m, d)), r"negative dimension -5"),
    ("randint-negative", lambda m, d: m.randint(0, 3, (-1,), device=_dev(m, d)), r"negative dimension -1"),
    ("randint-empty-range", lambda m, d: m.randint(3, 3, (2,), device=_dev(m, d)), "from=3 >= to=3"),
    ("randperm-negative", lambda m, d: m.randperm(-2, device=_dev(m, d)), r"negative dimension -2"),
    ("eye-negative-n", lambda m, d: m.eye(-2, device=_dev(m, d)), "n must be greater or equal to 0, got -2"),
    ("eye-negative-m", lambda m, d: m.eye(2, -1, device=_dev(m, d)), "m must be greater or equal to 0, got -1"),
    ("arange-away-from-end", lambda m, d: m.arange(0, 10, -2, device=_dev(m, d)), "inconsistent with step sign"),
    ("arange-backwards", lambda m, d: m.arange(3.0, 1.0, device=_dev(m, d)), "inconsistent with step sign"),
    ("arange-zero-step", lambda m, d: m.arange(0, 3, 0, device=_dev(m, d)), "step must be nonzero"),
    ("linspace-negative-steps", lambda m, d: m.linspace(0, 1, -1, device=_dev(m, d)), "must be non-negative"),
    ("tensor-ragged", lambda m, d: m.tensor([[1.0], [1.0, 2.0]], device=_dev(m, d)), None),
]

OPS = [
    # the cases issue #13 names
    ("as_strided-past-storage", lambda m, d: _z(m, 4, d=d).as_strided((3,), (2,)), r"out of bounds for storage"),
    ("as_strided-offset-past", lambda m, d: _z(m, 3, d=d).as_strided((3,), (1,), 1), r"requiring a storage size"),
    ("as_strided-negative-offset", lambda m, d: _z(m, 3, d=d).as_strided((2,), (1,), -1), "invalid storage offset"),
    ("as_strided-negative-stride", lambda m, d: _z(m, 3, d=d).as_strided((2,), (-1,), 2), "Negative strides"),
    ("int-exp_", lambda m, d: _t(m, [1, 2], d).exp_(), LONG_FROM_FLOAT),
    ("int-sin_", lambda m, d: _t(m, [1, 2], d).sin_(), LONG_FROM_FLOAT),
    ("int-pow-negative", lambda m, d: _t(m, [1, 2], d) ** -1, "Integers to negative integer powers are not allowed."),
    ("int-pow-negative-method", lambda m, d: _t(m, [3], d).pow(-2), "Integers to negative integer powers"),
    ("int-pow_-negative", lambda m, d: _t(m, [3], d).pow_(-2), "Integers to negative integer powers"),
    ("uint8-pow-negative", lambda m, d: _t(m, [3], d, "uint8") ** -1, "Integers to negative integer powers"),
    ("max-empty", lambda m, d: _z(m, 0, d=d).max(), r"max\(\): Expected reduction dim to be specified"),
    ("min-empty", lambda m, d: _z(m, 0, 2, d=d).min(), r"min\(\): Expected reduction dim to be specified"),
    ("amax-empty", lambda m, d: _z(m, 0, d=d).amax(), r"amax\(\): Expected reduction dim to be specified"),
    ("amax-empty-dim", lambda m, d: _z(m, 0, 3, d=d).amax(0), r"amax\(\): Expected reduction dim 0 to have non-zero"),
    ("amin-empty-dims", lambda m, d: _z(m, 2, 0, d=d).amin((0, 1)), r"Expected reduction dim 1 to have non-zero"),
    ("max-empty-dim", lambda m, d: _z(m, 0, 3, d=d).max(0), r"max\(\): Expected reduction dim 0 to have non-zero"),
    ("min-empty-dim", lambda m, d: _z(m, 2, 0, d=d).min(-1), r"min\(\): Expected reduction dim 1 to have non-zero"),
    ("argmax-empty", lambda m, d: _z(m, 0, 3, d=d).argmax(), r"argmax\(\): Expected reduction dim to be specified"),
    ("argmin-empty-dim", lambda m, d: _z(m, 0, 3, d=d).argmin(0), r"argmin\(\): Expected reduction dim 0"),
    # shapes
    ("add-shapes", lambda m, d: _z(m, 2, 3, d=d) + _z(m, 4, d=d), r"size of tensor a \(3\) must match .* \(4\)"),
    ("matmul-shapes", lambda m, d: _z(m, 2, 3, d=d) @ _z(m, 4, 2, d=d), r"\(2x3 and 4x2\)"),
    ("matmul-0d", lambda m, d: _z(m, d=d) @ _z(m, 4, d=d), "at least 1D"),
    ("reshape-size", lambda m, d: _z(m, 6, d=d).reshape(4, 2), r"shape '\[4, 2\]' is invalid for input of size 6"),
    ("view-infer-two", lambda m, d: _z(m, 6, d=d).view(-1, -1), "only one dimension can be inferred"),
    ("expand-size", lambda m, d: _z(m, 2, 3, d=d).expand(4, 3), r"expanded size of the tensor \(4\)"),
    ("permute-duplicate", lambda m, d: _z(m, 2, 3, d=d).permute(0, 0), "duplicate dims"),
    ("transpose-dim", lambda m, d: _z(m, 2, 3, d=d).transpose(0, 2), r"Dimension out of range .* got 2"),
    ("sum-dim", lambda m, d: _z(m, 2, 3, d=d).sum(2), r"Dimension out of range .* got 2"),
    ("unsqueeze-dim", lambda m, d: _z(m, 2, d=d).unsqueeze(3), r"Dimension out of range"),
    ("squeeze-dim", lambda m, d: _z(m, 2, d=d).squeeze(3), r"Dimension out of range"),
    ("softmax-dim", lambda m, d: _z(m, 4, d=d).softmax(1), r"Dimension out of range"),
    ("cumsum-dim", lambda m, d: _z(m, 4, d=d).cumsum(1), r"Dimension out of range"),
    ("sort-dim", lambda m, d: _z(m, 4, d=d).sort(2), r"Dimension out of range"),
    ("narrow-past-end", lambda m, d: _z(m, 4, d=d).narrow(0, 2, 5), r"start \(2\) \+ length \(5\) exceeds"),
    ("split-zero", lambda m, d: _z(m, 4, d=d).split(0), "split_size can only be 0 if dimension size is 0"),
    ("split-negative", lambda m, d: _z(m, 4, d=d).split(-1), "split_size be non-negative"),
    ("split-sizes-sum", lambda m, d: _z(m, 4, d=d).split([1, 2]), "sum exactly to 4"),
    ("chunk-zero", lambda m, d: _z(m, 4, d=d).chunk(0), "greater than 0"),
    ("cat-empty", lambda m, d: m.cat([]), "non-empty list of Tensors"),
    ("cat-shapes", lambda m, d: m.cat([_z(m, 2, 3, d=d), _z(m, 2, 4, d=d)]), "Sizes of tensors must match"),
    ("stack-shapes", lambda m, d: m.stack([_z(m, 2, d=d), _z(m, 3, d=d)]), r"got \[2\] at entry 0 and \[3\]"),
    ("stack-empty", lambda m, d: m.stack([]), "non-empty TensorList"),
    ("flatten-order", lambda m, d: _z(m, 3, 2, d=d).flatten(1, 0), None),
    ("unflatten-sizes", lambda m, d: _z(m, 6, d=d).unflatten(0, (4, 2)), None),
    ("diagonal-same-dim", lambda m, d: _z(m, 3, 3, d=d).diagonal(0, 0, 0), None),
    ("tril-1d", lambda m, d: _z(m, 3, d=d).tril(), None),
    ("copy_-shape", lambda m, d: _z(m, 3, d=d).copy_(_z(m, 4, d=d)), None),
    ("lerp-shapes", lambda m, d: _z(m, 3, d=d).lerp(_z(m, 4, d=d), 0.5), None),
    ("where-shapes", lambda m, d: m.where(_z(m, 3, d=d, dtype="bool"), _z(m, 2, d=d), _z(m, 3, d=d)), None),
    # indexing
    ("getitem-int", lambda m, d: _z(m, 4, d=d)[5], "index 5 is out of bounds for dimension 0 with size 4"),
    ("getitem-tensor", lambda m, d: _z(m, 4, d=d)[_t(m, [5], d)], "out of bounds"),
    ("getitem-too-many", lambda m, d: _z(m, 4, d=d)[0, 0], "too many indices for tensor of dimension 1"),
    ("gather-out-of-range", lambda m, d: _z(m, 4, d=d).gather(0, _t(m, [5], d)), None),
    ("gather-float-index", lambda m, d: _z(m, 4, d=d).gather(0, _t(m, [1.0], d)), "Expected dtype int32/int64"),
    ("index_select-out-of-range", lambda m, d: _z(m, 4, d=d).index_select(0, _t(m, [5], d)), None),
    ("scatter-out-of-range", lambda m, d: _z(m, 3, d=d).scatter(0, _t(m, [4], d), 1.0), None),
    ("masked_fill-float-mask", lambda m, d: _z(m, 4, d=d).masked_fill(_z(m, 4, d=d), 1.0), "boolean masks"),
    ("masked_select-shapes", lambda m, d: _z(m, 3, d=d).masked_select(_z(m, 4, d=d, dtype="bool")), None),
    ("topk-k-too-big", lambda m, d: _z(m, 4, d=d).topk(5), None),
    # dtypes and conversions
    ("bitwise-float", lambda m, d: _z(m, 4, d=d) & _z(m, 4, d=d), None),
    ("mean-int", lambda m, d: _z(m, 3, d=d, dtype="int64").mean(), "could not infer output dtype"),
    ("std-int", lambda m, d: _z(m, 3, d=d, dtype="int64").std(), None),
    ("add_-float-into-int", lambda m, d: _t(m, [1, 2], d).add_(0.5), "can't be cast to the desired output type Long"),
    ("item-many", lambda m, d: _z(m, 4, d=d).item(), "a Tensor with 4 elements cannot be converted to Scalar"),
    ("int-many", lambda m, d: int(_z(m, 2, d=d)), "only one element tensors can be converted to Python scalars"),
    ("float-many", lambda m, d: float(_z(m, 2, d=d)), "only one element tensors"),
    ("bool-many", lambda m, d: bool(_z(m, 2, d=d)), "is ambiguous"),
    ("len-0d", lambda m, d: len(_z(m, d=d)), None),
    # autograd
    ("backward-non-scalar", lambda m, d: _t(m, [1.0, 2.0], d).requires_grad_().mul(2).backward(), "scalar outputs"),
    ("backward-no-grad", lambda m, d: _z(m, 2, d=d).sum().backward(), "does not require grad"),
    ("inplace-on-leaf", lambda m, d: _t(m, [1.0], d).requires_grad_().add_(1), "leaf Variable that requires grad"),
    ("int-requires-grad", lambda m, d: _z(m, 2, d=d, dtype="int64").requires_grad_(), "floating point dtype"),
    # (through cpu(): a GPU tensor's numpy() is refused for its device first, as torch's)
    ("numpy-requires-grad", lambda m, d: _t(m, [1.0], d).requires_grad_().cpu().numpy(), "requires grad"),
    # composed names
    ("mm-vector", lambda m, d: m.mm(_z(m, 3, d=d), _z(m, 3, 2, d=d)), "self must be a matrix"),
    ("mm-shapes", lambda m, d: m.mm(_z(m, 2, 3, d=d), _z(m, 2, 2, d=d)), r"\(2x3 and 2x2\)"),
    ("bmm-rank", lambda m, d: m.bmm(_z(m, 2, 3, d=d), _z(m, 2, 3, 2, d=d)), "batch1 must be a 3D tensor"),
    ("bmm-batch", lambda m, d: m.bmm(_z(m, 2, 3, 4, d=d), _z(m, 3, 4, 2, d=d)), r"to be: \[2, 4\] but got: \[3, 4\]"),
    ("dot-rank", lambda m, d: m.dot(_z(m, 2, 2, d=d), _z(m, 2, d=d)), "1D tensors expected, but got 2D and 1D"),
    ("dot-sizes", lambda m, d: m.dot(_z(m, 2, d=d), _z(m, 3, d=d)), "inconsistent tensor size"),
    ("mv-rank", lambda m, d: m.mv(_z(m, 2, d=d), _z(m, 2, d=d)), "vector \\+ matrix @ vector expected"),
    ("outer-rank", lambda m, d: m.outer(_z(m, 2, 2, d=d), _z(m, 2, d=d)), "Expected 1-D argument self, but got 2-D"),
    ("einsum-sizes", lambda m, d: m.einsum("ij,jk->ik", _z(m, 2, 3, d=d), _z(m, 4, 2, d=d)), "subscript j has size 4"),
    ("diff-0d", lambda m, d: m.diff(_z(m, d=d)), "at least one-dimensional"),
    ("flip-twice", lambda m, d: _z(m, 2, d=d).flip((0, 0)), "dim 0 appears multiple times"),
    ("roll-mismatch", lambda m, d: _z(m, 2, d=d).roll((1, 1), (0,)), "shifts and dimensions must align"),
    ("repeat-too-few", lambda m, d: _z(m, 2, 3, d=d).repeat(2), "can not be smaller than number of dimensions"),
    ("repeat-negative", lambda m, d: _z(m, 2, d=d).repeat(-1, 2), r"negative dimension -1: \[-1, 4\]"),
]


def _check(call, device, match):
    with pytest.raises(Exception) as expected:
        call(torch, "cpu")
    with pytest.raises(type(expected.value)) as got:
        call(genesis, device)
    assert type(got.value) is type(expected.value), f"genesis raised {type(got.value).__name__}: {got.value}"
    if match is not None:
        assert re.search(match, str(expected.value)), f"the case's words are not torch's: {expected.value}"
        assert re.search(match, str(got.value)), f"torch: {expected.value!s}\ngenesis: {got.value!s}"


@pytest.mark.parametrize(("call", "match"), [c[1:] for c in FACTORIES], ids=[c[0] for c in FACTORIES])
def test_factories_refuse_as_torch(device, call, match):
    _check(call, device, match)


@pytest.mark.parametrize(("call", "match"), [c[1:] for c in OPS], ids=[c[0] for c in OPS])
def test_ops_refuse_as_torch(device, call, match):
    _check(call, device, match)


def test_a_refused_inplace_op_writes_nothing(device):
    values = np.random.default_rng().integers(1, 9, size=5)
    g = genesis.tensor(values, device=device)
    for bad in (lambda: g.exp_(), lambda: g.pow_(-1), lambda: g.add_(0.5), lambda: g.sin_()):
        with pytest.raises(RuntimeError):
            bad()
        np.testing.assert_array_equal(g.cpu().numpy(), values)


def test_integer_pow_with_a_tensor_or_float_exponent_still_runs(device):
    base = np.random.default_rng().integers(1, 5, size=4)
    exps = np.array([-1, 0, 1, 2])
    expected = torch.tensor(base) ** torch.tensor(exps)  # integer powers with a tensor exponent: torch allows
    got = genesis.tensor(base, device=device) ** genesis.tensor(exps, device=device)
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())
    np.testing.assert_allclose((genesis.tensor(base, device=device) ** -1.0).cpu().numpy(), 1.0 / base, rtol=1e-6)


def test_reductions_over_an_empty_dim_with_an_identity_still_run(device):
    for name in ("sum", "prod", "amax"):
        expected = getattr(torch.zeros(0, 3), name)(1)
        got = getattr(genesis.zeros(0, 3, device=device), name)(1)
        assert tuple(got.shape) == tuple(expected.shape) == (0,)
    assert genesis.zeros(0, device=device).sum().item() == 0


def test_logsumexp_of_integers_runs_in_the_default_dtype(device):
    values = np.random.default_rng().integers(-3, 4, size=(3, 4))
    assert torch.tensor(values).logsumexp(1).dtype == torch.float32
    got = genesis.tensor(values, device=device).logsumexp(1)
    assert got.dtype == genesis.float32
    # The reference is the float64 result, and the bound is absolute: max + log(sum) is a sum of float32 terms
    # of up to |3| + log(4), so a result near 0 (a row of -1, -1, -2, -2 gives 0.0065) carries their rounding,
    # 2.4e-7 each. torch's own float32 result is 9e-6 off there in relative terms: a relative comparison with
    # it failed on the GPU, whose libdevice logf rounds one ulp apart from torch's in such rows.
    truth = torch.tensor(values, dtype=torch.float64).logsumexp(1).numpy()
    bound = 4 * np.finfo(np.float32).eps * (np.abs(values).max(1) + np.log(4))
    assert (np.abs(got.cpu().numpy() - truth) <= bound).all(), (got, truth)


def test_numpy_of_a_gpu_tensor_is_a_type_error(device):
    g = genesis.ones(3, device=device)
    if device == "cpu":
        np.testing.assert_array_equal(g.numpy(), np.ones(3, dtype=np.float32))
        return
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\)"):
        g.numpy()
    np.testing.assert_array_equal(g.cpu().numpy(), np.ones(3, dtype=np.float32))


def test_split_of_an_empty_dim_by_zero(device):
    (piece,) = genesis.zeros(0, device=device).split(0)
    assert tuple(piece.shape) == (0,)
