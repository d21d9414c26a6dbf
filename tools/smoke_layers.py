"""One small step per layer, against whatever genesis packages this interpreter has installed.

Run from outside the checkout (tools/check-install does) so the installed packages are imported,
not the sources. No GPU needed: kernels run under Triton's interpreter on host memory.
  python smoke_layers.py                 # all five layers
  python smoke_layers.py --storage-only  # genesis-storage, and check torch / triton are absent
"""

from __future__ import annotations

import importlib.util
import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import numpy as np


def installed_not_source(module) -> None:
    where = os.path.dirname(module.__file__)
    assert "site-packages" in where, f"{module.__name__} was imported from {where}, not an installed copy"


def storage() -> None:
    import genesis_storage as gs

    installed_not_source(gs)
    pool = gs.CachingAllocator(gs.FakeRawAllocator(capacity=64 << 20))
    block = pool.malloc(1000)
    assert pool.memory_stats()["allocated_bytes.all.current"] == 1024
    pool.free(block)
    host = gs.HostStorage.from_numpy(np.arange(8, dtype=np.float32))
    assert host.nbytes == 32
    print(f"    genesis_storage {gs.__version__}: fake-pool malloc/free, host storage")


def kernels() -> None:
    import genesis_kernels as gk

    installed_not_source(gk)
    x = np.random.default_rng(0).standard_normal(257).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(257).astype(np.float32)
    out = np.empty_like(x)
    buf = lambda a: gk.Buffer(a.ctypes.data, a.shape, None, "float32")
    gk.binary("add", buf(x), buf(y), buf(out), compute_dtype="float32", stream=0)
    assert np.allclose(out, x + y)
    print(f"    genesis_kernels {gk.__version__}: add of 257 floats under the interpreter")


def ndarray() -> None:
    import genesis_ndarray as nd

    installed_not_source(nd)
    a = nd.randn(4, 3)
    assert np.allclose((a + a).numpy(), 2 * a.numpy())
    print(f"    genesis_ndarray {nd.__version__}: cpu add")


def autograd() -> None:
    import genesis_autograd as ag

    installed_not_source(ag)
    w = ag.randn(3, 2, dtype="float64", requires_grad=True)
    x = ag.randn(4, 3, dtype="float64")
    (x @ w).sum().backward()
    assert np.allclose(w.grad.numpy(), x.numpy().sum(0)[:, None].repeat(2, 1))
    print(f"    genesis_autograd {ag.__version__}: matmul backward")


def nn() -> None:
    import genesis
    import genesis.nn as gnn

    installed_not_source(genesis)
    model = gnn.Linear(8, 3)
    opt = genesis.optim.SGD(model.parameters(), lr=0.1)
    x, y = genesis.randn(16, 8), genesis.randint(0, 3, (16,))
    losses = []
    for _ in range(5):
        loss = gnn.CrossEntropyLoss()(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    print(f"    genesis {genesis.__version__}: five SGD steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}")


if __name__ == "__main__":
    if "--storage-only" in sys.argv:
        storage()
        for absent in ("torch", "triton", "genesis_kernels", "genesis_ndarray", "genesis_autograd", "genesis"):
            assert importlib.util.find_spec(absent) is None, f"{absent} is installed beside genesis-storage"
        print("    neither torch nor triton nor another genesis package is installed")
    else:
        for step in (storage, kernels, ndarray, autograd, nn):
            step()
