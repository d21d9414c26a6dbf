"""Tensor attributes torch keeps for old code and for nn.Module's loading: short (the C-style int16 cast),
is_distributed, grad_dtype, module_load, and the removed Variable API (volatile, reinforce), which answers as
torch's does."""

from __future__ import annotations

import warnings
from typing import Any

from genesis_ndarray import DType, as_dtype, int16

from ..tensor_base import TensorBase

_REINFORCE_REMOVED = (
    "reinforce() was removed.\nUse genesis.distributions instead.\n\nInstead of:\n\n"
    "probs = policy_network(state)\naction = probs.multinomial()\nnext_state, reward = env.step(action)\n"
    "action.reinforce(reward)\naction.backward()\n\nUse:\n\nprobs = policy_network(state)\n"
    "m = genesis.distributions.Categorical(probs)\naction = m.sample()\nnext_state, reward = env.step(action)\n"
    "loss = -m.log_prob(action) * reward\nloss.backward()\n"
)


class LegacyTensorMixin(TensorBase):
    """is_distributed, grad_dtype, module_load, volatile and reinforce."""

    __slots__ = ()

    def short(self) -> Any:
        """This tensor as int16 (``self.to(genesis.int16)``), torch's C-style cast."""
        me: Any = self
        return me.to(int16)

    def is_distributed(self) -> bool:
        """False: a genesis tensor is never a distributed (sharded) tensor."""
        return False

    @property
    def grad_dtype(self) -> DType:
        """The dtype gradients of this leaf arrive in: its own dtype (genesis does not cast gradients to
        another one, so only that dtype can be set). Non-leaf tensors refuse, as torch's."""
        me: Any = self
        if not me.is_leaf:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return me.dtype

    @grad_dtype.setter
    def grad_dtype(self, value: Any) -> None:
        me: Any = self
        if not me.is_leaf:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is None or as_dtype(value) is not me.dtype:
            raise NotImplementedError(
                f"grad_dtype={value}: genesis accumulates a leaf's gradient in its own dtype ({me.dtype.name}) "
                "only; casting incoming gradients to another dtype is not supported"
            )

    def module_load(self, other: Any, assign: bool = False) -> Any:
        """What nn.Module.load_state_dict puts in place of this parameter or buffer: ``other`` detached
        with ``assign``, else this tensor with ``other`` copied in (detached), as torch's."""
        me: Any = self
        if assign:
            return other.detach()
        return me.copy_(other).detach()

    @property
    def volatile(self) -> bool:
        """Always False, with torch's warning: the Variable API's volatile flag was removed (use no_grad)."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value: bool) -> None:
        warnings.warn(
            "volatile was removed and now has no effect. Use `with genesis.no_grad():` instead.",
            UserWarning,
            stacklevel=2,
        )

    def reinforce(self, reward: Any) -> None:
        """Removed from torch's Variable API: raises RuntimeError pointing at genesis.distributions."""
        raise RuntimeError(_REINFORCE_REMOVED)
