"""Every write into an existing cuda array drops the host-known value range of its memory, found by walking
the ops rather than by a list someone must remember to extend.

A ``CUDAStorage.value_range`` lets an index op skip its device bounds check (tests/ndarray/test_nd_known_range.py).
The kernels still mask an index outside the array, so a write that leaves a stale range behind corrupts no
memory: it silently turns the IndexError torch raises into skipped indices. So every op able to write into
memory it did not just allocate must call ``forget_range`` (common.py) first.

The writers are discovered, at collection, from what exists:
- the cuda registry's ops named ``*_`` (torch's in-place spelling), ``setitem``, every op with an ``out``
  parameter, every resolver family named ``*_`` (its resolved entries are other functions than the
  registered one), and the exports that hand the address to someone who may write through it;
- NDArray's methods named ``*_``, ``__setitem__`` and those with an ``out`` parameter.
Each writer needs an entry in this file's table of cases (how to call it so that it writes a target whose
range is known); a writer with none fails and says so. And every other registered op must be listed in
``READ_ONLY`` below: a new op spelled like neither must still be looked at once.

Each case writes a target carrying a range, directly and through another view of its memory, and the range
must be gone afterwards. The targets are int64 (the arrays that carry ranges today: uploads, arange, casts);
an op that only writes floating arrays gets a floating target with a range planted on its storage, so that
the test still sees whether it drops one (a range is a property of memory, not of a dtype: nothing stops a
later change from recording ranges of other dtypes, and the drop costs one attribute store).

Runs on the fake device of test_nd_known_range.py (host memory, Triton's interpreter) without a GPU, and on
the GPU where there is one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
import torch
from test_nd_known_range import fake_device_checks

import genesis_ndarray as nd
import genesis_ndarray.optimizer as nd_opt
from genesis_ndarray import registry

_TORCH = {"int64": torch.int64, "float64": torch.float64, "float32": torch.float32, "float16": torch.float16}


@pytest.fixture
def fake_gpu(monkeypatch):
    """One fake GPU over host memory (or the real one on a GPU machine)."""
    yield from fake_device_checks(monkeypatch)


# ------------------------------------------------------------------ targets and what their range says
class Case(NamedTuple):
    """One way to make an op write ``target`` (an NDArray of ``dtype`` and ``shape`` whose memory has a range)."""

    write: Callable[[nd.NDArray], object]
    dtype: str = "int64"
    shape: tuple[int, ...] = (5,)


def _target(dtype: str, shape: tuple[int, ...]) -> nd.NDArray:
    """Values 0 .. n-1, uploaded: an int64 target's range is recorded by the upload itself; a floating one's
    is planted (see the module docstring)."""
    n = int(np.prod(shape))
    a = nd.from_torch(torch.arange(n, dtype=_TORCH[dtype]).reshape(shape), "cuda")
    if dtype != "int64":
        a.native.storage.value_range = (dtype, 0, n - 1, True)
    assert _range_of(a) == (dtype, 0, n - 1, True)
    return a


def _range_of(a: nd.NDArray):
    return getattr(a.native.storage, "value_range", None)


def _alias(a: nd.NDArray) -> nd.NDArray:
    """Another view of the same memory (a new view object): the range belongs to the memory, not to one array."""
    return a.as_strided(a.shape, a.strides, 0)


def _range_still_holds(a: nd.NDArray) -> bool:
    """Whether ``a``'s recorded range (``a`` covering its whole storage) is still true of the values it holds."""
    known = _range_of(a)
    if known is None:
        return True
    values = np.asarray(a.numpy())
    if known[0] != a.dtype.name or not values.size:
        return False
    lo, hi = values.min(), values.max()
    return known[1] <= lo and hi <= known[2] and (not known[3] or (lo == known[1] and hi == known[2]))


def _up(values, dtype=torch.int64) -> nd.NDArray:
    return nd.from_torch(torch.tensor(values, dtype=dtype), "cuda")


def _floats(shape=(5,), dtype=torch.float64) -> nd.NDArray:
    return nd.from_torch(torch.rand(shape, dtype=dtype), "cuda")


def _scalar(value: float) -> nd.NDArray:
    return nd.from_torch(torch.tensor(value, dtype=torch.float32), "cuda")


# ------------------------------------------------------------------ the multi-tensor optimizer ops, by role
# Each list an op writes is a role: the target takes that place, fresh arrays the others. Every case passes
# grad_scale, with which the kernels write the unscaled gradient back into ``grads``.
_ADAM_ROLES = ("params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "steps", "masters")
_SGD_ROLES = ("params", "grads", "momentum_buffers", "masters")


def _role_dtype(role: str) -> tuple[str, tuple[int, ...]]:
    if role == "steps":
        return "float32", ()  # the per-parameter device counters
    if role == "masters":
        return "float32", (5,)  # fp32 copies of float16 params
    return "float64", (5,)


def _adam(role: str) -> Case:
    def write(t: nd.NDArray) -> None:
        low = role == "masters"
        pdt = torch.float16 if low else torch.float64
        lists = {name: [_floats(dtype=pdt)] for name in ("params", "grads", "exp_avgs", "exp_avg_sqs")}
        lists["max_exp_avg_sqs"] = [_floats(dtype=pdt)]
        lists["steps"] = [_scalar(0.0)]
        lists["masters"] = [_floats(dtype=torch.float32)] if low else None  # type: ignore[assignment]
        lists[role] = [t]
        nd_opt.multi_tensor_adam_(
            lists["params"], lists["grads"], lists["exp_avgs"], lists["exp_avg_sqs"], lists["max_exp_avg_sqs"],
            steps=lists["steps"], masters=lists["masters"], lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
            grad_scale=_scalar(2.0),
        )  # fmt: skip

    return Case(write, *_role_dtype(role))


def _sgd(role: str) -> Case:
    def write(t: nd.NDArray) -> None:
        low = role == "masters"
        pdt = torch.float16 if low else torch.float64
        lists = {name: [_floats(dtype=pdt)] for name in ("params", "grads", "momentum_buffers")}
        lists["masters"] = [_floats(dtype=torch.float32)] if low else None  # type: ignore[assignment]
        lists[role] = [t]
        nd_opt.multi_tensor_sgd_(
            lists["params"], lists["grads"], lists["momentum_buffers"], first_step=[role != "momentum_buffers"],
            masters=lists["masters"], lr=0.1, momentum=0.9, grad_scale=_scalar(2.0),
        )  # fmt: skip

    return Case(write, *_role_dtype(role))


def _cross_entropy_backward(t: nd.NDArray):
    logits = _floats((2, 5))
    target = _up([1, 4])
    _, lse, _ = logits.cross_entropy(target, None, -100, 0.0)
    return logits.cross_entropy_backward(target, None, lse, _floats((2,)), None, -100, 0.0, out=t)


def _exported(t: nd.NDArray, export: str) -> None:
    try:
        out = getattr(t, export)
        if callable(out):
            out()
    except Exception:  # a DLPack capsule on the fake device may not be made: dropping before is what counts
        pass


# ------------------------------------------------------------------ the registry's writers
def _ops() -> registry.OpTable:
    return registry.table("cuda")


def _bool_mask() -> nd.NDArray:
    return nd.from_torch(torch.tensor([True, False, True, False, True]), "cuda")


def _kv_cache_write(role: str, backend: bool) -> Case:
    """The KV-cache write with the target as the ``role`` cache (keys or values), the other one fresh."""

    def write(t: nd.NDArray) -> None:
        other = _floats((1, 1, 5, 1))
        keys, values = (t, other) if role == "keys" else (other, t)
        new, pos = _floats((1, 1, 2, 1)), _up([1])
        if backend:
            _ops()["kv_cache_write_"](keys.native, values.native, new.native, new.native, pos.native)
        else:
            keys.kv_cache_write_(values, new, new, pos)

    return Case(write, "float64", (1, 1, 5, 1))


# op name -> the ways it writes (label -> Case); each calls the registered function itself.
BACKEND_CASES: dict[str, dict[str, Case]] = {
    "binary_": {
        "scalar": Case(lambda t: _ops()["binary_"]("add", t.native, 38)),
        "array": Case(lambda t: _ops()["binary_"]("mul", t.native, _up([9, 9, 9, 9, 9]).native)),
    },
    "copy_": {"array": Case(lambda t: _ops()["copy_"](t.native, _up([42]).native))},
    "fill_": {"scalar": Case(lambda t: _ops()["fill_"](t.native, 42))},
    "setitem": {
        "basic": Case(lambda t: _ops()["setitem"](t.native, 2, 42)),
        "advanced": Case(lambda t: _ops()["setitem"](t.native, _up([1]).native, 42)),
    },
    "index_put_": {
        "put": Case(lambda t: _ops()["index_put_"](t.native, (_up([3]).native,), _up([42]).native, False)),
        "accumulate": Case(lambda t: _ops()["index_put_"](t.native, (_up([3]).native,), _up([42]).native, True)),
    },
    "scatter_": {"scalar": Case(lambda t: _ops()["scatter_"](t.native, 0, _up([1]).native, 42))},
    "scatter_add_": {"array": Case(lambda t: _ops()["scatter_add_"](t.native, 0, _up([1]).native, _up([41]).native))},
    "index_add_": {"array": Case(lambda t: _ops()["index_add_"](t.native, 0, _up([4]).native, _up([38]).native, 1))},
    "masked_fill_": {"scalar": Case(lambda t: _ops()["masked_fill_"](t.native, _bool_mask().native, 42))},
    "random_": {"bounds": Case(lambda t: _ops()["random_"](t.native, 42, 43))},
    "bernoulli_": {"int": Case(lambda t: _ops()["bernoulli_"](t.native, 0.5))},
    "uniform_": {"float": Case(lambda t: _ops()["uniform_"](t.native, 5.0, 6.0), "float64")},
    "normal_": {"float": Case(lambda t: _ops()["normal_"](t.native, 0.0, 1.0), "float64")},
    "exponential_": {"float": Case(lambda t: _ops()["exponential_"](t.native, 1.0), "float64")},
    "advance_counters_": {"counter": Case(lambda t: _ops()["advance_counters_"]([t.native]), "int64", ())},
    "multi_tensor_adam_": {role: _adam(role) for role in _ADAM_ROLES},
    "multi_tensor_sgd_": {role: _sgd(role) for role in _SGD_ROLES},
    "multi_tensor_clip_": {
        "tensors": Case(lambda t: _ops()["multi_tensor_clip_"]([t.native], _scalar(100.0).native, 1.0), "float64")
    },
    "cross_entropy_backward": {"out": Case(_cross_entropy_backward, "float64", (2, 5))},
    "kv_cache_write_": {role: _kv_cache_write(role, backend=True) for role in ("keys", "values")},
    "chunk_cat": {"out": Case(lambda t: _ops()["chunk_cat"](t.native, [_floats().native], 1), "float64")},
    "chunk_split": {"out": Case(lambda t: _ops()["chunk_split"](_floats().native, 1, [t.native]), "float64")},
    # Exports: whoever holds the address may write through it (NCCL, ctypes, another framework).
    "data_ptr": {"export": Case(lambda t: _ops()["data_ptr"](t.native))},
    "to_dlpack": {"export": Case(lambda t: _exported(t, "__dlpack__"))},
    "cuda_array_interface": {"export": Case(lambda t: _exported(t, "__cuda_array_interface__"))},
}

# Resolver families that write (named *_): their resolved entries, called as NDArray calls them.
RESOLVED_CASES: dict[str, dict[str, Case]] = {
    "binary_": {
        "array": Case(lambda t: _ops().resolved[("binary_", "add", nd.int64, nd.int64)](t.native, _up([9] * 5).native)),
        "scalar": Case(lambda t: _ops().resolved[("binary_", "sub", nd.int64, int)](t.native, -40)),
    },
}

# Writers by their spelling that write no array of the caller's.
NOT_WRITERS: dict[str, str] = {
    "attention_backward": "its `out` is the forward's output, which it reads",
}

# Every other registered op reads its inputs and writes only memory it allocates (or no device memory at all).
# A new op goes here only if it writes no existing array; one that does needs forget_range and a case above.
READ_ONLY = frozenset(
    {
        # new arrays from nothing (creation, random creation, the generator's host-side state)
        "arange", "empty", "eye", "full", "linspace", "rand", "randint", "randn", "randperm", "from_cpu",
        "from_dlpack", "manual_seed", "get_rng_state", "set_rng_state", "initial_seed",
        # views (the same memory, nothing written) and metadata
        "as_strided", "diagonal", "expand", "flatten", "narrow", "permute", "reshape", "squeeze", "transpose",
        "unfold", "unsqueeze", "view", "getitem", "dtype_of", "strides", "storage_offset", "is_contiguous",
        "exclusive", "dlpack_device", "attention_supported",
        # reads to the host
        "item", "to_cpu", "to_numpy", "tolist", "value_range",
        # computations into new arrays
        "activation_backward_forward",  # the gradient and the recomputed activation, both new
        "activation_backward", "addcdiv", "addcmul", "argmax", "argmin", "attention", "binary", "cast", "clamp",
        "clone", "contiguous", "cross_entropy", "cumprod", "cumsum", "dropout", "dropout_backward", "embedding",
        "embedding_backward", "gated_backward", "gated_forward", "gather", "index_select", "layer_norm",
        "fused_pointwise", "multinomial_rows",  # generated kernels' outputs; the validated float64 copy of p
        "add_norm", "add_norm_backward",  # the new residual stream, the normed rows and their gradients
        "linear_cross_entropy",  # the loss, row weights and gradients it allocates
        "layer_norm_backward", "lerp", "linear", "linear_backward", "masked_select", "matmul", "max_dim", "min_dim",
        "multi_tensor_norm", "nonzero", "reduce", "rms_norm", "rms_norm_backward", "softmax", "softmax_backward",
        # the rnn family: its cells and sequence loops write only the arrays they allocate
        "gru_cell", "gru_cell_backward", "lstm_cell", "lstm_cell_backward", "rnn_sequence", "rnn_sequence_backward",
        "rope", "rope_pair",  # rotary embeddings: new arrays each way
        "searchsorted",  # insertion indices: a new array
        "sort", "topk", "tril", "triu", "unary", "var", "vector_norm", "where",
        # host-memory state: queries, a pinned copy, the allocator's stream bookkeeping, and moving a cpu
        # tensor's memory to shared memory (the values unchanged; on cuda nothing happens)
        "is_pinned", "is_shared", "pin_memory", "record_stream", "share_memory",
    }
)  # fmt: skip

# Writers not spelled like one: setitem (x[i] = v) and the exports.
_ALSO_WRITERS = ("setitem", "data_ptr", "to_dlpack", "cuda_array_interface")


def _parameters(fn: Callable) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def backend_writers() -> list[str]:
    """The cuda registry's ops that may write into an existing array, by their spelling."""
    ops = registry.table("cuda")
    found = {name for name in ops if name.endswith("_")}
    found |= {name for name, fn in ops.items() if "out" in _parameters(fn)}
    found |= {name for name in _ALSO_WRITERS if name in ops}
    return sorted(found - NOT_WRITERS.keys())


def resolved_writers() -> list[str]:
    return sorted(family for family in registry.table("cuda").resolved.resolvers if family.endswith("_"))


def ndarray_writers() -> list[str]:
    """NDArray's methods that may write into self or an argument, by their spelling."""
    found = {"__setitem__"}
    for name, member in vars(nd.NDArray).items():
        if name.startswith("__") or not callable(member):
            continue
        if name.endswith("_") or "out" in _parameters(member):
            found.add(name)
    return sorted(found)


def _missing(kind: str, name: str, table: str) -> str:
    return (
        f"{name} is a {kind} that may write into an existing array, and {table} in "
        f"tests/ndarray/test_nd_range_writes.py has no case for it. Make it drop the host-known value range of "
        f"the memory it writes (forget_range / forget_ranges in backends/cuda/common.py, before the write) "
        f"and add a case that makes it write a target (see the ones there). If it writes no array of the "
        f"caller's, say why in NOT_WRITERS."
    )


def _check_drops(name: str, cases: dict[str, Case], through_view: bool) -> None:
    for label, case in cases.items():
        base = _target(case.dtype, case.shape)
        case.write(_alias(base) if through_view else base)
        assert _range_of(base) is None, (
            f"{name} ({label}) wrote into an array and left the range of its memory "
            f"({'through another view' if through_view else 'directly'}): it must call forget_range first"
        )


# ------------------------------------------------------------------ the tests
def test_every_registered_op_is_classified():
    """A writer spelled like none of the above would escape discovery: every other op is listed as read-only."""
    ops = set(registry.table("cuda"))
    unknown = sorted(ops - set(backend_writers()) - NOT_WRITERS.keys() - READ_ONLY)
    assert not unknown, (
        f"cuda ops neither discovered as writers nor listed in READ_ONLY (tests/ndarray/test_nd_range_writes.py): "
        f"{unknown}. If one writes into an existing array, it must call forget_range and get a case in "
        f"BACKEND_CASES; otherwise add it to READ_ONLY."
    )
    stale = sorted((READ_ONLY | NOT_WRITERS.keys()) - ops)
    assert not stale, f"no longer registered: drop them from READ_ONLY / NOT_WRITERS: {stale}"
    assert not READ_ONLY & set(backend_writers()), "an op both listed read-only and discovered as a writer"


def test_no_case_for_a_missing_op():
    """A case whose op is gone (renamed?) would test nothing."""
    assert sorted(BACKEND_CASES.keys() - set(backend_writers())) == []
    assert sorted(RESOLVED_CASES.keys() - set(resolved_writers())) == []
    assert sorted(NDARRAY_CASES.keys() - set(ndarray_writers())) == []


@pytest.mark.parametrize("through_view", [False, True], ids=["direct", "view"])
@pytest.mark.parametrize("name", backend_writers())
def test_backend_writer_drops_the_range(fake_gpu, name, through_view):
    if name not in BACKEND_CASES:
        pytest.fail(_missing("cuda op", name, "BACKEND_CASES"))
    _check_drops(name, BACKEND_CASES[name], through_view)


@pytest.mark.parametrize("through_view", [False, True], ids=["direct", "view"])
@pytest.mark.parametrize("family", resolved_writers())
def test_resolved_writer_drops_the_range(fake_gpu, family, through_view):
    if family not in RESOLVED_CASES:
        pytest.fail(_missing("resolver family", family, "RESOLVED_CASES"))
    _check_drops(family, RESOLVED_CASES[family], through_view)


# ------------------------------------------------------------------ NDArray's writers
NDARRAY_CASES: dict[str, dict[str, Case]] = {
    "__setitem__": {
        "basic": Case(lambda t: t.__setitem__(2, 42)),
        "slice": Case(lambda t: t.__setitem__(slice(0, 1), _up([42]))),
        "advanced": Case(lambda t: t.__setitem__(_up([1]), 42)),
        "cpu_index": Case(lambda t: t.__setitem__(nd.from_torch(torch.tensor([1]), "cpu"), 42)),
    },
    "add_": {"scalar": Case(lambda t: t.add_(38)), "array": Case(lambda t: t.add_(_up([38] * 5)))},
    "sub_": {"scalar": Case(lambda t: t.sub_(-38)), "array": Case(lambda t: t.sub_(_up([-38] * 5)))},
    "mul_": {"scalar": Case(lambda t: t.mul_(21)), "array": Case(lambda t: t.mul_(_up([21] * 5)))},
    "div_": {"scalar": Case(lambda t: t.div_(0.5), "float64")},
    "index_put_": {"put": Case(lambda t: t.index_put_((_up([3]),), _up([42])))},
    "scatter_": {
        "scalar": Case(lambda t: t.scatter_(0, _up([1]), 42)),
        "array": Case(lambda t: t.scatter_(0, _up([1]), _up([42]))),
    },
    "scatter_add_": {"array": Case(lambda t: t.scatter_add_(0, _up([1]), _up([41])))},
    "index_add_": {"array": Case(lambda t: t.index_add_(0, _up([4]), _up([38])))},
    "masked_fill_": {"scalar": Case(lambda t: t.masked_fill_(_bool_mask(), 42))},
    "copy_": {
        "cuda": Case(lambda t: t.copy_(_up([42, 1, 2, 3, 4]))),
        "cpu": Case(lambda t: t.copy_(nd.from_torch(torch.tensor([0, 42, 2, 3, 4]), "cpu"))),
    },
    "fill_": {"scalar": Case(lambda t: t.fill_(42))},
    "zero_": {"zero": Case(lambda t: t.zero_())},
    "uniform_": {"float": Case(lambda t: t.uniform_(5.0, 6.0), "float64")},
    "normal_": {"float": Case(lambda t: t.normal_(), "float64")},
    "exponential_": {"float": Case(lambda t: t.exponential_(), "float64")},
    "bernoulli_": {
        "number": Case(lambda t: t.bernoulli_(0.5)),
        "array": Case(lambda t: t.bernoulli_(_floats())),
    },
    "random_": {"bounds": Case(lambda t: t.random_(42, 43)), "spans_dtype": Case(lambda t: t.random_())},
    "cross_entropy_backward": {"out": Case(_cross_entropy_backward, "float64", (2, 5))},
    "kv_cache_write_": {role: _kv_cache_write(role, backend=False) for role in ("keys", "values")},
    "chunk_cat_": {"out": Case(lambda t: t.chunk_cat_([_floats()], 1), "float64")},
    "chunk_split": {"out": Case(lambda t: _floats().chunk_split(1, [t]), "float64")},
}


@pytest.mark.parametrize("through_view", [False, True], ids=["direct", "view"])
@pytest.mark.parametrize("name", ndarray_writers())
def test_ndarray_writer_drops_the_range(fake_gpu, name, through_view):
    if name not in NDARRAY_CASES:
        pytest.fail(_missing("NDArray method", name, "NDARRAY_CASES"))
    _check_drops(name, NDARRAY_CASES[name], through_view)


# ------------------------------------------------------------------ the checks themselves
def test_discovery_finds_todays_writers():
    """The spelling rules still find the writers this module was written against (a rename in the registry,
    or a registry that stopped being walkable, would otherwise make the tests above vacuous)."""
    assert {"binary_", "copy_", "fill_", "setitem", "index_put_", "scatter_", "multi_tensor_adam_"} <= set(
        backend_writers()
    )
    assert "cross_entropy_backward" in backend_writers()  # found by its `out` parameter
    assert resolved_writers() == ["binary_"]
    assert {"__setitem__", "add_", "copy_", "cross_entropy_backward"} <= set(ndarray_writers())


def test_a_write_that_forgets_is_caught(fake_gpu, monkeypatch):
    """The check fails for a writer that does not drop (a fill_ registered without forget_range)."""
    import genesis_kernels as gk
    from genesis_ndarray.backends.cuda.common import stream_of

    def forgetful_fill_(input, value) -> None:
        gk.fill(input, value, stream=stream_of(input))

    monkeypatch.setitem(registry.table("cuda"), "fill_", forgetful_fill_)
    with pytest.raises(AssertionError, match=r"fill_ \(scalar\) wrote into an array and left the range"):
        _check_drops("fill_", BACKEND_CASES["fill_"], False)


def test_range_still_holds_reads_the_values(fake_gpu):
    a = _target("int64", (5,))
    assert _range_still_holds(a)
    a.native.storage.value_range = ("int64", 0, 3, False)  # 4 is held: not a bound
    assert not _range_still_holds(a)
    a.native.storage.value_range = ("int64", -1, 4, True)  # -1 is not held: not exact
    assert not _range_still_holds(a)
    a.native.storage.value_range = ("int64", -1, 4, False)
    assert _range_still_holds(a)


def test_a_new_writer_is_asked_for(monkeypatch):
    """A writer registered tomorrow: discovered by its spelling (and then failing for want of a case), or, spelled
    like none, failing the classification."""
    ops = registry.table("cuda")
    monkeypatch.setitem(ops, "hypot_", lambda input, other: None)
    monkeypatch.setitem(ops, "softmax_into", lambda input, dim, out: None)
    assert {"hypot_", "softmax_into"} <= set(backend_writers())
    assert "hypot_" not in BACKEND_CASES and "softmax_into" not in BACKEND_CASES
    monkeypatch.setitem(ops, "accumulate", lambda dst, src: None)
    with pytest.raises(AssertionError, match=r"neither discovered as writers nor listed in READ_ONLY.*'accumulate'"):
        test_every_registered_op_is_classified()
