"""CPU tier: dtype table, importing without a GPU, pageable host storage, shared and mapped storage."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys

import numpy as np
import pytest

import genesis_storage as gs
from genesis_storage.dtypes import bfloat16_bits_to_float32, float32_to_bfloat16_bits

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "packages", "genesis-storage", "src")


def test_dtype_table():
    assert gs.DTYPES == {
        "float32": 4,
        "float16": 2,
        "bfloat16": 2,
        "float64": 8,
        "int8": 1,
        "int16": 2,
        "int32": 4,
        "int64": 8,
        "uint8": 1,
        "bool": 1,
    }


def test_bfloat16_rounding_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 100
    ours = float32_to_bfloat16_bits(x)
    ref = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(
        bfloat16_bits_to_float32(ours), torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    )


def test_import_without_gpu_never_fails():
    code = (
        "import sys, genesis_storage as gs; "
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules; "
        "print(gs.is_available(), gs.device_count(), len(gs.DTYPES), gs.memory_allocated())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, check=True
    )
    avail, count, n, alloc = out.stdout.split()
    assert n == "10" and alloc == "0"
    assert (avail == "True") == (int(count) > 0)


@pytest.mark.skipif(gs.is_available(), reason="checks the no-GPU behaviour")
def test_no_gpu_errors_are_clear():
    assert gs.device_count() == 0 and not gs.is_available()
    # torch's words: no driver at all, or a driver that sees no GPU
    reason = gs.unavailable_reason()
    assert reason.startswith("Found no NVIDIA driver") or reason == "No CUDA GPUs are available"
    with pytest.raises(gs.CUDAUnavailableError, match=r"driver|GPU"):
        gs.get_device_name(0)
    with pytest.raises(gs.CUDAUnavailableError):
        gs.CUDAStorage(16)
    # the full stack says the same, not "invalid device ordinal"
    script = "import genesis\ntry:\n    genesis.randn(3, device='cuda')\nexcept RuntimeError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == reason


def test_pageable_host_storage():
    h = gs.HostStorage(64)
    assert not h.pinned and h.nbytes == 64
    x = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    h.numpy("float32")[:] = x
    np.testing.assert_array_equal(h.numpy("float32", (4, 4)), x.reshape(4, 4))
    assert h.numpy().ctypes.data == h.ptr
    y = gs.HostStorage.from_numpy(x.reshape(4, 4).T)
    np.testing.assert_array_equal(y.numpy("float32", (4, 4)), x.reshape(4, 4).T)


def _child_write(name: str, n: int) -> None:
    s = gs.SharedStorage.attach(name)
    arr = s.numpy("float64")
    arr[:] = arr * 2 + 1
    del arr
    s.close()


def test_shared_storage_across_processes():
    x = np.random.default_rng(2).standard_normal(32)
    with gs.SharedStorage(x.nbytes) as s:
        s.numpy("float64")[:] = x
        ctx = mp.get_context("spawn")
        p = ctx.Process(target=_child_write, args=(s.name, x.size))
        env_pp = os.environ.get("PYTHONPATH", "")
        os.environ["PYTHONPATH"] = SRC + (os.pathsep + env_pp if env_pp else "")
        try:
            p.start()
            p.join(60)
        finally:
            os.environ["PYTHONPATH"] = env_pp
        assert p.exitcode == 0
        np.testing.assert_allclose(s.numpy("float64"), x * 2 + 1)
        name = s.name
    # closed and unlinked: the name is gone
    with pytest.raises(FileNotFoundError):
        gs.SharedStorage.attach(name)


def test_shared_storage_close_unlink_errors():
    s = gs.SharedStorage(128)
    s.close()
    with pytest.raises(gs.StorageClosedError):
        s.numpy()
    with pytest.raises(gs.StorageClosedError):
        s.close()
    s.unlink()
    with pytest.raises(gs.StorageClosedError, match="twice"):
        s.unlink()


def test_shared_storage_no_leak_at_exit():
    code = "import genesis_storage as gs; s = gs.SharedStorage(4096); print(s.name)"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, check=True
    )
    name = out.stdout.strip()
    assert "leaked" not in out.stderr
    assert not os.path.exists(f"/dev/shm/{name.lstrip('/')}")


def test_mapped_storage_modes(tmp_path):
    path = tmp_path / "data.bin"
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    with gs.MappedStorage(path, "w+", nbytes=x.nbytes) as m:
        m.numpy("float32")[:] = x
        m.flush()
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), x)
    r = gs.MappedStorage(path, "r")
    assert r.readonly and r.nbytes == x.nbytes
    np.testing.assert_array_equal(r.numpy("float32", (10, 10)), x.reshape(10, 10))
    with pytest.raises(ValueError):
        r.numpy("float32")[0] = 1.0  # read-only enforced by numpy
    with pytest.raises(PermissionError):
        r.write(0, b"\x00")
    r.close()
    with pytest.raises(gs.StorageClosedError):
        r.numpy()
    rw = gs.MappedStorage(path, "r+")
    rw.write(4, np.float32(7.5).tobytes())
    rw.close()
    assert np.fromfile(path, dtype=np.float32)[1] == 7.5
    with pytest.raises(ValueError, match="mode"):
        gs.MappedStorage(path, "a")
    with pytest.raises(ValueError, match="fewer"):
        gs.MappedStorage(path, "r", nbytes=10**6)
