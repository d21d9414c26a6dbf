"""genesis.load_hf_checkpoint / genesis.estimate_checkpoint_bytes on a tiny random checkpoint in the Hugging Face
Llama layout (config.json; one model.safetensors, or two shards and model.safetensors.index.json), written with
the safetensors package: every tensor as written (bf16 kept), dtype / device / name selection, header-only size
estimates, and wrong indexes or missing files refused with clear errors."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

import genesis
from genesis.serialization import CorruptCheckpointError

CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "vocab_size": 11}


def _weights() -> dict[str, torch.Tensor]:
    """A two-layer Llama's names, random values, bf16 weights with an fp32 norm and an int64 buffer."""
    h, v = CONFIG["hidden_size"], CONFIG["vocab_size"]
    out = {"model.embed_tokens.weight": torch.randn(v, h).bfloat16()}
    for i in range(CONFIG["num_hidden_layers"]):
        for proj in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            out[f"model.layers.{i}.self_attn.{proj}.weight"] = torch.randn(h, h).bfloat16()
        out[f"model.layers.{i}.mlp.gate_proj.weight"] = torch.randn(2 * h, h).bfloat16()
        out[f"model.layers.{i}.input_layernorm.weight"] = torch.rand(h) + 0.5
    out["model.norm.weight"] = torch.rand(h) + 0.5
    out["model.position_ids"] = torch.randperm(7)
    out["lm_head.weight"] = torch.randn(v, h).bfloat16()
    return out


def _write(folder, weights, sharded: bool = True) -> None:
    (folder / "config.json").write_text(json.dumps(CONFIG))
    if not sharded:
        save_file(weights, str(folder / "model.safetensors"))
        return
    names = list(weights)
    shards = {"model-00001-of-00002.safetensors": names[:5], "model-00002-of-00002.safetensors": names[5:]}
    for shard, keys in shards.items():
        save_file({k: weights[k] for k in keys}, str(folder / shard))
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    total = sum(t.numel() * t.element_size() for t in weights.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))


def _as_torch(t: genesis.Tensor) -> torch.Tensor:
    return torch.from_dlpack(t.detach().cpu().contiguous()).clone()


@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "single"])
def test_every_tensor_loads_as_written(device, tmp_path, sharded):
    weights = _weights()
    _write(tmp_path, weights, sharded)
    tensors, config = genesis.load_hf_checkpoint(tmp_path, device=device)
    assert config == CONFIG and sorted(tensors) == sorted(weights)
    for name, t in weights.items():
        assert tensors[name].device.type == device
        assert str(tensors[name].dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        assert torch.equal(_as_torch(tensors[name]), t), name


def test_dtype_conversion_and_name_selection(tmp_path):
    weights = _weights()
    _write(tmp_path, weights)
    tensors, _ = genesis.load_hf_checkpoint(
        str(tmp_path), dtype=genesis.float32, select=lambda name: name.startswith("model.layers.1.") or "ids" in name
    )
    expected = {k: v for k, v in weights.items() if k.startswith("model.layers.1.") or "ids" in k}
    assert sorted(tensors) == sorted(expected)
    for name, t in expected.items():
        want = t.float() if t.is_floating_point() else t  # integer tensors keep their dtype
        got = _as_torch(tensors[name])
        assert got.dtype == want.dtype and torch.equal(got, want), name


def test_estimate_reads_sizes_from_headers(tmp_path):
    weights = _weights()
    _write(tmp_path, weights)
    exact = sum(t.numel() * t.element_size() for t in weights.values())
    assert genesis.estimate_checkpoint_bytes(tmp_path) == exact
    as_fp32 = sum(t.numel() * (4 if t.is_floating_point() else t.element_size()) for t in weights.values())
    assert genesis.estimate_checkpoint_bytes(tmp_path, dtype="float32") == as_fp32
    single = tmp_path / "single.safetensors"
    save_file(weights, str(single))
    assert genesis.estimate_checkpoint_bytes(single) == exact
    pt = tmp_path / "model.pt"
    torch.save(weights, pt)
    assert genesis.estimate_checkpoint_bytes(pt) == exact


def test_wrong_index_or_missing_files_raise_clear_errors(tmp_path):
    _write(tmp_path, _weights())
    index_path = tmp_path / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())

    wrong = {**index["weight_map"], "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors"}
    index_path.write_text(json.dumps({"weight_map": wrong}))
    with pytest.raises(CorruptCheckpointError, match=r"up_proj.*model-00001-of-00002.safetensors.*does not hold"):
        genesis.load_hf_checkpoint(tmp_path)

    index_path.write_text(json.dumps({"weight_map": {**index["weight_map"], "x": "model-00003-of-00003.safetensors"}}))
    with pytest.raises(FileNotFoundError, match=r"model-00003-of-00003\.safetensors"):
        genesis.load_hf_checkpoint(tmp_path)

    index_path.write_text(json.dumps({"weight_map": {"x": "../elsewhere.safetensors"}}))
    with pytest.raises(CorruptCheckpointError, match=r"not a file name"):
        genesis.load_hf_checkpoint(tmp_path)

    index_path.write_text(json.dumps({"metadata": {}}))
    with pytest.raises(CorruptCheckpointError, match=r"weight_map"):
        genesis.load_hf_checkpoint(tmp_path)

    index_path.unlink()
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors"):
        genesis.load_hf_checkpoint(tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        genesis.load_hf_checkpoint(tmp_path)


def test_truncated_shard_is_refused(tmp_path):
    weights = _weights()
    _write(tmp_path, weights, sharded=False)
    path = tmp_path / "model.safetensors"
    blob = path.read_bytes()
    for length in [4, 40, len(blob) - 3]:
        path.write_bytes(blob[:length])
        with pytest.raises(CorruptCheckpointError, match=r"truncated|fit|corrupt"):
            genesis.load_hf_checkpoint(tmp_path)
    with pytest.raises(CorruptCheckpointError):
        genesis.estimate_checkpoint_bytes(path)  # still the truncated file
