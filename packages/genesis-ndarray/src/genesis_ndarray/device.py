"""Devices: ``cpu``, ``cuda``, ``cuda:N``, with torch.device's spelling, repr and equality.

As in torch, ``device("cuda")`` has no index (``index is None``, repr ``device(type='cuda')``, unequal to
``cuda:0``): it means *this thread's current CUDA device* (genesis_storage's, set by ``set_device`` or
``with cuda.device(i)``), read when something is made or moved there. ``resolve_device`` turns a device
argument into the concrete device an array lives on; an array's ``device`` always has an index.
"""

from __future__ import annotations

from genesis_storage import current_device


class Device:
    """A device type plus an index (None for cpu, and for "cuda" meaning the current one). Immutable
    and hashable."""

    __slots__ = ("_key", "index", "type")

    def __init__(self, type: str, index: int | None = None):
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' must be int, not {index.__class__.__name__}")
        if type == "cpu":
            if index not in (None, 0):
                raise RuntimeError(f"cpu device index must be 0 or None, got {index}")
            index = None
        elif index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index
        self._key = (type, index)

    def __eq__(self, other) -> bool:
        if other is self:  # the common case: devices come from as_device's cache
            return True
        if isinstance(other, str):  # (a genesis convenience: torch compares devices with devices only)
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

    def __enter__(self) -> Device:
        """``with device("cuda"):`` makes this the default device of factories called without device=."""
        global _default
        _default_stack.append(_default)
        _default = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _default
        _default = _default_stack.pop()


_cache: dict = {}
_objects: dict[tuple, Device] = {}  # (type, index) -> the one Device that as_device hands out for it


def _canonical(dev: Device) -> Device:
    """One object per device, so that the equality every op asks (optimizers: hundreds of tensors per
    step) is answered by ``is``: a Device made by another route compares equal but goes through __eq__."""
    return _objects.setdefault(dev._key, dev)


def as_device(value, index: int | None = None) -> Device:
    """Parse a device argument as torch.device does: "cpu", "cuda" (no index: the current device, resolved
    later), "cuda:1", ("cuda", 1), an int (a cuda index), a torch.device, or a Device passed through."""
    if index is not None:
        if not isinstance(value, str) or ":" in value:
            raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {value}")
        return _canonical(Device(value, index))
    if isinstance(value, Device):
        return value
    found = _cache.get(value)
    if found is not None:
        return found
    if isinstance(value, int) and not isinstance(value, bool):
        dev = Device("cuda", value)
    elif isinstance(value, str):
        kind, sep, idx = value.partition(":")
        # torch's grammar: digits without a sign, a space or a leading zero ("cuda:01" is refused)
        if sep and not (idx.isdigit() and str(int(idx)) == idx):
            raise RuntimeError(f"Invalid device string: '{value}'")
        dev = Device(kind, int(idx) if sep else None)
    elif hasattr(value, "type") and hasattr(value, "index"):  # e.g. a torch.device
        dev = Device(value.type, value.index)
    else:
        raise TypeError(f"cannot interpret {value!r} as a device")
    dev = _canonical(dev)
    if isinstance(value, str | int):
        _cache[value] = dev
    return dev


cpu = _canonical(Device("cpu"))
_cuda: dict[int, Device] = {}  # index -> the one Device("cuda", index) that resolve_device returns


def cuda_device(index: int) -> Device:
    """``Device("cuda", index)``, one object per index (so that ``is`` answers the common comparison)."""
    dev = _cuda.get(index)
    if dev is None:
        dev = _cuda.setdefault(index, as_device(f"cuda:{index}"))
    return dev


def resolve_device(value) -> Device:
    """The concrete device a device argument names: a device without an index ("cuda") is this thread's
    current CUDA device, as torch reads it when it makes or moves a tensor. Everything else as as_device.
    Cheap for the common argument, a Device that already has its index (one class test, two attributes)."""
    dev = value if value.__class__ is Device else as_device(value)
    if dev.index is None and dev.type == "cuda":
        index = current_device()
        found = _cuda.get(index)
        return found if found is not None else cuda_device(index)
    return dev


# The device factories use when called without device= (torch.set_default_device); cpu unless set.
_default: Device = cpu
_default_stack: list[Device] = []  # the defaults that enclosing ``with device(...)`` blocks replaced


def default_device() -> Device:
    """The factories' default device as set (a bare "cuda" is resolved when something is made there)."""
    return _default


def get_default_device() -> Device:
    """The device factories use without device=, with its index (torch.get_default_device)."""
    return resolve_device(_default)


def set_default_device(device) -> None:
    """Make ``device`` the default of factories called without device=; None restores cpu."""
    global _default
    _default = cpu if device is None else as_device(device)
