"""Next-token sampling for a decode loop: logits processors (HF transformers' semantics) and the draw.

Every helper works on (batch, vocab) logits (any leading dims: the last one is the vocabulary) with device
ops only, no ``.item()`` / ``.tolist()``, so a decode step that uses them stays capturable in a CUDA graph.
The draw itself is the exponential race (``argmax(p / E)``, E ~ Exp(1) i.i.d.: category i wins with
probability p_i), which is what multinomial without replacement does for one sample (multinomial waits for
nothing either, but adds a float64 copy and its validation of the probabilities: one launch less here).
"""

from __future__ import annotations

import contextlib
from typing import Any

from genesis_autograd import Tensor, arange, empty_like, full_like

__all__ = ["apply_repetition_penalty", "apply_temperature", "sample_next_token", "top_k_filter", "top_p_filter"]

_NEG_INF = float("-inf")


def apply_temperature(logits: Tensor, t: float) -> Tensor:
    """``logits / t`` (t > 0; t < 1 sharpens, t > 1 flattens the distribution)."""
    if not t > 0:
        raise ValueError(f"`temperature` has to be a strictly positive float, but is {t}")
    return logits if t == 1.0 else logits / t


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """``-inf`` outside the ``k`` largest logits of each row (the ones torch.topk picks, ties included);
    ``k`` at least the vocabulary keeps everything."""
    if not isinstance(k, int) or k <= 0:
        raise ValueError(f"`top_k` has to be a strictly positive integer, but is {k}")
    if k >= logits.shape[-1]:
        return logits
    values, indices = logits.topk(k, dim=-1)
    return full_like(logits, _NEG_INF).scatter(-1, indices, values)


def top_p_filter(logits: Tensor, p: float, min_tokens_to_keep: int = 1) -> Tensor:
    """Nucleus filtering (HF's TopPLogitsWarper): keep the smallest set of most probable tokens whose
    probabilities sum to at least ``p`` (and at least ``min_tokens_to_keep``), ``-inf`` elsewhere."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"`top_p` has to be a float >= 0 and <= 1, but is {p}")
    if not isinstance(min_tokens_to_keep, int) or min_tokens_to_keep < 1:
        raise ValueError(f"`min_tokens_to_keep` has to be a positive integer, but is {min_tokens_to_keep}")
    vocab = logits.shape[-1]
    ascending, order = logits.sort(dim=-1)
    cumulative = ascending.softmax(-1).cumsum(-1)
    # ascending: a token goes when the mass at or below it is <= 1 - p (the rest still reaches p)
    drop = cumulative <= 1 - p
    keep_last = arange(vocab, device=logits.device) >= vocab - min_tokens_to_keep  # the most probable ones
    drop = drop & ~keep_last
    return logits.masked_fill(drop.scatter(-1, order, drop), _NEG_INF)


def apply_repetition_penalty(logits: Tensor, token_ids: Tensor, penalty: float) -> Tensor:
    """CTRL's repetition penalty (HF's RepetitionPenaltyLogitsProcessor): the logits of the tokens already in
    ``token_ids`` (batch, n) are divided by ``penalty`` where positive, multiplied where negative."""
    if not penalty > 0:
        raise ValueError(f"`penalty` has to be a strictly positive float, but is {penalty}")
    seen = logits.gather(-1, token_ids)
    return logits.scatter(-1, token_ids, (seen * penalty).where(seen < 0, seen / penalty))


def sample_next_token(
    logits: Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: Any = None,
    greedy: bool = False,
) -> Tensor:
    """The next token of each row of ``logits`` (batch, vocab) as int64 (batch,): the argmax with ``greedy``,
    else a draw from softmax(top_p(top_k(logits / temperature))). ``generator``: a genesis.Generator for the
    draw (its device's type must match). No host synchronisation."""
    if greedy:
        return logits.argmax(-1)
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None and top_p < 1.0:
        logits = top_p_filter(logits, top_p)
    probs = logits.float().softmax(-1)
    race = empty_like(probs)
    with generator.active() if generator is not None else contextlib.nullcontext():
        race.exponential_()
    return (probs / race).argmax(-1)
