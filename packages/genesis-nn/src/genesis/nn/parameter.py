"""Parameter: a leaf Tensor that a Module registers as trainable when it is assigned as an attribute."""

from __future__ import annotations

from genesis_autograd import Tensor, empty


class Parameter(Tensor):
    """Shares ``data``'s memory (as torch.nn.Parameter); a non-leaf ``data`` is detached."""

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        super().__init__(data.data if isinstance(data, Tensor) else data)
        if isinstance(data, Tensor):
            self._version = data._version  # one memory, one version counter (torch's detach semantics)
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """A tensor that a Module registers as a buffer when it is assigned as an attribute (torch.nn.Buffer):
    state that is not trained, such as running statistics. Shares ``data``'s memory; a non-leaf ``data``
    is detached, and its requires_grad is kept.

    Args:
        data: the buffer's tensor (None: an empty one).
        persistent: whether the buffer is part of the module's state dict.
    """

    __slots__ = {"persistent": "Whether the buffer is part of its module's state dict."}

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        super().__init__(data.data if isinstance(data, Tensor) else data)
        if isinstance(data, Tensor):
            self._version = data._version  # one memory, one version counter (torch's detach semantics)
            self.requires_grad = data.requires_grad
        self.persistent = persistent
