"""Activation checkpointing (torch.utils.checkpoint): run a piece of the forward without keeping its
activations, and run it again during backward to get them back.

``checkpoint(fn, *args)`` runs ``fn`` under no_grad; its outputs are those of an autograd Function
whose backward re-enters autograd: it reruns ``fn`` with grad on (with the RNG states and autocast
state of the first run restored, so dropout draws the same masks) and backpropagates through that
recomputation, accumulating into parameters as the uncheckpointed forward would.

``use_reentrant=True`` is torch's reentrant variant: positional tensor arguments only, and at least one
must require grad (a warning otherwise). ``use_reentrant=False`` takes nested lists / tuples / dicts of
tensors and keyword arguments, returns nested outputs, and records even when no input requires grad
(the parameters inside ``fn`` still get their gradients). genesis_autograd has no saved-tensor hooks,
so both variants recompute the whole function in backward; neither supports
``genesis.autograd.grad(..., inputs)`` of parameters inside ``fn`` (the recomputation accumulates
into their ``.grad`` instead).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import genesis
from genesis import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "get_device_states", "noop_context_fn", "set_device_states"]


def noop_context_fn() -> tuple[contextlib.nullcontext[None], contextlib.nullcontext[None]]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _flatten(obj: Any) -> list[Tensor]:
    """The tensors inside nested lists, tuples and dicts, depth first."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        return [t for item in obj for t in _flatten(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _flatten(item)]
    return []


def _rebuild(obj: Any, tensors: Iterator[Tensor]) -> Any:
    """``obj`` with its tensors replaced, in _flatten's order, by the next ones of ``tensors``."""
    if isinstance(obj, Tensor):
        return next(tensors)
    if isinstance(obj, list):
        return [_rebuild(item, tensors) for item in obj]
    if isinstance(obj, tuple):
        items = [_rebuild(item, tensors) for item in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return type(obj)((k, _rebuild(v, tensors)) for k, v in obj.items())
    return obj


def get_device_states(*args: Any) -> tuple[list[Any], list[Tensor]]:
    """The cuda devices of the tensors among ``args`` (nested) and their generators' states."""
    devices: list[Any] = []
    for t in _flatten(list(args)):
        if t.is_cuda and t.device not in devices:
            devices.append(t.device)
    return devices, [genesis.cuda.get_rng_state(d) for d in devices]


def set_device_states(devices: list[Any], states: list[Tensor]) -> None:
    """Restore the generator states of ``devices`` taken by get_device_states."""
    for device, state in zip(devices, states, strict=True):
        genesis.cuda.set_rng_state(state, device)


class _RunState:
    """What the recomputation must see as the first run saw it: RNG states and autocast."""

    def __init__(self, preserve_rng_state: bool, tensors: list[Tensor]) -> None:
        self.preserve = preserve_rng_state
        if preserve_rng_state:
            self.cpu_state = genesis.get_rng_state()
            self.devices, self.device_states = get_device_states(tensors)
        self.autocast = {
            kind: (genesis.get_autocast_dtype(kind) if genesis.is_autocast_enabled(kind) else None)
            for kind in ("cuda", "cpu")
        }

    @contextlib.contextmanager
    def restored(self) -> Iterator[None]:
        """Inside: the saved RNG states and autocast state; after: the RNG states of before, as if the
        recomputation had drawn nothing (torch's fork_rng)."""
        with contextlib.ExitStack() as stack:
            if self.preserve:
                cpu_now = genesis.get_rng_state()
                devices_now = [genesis.cuda.get_rng_state(d) for d in self.devices]
                stack.callback(set_device_states, self.devices, devices_now)
                stack.callback(genesis.set_rng_state, cpu_now)
                genesis.set_rng_state(self.cpu_state)
                set_device_states(self.devices, self.device_states)
            for kind, dtype in self.autocast.items():
                if dtype is not None:
                    stack.enter_context(genesis.autocast(kind, dtype=dtype))
            yield


class _Run:
    """One checkpointed call, shared by forward and backward: the function, the call's structure (where
    its tensors go), the input tensors, the run state and the contexts."""

    def __init__(
        self,
        function: Callable[..., Any],
        call: tuple[list[Any], dict[str, Any]],
        state: _RunState,
        contexts: tuple[Any, Any],
    ) -> None:
        self.function = function
        self.call = call
        self.inputs = _flatten(call)
        self.state = state
        self.forward_context, self.recompute_context = contexts
        self.outputs: Any = None  # the forward's output structure

    def run(self, tensors: list[Tensor]) -> Any:
        """The function on the call with ``tensors`` in place of its tensors."""
        args, kwargs = _rebuild(self.call, iter(tensors))
        return self.function(*args, **kwargs)

    def recompute_backward(self, grads: tuple[Any, ...]) -> list[Tensor | None]:
        """Rerun the function on detached copies of the inputs, with grad on and the first run's state,
        and backpropagate ``grads`` through it: parameters inside get their .grad; returns the inputs'."""
        detached = [x.detach().requires_grad_(x.requires_grad) for x in self.inputs]
        with self.state.restored(), genesis.enable_grad(), self.recompute_context:
            outputs = self.run(detached)
        pairs = [(o, g) for o, g in zip(_flatten(outputs), grads) if o.requires_grad and g is not None]
        if pairs:
            genesis.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return [d.grad if x.requires_grad else None for d, x in zip(detached, self.inputs)]


class _Checkpoint(genesis.Function):
    """Outputs of a checkpointed call computed without a graph; backward recomputes them with one.

    Inputs: the _Run, its input tensors, and for the non-reentrant variant a dummy leaf that requires grad
    (so the node records, and parameters inside get gradients, even when no input requires grad).
    """

    @staticmethod
    def forward(ctx: Any, run: _Run, *tensors: Tensor) -> tuple[Tensor, ...]:
        """Run the call under no_grad (recording is off inside forward)."""
        ctx.run = run
        ctx.extra = len(tensors) - len(run.inputs)
        with run.forward_context:
            outputs = run.run(list(tensors[: len(run.inputs)]))
        run.outputs = outputs
        return tuple(o.detach() for o in _flatten(outputs))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Tensor | None, ...]:
        """Recompute, backpropagate through the recomputation, return the inputs' gradients."""
        return (None, *ctx.run.recompute_backward(grads), *([None] * ctx.extra))


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations: they are recomputed in backward.

    Args:
        function: what to run (a module or any callable).
        use_reentrant: True for the reentrant variant (positional tensors, one must require grad), False
            for the non-reentrant one (nested inputs and outputs, kwargs); None warns, as torch, and means True.
        context_fn: (non-reentrant) returns two context managers, around the forward and the recomputation.
        determinism_check: accepted for torch's signature ("default" or "none"); genesis does not compare the
            recomputed tensors' metadata.
        debug: accepted for torch's signature (non-reentrant only); nothing extra is logged.
        preserve_rng_state: restore the RNG states (cpu and the inputs' cuda devices) for the recomputation,
            so random ops (dropout) draw what they drew in the forward.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        contexts: tuple[Any, Any] = (contextlib.nullcontext(), contextlib.nullcontext())
        if genesis.is_grad_enabled() and not any(t.requires_grad for t in _flatten(list(args))):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
    else:
        contexts = context_fn()
    call = (list(args), kwargs)
    run = _Run(function, call, _RunState(preserve_rng_state, _flatten(call)), contexts)
    extra = [] if use_reentrant else [genesis.ones((), requires_grad=True)]
    flat_out = _Checkpoint.apply(run, *run.inputs, *extra)
    if not isinstance(flat_out, tuple):
        flat_out = (flat_out,)
    return _rebuild(run.outputs, iter(flat_out))


def checkpoint_sequential(
    functions: Any, segments: int, input: Any, use_reentrant: bool | None = None, **kwargs: Any
) -> Any:
    """Run a sequence of modules (an nn.Sequential or a list) in ``segments`` chunks, checkpointing every
    chunk but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
            "two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if isinstance(functions, genesis.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def run_function(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
