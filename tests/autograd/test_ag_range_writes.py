"""Every in-place method of Tensor drops the host-known value range of the cuda memory it writes.

The Tensor-level counterpart of tests/ndarray/test_nd_range_writes.py (read its docstring for why): the
writers are discovered from ``genesis.Tensor`` itself, every method named ``*_`` that torch.Tensor also has
(torch's in-place spelling), the in-place operators (``+=``...) it defines and ``__setitem__``. A writer with no
case below fails and asks for one. Each case writes a target whose memory has a range (an int64 upload, or a
floating one with a range planted, as there), directly, through a Tensor view, and, for floating targets,
through the graph-recording path (a non-leaf that requires grad), and the range must be gone afterwards. The
few methods that write no values (``requires_grad_``, ``detach_``) may keep it, provided it still holds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

import genesis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ndarray"))
from test_nd_known_range import fake_device_checks
from test_nd_range_writes import _range_of, _range_still_holds, _target

Tensor = genesis.Tensor


@pytest.fixture
def fake_gpu(monkeypatch):
    """One fake GPU over host memory (or the real one on a GPU machine)."""
    yield from fake_device_checks(monkeypatch)


class Case(NamedTuple):
    """How to make one method write ``t`` (a cuda Tensor of ``dtype`` and ``shape`` whose memory has a range)."""

    write: Callable[[Tensor], object]
    dtype: str = "int64"
    shape: tuple[int, ...] = (5,)


def _f(write: Callable[[Tensor], object], shape: tuple[int, ...] = (5,)) -> Case:
    """A case for a floating target (the method refuses integers, or torch computes it in floats)."""
    return Case(write, "float64", shape)


def _t(values, dtype=None) -> Tensor:
    return genesis.tensor(values, dtype=dtype, device="cuda")


def _floats(shape=(5,)) -> Tensor:
    return genesis.tensor(torch.rand(shape, dtype=torch.float64).numpy(), device="cuda")


def _mask() -> Tensor:
    return _t([True, False, True, False, True])


_FLOAT_UNARY = (
    "ceil_", "floor_", "round_", "trunc_", "exp_", "exp2_", "expm1_", "log_", "log2_", "log10_", "log1p_", "sqrt_",
    "rsqrt_", "reciprocal_", "sin_", "cos_", "tan_", "tanh_", "sigmoid_", "erf_",
)  # fmt: skip
_MORE_FLOAT_UNARY = (
    "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "atanh_", "frac_", "deg2rad_", "rad2deg_", "arcsin_",
    "arccos_", "arctan_", "arcsinh_", "arctanh_", "acosh_", "arccosh_",
)  # fmt: skip
_COMPARE_INPLACE = (
    "eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_", "less_equal_", "not_equal_",
    "logical_and_", "logical_or_", "logical_xor_",
)  # fmt: skip
_BITWISE_INPLACE = (
    "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_left_shift_", "bitwise_right_shift_", "__iand__",
    "__ior__", "__ixor__", "__ilshift__", "__irshift__",
)  # fmt: skip

_SPECIAL_UNARY = ("erfc_", "erfinv_", "lgamma_", "digamma_", "i0_", "sinc_", "nan_to_num_")
_SPECIAL_BINARY = ("xlogy_", "copysign_", "ldexp_", "nextafter_", "igamma_", "igammac_")

# method -> how it writes (label -> Case).
CASES: dict[str, dict[str, Case]] = {
    # arithmetic, integers
    "add_": {"scalar": Case(lambda t: t.add_(38)), "tensor": Case(lambda t: t.add_(_t([38] * 5), alpha=1))},
    "sub_": {"scalar": Case(lambda t: t.sub_(-38)), "tensor": Case(lambda t: t.sub_(_t([1] * 5), alpha=-38))},
    "mul_": {"scalar": Case(lambda t: t.mul_(21)), "tensor": Case(lambda t: t.mul_(_t([21] * 5)))},
    "__iadd__": {"scalar": Case(lambda t: t.__iadd__(38))},
    "__isub__": {"scalar": Case(lambda t: t.__isub__(-38))},
    "__imul__": {"tensor": Case(lambda t: t.__imul__(_t([21] * 5)))},
    "abs_": {"abs": Case(lambda t: t.abs_())},
    "neg_": {"neg": Case(lambda t: t.neg_())},
    "sign_": {"sign": Case(lambda t: t.sign_())},
    "square_": {"square": Case(lambda t: t.square_())},
    "pow_": {"scalar": Case(lambda t: t.pow_(3))},
    "relu_": {"relu": Case(lambda t: t.relu_())},
    "floor_divide_": {"scalar": Case(lambda t: t.floor_divide_(2))},
    "fmod_": {"scalar": Case(lambda t: t.fmod_(3))},
    "remainder_": {"scalar": Case(lambda t: t.remainder_(3))},
    "clamp_": {"min": Case(lambda t: t.clamp_(min=42)), "max": Case(lambda t: t.clamp_(max=-1))},
    "clamp_min_": {"min": Case(lambda t: t.clamp_min_(42))},
    "clamp_max_": {"max": Case(lambda t: t.clamp_max_(-1))},
    "clip_": {"min": Case(lambda t: t.clip_(42, 50))},
    "cumsum_": {"dim": Case(lambda t: t.cumsum_(0))},
    "cumprod_": {"dim": Case(lambda t: t.add_(1).cumprod_(0))},
    "tril_": {"tril": Case(lambda t: t.tril_(), "int64", (2, 5))},
    "triu_": {"triu": Case(lambda t: t.triu_(1), "int64", (2, 5))},
    # writes, fills, index ops
    "__setitem__": {
        "basic": Case(lambda t: t.__setitem__(2, 42)),
        "tensor_index": Case(lambda t: t.__setitem__(_t([1]), 42)),
        "mask": Case(lambda t: t.__setitem__(_mask(), _t(42))),
    },
    "copy_": {
        "cuda": Case(lambda t: t.copy_(_t([42, 1, 2, 3, 4]))),
        "cpu": Case(lambda t: t.copy_(genesis.tensor([0, 42, 2, 3, 4]))),
        "cast": Case(lambda t: t.copy_(_t([0.0, 42.0, 2.0, 3.0, 4.0]))),
    },
    "fill_": {"scalar": Case(lambda t: t.fill_(42))},
    "zero_": {"zero": Case(lambda t: t.zero_())},
    "masked_fill_": {"scalar": Case(lambda t: t.masked_fill_(_mask(), 42))},
    "scatter_": {
        "src": Case(lambda t: t.scatter_(0, _t([1]), _t([42]))),
        "value": Case(lambda t: t.scatter_(0, _t([1]), value=42)),
    },
    "scatter_add_": {"src": Case(lambda t: t.scatter_add_(0, _t([1]), _t([41])))},
    "index_add_": {"source": Case(lambda t: t.index_add_(0, _t([4]), _t([38])))},
    "random_": {"bounds": Case(lambda t: t.random_(42, 43)), "high": Case(lambda t: t.random_(100))},
    "bernoulli_": {"int": Case(lambda t: t.bernoulli_(0.5)), "float": _f(lambda t: t.bernoulli_(_floats()))},
    # floating only
    "div_": {"scalar": _f(lambda t: t.div_(0.5))},
    "__itruediv__": {"scalar": _f(lambda t: t.__itruediv__(0.5))},
    "addcmul_": {"tensors": _f(lambda t: t.addcmul_(_floats(), _floats(), value=2))},
    "addcdiv_": {"tensors": _f(lambda t: t.addcdiv_(_floats(), _floats().add_(1), value=2))},
    "atan2_": {"tensor": _f(lambda t: t.atan2_(_floats()))},
    "lerp_": {"scalar": _f(lambda t: t.lerp_(_floats(), 0.5))},
    "uniform_": {"bounds": _f(lambda t: t.uniform_(5.0, 6.0))},
    "normal_": {"normal": _f(lambda t: t.normal_())},
    "exponential_": {"exponential": _f(lambda t: t.exponential_())},
    **{name: {name[:-1]: _f(lambda t, name=name: getattr(t, name)())} for name in _FLOAT_UNARY},
    # issue #30's forms: math (elementwise_math.py), comparisons / logic / bitwise (comparison.py), products
    **{name: {name[:-1]: _f(lambda t, name=name: getattr(t, name)())} for name in _MORE_FLOAT_UNARY},
    "absolute_": {"abs": Case(lambda t: t.absolute_())},
    "negative_": {"neg": Case(lambda t: t.negative_())},
    "fix_": {"trunc": _f(lambda t: t.fix_())},
    "hypot_": {"tensor": _f(lambda t: t.hypot_(_floats()))},
    "multiply_": {"scalar": Case(lambda t: t.multiply_(21))},
    "subtract_": {"scalar": Case(lambda t: t.subtract_(-38))},
    "true_divide_": {"scalar": _f(lambda t: t.true_divide_(0.5))},
    "divide_": {"floor": Case(lambda t: t.divide_(2, rounding_mode="floor"))},
    **{name: {"scalar": Case(lambda t, name=name: getattr(t, name)(2))} for name in _COMPARE_INPLACE},
    "logical_not_": {"not": Case(lambda t: t.logical_not_())},
    "bitwise_not_": {"not": Case(lambda t: t.bitwise_not_())},
    **{name: {"scalar": Case(lambda t, name=name: getattr(t, name)(3))} for name in _BITWISE_INPLACE},
    "addmm_": {"mats": _f(lambda t: t.addmm_(_floats((5, 2)), _floats((2, 5))), (5, 5))},
    "addbmm_": {"mats": _f(lambda t: t.addbmm_(_floats((2, 5, 2)), _floats((2, 2, 5))), (5, 5))},
    "baddbmm_": {"mats": _f(lambda t: t.baddbmm_(_floats((1, 5, 2)), _floats((1, 2, 5))), (1, 5, 5))},
    "addmv_": {"mat": _f(lambda t: t.addmv_(_floats((5, 2)), _floats((2,))))},
    "addr_": {"vecs": _f(lambda t: t.addr_(_floats((5,)), _floats((5,))), (5, 5))},
    # special functions (functions/special.py, functions/stats.py)
    **{name: {name[:-1]: _f(lambda t, name=name: getattr(t, name)())} for name in _SPECIAL_UNARY},
    "polygamma_": {"n": _f(lambda t: t.polygamma_(1))},
    "mvlgamma_": {"p": _f(lambda t: t.add_(2).mvlgamma_(2))},
    "logit_": {"eps": _f(lambda t: t.logit_(0.1))},
    **{name: {"tensor": _f(lambda t, name=name: getattr(t, name)(_floats().add_(0.5)))} for name in _SPECIAL_BINARY},
    "heaviside_": {"tensor": _f(lambda t: t.heaviside_(_floats()))},
    "float_power_": {"scalar": _f(lambda t: t.float_power_(2))},
    "gcd_": {"tensor": Case(lambda t: t.gcd_(_t([12] * 5)))},
    "lcm_": {"tensor": Case(lambda t: t.lcm_(_t([12] * 5)))},
    "renorm_": {"rows": _f(lambda t: t.renorm_(2, 0, 0.1), (2, 5))},
    # issue #30 part B: writes through indices (index_write.py, index_reduce.py), sampling fills, fill_diagonal_
    "put_": {"source": Case(lambda t: t.put_(_t([1]), _t([42])))},
    "index_copy_": {"source": Case(lambda t: t.index_copy_(0, _t([1]), _t([42])))},
    "index_fill_": {"scalar": Case(lambda t: t.index_fill_(0, _t([1]), 42))},
    "index_put_": {
        "set": Case(lambda t: t.index_put_((_t([1]),), _t([42]))),
        "accumulate": Case(lambda t: t.index_put_((_t([1, 1]),), _t([21, 21]), True)),
    },
    "masked_scatter_": {"source": Case(lambda t: t.masked_scatter_(_mask(), _t([42, 43, 44])))},
    "scatter_reduce_": {
        "sum": Case(lambda t: t.scatter_reduce_(0, _t([1]), _t([42]), "sum")),
        "amax": Case(lambda t: t.scatter_reduce_(0, _t([1]), _t([42]), "amax")),
    },
    "index_reduce_": {"prod": Case(lambda t: t.index_reduce_(0, _t([1]), _t([42]), "prod"))},
    "cauchy_": {"cauchy": _f(lambda t: t.cauchy_())},
    "log_normal_": {"log_normal": _f(lambda t: t.log_normal_())},
    "geometric_": {"int": Case(lambda t: t.geometric_(0.5)), "float": _f(lambda t: t.geometric_(0.5))},
    "fill_diagonal_": {"scalar": Case(lambda t: t.fill_diagonal_(42), "int64", (5, 5))},
}


# Methods that write no values: the range may stay, and must still be true (checked against the values).
def _refused(call) -> None:
    with pytest.raises(TypeError):
        call()


KEEPS_VALUES: dict[str, Case] = {
    "requires_grad_": _f(lambda t: t.requires_grad_()),  # a flag on the Tensor
    "detach_": Case(lambda t: t.detach_()),  # leaves the graph; the memory is untouched
    "share_memory_": Case(lambda t: t.share_memory_()),  # cuda memory is shareable as it is: nothing moves
    # the Python callbacks run on cpu tensors only: a cuda target is refused before anything is written
    "apply_": Case(lambda t: _refused(lambda: t.apply_(abs))),
    "map_": Case(lambda t: _refused(lambda: t.map_(t, max))),
    "map2_": Case(lambda t: _refused(lambda: t.map2_(t, t, max))),
}

# The in-place operators torch.Tensor has (genesis.Tensor defines some of them; every one it defines is a writer).
_TORCH_INPLACE_OPERATORS = (
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__",
    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
)  # fmt: skip


def tensor_writers() -> list[str]:
    """genesis.Tensor's in-place methods: torch's ``*_`` methods it has, its in-place operators, __setitem__."""
    found = {n for n in dir(Tensor) if n.endswith("_") and not n.startswith("__") and hasattr(torch.Tensor, n)}
    found |= {n for n in _TORCH_INPLACE_OPERATORS if hasattr(Tensor, n)}
    found.add("__setitem__")
    return sorted(found)


def _graph_target(case: Case) -> Tensor:
    """A non-leaf that requires grad, with a planted range: its in-place ops take the recording path."""
    leaf = Tensor(_target(case.dtype, case.shape), requires_grad=True)
    y = leaf * 1.0
    n = y.numel()
    y.data.native.storage.value_range = (case.dtype, 0, n - 1, True)
    return y


def _check(name: str, label: str, case: Case, how: str, keeps_values: bool) -> None:
    if how == "graph":
        t = _graph_target(case)
        base = t.data
    else:
        base = _target(case.dtype, case.shape)
        t = Tensor(base)
        if how == "view":
            t = t.view(*case.shape) if case.shape else t.view(())
            assert t._base is not None
    case.write(t)
    where = f"{name} ({label}, {how})"
    if keeps_values:
        assert _range_still_holds(base), f"{where} kept a range its values no longer fit"
    else:
        assert _range_of(base) is None, f"{where} wrote into a tensor and left the range of its memory"
    if t.data.native.storage is not base.native.storage:  # rebound to new memory: what it says must hold
        assert _range_still_holds(t.data), f"{where} made new memory with a range its values do not fit"


def _runs() -> list[tuple[str, str]]:
    """(method, how) for every discovered writer: directly and through a view; through the graph-recording
    path too where it has a floating case (integer tensors cannot require grad)."""
    runs = []
    for name in tensor_writers():
        cases = {"": KEEPS_VALUES[name]} if name in KEEPS_VALUES else CASES.get(name, {})
        hows = ["direct", "view"] + (["graph"] if any(c.dtype != "int64" for c in cases.values()) else [])
        runs += [(name, how) for how in hows]
    return runs


@pytest.mark.parametrize(("name", "how"), _runs())
def test_tensor_writer_drops_the_range(fake_gpu, name, how):
    if name in KEEPS_VALUES:
        cases, keeps = {"": KEEPS_VALUES[name]}, True
    elif name in CASES:
        cases, keeps = CASES[name], False
    else:
        pytest.fail(
            f"Tensor.{name} writes in place and tests/autograd/test_ag_range_writes.py has no case for it: add one "
            f"to CASES (a write into a target whose memory carries a range). Its NDArray / backend writes must "
            f"drop that range (forget_range in genesis_ndarray/backends/cuda); one that writes no values goes "
            f"in KEEPS_VALUES, with the reason."
        )
    for label, case in cases.items():
        if how != "graph" or case.dtype != "int64":
            _check(name, label, case, how, keeps)


def test_no_case_for_a_missing_method():
    writers = set(tensor_writers())
    assert sorted((CASES.keys() | KEEPS_VALUES.keys()) - writers) == []
    assert not CASES.keys() & KEEPS_VALUES.keys()


def test_discovery_finds_todays_writers():
    """The walk still finds the methods this module was written against (a vacuous walk would pass anything)."""
    assert {"add_", "copy_", "fill_", "index_add_", "scatter_", "uniform_", "__setitem__", "__iadd__"} <= set(
        tensor_writers()
    )
    assert "_random_" not in tensor_writers()  # a helper of random_, not torch's


def test_a_tensor_write_that_forgets_is_caught(fake_gpu, monkeypatch):
    """The check fails for a Tensor method whose write does not drop (fill_ that writes behind the range)."""

    def forgetful_fill_(self, value):
        known = getattr(self.data.native.storage, "value_range", None)
        self.data.fill_(value)
        self.data.native.storage.value_range = known
        return self

    monkeypatch.setattr(Tensor, "fill_", forgetful_fill_)
    with pytest.raises(AssertionError, match=r"fill_ \(scalar, direct\) wrote into a tensor and left the range"):
        _check("fill_", "scalar", CASES["fill_"]["scalar"], "direct", False)


def test_a_new_tensor_writer_is_asked_for(monkeypatch):
    monkeypatch.setattr(Tensor, "sparse_resize_", lambda self, *args: self, raising=False)
    assert "sparse_resize_" in tensor_writers() and "sparse_resize_" not in CASES
    assert ("sparse_resize_", "direct") in _runs()
