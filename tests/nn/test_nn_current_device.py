"""A bare "cuda" is the current CUDA device, as in torch: factories, Tensor.cuda() / .to("cuda"),
Module.cuda(), map_location="cuda" and the DataLoader's device all land on the device that set_device
(or ``with genesis.cuda.device(i)``) made current in this thread, and the tensor reports its index.

Without a GPU the first part fakes two: genesis_storage's device count is 2, each device's allocator hands
out host memory and the copies are memmoves, so that Triton's interpreter runs the kernels on it and the
values can be checked against torch. The last part runs on a real GPU (one is enough: "cuda" is cuda:0).
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from device_support import requires_cuda
from genesis_kernels.runtime import INTERPRET
from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator
from genesis_storage.storage import CUDAStorage

_storage_device = sys.modules["genesis_storage.device"]  # the module (genesis_storage.device is the context class)
_storage_view = sys.modules["genesis_storage.view"]

CUDA0, CUDA1 = genesis.device("cuda:0"), genesis.device("cuda:1")


class HostRawAllocator(FakeRawAllocator):
    """'Device' segments that are host memory, so that interpreted kernels can read and write them."""

    def __init__(self, device: int) -> None:
        super().__init__(capacity=1 << 30, device=device)
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
    if self.nbytes:
        ctypes.memmove(self.ptr, src.ctypes.data, self.nbytes)


@pytest.fixture
def two_gpus(monkeypatch):
    """Two fake GPUs over host memory; device 0 current, as in a fresh process."""
    if not INTERPRET:  # a GPU machine: its kernels compile for the device and cannot read host memory
        pytest.skip("the fake GPUs need Triton's interpreter (TRITON_INTERPRET=1)")
    monkeypatch.setattr(_storage_device, "_count", 2)
    monkeypatch.setattr(_storage_device, "ensure_context", lambda index: None)
    monkeypatch.setattr(_storage_device._tls, "device", 0)
    monkeypatch.setattr(CUDAStorage, "copy_from_host", _upload)
    monkeypatch.setattr(_storage_view, "memcpy_dtoh", lambda dst, ptr, n, dev: ctypes.memmove(dst.ctypes.data, ptr, n))
    previous = [set_allocator(d, CachingAllocator(HostRawAllocator(d))) for d in (0, 1)]
    yield
    for d, allocator in enumerate(previous):
        set_allocator(d, allocator)


def _equal(got: genesis.Tensor, expected: torch.Tensor) -> None:
    assert torch.equal(torch.from_numpy(got.detach().cpu().numpy()), expected)


def _factories(device):
    """(name, genesis tensor, the torch tensor it must equal or None for random values)."""
    data = torch.randn(3, 4, dtype=torch.float64)
    return [
        ("zeros", genesis.zeros(2, 3, device=device), torch.zeros(2, 3)),
        ("ones", genesis.ones(4, dtype=genesis.float64, device=device), torch.ones(4, dtype=torch.float64)),
        ("full", genesis.full((2,), 7, device=device), torch.full((2,), 7)),
        ("arange", genesis.arange(5, device=device), torch.arange(5)),
        ("linspace", genesis.linspace(0, 1, 5, device=device), torch.linspace(0, 1, 5)),
        ("eye", genesis.eye(3, device=device), torch.eye(3)),
        ("tensor", genesis.tensor(data.numpy(), device=device), data),
        ("as_tensor", genesis.as_tensor(data.numpy(), device=device), data),
        ("empty", genesis.empty(3, device=device), None),
        ("rand", genesis.rand(3, device=device), None),
        ("randn", genesis.randn(3, device=device), None),
        ("randint", genesis.randint(0, 9, (3,), device=device), None),
        ("randperm", genesis.randperm(6, device=device), None),
    ]


# ------------------------------------------------------------------ two fake GPUs, device 1 current
@pytest.mark.parametrize("spelling", ["cuda", "genesis.device", "torch.device"])
def test_factories_land_on_the_current_device(two_gpus, spelling):
    device = {"cuda": "cuda", "genesis.device": genesis.device("cuda"), "torch.device": torch.device("cuda")}[spelling]
    genesis.cuda.set_device(1)
    for name, t, expected in _factories(device):
        assert t.device == CUDA1, name
        assert (str(t.device), repr(t.device), t.device.index) == ("cuda:1", "device(type='cuda', index=1)", 1)
        assert t.device != genesis.device("cuda")  # torch: tensor.device (indexed) != torch.device("cuda")
        assert t.data.native.device == 1, name  # the memory itself is device 1's
        if expected is not None:
            _equal(t, expected)
    assert "device='cuda:1'" in repr(genesis.zeros(2, device="cuda"))


def test_factories_follow_the_device_context(two_gpus):
    with genesis.cuda.device(1):
        assert genesis.zeros(2, device="cuda").device == CUDA1
        with genesis.cuda.device(0):
            assert genesis.zeros(2, device="cuda").device == CUDA0
        assert genesis.zeros(2, device="cuda").device == CUDA1
    assert genesis.cuda.current_device() == 0
    assert genesis.zeros(2, device="cuda").device == CUDA0
    assert genesis.zeros(2, device="cuda:1").device == CUDA1  # an explicit index wins


def test_cuda_and_to_follow_the_current_device(two_gpus):
    genesis.cuda.set_device(1)
    src = torch.randn(4, 3, dtype=torch.float64)
    x = genesis.tensor(src.numpy())
    moved = {
        "cuda()": x.cuda(),
        "cuda('cuda')": x.cuda("cuda"),
        "to('cuda')": x.to("cuda"),
        "to(device=genesis.device('cuda'))": x.to(device=genesis.device("cuda")),
        "to(torch.device('cuda'))": x.to(torch.device("cuda")),
        "to('cuda', float32)": x.to("cuda", genesis.float32),
    }
    for name, y in moved.items():
        assert y.device == CUDA1 and y.is_cuda, name
        _equal(y, src if y.dtype == genesis.float64 else src.float())
    assert x.cuda(0).device == CUDA0 and x.cuda(CUDA0).device == CUDA0 and x.to(0).device == CUDA0
    y = moved["cuda()"]
    assert y.cuda() is y and y.to("cuda") is y and y.to(CUDA1) is y  # already there: no copy
    with genesis.cuda.device(0):  # "cuda" is read at the call: device 0 now, so y moves (as torch's to())
        z = y.to("cuda")
        assert z.device == CUDA0 and y.cuda().device == CUDA0
    _equal(z, src)
    assert z.cuda(1).device == CUDA1 and z.to("cuda").device == CUDA1
    with pytest.raises(RuntimeError, match="must be cuda device"):
        x.cuda("cpu")


def test_gradients_come_back_to_the_tensor_device(two_gpus):
    genesis.cuda.set_device(1)
    src = torch.randn(5, dtype=torch.float64)
    x = genesis.tensor(src.numpy(), device="cuda", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.device == CUDA1
    _equal(x.grad, 2 * src)
    leaf = genesis.tensor(src.numpy(), requires_grad=True)
    leaf.cuda().sum().backward()  # the move's gradient goes back to the cpu
    assert leaf.grad.device == genesis.device("cpu")


def test_module_cuda_and_to_follow_the_current_device(two_gpus):
    genesis.cuda.set_device(1)
    ref = torch.nn.Linear(4, 3).double()
    inputs = torch.randn(2, 4, dtype=torch.float64)
    for move in (lambda m: m.cuda(), lambda m: m.to("cuda"), lambda m: m.to(genesis.device("cuda"))):
        model = nn.Linear(4, 3).double()
        model.load_state_dict({k: genesis.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
        assert move(model) is model
        assert {p.device for p in model.parameters()} == {CUDA1}
        out = model(genesis.tensor(inputs.numpy(), device="cuda"))
        assert out.device == CUDA1
        # float64 defaults of assert_close: the kernel's summation order is not torch's
        torch.testing.assert_close(torch.from_numpy(out.detach().cpu().numpy()), ref(inputs).detach())
        out.sum().backward()
        assert {p.grad.device for p in model.parameters()} == {CUDA1}
    assert {p.device for p in model.cuda(0).parameters()} == {CUDA0}


def test_set_device_takes_torch_cuda_arguments(two_gpus):
    for spelling in (1, "cuda:1", CUDA1, torch.device("cuda", 1)):
        genesis.cuda.set_device(0)
        genesis.cuda.set_device(spelling)
        assert genesis.cuda.current_device() == 1, spelling
    genesis.cuda.set_device(-1)  # negative: a no-op (torch.cuda.set_device)
    assert genesis.cuda.current_device() == 1
    for refused in ("cuda", genesis.device("cuda"), "cpu", None):
        with pytest.raises(ValueError):
            torch.cuda.set_device(refused)
        with pytest.raises(ValueError):
            genesis.cuda.set_device(refused)
    with pytest.raises(ValueError, match="out of range"):  # (torch raises its AcceleratorError, a RuntimeError)
        genesis.cuda.set_device(2)
    for no_op in (None, -1, "cuda", genesis.device("cuda")):  # torch.cuda.device: no index changes nothing
        with genesis.cuda.device(no_op):
            assert genesis.cuda.current_device() == 1
    with genesis.cuda.device("cuda:0"):
        assert genesis.cuda.current_device() == 0
    assert genesis.cuda.current_device() == 1


def test_the_current_device_is_per_thread(two_gpus):
    genesis.cuda.set_device(1)
    seen: dict[str, object] = {}

    def worker() -> None:
        seen["start"] = genesis.cuda.current_device()
        seen["default"] = genesis.zeros(1, device="cuda").device
        genesis.cuda.set_device(1)
        seen["after"] = genesis.ones(1).cuda().device
        genesis.cuda.set_device(0)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    # A new thread starts on device 0 (the CUDA runtime's and torch's rule); its set_device is its own.
    assert seen == {"start": 0, "default": CUDA0, "after": CUDA1}
    assert genesis.cuda.current_device() == 1


def test_runtime_functions_read_device_arguments(two_gpus):
    genesis.cuda.set_device(1)
    keep = genesis.zeros(1000, device="cuda")
    on_1 = genesis.cuda.memory_allocated(1)
    assert on_1 >= keep.numel() * 4 and genesis.cuda.memory_allocated(0) != on_1
    for spelling in (None, "cuda", "cuda:1", CUDA1, genesis.device("cuda"), torch.device("cuda", 1)):
        assert genesis.cuda.memory_allocated(spelling) == on_1, spelling
        assert genesis.cuda.max_memory_allocated(spelling) == genesis.cuda.max_memory_allocated(1)
        assert genesis.cuda.memory_stats(spelling) == genesis.cuda.memory_stats(1)
        assert genesis.cuda.current_stream(spelling).device == 1
    assert genesis.cuda.current_stream(CUDA0).device == 0 and genesis.cuda.current_stream("cuda:0").device == 0
    with pytest.raises(ValueError, match="Expected a cuda device"):
        genesis.cuda.memory_allocated("cpu")


def test_rng_state_of_the_current_device(two_gpus):
    genesis.cuda.set_device(1)
    before_0 = genesis.cuda.get_rng_state("cuda:0").numpy().copy()
    genesis.rand(64, device="cuda")
    state = genesis.cuda.get_rng_state().numpy()  # torch.cuda.get_rng_state(device="cuda"): the current one
    assert np.array_equal(state, genesis.cuda.get_rng_state("cuda:1").numpy())
    assert np.array_equal(genesis.cuda.get_rng_state("cuda:0").numpy(), before_0)  # device 0 drew nothing
    again = genesis.rand(8, device="cuda").cpu().numpy()
    genesis.cuda.set_rng_state(genesis.tensor(state), "cuda")
    assert np.array_equal(genesis.rand(8, device="cuda:1").cpu().numpy(), again)


def test_load_with_map_location_cuda_goes_to_the_current_device(two_gpus, tmp_path):
    src = torch.randn(3, dtype=torch.float64)
    genesis.save({"w": genesis.tensor(src.numpy()), "v": genesis.tensor(src.numpy(), device="cuda:0")}, tmp_path / "c")
    genesis.cuda.set_device(1)
    mapped = genesis.load(tmp_path / "c", map_location="cuda")
    assert mapped["w"].device == CUDA1 and mapped["v"].device == CUDA1
    _equal(mapped["w"], src)
    kept = genesis.load(tmp_path / "c")  # no map_location: where each was saved (torch's rule)
    assert kept["w"].device == genesis.device("cpu") and kept["v"].device == CUDA0
    _equal(kept["v"], src)


def test_dataloader_device_cuda_is_the_current_device(two_gpus):
    genesis.cuda.set_device(1)
    data = [genesis.tensor([float(i)]) for i in range(4)]
    batches = list(genesis.utils.data.DataLoader(data, batch_size=2, device="cuda"))
    assert [b.device for b in batches] == [CUDA1, CUDA1]
    _equal(batches[1], torch.tensor([[2.0], [3.0]], dtype=torch.float32))


# ------------------------------------------------------------------ a real GPU: "cuda" is cuda:0 here
@pytest.mark.parametrize("case", ["zeros", "tensor", "cuda()", "to('cuda')", "Module.cuda()"])
@requires_cuda[0]
@requires_cuda[1]
def test_bare_cuda_on_a_real_gpu_is_the_current_device_like_torch(case):
    src = torch.randn(3, dtype=torch.float64)
    make = {
        "zeros": lambda lib: lib.zeros(3, device="cuda"),
        "tensor": lambda lib: lib.tensor(src.numpy(), device="cuda"),
        "cuda()": lambda lib: lib.tensor(src.numpy()).cuda(),
        "to('cuda')": lambda lib: lib.tensor(src.numpy()).to("cuda"),
        "Module.cuda()": lambda lib: next(iter(lib.nn.Linear(2, 2).cuda().parameters())),
    }[case]
    ours = make(genesis)
    current = genesis.cuda.current_device()
    assert ours.device == genesis.device(f"cuda:{current}") and ours.device.index == current
    assert ours.device != genesis.device("cuda")
    if torch.cuda.is_available():  # torch's own answer on the same machine (a CUDA build)
        theirs = make(torch)
        assert (str(ours.device), repr(ours.device)) == (str(theirs.device), repr(theirs.device))
    with genesis.cuda.device(current):
        assert make(genesis).device == ours.device
