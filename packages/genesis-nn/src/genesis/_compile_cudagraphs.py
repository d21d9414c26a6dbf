"""genesis.compile's CUDA graphs (``mode="reduce-overhead"`` and ``"max-autotune"``, as torch's).

A compiled graph whose guards keep matching is replayed by its ops, in Python; these modes go one step
further and record that replay, forward and backward, as two CUDA graphs (make_graphed_callables), so that
a call is one graph launch each way and the host is out of the GPU's way.

When a set of guards gets its graphs:

- its first call captures the ops (eagerly, as in the default mode); the second replays them (the fused
  kernels and their backward compile there); the third records the CUDA graphs, and every later call
  replays them. The recording call's results come from the graphs themselves, so no call runs twice:
  side effects (a BatchNorm's running statistics, an optimizer's view of ``.grad``) happen once per call,
  as in eager;
- only a graph without breaks (no host read inside), whose tensors are all on one CUDA device, and whose
  output is a Tensor or a tuple of Tensors, is recorded; anything else keeps the default mode's replay.
  On the CPU nothing is recorded (torch's modes also only add CUDA graphs on CUDA).

As torch's, the outputs are static buffers: the next call of the same graphs overwrites them (clone an
output to keep it past the next call), and a training step must run the backward of a call before the next
call's forward. Inputs are copied into buffers of the graphs' own; parameters (and any tensor the graph
reads that requires a gradient) are read in place, so an optimizer's in-place update is seen, and their
gradients reach ``.grad`` through autograd as in eager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genesis_autograd import Tensor
from genesis_autograd.compile import PieceTree, Ref

from ._graphed_callables import make_graphed_callables

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
RECORD_AT_CALL = 3  # 1: capture of the ops; 2: first replay (kernels compile); 3: the CUDA graphs are recorded


class GraphedReplay:
    """One set of guards' CUDA graphs: counts the calls, records at the third, then replays."""

    __slots__ = ("_graphed", "_surface", "calls", "failed")

    def __init__(self) -> None:
        self.calls = 0
        self.failed: str | None = None  # why this set of guards is not recorded (for inspection and tests)
        self._graphed: Callable[..., Any] | None = None
        self._surface: tuple[Tensor, ...] = ()

    @property
    def recorded(self) -> bool:
        """Whether the CUDA graphs exist (later calls replay them)."""
        return self._graphed is not None

    def __call__(self, tree: PieceTree, tensors: list[Tensor]) -> Any:
        """The call's result through the graphs, recording them at the third call; None where this set of
        guards is not recorded (the caller replays the ops instead)."""
        if self._graphed is not None:
            return self._graphed(*tensors, *self._surface)
        if self.failed is not None:
            return None
        self.calls += 1
        if self.calls < RECORD_AT_CALL:
            return None
        reason = _ineligible(tree, tensors)
        if reason is not None:
            self.failed = reason
            return None
        surface = _read_with_grad(tree)
        n = len(tensors)

        def replay(*args: Tensor) -> Any:
            return tree.replay(list(args[:n]))  # the surface tensors are the graph's constants, read in place

        # The graphs' own input buffers: the caller's tensors stay the caller's (later inputs are copied in).
        static = tuple(t.detach().clone().requires_grad_(t.requires_grad) for t in tensors)
        try:
            graphed = make_graphed_callables(replay, (*static, *surface), num_warmup_iters=0)
        except RuntimeError as err:  # a device that refuses capture, or an op that cannot be captured
            self.failed = f"CUDA graph capture failed: {err}"
            return None
        self._graphed, self._surface = graphed, surface
        return graphed(*tensors, *surface)


def _ineligible(tree: PieceTree, tensors: list[Tensor]) -> str | None:
    """Why the graph cannot be recorded, or None."""
    if len(tree.graphs) != 1 or tree.breaks:
        return "the graph has breaks (a host read inside)"
    if not tensors:
        return "no tensor inputs"
    devices = {str(t.device) for t in tensors}
    devices.update(str(c.device) for c in tree.constants.values() if isinstance(c, Tensor))
    if len(devices) != 1 or not next(iter(devices)).startswith("cuda"):
        return f"its tensors are not on one CUDA device ({sorted(devices)})"
    out = tree.graphs[0].output
    return None if _tensor_output(out) else "its output is not a Tensor or a tuple of Tensors"


def _tensor_output(out: Any) -> bool:
    """Whether a graph's output template is one tensor (a Ref) or a tuple of them."""
    if isinstance(out, Ref):
        return True
    return isinstance(out, tuple | list) and bool(out) and all(isinstance(o, Ref) for o in out)


def _read_with_grad(tree: PieceTree) -> tuple[Tensor, ...]:
    """The tensors the graph reads in place that require a gradient (parameters, mostly), in a fixed order:
    the backward graph computes their gradients, which autograd then delivers as eager would."""
    seen: set[int] = set()
    out = []
    for value in tree.constants.values():
        if isinstance(value, Tensor) and value.requires_grad and id(value) not in seen:
            seen.add(id(value))
            out.append(value)
    return tuple(out)
