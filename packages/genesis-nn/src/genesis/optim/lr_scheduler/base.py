"""LRScheduler: the base of the learning-rate schedulers (torch.optim.lr_scheduler's protocol).

A scheduler writes ``group["lr"]`` of every parameter group on each ``step()``. Most
schedules are *chainable*: ``get_lr`` derives the next rate from the current one, so
several schedulers may act on one optimizer; ``_get_closed_form_lr`` (where a
schedule has one) computes it from ``base_lrs`` when ``step(epoch)`` is given.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from genesis_autograd import Tensor

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different "
    "from None, the closed form is used instead of the new chainable form, where available."
)


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    """One value per parameter group: a list given as is (checked for length), a scalar repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return [p.clone() if isinstance(p, Tensor) else p for p in param]
    return [param.clone() if isinstance(param, Tensor) else param] * len(optimizer.param_groups)


def _group_values(optimizer: Optimizer, key: str) -> list:
    """group[key] of every group; a Tensor value copied, so the list never aliases the optimizer's."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value) -> None:
    """Write group[key]; a Tensor lr is filled in place (it may be captured by a compiled step)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _track_optimizer_steps(scheduler: LRScheduler) -> None:
    """Wrap optimizer.step once so that the scheduler can warn when it is stepped first, as torch does."""
    opt = scheduler.optimizer
    if getattr(opt.step, "_wrapped_by_lr_sched", False):
        return
    opt_ref = weakref.ref(opt)
    method = type(opt).step

    def step(*args, **kwargs):
        target = opt_ref()
        target._opt_called = True
        return method(target, *args, **kwargs)

    # A marker on the wrapper (as torch's), then the wrapper as this optimizer's own step, in front of the
    # class's: both are what the monkeypatch is for.
    step._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    opt.step = step  # type: ignore[method-assign]


class LRScheduler:
    """Adjusts the learning rates of ``optimizer``'s groups; ``last_epoch=-1`` starts a new schedule."""

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0."
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(self)
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the step that sets the first learning rates."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the schedule from a state_dict() (the optimizer's own state is restored separately)."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last step set (copies, one per group)."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next learning rates; each scheduler defines its schedule here."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (call after ``optimizer.step()``)."""
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before "
                    "`lr_scheduler.step()`.",
                    UserWarning,
                    stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call "
                    "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`. "
                    "Failure to do this will result in skipping the first value of the learning rate "
                    "schedule.",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """The old name of LRScheduler, kept as torch keeps it."""


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )
