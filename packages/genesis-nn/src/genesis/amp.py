"""Automatic mixed precision: autocast for matrix products and a GradScaler.

Inside ``autocast`` the matrix products of nn.functional.linear and genesis.matmul
run in the autocast dtype (float16 or bfloat16) while everything else keeps its
dtype; GradScaler scales the loss so float16 gradients do not underflow, and skips
steps whose gradients overflowed.
"""

from __future__ import annotations

import threading

from genesis_autograd import as_dtype, bfloat16, float16, no_grad


class _State(threading.local):
    enabled = False
    dtype = float16


_state = _State()


def is_autocast_enabled() -> bool:
    return _state.enabled


def get_autocast_dtype():
    return _state.dtype


class autocast:
    def __init__(self, device_type: str = "cuda", dtype=None, enabled: bool = True):
        self.device_type = device_type
        self.dtype = as_dtype(dtype) if dtype is not None else (float16 if device_type == "cuda" else bfloat16)
        self.enabled = enabled

    def __enter__(self):
        self.prev = (_state.enabled, _state.dtype)
        _state.enabled, _state.dtype = self.enabled, self.dtype
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.dtype = self.prev
        return False


def cast_for_matmul(*tensors):
    """The operands of a matrix product as autocast wants them."""
    if not _state.enabled:
        return tensors
    return tuple(t.to(dtype=_state.dtype) if t is not None and t.is_floating_point() else t for t in tensors)


class GradScaler:
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self.scale_value = init_scale
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval, self.enabled = growth_interval, enabled
        self._good_steps = 0
        self._found_inf = False
        self._unscaled: set = set()

    def scale(self, loss):
        return loss * self.scale_value if self.enabled else loss

    def get_scale(self) -> float:
        return self.scale_value

    def unscale_(self, optimizer) -> None:
        if not self.enabled or id(optimizer) in self._unscaled:
            return
        inv = 1.0 / self.scale_value
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    if not p.grad.isfinite().all().item():
                        self._found_inf = True
        self._unscaled.add(id(optimizer))

    def step(self, optimizer, *args, **kwargs):
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        self.unscale_(optimizer)
        if self._found_inf:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self) -> None:
        if not self.enabled:
            return
        if self._found_inf:
            self.scale_value *= self.backoff_factor
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps % self.growth_interval == 0:
                self.scale_value *= self.growth_factor
        self._found_inf = False
        self._unscaled.clear()
