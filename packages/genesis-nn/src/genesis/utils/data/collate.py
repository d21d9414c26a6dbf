"""default_collate / default_convert: samples to batches with torch's rules.

Tensors are stacked; numpy arrays and numbers become tensors (Python floats float64,
ints int64, bools bool); strings and bytes stay lists; dicts, namedtuples and other
sequences are collated field by field (a tuple sample gives a list, as torch's does).
"""

from __future__ import annotations

import collections.abc as abc

import numpy as np

from genesis_autograd import Tensor, from_numpy, stack, tensor

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_string_array(a: np.ndarray) -> bool:
    return a.dtype.char in "SaUO"


def default_collate(batch):
    """Merge a list of samples into a batch."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _is_string_array(elem):
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([from_numpy(np.ascontiguousarray(b)) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return from_numpy(np.array(batch))
    if isinstance(elem, float):  # through numpy: float64 all the way (no float32 detour)
        return from_numpy(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:  # a mapping type that cannot be built from a dict
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        size = len(elem)
        if not all(len(b) == size for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """Numpy arrays (and numpy scalars) to tensors, inside containers; everything else unchanged
    (the collate of a DataLoader without batching)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_string_array(data) else from_numpy(np.ascontiguousarray(data))
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return from_numpy(np.array(data))
    if isinstance(data, abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
