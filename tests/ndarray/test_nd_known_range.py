"""Host-known value ranges of integer cuda arrays: index ops skip their bounds check's stream sync only when safe.

An integer array uploaded from host data, an arange, a randint / randperm and integer casts of those carry
bounds of their values on their storage (``CUDAStorage.value_range``), at no device cost. An index op whose
index is known to fit runs no device check and waits for nothing; one exactly known not to fit raises the
same IndexError before launching; anything else runs the device check as before. Every write (and every
export of the memory) drops the bounds.

Without a GPU the first part fakes one (as tests/nn/test_nn_current_device.py does): device 0's allocator
hands out host memory, copies are memmoves and Triton's interpreter runs the kernels, so results are checked
against torch and the device checks counted. The last part runs the same on a real GPU, counting stream
synchronisations.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
import torch

import genesis_kernels.indexed as gk_indexed
import genesis_ndarray as nd
from device_support import requires_cuda
from genesis_kernels.runtime import INTERPRET
from genesis_ndarray.backends.cuda.common import RANGE_UPLOAD_LIMIT, value_range
from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator
from genesis_storage.storage import CUDAStorage

_storage_device = sys.modules["genesis_storage.device"]
_storage_view = sys.modules["genesis_storage.view"]
gk_ce = sys.modules["genesis_kernels.cross_entropy"]  # (genesis_kernels.cross_entropy is the function)


class HostRawAllocator(FakeRawAllocator):
    """'Device' segments that are host memory, so that interpreted kernels can read and write them."""

    def __init__(self) -> None:
        super().__init__(capacity=1 << 30)
        self.buffers: dict[int, np.ndarray] = {}

    def malloc(self, nbytes: int) -> int | None:
        buf = np.zeros(nbytes + 256, dtype=np.uint8)
        addr = (buf.ctypes.data + 255) // 256 * 256
        self.buffers[addr] = buf
        self.live[addr] = nbytes
        self.used += nbytes
        return addr

    def free(self, addr: int, nbytes: int) -> None:
        super().free(addr, nbytes)
        del self.buffers[addr]


def _upload(self: CUDAStorage, src: np.ndarray) -> None:
    self.value_range = None  # as the real copy_from_host
    if self.nbytes:
        ctypes.memmove(self.ptr, src.ctypes.data, self.nbytes)


class Checks:
    """Counts the device bounds checks (each one a stream synchronisation on a GPU)."""

    def __init__(self, monkeypatch) -> None:
        self.index = self.target = 0
        raise_if_bad, check_targets = gk_indexed._raise_if_bad, gk_ce._check_targets

        def counted_index(*args, **kwargs):
            self.index += 1
            return raise_if_bad(*args, **kwargs)

        def counted_target(*args, **kwargs):
            self.target += 1
            return check_targets(*args, **kwargs)

        monkeypatch.setattr(gk_indexed, "_raise_if_bad", counted_index)
        monkeypatch.setattr(gk_ce, "_check_targets", counted_target)

    @property
    def total(self) -> int:
        return self.index + self.target


@pytest.fixture
def checks(monkeypatch):
    """One fake GPU over host memory (or the real one on a GPU machine), device checks counted."""
    yield from fake_device_checks(monkeypatch)


def fake_device_checks(monkeypatch):
    """The ``checks`` fixture's body (tests/nn/test_nn_known_range.py uses it too)."""
    if INTERPRET:
        monkeypatch.setattr(_storage_device, "_count", 1)
        monkeypatch.setattr(_storage_device, "ensure_context", lambda index: None)
        monkeypatch.setattr(_storage_device._tls, "device", 0)
        monkeypatch.setattr(CUDAStorage, "copy_from_host", _upload)
        monkeypatch.setattr(
            _storage_view, "memcpy_dtoh", lambda dst, ptr, n, dev: ctypes.memmove(dst.ctypes.data, ptr, n)
        )
        previous = set_allocator(0, CachingAllocator(HostRawAllocator()))
        yield Checks(monkeypatch)
        set_allocator(0, previous)
    else:
        from device_support import HAS_CUDA

        if not HAS_CUDA:
            pytest.skip("no GPU and no interpreter")
        yield Checks(monkeypatch)


def _to_torch(a: nd.NDArray) -> torch.Tensor:
    return torch.from_numpy(np.array(a.numpy()))


def _upload_index(values, dtype=torch.int64) -> nd.NDArray:
    return nd.from_torch(torch.tensor(values, dtype=dtype), "cuda")


def _known(a: nd.NDArray):
    return value_range(a.native)


def _forgotten(a: nd.NDArray) -> nd.NDArray:
    """The same values with no known range (as the device path sees them)."""
    a.data_ptr()  # an export: drops the bounds
    assert _known(a) is None
    return a


# ------------------------------------------------------------------ what carries a range
def test_uploads_arange_and_casts_carry_ranges(checks):
    t = torch.randint(-5, 50, (4, 6), dtype=torch.int64)
    a = nd.from_torch(t, "cuda")
    lo, hi = int(t.min()), int(t.max())
    assert _known(a) == (lo, hi, True)
    assert _known(a.reshape(24)) == (lo, hi, True)  # views reaching every element: still exact
    assert _known(a.T) == (lo, hi, True)
    assert _known(a[1:2].expand(3, 6)) == (lo, hi, False)  # a part: bounds, not values held
    assert _known(a[:, 1]) == (lo, hi, False)
    assert _known(a.reshape(1, 4, 6).expand(2, 4, 6)) == (lo, hi, True)
    assert _known(a.astype(nd.int32)) == (lo, hi, True)  # a cast keeps the values
    assert _known(a[1:3].astype(nd.int32)) == (lo, hi, False)
    assert _known(a.contiguous()) == (lo, hi, True)
    assert _known(a.T.contiguous()) == (lo, hi, True)
    assert _known(a.clone()) == (lo, hi, True)
    assert _known(nd.from_numpy(t.numpy().astype(np.int32), "cuda")) == (lo, hi, True)
    assert _known(nd.from_torch(t, "cpu").to("cuda")) == (lo, hi, True)
    assert _known(nd.arange(3, 40, 4, device="cuda")) == (3, 39, True)
    assert _known(nd.arange(10, 0, -3, device="cuda")) == (1, 10, True)
    assert _known(nd.randint(2, 9, (5,), device="cuda")) == (2, 8, False)


def test_what_carries_no_range(checks):
    assert _known(nd.from_torch(torch.randn(5), "cuda").astype(nd.int64)) is None  # values unknown
    assert _known(nd.from_torch(torch.tensor([True, False]), "cuda")) is None
    assert _known(nd.from_torch(torch.tensor([1, 2**40]), "cuda").astype(nd.int32)) is None  # wraps
    assert _known(nd.from_torch(torch.zeros(RANGE_UPLOAD_LIMIT + 1, dtype=torch.int64), "cuda")) is None
    assert _known(nd.from_torch(torch.tensor([3, 1]), "cuda").astype(nd.float32)) is None
    assert _known(nd.arange(0.0, 4.0, device="cuda", dtype=nd.int64)) is None  # float arguments


# ------------------------------------------------------------------ known in range: no device check
_OPS = ["index_select", "embedding", "embedding_backward", "index_add", "gather", "scatter_add"]


def _index_ops(weight: torch.Tensor, index: torch.Tensor):
    """(name, genesis op on (weight, index arrays), the torch result) for the index ops that take ranges."""
    w2 = weight.reshape(weight.shape[0], -1)
    n = index.numel()
    flat = index.reshape(-1)
    src_rows = torch.randn(n, w2.shape[1], dtype=weight.dtype)
    col = flat.long().reshape(-1, 1).expand(n, w2.shape[1])  # (torch's gather misreads an expanded int32 index)
    return [
        ("index_select", lambda w, i: w.index_select(0, i.reshape(-1)), weight.index_select(0, flat)),
        ("embedding", lambda w, i: w.embedding(i), torch.nn.functional.embedding(index, w2)),
        (
            "embedding_backward",
            lambda w, i: nd.from_torch(src_rows, "cuda").embedding_backward(i, w2.shape[0]),
            torch.zeros_like(w2).index_add(0, flat, src_rows),
        ),
        (
            "index_add",
            lambda w, i: w.index_add(0, i.reshape(-1), nd.from_torch(src_rows, "cuda")),
            w2.index_add(0, flat, src_rows),
        ),
        (
            "gather",
            lambda w, i: w.gather(0, i.reshape(-1, 1).expand(n, w2.shape[1]).contiguous()),
            w2.gather(0, col),
        ),
        (
            "scatter_add",
            lambda w, i: w.scatter_add(0, i.reshape(-1, 1).expand(n, w2.shape[1]), nd.from_torch(src_rows, "cuda")),
            w2.scatter_add(0, col, src_rows),
        ),
    ]


@pytest.mark.parametrize(
    "op", ["index_select", "embedding", "embedding_backward", "index_add", "gather", "scatter_add"]
)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_known_index_skips_the_check(checks, op, index_dtype):
    weight = torch.randn(7, 3, dtype=torch.float64)
    index = torch.randint(0, 7, (2, 5), dtype=index_dtype)
    _, fn, expected = next(case for case in _index_ops(weight, index) if case[0] == op)
    w, i = nd.from_torch(weight, "cuda"), nd.from_torch(index, "cuda")
    got = fn(w, i)
    assert checks.total == 0, "an index known in range still ran the device check"
    torch.testing.assert_close(_to_torch(got), expected, rtol=1e-12, atol=1e-12)
    got = fn(w, _forgotten(i))  # the same values without a range: the device check runs, same result
    assert checks.index == 1
    torch.testing.assert_close(_to_torch(got), expected, rtol=1e-12, atol=1e-12)


def test_arange_positions_skip_the_check(checks):
    weight = torch.randn(16, 4, dtype=torch.float64)
    got = nd.from_torch(weight, "cuda").index_select(0, nd.arange(9, device="cuda"))
    assert checks.total == 0
    torch.testing.assert_close(_to_torch(got), weight[:9], rtol=0, atol=0)
    nd.from_torch(weight, "cuda").index_select(0, nd.arange(17, device="cuda")[:5])  # bounds 16: not known to fit
    assert checks.index == 1


# ------------------------------------------------------------------ known out of range: the same error
def _error_of(fn) -> tuple[type, str]:
    with pytest.raises((IndexError, RuntimeError)) as info:
        fn()
    return info.type, str(info.value)


@pytest.mark.parametrize(
    "op", ["index_select", "embedding", "embedding_backward", "index_add", "gather", "scatter_add"]
)
@pytest.mark.parametrize("values", [[0, 9, 3, 12, 2], [0, -4, 3, -1, 2], [7, -2, 1, 0, 3]])
def test_bad_uploaded_index_raises_at_the_call_without_a_device_check(checks, op, values):
    weight = torch.randn(7, 3, dtype=torch.float64)
    index = torch.tensor(values, dtype=torch.int64)
    _, fn, _ = next(case for case in _index_ops(weight, torch.zeros(5, dtype=torch.int64)) if case[0] == op)
    w = nd.from_torch(weight, "cuda")
    host = _error_of(lambda: fn(w, _upload_index(values)))
    assert checks.total == 0, "the host knew the index was bad: no device check"
    device = _error_of(lambda: fn(w, _forgotten(_upload_index(values))))
    assert checks.index == 1
    assert host == device  # class and message: the op's, naming the value, the dim and its size
    if op in ("index_select", "index_add", "gather", "scatter_add"):
        value = max(values) if max(values) >= 7 else min(values)
        assert f"index {value} is out of bounds for dimension 0 with size 7" in host[1]
    assert host[0] is (IndexError if op in ("index_select", "embedding", "embedding_backward") else RuntimeError)
    del index


def test_a_part_of_a_bad_upload_is_checked_on_the_device(checks):
    weight = torch.randn(7, 3, dtype=torch.float64)
    w, i = nd.from_torch(weight, "cuda"), _upload_index([1, 2, 30, 4])
    got = w.index_select(0, i[:2])  # bounds [1, 30] do not fit, and are not this part's values: check
    assert checks.index == 1
    torch.testing.assert_close(_to_torch(got), weight[[1, 2]], rtol=0, atol=0)
    with pytest.raises(IndexError, match="index 30 is out of bounds for dimension 0 with size 7"):
        w.index_select(0, i[1:3])
    assert checks.index == 2


# ------------------------------------------------------------------ every write drops the range
def _mutations():
    """(name, write into the index array ``i`` (values 0..4) that puts 42 in it)."""
    big = lambda: _upload_index([42])
    return [
        ("setitem_basic", lambda i: i.__setitem__(2, 42)),
        ("setitem_array", lambda i: i.__setitem__(slice(0, 1), big())),
        ("setitem_advanced", lambda i: i.__setitem__(_upload_index([1]), 42)),
        ("index_put_", lambda i: i.index_put_((_upload_index([3]),), big())),
        ("copy_", lambda i: i.copy_(_upload_index([42, 1, 2, 3, 4]))),
        ("copy_from_cpu", lambda i: i.copy_(nd.from_torch(torch.tensor([0, 42, 2, 3, 4]), "cpu"))),
        ("fill_", lambda i: i.fill_(42)),
        ("add_", lambda i: i.add_(38)),
        ("mul_", lambda i: i[2:3].mul_(21)),
        ("iadd_array", lambda i: i.add_(_upload_index([38, 38, 38, 38, 38]))),
        ("scatter_", lambda i: i.scatter_(0, _upload_index([1]), 42)),
        ("scatter_add_", lambda i: i.scatter_add_(0, _upload_index([1]), _upload_index([41]))),
        ("index_add_", lambda i: i.index_add_(0, _upload_index([4]), _upload_index([38]))),
        ("masked_fill_", lambda i: i.masked_fill_(nd.from_torch(torch.tensor([True, False] * 2 + [True]), "cuda"), 42)),
        ("random_", lambda i: i.random_(42, 43)),
        ("zero_then_add", lambda i: i.zero_().add_(42)),
    ]


@pytest.mark.parametrize("through_view", [False, True])
@pytest.mark.parametrize("name", [m[0] for m in _mutations()])
def test_every_write_drops_the_range(checks, name, through_view):
    write = next(m[1] for m in _mutations() if m[0] == name)
    weight = nd.from_torch(torch.randn(7, 2, dtype=torch.float64), "cuda")
    i = _upload_index([0, 1, 2, 3, 4])
    assert _known(i) == (0, 4, True)
    # Through another view of the same memory: the bounds live with the memory, not with one array.
    target = i.reshape(5).view(5) if through_view else i
    write(target)
    assert _known(i) is None, f"{name} left a range on memory it wrote"
    before = checks.total
    with pytest.raises(IndexError, match="index 42 is out of bounds for dimension 0 with size 7"):
        weight.index_select(0, i)
    assert checks.total == before + 1


@pytest.mark.parametrize("export", ["data_ptr", "__dlpack__", "__cuda_array_interface__"])
def test_exports_drop_the_range(checks, export):
    i = _upload_index([0, 1, 2])
    view = i[1:]
    attribute = getattr(view, export)
    if callable(attribute) and export != "__cuda_array_interface__":
        try:
            attribute()
        except Exception:  # a DLPack capsule on the fake device may fail after dropping; the drop is what counts
            pass
    assert _known(i) is None


def test_cross_entropy_targets(checks):
    logits = torch.randn(6, 5, dtype=torch.float64)
    x = nd.from_torch(logits, "cuda")
    target = torch.randint(0, 5, (6,))
    loss, _, _ = x.cross_entropy(nd.from_torch(target, "cuda"), None, -100, 0.0)
    assert checks.total == 0
    expected = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    torch.testing.assert_close(_to_torch(loss), expected, rtol=1e-12, atol=1e-12)
    # ignore_index among the targets: bounds do not tell the rest apart, the device checks (and passes)
    ignored = target.clone()
    ignored[2] = -100
    loss, _, _ = x.cross_entropy(nd.from_torch(ignored, "cuda"), None, -100, 0.0)
    assert checks.target == 1
    expected = torch.nn.functional.cross_entropy(logits, ignored, reduction="none")
    torch.testing.assert_close(_to_torch(loss), expected, rtol=1e-12, atol=1e-12)
    for bad in ([0, 1, 7, 2, 3, 4], [0, -3, 1, 2, 3, 4], [0, -100, 9, 1, 2, 3]):
        host = _error_of(lambda bad=bad: x.cross_entropy(_upload_index(bad), None, -100, 0.0))
        count = checks.target
        device = _error_of(lambda bad=bad: x.cross_entropy(_forgotten(_upload_index(bad)), None, -100, 0.0))
        assert checks.target == count + 1
        assert host == device and host[0] is IndexError
    assert checks.target == 4  # the host raised every bad upload itself: only the forgotten copies were checked


# ------------------------------------------------------------------ the kernels' decision, alone
def test_known_in_range_rules():
    buf = object()
    one = [(buf, (1,), 0, 5, 1)]
    two = [(buf, (1,), 0, 5, 1), (buf, (1,), 1, 3, 1)]
    assert gk_indexed.known_in_range(one, [(0, 4, False)])
    assert not gk_indexed.known_in_range(one, None)
    assert not gk_indexed.known_in_range(one, [None])
    assert not gk_indexed.known_in_range(one, [(0, 5, False)])  # may hold 5: the device decides
    assert not gk_indexed.known_in_range(one, [(-1, 4, False)])
    assert gk_indexed.known_in_range(one, [(-5, 4, False)], neg=True)  # negative indices wrap there
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        gk_indexed.known_in_range(one, [(-1, 5, True)])  # the largest too-large first, as the device
    with pytest.raises(IndexError, match="index -6 is out of bounds for dimension 0 with size 5"):
        gk_indexed.known_in_range(one, [(-6, 4, True)], neg=True)
    # The device reports the first bad buffer: an unknown one before a known-bad one decides nothing.
    assert not gk_indexed.known_in_range(two, [None, (0, 9, True)])
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 3"):
        gk_indexed.known_in_range(two, [(0, 4, False), (0, 9, True)])
    assert not gk_indexed.known_in_range(two, [(0, 4, False), (0, 9, False)])


# ------------------------------------------------------------------ on a GPU: no stream synchronisation
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_no_stream_sync_on_a_gpu(device, monkeypatch):
    import genesis_kernels.runtime as rt

    syncs = []
    cuda = rt.cuda()
    real = type(cuda).synchronize
    monkeypatch.setattr(type(cuda), "synchronize", lambda self, stream: (syncs.append(stream), real(self, stream)))
    weight = torch.randn(50, 8, dtype=torch.float64)
    index = torch.randint(0, 50, (4, 16))
    w, i = nd.from_torch(weight, device), nd.from_torch(index, device)
    out = w.embedding(i)
    grad = nd.from_torch(torch.randn(4, 16, 8, dtype=torch.float64), device).embedding_backward(i, 50)
    loss, _, _ = nd.from_torch(torch.randn(64, 50, dtype=torch.float64), device).cross_entropy(
        i.reshape(64), None, -100, 0.0
    )
    assert syncs == []
    torch.testing.assert_close(_to_torch(out), weight[index], rtol=0, atol=0)
    del grad, loss
    with pytest.raises(IndexError, match="index 50 is out of bounds"):
        w.index_select(0, nd.from_torch(torch.tensor([1, 50]), device))
    assert syncs == []  # the host knew
    i[0, 0] = 77
    with pytest.raises(IndexError, match="index 77 is out of bounds"):
        w.index_select(0, i.reshape(64))
    assert len(syncs) == 1  # written: checked on the device again
