"""Schedulers made of schedulers: SequentialLR (one after another) and ChainedScheduler (all at once)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ..optimizer import Optimizer
from .base import LRScheduler, _group_values, _set_group_value
from .plateau import ReduceLROnPlateau


def _check_members(owner: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                "schedulers sequence."
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                f"{type(scheduler).__name__} at index {i} has {scheduler.optimizer}, which is "
                f"different from {type(optimizer).__name__}."
            )


class _Composite(LRScheduler):
    """state_dict / load_state_dict carry the member schedulers' states."""

    _schedulers: Sequence[LRScheduler]  # set by each subclass's __init__

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        members = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, members):
            scheduler.load_state_dict(saved)


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` between ``milestones[i - 1]`` and ``milestones[i]``."""

    def __init__(
        self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        _check_members(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the "
                f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The members already took their first steps when they were built: undo those, start the first one.
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self._undo_initial_steps(self)
        idx = bisect_right(milestones, 0)
        schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def _undo_initial_steps(self, scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for s in scheduler._schedulers:
                self._undo_initial_steps(s)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    # torch's SequentialLR.step takes no epoch either (LRScheduler's is deprecated)
    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch: step the scheduler whose milestone range it falls in."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)  # a member starts at its own epoch 0 (closed form)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in turn on each step; their factors multiply."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_members(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(schedulers[-1].optimizer, "lr")

    # torch's ChainedScheduler.step takes no epoch either (LRScheduler's is deprecated)
    def step(self) -> None:  # type: ignore[override]
        """Step every member scheduler once, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")
