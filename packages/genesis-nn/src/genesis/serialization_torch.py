"""Reading PyTorch's checkpoint files (torch.save since 1.6) without torch and without running the file's code.

Such a file is a zip: ``<archive>/data.pkl`` is a pickle of the saved object, whose tensors name their storages
by persistent ids ``('storage', <storage class>, key, location, numel)``; the storages' raw bytes are the entries
``<archive>/data/<key>``, in the byte order of ``<archive>/byteorder``.

The pickle is read by a restricted unpickler (the same idea as ``torch.load(weights_only=True)``): its
``find_class`` knows only the tensor rebuild functions, storage classes, dtypes, ``torch.Size``,
``torch.device``, ``collections.OrderedDict``, ``set`` / ``frozenset`` / ``bytearray`` / ``complex`` and
``_codecs.encode`` (how protocol 2 spells bytes); any other global raises ``pickle.UnpicklingError`` naming it.
The rebuild functions only return inert records (:class:`_TensorRecord`): no tensor is built and no storage
read until the whole pickle has been read and every storage and every tensor's size / stride / offset has been
checked against the zip, so a refused or malformed file loads nothing.
"""

from __future__ import annotations

import io
import math
import pickle
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from genesis_autograd import DType, Size, Tensor, as_device, as_dtype

from .serialization_bytes import CorruptCheckpointError, tensor_from_bytes

# torch's legacy storage classes (the names torch.save writes per dtype) -> genesis dtype names
STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "UntypedStorage": "uint8",  # an untyped storage counts bytes
}
# torch dtype names (canonical and aliases, as ``torch.<name>`` globals) -> genesis dtype names
TORCH_DTYPES = {
    "float64": "float64",
    "double": "float64",
    "float32": "float32",
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
# first bytes of torch's pre-1.6 format: protocol 2, then LONG1 of torch's magic number 0x1950a86a20f9469cfc6c
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


# ---------------------------------------------------------------------------------------------- records
# Every object the unpickler can hand out is a plain value, a fresh container or one of the records below. The
# records have no __dict__ and refuse __setstate__, so a BUILD opcode cannot reach into them, and genesis' own
# objects (dtype singletons, module functions) never reach the pickle machine: nothing outside the load is
# changed whatever the file says. (BUILD on a fresh OrderedDict is allowed: it is how state_dict._metadata comes.)
class _Record:
    """Base of the unpickler's records: attributes set once, no __dict__, no BUILD."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        raise pickle.UnpicklingError(f"refusing to set the state of {type(self).__name__[1:]} (a BUILD opcode)")


class _Allowed(_Record):
    """An allowed global, handed out fresh at each use: calling it calls ``fn``."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


class _Value(_Record):
    """A dtype or a device, built from its name once the file has been read."""

    __slots__ = ("make", "name")

    def __init__(self, make: Callable[[str], Any], name: str) -> None:
        self.make, self.name = make, name


class _StorageType(_Record):
    """What ``find_class`` returns for a storage class: only its dtype matters."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _StorageRecord(_Record):
    """One storage of the file: ``data/<key>``, ``numel`` elements of ``dtype``, saved from ``location``."""

    __slots__ = ("dtype", "key", "location", "numel")

    def __init__(self, key: str, dtype: str, location: str, numel: int) -> None:
        self.key, self.dtype, self.location, self.numel = key, dtype, location, numel


class _TensorRecord(_Record):
    """A tensor to build later: a strided view of a storage, maybe an nn.Parameter."""

    __slots__ = ("offset", "parameter", "requires_grad", "size", "storage", "stride")

    def __init__(self, storage: _StorageRecord, offset: int, size: tuple, stride: tuple, requires_grad: bool) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad, self.parameter = requires_grad, False


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(type(v) is int for v in value):
        raise pickle.UnpicklingError(f"malformed tensor record: its {what} is {value!r}, not a tuple of ints")
    return tuple(value)


def _no_hooks(hooks: Any) -> None:
    if hooks is not None and (not isinstance(hooks, dict) or hooks):
        raise pickle.UnpicklingError("refusing a tensor with backward hooks: they would be code to run")


def _rebuild_tensor_v2(
    storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any, backward_hooks: Any, metadata=None
) -> _TensorRecord:
    """Stands for torch._utils._rebuild_tensor_v2: records the view, builds nothing."""
    if not isinstance(storage, _StorageRecord) or type(storage_offset) is not int:
        raise pickle.UnpicklingError("malformed tensor record: it names no storage of the file, or no offset")
    _no_hooks(backward_hooks)
    return _TensorRecord(storage, storage_offset, _ints(size, "size"), _ints(stride, "stride"), bool(requires_grad))


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None) -> _TensorRecord:
    """Stands for torch._utils._rebuild_parameter(_with_state); the Python attributes in ``state`` are dropped."""
    if not isinstance(data, _TensorRecord):
        raise pickle.UnpicklingError("malformed parameter record: its data is not a tensor")
    _no_hooks(backward_hooks)
    out = _TensorRecord(data.storage, data.offset, data.size, data.stride, bool(requires_grad))
    out.parameter = True
    return out


def _torch_device(kind: Any, index: Any = None) -> _Value:
    """Stands for torch.device(type[, index])."""
    if not isinstance(kind, str) or not (index is None or type(index) is int):
        raise pickle.UnpicklingError(f"malformed device record: {kind!r}, {index!r}")
    return _Value(as_device, kind if index is None else f"{kind}:{index}")


def _codecs_encode(text: Any, encoding: Any = "utf-8") -> bytes:
    """Stands for _codecs.encode, which protocol 2 uses to spell bytes objects."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise pickle.UnpicklingError(f"refusing _codecs.encode of {type(text).__name__} with {encoding!r}")
    return text.encode(encoding)


_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch.Size": lambda dims=(): Size(_ints(dims, "torch.Size")),
    "torch.device": _torch_device,
    "_codecs.encode": _codecs_encode,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.bytearray": bytearray,
    "builtins.complex": complex,
}


class _WeightsOnlyUnpickler(pickle.Unpickler):
    """An unpickler that knows only the globals of ``_GLOBALS``, storage classes and dtypes."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.storages: dict[str, _StorageRecord] = {}

    def find_class(self, module: str, name: str) -> Any:
        """The allowed global for ``module.name``; UnpicklingError naming it for any other."""
        module = "builtins" if module == "__builtin__" else module  # protocol 2 spells Python 2's name
        full = f"{module}.{name}"
        if full in _GLOBALS:
            return _Allowed(_GLOBALS[full])
        if module in ("torch", "torch.storage") and name in STORAGE_DTYPES:
            return _StorageType(STORAGE_DTYPES[name])
        if module == "torch" and name in TORCH_DTYPES:
            return _Value(as_dtype, TORCH_DTYPES[name])
        raise pickle.UnpicklingError(
            f"refusing to load the global {full!r}: a weights-only checkpoint holds tensors, containers "
            "(dict, OrderedDict, list, tuple, set) and plain values only, and this file would run or "
            "build something else" + (" (genesis has no such dtype)" if module == "torch" and "Storage" in name else "")
        )

    def persistent_load(self, pid: Any) -> _StorageRecord:
        """A storage named ``('storage', storage class, key, location, numel)``, one record per key."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {str(pid)[:80]!r}: only storages are read")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or not isinstance(location, str):
            raise pickle.UnpicklingError(f"malformed storage id {str(pid)[:80]!r}")
        if type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"malformed storage id {str(pid)[:80]!r}: bad element count")
        known = self.storages.get(key)
        if known is None:
            known = self.storages[key] = _StorageRecord(key, kind.dtype, location, numel)
        elif (known.dtype, known.numel) != (kind.dtype, numel):
            raise pickle.UnpicklingError(f"storage {key!r} is described twice, with different dtypes or sizes")
        return known


# ---------------------------------------------------------------------------------------------- checks
def _archive_prefix(zf: zipfile.ZipFile) -> str:
    """The top folder holding ``data.pkl`` (torch names it ``archive``; older versions used the file's stem)."""
    for name in zf.namelist():
        head, _, tail = name.partition("/")
        if tail == "data.pkl":
            return head
    raise CorruptCheckpointError(
        "not a PyTorch checkpoint genesis can read: the zip has no <archive>/data.pkl (is it a TorchScript "
        "archive or another zip file?)"
    )


def _check_tensor(t: _TensorRecord) -> None:
    """A view that stays inside its storage, as torch checks when it rebuilds the tensor."""
    s = t.storage
    if len(t.size) != len(t.stride) or any(v < 0 for v in (*t.size, *t.stride, t.offset)):
        raise CorruptCheckpointError(
            f"checkpoint is corrupt: a tensor has size {list(t.size)}, stride {list(t.stride)} and offset {t.offset}"
        )
    if math.prod(t.size) == 0:
        return
    last = t.offset + sum((n - 1) * st for n, st in zip(t.size, t.stride))
    if last >= s.numel:
        raise CorruptCheckpointError(
            f"checkpoint is corrupt: a tensor of size {list(t.size)}, stride {list(t.stride)} and storage offset "
            f"{t.offset} reaches element {last}, past the end of its storage {s.key!r} of {s.numel} elements"
        )


def _records(obj: Any, seen: set[int], out: list[_TensorRecord]) -> None:
    """Every tensor record in the unpickled object, each once."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, _TensorRecord):
        out.append(obj)
    elif isinstance(obj, (_Allowed, _StorageType, _StorageRecord)):  # a global or storage where data belongs
        what = "storage" if isinstance(obj, _StorageRecord) else "global (a function or class)"
        raise pickle.UnpicklingError(f"malformed checkpoint: a bare {what} where data belongs")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _records(k, seen, out)
            _records(v, seen, out)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _records(v, seen, out)


# ---------------------------------------------------------------------------------------------- build
class _Builder:
    """Turns the checked records into tensors: each storage read once, its tensors views of it."""

    def __init__(self, zf: zipfile.ZipFile, prefix: str, big_endian: bool, place: Callable[[Tensor, str], Tensor]):
        self.zf, self.prefix, self.big_endian, self.place = zf, prefix, big_endian, place
        self.storages: dict[str, Tensor] = {}
        self.made: dict[int, Any] = {}

    def storage(self, s: _StorageRecord) -> Tensor:
        if s.key not in self.storages:
            dtype: DType = as_dtype(s.dtype)
            data = self.zf.read(f"{self.prefix}/data/{s.key}")
            if self.big_endian and dtype.itemsize > 1:
                data = np.frombuffer(data, dtype=f">u{dtype.itemsize}").astype(f"<u{dtype.itemsize}").tobytes()
            self.storages[s.key] = self.place(tensor_from_bytes(data, dtype, [s.numel]), s.location)
        return self.storages[s.key]

    def tensor(self, t: _TensorRecord) -> Tensor:
        out = self.storage(t.storage).as_strided(t.size, t.stride, t.offset)
        if t.parameter:
            from .nn.parameter import Parameter

            return Parameter(out, requires_grad=t.requires_grad)
        return out.requires_grad_(True) if t.requires_grad else out

    def build(self, obj: Any) -> Any:
        key = id(obj)
        if key in self.made:
            return self.made[key]
        if isinstance(obj, _TensorRecord):
            out: Any = self.tensor(obj)
        elif isinstance(obj, _Value):
            out = obj.make(obj.name)
        elif isinstance(obj, dict):  # made before it is filled: a dict that holds itself stays one object
            out = self.made[key] = type(obj)() if type(obj) in (dict, OrderedDict) else {}
            for k, v in obj.items():
                out[self.build(k)] = self.build(v)
        elif isinstance(obj, list):
            out = self.made[key] = []
            out.extend(self.build(v) for v in obj)
        elif isinstance(obj, tuple) and type(obj) in (tuple, Size):
            out = type(obj)(self.build(v) for v in obj)
        elif isinstance(obj, (set, frozenset)):
            out = type(obj)(self.build(v) for v in obj)
        else:  # plain values: numbers, strings, bytes, None, dtypes, devices, Size
            out = obj
        self.made[key] = out
        return out


# ---------------------------------------------------------------------------------------------- entry points
def is_torch_file(data: bytes) -> bool:
    """Whether ``data`` is a PyTorch checkpoint (a zip, or torch's legacy format) rather than a safetensors file.
    A safetensors file has its JSON header's ``{`` at byte 8; a zip has a binary local header there."""
    legacy_tar = len(data) > 262 and data[257:262] == b"ustar"
    return (data[:4] == b"PK\x03\x04" and data[8:9] != b"{") or data.startswith(_LEGACY_MAGIC) or legacy_tar


def load_torch(data: bytes, place: Callable[[Tensor, str], Tensor]) -> Any:
    """The object of a torch.save zip held in ``data``, its tensors put on devices by ``place(cpu tensor,
    saved location)``. Raises pickle.UnpicklingError for a refused global or a malformed pickle, and
    CorruptCheckpointError (a RuntimeError) for a truncated zip, a missing or short storage, a view past its
    storage's end or the legacy format, all before any tensor is built."""
    if not data.startswith(b"PK\x03\x04"):
        raise CorruptCheckpointError(
            "this is PyTorch's legacy (pre-1.6, non-zip) checkpoint format, which genesis does not read: "
            "load it with torch and save it again with torch.save (the zip format) or genesis.save"
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        prefix = _archive_prefix(zf)
        names = set(zf.namelist())
        pickled = zf.read(f"{prefix}/data.pkl")
        order = zf.read(f"{prefix}/byteorder").strip() if f"{prefix}/byteorder" in names else b"little"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as e:
        raise CorruptCheckpointError(f"PyTorch checkpoint is truncated or corrupt: {e}") from None
    if order not in (b"little", b"big"):
        raise CorruptCheckpointError(f"PyTorch checkpoint is corrupt: unknown byte order {order!r}")
    unpickler = _WeightsOnlyUnpickler(pickled)
    try:
        obj = unpickler.load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:  # a malformed pickle fails in many ways; each says the same to the caller
        raise pickle.UnpicklingError(f"PyTorch checkpoint's data.pkl is malformed: {type(e).__name__}: {e}") from None
    for s in unpickler.storages.values():
        entry = f"{prefix}/data/{s.key}"
        if entry not in names:
            raise CorruptCheckpointError(f"PyTorch checkpoint is corrupt: storage {s.key!r} has no entry {entry!r}")
        need, have = s.numel * as_dtype(s.dtype).itemsize, zf.getinfo(entry).file_size
        if have != need:
            raise CorruptCheckpointError(
                f"PyTorch checkpoint is corrupt: entry {entry!r} has {have} bytes, its storage of {s.numel} "
                f"{s.dtype} elements needs {need}"
            )
    tensors: list[_TensorRecord] = []
    _records(obj, set(), tensors)
    for t in tensors:
        _check_tensor(t)
    try:
        return _Builder(zf, prefix, order == b"big", place).build(obj)
    except (zipfile.BadZipFile, EOFError, OSError) as e:  # a storage's bytes fail their CRC
        raise CorruptCheckpointError(f"PyTorch checkpoint is truncated or corrupt: {e}") from None


__all__ = ["STORAGE_DTYPES", "TORCH_DTYPES", "is_torch_file", "load_torch"]
