"""CPU cross-entropy with the CUDA backend's contract (per-row loss / logsumexp / target weight, and
the logits' gradient), written with torch's functions in float32 (float64 for float64 logits)."""

from __future__ import annotations

import torch

from .common import reg


def _acc(logits: torch.Tensor) -> torch.dtype:
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def _targets(logits: torch.Tensor, target: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(target with ignored rows sent to class 0, kept mask); torch's IndexError for an out-of-range target."""
    if target.dtype.is_floating_point or target.dtype == torch.bool:
        raise RuntimeError(f"cross_entropy: expected an integer target, got {target.dtype}")
    if not logits.ndim or tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"cross_entropy: target of shape {list(target.shape)} does not match logits of shape "
            f"{list(logits.shape)} (classes last)"
        )
    kept = target != ignore_index
    bad = kept & ((target < 0) | (target >= logits.shape[-1]))
    if bool(bad.any()):
        raise IndexError(f"Target {int(target[bad].flatten()[0])} is out of bounds.")
    return target.long().where(kept, 0), kept


def _row_weight(weight: torch.Tensor | None, safe: torch.Tensor, kept: torch.Tensor, acc) -> torch.Tensor:
    w = torch.ones(safe.shape, dtype=acc) if weight is None else weight.to(acc)[safe]
    return w * kept


@reg("cross_entropy")
def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None, ignore_index: int, label_smoothing: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    acc = _acc(logits)
    safe, kept = _targets(logits, target, ignore_index)
    x = logits.to(acc)
    lse = torch.logsumexp(x, -1) if x.shape[-1] else torch.full(x.shape[:-1], float("-inf"), dtype=acc)
    wy = _row_weight(weight, safe, kept, acc)
    picked = x.gather(-1, safe.unsqueeze(-1)).squeeze(-1) if x.numel() else torch.zeros_like(lse)
    loss = (1 - label_smoothing) * wy * (lse - picked)
    if label_smoothing > 0:
        n = x.shape[-1]
        if weight is None:
            smooth = n * lse - x.sum(-1)
        else:
            w = weight.to(acc)
            smooth = w.sum() * lse - (x * w).sum(-1)
        loss = loss + (label_smoothing / n) * smooth * kept
    return loss, lse, wy


@reg("cross_entropy_backward")
def cross_entropy_backward(
    logits: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    lse: torch.Tensor,
    grad: torch.Tensor,
    total: torch.Tensor | None,
    ignore_index: int,
    label_smoothing: float,
    out: torch.Tensor | None,
) -> torch.Tensor:
    acc = _acc(logits)
    safe, kept = _targets(logits, target, ignore_index)
    x = logits.to(acc)
    n = x.shape[-1]
    scale = grad.to(acc).expand(safe.shape) if grad.numel() == 1 else grad.to(acc)
    if total is not None:
        scale = scale / total.to(acc)
    scale = torch.where(kept, scale, 0.0)  # an ignored row: exactly 0, even from an all-ignored mean's 0/0
    wy = _row_weight(weight, safe, torch.ones_like(kept), acc)
    a = (1 - label_smoothing) * wy * scale
    b = (label_smoothing / max(n, 1)) * scale
    w = None if weight is None else weight.to(acc)
    coef = a + b * (n if w is None else w.sum())
    dx = torch.exp(x - lse.to(acc).unsqueeze(-1)) * coef.unsqueeze(-1)
    dx = dx - torch.nn.functional.one_hot(safe, n).to(acc) * a.unsqueeze(-1) if x.numel() else dx
    if label_smoothing > 0:
        dx = dx - b.unsqueeze(-1) * (1.0 if w is None else w)
    dx = torch.where(kept.unsqueeze(-1), dx, 0.0).to(logits.dtype)
    if out is None:
        return dx
    return out.copy_(dx)


# linear_cross_entropy: the cuda backend's contract and roundings. Each chunk's logits are computed in float32
# (float64 for float64) and rounded to the input's dtype; the logits' gradient is rounded to it as cuda writes
# it over the logits; the products accumulate in float32.
@reg("linear_cross_entropy")
def linear_cross_entropy(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    ignore_index: int,
    label_smoothing: float,
    chunk: int,
    grad: torch.Tensor | None,
    total: torch.Tensor | None,
    need: tuple[bool, bool, bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    rows, features = x.shape
    classes = w.shape[0]
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    wa = w.to(acc)
    ba = None if b is None else b.to(acc)
    loss, row_weight = torch.empty(rows, dtype=acc), torch.empty(rows, dtype=acc)
    backward = grad is not None
    gx = torch.empty(rows, features, dtype=acc) if backward and need[0] else None
    gw = torch.zeros(classes, features, dtype=acc) if backward and need[1] else None
    gb = torch.zeros(classes, dtype=acc) if backward and need[2] and b is not None else None
    if rows:
        # torch's IndexError for a bad target, before any chunk is computed (cuda checks them all first too)
        bad = (target != ignore_index) & ((target < 0) | (target >= classes))
        if bool(bad.any()):
            raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")
    per_row = None if grad is None else grad.reshape(-1)
    for start in range(0, rows, max(chunk, 1)):
        stop = min(start + chunk, rows)
        x_c = x[start:stop].to(acc)
        z = torch.nn.functional.linear(x_c, wa, ba).to(x.dtype)
        loss_c, lse_c, weight_c = cross_entropy(z, target[start:stop], weight, ignore_index, label_smoothing)
        loss[start:stop], row_weight[start:stop] = loss_c, weight_c
        if per_row is None:
            continue
        g_c = per_row if per_row.numel() == 1 else per_row[start:stop]
        dz = cross_entropy_backward(
            z, target[start:stop], weight, lse_c, g_c, total, ignore_index, label_smoothing, None
        ).to(acc)
        if gx is not None:
            gx[start:stop] = dz @ wa
        if gw is not None:
            gw += dz.T @ x_c
        if gb is not None:
            gb += dz.sum(0)
    return loss, row_weight, gx, gw, gb
