"""FSDPState: the hooks fully_shard puts around one module, and the root's end of backward.

Forward: the pre-forward hook all-gathers the module's parameter group (and starts the next module's
all-gather: prefetch), casts the floating inputs to ``param_dtype``; the post-forward hook frees the
unsharded parameters (``reshard_after_forward``; never for the root, whose parameters backward needs
first; an int N keeps each rank's 1/N of them, sharded over N consecutive ranks, for backward) and
registers a hook on the outputs. Backward: the first output gradient to arrive all-gathers
the parameters again (and prefetches the module whose backward comes next); once every gradient of the
group is accumulated (post-accumulate-grad hooks), they are reduce-scattered and the parameters freed.
The root queues a final callback on the engine that reduces what the hooks did not (parameters unused
this time), waits for every reduce-scatter, frees every group and resets the states.

Prefetch order: the root records the order in which the states' pre-forwards run on the first
iteration; later iterations prefetch the next one in forward and the previous one in backward, unless
``set_modules_to_forward_prefetch`` / ``set_modules_to_backward_prefetch`` named modules explicitly.
"""

from __future__ import annotations

import enum
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor

from ...nn.module import Module
from .param_group import FSDPParamGroup
from .policies import MixedPrecisionPolicy

MAX_REDUCES_IN_FLIGHT = 2


class TrainingState(enum.Enum):
    """Where a state is in the iteration (torch's names)."""

    IDLE = "idle"
    FORWARD = "forward"
    PRE_BACKWARD = "pre_backward"
    POST_BACKWARD = "post_backward"


def _map_tensors(value: Any, fn: Any) -> Any:
    """``fn`` applied to every Tensor in nested tuples, lists and dicts."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, tuple):
        mapped = [_map_tensors(v, fn) for v in value]
        return type(value)(*mapped) if hasattr(value, "_fields") else tuple(mapped)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value


def _cast_to(dtype: Any) -> Any:
    def cast(t: Tensor) -> Tensor:
        return t.to(dtype) if t.dtype.is_floating_point and t.dtype != dtype else t

    return cast


class FSDPState:
    """The hooks and per-iteration state of one fully_shard-ed module."""

    def __init__(
        self,
        module: Module,
        group: FSDPParamGroup | None,
        mp_policy: MixedPrecisionPolicy,
        reshard_after_forward: bool | None,
    ) -> None:
        self.module, self.group, self.mp_policy = module, group, mp_policy
        self.auto_reshard = reshard_after_forward is None
        self.reshard_after_forward = True if reshard_after_forward is None else bool(reshard_after_forward)
        self.reshard_after_backward = True
        self.is_root: bool | None = None  # decided at the first forward
        self.root: FSDPState | None = None
        self.training_state = TrainingState.IDLE
        self.forward_prefetch: list[FSDPState] | None = None  # explicit lists, or None: the recorded order
        self.backward_prefetch: list[FSDPState] | None = None
        self._pre_backward_done = False
        self._post_backward_done = False
        # the root's
        self.states: list[FSDPState] = []
        self.order: list[FSDPState] = []
        self._recording = True
        self._callback_queued = False
        self._reducing: list[FSDPParamGroup] = []  # groups whose reduce-scatter is in flight, oldest first
        if group is not None:
            group.on_all_grads_ready = self._on_all_grads_ready
        module.register_forward_pre_hook(self._pre_forward, prepend=True, with_kwargs=True)
        module.register_forward_hook(self._post_forward)

    # ------------------------------------------------------------ root
    def _lazy_init(self) -> None:
        """The first forward reaching a state that has no root makes it the root of every state below it."""
        self.is_root, self.root = True, self
        self.states = []
        for m in self.module.modules():
            state = getattr(m, "_fsdp_state", None)
            if state is None:
                continue
            if state is not self:
                state.is_root, state.root = False, self
            self.states.append(state)
        if self.auto_reshard:
            self.reshard_after_forward = False  # backward needs the root's parameters first

    # ------------------------------------------------------------ forward
    def _pre_forward(self, module: Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if self.is_root is None:
            self._lazy_init()
        root = self.root
        assert root is not None
        if self.training_state is TrainingState.PRE_BACKWARD:  # recomputation (activation checkpointing)
            if self.group is not None:
                self.group.unshard()
            return args, kwargs
        if self.is_root:  # a new forward: parameters kept from an earlier one may be stale (an optimizer step)
            for state in self.states:
                if state.group is not None:
                    state.group.drop_kept()
        if root._recording and ag.is_grad_enabled():
            root.order.append(self)
        self.training_state = TrainingState.FORWARD
        if self.group is not None:
            self.group.unshard()
        for target in self._forward_targets():
            if target.group is not None:
                target.group.unshard(async_op=True)
        dtype = self.mp_policy.param_dtype
        if dtype is not None and self.mp_policy.cast_forward_inputs:
            args, kwargs = _map_tensors(args, _cast_to(dtype)), _map_tensors(kwargs, _cast_to(dtype))
        return args, kwargs

    def _post_forward(self, module: Module, args: tuple, output: Any) -> Any:
        if self.training_state is TrainingState.PRE_BACKWARD:
            return output
        if self.group is not None and self.reshard_after_forward:
            if ag.is_grad_enabled():  # an int reshard_after_forward keeps 1/N for backward's all-gather
                self.group.reshard_after_forward()
            else:  # no backward follows: free everything
                self.group.reshard()
        self.training_state = TrainingState.IDLE
        if ag.is_grad_enabled():
            self._pre_backward_done = self._post_backward_done = False
            if self.group is not None:
                self.group.reset_backward()
            _map_tensors(output, self._register_pre_backward)
        if self.is_root:
            self.root_post_forward()
            if self.mp_policy.output_dtype is not None:
                output = _map_tensors(output, _cast_to(self.mp_policy.output_dtype))
        return output

    def root_post_forward(self) -> None:
        """The end of the root's forward: the order is recorded once."""
        if self.order:
            self._recording = False

    def _register_pre_backward(self, t: Tensor) -> Tensor:
        if t.requires_grad and t.grad_fn is not None:
            t.register_hook(self._pre_backward)
        return t

    def _forward_targets(self) -> list[FSDPState]:
        if self.forward_prefetch is not None:
            return self.forward_prefetch
        root = self.root
        if root is None or root._recording or self not in root.order:
            return []
        i = root.order.index(self)
        return root.order[i + 1 : i + 2]

    def _backward_targets(self) -> list[FSDPState]:
        if self.backward_prefetch is not None:
            return self.backward_prefetch
        root = self.root
        if root is None or root._recording or self not in root.order:
            return []
        order = root.order
        i = len(order) - 1 - order[::-1].index(self)  # its last forward: the first backward
        if i == 0:
            return order[-1:] if len(order) > 1 else []
        return order[i - 1 : i] if i - 1 > 0 else []

    # ------------------------------------------------------------ backward
    def _pre_backward(self, grad: Tensor) -> None:
        if self._pre_backward_done:
            return None
        self._pre_backward_done = True
        root = self.root
        assert root is not None
        if not root._callback_queued:
            root._callback_queued = True
            ag.queue_callback(root._final_callback)
        self.training_state = TrainingState.PRE_BACKWARD
        if self.group is not None:
            self.group.unshard()
        for target in self._backward_targets():
            if target.group is not None:
                target.group.unshard(async_op=True)
        return None

    def _on_all_grads_ready(self) -> None:
        self._post_backward()

    def _post_backward(self) -> None:
        if self._post_backward_done:
            return
        self._post_backward_done = True
        self.training_state = TrainingState.POST_BACKWARD
        group = self.group
        if group is None:
            return
        if group.reduce_grads() and self.root is not None:
            # at most two reduce-scatters in flight: each holds a whole module's gradients in reduce_dtype,
            # so the older ones finish (and free them) as new ones start, not all at the end of backward
            reducing = self.root._reducing
            reducing.append(group)
            while len(reducing) > MAX_REDUCES_IN_FLIGHT:
                reducing.pop(0).finish_reduce()
        # a frozen parameter's data may still be read later in this backward: reshard at the end then
        if self.reshard_after_backward and not group.has_frozen:
            group.reshard()

    def _final_callback(self) -> None:
        """The root's end of backward: reduce what no hook did, wait for every reduce-scatter, free, reset."""
        for state in self.states:
            if state.group is None:
                continue
            if not state._post_backward_done and state.training_state is not TrainingState.IDLE:
                state._post_backward()
            elif not state._post_backward_done and any(s.unsharded.grad is not None for s in state.group.slots):
                state._post_backward()
        self._reducing.clear()
        for state in self.states:
            if state.group is not None:
                state.group.finish_reduce()
                if state.reshard_after_backward:
                    state.group.reshard()
            state.training_state = TrainingState.IDLE
            state._pre_backward_done = state._post_backward_done = False
        self._callback_queued = False
