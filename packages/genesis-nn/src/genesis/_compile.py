"""genesis.compile: torch.compile's contract over genesis_autograd.compile's capture, fusion and replay.

A compiled function's first call for a set of guards runs eagerly under a capture, which records its
ops into a graph; the pointwise chains of the graph are fused (backend "inductor", the default; "eager"
and "aot_eager" replay the graph unfused). Later calls whose guards match replay the graph: the recorded
ops run in order on the new inputs, with no Python of the model in between, and parameters are read as
they are then (an optimizer's in-place update is seen).

Guards: the tensor inputs' shapes, dtypes, devices and requires_grad; the other arguments' values (by
identity when unhashable) and the arguments' structure; grad mode; autocast state; for a module, every
submodule's training flag and every parameter's identity and requires_grad. A call that matches no
graph captures a new one, up to ``genesis.compiler.config.recompile_limit`` graphs; past it the call
runs eagerly, with a warning (once). A host read (``.item()``, ``.tolist()``, data-dependent control
flow through ``bool(tensor)``) breaks the graph as torch's does: the ops before it are one graph, the
read runs eagerly, and the ops after it are another graph, chosen on replay by the value read (a value
not seen before captures the call again, up to the recompile limit of paths; genesis_autograd's
compile/pieces.py). Other breaks (a tensor made where the capture cannot follow, ``.numpy()``, a host
read after an in-place write of an input or parameter) make the call, and later calls with the same
guards, run eagerly. ``fullgraph=True`` raises ``genesis.compiler.Unsupported`` at any break, naming
the op and the line. ``dynamic`` is accepted: shapes are always specialised (a new shape recompiles).
``mode`` is checked as torch checks it; "reduce-overhead" and "max-autotune" add CUDA graphs on CUDA
(genesis/_compile_cudagraphs.py: recorded at a set of guards' third call, the outputs static buffers
as torch's), the other modes run as the default.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genesis_autograd import Tensor, is_grad_enabled
from genesis_autograd.compile import (
    MISS,
    Capture,
    Graph,
    GraphBreak,
    PieceTree,
    autocast_key,
    is_capturing,
    kernel_sources,
)

from ._compile_cudagraphs import CUDAGRAPH_MODES, GraphedReplay
from .nn.module import Module

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = ("inductor", "eager", "aot_eager")


class _Config:
    """genesis.compiler.config: ``recompile_limit`` (alias ``cache_size_limit``) graphs per compiled
    function, and ``disable`` (run every compiled function eagerly)."""

    recompile_limit: int = 8
    disable: bool = False

    @property
    def cache_size_limit(self) -> int:
        """torch._dynamo.config's older name of ``recompile_limit``."""
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value


config = _Config()
_LIVE: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()
_dumped = 0


@dataclass
class _Entry:
    tree: PieceTree | None  # None: a graph break the pieces cannot cover, the call runs eagerly
    broken: GraphBreak | None
    cudagraphs: GraphedReplay | None = None  # the CUDA-graph modes' recording of the tree


class CompiledFunction:
    """A compiled callable: a graph per set of guards, replayed; ``graphs`` and ``graph_breaks`` show
    what was captured (for inspection and tests)."""

    def __init__(
        self, fn: Callable[..., Any], module: Module | None, fullgraph: bool, fuse: bool, cudagraphs: bool = False
    ) -> None:
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._module = module
        self._fullgraph = fullgraph
        self._fuse = fuse
        self._cudagraphs = cudagraphs
        self._cache: dict[tuple, _Entry] = {}
        self._warned = False
        _LIVE.add(self)

    @property
    def graphs(self) -> list[Graph]:
        """The graphs captured so far: per set of guards, the pieces between its host reads."""
        return [g for e in self._cache.values() if e.tree is not None for g in e.tree.graphs]

    @property
    def cuda_graphs(self) -> list[GraphedReplay]:
        """The CUDA-graph modes' recordings, one per set of guards (``recorded``, or why not: ``failed``)."""
        return [e.cudagraphs for e in self._cache.values() if e.cudagraphs is not None]

    @property
    def graph_breaks(self) -> list[GraphBreak]:
        """The graph breaks met so far: what and where (host reads compiled around, and eager fallbacks)."""
        found = [b for e in self._cache.values() if e.tree is not None for b in e.tree.breaks]
        return found + [e.broken for e in self._cache.values() if e.broken is not None]

    def reset(self) -> None:
        """Forget every graph (the next call captures again)."""
        self._cache.clear()
        self._warned = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.disable or is_capturing():  # inside another's capture: its ops join that graph
            return self._fn(*args, **kwargs)
        tensors: list[Tensor] = []
        structure = _flatten((args, kwargs), tensors)
        key = (structure, _tensor_guards(tensors), is_grad_enabled(), autocast_key(), _module_guards(self._module))
        entry = self._cache.get(key)
        if entry is not None:
            if entry.tree is None:
                return self._fn(*args, **kwargs)
            if entry.cudagraphs is not None:
                out = entry.cudagraphs(entry.tree, tensors)
                if out is not None:
                    return out
            out = entry.tree.replay(tensors)
            if out is not MISS:
                return out
            if entry.tree.leaves >= config.recompile_limit:  # the pieces before the read may run twice
                self._warn()
                return self._fn(*args, **kwargs)
            return self._capture(key, tensors, args, kwargs, entry.tree)
        if len(self._cache) >= config.recompile_limit:
            self._warn()
            return self._fn(*args, **kwargs)
        return self._capture(key, tensors, args, kwargs, None)

    def _warn(self) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"genesis.compile: {getattr(self._fn, '__qualname__', self._fn)} hit "
                f"genesis.compiler.config.recompile_limit ({config.recompile_limit}); calls whose guards "
                "match none of its graphs run eagerly from now on (genesis.compiler.reset() starts over)",
                UserWarning,
                stacklevel=3,
            )

    def _capture(self, key: tuple, tensors: list[Tensor], args: tuple, kwargs: dict, tree: PieceTree | None) -> Any:
        """Run the call under a capture: a new tree of pieces for ``key``, or new pieces for ``tree``."""
        with Capture(self._fullgraph) as cap:
            cap.add_inputs(tensors)
            out = self._fn(*args, **kwargs)
            graph = cap.finish(out)
        name = getattr(self._fn, "__qualname__", "fn")
        if tree is not None:
            if graph is not None and tree.merge(graph, cap.segments):
                for piece_graph in tree.graphs:
                    _dump(name, piece_graph, None)
            return out
        if graph is None:
            self._cache[key] = _Entry(None, cap.broken)
            _dump(name, None, cap.broken)
            return out
        active, dtypes = key[3]
        one = dtypes[0] if active and len(dtypes) == 1 else None  # (device type, dtype name)
        tree = PieceTree(graph, cap.segments, self._fuse, autocast_active=bool(active), autocast=one)
        replay = GraphedReplay() if self._cudagraphs else None
        if replay is not None:
            replay.calls = 1  # this call, the capture
        self._cache[key] = _Entry(tree, None, replay)
        for piece_graph in tree.graphs:
            _dump(name, piece_graph, None)
        return out


class OptimizedModule(Module):
    """What genesis.compile returns for a module (torch's OptimizedModule): the module as ``_orig_mod``
    (its state_dict keys gain the ``_orig_mod.`` prefix, as torch's do), called through a compiled
    ``_orig_mod.__call__``; other attributes are the original module's."""

    def __init__(self, mod: Module, compiled: CompiledFunction) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        self.training = mod.training

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The original module's call, compiled."""
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | None = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """Compile ``model`` (a function or a Module) as torch.compile does: capture its ops on the first
    call, fuse pointwise chains into generated kernels, replay the graph on later calls whose guards
    match. Without ``model``, a decorator. See the module's docstring for guards, breaks and limits.

    Args:
        model: a function or an nn.Module (a module comes back as an OptimizedModule).
        fullgraph: raise genesis.compiler.Unsupported at a graph break instead of running eagerly.
        dynamic: accepted for torch's signature; shapes are specialised (a new shape recompiles).
        backend: "inductor" (fuse; the default), "eager" or "aot_eager" (replay unfused).
        mode: torch's modes: "reduce-overhead" and "max-autotune" also replay each graph, forward and
            backward, as CUDA graphs on CUDA (see genesis/_compile_cudagraphs.py); the others as the default.
        options: accepted for torch's signature (not with ``mode``).
        disable: return ``model`` unchanged.
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    backend = "inductor" if backend is None else backend
    if backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, available backends: {', '.join(_BACKENDS)}")
    if model is None:
        return functools.partial(
            compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, disable=disable
        )
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    fuse = backend == "inductor"
    cudagraphs = mode in CUDAGRAPH_MODES
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model.__call__, model, fullgraph, fuse, cudagraphs))
    return CompiledFunction(model, None, fullgraph, fuse, cudagraphs)


def compile_module_forward(module: Module, *args: Any, **kwargs: Any) -> CompiledFunction:
    """Module.compile's work: the module's own forward, compiled with the module's guards."""
    compiled = compile(type(module).forward.__get__(module), *args, **kwargs)
    if isinstance(compiled, CompiledFunction):
        compiled._module = module
    return compiled


def reset() -> None:
    """genesis.compiler.reset(): every compiled function forgets its graphs."""
    for fn in list(_LIVE):
        fn.reset()


# ------------------------------------------------------------------ guards
def _flatten(x: Any, tensors: list[Tensor]) -> Any:
    """The arguments' structure with tensors taken out (into ``tensors``), hashable: part of the guard."""
    if isinstance(x, Tensor):
        tensors.append(x)
        return Tensor
    cls = x.__class__
    if cls is tuple or cls is list:
        return (cls, tuple(_flatten(item, tensors) for item in x))
    if cls is dict:
        return (dict, tuple((k, _flatten(v, tensors)) for k, v in x.items()))
    try:
        hash(x)
    except TypeError:
        return (cls, id(x))
    return (cls, x)


def _tensor_guards(tensors: list[Tensor]) -> tuple:
    first: dict[int, int] = {}  # the same tensor passed twice is one slot of the graph: aliasing is guarded
    aliases = tuple(first.setdefault(id(t), k) for k, t in enumerate(tensors))
    return aliases, tuple((tuple(t.shape), t.dtype, str(t.device), t.requires_grad) for t in tensors)


def _module_guards(module: Module | None) -> tuple:
    """Every submodule's training flag and every parameter's identity and requires_grad, in one walk of the
    module tree (this runs at every call: plain loops over the tables, no generators)."""
    if module is None:
        return ()
    training, params = [], []
    seen: set[int] = set()
    stack = [module]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        training.append(m.training)
        for p in m._parameters.values():
            if p is not None:
                params.append((id(p), p.requires_grad))
        for child in m._modules.values():
            if child is not None:
                stack.append(child)
    return tuple(training), tuple(params)


# ------------------------------------------------------------------ GENESIS_COMPILE_DEBUG
def _dump(name: str, graph: Graph | None, broken: GraphBreak | None) -> None:
    """Print (GENESIS_COMPILE_DEBUG=1) or write to a directory (=<path>) the graph and its kernels."""
    target = os.environ.get("GENESIS_COMPILE_DEBUG", "")
    if target in ("", "0"):
        return
    global _dumped
    _dumped += 1
    texts = {f"graph_{_dumped:03d}_{name}.txt": broken.message() if graph is None else graph.describe()}  # type: ignore[union-attr]
    if graph is not None:
        texts.update({f"{key}.py": source for key, source in kernel_sources(graph).items()})
    if target == "1":
        for file, text in texts.items():
            print(f"===== genesis.compile: {file}\n{text}", file=sys.stderr)
        return
    folder = Path(target)
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in texts.items():
        (folder / file.replace("<", "").replace(">", "")).write_text(text + "\n")
