"""Parameter: a leaf Tensor that a Module registers as trainable."""

from __future__ import annotations

from genesis_autograd import Tensor


class Parameter(Tensor):
    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from genesis_autograd import empty

            data = empty(0)
        super().__init__(data.data if isinstance(data, Tensor) else data)
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
