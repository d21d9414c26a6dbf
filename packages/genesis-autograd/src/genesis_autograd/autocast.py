"""Autocast: mixed precision as a dispatch rule, beside grad mode.

Inside ``autocast(device_type, dtype)`` every op that runs through ``Function.apply``
on a tensor of that device type has its floating inputs cast by the op's policy, as
torch's autocast does:

* ``"lower"`` ops (matrix products, convolution, attention) run in the autocast
  dtype (float16 or bfloat16);
* ``"linear"`` functions (nn.functional's composed linear) take their input and weight in the
  autocast dtype, as ``"lower"``, but a float32 bias stays float32: the kernel adds it to the
  float32 accumulator before the one rounding. torch rounds the bias to the low dtype first;
* ``"own"`` ops (the Linear Function) apply autocast themselves, by :func:`lowered` (see
  functions/matmul.py): the product runs in the autocast dtype as ``"linear"`` says, but the
  casts are inside the op, not Cast nodes of the graph, and each gradient comes out of the
  backward's products in its input's own dtype (a float32 weight's straight from the float32
  accumulator). torch records a cast per operand and layer and rounds each gradient to the low
  dtype before its cast back: here that is four ops fewer per layer and step, and one rounding
  fewer for every gradient;
* ``"float32"`` ops (softmax, exp / log / pow, sums and norms, the losses and norms of
  nn.functional) run in float32 however low their inputs are;
* ``"promote"`` ops (cat, stack, addcmul, ...) run in the widest floating dtype among
  their inputs;
* every other op runs in its inputs' dtype.

Casts go through the differentiable cast, so gradients come back in each input's own
dtype. The state is per thread and nests; ``Function.apply`` reads one flag when no
autocast region is open. Composite functions (nn.functional's layer_norm, say) take a
policy with :func:`autocast_policy`.

As torch's, the low-precision casts of float32 leaf tensors that require grad (the
parameters) are cached for the outermost region, so a weight used by several ops is cast
once: the cache is emptied when the outermost region exits (the nesting count returns to
0) or by :func:`clear_autocast_cache`, and ``set_autocast_cache_enabled(False)`` (or
``autocast(cache_enabled=False)``) turns it off. Unlike torch's, an entry is dropped when
its tensor was changed in place since (an optimizer step inside the region) or when its
graph was freed by a backward.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from genesis_ndarray import DType, NDArray, as_dtype, bfloat16, float16, float32, promote_types

from . import grad_mode

F = TypeVar("F", bound=Callable[..., Any])

# The dtypes each device type's autocast accepts, the first being its default (torch's).
SUPPORTED: dict[str, tuple[DType, ...]] = {"cuda": (float16, bfloat16), "cpu": (bfloat16, float16)}

# Op policies by Function class name (torch's autocast op lists, for the ops genesis has).
POLICIES: dict[str, str] = {
    **dict.fromkeys(("MatMul", "Conv", "ScaledDotProductAttention"), "lower"),
    **dict.fromkeys(("Linear", "LinearCrossEntropy"), "own"),
    **dict.fromkeys(
        (
            "Softmax",
            "LogSoftmax",
            "Exp",
            "Expm1",
            "Log",
            "Log1p",
            "Log2",
            "Log10",
            "Pow",
            "Reciprocal",
            "Rsqrt",
            "Tan",
            "Acos",
            "Asin",
            "Cosh",
            "Sinh",
            "Sum",
            "Prod",
            "Cumsum",
            "Cumprod",
            "VectorNorm",
            "Logsumexp",
            "Var",
            "Std",
        ),
        "float32",
    ),
    **dict.fromkeys(("Cat", "Stack", "Addcmul", "Addcdiv", "Atan2", "IndexPut", "ScatterAdd", "IndexAdd"), "promote"),
}


class _State(threading.local):
    def __init__(self) -> None:
        self.dtypes: dict[str, DType] = {}  # device type -> autocast dtype, for the enabled ones
        self.active = False  # any device type enabled: the one check Function.apply makes
        self.configured: dict[str, DType] = {}  # device type -> dtype set while disabled (set_autocast_dtype)
        self.nesting = 0  # open autocast regions (autocast_increment_nesting); 0 empties the cast cache
        self.cache_enabled = True
        self.cache: dict[tuple[int, DType], tuple[Any, int, Any]] = {}  # (id, dtype) -> (leaf, version, cast)
        # lowered()'s casts, NDArrays: (id, dtype) -> (leaf, its NDArray, version, cast)
        self.data_cache: dict[tuple[int, DType], tuple[Any, NDArray, int, NDArray]] = {}


_state = _State()


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """True inside an enabled ``autocast`` region for ``device_type`` on this thread."""
    return device_type in _state.dtypes


def get_autocast_dtype(device_type: str = "cuda") -> DType:
    """The dtype that ``autocast`` lowers to on ``device_type`` (its default unless set)."""
    found = _state.dtypes.get(device_type) or _state.configured.get(device_type)
    return found if found is not None else _supported(device_type)[0]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for ``device_type`` on this thread, outside any ``with autocast`` (which
    restores the previous state when it exits)."""
    _supported(device_type)
    if enabled:
        _state.dtypes[device_type] = get_autocast_dtype(device_type)
    else:
        _state.dtypes.pop(device_type, None)
    _state.active = bool(_state.dtypes)


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype autocast lowers to on ``device_type``, now if enabled and in later enablings."""
    _supported(device_type)
    dtype = as_dtype(dtype)
    _state.configured[device_type] = dtype
    if device_type in _state.dtypes:
        _state.dtypes[device_type] = dtype


def autocast_increment_nesting() -> int:
    """Count one more open autocast region; returns the new count (autocast's __enter__ calls it)."""
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Count one region fewer; returns the new count (at 0 autocast's __exit__ empties the cast cache)."""
    _state.nesting -= 1
    return _state.nesting


def is_autocast_cache_enabled() -> bool:
    """Whether the casts of parameters are cached inside autocast regions (True unless turned off)."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off for this thread."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts (the outermost autocast region does it when it exits)."""
    _state.cache.clear()
    _state.data_cache.clear()


def _supported(device_type: str) -> tuple[DType, ...]:
    found = SUPPORTED.get(device_type)
    if found is None:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}'; genesis supports "
            f"{', '.join(repr(d) for d in SUPPORTED)}"
        )
    return found


class autocast:
    """Context manager and decorator: ops on ``device_type`` tensors run in mixed precision.

    Args:
        device_type: ``"cuda"`` or ``"cpu"``.
        dtype: the low-precision dtype, ``genesis.float16`` or ``genesis.bfloat16`` (default:
            float16 on cuda, bfloat16 on cpu, as torch).
        enabled: ``False`` turns autocast off inside the region (nested regions restore it).
        cache_enabled: cache the casts of parameters inside the region (default: is_autocast_cache_enabled()).
    """

    def __init__(
        self, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: bool | None = None
    ) -> None:
        allowed = _supported(device_type)
        self.device_type = device_type
        self.fast_dtype = allowed[0] if dtype is None else as_dtype(dtype)
        self.enabled = bool(enabled)
        if self.enabled and self.fast_dtype not in allowed:
            warnings.warn(
                f"In {device_type} autocast, but the target dtype {self.fast_dtype.name} is not supported "
                f"(supported: {', '.join(d.name for d in allowed)}). Disabling autocast.",
                stacklevel=2,
            )
            self.enabled = False
        self.cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._previous: list[tuple[DType | None, DType | None, bool]] = []

    def __enter__(self) -> autocast:
        dt = self.device_type
        self._previous.append((_state.dtypes.get(dt), _state.configured.get(dt), _state.cache_enabled))
        _state.configured[dt] = self.fast_dtype  # as torch: the region's dtype even where it is disabled
        if self.enabled:
            _state.dtypes[dt] = self.fast_dtype
        else:
            _state.dtypes.pop(dt, None)
        _state.active = bool(_state.dtypes)
        _state.cache_enabled = self.cache_enabled
        autocast_increment_nesting()
        return self

    def __exit__(self, *exc: object) -> None:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        previous, configured, _state.cache_enabled = self._previous.pop()
        if previous is None:
            _state.dtypes.pop(self.device_type, None)
        else:
            _state.dtypes[self.device_type] = previous
        if configured is None:
            _state.configured.pop(self.device_type, None)
        else:
            _state.configured[self.device_type] = configured
        _state.active = bool(_state.dtypes)

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # functools.wraps: the wrapper stands in for fn


def _target(policy: str, args: tuple, device_type: str) -> DType | None:
    if policy == "lower" or policy == "linear":
        return _state.dtypes[device_type]
    if policy == "float32":
        return float32
    widest = None  # "promote": torch's promotion over the floating inputs (float16 with bfloat16 -> float32)
    for a in args:
        if getattr(a, "_result_type", None) is not None and a.dtype.is_floating_point:
            widest = a.dtype if widest is None else promote_types(widest, a.dtype)
    return widest


def cast_inputs(policy: str, args: tuple) -> tuple:
    """``args`` with their floating tensors cast as ``policy`` says, when autocast is on for their device."""
    # Once per recorded op under autocast: one pass to find the device, one to cast, and ``args`` itself
    # back (no new tuple) when nothing needs a cast.
    device_type = None
    for a in args:
        if getattr(a, "_result_type", None) is not None:
            device_type = a.data.device.type
            break
    if device_type is None or device_type not in _state.dtypes:
        return args
    target = _target(policy, args, device_type)
    if target is None:
        return args
    lower = policy == "lower" or policy == "linear"
    # "linear": (input, weight, bias); a float32 bias is taken as it is (see the module's docstring)
    wide_bias = 2 if policy == "linear" else -1
    out = None
    for i, a in enumerate(args):
        if getattr(a, "_result_type", None) is not None:
            dtype = a.data.dtype
            if i == wide_bias and dtype is float32:
                continue
            if dtype is not target and dtype.is_floating_point and not (lower and dtype.itemsize > 4):
                # (torch leaves float64 alone under "lower")
                if out is None:
                    out = list(args)
                # the positional form: Tensor.to's shortest path to Cast
                out[i] = _cached_cast(a, target) if lower and _cacheable(a, dtype) else a.to(target)
    return args if out is None else tuple(out)


def _cacheable(t: Any, dtype: DType) -> bool:
    """Whether autocast keeps its cast of ``t`` (of ``dtype``) for the region: a float32 leaf that requires
    grad (a parameter), while the cache is on (torch's rule)."""
    return _state.cache_enabled and dtype is float32 and t.requires_grad and t.grad_fn is None


def _cached_cast(leaf: Any, target: DType) -> Any:
    """``leaf.to(target)``, cast once per autocast region (torch's cast cache, for parameters)."""
    if not grad_mode._state.enabled:  # a cast made without a graph must not serve a later op that needs one
        return leaf.to(target)
    key = (id(leaf), target)
    hit = _state.cache.get(key)
    if hit is not None:
        cached_leaf, version, cast = hit
        fresh = cached_leaf is leaf and version == leaf._version[0] and not cast.grad_fn._freed
        if fresh:
            return cast
    cast = leaf.to(target)
    _state.cache[key] = (leaf, leaf._version[0], cast)
    return cast


def lowered(t: Any) -> Any:
    """The NDArray an op of the "own" policy computes on for its tensor input ``t``: ``t.data`` in the autocast
    dtype of its device, where autocast casts it (a floating tensor of another dtype, float64 excepted as torch
    leaves it), else ``t.data`` itself. A float32 leaf that requires grad (a parameter) is cast once per region
    while the cache is on, as :func:`_cached_cast` casts it for the ops that record the cast."""
    data = t.data
    target = _state.dtypes.get(data.device.type)
    dtype = data.dtype
    if target is None or dtype is target or not dtype.is_floating_point or dtype.itemsize > 4:
        return data
    if not _cacheable(t, dtype):
        return data.astype(target)
    key = (id(t), target)
    hit = _state.data_cache.get(key)
    if hit is not None and hit[0] is t and hit[1] is data and hit[2] == t._version[0]:
        return hit[3]
    cast = data.astype(target)
    _state.data_cache[key] = (t, data, t._version[0], cast)
    return cast


def policy_of(function_class: type) -> str | None:
    """The autocast policy of a Function class: its ``autocast_policy`` attribute, else the table's."""
    declared = getattr(function_class, "autocast_policy", None)
    return declared if declared is not None else POLICIES.get(function_class.__name__)


_UNRESOLVED = "unresolved"  # resolved_policy's cache: a class not looked up yet
_resolved: dict[type, str | None] = {}


def resolved_policy(function_class: type) -> str | None:
    """policy_of, looked up once per class (Function.apply asks it for every op inside an autocast region).

    A class's policy is fixed when the class is first applied under autocast: its ``autocast_policy`` is a
    class attribute set in its body, and POLICIES is a constant table. :func:`clear_policy_cache` forgets
    the answers (for code that changes either afterwards)."""
    policy = _resolved.get(function_class, _UNRESOLVED)
    if policy is _UNRESOLVED:
        policy = policy_of(function_class)
        policy = _resolved[function_class] = None if policy == "own" else policy  # ("own": apply casts nothing)
    return policy


def clear_policy_cache() -> None:
    """Forget the policies resolved_policy has looked up (after changing a class's ``autocast_policy``)."""
    _resolved.clear()


def autocast_policy(policy: str) -> Callable[[F], F]:
    """Decorator for composite functions: cast their tensor arguments by ``policy`` under autocast
    ("lower", "linear", "float32" or "promote"; "own" is for Functions that cast inside).

    ``@autocast_policy("float32")`` on nn.functional.layer_norm makes it compute in float32
    inside an autocast region, as torch's layer_norm does; outside one it costs one flag check.
    """
    if policy not in ("lower", "linear", "float32", "promote"):
        raise ValueError(f"autocast policy must be 'lower', 'linear', 'float32' or 'promote', not {policy!r}")

    # "linear" functions take (input, weight, bias); other keyword arguments are cast as "lower" casts them
    linear = policy == "linear"
    keyword_policy = "lower" if linear else policy

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _state.active:
                if linear and len(args) == 2 and "bias" in kwargs:  # (input, weight, bias=...): where "linear" looks
                    kwargs = dict(kwargs)
                    args = (*args, kwargs.pop("bias"))
                args = cast_inputs(policy, args)
                if kwargs:
                    keys = list(kwargs)
                    values = cast_inputs(keyword_policy, tuple(kwargs.values()))
                    kwargs = dict(zip(keys, values))
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # functools.wraps: the wrapper stands in for fn

    return decorate
