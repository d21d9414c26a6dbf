"""genesis.save / genesis.load: bit-exact round trips of every dtype across devices, nested plain data,
tied tensors, module / optimizer / scheduler states that resume exactly, map_location's forms, the
safetensors format seen by other readers, and truncated or corrupted files refused before anything loads."""

from __future__ import annotations

import io
import json
import math
import struct
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
import torch
from nn_helpers import copy_weights, g

import genesis
import genesis.nn as nn
import genesis_autograd
from genesis.serialization import CorruptCheckpointError, _digest

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


def _random_bits(dtype: torch.dtype, shape=(3, 5)) -> torch.Tensor:
    """Any bit pattern the dtype can hold (NaN payloads, infinities, subnormals included)."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    width = torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits
    raw = torch.randint(-(2**62), 2**62, shape, dtype=torch.int64)
    bits = {8: torch.int8 if dtype != torch.uint8 else torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[
        width
    ]
    return raw.to(bits).view(dtype) if width < 64 or dtype.is_floating_point else raw.view(dtype)


def _to_genesis(t: torch.Tensor, device) -> genesis.Tensor:
    return genesis.from_dlpack(t.contiguous()).to(device=device)


def _bits(t: genesis.Tensor) -> bytes:
    """The tensor's bytes, read through torch."""
    return (
        torch.from_dlpack(t.detach().cpu().contiguous()).numpy().tobytes()
        if t.dtype != genesis.bfloat16
        else torch.from_dlpack(t.detach().cpu().contiguous()).view(torch.int16).numpy().tobytes()
    )


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    genesis.save(obj, buffer)
    buffer.seek(0)
    return genesis.load(buffer, **load_kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_round_trips_bit_exact_through_the_cpu(device, dtype):
    source = _to_genesis(_random_bits(dtype), device)
    # device -> file -> cpu -> file -> device
    on_cpu = _roundtrip(source, map_location="cpu")
    assert on_cpu.device == genesis.device("cpu") and on_cpu.dtype == source.dtype
    back = _roundtrip(on_cpu, map_location=device)
    assert back.device == genesis_autograd.resolve_device(device) and tuple(back.shape) == (3, 5)
    assert _bits(back) == _bits(on_cpu) == _bits(source)
    # and without map_location each tensor returns to the device it was saved from
    assert _roundtrip(source).device == source.device


def test_zero_dim_empty_and_non_contiguous_tensors(device):
    base = genesis.randn(4, 6, device=device)
    items = [
        genesis.tensor(2.5, device=device),
        genesis.zeros(0, 3, device=device),
        base.t(),
        base[:, ::2],
        genesis.empty(0, dtype=genesis.bfloat16),
    ]
    out = _roundtrip(items)
    for got, want in zip(out, items):
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
        assert _bits(got) == _bits(want)


def test_nested_plain_data_round_trips():
    obj = {
        "ints": [0, -1, 2**70, True, False],
        "floats": (0.1, -0.0, 1e-310, math.inf, -math.inf),
        "none": None,
        "text": 'héllo "quoted" \n',
        7: {"nested": {(1, "a"): [[], {}, ()]}},
        "od": OrderedDict([("z", 1), ("a", 2)]),
        "dtype": genesis.bfloat16,
        "device": genesis.device("cpu"),
        "np": np.arange(6, dtype=np.int16).reshape(2, 3),
        "npscalar": np.float64(0.5),
    }
    out = _roundtrip(obj)
    expected = dict(obj, npscalar=0.5)
    np.testing.assert_array_equal(out.pop("np"), expected.pop("np"))
    assert out == expected
    assert type(out["od"]) is OrderedDict and list(out["od"]) == ["z", "a"]
    assert type(out["floats"]) is tuple and math.copysign(1, out["floats"][1]) == -1
    assert math.isnan(_roundtrip([math.nan])[0])


def test_a_tensor_met_twice_is_stored_once_and_restored_as_one_object():
    weight = nn.Parameter(genesis.randn(50, 8))
    other = genesis.randn(3)
    buffer = io.BytesIO()
    genesis.save({"embed": weight, "head": weight, "list": [other, other], "copy": other.clone()}, buffer)
    assert len(safetensors.deserialize(buffer.getvalue())) == 3
    buffer.seek(0)
    out = genesis.load(buffer)
    assert out["embed"] is out["head"] and out["list"][0] is out["list"][1]
    assert out["copy"] is not out["list"][0]
    assert isinstance(out["embed"], nn.Parameter) and out["embed"].requires_grad
    frozen = nn.Parameter(genesis.randn(2), requires_grad=False)
    leaf = genesis.randn(2, requires_grad=True)
    got_frozen, got_leaf = _roundtrip([frozen, leaf])
    assert isinstance(got_frozen, nn.Parameter) and not got_frozen.requires_grad
    assert not isinstance(got_leaf, nn.Parameter) and got_leaf.requires_grad and got_leaf.is_leaf


def _model_and_torch(device):
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(device).double()
    copy_weights(tmodel, model)
    return tmodel, model


def _train(model, opt, sched, batches, device):
    for x, y in batches:
        opt.zero_grad()
        nn.functional.mse_loss(model(g(x, device)), g(y, device)).backward()
        opt.step()
        sched.step()


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("AdamW", dict(lr=0.01, amsgrad=True)),
        ("SGD", dict(lr=0.05, momentum=0.9)),
        ("RMSprop", dict(lr=0.01, centered=True)),
        ("Adagrad", dict(lr=0.1)),
    ],
)
def test_model_optimizer_and_scheduler_resume_bit_exactly(device, tmp_path, name, kwargs):
    batches = [(torch.randn(6, 4, dtype=torch.float64), torch.randn(6, 3, dtype=torch.float64)) for _ in range(10)]

    def build():
        _, model = _model_and_torch(device)
        opt = getattr(genesis.optim, name)(model.parameters(), **kwargs)
        sched = genesis.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=20, cycle_momentum=False)
        return model, opt, sched

    model, opt, sched = build()
    _train(model, opt, sched, batches[:5], device)
    path = tmp_path / "ckpt.safetensors"
    genesis.save({"model": model.state_dict(), "optim": opt.state_dict(), "sched": sched.state_dict(), "step": 5}, path)
    _train(model, opt, sched, batches[5:], device)  # the run that never stopped

    resumed, ropt, rsched = build()
    ckpt = genesis.load(path)
    resumed.load_state_dict(ckpt["model"])
    ropt.load_state_dict(ckpt["optim"])
    rsched.load_state_dict(ckpt["sched"])
    assert ckpt["step"] == 5
    _train(resumed, ropt, rsched, batches[5:], device)
    for p, q in zip(model.parameters(), resumed.parameters()):
        assert _bits(p) == _bits(q)
    assert rsched.get_last_lr() == sched.get_last_lr()
    assert not list(tmp_path.glob("*.tmp*"))  # the temporary file of the atomic write is gone


def test_map_location_forms():
    t = genesis.randn(3)
    for location in ["cpu", genesis.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}]:
        out = _roundtrip({"t": t}, map_location=location)["t"]
        assert out.device == genesis.device("cpu") and _bits(out) == _bits(t)
    seen = []
    out = _roundtrip([t, t * 2], map_location=lambda tensor, loc: seen.append(loc))
    assert seen == ["cpu", "cpu"] and _bits(out[0]) == _bits(t)
    out = _roundtrip([t], map_location=lambda tensor, loc: tensor.double())
    assert out[0].dtype == genesis.float64
    with pytest.raises(TypeError, match="map_location"):
        _roundtrip([t], map_location=3)


def _relocated(blob: bytes, location: str | None, root=None) -> bytes:
    """The checkpoint rewritten as if its tensors had been saved from ``location`` (None: no location at all),
    or with another ``root``; the hash recomputed, as a hand-made file would have it."""
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    structure = json.loads(header["__metadata__"]["genesis.structure"])
    for meta in structure["tensors"].values():
        if location is None:
            del meta["device"]
        else:
            meta["device"] = location
    if root is not None:
        structure["root"] = root
    text = json.dumps(structure, separators=(",", ":"))
    entries = sorted(((k, (v[0], v[1], v[2])) for k, v in _entries_of(blob).items()), key=lambda kv: int(kv[0]))
    header["__metadata__"].update({"genesis.structure": text, "genesis.sha256": _digest(text, entries)})
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    return struct.pack("<Q", len(head)) + head + blob[8 + n :]


def _entries_of(blob: bytes) -> dict:
    names = {"F32": "float32", "F64": "float64", "I64": "int64"}
    return {k: (names[v["dtype"]], list(v["shape"]), bytes(v["data"])) for k, v in safetensors.deserialize(blob)}


def test_a_cuda_checkpoint_on_a_machine_without_cuda_needs_map_location(monkeypatch):
    # A CPU-only machine, also on a GPU one: the availability the loader itself asks.
    monkeypatch.setattr(genesis.serialization.cuda, "is_available", lambda: False)
    buffer = io.BytesIO()
    genesis.save({"w": genesis.randn(4)}, buffer)
    blob = _relocated(buffer.getvalue(), "cuda:0")
    with pytest.raises(RuntimeError, match="map_location"):
        genesis.load(io.BytesIO(blob))
    assert genesis.load(io.BytesIO(blob), map_location={"cuda:0": "cpu"})["w"].device == genesis.device("cpu")
    assert genesis.load(io.BytesIO(blob), map_location="cpu")["w"].shape == (4,)


def _checkpoint() -> bytes:
    buffer = io.BytesIO()
    model = nn.Linear(6, 5)
    opt = genesis.optim.Adam(model.parameters())
    model(genesis.randn(2, 6)).sum().backward()
    opt.step()
    genesis.save({"model": model.state_dict(), "optim": opt.state_dict(), "note": "x"}, buffer)
    return buffer.getvalue()


def test_truncated_files_raise_a_clear_error():
    blob = _checkpoint()
    (n,) = struct.unpack("<Q", blob[:8])
    for length in [0, 3, 8, 20, 8 + n // 2, 8 + n, 8 + n + 7, len(blob) - 1]:
        with pytest.raises(CorruptCheckpointError, match=r"truncated|corrupt"):
            genesis.load(io.BytesIO(blob[:length]))
    assert issubclass(CorruptCheckpointError, RuntimeError)


def test_corrupted_bytes_raise_or_load_the_same_content():
    blob = _checkpoint()
    reference = genesis.load(io.BytesIO(blob))
    rng = np.random.default_rng()
    (n,) = struct.unpack("<Q", blob[:8])
    positions = list(rng.integers(0, len(blob), 40)) + [0, 9, 8 + n + 1, len(blob) - 1]
    for pos in positions:
        damaged = bytearray(blob)
        damaged[pos] ^= int(rng.integers(1, 256))
        try:
            out = genesis.load(io.BytesIO(bytes(damaged)))
        except CorruptCheckpointError as e:
            assert "corrupt" in str(e) or "truncated" in str(e)
            continue
        # a flip that JSON ignores (e.g. padding space to tab) may load: then it must be the same content
        assert out["note"] == reference["note"]
        assert all(_bits(out["model"][k]) == _bits(reference["model"][k]) for k in reference["model"])


def test_hand_made_files_with_a_valid_hash_but_a_malformed_structure_are_refused():
    buffer = io.BytesIO()
    genesis.save({"w": genesis.randn(4)}, buffer)
    for blob in [
        _relocated(buffer.getvalue(), None),
        _relocated(buffer.getvalue(), "cpu", root={"tensor": "9"}),
        _relocated(buffer.getvalue(), "cpu", root={"dict": [[1]]}),
        _relocated(buffer.getvalue(), "cpu", root={"eval": "print(1)"}),
    ]:
        with pytest.raises(CorruptCheckpointError, match="corrupt"):
            genesis.load(io.BytesIO(blob))


def test_bare_pickles_are_refused_without_unpickling():
    # torch.save's zips load weights-only (tests/nn/test_nn_torch_checkpoints.py); a bare pickle never does
    import pickle

    with pytest.raises(CorruptCheckpointError, match="bare pickle"):
        genesis.load(io.BytesIO(pickle.dumps({"w": [1.0, 2.0]}, protocol=2)))


def test_unsupported_objects_are_refused_at_save():
    with pytest.raises(TypeError, match="state_dict"):
        genesis.save(nn.Linear(2, 2), io.BytesIO())
    with pytest.raises(TypeError, match="set"):
        genesis.save({"s": {1, 2}}, io.BytesIO())


def test_files_are_safetensors_for_other_readers_and_plain_safetensors_load(tmp_path):
    from safetensors.numpy import save as np_save
    from safetensors.torch import load as torch_load

    model = nn.Linear(3, 2)
    blob = io.BytesIO()
    genesis.save(model.state_dict(), blob)
    tensors = torch_load(blob.getvalue())
    assert sorted(t.shape for t in tensors.values()) == [torch.Size([2]), torch.Size([2, 3])]
    path = tmp_path / "plain.safetensors"
    path.write_bytes(np_save({"a": np.arange(4, dtype=np.float32), "b": np.ones((2, 2), dtype=np.int64)}))
    out = genesis.load(str(path), weights_only=False)
    assert sorted(out) == ["a", "b"] and out["a"].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert out["b"].dtype == genesis.int64
