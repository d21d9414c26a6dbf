"""GradScaler: loss scaling for float16 training, with the overflow check kept on the device.

``scale(loss)`` multiplies by the current scale; ``unscale_(optimizer)`` divides the
gradients back in place and accumulates, on the device, whether any of them is inf or
NaN; ``step(optimizer)`` reads that one flag back (the only host synchronisation of a
step) and skips the optimizer step when it is set; ``update()`` then backs the scale off
after an overflow, or grows it after ``growth_interval`` clean steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from genesis_autograd import Tensor, float32, no_grad, zeros


class GradScaler:
    """torch.amp.GradScaler's API: scale, unscale_, step, update, get_scale, state_dict.

    Args:
        device: the device type of the gradients (``"cuda"`` or ``"cpu"``).
        init_scale: the first scale factor.
        growth_factor: the scale is multiplied by it after ``growth_interval`` steps without overflow.
        backoff_factor: the scale is multiplied by it after a step with inf / NaN gradients.
        growth_interval: clean steps between two growths.
        enabled: ``False`` makes every method a pass-through.
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if growth_factor <= 1.0:
            raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"The backoff factor must be < 1.0 and > 0, got {backoff_factor}")
        if growth_interval <= 0 or not isinstance(growth_interval, int):
            raise ValueError(f"growth_interval must be a positive int, got {growth_interval!r}")
        self._device = device
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._enabled = enabled
        # per optimizer (by id) since the last update(): its found-inf flag on the device, then,
        # once step() read it, the host's answer.
        self._found_inf: dict[int, Tensor] = {}
        self._stepped: dict[int, bool] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or nested lists / tuples of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place; note on the device whether any is inf / NaN."""
        if not self._enabled:
            return
        key = id(optimizer)
        if key in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inverse = 1.0 / self._scale
        found = None
        with no_grad():
            for grad in _grads(optimizer):
                grad.mul_(inverse)
                bad = grad.isfinite().logical_not().any()
                found = bad if found is None else found.logical_or(bad)
        if found is None:  # no gradients at all: nothing overflowed
            found = zeros((), dtype=float32, device=self._device).bool()
        self._found_inf[key] = found

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale if not yet done, then ``optimizer.step(*args, **kwargs)`` unless a gradient overflowed."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        key = id(optimizer)
        if key in self._stepped:
            raise RuntimeError("step() has already been called since the last update().")
        if key not in self._found_inf:
            self.unscale_(optimizer)
        overflowed = bool(self._found_inf[key].item())  # the one host read of the step
        self._stepped[key] = overflowed
        return None if overflowed else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off after an overflow, grow after ``growth_interval`` clean steps; or set ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif self._stepped:
            if any(self._stepped.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._found_inf.clear()
        self._stepped.clear()

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _grads(optimizer: Any) -> Iterable[Tensor]:
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                yield p.grad
