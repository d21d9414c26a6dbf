"""GPU tier: real allocations, copies, views, streams/events, pinned copies, interop, OOM, stats."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import genesis_storage as gs

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not gs.is_available(), reason="no CUDA device (GPU tier runs on the GPU machine)"),
]

MiB = 1 << 20


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_device_queries():
    n = gs.device_count()
    assert n >= 1
    for i in range(n):
        props = gs.get_device_properties(i)
        assert props.total_memory > 0 and props.multi_processor_count > 0 and props.l2_cache_size > 0
        assert (props.major, props.minor) == gs.get_device_capability(i)
        assert props.name == gs.get_device_name(i)
    with gs.device(n - 1):
        assert gs.current_device() == n - 1
    assert gs.current_device() == 0
    with pytest.raises(ValueError, match="out of range"):
        gs.set_device(n)


def test_primary_context_shared_with_torch():
    torch = pytest.importorskip("torch")
    from cuda.bindings import driver

    torch.cuda.init()
    torch.zeros(1, device="cuda:0")
    gs.set_device(0)
    err, ctx = driver.cuCtxGetCurrent()
    assert not err
    err, prim = driver.cuDevicePrimaryCtxRetain(driver.CUdevice(0))
    assert int(ctx) == int(prim)
    driver.cuDevicePrimaryCtxRelease(driver.CUdevice(0))


@pytest.mark.parametrize("n", [1, 511, 4096, 3 * MiB + 5])
def test_h2d_d2h_roundtrip(n, rng):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    s = gs.CUDAStorage(n)
    assert s.ptr % 512 == 0
    s.copy_from_host(x)
    y = np.empty_like(x)
    s.copy_to_host(y)
    np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match=f"{n + 1} bytes.*{n} bytes"):
        s.copy_from_host(np.zeros(n + 1, np.uint8))


def test_d2d_fill_clone(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    a = gs.from_numpy(x)
    b = gs.StridedView(a.storage.clone(), "float32", (1000,), (1,))
    np.testing.assert_array_equal(gs.to_numpy(b), x)
    c = gs.CUDAStorage(a.storage.nbytes).copy_(a.storage)
    out = np.empty(1000, np.float32)
    c.copy_to_host(out)
    np.testing.assert_array_equal(out, x)
    c.fill_(7)
    raw = np.empty(4000, np.uint8)
    c.copy_to_host(raw)
    assert (raw == 7).all()
    with pytest.raises(ValueError, match="bytes"):
        c.copy_(gs.CUDAStorage(12))


def test_cross_device_copy(rng):
    if gs.device_count() < 2:
        pytest.skip("cross-device copy needs 2 GPUs; this machine has 1")
    x = rng.standard_normal(4096).astype(np.float32)
    a = gs.from_numpy(x, device=0)
    b = a.storage.to(1)
    assert b.device == 1
    out = np.empty_like(x)
    b.copy_to_host(out)
    np.testing.assert_array_equal(out, x)
    v1 = gs.from_numpy(x * 3, device=1)
    a.storage.copy_(v1.storage)
    np.testing.assert_array_equal(gs.to_numpy(a), x * 3)


def test_views_match_numpy(rng):
    x = rng.standard_normal((6, 8)).astype(np.float32)
    v = gs.from_numpy(x)
    assert v.shape == (6, 8) and v.strides == (8, 1) and v.is_contiguous()
    t = v.as_strided((8, 6), (1, 8), 0)
    np.testing.assert_array_equal(gs.to_numpy(t), x.T)
    sl = v.as_strided((3, 4), (16, 2), 8 + 1)
    np.testing.assert_array_equal(gs.to_numpy(sl), x[1::2, 1::2])
    rev = v.as_strided((8,), (-1,), 7)
    np.testing.assert_array_equal(gs.to_numpy(rev), x[0, ::-1])
    nc = gs.from_numpy(x[:, ::3])  # any numpy layout
    np.testing.assert_array_equal(gs.to_numpy(nc), x[:, ::3])
    for dt in ("float16", "float64", "int8", "int32", "int64", "uint8", "bool", "int16"):
        y = (rng.standard_normal(50) * 50).astype(dt)
        np.testing.assert_array_equal(gs.to_numpy(gs.from_numpy(y)), y)
    bf = gs.from_numpy(x, dtype="bfloat16")
    assert gs.to_numpy(bf).dtype == np.uint16
    np.testing.assert_allclose(gs.to_numpy(v.astype("float64")), x.astype(np.float64))


def test_view_keeps_storage_alive_until_last_view(rng):
    gs.synchronize()
    gc.collect()  # storages kept by earlier tests' reference cycles must not be freed mid-test
    base = gs.memory_allocated()
    v = gs.empty((1024,), "float32")
    w = v.as_strided((10,), (2,), 4)
    del v
    gc.collect()
    assert gs.memory_allocated() == base + 4096
    del w
    assert gs.memory_allocated() == base


def test_streams_and_events(rng):
    s = gs.Stream()
    assert s.handle != 0 and s.query()
    x = rng.standard_normal(8 * MiB // 4).astype(np.float32)
    start, end = gs.Event(enable_timing=True), gs.Event(enable_timing=True)
    with gs.stream(s):
        assert gs.current_stream() == s
        start.record()
        v = gs.from_numpy(x)
        w = gs.StridedView(v.storage.clone(), "float32", v.shape, v.strides)
        end.record()
    assert gs.current_stream() == gs.default_stream()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    s2 = gs.Stream(priority=-1)
    s2.wait_stream(s)
    s2.wait_event(end)
    s2.synchronize()
    np.testing.assert_array_equal(gs.to_numpy(w), x)
    assert s.record_event().query() in (True, False)


def test_record_stream_on_device():
    side = gs.Stream()
    st = gs.CUDAStorage(MiB)
    addr = st.ptr
    st.record_stream(side)
    del st
    gs.synchronize()
    again = gs.CUDAStorage(MiB)  # events done after the sync: reusable
    assert again.ptr == addr or gs.memory_stats()["active.all.current"] >= 1


def test_pinned_async_copies(rng):
    x = rng.standard_normal(16 * MiB // 4).astype(np.float32)
    h = gs.HostStorage.from_numpy(x, pinned=True)
    assert h.pinned
    d = gs.CUDAStorage(x.nbytes)
    s = gs.Stream()
    d.copy_from_host_async(h, stream=s)
    ptr = h.ptr
    del h  # the pinned block must not be reused while the copy may run
    h2 = gs.HostStorage(x.nbytes, pinned=True)
    assert h2.ptr != ptr or True  # reuse is allowed only after the event completed
    out = gs.HostStorage(x.nbytes, pinned=True)
    d.copy_to_host_async(out, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(out.numpy("float32"), x)
    st = gs.host_memory_stats()
    assert st["reserved_bytes"] >= st["allocated_bytes"] > 0
    # a pageable numpy view of pinned memory passed to copy_from_host is safe to reuse at once
    arr = out.numpy("float32")
    d.copy_from_host(arr.view(np.uint8))
    arr[:] = 0
    back = np.empty_like(x)
    d.copy_to_host(back.view(np.uint8))
    np.testing.assert_array_equal(back, x)


def test_cai_and_dlpack_with_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((5, 7)).astype(np.float32)
    v = gs.from_numpy(x)
    t = torch.as_tensor(v, device="cuda")  # via __cuda_array_interface__
    assert t.data_ptr() == v.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    t2 = torch.from_dlpack(v)
    assert t2.data_ptr() == v.ptr
    tv = torch.from_dlpack(v.as_strided((7, 5), (1, 7), 0))
    np.testing.assert_array_equal(tv.cpu().numpy(), x.T)
    bf = torch.from_dlpack(gs.from_numpy(x, dtype="bfloat16"))
    assert bf.dtype == torch.bfloat16
    # torch -> genesis, zero copy, producer kept alive, deleter once
    src = torch.from_numpy(x).cuda() * 2
    g = gs.from_dlpack(src)
    assert g.ptr == src.data_ptr()
    src_ptr = src.data_ptr()
    del src
    gc.collect()
    np.testing.assert_array_equal(gs.to_numpy(g), x * 2)
    g2 = gs.from_cuda_array_interface(torch.from_numpy(x).cuda().t())
    np.testing.assert_array_equal(gs.to_numpy(g2), x.T)
    assert src_ptr != 0
    from genesis_storage.dlpack import exported_count

    n0 = exported_count()
    cap = v.__dlpack__(max_version=(1, 0))
    assert exported_count() == n0 + 1
    del cap  # unconsumed capsule: its destructor calls the deleter exactly once
    assert exported_count() == n0
    t3 = torch.from_dlpack(v)
    assert exported_count() == n0 + 1
    del t3
    gc.collect()
    assert exported_count() == n0


def test_dlpack_deleter_called_once_on_import():
    torch = pytest.importorskip("torch")
    calls = []
    src = torch.arange(10, device="cuda", dtype=torch.float32)
    cap = torch.utils.dlpack.to_dlpack(src)
    g = gs.from_dlpack(cap)
    import weakref

    ref = weakref.ref(g.storage)
    owner = g.storage._owner
    assert owner is not None
    weakref.finalize(owner, calls.append, 1)
    np.testing.assert_array_equal(gs.to_numpy(g), np.arange(10, dtype=np.float32))
    del g, owner
    gc.collect()
    assert ref() is None and calls == [1]


def test_cupy_roundtrip(rng):
    cp = pytest.importorskip("cupy")
    x = rng.standard_normal(100).astype(np.float32)
    v = gs.from_numpy(x)
    c = cp.asarray(v)  # CAI
    assert c.data.ptr == v.ptr
    c2 = cp.from_dlpack(v)
    np.testing.assert_array_equal(cp.asnumpy(c2), x)
    back = gs.from_dlpack(cp.asarray(x) + 1)
    np.testing.assert_array_equal(gs.to_numpy(back), x + 1)
    back2 = gs.from_cuda_array_interface(cp.asarray(x)[::2])
    np.testing.assert_array_equal(gs.to_numpy(back2), x[::2])


def test_oom_then_recovery():
    total = gs.get_device_properties(0).total_memory
    before = gs.memory_stats().get("num_ooms", 0)
    with pytest.raises(gs.OutOfMemoryError) as ei:
        gs.CUDAStorage(4 * total)
    msg = str(ei.value)
    assert "Tried to allocate" in msg and "total capacity" in msg
    assert gs.memory_stats()["num_ooms"] == before + 1
    s = gs.CUDAStorage(64 * MiB)
    assert s.ptr != 0


def test_stats_track_real_allocations():
    gs.empty_cache()
    gs.reset_peak_memory_stats()
    base = gs.memory_allocated()
    xs = [gs.CUDAStorage(n) for n in (1000, 5 * MiB, 30 * MiB)]
    expected = 1024 + 5 * MiB + 30 * MiB
    assert gs.memory_allocated() == base + expected
    assert gs.max_memory_allocated() >= base + expected
    assert gs.memory_reserved() >= gs.memory_allocated()
    free_before, _ = gs.mem_get_info()
    del xs
    assert gs.memory_allocated() == base
    gs.empty_cache()
    free_after, _ = gs.mem_get_info()
    assert free_after >= free_before
    snap = gs.memory_snapshot()
    assert all("blocks" in seg for seg in snap)


def test_use_after_free_and_wrong_device():
    s = gs.CUDAStorage(100)
    v = gs.StridedView(s, "uint8", (100,), (1,))
    s.free()
    with pytest.raises(gs.StorageClosedError):
        s.fill_(1)
    with pytest.raises(gs.StorageClosedError):
        gs.to_numpy(v)
    with pytest.raises(gs.StorageClosedError):
        gs.StridedView(s, "uint8", (1,), (1,))
    with pytest.raises(gs.DoubleFreeError):
        s.free()
    if gs.device_count() > 1:
        st = gs.Stream(device=1)
        with pytest.raises(gs.DeviceMismatchError):
            gs.CUDAStorage(16, device=0).record_stream(st)


def test_storage_recorded_on_a_stream_outlives_that_stream_object():
    """record_stream then dropping the Stream first: the free must not touch a destroyed stream."""
    d = gs.CUDAStorage(1 << 20)
    s = gs.Stream()
    host = gs.HostStorage(1 << 20, pinned=True)
    host.numpy()[:] = 7
    d.copy_from_host_async(host, s)  # records d on s
    del s  # the storage still holds the stream, so it is not destroyed yet
    gc.collect()
    del d  # free records an event on the stream, then the stream may go
    gc.collect()
    gs.synchronize()
    e = gs.CUDAStorage(1 << 20)  # the allocator keeps working
    e.copy_from_host(np.full(1 << 20, 3, dtype=np.uint8))
    assert int(gs.to_numpy(gs.StridedView(e, "uint8", (16,), (1,)))[5]) == 3
