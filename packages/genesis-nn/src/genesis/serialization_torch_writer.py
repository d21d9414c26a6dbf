"""Writing PyTorch's checkpoint format (what ``torch.load(path, weights_only=True)`` reads), without torch.

The file is the zip torch.save writes: ``archive/data.pkl`` (a protocol-2 pickle), ``archive/.format_version``,
``archive/.storage_alignment``, ``archive/byteorder``, one ``archive/data/<key>`` per storage (its raw
little-endian bytes, starting at a multiple of 64 bytes in the file, as torch aligns them) and
``archive/version``. The pickle is written opcode by opcode here, because pickle.Pickler can only name a
global it can import, and genesis does not import torch. It spells tensors as torch does:
``torch._utils._rebuild_tensor_v2((persistent storage id), offset, size, stride, requires_grad, OrderedDict())``,
wrapped in ``torch._utils._rebuild_parameter`` for an nn.Parameter. Tensors that view one memory block
(views, tied slices) are written as views of one storage, so torch.load gives them shared memory again.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from genesis_autograd import Device, DType, Size, Tensor

from .serialization_bytes import tensor_bytes
from .serialization_torch import STORAGE_DTYPES

_STORAGE_OF = {dtype: name for name, dtype in STORAGE_DTYPES.items() if name != "UntypedStorage"}
_ALIGNMENT = 64


class _Storage:
    """One storage to write: the memory block some tensors view, and how many elements of it they reach."""

    def __init__(self, key: str, first: Tensor) -> None:
        self.key, self.first, self.numel = key, first, 0

    def reach(self, t: Tensor) -> None:
        if t.numel():
            last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
            self.numel = max(self.numel, last + 1)

    def data(self) -> bytes:
        return tensor_bytes(self.first.detach().as_strided((self.numel,), (1,), 0)) if self.numel else b""


def _storages(tensors: list[Tensor]) -> dict[int, _Storage]:
    """id(tensor) -> its storage. Tensors of one device and dtype whose memory starts at the same address
    (data_ptr less storage_offset elements) view one block; an empty tensor gets a storage of its own."""
    by_block: dict[tuple, _Storage] = {}
    out: dict[int, _Storage] = {}
    for t in tensors:
        base = t.data_ptr() - t.storage_offset() * t.dtype.itemsize
        block = (str(t.device), t.dtype.name, base) if t.numel() else ("empty", id(t))
        if block not in by_block:
            by_block[block] = _Storage(str(len(by_block)), t)
        by_block[block].reach(t)
        out[id(t)] = by_block[block]
    return out


class _Pickler:
    """Writes one protocol-2 pickle of tensors, containers and plain values, in the opcodes torch reads."""

    def __init__(self, storages: dict[int, _Storage]) -> None:
        self.out = bytearray(pickle.PROTO + b"\x02")
        self.memo: dict[Any, int] = {}  # id(object) or ("global", name) -> memo index
        self.alive: list[Any] = []  # keeps memoized objects alive, so that their ids stay theirs
        self.storages = storages

    def _put(self, key: Any, obj: Any = None) -> None:
        index = self.memo[key] = len(self.memo)
        self.alive.append(obj)
        self.out += pickle.BINPUT + bytes([index]) if index < 256 else pickle.LONG_BINPUT + struct.pack("<I", index)

    def _get(self, key: Any) -> bool:
        index = self.memo.get(key)
        if index is None:
            return False
        self.out += pickle.BINGET + bytes([index]) if index < 256 else pickle.LONG_BINGET + struct.pack("<I", index)
        return True

    def global_(self, module: str, name: str) -> None:
        if not self._get(("global", module, name)):
            self.out += pickle.GLOBAL + f"{module}\n{name}\n".encode()
            self._put(("global", module, name))

    def tuple_(self, items: tuple | list) -> None:
        if len(items) <= 3:
            for v in items:
                self.dump(v)
            self.out += (pickle.EMPTY_TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3)[len(items)]
        else:
            self.out += pickle.MARK
            for v in items:
                self.dump(v)
            self.out += pickle.TUPLE

    def call(self, module: str, name: str, *args: Any) -> None:
        """``module.name(*args)``: GLOBAL, the argument tuple, REDUCE."""
        self.global_(module, name)
        self.tuple_(args)
        self.out += pickle.REDUCE

    def int_(self, n: int) -> None:
        if 0 <= n < 256:
            self.out += pickle.BININT1 + bytes([n])
        elif 0 <= n < 65536:
            self.out += pickle.BININT2 + struct.pack("<H", n)
        elif -(2**31) <= n < 2**31:
            self.out += pickle.BININT + struct.pack("<i", n)
        else:
            raw = n.to_bytes(n.bit_length() // 8 + 1, "little", signed=True)  # two's complement, one spare bit
            if len(raw) < 256:
                self.out += pickle.LONG1 + bytes([len(raw)]) + raw
            else:
                self.out += pickle.LONG4 + struct.pack("<i", len(raw)) + raw

    def str_(self, s: str) -> None:
        raw = s.encode("utf-8", "surrogatepass")
        self.out += pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw

    def tensor(self, t: Tensor) -> None:
        from .nn.parameter import Parameter

        if self._get(id(t)):
            return
        s = self.storages[id(t)]
        if isinstance(t, Parameter):
            self.global_("torch._utils", "_rebuild_parameter")
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += pickle.MARK
        self.out += pickle.MARK
        self.str_("storage")
        self.global_("torch", _STORAGE_OF[t.dtype.name])
        for v in (s.key, str(t.device)):
            self.str_(v)
        self.int_(s.numel)
        self.out += pickle.TUPLE + pickle.BINPERSID
        self.int_(t.storage_offset())
        self.tuple_(tuple(t.shape))
        self.tuple_(tuple(t.stride()))
        self.dump(bool(t.requires_grad) and not isinstance(t, Parameter))
        self.call("collections", "OrderedDict")
        self.out += pickle.TUPLE + pickle.REDUCE
        if isinstance(t, Parameter):
            self.dump(bool(t.requires_grad))
            self.call("collections", "OrderedDict")
            self.out += pickle.TUPLE3 + pickle.REDUCE
        self._put(id(t), t)

    def dump(self, obj: Any) -> None:
        """Append ``obj``'s opcodes; TypeError for what torch's weights-only reader would refuse."""
        if obj is None:
            self.out += pickle.NONE
        elif isinstance(obj, bool):
            self.out += pickle.NEWTRUE if obj else pickle.NEWFALSE
        elif isinstance(obj, int):
            self.int_(int(obj))
        elif isinstance(obj, float):
            self.out += pickle.BINFLOAT + struct.pack(">d", obj)
        elif isinstance(obj, str):
            self.str_(obj)
        elif isinstance(obj, bytes):  # protocol 2 has no bytes opcode: torch (and pickle) write _codecs.encode
            self.call("_codecs", "encode", obj.decode("latin1"), "latin1")
        elif isinstance(obj, bytearray):
            self.call("builtins", "bytearray", bytes(obj))
        elif isinstance(obj, Tensor):
            self.tensor(obj)
        elif isinstance(obj, DType):
            self.global_("torch", obj.name)
        elif isinstance(obj, Device):
            self.call("torch", "device", str(obj))
        elif isinstance(obj, Size):
            self.call("torch", "Size", tuple(obj))
        elif isinstance(obj, np.generic):
            self.dump(obj.item())
        elif isinstance(obj, dict):
            self.mapping(obj)
        elif isinstance(obj, list):
            self.sequence(obj)
        elif isinstance(obj, tuple):
            self.tuple_(obj)
        elif isinstance(obj, (set, frozenset)):
            self.call("builtins", type(obj).__name__, list(obj))
        else:
            hint = " (save its state_dict())" if hasattr(obj, "state_dict") else ""
            raise TypeError(
                f"genesis.save(format='torch') cannot store an object of type {type(obj).__name__}{hint}: "
                "torch.load(weights_only=True) reads tensors, numbers, strings, bytes, bools, None, dtypes, "
                "devices and lists, tuples, sets and dicts of them"
            )

    def mapping(self, obj: dict) -> None:
        if self._get(id(obj)):
            return
        if isinstance(obj, OrderedDict):
            self.call("collections", "OrderedDict")
        else:
            self.out += pickle.EMPTY_DICT
        self._put(id(obj), obj)
        if obj:
            self.out += pickle.MARK
            for k, v in obj.items():
                self.dump(k)
                self.dump(v)
            self.out += pickle.SETITEMS

    def sequence(self, obj: list) -> None:
        if self._get(id(obj)):
            return
        self.out += pickle.EMPTY_LIST
        self._put(id(obj), obj)
        if obj:
            self.out += pickle.MARK
            for v in obj:
                self.dump(v)
            self.out += pickle.APPENDS


def _tensors(obj: Any, seen: set[int], out: list[Tensor]) -> None:
    """Every Tensor in ``obj``'s containers, each object once, in the order the pickle meets them."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _tensors(k, seen, out)
            _tensors(v, seen, out)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _tensors(v, seen, out)


def _write_aligned(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """A stored (uncompressed) entry whose bytes begin at a multiple of 64 in the file, as torch writes them:
    the local header's extra field is padded (an 'FB' record, torch's choice of id) to get there."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() if zf.fp is not None else 0
    zip64 = len(data) * 1.05 > zipfile.ZIP64_LIMIT  # zipfile then adds a 20-byte zip64 record to the header
    header = 30 + len(name.encode()) + 4 + (20 if zip64 else 0)
    pad = -(start + header) % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def torch_zip_bytes(obj: Any) -> bytes:
    """``obj`` as the bytes of a torch.save file (the zip format, protocol-2 pickle, little-endian storages)."""
    tensors: list[Tensor] = []
    _tensors(obj, set(), tensors)
    storages = _storages(tensors)
    pickler = _Pickler(storages)
    pickler.dump(obj)
    pickler.out += pickle.STOP
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        _write_aligned(zf, "archive/data.pkl", bytes(pickler.out))
        _write_aligned(zf, "archive/.format_version", b"1")
        _write_aligned(zf, "archive/.storage_alignment", str(_ALIGNMENT).encode())
        _write_aligned(zf, "archive/byteorder", b"little")
        for s in sorted({id(s): s for s in storages.values()}.values(), key=lambda s: int(s.key)):
            _write_aligned(zf, f"archive/data/{s.key}", s.data())
        _write_aligned(zf, "archive/version", b"3\n")
    return buffer.getvalue()


__all__ = ["torch_zip_bytes"]
