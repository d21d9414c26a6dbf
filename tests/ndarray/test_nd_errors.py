"""Bad input raises torch's exception class, with the shapes, dims or devices named."""

from __future__ import annotations

import re

import pytest
import torch
from nd_helpers import from_torch, random_tensor

import genesis_ndarray as nd
from device_support import HAS_CUDA, requires_cuda


def _names_shape(message: str, shape) -> bool:
    """Whether ``message`` names ``shape`` in one of torch's spellings: 2x3, [2, 3] or (2, 3)."""
    spellings = ["x".join(map(str, shape)), str(list(shape)), str(tuple(shape)).replace(",)", ")")]
    return any(s in message for s in spellings)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 3)), ((3,), (4,)), ((2, 1, 5), (3, 4))])
@pytest.mark.parametrize("op", ["add", "mul", "maximum", "eq"])
def test_broadcast_mismatch_names_both_sizes(device, sa, sb, op):
    a, b = from_torch(random_tensor(sa), device), from_torch(random_tensor(sb), device)
    with pytest.raises(RuntimeError) as info:
        a.binary(op, b)
    with pytest.raises(RuntimeError) as expected:
        getattr(torch, op)(random_tensor(sa), random_tensor(sb))
    sizes = [int(s) for s in re.findall(r"\((\d+)\)", str(expected.value))]
    assert len(sizes) == 2
    for size in sizes:
        assert f"({size})" in str(info.value)


def test_where_shape_mismatch_raises(device):
    cond = from_torch(torch.rand(3, 4) > 0.5, device)
    with pytest.raises(RuntimeError, match=r"\(4\).*\(5\)|\(5\).*\(4\)"):
        from_torch(random_tensor((3, 5)), device).where(cond, from_torch(random_tensor((3, 5)), device))


MATMUL_BAD = [
    ((3,), (4,)),
    ((2, 3), (4, 5)),
    ((2, 3), (4,)),
    ((3,), (4, 5)),
    ((2, 2, 3), (2, 4, 5)),
    ((2, 2, 3), (3, 3, 5)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_BAD, ids=lambda s: "x".join(map(str, s)))
def test_matmul_shape_mismatch_names_both_shapes(device, sa, sb):
    a, b = from_torch(random_tensor(sa), device), from_torch(random_tensor(sb), device)
    with pytest.raises(RuntimeError) as info:
        a @ b
    message = str(info.value)
    if sa[-1] == sb[-2] if len(sb) > 1 else sa[-1] == sb[0]:
        # the inner sizes agree; the batch dims clash: the broadcast error names both sizes
        assert "(2)" in message and "(3)" in message
    else:
        assert _names_shape(message, sa) and _names_shape(message, sb), message


def test_matmul_of_a_zero_dim_operand_raises(device):
    a = from_torch(random_tensor(()), device)
    with pytest.raises(RuntimeError, match="1D"):
        a @ from_torch(random_tensor((3,)), device)


DIM_ERRORS = [
    ("sum", lambda x: x.sum(2)),
    ("sum-tuple", lambda x: x.sum((0, -3))),
    ("mean", lambda x: x.mean(-3)),
    ("amax", lambda x: x.amax(5)),
    ("max-dim", lambda x: x.max(2)),
    ("argmax", lambda x: x.argmax(2)),
    ("var", lambda x: x.var(2)),
    ("logsumexp", lambda x: x.logsumexp(-3)),
    ("softmax", lambda x: x.softmax(2)),
    ("log_softmax", lambda x: x.log_softmax(-3)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("permute", lambda x: x.permute(0, 2)),
    ("unsqueeze", lambda x: x.unsqueeze(3)),
    ("squeeze", lambda x: x.squeeze(2)),
    ("flatten", lambda x: x.flatten(0, 2)),
    ("narrow", lambda x: x.narrow(2, 0, 1)),
]


@pytest.mark.parametrize("fn", [f for _, f in DIM_ERRORS], ids=[n for n, _ in DIM_ERRORS])
def test_dim_out_of_range_raises_index_error(device, fn):
    t = random_tensor((2, 3))
    with pytest.raises(IndexError) as expected:
        fn(t)
    with pytest.raises(IndexError, match="Dimension out of range") as info:
        fn(from_torch(t, device))
    got = re.search(r"\[(-?\d+), (-?\d+)\], but got (-?\d+)", str(info.value))
    want = re.search(r"\[(-?\d+), (-?\d+)\], but got (-?\d+)", str(expected.value))
    assert got and want and got.groups() == want.groups()


@pytest.mark.parametrize("index", [5, -3, (0, 3), (0, 0, 0)], ids=str)
def test_index_out_of_range_raises_index_error(device, index):
    a = from_torch(random_tensor((2, 3)), device)
    with pytest.raises(IndexError):
        random_tensor((2, 3))[index]
    with pytest.raises(IndexError):
        a[index]


@pytest.mark.parametrize(
    "bad",
    [lambda x: x.reshape(5), lambda x: x.view(4, 2), lambda x: x.reshape(-1, -1), lambda x: x.expand(3, 3)],
    ids=["reshape", "view", "two-infer", "expand"],
)
def test_bad_shapes_raise_runtime_error(device, bad):
    t = random_tensor((2, 3))
    with pytest.raises(RuntimeError):
        bad(t)
    with pytest.raises(RuntimeError):
        bad(from_torch(t, device))


def test_narrow_past_the_end_raises(device):
    t = random_tensor((2, 3))
    with pytest.raises((IndexError, RuntimeError)) as expected:
        t.narrow(1, 2, 2)
    with pytest.raises(type(expected.value)):
        from_torch(t, device).narrow(1, 2, 2)


@pytest.mark.skipif(not HAS_CUDA, reason="device mismatch needs cpu and cuda")
@pytest.mark.cuda
@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a.maximum(b),
        lambda a, b: a @ b,
        lambda a, b: a.where(b > 0, b),
        lambda a, b: a.add_(b),
    ],
    ids=["add", "maximum", "matmul", "where", "add_"],
)
def test_device_mismatch_names_both_devices(fn):
    a = from_torch(random_tensor((3, 3)), "cpu")
    b = from_torch(random_tensor((3, 3)), "cuda")
    for x, y in ((a, b), (b, a)):
        with pytest.raises(RuntimeError, match="same device") as info:
            fn(x, y)
        assert "cpu" in str(info.value) and "cuda" in str(info.value)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_device_index_out_of_range(device):
    with pytest.raises(RuntimeError, match="device"):
        nd.zeros(2, device=f"cuda:{nd.cuda.device_count()}")
