"""Parameters as one flat vector and back (torch.nn.utils.parameters_to_vector / vector_to_parameters)."""

from __future__ import annotations

from collections.abc import Iterable

from genesis_autograd import Tensor, cat


def _check_same_device(param: Tensor, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable)."""
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.reshape(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter show its slice of ``vec`` (the parameters then share ``vec``'s memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[pointer : pointer + n].view_as(param).data
        pointer += n
