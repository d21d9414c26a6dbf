"""F.affine_grid and F.grid_sample against torch in float64: every mode, padding mode and align_corners
in 2-D and 3-D, values and the gradients of input, grid and theta; warnings and argument errors."""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import check_forward_backward, g

import genesis
import genesis.nn.functional as F

PADDINGS = ("zeros", "border", "reflection")

CASES_2D = list(itertools.product(("bilinear", "nearest", "bicubic"), PADDINGS, (False, True)))
CASES_3D = list(itertools.product(("bilinear", "nearest"), PADDINGS, (False, True)))


def _grid(*shape: int) -> torch.Tensor:
    """Points over [-1.6, 1.6]: inside, on both sides of the border and a fold of reflection away."""
    return torch.rand(*shape, dtype=torch.float64) * 3.2 - 1.6


@pytest.mark.parametrize("mode,padding_mode,align_corners", CASES_2D)
def test_grid_sample_2d(device, mode, padding_mode, align_corners):
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    grid = _grid(2, 3, 6, 2)
    check_forward_backward(
        lambda a, b: TF.grid_sample(a, b, mode, padding_mode, align_corners),
        lambda a, b: F.grid_sample(a, b, mode, padding_mode, align_corners),
        [x, grid],
        device,
    )


@pytest.mark.parametrize("mode,padding_mode,align_corners", CASES_3D)
def test_grid_sample_3d(device, mode, padding_mode, align_corners):
    x = torch.randn(2, 2, 3, 4, 3, dtype=torch.float64)
    grid = _grid(2, 2, 3, 2, 3)
    check_forward_backward(
        lambda a, b: TF.grid_sample(a, b, mode, padding_mode, align_corners),
        lambda a, b: F.grid_sample(a, b, mode, padding_mode, align_corners),
        [x, grid],
        device,
    )


def test_grid_sample_float32_and_single_pixel(device):
    x = torch.randn(1, 2, 1, 1)  # a one-pixel input: every reflection folds onto it
    grid = _grid(1, 3, 3, 2).float()
    for padding_mode in PADDINGS:
        check_forward_backward(
            lambda a, b, p=padding_mode: TF.grid_sample(a, b, "bilinear", p, False),
            lambda a, b, p=padding_mode: F.grid_sample(a, b, "bilinear", p, False),
            [x, grid],
            device,
        )


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 4), (2, 2, 3, 4, 2), (2, 1, 1, 2, 1)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(device, size, align_corners):
    k = len(size) - 2
    theta = torch.randn(size[0], k, k + 1, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit-size grids with align_corners warn, in both
        check_forward_backward(
            lambda t: TF.affine_grid(t, size, align_corners),
            lambda t: F.affine_grid(t, size, align_corners),
            [theta],
            device,
        )


def test_affine_grid_into_grid_sample(device):
    """A spatial transformer's path: theta's gradient through the grid and the sampler."""
    x = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    theta = torch.eye(2, 3, dtype=torch.float64).repeat(2, 1, 1) + 0.3 * torch.randn(2, 2, 3, dtype=torch.float64)

    def run(fn):
        return lambda a, t: fn.grid_sample(a, fn.affine_grid(t, (2, 3, 4, 6), False), "bilinear", "border", False)

    check_forward_backward(run(TF), run(F), [x, theta], device)


def test_default_align_corners_warns_as_torch():
    x, grid = g(torch.randn(1, 1, 3, 3), "cpu"), g(_grid(1, 2, 2, 2).float(), "cpu")
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(g(torch.randn(1, 2, 3), "cpu"), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="unit-size grids"):
        F.affine_grid(g(torch.randn(1, 2, 3), "cpu"), (1, 1, 1, 2), align_corners=True)


def test_grid_sample_errors(device):
    x = genesis.randn(2, 3, 4, 5, device=device)
    grid = genesis.rand(2, 3, 3, 2, device=device)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'"):
        F.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="circular", align_corners=False)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(x, grid.double(), align_corners=False)
    with pytest.raises(RuntimeError, match=r"same batch size, but got input with sizes \[2, 3, 4, 5\]"):
        F.grid_sample(x, grid[:1], align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, genesis.rand(2, 3, 3, 3, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match="expected 4D input and grid with same number of dimensions"):
        F.grid_sample(x, genesis.rand(2, 3, 3, 1, 2, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(
            genesis.randn(1, 1, 2, 2, 2, device=device),
            genesis.rand(1, 2, 2, 2, 3, device=device),
            mode="bicubic",
            align_corners=False,
        )
    with pytest.raises(RuntimeError, match=r"non-empty spatial dimensions.*dimension 2 being empty"):
        F.grid_sample(genesis.randn(2, 3, 0, 5, device=device), grid, align_corners=False)


def test_affine_grid_errors(device):
    theta = genesis.randn(2, 2, 3, device=device)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(genesis.ones(2, 2, 3, dtype=genesis.int64, device=device), (2, 3, 4, 5), False)
    with pytest.raises(ValueError, match=r"shape Nx3x4 for size \(2, 3, 4, 5, 6\)"):
        F.affine_grid(theta, (2, 3, 4, 5, 6), False)
    with pytest.raises(ValueError, match="shape Nx2x3"):
        F.affine_grid(genesis.randn(2, 3, 3, device=device), (2, 3, 4, 5), False)
    with pytest.raises(NotImplementedError, match=r"only supports 4D and 5D sizes.*Got size \(2, 3, 4\)"):
        F.affine_grid(theta, (2, 3, 4), False)
    with pytest.raises(ValueError, match=r"Expected non-zero, positive output size. Got \(2, 3, 0, 5\)"):
        F.affine_grid(theta, (2, 3, 0, 5), False)
    with pytest.raises(RuntimeError, match="theta holds 2 matrices but size asks for a batch of 3"):
        F.affine_grid(theta, (3, 3, 4, 5), False)
