"""genesis.save / genesis.load: checkpoints as safetensors files, never pickles.

A checkpoint is one valid safetensors file:

* every distinct Tensor object (or numpy array) in the saved object is one safetensors
  entry, named "0", "1", ... in the order first met; a Tensor met twice (tied weights)
  is stored once and comes back as one object;
* the header's ``__metadata__`` holds ``format: "genesis"``, ``genesis.version``, the
  structure as plain JSON (``genesis.structure``) and a SHA-256 (``genesis.sha256``)
  over that JSON and every entry's name, dtype, shape and bytes.

The structure JSON is the object with containers and scalars spelled out: JSON null,
booleans, integers, strings and finite floats stand for themselves, a list is a JSON
array, and everything else is an object with one tag::

    {"dict": [[key, value], ...]}      keys of any stored type (optimizer states use ints)
    {"odict": [[key, value], ...]}     an OrderedDict (Module.state_dict)
    {"tuple": [...]}                   {"float": "inf" | "-inf" | "nan"}
    {"dtype": "bfloat16"}              {"device": "cuda:0"}
    {"tensor": "3"} / {"ndarray": "4"} an entry of the safetensors file

and ``genesis.tensors`` in the same JSON says, per entry, its dtype, shape, device,
requires_grad and whether it was an nn.Parameter. Loading checks the file's length,
header, hash and cross-references before it builds anything, so a truncated or
corrupted file raises CorruptCheckpointError (a RuntimeError) and returns nothing.
A plain safetensors file written by another library loads as a dict of tensors. Files are
written here by the format's few rules (8-byte little-endian header length, JSON header padded
with spaces, the entries' bytes back to back) and read through the safetensors package.
PyTorch's own files (torch.save's zip of pickles) are read by a weights-only reader and written
with ``format="torch"`` or a ``.pt`` / ``.pth`` / ``.bin`` name: see serialization_torch.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import safetensors

from genesis_autograd import Device, DType, Tensor, as_device, as_dtype, cuda

from .serialization_bytes import DTYPE_CODES, DTYPE_NAMES, CorruptCheckpointError, tensor_bytes, tensor_from_bytes

FORMAT_VERSION = "1"


# ---------------------------------------------------------------------------------------------- save
class _Encoder:
    """Turns an object into the structure JSON, collecting its tensors (each object once)."""

    def __init__(self) -> None:
        self.keys: dict[int, str] = {}
        self.entries: dict[str, tuple[str, list[int], bytes]] = {}  # key -> (dtype name, shape, bytes)
        self.meta: dict[str, dict] = {}
        self._alive: list = []  # keeps encoded objects alive so that their ids stay unique

    def _entry(self, obj, tag: str, dtype: str, shape: list[int], data: Callable[[], bytes], meta: dict):
        key = self.keys.get(id(obj))
        if key is None:
            key = str(len(self.keys))
            self.keys[id(obj)] = key
            self._alive.append(obj)
            self.entries[key] = (dtype, shape, data())
            self.meta[key] = {"dtype": dtype, "shape": shape, **meta}
        return {tag: key}

    def encode(self, obj) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"float": repr(float(obj))}
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter

            meta = {
                "device": str(obj.device),
                "requires_grad": bool(obj.requires_grad),
                "parameter": isinstance(obj, Parameter),
            }
            return self._entry(obj, "tensor", obj.dtype.name, list(obj.shape), lambda: tensor_bytes(obj), meta)
        if isinstance(obj, np.ndarray):
            try:
                dtype = as_dtype(obj.dtype).name
            except (TypeError, KeyError, ValueError):
                dtype = None
            if dtype not in DTYPE_CODES:
                raise TypeError(f"genesis.save cannot store a numpy array of dtype {obj.dtype}")
            data = lambda: np.ascontiguousarray(obj).astype(obj.dtype.newbyteorder("<"), copy=False).tobytes()
            return self._entry(obj, "ndarray", dtype, list(obj.shape), data, {})
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        if isinstance(obj, DType):
            return {"dtype": obj.name}
        if isinstance(obj, Device):
            return {"device": str(obj)}
        if isinstance(obj, dict):
            tag = "odict" if isinstance(obj, OrderedDict) else "dict"
            return {tag: [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, list):
            return [self.encode(v) for v in obj]
        hint = " (save its state_dict())" if hasattr(obj, "state_dict") else ""
        raise TypeError(
            f"genesis.save cannot store an object of type {type(obj).__name__}{hint}: it stores tensors, "
            "numpy arrays, numbers, strings, bools, None, dtypes, devices and lists, tuples and dicts "
            "of them"
        )


def _digest(structure: str, entries) -> str:
    h = hashlib.sha256(structure.encode())
    for key, (dtype, shape, data) in entries:
        h.update(f"\0{key}\0{dtype}\0{shape}\0".encode())
        h.update(data)
    return h.hexdigest()


def save(
    obj: Any,
    f: str | os.PathLike | IO[bytes],
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
    *,
    format: str | None = None,
) -> None:
    """Write ``obj`` (tensors, state dicts, optimizer / scheduler states, nested containers of plain data)
    to ``f``, a path or a writable binary file. ``format``: "genesis" (a safetensors file, the default)
    or "torch" (torch.save's zip, which ``torch.load(f, weights_only=True)`` reads); None picks "torch"
    for a path ending in .pt, .pth or .bin. The pickle arguments are accepted and ignored. A path is
    written through a temporary file and renamed, so an interrupted save leaves any older file intact."""
    if format is None:
        name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else ""
        format = "torch" if str(name).endswith((".pt", ".pth", ".bin")) else "genesis"
    if format not in ("genesis", "torch"):
        raise ValueError(f"genesis.save: format must be 'genesis' or 'torch', not {format!r}")
    if format == "torch":
        from .serialization_torch_writer import torch_zip_bytes

        return _write([torch_zip_bytes(obj)], f)
    encoder = _Encoder()
    root = encoder.encode(obj)
    structure = json.dumps({"root": root, "tensors": encoder.meta}, allow_nan=False, separators=(",", ":"))
    metadata = {
        "format": "genesis",
        "genesis.version": FORMAT_VERSION,
        "genesis.structure": structure,
        "genesis.sha256": _digest(structure, encoder.entries.items()),
    }
    header: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for key, (dtype, shape, data) in encoder.entries.items():
        header[key] = {"dtype": DTYPE_CODES[dtype], "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the format pads the header to 8-byte alignment with spaces
    _write([struct.pack("<Q", len(head)), head, *(data for _, _, data in encoder.entries.values())], f)


def _write(chunks: list[bytes], f: str | os.PathLike | IO[bytes]) -> None:
    """The chunks to a file object, or to a path through a temporary file renamed at the end."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as out:
                out.writelines(chunks)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    else:
        for chunk in chunks:
            f.write(chunk)


# ---------------------------------------------------------------------------------------------- load
def _read_header(data: bytes) -> dict:
    n = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else None
    try:
        if n is None or 8 + n > len(data):
            raise ValueError("short")
        header = json.loads(data[8 : 8 + n])
    except (UnicodeDecodeError, ValueError):
        # Not a readable safetensors header. Name a PyTorch file as such: its first bytes are a zip's
        # (torch.save) or a pickle's protocol mark. (Only now: a safetensors header length can begin so too.)
        if data[:4] == b"PK\x03\x04" or (data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")):
            raise CorruptCheckpointError(
                "not a genesis checkpoint: this looks like a bare pickle (not torch.save's zip), "
                "which genesis.load does not read (that would mean running its code), or a corrupt file"
            ) from None
        if n is None:
            raise CorruptCheckpointError(
                f"checkpoint file is truncated or corrupt: {len(data)} bytes, not even a header length"
            ) from None
        if 8 + n > len(data):
            raise CorruptCheckpointError(
                f"checkpoint file is truncated or corrupt: its header says {n} header "
                f"bytes but the file has {len(data)} bytes in all"
            ) from None
        raise CorruptCheckpointError("checkpoint file is corrupt: its header is not valid JSON") from None
    if not isinstance(header, dict):
        raise CorruptCheckpointError("checkpoint file is corrupt: its header is not a JSON object")
    return header


def _entries(data: bytes) -> dict[str, tuple[str, list[int], bytes]]:
    try:
        items = safetensors.deserialize(data)
    except Exception as e:  # safetensors raises SafetensorError, its subclasses or others on bad offsets
        raise CorruptCheckpointError(f"checkpoint file is truncated or corrupt: {e}") from None
    out = {}
    for key, info in items:
        if info["dtype"] not in DTYPE_NAMES:
            raise CorruptCheckpointError(
                f"checkpoint entry {key!r} has dtype {info['dtype']}, which genesis "
                "does not have: the file is corrupt, or was not written for genesis"
            )
        out[key] = (DTYPE_NAMES[info["dtype"]], list(info["shape"]), bytes(info["data"]))
    return out


class _Decoder:
    def __init__(self, entries: dict, meta: dict, place: Callable[[Tensor, str], Tensor]) -> None:
        self.entries, self.meta, self.place = entries, meta, place
        self.made: dict[str, Any] = {}

    def tensor(self, key: str) -> Tensor:
        if key not in self.made:
            from .nn.parameter import Parameter

            meta = self.meta[key]
            dtype, shape, data = self.entries[key]
            t = self.place(tensor_from_bytes(data, as_dtype(dtype), shape), meta["device"])
            if meta.get("parameter"):
                t = Parameter(t, requires_grad=meta.get("requires_grad", True))
            elif meta.get("requires_grad"):
                t.requires_grad_(True)
            self.made[key] = t
        return self.made[key]

    def ndarray(self, key: str) -> np.ndarray:
        if key not in self.made:
            dtype, shape, data = self.entries[key]
            self.made[key] = np.frombuffer(data, dtype=as_dtype(dtype).numpy).reshape(shape).copy()
        return self.made[key]

    def decode(self, node) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or len(node) != 1:
            raise CorruptCheckpointError(f"checkpoint structure is corrupt near {str(node)[:80]!r}")
        ((tag, value),) = node.items()
        if tag == "dict":
            return {self.decode(k): self.decode(v) for k, v in value}
        if tag == "odict":
            return OrderedDict((self.decode(k), self.decode(v)) for k, v in value)
        if tag == "tuple":
            return tuple(self.decode(v) for v in value)
        if tag == "float":
            return float(value)
        if tag == "dtype":
            return as_dtype(value)
        if tag == "device":
            return as_device(value)
        if tag == "tensor":
            return self.tensor(value)
        if tag == "ndarray":
            return self.ndarray(value)
        raise CorruptCheckpointError(f"checkpoint structure is corrupt: unknown tag {tag!r}")


MapLocation = str | Device | dict | Callable | None


def _placer(map_location: MapLocation) -> Callable[[Tensor, str], Tensor]:
    """How a cpu tensor read from the file reaches its device, given where it was saved."""

    def to(t: Tensor, location) -> Tensor:
        device = as_device(location)
        if device.type == "cuda" and not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but genesis.cuda.is_available() "
                "is False. If you are running on a CPU-only machine, please use genesis.load with "
                "map_location='cpu' to map your tensors to the CPU."
            )
        return t if device.type == "cpu" else t.to(device=device)

    if map_location is None:
        return to
    if isinstance(map_location, (str, Device)):
        return lambda t, saved: to(t, map_location)
    if isinstance(map_location, dict):
        table = {str(k): v for k, v in map_location.items()}
        return lambda t, saved: to(t, table.get(saved, saved))
    if callable(map_location):

        def call(t: Tensor, saved: str) -> Tensor:
            out = map_location(t, saved)
            return to(t, saved) if out is None else out

        return call
    raise TypeError(
        f"map_location should be a string, a device, a dict or a callable, not {type(map_location).__name__}"
    )


def load(
    f: str | os.PathLike | IO[bytes],
    map_location: MapLocation = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = True,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Read a checkpoint written by genesis.save (or any safetensors file) from a path or a binary file.

    ``map_location``: None (each tensor to the device it was saved from), a device or its name, a dict
    {saved location: new location}, or a callable(tensor on the cpu, saved location) returning the tensor
    to use (None: the default). A PyTorch file (torch.save's zip) is read weights-only, whatever
    ``weights_only`` says: tensors, containers and plain values, any other global raising
    pickle.UnpicklingError; ``mmap`` is accepted and ignored. Raises CorruptCheckpointError on a
    truncated or corrupted file, before any object is built.
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            data = stream.read()
    elif isinstance(f, (bytes, bytearray, memoryview)):
        data = bytes(f)
    else:
        data = f.read()
    from .serialization_torch import is_torch_file, load_torch

    if is_torch_file(data):
        return load_torch(data, _placer(map_location))
    header = _read_header(data)
    metadata = header.get("__metadata__") or {}
    entries = _entries(data)
    place = _placer(map_location)
    if metadata.get("format") != "genesis" and any(k.startswith("genesis.") for k in metadata):
        raise CorruptCheckpointError("checkpoint file is corrupt: genesis metadata without its format tag")
    if metadata.get("format") != "genesis":  # a plain safetensors file: its tensors by name
        decoder = _Decoder(entries, {k: {"device": "cpu"} for k in entries}, place)
        return {key: decoder.tensor(key) for key in entries}

    structure = metadata.get("genesis.structure")
    if not isinstance(structure, str) or _digest(structure, sorted(entries.items(), key=_entry_order)) != metadata.get(
        "genesis.sha256"
    ):
        raise CorruptCheckpointError("checkpoint file is corrupt: its checksum does not match its contents")
    if "genesis.version" not in metadata:
        raise CorruptCheckpointError("checkpoint file is corrupt: its format version is missing")
    if metadata.get("genesis.version") != FORMAT_VERSION:
        raise CorruptCheckpointError(
            f"checkpoint format version {metadata.get('genesis.version')!r} is not one "
            f"this genesis reads ({FORMAT_VERSION}): the file is corrupt, or from a "
            "newer genesis"
        )
    try:  # a hash-consistent file can still be hand-made: a malformed structure is refused, not half-read
        parsed = json.loads(structure)
        meta = parsed["tensors"]
        for key, m in meta.items():
            if key not in entries or entries[key][0] != m["dtype"] or entries[key][1] != m["shape"]:
                raise CorruptCheckpointError(
                    f"checkpoint file is corrupt: entry {key!r} does not match its description"
                )
        return _Decoder(entries, meta, place).decode(parsed["root"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise CorruptCheckpointError(f"checkpoint file is corrupt: malformed structure ({e!r})") from None


def _entry_order(item) -> int:
    """Entries hashed in the order they were written ("0", "1", ...), whatever order the reader lists them."""
    key = item[0]
    return int(key) if key.isdigit() else -1


__all__ = ["CorruptCheckpointError", "load", "save"]
