"""The launch path: compile once per specialisation, then launch with almost no Python.

``kernel[grid](...)`` costs ~14.5 us of host time on an H200: Triton binds the
arguments, specialises every one of them, hashes the result, asks torch for the
current device and stream, checks globals and builds launch metadata on *every*
call. Our launchers already know everything that changes the compiled code (the
dtypes, the constexpr flags, whether the pointers are 16-byte aligned), so each
one builds a small key tuple itself and :class:`Kernel` maps it to a ready
launch function that calls Triton's C launcher directly, on our stream, with
pointers passed as plain ints (which skips ``cuPointerGetAttribute`` too); launch_abi.py
knows each supported Triton release's calling convention for that launcher.

Specialisation is explicit: integer arguments (sizes, strides, scalars) are never
specialised by value, so a new shape never recompiles; their type (i32 or i64)
is chosen by the launcher from the largest offset it can reach.

Under ``TRITON_INTERPRET=1`` (CI without a GPU) the same key maps to a function
that calls ``kernel[grid](...)`` with pointers wrapped as :class:`HostPtr`, so the
kernels run on host memory through Triton's numpy interpreter.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from genesis_storage import graphs
from genesis_storage.device import current_device

from . import driver_launch
from .buffer import dtype_info
from .launch_abi import Grid, LaunchFn, make_launch, scratch_source

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# Triton signature type -> dtype name, for wrapping host pointers in the interpreter.
_TRITON_TO_NAME = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "i1": "bool",
}


_NP_OF_TRITON = {
    "fp32": np.float32,
    "fp16": np.float16,
    "fp64": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "int1": np.bool_,
    "uint32": np.uint32,
    "uint64": np.uint64,
}


class HostPtr:
    """A pointer the interpreter accepts: ``data_ptr()`` plus a ``dtype`` whose str is a name.

    The extra methods satisfy the interpreter's host-copy logic, which then passes
    host memory through unchanged.
    """

    __slots__ = ("_addr", "dtype")

    def __init__(self, addr: int, dtype: str) -> None:
        self._addr = addr
        self.dtype = dtype

    def data_ptr(self) -> int:
        return self._addr

    def untyped_storage(self) -> HostPtr:
        return self

    def cpu(self) -> HostPtr:
        return self

    def new_empty(self, *args: Any, **kwargs: Any) -> HostPtr:
        return HostPtr(0, self.dtype)

    def set_(self, storage: HostPtr, *args: Any) -> HostPtr:
        self._addr = storage._addr
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple:
        return ()

    def stride(self) -> tuple:
        return ()

    def copy_(self, other: Any) -> HostPtr:
        return self


class PlanTable(dict):
    """A launcher's plans: signature (layouts, dtypes, alignment, flags) -> what its launches need but
    the addresses. A training or decode loop meets a handful of signatures, so a full table is dropped
    whole rather than tracked per entry."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = 1024) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, plan: Any) -> Any:
        """Keep ``plan`` under ``key`` (forgetting every plan first when full) and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = plan
        return plan


class Kernel:
    """A Triton JIT function plus its compiled specialisations, keyed by the launcher's own key."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.arg_names: list[str] = list(fn.arg_names)
        # Read constexpr-ness off the annotations, which works for both JITFunction and the
        # interpreter's InterpretedFunction.
        params = inspect.signature(fn.fn).parameters.values()
        self.constexpr_names = {p.name for p in params if "constexpr" in str(p.annotation)}
        self.cache: dict[Any, LaunchFn] = {}
        self._lock = threading.Lock()

    def build(
        self,
        key: Any,
        types: dict[str, str],
        constexprs: dict[str, Any],
        aligned: Iterable[str] = (),
        num_warps: int = 4,
        num_stages: int = 3,
    ) -> LaunchFn:
        """Compile (or, under the interpreter, prepare) one specialisation and cache it under ``key``.

        ``types`` gives every non-constexpr argument's Triton type ("*fp32", "i32", "fp64", ...);
        ``aligned`` names the pointer arguments known to be 16-byte aligned.
        """
        with self._lock:
            launch = self.cache.get(key)
            if launch is None:
                missing = [n for n in self.arg_names if n not in types and n not in constexprs]
                if missing:
                    raise TypeError(f"{self.fn.__name__}: no type for arguments {missing}")
                if INTERPRET:
                    launch = self._interpreted(types)
                else:
                    launch = self._compiled(types, constexprs, set(aligned), num_warps, num_stages)
                self.cache[key] = launch
            return launch

    def _interpreted(self, types: dict[str, str]) -> LaunchFn:
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        fn = self.fn
        wrap = [
            (i, _TRITON_TO_NAME[types[n][1:]]) for i, n in enumerate(self.arg_names) if types.get(n, "").startswith("*")
        ]
        # Scalars become typed interpreter tensors, so they have the declared type
        # (the interpreter would otherwise make every Python float an fp32).
        scalars = [
            (i, tl.str_to_ty(types[n], None))
            for i, n in enumerate(self.arg_names)
            if n in types and not types[n].startswith("*")
        ]

        def launch(grid: Grid, stream: int, args: tuple) -> None:
            if grid[0] * grid[1] * grid[2] == 0:
                return
            a = list(args)
            for i, dt in wrap:
                a[i] = HostPtr(a[i], dt)
            for i, ty in scalars:
                np_dtype = _NP_OF_TRITON[ty.name]
                a[i] = tl.tensor(TensorHandle(np.array(a[i], dtype=np_dtype), ty), ty)
            fn[grid](*a)

        return launch

    def _compiled(
        self, types: dict[str, str], constexprs: dict[str, Any], aligned: set[str], num_warps: int, num_stages: int
    ) -> LaunchFn:
        import triton
        from triton.compiler import ASTSource, compile
        from triton.runtime.driver import driver

        signature = {n: ("constexpr" if n in self.constexpr_names else types[n]) for n in self.arg_names}
        consts = {(self.arg_names.index(n),): v for n, v in constexprs.items()}
        attrs = divisibility_attrs(self.arg_names, aligned)
        src = ASTSource(self.fn, signature, consts, attrs)
        target = driver.active.get_current_target()
        ck = compile(src, target=target, options={"num_warps": num_warps, "num_stages": num_stages})
        runner = ck.run  # loads the module into the current context
        launch = None
        needs_scratch = getattr(runner, "global_scratch_size", 0) > 0
        if driver_launch.eligible(runner) and (scratch is not None or not needs_scratch):
            arg_types = ["constexpr" if n in self.constexpr_names else types[n] for n in self.arg_names]
            launch = driver_launch.driver_launch(
                ck.function,
                arg_types,
                ck.metadata.num_warps,
                ck.metadata.shared,
                scratch_source(runner, scratch),
                needs_scratch,
                lambda: cuda().ensure_context(),
            )
        if launch is None:
            launch = make_launch(runner, ck.function, ck.packed_metadata, triton.__version__, scratch)
        # Bytes of the stream's scratch each program takes for Triton's global scratch (device-side
        # tensor descriptors): a launcher that also keeps data in scratch places it past them.
        launch.global_scratch = getattr(runner, "global_scratch_size", 0) * getattr(runner, "num_ctas", 1)  # type: ignore[union-attr]
        return launch


def divisibility_attrs(arg_names: list[str], aligned: Iterable[str]) -> dict[tuple[int], list[list[Any]]]:
    """Triton's attribute dict marking the ``aligned`` arguments 16-byte divisible, in argument order.

    The order matters beyond the compiler: Triton's on-disk cache key includes ``str(attrs)``, and
    built in the iteration order of a set of names (which string-hash salting changes from one process
    to the next) it made every new process miss the cache and recompile each kernel."""
    return {(i,): [["tt.divisibility", 16]] for i in sorted(arg_names.index(n) for n in aligned)}


def ptr_type(dtype: str) -> str:
    return "*" + dtype_info(dtype).triton


def index_type(*extents: int) -> str:
    """i32 when every offset a kernel forms stays below 2^31, else i64."""
    return "i64" if max(extents, default=0) >= 2**31 - 4096 else "i32"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


# ----------------------------------------------------------------------------------------------
# Scratch memory and error flags.
#
# A few kernels need a little device memory of their own: split reductions keep partial
# results, and indexing kernels raise an out-of-bounds flag. This layer has no allocator, so
# it keeps one growing scratch block per stream (kernels on one stream run in order, so reuse
# is safe) taken straight from the driver on the GPU, or from numpy under the interpreter.
# ----------------------------------------------------------------------------------------------


class _Cuda:
    """The handful of CUDA driver calls this layer needs, through ctypes."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        for name in (
            "cuMemAlloc_v2",
            "cuMemcpyDtoHAsync_v2",
            "cuStreamSynchronize",
            "cuCtxGetCurrent",
            "cuInit",
            "cuDeviceGet",
            "cuDevicePrimaryCtxRetain",
            "cuCtxSetCurrent",
            "cuDeviceGetAttribute",
            "cuCtxGetDevice",
            "cuMemHostAlloc",
            "cuMemHostGetDevicePointer_v2",
            "cuMemFreeHost",
            "cuThreadExchangeStreamCaptureMode",
            "cuMemFree_v2",
        ):
            getattr(self.lib, name).restype = ctypes.c_int

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"CUDA driver call {what} failed with status {status}")

    def ensure_context(self) -> int:
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:  # same policy as Triton's launcher: the primary context of device 0
            self.check(self.lib.cuInit(0), "cuInit")
            dev = ctypes.c_int()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx.value or 0  # c_void_p reads NULL as None; set and checked above

    def _capture_mode(self, mode: int) -> int:
        """Set this thread's stream-capture mode; returns the previous one (0 global, 1 thread-local, 2 relaxed)."""
        m = ctypes.c_int(mode)
        self.check(self.lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(m)), "cuThreadExchangeStreamCaptureMode")
        return m.value

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        # Allocating is a "potentially unsafe" call that a global-mode capture refuses; relaxed mode
        # allows it (as torch's allocator does): the memory is not part of the captured work.
        prev = self._capture_mode(2)
        try:
            self.check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        finally:
            self._capture_mode(prev)
        return int(ptr.value)

    def mapped(self, nbytes: int) -> tuple[int, int]:
        """Pinned host memory the device can address: (host pointer, device pointer)."""
        host, dev = ctypes.c_void_p(), ctypes.c_uint64()
        prev = self._capture_mode(2)  # a graph's error flags are made while it captures: see malloc
        try:
            # CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
            self.check(
                self.lib.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(nbytes), ctypes.c_uint(0x3)),
                "cuMemHostAlloc",
            )
        finally:
            self._capture_mode(prev)
        self.check(
            self.lib.cuMemHostGetDevicePointer_v2(ctypes.byref(dev), host, ctypes.c_uint(0)),
            "cuMemHostGetDevicePointer",
        )
        ctypes.memset(host, 0, nbytes)
        return host.value or 0, int(dev.value)  # c_void_p reads NULL as None

    def free_host(self, host: int) -> None:
        """Give back pinned host memory from :meth:`mapped`."""
        self.check(self.lib.cuMemFreeHost(ctypes.c_void_p(host)), "cuMemFreeHost")

    def synchronize(self, stream: int) -> None:
        # The last line of defence: a launcher that waits must have refused a capture already
        # (capture.forbid_readback, naming its op); a synchronise would invalidate the capture.
        _refuse_under_capture("cuStreamSynchronize")
        self.check(self.lib.cuStreamSynchronize(ctypes.c_void_p(stream)), "cuStreamSynchronize")

    def read(self, ptr: int, nbytes: int, stream: int) -> bytes:
        """Copy ``nbytes`` at device ``ptr`` to the host, in order on ``stream``, and wait for it."""
        _refuse_under_capture("cuMemcpyDtoHAsync + cuStreamSynchronize")
        host, _ = _staging(nbytes)
        self.check(
            self.lib.cuMemcpyDtoHAsync_v2(
                ctypes.c_void_p(host), ctypes.c_uint64(ptr), ctypes.c_size_t(nbytes), ctypes.c_void_p(stream)
            ),
            "cuMemcpyDtoHAsync",
        )
        self.synchronize(stream)
        return ctypes.string_at(host, nbytes)

    def sm_count(self) -> int:
        dev, count = ctypes.c_int(), ctypes.c_int()
        self.ensure_context()
        self.check(self.lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(count), 16, dev), "cuDeviceGetAttribute")
        return int(count.value)  # 16 = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT


def _refuse_under_capture(call: str) -> None:
    if graphs.is_current_stream_capturing():
        raise RuntimeError(f"a host synchronisation cannot be captured: it needs a host read-back ({call})")


_cuda: _Cuda | None = None
_staging_block = threading.local()  # per thread: (host, device, nbytes) of pinned memory for read-backs


def _staging(nbytes: int) -> tuple[int, int]:
    """This thread's pinned, device-mapped block of at least ``nbytes`` (never freed: a few bytes each)."""
    block = getattr(_staging_block, "block", None)
    if block is None or block[2] < nbytes:
        host, dev = cuda().mapped(max(256, next_pow2(nbytes)))
        block = _staging_block.block = (host, dev, max(256, next_pow2(nbytes)))
    return block[0], block[1]


# (device, stream) -> (ptr, nbytes, keep-alive). The device is genesis_storage's current device of the
# thread, whose primary context its set_device made current (kernels launch in the current context):
# a dict key read per launch, where asking the driver for the context (cuCtxGetCurrent through
# ctypes) cost a call per launch. A stream handle alone is not a key: 0 (the legacy default stream)
# names one stream per device.
_scratch: dict[tuple[int, int], tuple[int, int, Any]] = {}
_sm_count: int | None = None


def cuda() -> _Cuda:
    global _cuda
    if _cuda is None:
        _cuda = _Cuda()
    return _cuda


def sm_count() -> int:
    """Streaming multiprocessors on the current device (a fixed small number under the interpreter)."""
    global _sm_count
    if _sm_count is None:
        _sm_count = 4 if INTERPRET else cuda().sm_count()
    return _sm_count


def scratch(nbytes: int, stream: int) -> int:
    """Address of at least ``nbytes`` of scratch memory private to ``stream``; 256-byte aligned.

    Valid until the next call for the same stream with a larger size; kernels on one
    stream are ordered, so a launcher may use it for the kernels it enqueues.
    """
    nbytes = max(256, nbytes)
    if not INTERPRET and graphs.is_current_stream_capturing():
        return _graph_scratch(nbytes)
    key = (current_device(), stream)
    entry = _scratch.get(key)
    if entry is not None and entry[1] >= nbytes:
        return entry[0]
    size = next_pow2(nbytes)
    if INTERPRET:
        host = np.zeros(size // 8 + 32, dtype=np.int64)
        ptr = (host.ctypes.data + 255) // 256 * 256
        # The old block is kept alive too: kernels queued on the stream may still read it.
        _scratch[key] = (ptr, size, (host, entry))
    else:
        cuda().ensure_context()  # a thread that has made no driver call yet has no context
        ptr = cuda().malloc(size)  # never freed: a handful of small blocks per process
        _scratch[key] = (ptr, size, entry)
    return ptr


class _GraphScratch:
    """A device block one CUDA graph's kernels use as scratch; freed when the graph lets it go."""

    __slots__ = ("__weakref__", "nbytes", "ptr")

    def __init__(self, nbytes: int) -> None:
        self.ptr = cuda().malloc(nbytes)  # relaxed capture mode: allowed while the graph captures
        self.nbytes = nbytes

    def __del__(self) -> None:
        # The graph drops what it keeps alive only once the device is idle and no capture runs.
        if getattr(self, "ptr", None) and _cuda is not None:
            try:
                _cuda.lib.cuMemFree_v2(ctypes.c_uint64(self.ptr))
            except Exception:
                pass


def _graph_scratch(nbytes: int) -> int:
    """Scratch for a kernel being captured: owned by the graph.

    The graph's kernels read it at every replay, on whatever stream replays them, possibly while
    eager work uses the stream's own scratch; so each graph gets a block of its own, kept as long
    as it lives. Kernels of one capture are ordered on its stream and share its largest block."""
    graph = graphs.current_capture()
    ref = _graph_scratch_blocks.get(graph)
    held = ref() if ref is not None else None
    if held is not None and held.nbytes >= nbytes:
        return held.ptr
    block = _GraphScratch(next_pow2(nbytes))
    graph.keep_alive(block)  # type: ignore[union-attr]  # the graph alone owns it (reset drops it)
    _graph_scratch_blocks[graph] = weakref.ref(block)
    return block.ptr


# graph -> a weak reference to its largest scratch block (owned by the graph through keep_alive)
_graph_scratch_blocks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def read_int32(ptr: int, count: int, stream: int) -> list[int]:
    """Wait for ``stream`` and read ``count`` int32 values back to the host."""
    if INTERPRET:
        raw = ctypes.string_at(ptr, 4 * count)
    else:
        raw = cuda().read(ptr, 4 * count, stream)
    return np.frombuffer(raw, dtype=np.int32).tolist()
