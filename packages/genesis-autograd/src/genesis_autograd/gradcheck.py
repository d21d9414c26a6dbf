"""Finite-difference checks of analytical gradients (float64), as torch.autograd.gradcheck."""

from __future__ import annotations

import numpy as np

from .autograd_api import grad
from .factories import tensor
from .tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when the analytical and numerical Jacobians differ."""


def _flat_outputs(out) -> list[Tensor]:
    return [out] if isinstance(out, Tensor) else [o for o in out if isinstance(o, Tensor)]


def _numerical_jacobian(fn, inputs, i, eps):
    """d outputs / d inputs[i] by central differences, one column per input element."""
    x = inputs[i]
    base = x.detach().cpu().numpy().copy()
    flat = base.reshape(-1)
    columns = []
    for k in range(flat.size):
        values = []
        for sign in (1, -1):
            perturbed = flat.copy()
            perturbed[k] += sign * eps
            args = list(inputs)
            args[i] = tensor(
                perturbed.reshape(base.shape), dtype=x.dtype, device=x.device, requires_grad=x.requires_grad
            )
            outs = _flat_outputs(fn(*args))
            values.append(np.concatenate([o.detach().cpu().numpy().reshape(-1).astype(np.float64) for o in outs]))
        columns.append((values[0] - values[1]) / (2 * eps))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


def _analytical_jacobian(fn, inputs, i, create_graph=False):
    outs = _flat_outputs(fn(*inputs))
    rows = []
    for out in outs:
        flat = out.reshape(-1)
        for k in range(flat.shape[0]):
            if not flat.requires_grad:  # an output that does not depend on any input: zero rows
                rows.append(np.zeros(inputs[i].numel()))
                continue
            (g,) = grad(flat[k], [inputs[i]], retain_graph=True, allow_unused=True)
            rows.append(np.zeros(inputs[i].numel()) if g is None else g.detach().cpu().numpy().reshape(-1))
    return np.stack(rows, axis=0) if rows else np.zeros((0, inputs[i].numel()))


def gradcheck(
    fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True
) -> bool:
    """Compare the engine's Jacobian with central differences for every input that requires grad."""
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        if x.dtype.name != "float64":
            raise GradcheckError(f"gradcheck expects float64 inputs, got {x.dtype.name} for input {i}")
        numerical = _numerical_jacobian(fn, inputs, i, eps)
        analytical = _analytical_jacobian(fn, inputs, i)
        if numerical.shape != analytical.shape or not np.allclose(analytical, numerical, atol=atol, rtol=rtol):
            if raise_exception:
                raise GradcheckError(
                    f"Jacobian mismatch for input {i}:\nnumerical:\n{numerical}\nanalytical:\n{analytical}"
                )
            return False
    return True


def gradgradcheck(
    fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0
) -> bool:
    """gradcheck of the map inputs -> d(sum(fn * v))/d inputs, for a fixed random v."""
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    rng = np.random.default_rng(seed)
    outs = _flat_outputs(fn(*inputs))
    weights = [tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device) for o in outs]
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*args):
        outs = _flat_outputs(fn(*args))
        total = sum((o * w).sum() for o, w in zip(outs, weights))
        wrt = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        gs = grad(total, wrt, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs, eps, atol, rtol, raise_exception) if diff else True
