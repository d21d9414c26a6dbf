"""Loading generated kernels and launching them: :func:`fused_pointwise`.

A program's source (source.py) is written once per (program, layout) to a file in the cache directory
(``$GENESIS_CODEGEN_CACHE``, else ``~/.cache/genesis/codegen``), named by the program's hash, and
imported from there: Triton reads a kernel's source through ``inspect``, so it must live in a file,
and the file is also the dump a reader opens to see what runs. Each loaded kernel is a
:class:`runtime.Kernel`, which compiles one specialisation per (operand dtypes, compute dtype, index
type, alignment) and then launches with a plain argument tuple (under TRITON_INTERPRET=1 the same key
runs through the interpreter). ``STATS`` counts sources written and specialisations built, so a test
can see that a second call compiles nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..buffer import INT32_LIMIT, Buffer, BufferLike, dtype_info, numel
from ..elementwise import launch_config
from ..runtime import Kernel, PlanTable, cdiv, ptr_type
from ..strided import layout
from .ir import Program
from .source import kernel_source

STATS = {"sources": 0, "builds": 0}
_kernels: dict[tuple[str, int | None], Kernel] = {}
_lock = threading.Lock()
_STRIDED_BLOCK = 1024
_DENSE_INT64 = INT32_LIMIT - 65536  # flat indices at or past this need int64 (runtime.index_type's bound)


def cache_dir() -> Path:
    """Where generated sources are written (created on first use)."""
    root = os.environ.get("GENESIS_CODEGEN_CACHE") or os.path.join(Path.home(), ".cache", "genesis", "codegen")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_kernel(program: Program, rank: int | None) -> Kernel:
    """The Kernel of ``program`` for a dense (None) or rank-``rank`` strided layout, generated on first use."""
    key = (program.key, rank)
    found = _kernels.get(key)
    if found is not None:
        return found
    with _lock:
        found = _kernels.get(key)
        if found is None:
            name = f"pointwise_{program.key}_{'dense' if rank is None else f'rank{rank}'}"
            path = cache_dir() / f"{name}.py"
            source = kernel_source(program, rank)
            if not path.exists() or path.read_text() != source:
                # Written whole, then renamed: another process importing it never reads half a file.
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(source)
                os.replace(tmp, path)
            STATS["sources"] += 1
            spec = importlib.util.spec_from_file_location(f"genesis_codegen_{name}", path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import the generated kernel {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            found = _kernels[key] = Kernel(module.pointwise_kernel)
    return found


def generated_source(program: Program, rank: int | None = None) -> str:
    """The source :func:`fused_pointwise` runs for ``program`` (dense layout by default), for reading."""
    return kernel_source(program, rank)


def _expand(b: BufferLike, shape: tuple[int, ...], what: str) -> BufferLike:
    """``b`` broadcast to ``shape`` (stride 0 on new and size-1 dims); ValueError when it does not fit."""
    bshape = tuple(b.shape)
    if bshape == shape:
        return b
    if len(bshape) > len(shape):
        raise ValueError(f"fused_pointwise: {what} of shape {bshape} has more dims than the outputs' {shape}")
    pad = len(shape) - len(bshape)
    strides = [0] * pad
    for d, (size, stride) in enumerate(zip(bshape, b.strides)):
        target = shape[pad + d]
        if size == target:
            strides.append(stride)
        elif size == 1:
            strides.append(0)
        else:
            raise ValueError(f"fused_pointwise: {what} of shape {bshape} does not broadcast to the outputs' {shape}")
    return Buffer(b.ptr, shape, tuple(strides), b.dtype)


def _dense(bufs: Sequence[BufferLike], shape: tuple[int, ...]) -> bool:
    want, expected = [], 1
    for size in reversed(shape):
        want.append(expected)
        expected *= size
    strides = tuple(reversed(want))
    return all(tuple(b.strides) == strides or numel(shape) <= 1 for b in bufs)


def _scalar_values(program: Program, scalars: Sequence[float] | Mapping[str, float]) -> list[float]:
    if isinstance(scalars, Mapping):
        unknown = set(scalars) - set(program.scalars)
        missing = [s for s in program.scalars if s not in scalars]
        if unknown or missing:
            raise ValueError(
                f"fused_pointwise: the program's scalars are {list(program.scalars)}; "
                f"missing {missing}, unknown {sorted(unknown)}"
            )
        return [float(scalars[s]) for s in program.scalars]
    if len(scalars) != len(program.scalars):
        raise ValueError(
            f"fused_pointwise: the program takes {len(program.scalars)} scalar(s) {list(program.scalars)}, "
            f"got {len(scalars)}"
        )
    return [float(v) for v in scalars]


class _Plan:
    """What one (program, operand layouts) needs at every launch, worked out at its first: the loaded kernel,
    the compiled specialisations by pointer alignment, the grid, the trailing size / stride arguments.
    Only the operands' addresses (and their alignment) are read per launch."""

    __slots__ = ("block", "cdt", "dtypes", "extra", "int64", "kernel", "launches", "n", "rank", "rng")

    def __init__(self, program: Program, inputs: Sequence[BufferLike], outputs: Sequence[BufferLike]) -> None:
        shape = tuple(outputs[0].shape)
        for j, o in enumerate(outputs):
            if tuple(o.shape) != shape:
                raise ValueError(f"fused_pointwise: output {j} has shape {tuple(o.shape)}, output 0 {shape}")
        ins = [_expand(b, shape, f"input {k}") for k, b in enumerate(inputs)]
        ops = [*ins, *outputs]
        for b in ops:
            dtype_info(b.dtype)  # TypeError for an unknown dtype
        self.n = n = numel(shape)
        self.dtypes = tuple(b.dtype for b in ops)
        self.cdt = "float64" if "float64" in self.dtypes else "float32"
        self.extra: tuple[int, ...] = ()
        self.rank: int | None = None
        self.rng = bool(program.dropout_slots)
        self.launches: dict[tuple, Any] = {}
        if n == 0:
            self.int64, self.block, self.kernel = False, 1, None
            return
        if _dense(ops, shape):
            self.int64 = n >= _DENSE_INT64
            self.block = launch_config(max(dtype_info(b.dtype).itemsize for b in ops), True)[0]
        else:
            # The output's strides first (layout orders dims by them); dropout needs the logical order kept.
            lay = layout(shape, [b.strides for b in (*outputs, *ins)], reorder=not program.dropout_slots)
            self.rank, self.int64, self.block = lay.rank, lay.int64, _STRIDED_BLOCK
            strides = [*lay.strides[len(outputs) :], *lay.strides[: len(outputs)]]  # back to inputs, outputs
            self.extra = (*lay.sizes[: lay.rank - 1], *[s for st in strides for s in st[: lay.rank]])
        self.kernel = load_kernel(program, self.rank)


_plans = PlanTable(4096)  # (program, layout) -> plan


def fused_pointwise(
    program: Program,
    inputs: Sequence[BufferLike],
    outputs: Sequence[BufferLike],
    scalars: Sequence[float] | Mapping[str, float] = (),
    stream: int = 0,
    *,
    seed: int = 0,
    offset: int = 0,
    rng_ptr: int = 0,
) -> None:
    """Run ``program`` over ``inputs`` (broadcast to the outputs' shape) into ``outputs``, one kernel.

    ``scalars``: the program's scalars, in order or by name. A program with dropout draws element ``i``
    of its dropout slot ``k`` from Philox counter ``offset + k * numel + i`` under ``seed`` (``i`` the
    row-major logical index), so the caller reserves ``program.dropout_slots * numel`` counters; with
    ``rng_ptr`` (CUDA-graph capture) seed and base offset are read from that device int64[2]."""
    if len(inputs) != program.n_inputs:
        raise ValueError(f"fused_pointwise: the program takes {program.n_inputs} input(s), got {len(inputs)}")
    if len(outputs) != len(program.outputs):
        raise ValueError(f"fused_pointwise: the program has {len(program.outputs)} output(s), got {len(outputs)}")
    values = _scalar_values(program, scalars) if scalars or program.scalars else []
    # Runs for every fused op (genesis.compile replays one per fused chain): the layout's plan is looked up
    # by (program, shapes, strides, dtypes), and a launch reads only the addresses.
    sig: list = [program.key]
    ptrs: list[int] = []
    for b in inputs:
        sig.append((tuple(b.shape), tuple(b.strides), b.dtype))
        ptrs.append(b.ptr)
    for b in outputs:
        sig.append((tuple(b.shape), tuple(b.strides), b.dtype))
        ptrs.append(b.ptr)
    key = tuple(sig)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans.put(key, _Plan(program, inputs, outputs))
    if plan.n == 0:
        return
    aligned = []
    for k, ptr in enumerate(ptrs):
        if ptr % 16 == 0:
            aligned.append(k)
    spec = (tuple(aligned), rng_ptr != 0)
    launch: Any = plan.launches.get(spec)
    if launch is None:
        assert plan.kernel is not None
        build_key = (plan.dtypes, plan.cdt, plan.int64, rng_ptr != 0, spec[0], plan.block)
        launch = plan.kernel.cache.get(build_key)
        if launch is None:
            launch = _build(plan.kernel, build_key, program, plan.dtypes, plan.cdt, plan.int64, rng_ptr != 0,
                            spec[0], plan.rank, plan.block)  # fmt: skip
        plan.launches[spec] = launch
    rng: tuple = (seed & (2**63 - 1), offset, rng_ptr) if plan.rng else ()
    launch((cdiv(plan.n, plan.block), 1, 1), stream, (*ptrs, *values, plan.n, *rng, *plan.extra, *launch._consts))


def _build(
    kernel: Kernel,
    key: tuple,
    program: Program,
    dtypes: Sequence[str],
    cdt: str,
    int64: bool,
    seed_ptr: bool,
    aligned: tuple[int, ...],
    rank: int | None,
    block: int,
) -> Any:
    """Compile (or prepare, under the interpreter) one specialisation of a generated kernel."""
    it = "i64" if int64 else "i32"
    names = [f"in{k}" for k in range(program.n_inputs)] + [f"out{j}" for j in range(len(program.outputs))]
    types = {name: ptr_type(dtype) for name, dtype in zip(names, dtypes)}
    types.update({f"s{k}": dtype_info(cdt).triton for k in range(len(program.scalars))})
    types["n"] = it
    if program.dropout_slots:
        types.update(seed="i64", offset="i64", rng="*i64" if seed_ptr else "i64")
    if rank is not None:
        types.update({f"S{d}": it for d in range(1, rank)})
        types.update({f"{name}_st{d}": it for name in names for d in range(rank)})
    consts = dict(CDT=dtype_info(cdt).tl, INT64=int64, SEED_PTR=seed_ptr, BLOCK=block)
    launch = kernel.build(key, types, consts, [names[k] for k in aligned], num_warps=4)
    launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
    STATS["builds"] += 1
    return launch
