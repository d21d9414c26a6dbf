"""Hugging Face checkpoint folders, read from disk (no hub, no network).

A model folder as ``save_pretrained`` writes it: ``config.json`` and either one ``model.safetensors`` or shards
``model-00001-of-0000N.safetensors`` listed by ``model.safetensors.index.json`` (``{"weight_map": {tensor name:
shard file}}``). :func:`load_hf_checkpoint` returns the tensors by name (dtypes kept, bfloat16 included) and
the parsed config; :func:`estimate_checkpoint_bytes` reads only headers, so a script can say how much memory a
model needs before it loads it. Safetensors headers are read here (8-byte little-endian length, then JSON);
each tensor's bytes are read from its offset alone, so a name filter reads only what it keeps.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from collections.abc import Callable
from typing import IO, Any

from genesis_autograd import DType, Tensor, as_device, as_dtype

from .serialization_bytes import DTYPE_NAMES, CorruptCheckpointError, tensor_from_bytes

CONFIG = "config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"


def _header(f: IO[bytes], path: str) -> tuple[dict[str, Any], int]:
    """A safetensors file's tensor entries (name -> dtype, shape, data_offsets) and where its data begins."""
    size = os.fstat(f.fileno()).st_size
    raw = f.read(8)
    n = struct.unpack("<Q", raw)[0] if len(raw) == 8 else None
    if n is None or 8 + n > size:
        raise CorruptCheckpointError(f"{path}: truncated or not a safetensors file ({size} bytes)")
    try:
        header = json.loads(f.read(n))
    except (UnicodeDecodeError, ValueError):
        raise CorruptCheckpointError(f"{path}: corrupt safetensors header (not JSON)") from None
    if not isinstance(header, dict):
        raise CorruptCheckpointError(f"{path}: corrupt safetensors header (not a JSON object)")
    header.pop("__metadata__", None)
    for name, info in header.items():
        try:
            begin, end = info["data_offsets"]
            dtype, shape = info["dtype"], list(info["shape"])
        except (KeyError, TypeError, ValueError):
            raise CorruptCheckpointError(f"{path}: corrupt header entry for {name!r}") from None
        if dtype not in DTYPE_NAMES:
            raise CorruptCheckpointError(f"{path}: tensor {name!r} has dtype {dtype}, which genesis does not have")
        if (
            end - begin != math.prod(shape) * as_dtype(DTYPE_NAMES[dtype]).itemsize
            or not 0 <= begin <= end <= size - 8 - n
        ):
            raise CorruptCheckpointError(f"{path}: tensor {name!r} has offsets {[begin, end]} that do not fit it")
    return header, 8 + n


def _shards(folder: str) -> dict[str, list[str]]:
    """Shard file -> the tensor names it must hold (the index's weight_map; every name of a single file)."""
    index_path = os.path.join(folder, INDEX)
    if os.path.exists(index_path):
        with open(index_path) as f:
            try:
                weight_map = json.load(f)["weight_map"]
            except (ValueError, KeyError, TypeError):
                raise CorruptCheckpointError(f"{index_path}: not an index with a 'weight_map'") from None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise CorruptCheckpointError(f"{index_path}: 'weight_map' should map tensor names to shard files")
        shards: dict[str, list[str]] = {}
        for name, shard in weight_map.items():
            if os.path.basename(shard) != shard:  # a shard lives in the folder: no paths out of it
                raise CorruptCheckpointError(f"{index_path}: shard {shard!r} of {name!r} is not a file name")
            shards.setdefault(shard, []).append(name)
        return shards
    if os.path.exists(os.path.join(folder, SINGLE)):
        return {SINGLE: []}  # [] : every tensor of the file
    raise FileNotFoundError(f"{folder}: neither {SINGLE} nor {INDEX} is there: not a Hugging Face model folder")


def _shard_path(folder: str, shard: str) -> str:
    path = os.path.join(folder, shard)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{os.path.join(folder, INDEX)} lists the shard {shard!r}, which is not in {folder}")
    return path


def load_hf_checkpoint(
    path: str | os.PathLike,
    *,
    device: Any = None,
    dtype: DType | str | None = None,
    select: Callable[[str], bool] | None = None,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Load a Hugging Face model folder: returns ``(tensors, config)``, ``tensors`` a flat dict name -> Tensor.

    ``device``: where the tensors go (default cpu). ``dtype``: the dtype floating-point tensors are converted to
    (integer and bool tensors keep theirs, as transformers' ``torch_dtype`` does); None keeps each tensor's.
    ``select(name) -> bool``: load only the tensors it accepts. Raises FileNotFoundError for a folder without
    ``config.json`` or weights, or a shard the index lists but that is missing, and CorruptCheckpointError (a
    RuntimeError) for an index naming a tensor its shard does not hold, or a truncated / corrupt shard.
    """
    folder = os.fspath(path)
    config_path = os.path.join(folder, CONFIG)
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"{folder}: no {CONFIG}: not a Hugging Face model folder")
    with open(config_path) as f:
        config = json.load(f)
    target = None if device is None else as_device(device)
    cast = None if dtype is None else as_dtype(dtype)
    tensors: dict[str, Tensor] = {}
    for shard, listed in _shards(folder).items():
        shard_path = _shard_path(folder, shard)
        with open(shard_path, "rb") as f:
            header, start = _header(f, shard_path)
            missing = [name for name in listed if name not in header]
            if missing:
                raise CorruptCheckpointError(
                    f"{os.path.join(folder, INDEX)} says {missing[:3]} are in {shard}, which does not hold them"
                )
            for name in listed or list(header):
                if select is not None and not select(name):
                    continue
                info = header[name]
                begin, end = info["data_offsets"]
                f.seek(start + begin)
                t = tensor_from_bytes(f.read(end - begin), as_dtype(DTYPE_NAMES[info["dtype"]]), list(info["shape"]))
                if cast is not None and t.dtype.is_floating_point:
                    t = t.to(cast)
                tensors[name] = t if target is None else t.to(target)
    return tensors, config


def estimate_checkpoint_bytes(path: str | os.PathLike, dtype: DType | str | None = None) -> int:
    """The bytes a checkpoint's tensors take once loaded, read from headers only: a Hugging Face folder (its
    shards), a safetensors file (genesis.save's too) or a torch.save zip. ``dtype``: count floating-point
    tensors at that dtype's size, as :func:`load_hf_checkpoint` with ``dtype=`` would hold them."""
    path = os.fspath(path)
    cast = None if dtype is None else as_dtype(dtype)
    if os.path.isdir(path):
        files = [_shard_path(path, shard) for shard in _shards(path)]
    else:
        files = [path]
    total = 0
    for file in files:
        with open(file, "rb") as f:
            head = f.read(9)
        if head[:4] == b"PK\x03\x04" and head[8:9] != b"{":  # torch.save's zip: the storages are its data/ entries
            with zipfile.ZipFile(file) as zf:
                total += sum(i.file_size for i in zf.infolist() if i.filename.split("/")[-2:-1] == ["data"])
            continue
        with open(file, "rb") as f:
            header, _ = _header(f, file)
        for info in header.values():
            entry = as_dtype(DTYPE_NAMES[info["dtype"]])
            size = cast.itemsize if cast is not None and entry.is_floating_point else entry.itemsize
            total += math.prod(info["shape"]) * size
    return total


__all__ = ["estimate_checkpoint_bytes", "load_hf_checkpoint"]
