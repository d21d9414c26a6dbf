"""Module hooks: removable handles, and the identity Functions that give full backward hooks their
gradients (as torch.utils.hooks.BackwardHook).

A full backward hook needs the gradients with respect to a module's inputs and outputs as
Tensors, whatever the module computes inside. The module's tensor inputs and outputs are
therefore passed through an identity Function each: the output one sees grad_output first
(and runs the backward pre-hooks), the input one sees grad_input later and calls the hooks.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from genesis_autograd import Function, Tensor, is_grad_enabled


class RemovableHandle:
    """What register_*_hook returns: ``remove()`` takes the hook out of every table it was put in."""

    _ids = itertools.count()

    def __init__(self, *tables: dict):
        self.id = next(RemovableHandle._ids)
        self._tables = tables

    def remove(self) -> None:
        for table in self._tables:
            table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def add_hook(table: OrderedDict, hook: Callable, prepend: bool, *extra: dict) -> RemovableHandle:
    """Put ``hook`` in ``table`` (first when ``prepend``); ``extra`` tables hold per-hook flags."""
    handle = RemovableHandle(table, *extra)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


class _HookIdentity(Function):
    """Passes tensors through unchanged; its backward hands the incoming gradients to a callback,
    which may replace them."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        if ctx.records:
            ctx.callback = callback
            ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tuple(t.data for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.callback(grads))


def _tensor_positions(values: tuple) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


def _through_identity(values: tuple, callback) -> tuple[tuple, list[int] | None]:
    """``values`` with their Tensors passed through _HookIdentity, and where those Tensors are;
    None for the positions when no gradient will flow (nothing to hook)."""
    positions = _tensor_positions(values)
    tensors = [values[i] for i in positions]
    if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
        return values, None
    out = list(values)
    for i, t in zip(positions, _HookIdentity.apply(callback, *tensors)):
        out[i] = t
    return tuple(out), positions


class BackwardHook:
    """One forward call's full backward hooks and backward pre-hooks."""

    def __init__(self, module, hooks: list[Callable], pre_hooks: list[Callable]):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = 0
        self.input_positions: list[int] | None = None
        self.n_outputs = 0
        self.output_positions: list[int] = []

    @staticmethod
    def _pack(positions: list[int], grads, n: int) -> tuple:
        out: list[Any] = [None] * n
        for i, g in zip(positions, grads):
            out[i] = g
        return tuple(out)

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_positions = _through_identity(args, self._on_grad_input)
        return args

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        self.n_outputs = len(outputs)
        outputs, positions = _through_identity(outputs, self._on_grad_output)
        self.output_positions = positions or []
        return outputs[0] if single else outputs

    def _on_grad_output(self, grads: tuple) -> tuple:
        grad_outputs = self._pack(self.output_positions, grads, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, grad_outputs)
            if new is not None:
                new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
                if len(new) != len(grad_outputs):
                    raise RuntimeError(
                        f"Backward pre hook returned an invalid number of grad_output, got "
                        f"{len(new)}, but expected {len(grad_outputs)}"
                    )
                grad_outputs = new
        self.grad_outputs = grad_outputs
        if self.input_positions is None:
            # No input needs a gradient: the hooks run now, with None for every grad_input.
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not all(r is None for r in res):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always "
                        "return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_positions)

    def _on_grad_input(self, grads: tuple) -> tuple:
        positions = self.input_positions
        assert positions is not None, "called back only through the identity setup_input_hook put on the inputs"
        grad_inputs = self._pack(positions, grads, self.n_inputs)
        for hook in self.hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None:
                res = tuple(res)
                if len(res) != len(grad_inputs):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got {len(res)}, "
                        f"but expected {len(grad_inputs)}"
                    )
                grad_inputs = res
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in positions)
