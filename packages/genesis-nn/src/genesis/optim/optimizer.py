"""Optimizer: parameter groups, per-parameter state, zero_grad and a state_dict in torch's layout.

Subclasses gather each group's parameters, gradients and state tensors into lists
and hand them to ONE multi-tensor update function (``sgd``, ``adam``, ...); that
function is the seam where a fused multi-tensor kernel can take over later, and the
state layout is the same whichever path ran.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from genesis_autograd import Tensor, enable_grad, float32, set_grad_enabled, tensor, zeros
from genesis_autograd.cuda import is_current_stream_capturing


class _RequiredParameter:
    """The default of a hyper-parameter every group must give (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad_for_differentiable(step: Callable) -> Callable:
    """Run ``step`` with gradients recorded only when the optimizer was built with differentiable=True."""

    @functools.wraps(step)
    def run(self, *args, **kwargs):
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)

    return run


def _to_float(x) -> float:
    """A hyper-parameter given as a one-element Tensor read as a Python number (lr may be a Tensor)."""
    return float(x.item()) if isinstance(x, Tensor) else x


def _multi_tensor(group: dict[str, Any], params: list[Tensor], grads: list[Tensor]) -> bool:
    """Whether a group's step takes the multi-tensor path (one fused launch per dtype on CUDA).

    As torch picks its foreach / fused implementations: asked for with ``foreach=True`` or
    ``fused=True``, or by default (both None) when the parameters are on a CUDA device. It also needs
    what the kernels need: one device, floating point parameters, gradients in their parameter's
    dtype, and no ``differentiable`` step. Layout does not matter (strided tensors are streamed as
    contiguous copies), and the states follow their parameters, so only these two lists are read:
    this runs every step over every parameter.
    """
    if group.get("differentiable") or group.get("foreach") is False or not params:
        return False
    device = params[0].device
    if not (group.get("fused") or group.get("foreach") or device.type == "cuda"):
        return False
    for p, g in zip(params, grads):
        a = p.data  # (the NDArray's plain attributes: each Tensor property is a call)
        d, dt, gdt = a.device, a.dtype, g.data.dtype
        if (d is not device and d != device) or not dt.is_floating_point or (gdt is not dt and gdt != dt):
            return False
    return True


def _new_step(param: Tensor, on_device: bool) -> Tensor:
    """The ``step`` counter of a new state: a float32 scalar on the cpu (no device work per step), or on the
    parameter's device when capturable / fused, as torch keeps it."""
    return zeros((), dtype=float32, device=param.device) if on_device else tensor(0.0, dtype=float32)


class Optimizer:
    """Base class: holds ``defaults``, ``param_groups`` and ``state``; subclasses implement ``step``."""

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {type(params).__name__}"
            )
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        out = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        return out + ")"

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the rest from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering "
                "of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names and len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        param_group["params"] = params
        if names:
            param_group["param_names"] = names

        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        taken = {id(p) for group in self.param_groups for p in group["params"]}
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in taken for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the gradients (default), or zero them in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimisation step, updating the parameters in place from their ``.grad``.

        Args:
            closure: a function that re-evaluates the model and returns the loss (it runs forward and backward
                itself); optional for most optimizers.

        Returns:
            The closure's loss, or None.
        """
        raise NotImplementedError

    def _cuda_graph_capture_health_check(self, fused_counts: bool = False) -> None:
        """Refuse to be captured in a CUDA graph where the step keeps host-side state: a step counter on
        the cpu would be read once, at capture, and every replay would reuse that count (torch's check
        and message). ``capturable=True`` (or, where the fused path keeps counters on the device and
        ``fused_counts`` says so, ``fused=True``) makes the step capturable."""
        if not is_current_stream_capturing():
            return
        ok = all(g.get("capturable") or (fused_counts and g.get("fused")) for g in self.param_groups)
        if not ok:
            raise RuntimeError(
                f"Attempting CUDA graph capture of step() for an instance of {type(self).__name__} but "
                "param_groups' capturable is False."
            )

    @staticmethod
    def _evaluate(closure):
        """The loss ``closure`` returns (it re-runs forward and backward, so gradients are on), or None."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ state_dict
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}``; indices count the
        parameters in group order, as torch numbers them. Tensors are referenced, not copied."""
        mapping: dict[int, int] = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state_dict: hyper-parameters per group, and per-parameter state cast to each parameter's
        device (and floating dtype, except ``step``)."""
        groups = self.param_groups
        saved_groups = [dict(g) for g in state_dict["param_groups"]]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups), chain.from_iterable(g["params"] for g in groups)
            )
        )
        on_device = {i: bool(g.get("fused") or g.get("capturable")) for g in saved_groups for i in g["params"]}

        def cast(param: Tensor, value, on_dev: bool, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    return value.to(dtype=float32, device=param.device) if on_dev else value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, on_dev, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, on_dev) for v in value)
            return value

        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v, on_device.get(k, False))
            else:
                state[k] = v
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
