"""The Llama / Qwen2 example (examples/llama): HF-layout checkpoints written from a plain-torch reference load
and give its logits; KV-cache decoding gives the tokens of full recomputation for a batch of prompts of
different lengths; the training script learns; the CUDA-graph decode step gives eager decoding's tokens."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from example_loading import ROOT
from llama_reference import TorchLlama, tiny_config, write_hf_folder

import genesis
from device_support import requires_cuda

sys.path.insert(0, str(ROOT / "examples" / "llama"))
import checkpoint as llama_checkpoint
import generate as llama_generate
import model as llama_model
import train as llama_train

from genesis.generation import StaticKVCache


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_hf_folder_loads_and_gives_the_reference_logits(tmp_path, device, model_type) -> None:
    torch.manual_seed(0)
    reference = TorchLlama(tiny_config(model_type))
    write_hf_folder(reference, tmp_path / model_type, shards=2)
    idx = torch.randint(0, 37, (2, 11))
    expected = reference(idx).detach().numpy()
    if device == "cpu":
        model = llama_checkpoint.load_model(tmp_path / model_type, device)
        tolerance = 1e-5
    else:
        model = llama_checkpoint.load_model(tmp_path / model_type, device, genesis.bfloat16)
        tolerance = 0.1 * np.abs(expected).max()  # bf16 weights and activations through two layers
    assert model.config.model_type == model_type
    assert model.model.layers[0].self_attn.q_proj.bias is not None if model_type == "qwen2" else True
    with genesis.no_grad():
        got = model(genesis.tensor(idx.numpy(), device=device)).float().cpu().numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_hf_folder_with_a_missing_tensor_is_refused(tmp_path) -> None:
    torch.manual_seed(0)
    reference = TorchLlama(tiny_config("llama"))
    del reference.model.layers[1].mlp.up_proj
    write_hf_folder(reference, tmp_path, shards=1)
    with pytest.raises(RuntimeError, match=r"model\.layers\.1\.mlp\.up_proj\.weight"):
        llama_checkpoint.load_model(tmp_path)


def _tiny_model(device: str, **overrides) -> llama_model.LlamaForCausalLM:
    genesis.manual_seed(0)
    config = llama_model.LlamaConfig(
        **{
            **dict(
                vocab_size=41,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=64,
                initializer_range=0.3,  # peaked logits: greedy picks are not near-ties
            ),
            **overrides,
        }
    )
    return llama_model.LlamaForCausalLM(config).to(device).eval()


def _greedy_by_recompute(model, prompt: list[int], new: int, device: str) -> list[int]:
    ids = list(prompt)
    with genesis.no_grad():
        for _ in range(new):
            logits = model(genesis.tensor([ids], device=device))
            ids.append(int(logits[0, -1].argmax().item()))
    return ids[len(prompt) :]


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_kv_cache_greedy_equals_recomputing_the_prefix(device, model_type) -> None:
    model = _tiny_model(device, model_type=model_type, tie_word_embeddings=model_type == "qwen2")
    rng = np.random.default_rng(1)
    prompts = [rng.integers(0, 41, size=n).tolist() for n in (5, 1, 9)]
    got = llama_generate.generate(model, prompts, max_new_tokens=8)
    expected = [_greedy_by_recompute(model, p, 8, device) for p in prompts]
    assert got == expected


def test_cached_logits_equal_full_forward(device) -> None:
    """Prefill of right-padded prompts then single-token decode steps: every step's logits equal the full
    forward's at that position (float32, so closely)."""
    model = _tiny_model(device)
    rng = np.random.default_rng(2)
    full = rng.integers(0, 41, size=(2, 10))
    lengths = [4, 7]
    cache = model.make_cache(2, 10)
    with genesis.no_grad():
        reference = model(genesis.tensor(full, device=device)).cpu().numpy()
        positions = genesis.tensor(lengths, device=device)
        padded = genesis.tensor(full[:, :7], device=device)
        first = model(padded, cache=cache, positions=genesis.zeros(2, dtype=genesis.int64, device=device))
        first = first.cpu().numpy()
        np.testing.assert_allclose(first[0, :4], reference[0, :4], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(first[1, :7], reference[1, :7], rtol=1e-4, atol=1e-5)
        for _ in range(3):
            pos = positions.cpu().numpy()
            token = genesis.tensor(full[np.arange(2), pos][:, None], device=device)
            step = model(token, cache=cache, positions=positions).cpu().numpy()
            np.testing.assert_allclose(step[:, 0], reference[np.arange(2), pos], rtol=1e-4, atol=1e-5)
            positions.add_(1)


def test_static_kv_cache_writes_at_per_sequence_positions(device) -> None:
    cache = StaticKVCache(num_layers=2, batch_size=3, num_kv_heads=2, max_len=6, head_dim=4, device=device)
    assert (
        cache.memory_bytes()
        == StaticKVCache.estimate_bytes(2, 3, 2, 6, 4, genesis.float32)
        == 2 * 2 * 3 * 2 * 6 * 4 * 4
    )
    assert "KV cache: 2 layers" in cache.report() and "MiB" in cache.report()
    k, v = torch.randn(3, 2, 2, 4), torch.randn(3, 2, 2, 4)
    positions = [0, 3, 4]
    keys, values = cache.update(
        1,
        genesis.tensor(k.numpy(), device=device),
        genesis.tensor(v.numpy(), device=device),
        genesis.tensor(positions, device=device),
    )
    expected_k, expected_v = torch.zeros(3, 2, 6, 4), torch.zeros(3, 2, 6, 4)
    for b, p in enumerate(positions):
        expected_k[b, :, p : p + 2], expected_v[b, :, p : p + 2] = k[b], v[b]
    np.testing.assert_array_equal(keys.cpu().numpy(), expected_k.numpy())
    np.testing.assert_array_equal(values.cpu().numpy(), expected_v.numpy())
    assert not cache.keys[0].cpu().numpy().any()  # the other layer untouched
    mask = cache.attention_mask(genesis.tensor(positions, device=device), 2).cpu().numpy()
    expected_mask = np.arange(6)[None, None, :] <= (np.array(positions)[:, None] + np.arange(2))[:, :, None]
    np.testing.assert_array_equal(mask, expected_mask[:, None])
    cache.reset()
    assert not cache.keys[1].cpu().numpy().any() and not cache.values[1].cpu().numpy().any()
    with pytest.raises(RuntimeError, match=r"expected keys and values of shape \(3, 2, T, 4\)"):
        cache.update(
            0,
            genesis.zeros(3, 1, 1, 4, device=device),
            genesis.zeros(3, 1, 1, 4, device=device),
            genesis.zeros(3, dtype=genesis.int64, device=device),
        )
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        StaticKVCache(1, 1, 1, 0, 4)


def test_sampling_options_stay_within_their_support(device) -> None:
    genesis.manual_seed(0)
    logits = genesis.tensor(np.random.default_rng(3).normal(size=(4, 30)), dtype=genesis.float32, device=device)
    seen = genesis.zeros(4, 30, dtype=genesis.bool, device=device)
    top3 = set(map(tuple, np.argsort(-logits.cpu().numpy(), axis=1)[:, :3].tolist()))
    allowed = np.argsort(-logits.cpu().numpy(), axis=1)[:, :3]
    for _ in range(5):
        token = llama_generate.sample_next(logits, seen, 1.0, 3, 1.0, 1.0).cpu().numpy()
        assert all(token[b] in allowed[b] for b in range(4)), (token, top3)
    greedy = llama_generate.sample_next(logits, seen, 0.0, 0, 1.0, 1.0).cpu().numpy()
    np.testing.assert_array_equal(greedy, logits.cpu().numpy().argmax(1))
    nucleus = llama_generate.sample_next(logits, seen, 1.0, 0, 1e-6, 1.0).cpu().numpy()  # only the top token
    np.testing.assert_array_equal(nucleus, greedy)
    seen[:, 0] = True  # a penalty that large makes a seen token lose the argmax
    boosted = logits.clone()
    boosted[:, 0] = 100.0
    penalised = llama_generate.sample_next(boosted, seen, 0.0, 0, 1.0, 1e4).cpu().numpy()
    assert (penalised != 0).all()


@pytest.mark.slow
def test_training_script_runs_and_the_loss_falls(tmp_path) -> None:
    summary = llama_train.main(
        [
            "--device",
            "cpu",
            "--steps",
            "30",
            "--batch-size",
            "8",
            "--block-size",
            "16",
            "--hidden-size",
            "32",
            "--layers",
            "1",
            "--heads",
            "4",
            "--kv-heads",
            "2",
            "--eval-interval",
            "30",
            "--eval-batches",
            "2",
            "--warmup",
            "3",
            "--lr",
            "1e-2",
            "--out-dir",
            str(tmp_path),
            "--quiet",
            "--sample-tokens",
            "10",
        ]
    )
    assert summary["last_train"] < 0.8 * summary["first_train"], summary
    assert (tmp_path / "ckpt.safetensors").exists()
    texts = llama_generate.main(
        [
            "--checkpoint",
            str(tmp_path / "ckpt.safetensors"),
            "--device",
            "cpu",
            "--prompt",
            "And",
            "--prompt",
            "In the be",
            "--max-new-tokens",
            "6",
            "--temperature",
            "0.8",
            "--top-k",
            "5",
            "--quiet",
        ]
    )
    assert len(texts) == 2 and texts[0].startswith("And") and len(texts[1]) == len("In the be") + 6


@pytest.mark.parametrize("_", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_graph_decode_gives_eager_tokens(_) -> None:
    model = _tiny_model("cuda").to(genesis.bfloat16)
    rng = np.random.default_rng(4)
    prompts = [rng.integers(0, 41, size=n).tolist() for n in (6, 2, 11, 3)]
    eager = llama_generate.generate(model, prompts, max_new_tokens=12)
    graphed = llama_generate.generate(model, prompts, max_new_tokens=12, cuda_graph=True)
    assert graphed == eager


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])  # the mode reports cuda waits
def test_decode_step_and_prefill_wait_for_nothing(device) -> None:
    """Under genesis.cuda.set_sync_debug_mode("error") (which raises on every implicit host wait on cuda) a
    prefill of right-padded prompts into a StaticKVCache, greedy picks and eager decode steps complete, with
    the logits of the same steps run in the default mode."""
    model = _tiny_model(device)
    rng = np.random.default_rng(5)
    prompts = genesis.tensor(rng.integers(0, 41, size=(2, 6)), device=device)
    last = genesis.tensor([3, 5], device=device)  # each prompt's last token (right padding)

    def run() -> list:
        cache = model.make_cache(2, 12)
        logits = model(prompts, cache=cache, logits_at=last)
        positions = last + 1
        out = [logits]
        for _ in range(3):
            token = logits[:, -1].argmax(-1, keepdim=True)
            logits = model(token, cache=cache, positions=positions)
            positions.add_(1)
            out.append(logits)
        return out

    with genesis.inference_mode():
        genesis.cuda.set_sync_debug_mode("error")
        try:
            quiet = run()
        finally:
            genesis.cuda.set_sync_debug_mode("default")
        loud = run()
    for a, b in zip(quiet, loud):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert quiet[-1].shape == (2, 1, 41)
