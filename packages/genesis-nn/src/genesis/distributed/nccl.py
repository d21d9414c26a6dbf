"""The NCCL backend: collectives on genesis cuda tensors through CuPy's NCCL binding (cupy.cuda.nccl).

Each process group gets one communicator, made on first use on the device of the first tensor: rank 0
of the group draws NCCL's unique id, the others read it from torch.distributed's store (the same
TCPStore / FileStore the rendezvous made). Every collective runs on the communicator's own stream:
it first waits for an event recorded on genesis' current stream (so it reads finished inputs), and
records an event when it is done, which Work.wait() makes the current stream wait for (the host does
not block, as with torch's NCCL). The Work keeps the tensors alive until then. A watchdog thread
(watchdog.py) aborts the communicator when a collective outlives the group's timeout (a dead or stalled
peer) and the next collective or wait() on the group raises a RuntimeError naming it. The abort runs
ncclCommAbort through ctypes in a thread of its own, without the GIL (CuPy's abort() holds it, and
ncclCommAbort may wait for the peers to abort too), and sets a key in the store that makes the peers'
watchdogs abort theirs.

Runs only on a machine with GPUs and CuPy (tests/nn/test_nn_distributed_nccl.py, the 2-GPU machine).
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from datetime import timedelta
from typing import Any, NoReturn

from genesis_autograd import Tensor
from genesis_autograd.cuda import Event, Stream, current_stream, device_guard

from .reduce_op import ReduceOp
from .watchdog import Watchdog
from .work import Work

# NCCL's ABI values (nccl.h: ncclRedOp_t, ncclDataType_t), stable since NCCL 2.10 (AVG: 2.10, bfloat16: 2.10).
_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.AVG: 4}
_DTYPES = {
    "int8": 0,
    "uint8": 1,
    "bool": 1,  # one byte each; SUM / MAX / MIN of 0/1 bytes
    "int32": 2,
    "int64": 4,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}


_NO_NCCL = "Distributed package doesn't have NCCL built in (genesis uses CuPy's NCCL binding: pip install cupy-cuda13x)"


def _preload_pip_nccl() -> str | None:
    """Load libnccl.so.2 from the nvidia-nccl-cu* wheel (torch's dependency) into the global namespace, so
    that CuPy's binding, which links against that soname, resolves to it; the path, or None if absent."""
    import ctypes
    import glob

    for root in sys.path:
        for path in sorted(glob.glob(os.path.join(root, "nvidia", "**", "libnccl.so.2"), recursive=True)):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return path
    return None


def nccl_module() -> Any:
    """CuPy's NCCL binding, or torch's error when it cannot be used.

    ``import cupy.cuda.nccl`` succeeds even where libnccl could not be loaded: CuPy then only sets
    ``available = False`` and warns, and every name is missing. Before giving up, load the libnccl of
    the nvidia-nccl wheel (the one torch uses) and import the binding again."""
    try:
        import warnings

        with warnings.catch_warnings():  # CuPy's "nccl library could not be loaded" (handled below)
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
    except ImportError as e:  # torch's message for a build without NCCL
        raise RuntimeError(_NO_NCCL) from e
    if getattr(nccl, "available", True) and hasattr(nccl, "NcclCommunicator"):
        return nccl
    path = _preload_pip_nccl()
    try:
        from cupy_backends.cuda.libs import nccl as binding  # type: ignore[import-not-found]
    except ImportError as e:
        where = f"; {path} was loaded, yet" if path else "; no nvidia-nccl wheel found either, and"
        raise RuntimeError(f"{_NO_NCCL}{where} CuPy's binding cannot load: {e}") from e
    return binding


def _index(tensor: Tensor) -> int:
    """A cuda tensor's device index (always set for cuda; typed optional because cpu has none)."""
    index = tensor.device.index
    if index is None:
        raise RuntimeError(f"NCCL needs cuda tensors, got one on {tensor.device}")
    return index


def _buffer(tensor: Tensor, device: int) -> tuple[int, int, int]:
    """(pointer, element count, NCCL dtype) of a contiguous cuda tensor on ``device``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a genesis Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cuda":
        raise RuntimeError(f"the nccl backend works on cuda tensors, got one on {tensor.device}")
    if _index(tensor) != device:
        raise RuntimeError(f"this process group's communicator is on cuda:{device}, the tensor on {tensor.device}")
    if not tensor.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    code = _DTYPES.get(tensor.dtype.name)
    if code is None:
        raise TypeError(f"NCCL has no type for {tensor.dtype}")
    return tensor.data_ptr(), tensor.numel(), code


def _loaded_libnccl() -> Any:
    """ctypes' handle on the libnccl this process has loaded (CuPy's), or None: the one path that
    /proc/self/maps shows (dlopen of a loaded path returns that very library, not a second copy)."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libnccl.so" in line and "/" in line}
    except OSError:
        return None
    if len(paths) != 1:
        return None
    try:
        return ctypes.CDLL(paths.pop())
    except OSError:
        return None


def _raw_communicator(comm: Any) -> tuple[Any, int] | None:
    """(libnccl, the ncclComm_t) of CuPy's NcclCommunicator, or None where they cannot be found safely.

    CuPy's communicator is a Cython object whose only field, after the object header and the
    vtable pointer, is the ncclComm_t; it does not publish it. Its ``abort()`` calls ncclCommAbort
    holding the GIL, and ncclCommAbort may block until every peer has aborted too (NCCL >= 2.19 frees
    memory shared within a node): the whole process, its main thread included, would hang with it.
    ctypes releases the GIL around the call. The word read is accepted only if NCCL itself, asked about
    it, gives this communicator's rank, size and device."""
    import ctypes

    lib = _loaded_libnccl()
    if lib is None:
        return None
    try:
        word = ctypes.c_void_p.from_address(id(comm) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
        expected = (comm.rank_id(), comm.size(), comm.device_id())
    except Exception:
        return None
    if not word or word % 8:
        return None
    got = []
    for name in ("ncclCommUserRank", "ncclCommCount", "ncclCommCuDevice"):
        value = ctypes.c_int(-1)
        if getattr(lib, name)(ctypes.c_void_p(word), ctypes.byref(value)) != 0:
            return None
        got.append(value.value)
    return (lib, word) if tuple(got) == expected else None


class NcclBackend:
    """One NCCL communicator over a process group's ranks; ``src`` / ``dst`` are global ranks."""

    def __init__(self, store: Any, key: str, ranks: list[int], rank: int, timeout: float = 600.0) -> None:
        self._store, self._key = store, key  # a torch.distributed Store, and this group's key in it
        self.ranks, self.rank = ranks, rank  # the group's global ranks; this process' global rank
        self.timeout = timeout  # seconds a collective may run before the watchdog aborts the communicator
        self._comm: Any = None
        self._watchdog: Watchdog | None = None
        self._error: str | None = None
        self._device = -1
        self._stream: Stream | None = None
        self._ready: Event | None = None  # re-recorded for every collective (a stream wait reads it at once)
        self._aborter: threading.Thread | None = None  # the thread running ncclCommAbort, once aborted
        self._peer_checked = 0.0

    # ------------------------------------------------------------- communicator
    def _connect(self, device: int) -> None:
        nccl = nccl_module()
        import cupy

        rank_in_group = self.ranks.index(self.rank)
        self._await_peers(rank_in_group)
        if rank_in_group:
            uid = pickle.loads(self._store.get(self._key))  # rank 0 sets it right after the others joined
        else:
            uid = nccl.get_unique_id()
            self._store.set(self._key, pickle.dumps(uid))
        # ncclCommInitRank binds the communicator to the runtime's current device, which CuPy's guard sets.
        with cupy.cuda.Device(device):
            self._comm = nccl.NcclCommunicator(len(self.ranks), uid, rank_in_group)
        self._device = device
        with device_guard(device):
            self._stream = Stream(device)
        self._watchdog = Watchdog(
            self.timeout, self._on_failure, async_error=self._comm.check_async_error, peer_error=self._peer_error
        )

    def _await_peers(self, rank_in_group: int) -> None:
        """Wait, within the group's timeout, until every rank of the group is about to make the communicator.

        ncclCommInitRank blocks, holding the GIL (CuPy does not release it), until all ranks have joined,
        with no timeout of its own: a peer that died or never came would hang this process for good, the
        watchdog included. Each rank announces itself in the store and waits for the others there first,
        so a missing peer is an error after the group's timeout instead."""
        self._store.set(f"{self._key}/joined/{rank_in_group}", b"1")
        keys = [f"{self._key}/joined/{r}" for r in range(len(self.ranks))]
        start = time.monotonic()
        try:
            self._store.wait(keys, timedelta(seconds=self.timeout))
        except Exception as e:  # the store's timeout (a DistStoreError, torch's RuntimeError subclass)
            missing = [r for r, k in enumerate(keys) if not self._store.check([k])]
            raise RuntimeError(
                f"genesis.distributed: NCCL communicator setup on rank {self.rank} (group ranks {self.ranks}): "
                f"group ranks {missing} did not join within the group's timeout ({self.timeout:g} s; waited "
                f"{time.monotonic() - start:.1f} s): a peer died or did not reach its first collective"
            ) from e

    def _on_failure(self, message: str) -> None:
        """The watchdog's verdict (its thread): fail the group at once, tell the peers, abort.

        The error is set first, so that the main thread raises it at its next collective or wait() even
        while ncclCommAbort is still running (it may wait for the peers to abort too); a key in the
        store tells the peers' watchdogs to abort theirs (torch's watchdog does the same)."""
        self._error = (
            f"genesis.distributed: NCCL {message}, on rank {self.rank} (group ranks {self.ranks}); "
            "the communicator was aborted"
        )
        print(self._error, file=sys.stderr, flush=True)
        if self._store is not None and not message.startswith("peer "):
            try:
                self._store.set(f"{self._key}/aborted", f"rank {self.rank}: {message}".encode())
            except Exception:  # the store's host died with its rank: the peers time out by themselves
                pass
        self.abort()

    def _peer_error(self) -> str | None:
        """A peer's failure, from the store (polled by the watchdog, at most once a second)."""
        now = time.monotonic()
        if self._store is None or now - self._peer_checked < 1.0:
            return None
        self._peer_checked = now
        key = f"{self._key}/aborted"
        try:
            if not self._store.check([key]):
                return None
            return f"peer {self._store.get(key).decode()}"
        except Exception:
            return None

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise RuntimeError(self._error)

    def _launch(self, what: str, tensors: list[Tensor], issue: Any) -> Work:
        """Run ``issue(stream_handle)`` on the communicator's stream, ordered after the current stream."""
        self._raise_if_failed()
        device = _index(tensors[0])
        if self._comm is None:
            self._connect(device)
        assert self._stream is not None
        with device_guard(self._device):
            if self._ready is None:
                self._ready = Event()
            self._ready.record(current_stream(self._device))
            self._stream.wait_event(self._ready)
            try:
                issue(self._stream.handle)
            except Exception as e:  # e.g. the watchdog aborted the communicator meanwhile: say so
                if self._error is not None:
                    raise RuntimeError(self._error) from e
                raise
            done = Event()
            done.record(self._stream)
        assert self._watchdog is not None
        self._watchdog.watch(done, what)
        keep = list(tensors)  # alive until the current stream is ordered after the transfer

        def wait() -> None:
            self._raise_if_failed()
            current_stream(self._device).wait_event(done)
            keep.clear()

        return Work(wait, done.query)

    def _peer(self, rank: int) -> int:
        return self.ranks.index(rank)

    def destroy(self) -> None:
        """ncclCommDestroy: waits for the communicator's work in flight."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._comm is not None:
            self._comm.destroy()
            self._comm = None

    def abort(self, wait: float = 10.0) -> None:
        """ncclCommAbort: ends the communicator at once, work in flight included (a dead peer, an exit).

        It runs in a thread of its own, through ctypes (the GIL released: the main thread goes on and
        raises while NCCL waits for the peers), and only once: a later abort() (the exit handler) waits up
        to ``wait`` seconds for it. Where the raw communicator cannot be found, CuPy's abort() runs here."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._aborter is not None:
            if self._aborter is not threading.current_thread():
                self._aborter.join(wait)
            return
        comm, self._comm = self._comm, None
        if comm is None:
            return
        raw = _raw_communicator(comm)
        if raw is None:
            comm.abort()
            return
        import ctypes

        lib, handle = raw
        # CuPy's object forgets the communicator: its own destroy()/abort() (the object's finalizer
        # included) must not free it a second time
        ctypes.c_void_p.from_address(id(comm) + 3 * ctypes.sizeof(ctypes.c_void_p)).value = None

        def run() -> None:
            status = lib.ncclCommAbort(ctypes.c_void_p(handle))
            if status != 0:
                print(f"genesis.distributed: ncclCommAbort returned {status}", file=sys.stderr, flush=True)

        self._aborter = threading.Thread(target=run, name="genesis-nccl-abort", daemon=True)
        self._aborter.start()
        if self._aborter is not threading.current_thread() and wait > 0 and self._error is None:
            self._aborter.join(wait)  # an explicit abort (no failure): done before it returns, as torch's

    # ------------------------------------------------------------- collectives
    def all_reduce(self, tensor: Tensor, op: ReduceOp) -> Work:
        ptr, n, dt = _buffer(tensor, _index(tensor))
        return self._launch("all_reduce", [tensor], lambda s: self._comm.allReduce(ptr, ptr, n, dt, _OPS[op], s))

    def broadcast(self, tensor: Tensor, src: int) -> Work:
        ptr, n, dt = _buffer(tensor, _index(tensor))
        root = self._peer(src)
        return self._launch("broadcast", [tensor], lambda s: self._comm.broadcast(ptr, ptr, n, dt, root, s))

    def all_gather_into_tensor(self, output: Tensor, input: Tensor) -> Work:
        dev = _index(input)
        (src, n, dt), (dst, total, _) = _buffer(input, dev), _buffer(output, dev)
        if total != n * len(self.ranks):
            raise ValueError("output tensor size must be equal to world_size times input tensor size")
        return self._launch(
            "all_gather_into_tensor", [output, input], lambda s: self._comm.allGather(src, dst, n, dt, s)
        )

    def all_gather(self, tensor_list: list[Tensor], tensor: Tensor) -> Work:
        # NCCL gathers into one buffer; one grouped broadcast per rank writes straight into the list instead.
        nccl = nccl_module()
        dev = _index(tensor)
        src, n, dt = _buffer(tensor, dev)
        outs = [_buffer(t, dev) for t in tensor_list]
        if any(m != n for _, m, _ in outs):
            raise ValueError("all_gather needs every tensor of tensor_list the size of the input")

        def issue(s: int) -> None:
            nccl.groupStart()
            for root, (dst, _, _) in enumerate(outs):
                self._comm.broadcast(src, dst, n, dt, root, s)
            nccl.groupEnd()

        return self._launch("all_gather", [tensor, *tensor_list], issue)

    def reduce_scatter_tensor(self, output: Tensor, input: Tensor, op: ReduceOp) -> Work:
        dev = _index(input)
        (dst, n, dt), (src, total, _) = _buffer(output, dev), _buffer(input, dev)
        if total != n * len(self.ranks):
            raise ValueError("input tensor must be the same size as output size times world size")
        return self._launch(
            "reduce_scatter_tensor", [output, input], lambda s: self._comm.reduceScatter(src, dst, n, dt, _OPS[op], s)
        )

    def all_to_all_single(
        self, output: Tensor, input: Tensor, output_split_sizes: list[int] | None, input_split_sizes: list[int] | None
    ) -> Work:
        nccl = nccl_module()
        dev, size = _index(input), len(self.ranks)
        (src, n_in, dt), (dst, n_out, _) = _buffer(input, dev), _buffer(output, dev)
        row_in = n_in // max(input.shape[0], 1) if input.dim() else 1  # elements per index of dim 0
        row_out = n_out // max(output.shape[0], 1) if output.dim() else 1
        sends = input_split_sizes or [input.shape[0] // size] * size
        recvs = output_split_sizes or [output.shape[0] // size] * size
        item = input.dtype.itemsize

        def issue(s: int) -> None:
            nccl.groupStart()
            send_at = recv_at = 0
            for peer in range(size):
                self._comm.send(src + send_at * row_in * item, sends[peer] * row_in, dt, peer, s)
                self._comm.recv(dst + recv_at * row_out * item, recvs[peer] * row_out, dt, peer, s)
                send_at, recv_at = send_at + sends[peer], recv_at + recvs[peer]
            nccl.groupEnd()

        return self._launch("all_to_all_single", [output, input], issue)

    def send(self, tensor: Tensor, dst: int, tag: int) -> Work:
        ptr, n, dt = _buffer(tensor, _index(tensor))
        peer = self._peer(dst)
        return self._launch("send", [tensor], lambda s: self._comm.send(ptr, n, dt, peer, s))

    def recv_from_any(self, tensor: Tensor, tag: int) -> NoReturn:
        raise RuntimeError("the nccl backend cannot receive from any source: give src")

    def recv(self, tensor: Tensor, src: int | None, tag: int) -> Work:
        if src is None:
            self.recv_from_any(tensor, tag)  # raises
        ptr, n, dt = _buffer(tensor, _index(tensor))
        peer = self._peer(src)
        return self._launch("recv", [tensor], lambda s: self._comm.recv(ptr, n, dt, peer, s))
