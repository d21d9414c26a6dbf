"""Issue #30's runtime names against torch: constants, dtype information, layouts and memory formats, tensor
predicates, anomaly mode (a NaN gradient raises naming its node) and the re-exported cuda / amp classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import genesis

DTYPES = ["float32", "float64", "float16", "bfloat16"]


def test_constants():
    assert (genesis.e, genesis.pi, genesis.inf) == (torch.e, torch.pi, torch.inf)
    assert math.isnan(genesis.nan) and genesis.newaxis is None
    assert genesis.dtype is type(genesis.float32)


@pytest.mark.parametrize("name", DTYPES)
def test_finfo_matches_torch(name):
    got, expected = genesis.finfo(getattr(genesis, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(got, field) == pytest.approx(getattr(expected, field), rel=1e-6), field
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    got, expected = genesis.iinfo(getattr(genesis, name)), torch.iinfo(getattr(torch, name))
    assert (got.bits, got.min, got.max, got.dtype) == (expected.bits, expected.min, expected.max, expected.dtype)


def test_info_refusals():
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        genesis.finfo(genesis.int32)
    with pytest.raises(TypeError, match="iinfo\\(\\) requires an integer input type"):
        genesis.iinfo(genesis.float32)


def test_can_cast_and_result_type(device):
    names = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
    for a in names:
        for b in names:
            assert genesis.can_cast(getattr(genesis, a), getattr(genesis, b)) == torch.can_cast(
                getattr(torch, a), getattr(torch, b)
            ), (a, b)
    cases = [
        (np.array([1, 2]), 1.0),
        (np.array([1, 2], dtype=np.int32), np.array(1.0)),
        (np.array(1.0), np.array([1], dtype=np.int32)),
        (np.array([True]), 3),
    ]
    for a, b in cases:
        ga = genesis.tensor(a, device=device)
        gb = genesis.tensor(b, device=device) if isinstance(b, np.ndarray) else b
        tb = torch.tensor(b) if isinstance(b, np.ndarray) else b
        assert genesis.result_type(ga, gb).name == str(torch.result_type(torch.tensor(a), tb)).split(".")[-1]


def test_layouts_and_memory_formats():
    for name in ("strided", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        assert repr(getattr(genesis, name)) == repr(getattr(torch, name)).replace("torch.", "genesis.")
    assert isinstance(genesis.strided, genesis.layout)
    assert isinstance(genesis.channels_last, genesis.memory_format)


def test_tensor_predicates(device):
    x = genesis.tensor([[1.5, 0.0]], device=device)
    assert genesis.typename(x).endswith("FloatTensor")
    assert genesis.typename(3) == torch.typename(3) == "int"
    assert genesis.is_nonzero(genesis.tensor([2], device=device)) and not genesis.is_nonzero(x[0, 1:])
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        genesis.is_nonzero(x)
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        genesis.is_nonzero(genesis.ones(0, device=device))
    assert genesis.is_same_size(x, x * 2) and not genesis.is_same_size(x, x.t())
    assert genesis.is_signed(x) and not genesis.is_signed(genesis.tensor([1], dtype=genesis.uint8, device=device))
    assert genesis.is_distributed(x) is False and genesis.is_vulkan_available() is False
    assert genesis.get_device(x) == (-1 if device == "cpu" else 0)


def test_anomaly_mode_names_the_node_of_a_nan_gradient(device):
    assert not genesis.is_anomaly_enabled() and genesis.is_anomaly_check_nan_enabled()
    x = genesis.tensor([-1.0, 4.0], device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = genesis.autograd.detect_anomaly()
    with mode:
        assert genesis.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward\w*' returned nan values in its 0th output"):
            x.sqrt().sum().backward()
        (x * 2).sum().backward()  # finite gradients pass
    assert not genesis.is_anomaly_enabled()
    x.grad = None
    x.sqrt().sum().backward()  # outside the mode: NaN flows, as torch
    assert math.isnan(x.grad.cpu().numpy()[0])
    with genesis.autograd.set_detect_anomaly(True):
        assert genesis.is_anomaly_enabled()
    genesis.set_anomaly_enabled(False)
    assert not genesis.is_anomaly_enabled()


def test_reexports():
    assert genesis.Stream is genesis.cuda.Stream and genesis.Event is genesis.cuda.Event
    assert genesis.OutOfMemoryError is genesis.cuda.OutOfMemoryError
    assert genesis.GradScaler is genesis.amp.GradScaler
    assert not genesis.is_inference_mode_enabled()
    with genesis.inference_mode():
        assert genesis.is_inference_mode_enabled()
