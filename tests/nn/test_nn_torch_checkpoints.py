"""PyTorch's checkpoint format both ways: torch.save files load through genesis.load (weights only, nothing of the
file run), genesis.save(format="torch") files load through torch.load(weights_only=True); every dtype bit for bit,
views sharing one storage, tied tensors, Parameters, nested optimizer states, map_location, the suffix rule, and
malicious, truncated and inconsistent files refused before anything is built."""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
import torch

import genesis
import genesis.nn as nn
from genesis.serialization import CorruptCheckpointError

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def _random(dtype: torch.dtype, shape=(3, 5)) -> torch.Tensor:
    """Random values of the dtype (never all zeros)."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, dtype=dtype)


def _torch_of(t: genesis.Tensor) -> torch.Tensor:
    return torch.from_dlpack(t.detach().cpu().contiguous()).clone()


def _same(g_obj, t_obj) -> None:
    """A genesis object and a torch one hold the same structure and values (tensors bit for bit)."""
    if isinstance(t_obj, torch.Tensor):
        assert isinstance(g_obj, genesis.Tensor), type(g_obj)
        assert str(g_obj.dtype).split(".")[-1] == str(t_obj.dtype).split(".")[-1]
        assert tuple(g_obj.shape) == tuple(t_obj.shape)
        assert torch.equal(_torch_of(g_obj), t_obj.detach().cpu())
    elif isinstance(t_obj, dict):
        assert type(g_obj) is type(t_obj) and list(g_obj) == list(t_obj)
        for k in t_obj:
            _same(g_obj[k], t_obj[k])
    elif isinstance(t_obj, (list, tuple)):
        assert type(g_obj) is type(t_obj) and len(g_obj) == len(t_obj)
        for a, b in zip(g_obj, t_obj):
            _same(a, b)
    else:
        assert g_obj == t_obj and type(g_obj) is type(t_obj)


def _torch_bytes(obj, **kwargs) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def _genesis_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    genesis.save(obj, buffer, format="torch")
    return buffer.getvalue()


def _torch_load(blob: bytes, **kwargs):
    return torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu", **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_both_ways(device, dtype):
    t = _random(dtype)
    out = genesis.load(io.BytesIO(_torch_bytes({"t": t, "v": t[1:, 2:]})), map_location=device)
    assert out["t"].device.type == device
    _same(out, {"t": t, "v": t[1:, 2:]})
    back = _torch_load(_genesis_bytes({"t": out["t"], "row": out["t"][2]}))
    _same(out, {"t": back["t"], "v": t[1:, 2:]})
    assert torch.equal(back["row"], t[2])


def test_views_of_one_storage_share_memory_when_loaded(device):
    w = torch.randn(4, 6, dtype=torch.float64)
    obj = {"w": w, "row": w[1], "col": w[:, 2], "t": w.t(), "flat": w.view(-1)[3:9], "tied": w, "empty": w[:0]}
    out = genesis.load(io.BytesIO(_torch_bytes(obj)), map_location=device)
    _same(out, obj)
    assert out["tied"] is out["w"]  # one object, as torch.load gives
    out["w"].mul_(2.0)
    _same({k: v for k, v in out.items()}, {k: v * 2 for k, v in obj.items()})  # every view sees the write

    # and back: views of one genesis tensor are one storage for torch too
    back = _torch_load(_genesis_bytes(out))
    _same(out, back)
    assert back["tied"] is back["w"]
    ptrs = {back[k].untyped_storage().data_ptr() for k in ["w", "row", "col", "t", "flat"]}
    assert len(ptrs) == 1
    back["w"].add_(1.0)
    assert torch.equal(back["col"], back["w"][:, 2]) and torch.equal(back["flat"], back["w"].view(-1)[3:9])


def test_parameters_and_requires_grad_both_ways():
    obj = {
        "p": torch.nn.Parameter(torch.randn(3, 2)),
        "frozen": torch.nn.Parameter(torch.randn(2), requires_grad=False),
        "leaf": torch.randn(4).requires_grad_(),
        "plain": torch.randn(2),
    }
    out = genesis.load(io.BytesIO(_torch_bytes(obj)))
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], nn.Parameter) and not out["frozen"].requires_grad
    assert not isinstance(out["leaf"], nn.Parameter) and out["leaf"].requires_grad
    assert not out["plain"].requires_grad
    _same(out, obj)
    back = torch.load(io.BytesIO(_genesis_bytes(out)), weights_only=True)
    for k in obj:
        assert type(back[k]) is type(obj[k]) and back[k].requires_grad == obj[k].requires_grad
    _same(out, back)


def _torch_training_state():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.8, 0.95))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    for _ in range(2):
        model(torch.randn(5, 4)).pow(2).sum().backward()
        opt.step()
        sched.step()
    return model, opt, sched


PLAIN = ["model", "optim", "sched", "epoch", "best"]  # the entries whose genesis and torch types are the same


def test_nested_training_state_both_ways():
    model, opt, sched = _torch_training_state()
    ckpt = {
        "model": model.state_dict(),
        "optim": opt.state_dict(),
        "sched": sched.state_dict(),
        "epoch": 3,
        "best": (0.25, float("inf"), None, True, "x", b"\x00\xffraw", 2**40, -(2**70)),
        "shape": torch.Size([2, 3]),
        "dtype": torch.bfloat16,
        "tags": {"a", "b"},
    }
    out = genesis.load(io.BytesIO(_torch_bytes(ckpt)))
    assert isinstance(out["model"], OrderedDict) and sorted(out["optim"]["state"]) == [0, 1, 2, 3]
    assert out["shape"] == (2, 3) and out["dtype"] is genesis.bfloat16 and out["tags"] == {"a", "b"}
    _same({k: out[k] for k in PLAIN}, {k: ckpt[k] for k in PLAIN})

    # the genesis model resumes from torch's weights and optimizer state
    gmodel = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    gmodel.load_state_dict(out["model"])
    gopt = genesis.optim.AdamW(gmodel.parameters(), lr=1e-2, betas=(0.8, 0.95))
    gopt.load_state_dict(out["optim"])
    x = torch.randn(5, 4)
    opt.zero_grad()
    model(x).pow(2).sum().backward()
    opt.step()
    gmodel(genesis.from_dlpack(x.clone())).pow(2).sum().backward()
    gopt.step()
    for p, q in zip(gmodel.parameters(), model.parameters()):
        torch.testing.assert_close(_torch_of(p), q.detach())

    # and torch reads genesis' states back, weights only
    back = _torch_load(_genesis_bytes(out))
    assert back["shape"] == torch.Size([2, 3]) and isinstance(back["shape"], torch.Size)
    assert back["dtype"] is torch.bfloat16 and back["tags"] == {"a", "b"}
    _same({k: out[k] for k in PLAIN}, {k: back[k] for k in PLAIN})
    state = _genesis_bytes({"model": gmodel.state_dict(), "optim": gopt.state_dict()})
    model.load_state_dict(_torch_load(state)["model"])
    opt.load_state_dict(_torch_load(state)["optim"])
    _same(gopt.state_dict()["state"], opt.state_dict()["state"])


def _rezip(blob: bytes, replace: dict[str, bytes | None]) -> bytes:
    """The torch zip with some entries replaced (None: dropped), everything else as it was."""
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = replace.get(name, src.read(name))
            if data is not None:
                dst.writestr(name, data)
    return out.getvalue()


def test_map_location(device, monkeypatch):
    t = torch.randn(3, dtype=torch.float64)
    blob = _torch_bytes({"t": t})
    seen = []
    out = genesis.load(io.BytesIO(blob), map_location=lambda tensor, loc: seen.append(loc))
    assert seen == ["cpu"] and torch.equal(_torch_of(out["t"]), t)
    assert genesis.load(io.BytesIO(blob), map_location=device)["t"].device.type == device
    assert genesis.load(io.BytesIO(blob), map_location={"cpu": device})["t"].device.type == device
    pkl = zipfile.ZipFile(io.BytesIO(blob)).read("archive/data.pkl")
    on_cuda = _rezip(blob, {"archive/data.pkl": pkl.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")})
    out = genesis.load(io.BytesIO(on_cuda), map_location={"cuda:0": "cpu"})
    assert out["t"].device == genesis.device("cpu") and torch.equal(_torch_of(out["t"]), t)
    monkeypatch.setattr(genesis.serialization.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"map_location"):
        genesis.load(io.BytesIO(on_cuda))


def test_the_suffix_or_format_argument_chooses_the_format(tmp_path):
    state = nn.Linear(3, 2).state_dict()
    for name in ["m.pt", "m.pth", "m.bin"]:
        genesis.save(state, tmp_path / name)
        _same(state, torch.load(tmp_path / name, weights_only=True))
        _same(genesis.load(tmp_path / name), torch.load(tmp_path / name, weights_only=True))
    genesis.save(state, tmp_path / "m.safetensors")
    genesis.save(state, tmp_path / "own.pt", format="genesis")
    genesis.save(state, tmp_path / "ckpt", format="torch")
    for name in ["m.safetensors", "own.pt"]:
        assert len(safetensors.deserialize((tmp_path / name).read_bytes())) == 2
    _same(state, torch.load(tmp_path / "ckpt", weights_only=True))
    with pytest.raises(ValueError, match=r"format"):
        genesis.save(state, tmp_path / "x", format="pickle")
    with pytest.raises(TypeError, match=r"state_dict"):
        genesis.save(nn.Linear(2, 2), io.BytesIO(), format="torch")


def test_written_zip_matches_torch_layout():
    blob = _genesis_bytes({"a": genesis.randn(3), "b": genesis.arange(5)})
    zf = zipfile.ZipFile(io.BytesIO(blob))
    expected = {"archive/data.pkl", "archive/byteorder", "archive/version", "archive/data/0", "archive/data/1"}
    assert expected <= set(zf.namelist())
    assert zf.read("archive/byteorder") == b"little"
    for info in zf.infolist():  # each entry's bytes start on a 64-byte boundary, as torch aligns storages
        (name_len, extra_len) = struct.unpack("<HH", blob[info.header_offset + 26 : info.header_offset + 30])
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename


def _storage_pickle(size, stride, offset, numel=6, global_=None) -> bytes:
    """A data.pkl (pickled by torch's own names) of one float32 tensor viewing storage '0' of ``numel`` elements."""

    class Tensor:
        def __reduce__(self):
            return torch._utils._rebuild_tensor_v2, (Storage(), offset, size, stride, False, OrderedDict())

    class Storage:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if isinstance(obj, Storage) else None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump({"t": Tensor(), **({"x": global_} if global_ is not None else {})})
    return buffer.getvalue()


def _hand_made(pkl: bytes, storage: bytes | None, byteorder: bytes = b"little") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", byteorder)
        if storage is not None:
            zf.writestr("archive/data/0", storage)
        zf.writestr("archive/version", b"3\n")
    return out.getvalue()


def test_hand_made_files_load_as_torch_reads_them():
    values = np.random.default_rng().standard_normal(6).astype(np.float32)
    blob = _hand_made(_storage_pickle((2, 2), (1, 2), 1), values.tobytes())
    expected = torch.load(io.BytesIO(blob), weights_only=True)["t"]
    assert torch.equal(_torch_of(genesis.load(io.BytesIO(blob))["t"]), expected)
    big = _hand_made(_storage_pickle((2, 2), (1, 2), 1), values.astype(">f4").tobytes(), byteorder=b"big")
    assert torch.equal(_torch_of(genesis.load(io.BytesIO(big))["t"]), expected)


@pytest.mark.parametrize(
    "size, stride, offset",
    [((7,), (1,), 0), ((4,), (1,), 3), ((2, 3), (3, 2), 0), ((2,), (1,), -1), ((2, 2), (1,), 0)],
    ids=["too-long", "offset-overrun", "stride-overrun", "negative-offset", "rank-mismatch"],
)
def test_views_past_their_storage_are_refused(size, stride, offset):
    blob = _hand_made(_storage_pickle(size, stride, offset), np.ones(6, np.float32).tobytes())
    with pytest.raises(CorruptCheckpointError, match=r"corrupt.*(size|stride)"):
        genesis.load(io.BytesIO(blob))


def test_missing_or_short_storages_are_refused():
    pkl = _storage_pickle((6,), (1,), 0)
    with pytest.raises(CorruptCheckpointError, match=r"storage '0' has no entry 'archive/data/0'"):
        genesis.load(io.BytesIO(_hand_made(pkl, None)))
    with pytest.raises(CorruptCheckpointError, match=r"has 20 bytes.*needs 24"):
        genesis.load(io.BytesIO(_hand_made(pkl, np.ones(5, np.float32).tobytes())))


def test_truncated_zips_are_refused():
    blob = _torch_bytes({"w": torch.randn(20), "n": 3})
    for length in [5, 30, 100, len(blob) // 2, len(blob) - 30, len(blob) - 1]:
        with pytest.raises(CorruptCheckpointError, match=r"truncated|corrupt"):
            genesis.load(io.BytesIO(blob[:length]))


class _Payload:
    """What a malicious checkpoint pickles: a call of ``func`` with ``args`` when unpickled."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def test_malicious_pickles_are_refused_without_running_anything(tmp_path):
    import builtins
    import subprocess

    marker = tmp_path / "pwned"
    payloads = {
        "posix.system": _Payload(os.system, f"touch {marker}"),
        "builtins.eval": _Payload(builtins.eval, f"open({str(marker)!r}, 'w')"),
        "builtins.exec": _Payload(builtins.exec, f"open({str(marker)!r}, 'w')"),
        "(subprocess|commands).call": _Payload(subprocess.call, ["touch", str(marker)]),
        "builtins.__import__": _Payload(builtins.__import__, "os"),
    }
    values = np.ones(6, np.float32).tobytes()
    for name, payload in payloads.items():
        for blob in [
            _hand_made(_storage_pickle((6,), (1,), 0, global_=payload), values),  # after a tensor
            _rezip(_torch_bytes({"w": torch.randn(2)}), {"archive/data.pkl": pickle.dumps(payload, protocol=2)}),
        ]:
            with pytest.raises(pickle.UnpicklingError, match=f"refusing to load the global '{name}'"):
                genesis.load(io.BytesIO(blob))
    assert not marker.exists()


def test_legacy_and_bare_pickle_formats_are_refused_by_name():
    legacy = _torch_bytes({"w": torch.randn(2)}, _use_new_zipfile_serialization=False)
    with pytest.raises(CorruptCheckpointError, match=r"legacy .*non-zip"):
        genesis.load(io.BytesIO(legacy))
    with pytest.raises(CorruptCheckpointError, match=r"bare pickle"):
        genesis.load(io.BytesIO(pickle.dumps({"w": [1.0]}, protocol=2)))


def test_build_opcodes_cannot_change_genesis_objects():
    set_itemsize = b"}X\x08\x00\x00\x00itemsizeK\x01s"  # {"itemsize": 1}
    pickles = {  # the pickle -> what the error says
        b"\x80\x02ctorch\nfloat32\n" + set_itemsize + b"b.": "BUILD",  # a dtype's __dict__
        b"\x80\x02ctorch\nfloat32\nN" + set_itemsize + b"\x86b.": "BUILD",  # its slots
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN" + set_itemsize + b"\x86b.": "BUILD",  # a function's
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n.": "bare global",  # a function as data
    }
    template = _torch_bytes({"w": torch.randn(2)})
    for pkl, message in pickles.items():
        with pytest.raises(pickle.UnpicklingError, match=message):
            genesis.load(io.BytesIO(_rezip(template, {"archive/data.pkl": pkl})))
    assert genesis.float32.itemsize == 4 and genesis.load(io.BytesIO(template))["w"].dtype is genesis.float32
    # a BUILD on a fresh OrderedDict is how torch stores state_dict._metadata, and loads
    state = torch.nn.Linear(2, 2).state_dict()
    assert hasattr(state, "_metadata")
    _same(genesis.load(io.BytesIO(_torch_bytes(state))), state)
