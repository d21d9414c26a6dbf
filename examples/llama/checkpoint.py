"""Checkpoints of the Llama example: genesis' own (one safetensors file from train.py) or a Hugging Face folder.

An HF model folder holds config.json and either model.safetensors or shards named in
model.safetensors.index.json ("weight_map": parameter name -> shard file). The parameter names
(``model.layers.N.self_attn.q_proj.weight``, ``model.norm.weight``, ``lm_head.weight``, ...) are the
example model's own names, so the state dict loads as it is; a tied head's missing ``lm_head.weight`` is
the embedding.
"""

from __future__ import annotations

import json
from pathlib import Path

from model import LlamaConfig, LlamaForCausalLM

import genesis


def read_config(path: Path) -> LlamaConfig:
    """The model's config: an HF folder's config.json, or the config stored in a genesis checkpoint."""
    path = Path(path)
    if path.is_dir():
        return LlamaConfig.from_dict(json.loads((path / "config.json").read_text()))
    return LlamaConfig.from_dict(genesis.load(path, map_location="cpu")["config"])


def hf_state_dict(folder: Path) -> dict:
    """Every tensor of an HF safetensors folder (sharded with an index, or one model.safetensors), on the cpu
    (genesis.load_hf_checkpoint)."""
    tensors, _ = genesis.load_hf_checkpoint(folder)
    return tensors


def load_model(path: Path, device: str = "cpu", dtype=None, max_seq_len: int | None = None) -> LlamaForCausalLM:
    """The model of a genesis checkpoint file or an HF folder, its weights in ``dtype`` (default: as stored)
    on ``device``. Parameter names are HF's on both sides; HF's rotary buffers, if any, are skipped."""
    config = read_config(path)
    path = Path(path)
    state = hf_state_dict(path) if path.is_dir() else genesis.load(path, map_location="cpu")["model"]
    state = {k: v for k, v in state.items() if not k.endswith("rotary_emb.inv_freq")}
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    model = LlamaForCausalLM(config, max_seq_len)
    if dtype is not None:
        model = model.to(dtype=dtype)
        state = {k: v.to(dtype=dtype) for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    return model.to(device)
