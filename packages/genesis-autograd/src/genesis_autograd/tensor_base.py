"""TensorBase: the state every Tensor has, shared by Tensor's family mixins.

Tensor is TensorBase plus one mixin per op family (functions/<family>.py) plus tensor.py's own
methods. The slots live here rather than on Tensor so that each mixin, type-checked on its own,
knows the attributes it reads and writes. The members a mixin uses from tensor.py or from another
family are declared below for the type checker only; their definitions are where the comments say.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from genesis_ndarray import Device, DType, NDArray

    from .function import AccumulateGrad, Node
    from .tensor import Tensor

# A Python number as an operand (annotations only: numbers.Number, which the code tests against, is an ABC
# the type checker does not relate to int and float). Spelled here, outside Tensor's class body, where the
# methods named float, int and bool would shadow the builtins.
Scalar = int | float | bool


class TensorBase:
    # A dict of slots gives each attribute its docstring (help(Tensor) shows them).
    __slots__ = {
        "__weakref__": None,
        "_accumulator": "A leaf's AccumulateGrad node, made on first use.",
        "_base": "For a view: the tensor whose memory it shows.",
        "_hooks": "A leaf's gradient hooks (register_hook).",
        "_output_nr": "Which output of grad_fn this tensor is.",
        "_post_accumulate_grad_hooks": "Hooks run after a leaf's .grad is updated (post-accumulate).",
        "_retains_grad": "Whether a non-leaf keeps its .grad (retain_grad).",
        "_version": "The version counter, a one-element list shared with the views of the same memory.",
        "_view_version": "For a view: the version its grad_fn was recorded at (see ViewsMixin._refresh_view).",
        "data": "The NDArray holding this tensor's values (a view of the same memory, outside autograd).",
        "grad": "The gradient accumulated by backward() for a leaf that requires grad; None until then.",
        "grad_fn": "The graph node that made this tensor (its backward), or None for a leaf.",
        "requires_grad": "Whether autograd records operations on this tensor (and computes its gradient).",
    }

    data: NDArray
    grad: Tensor | None
    grad_fn: Node | None
    requires_grad: bool
    _accumulator: AccumulateGrad | None
    _base: Tensor | None
    _hooks: list[Callable[[Tensor], Tensor | None]] | None
    _post_accumulate_grad_hooks: list[Callable[[Tensor], None]] | None
    _output_nr: int
    _retains_grad: bool
    _version: list[int]
    _view_version: int

    # The class ops on a tensor make (plain Tensor, also for an nn.Parameter): set by tensor.py.
    _result_type: ClassVar[type[Tensor]]

    if TYPE_CHECKING:
        # tensor.py, tensor_metadata.py
        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> DType: ...
        @property
        def device(self) -> Device: ...
        @property
        def ndim(self) -> int: ...
        def stride(self) -> tuple[int, ...]: ...  # the full signature (with dim) is Tensor's
        def is_contiguous(self, memory_format: object = None) -> bool: ...
        def detach(self) -> Tensor: ...
        def _snapshot(self) -> Tensor: ...
        def _inplace(
            self, recorded: Callable[[], Tensor], plain: Callable[[], object], needs_graph: bool = False
        ) -> Tensor: ...
        def _math_inplace(self, method: str, *args: Any, **kwargs: Any) -> Tensor: ...

        # functions/memory.py, functions/elementwise.py, functions/index.py
        def item(self) -> Scalar: ...
        def to(self, *args: Any, **kwargs: Any) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def index_select(self, dim: int, index: Tensor) -> Tensor: ...
        def maximum(self, other: Tensor) -> Tensor: ...
        def minimum(self, other: Tensor) -> Tensor: ...
