"""nanoGPT's sampling loop, written in torch's names, runs unchanged on genesis: crop the context, take the last
logits, temperature, top-k through ``logits[logits < v[:, [-1]]] = -float('Inf')``, softmax, multinomial,
cat. The same source is executed with ``torch`` bound to genesis and to torch itself."""

from __future__ import annotations

import itertools

import numpy as np
import torch

import genesis

GENERATE_SOURCE = '''
import torch
import torch.nn.functional as F


@torch.no_grad()
def generate(model, idx, max_new_tokens, block_size, temperature=1.0, top_k=None):
    """Extend idx (b, t) by max_new_tokens sampled tokens, feeding back each prediction."""
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        logits = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx
'''


def _load(lib: str):
    namespace: dict = {}
    source = GENERATE_SOURCE
    if lib == "genesis":
        source = source.replace("import torch\n", "import genesis as torch\n")
        source = source.replace("import torch.nn.functional as F\n", "import genesis.nn.functional as F\n")
    exec(compile(source, f"<nanogpt generate, {lib}>", "exec"), namespace)
    return namespace["generate"]


class BigramLogits:
    """A model returning fixed bigram logits (vocab x vocab) for each context token: (b, t) -> (b, t, vocab)."""

    def __init__(self, table, lib) -> None:
        self.table, self.lib = table, lib

    def __call__(self, idx):
        return self.table[idx]


def test_nanogpt_generate_runs_on_genesis_and_respects_top_k(device) -> None:
    rng = np.random.default_rng(0)
    vocab, top_k = 11, 3
    table = rng.normal(size=(vocab, vocab)).astype(np.float32) * 3
    allowed = np.argsort(-table, axis=1)[:, :top_k]  # the top-k next tokens after each token
    genesis.manual_seed(0)
    model = BigramLogits(genesis.tensor(table, device=device), genesis)
    start = genesis.tensor(rng.integers(0, vocab, size=(4, 5)), device=device)
    out = _load("genesis")(model, start, max_new_tokens=12, block_size=8, temperature=0.9, top_k=top_k)
    assert out.shape == (4, 17) and out.dtype == genesis.int64 and out.device == start.device
    ids = out.cpu().numpy()
    np.testing.assert_array_equal(ids[:, :5], start.cpu().numpy())
    for row in ids:
        for prev, nxt in itertools.pairwise(row[4:]):
            assert nxt in allowed[prev], (prev, nxt, allowed[prev])


def test_nanogpt_generate_greedy_limit_matches_torch(device) -> None:
    """top_k=1 makes the loop deterministic: genesis and torch, running the same source, give the same ids."""
    rng = np.random.default_rng(1)
    vocab = 9
    table = rng.normal(size=(vocab, vocab)).astype(np.float32)
    start = rng.integers(0, vocab, size=(3, 4))
    theirs = _load("torch")(BigramLogits(torch.tensor(table), torch), torch.tensor(start), 10, 6, 1.0, top_k=1)
    ours = _load("genesis")(
        BigramLogits(genesis.tensor(table, device=device), genesis), genesis.tensor(start, device=device), 10, 6, 1.0, 1
    )
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
