"""Devices: ``cpu``, ``cuda``, ``cuda:N``, with torch's spelling and repr."""

from __future__ import annotations


class Device:
    """A device type plus an index (None for cpu). Immutable and hashable."""

    __slots__ = ("_key", "index", "type")

    def __init__(self, type: str, index: int | None = None):
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if type == "cpu":
            if index not in (None, 0):
                raise RuntimeError(f"cpu device index must be 0 or None, got {index}")
            index = None
        elif index is None:
            index = 0
        elif index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index
        self._key = (type, index)

    def __eq__(self, other) -> bool:
        if other is self:  # the common case: devices come from as_device's cache
            return True
        if isinstance(other, str):
            other = as_device(other)
        return isinstance(other, Device) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (Device, (self.type, self.index))


_cache: dict = {}


def as_device(value) -> Device:
    """Parse "cpu", "cuda", "cuda:1", an int (a cuda index), or pass a Device through."""
    if isinstance(value, Device):
        return value
    found = _cache.get(value)
    if found is not None:
        return found
    if isinstance(value, int) and not isinstance(value, bool):
        dev = Device("cuda", value)
    elif isinstance(value, str):
        kind, _, idx = value.partition(":")
        if idx and not idx.isdigit():
            raise RuntimeError(f"Invalid device string: '{value}'")
        dev = Device(kind, int(idx) if idx else None)
    elif hasattr(value, "type") and hasattr(value, "index"):  # e.g. a torch.device
        dev = Device(value.type, value.index)
    else:
        raise TypeError(f"cannot interpret {value!r} as a device")
    if isinstance(value, str | int):
        _cache[value] = dev
    return dev


cpu = Device("cpu")
