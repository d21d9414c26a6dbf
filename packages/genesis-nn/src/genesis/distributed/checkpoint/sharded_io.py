"""save / load of a sharded state dict: one safetensors file per rank and a JSON index, no pickle
(torch.distributed.checkpoint's save / load, with genesis' own file layout).

A state dict (nested dicts of tensors and JSON values, e.g. ``{"model": ..., "optim": ...}``) is flattened
to dotted keys. Each rank writes ``__{rank}_0.safetensors`` with its rows of every ShardedTensor (named by
key) and, on rank 0, the replicated tensors; the file's ``__metadata__`` says which global rows each
entry holds. Rank 0 then writes ``.metadata.json``: per key, the global shape, dtype and the pieces (file,
first row, rows), and every non-tensor value. load fills the given state dict in place: each tensor reads
the rows it holds from whichever pieces overlap them, so a checkpoint written by 3 ranks loads on 2.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor, as_dtype

from ...serialization_bytes import DTYPE_CODES, DTYPE_NAMES, CorruptCheckpointError, tensor_bytes, tensor_from_bytes
from ..collectives import barrier
from ..fsdp.sharded_tensor import ShardedTensor
from ..process_group import ProcessGroup, default_group

INDEX = ".metadata.json"


def _flatten(state: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in state.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _rows(value: Tensor) -> tuple[int, int, tuple[int, ...]]:
    """(first global row, rows, global shape) of a value: a ShardedTensor's rows, else the whole tensor."""
    if isinstance(value, ShardedTensor):
        spec = value.shard_spec
        return spec.row_start, spec.local_rows, spec.global_shape
    shape = tuple(value.shape)
    return 0, shape[0] if shape else 1, shape


def _write_safetensors(path: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    header: dict[str, Any] = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        data = tensor_bytes(t)
        header[name] = {
            "dtype": DTYPE_CODES[t.dtype.name],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def _read_header(path: str) -> tuple[dict[str, Any], int]:
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise CorruptCheckpointError(f"{path}: not a safetensors file")
        n = struct.unpack("<Q", raw)[0]
        return json.loads(f.read(n)), 8 + n


def save(
    state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike, process_group: ProcessGroup | None = None
) -> None:
    """Write this rank's shards of ``state_dict`` under the folder ``checkpoint_id`` (every rank calls it)."""
    group = default_group(process_group)
    rank, folder = group.rank(), os.fspath(checkpoint_id)
    os.makedirs(folder, exist_ok=True)
    flat = _flatten(state_dict)
    tensors: dict[str, Tensor] = {}
    pieces: dict[str, list[int]] = {}
    values: dict[str, Any] = {}
    for key, value in flat.items():
        if isinstance(value, Tensor):
            if not isinstance(value, ShardedTensor) and rank != 0:
                continue  # replicated: rank 0's copy
            start, rows, shape = _rows(value)
            tensors[key] = value.detach().contiguous()
            pieces[key] = [start, rows, *shape]
        elif rank == 0:
            values[key] = value
    name = f"__{rank}_0.safetensors"
    _write_safetensors(os.path.join(folder, name), tensors, {"pieces": json.dumps(pieces)})
    barrier(group)
    if rank == 0:
        index: dict[str, Any] = {"world_size": group.size(), "tensors": {}, "values": values}
        for r in range(group.size()):
            file = f"__{r}_0.safetensors"
            header, _ = _read_header(os.path.join(folder, file))
            for key, (start, rows, *shape) in json.loads(header["__metadata__"]["pieces"]).items():
                entry = index["tensors"].setdefault(key, {"shape": shape, "dtype": header[key]["dtype"], "pieces": []})
                entry["pieces"].append({"file": file, "row_start": start, "rows": rows})
        with open(os.path.join(folder, INDEX), "w") as f:
            json.dump(index, f, indent=1)
    barrier(group)


def _read_rows(folder: str, piece: dict[str, Any], key: str, first: int, last: int, cache: dict) -> Tensor:
    """Global rows [first, last) of ``key`` from one piece (which holds them)."""
    path = os.path.join(folder, piece["file"])
    if path not in cache:
        cache[path] = _read_header(path)
    header, data_start = cache[path]
    entry = header[key]
    dtype = as_dtype(DTYPE_NAMES[entry["dtype"]])
    shape = entry["shape"]
    row_bytes = ((len(shape) > 1 and int(_prod(shape[1:]))) or 1) * dtype.itemsize
    begin = data_start + entry["data_offsets"][0] + (first - piece["row_start"]) * row_bytes
    with open(path, "rb") as f:
        f.seek(begin)
        data = f.read((last - first) * row_bytes)
    return tensor_from_bytes(data, dtype, [last - first, *shape[1:]] if shape else [])


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def load(
    state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike, process_group: ProcessGroup | None = None
) -> None:
    """Fill ``state_dict`` in place from the checkpoint: each tensor with the rows it holds (a ShardedTensor:
    its rows of the global tensor; another tensor: all of it); non-tensor values are replaced."""
    folder = os.fspath(checkpoint_id)
    with open(os.path.join(folder, INDEX)) as f:
        index = json.load(f)
    cache: dict[str, Any] = {}
    _load_into(state_dict, "", index, folder, cache)


def _load_into(state: dict[str, Any], prefix: str, index: dict[str, Any], folder: str, cache: dict) -> None:
    for key, value in list(state.items()):
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _load_into(value, name + ".", index, folder, cache)
        elif isinstance(value, Tensor):
            entry = index["tensors"].get(name)
            if entry is None:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {name}.")
            start, rows, shape = _rows(value)
            if list(shape) != list(entry["shape"]):
                raise RuntimeError(
                    f"Size mismatch for {name}: the checkpoint has shape {entry['shape']}, the state dict {list(shape)}"
                )
            with ag.no_grad():
                if not shape:
                    piece = entry["pieces"][0]
                    value.copy_(_read_rows(folder, piece, name, 0, 1, cache).reshape(()).to(value.dtype))
                    continue
                target = value.detach()
                for piece in entry["pieces"]:
                    lo = max(start, piece["row_start"])
                    hi = min(start + rows, piece["row_start"] + piece["rows"])
                    if lo < hi:
                        part = _read_rows(folder, piece, name, lo, hi, cache)
                        target[lo - start : hi - start] = part.to(device=value.device, dtype=value.dtype)
        elif name in index["values"]:
            state[key] = index["values"][name]
