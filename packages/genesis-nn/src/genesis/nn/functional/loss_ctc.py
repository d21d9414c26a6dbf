"""Connectionist temporal classification loss (torch.nn.functional.ctc_loss).

The forward-backward algorithm in log space over the extended label sequence (a blank before, between
and after the target's labels), vectorised over the batch and the label positions: the Python loops
run over time only. The gradient is torch's closed form for log-probabilities,
exp(lp) - exp(log(sum of alpha * beta over a class's positions) + nll - lp), which a log_softmax before
it turns into the exact gradient of its logits (torch's convention, kept so that ``.grad`` agrees).
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Function, Tensor, arange, autocast_policy, cat, full, stack, tensor, zeros

__all__ = ["ctc_loss"]

_NEG_INF = float("-inf")


def _logsumexp(*terms: Tensor) -> Tensor:
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf (never nan)."""
    m = terms[0]
    for term in terms[1:]:
        m = m.maximum(term)
    shift = m.where(m > _NEG_INF, 0.0)
    total = (terms[0] - shift).exp()
    for term in terms[1:]:
        total = total + (term - shift).exp()
    return total.log() + shift


def _shift_right(x: Tensor, by: int) -> Tensor:
    """x moved ``by`` places along the last dim, -inf filling the start: entry s holds x[..., s - by]."""
    pad = full((*x.shape[:-1], by), _NEG_INF, dtype=x.dtype, device=x.device)
    return cat([pad, x[..., : x.shape[-1] - by]], -1)


def _shift_left(x: Tensor, by: int) -> Tensor:
    """Entry s holds x[..., s + by], -inf past the end."""
    pad = full((*x.shape[:-1], by), _NEG_INF, dtype=x.dtype, device=x.device)
    return cat([x[..., by:], pad], -1)


class _CTC(Function):
    """Per-sample negative log-likelihood of the targets; inputs are log_probs (T, N, C), the extended
    labels (N, L), the skip mask (N, L), input lengths (N,) and target lengths (N,) as int64 tensors."""

    @staticmethod
    def forward(ctx, log_probs, ext, skip, input_lengths, target_lengths, zero_infinity):
        n_time, batch, _ = log_probs.shape
        length = ext.shape[1]
        lp_ext = log_probs.gather(2, ext.unsqueeze(0).expand(n_time, batch, length))  # (T, N, L)
        position = arange(length, device=log_probs.device).unsqueeze(0)
        has_labels = (target_lengths > 0).unsqueeze(1)
        start = (position == 0) | ((position == 1) & has_labels)
        alpha = lp_ext[0].where(start, _NEG_INF)
        alphas = [alpha]
        for t in range(1, n_time):
            skipped = _shift_right(alpha, 2).where(skip, _NEG_INF)
            step = _logsumexp(alpha, _shift_right(alpha, 1), skipped) + lp_ext[t]
            alpha = step.where((t < input_lengths).unsqueeze(1), alpha)  # a finished sequence keeps its last
            alphas.append(alpha)
        last = (2 * target_lengths).unsqueeze(1)
        end = alpha.gather(1, last).squeeze(1)
        before_end = alpha.gather(1, (last - 1).clamp_min(0)).squeeze(1).where(target_lengths > 0, _NEG_INF)
        nll = -_logsumexp(end, before_end)
        ctx.save_for_backward(log_probs, ext, skip, input_lengths, target_lengths, stack(alphas), lp_ext, nll)
        ctx.zero_infinity = zero_infinity
        return nll.where(nll != float("inf"), 0.0) if zero_infinity else nll

    @staticmethod
    def backward(ctx, grad):
        log_probs, ext, skip, input_lengths, target_lengths, alphas, lp_ext, nll = ctx.saved_tensors
        n_time, batch, n_classes = log_probs.shape
        length = ext.shape[1]
        position = arange(length, device=log_probs.device).unsqueeze(0)
        last = (2 * target_lengths).unsqueeze(1)
        ends = (position == last) | ((position == last - 1) & (target_lengths > 0).unsqueeze(1))
        skip_from = _shift_left(skip.to(alphas.dtype), 2) > 0  # from s, may s + 2 be reached by a skip?
        beta = full((batch, length), _NEG_INF, dtype=alphas.dtype, device=alphas.device)
        betas = [beta] * n_time
        for t in range(n_time - 1, -1, -1):
            first = (t == input_lengths - 1).unsqueeze(1)  # a sequence's last frame starts its recursion
            inside = (t < input_lengths - 1).unsqueeze(1)
            skipped = _shift_left(beta, 2).where(skip_from, _NEG_INF)
            step = _logsumexp(beta, _shift_left(beta, 1), skipped) + lp_ext[t]
            beta = lp_ext[t].where(ends & first, _NEG_INF).where(first, step.where(inside, _NEG_INF))
            betas[t] = beta
        ab = alphas + stack(betas)  # (T, N, L): log of the probability through label position s at time t
        shift = ab.amax(2, keepdim=True)
        shift = shift.where(shift > _NEG_INF, 0.0)
        index = ext.unsqueeze(0).expand(n_time, batch, length)
        summed = zeros(n_time, batch, n_classes, dtype=ab.dtype, device=ab.device).scatter_add(
            2, index, (ab - shift).exp()
        )
        lcab = summed.log() + shift
        grad_lp = log_probs.exp() - (lcab + nll.reshape(1, batch, 1) - log_probs).exp()
        frames = arange(n_time, device=log_probs.device).reshape(n_time, 1, 1)
        keep = frames < input_lengths.reshape(1, batch, 1)
        if ctx.zero_infinity:  # an impossible alignment's gradient is 0 rather than nan
            keep = keep & (nll.reshape(1, batch, 1) != float("inf"))
        grad_lp = (grad_lp * grad.reshape(1, batch, 1)).where(keep, 0.0)
        return grad_lp, None, None, None, None, None


def _lengths(value: Tensor | Sequence[int] | int, device) -> Tensor:
    if isinstance(value, Tensor):
        return value.to(device=device).long().reshape(-1)
    if isinstance(value, int):
        return tensor([value], device=device)
    return tensor(list(value), device=device).long()


def _padded_targets(targets: Tensor, target_lengths: list[int], batch: int) -> Tensor:
    """(N, S) targets from the padded 2-D form or the concatenated 1-D form."""
    if targets.ndim == 2 or (batch == 1 and targets.ndim == 1 and len(target_lengths) == 1):
        padded = targets.reshape(batch, -1)
        width = padded.shape[1]
        longest = max(target_lengths, default=0)
        if longest > width:
            raise RuntimeError(
                f"Expected tensor to have size at least {longest} at dimension 1, but got size {width} for "
                "argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"
            )
        return padded
    total = sum(target_lengths)
    if targets.shape[0] != total:
        raise RuntimeError(
            f"Expected tensor to have size {total} at dimension 0, but got size {targets.shape[0]} for argument "
            "#2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"
        )
    width = max(target_lengths, default=0)
    offsets = [sum(target_lengths[:b]) for b in range(batch)]
    index = tensor(offsets, device=targets.device).unsqueeze(1) + arange(width, device=targets.device).unsqueeze(0)
    if not total:
        return zeros(batch, width, dtype=targets.dtype, device=targets.device)
    return targets[index.clamp_max(total - 1)]


def _extended_labels(padded: Tensor, blank: int) -> tuple[Tensor, Tensor]:
    """The extended label sequence (N, 2S + 1): blank, l1, blank, l2, ..., blank; and where a position may
    be reached by skipping the blank before it (a label differing from the label two places back)."""
    batch, width = padded.shape
    blanks = full((batch, width), blank, dtype=padded.dtype, device=padded.device)
    ext = cat([stack([blanks, padded], 2).reshape(batch, 2 * width), blanks[:, :1].reshape(batch, 1)], 1)
    if width == 0:
        ext = full((batch, 1), blank, dtype=padded.dtype, device=padded.device)
    back_two = cat([full((batch, 2), blank, dtype=ext.dtype, device=ext.device), ext[:, :-2]], 1)
    skip = (ext != blank) & (ext != back_two)
    return ext, skip


@autocast_policy("float32")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss: -log of the total probability of every alignment of each target to its input.

    Args:
        log_probs: (T, N, C) or unbatched (T, C) log-probabilities (log_softmax's output).
        targets: (N, S) padded class indices, or all targets concatenated (sum(target_lengths),); never blank.
        input_lengths, target_lengths: (N,) lengths (tensors or sequences of ints).
        blank: the blank class.
        reduction: ``"mean"`` (each loss divided by its target length, then the batch mean), ``"sum"``,
            ``"none"`` (N,).
        zero_infinity: impossible alignments (infinite losses) give 0 and a zero gradient.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    n_time, batch, n_classes = lp.shape
    if not 0 <= blank < n_classes:
        raise RuntimeError("blank must be in label range")
    in_lengths = _lengths(input_lengths, lp.device)
    tg_lengths = _lengths(target_lengths, lp.device)
    if in_lengths.numel() != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tg_lengths.numel() != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    for value in in_lengths.tolist():
        if value > n_time:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {n_time}, but got value {value} "
                "(while checking arguments for ctc_loss_allocate_outputs)"
            )
    padded = _padded_targets(targets.long(), tg_lengths.tolist(), batch)
    # Entries past a target's length may hold anything (padding): blank keeps every gather in range.
    padded = padded.where(arange(padded.shape[1], device=lp.device).unsqueeze(0) < tg_lengths.unsqueeze(1), blank)
    ext, skip = _extended_labels(padded, blank)
    loss = _CTC.apply(lp, ext, skip, in_lengths, tg_lengths, zero_infinity)
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        return (loss / tg_lengths.reshape(loss.shape).clamp_min(1).to(loss.dtype)).mean()
    return loss.sum() if reduction == "sum" else loss
