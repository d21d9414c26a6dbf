"""torch-style repr: tensor([...], device='cuda:0', dtype=genesis.float16, grad_fn=<MulBackward>), and
set_printoptions (precision, threshold, edgeitems, linewidth, profile, sci_mode), laid out by torch's rules.

torch's layout, which this follows: every element is formatted by one formatter chosen from the printed
values (all of them, or the edges of a summarized tensor): integers as they are; floats that are all whole
as ``3.``; others with ``precision`` decimals; scientific form when the nonzero finite magnitudes span more
than 1000x, pass 1e8 or fall under 1e-4, unless ``sci_mode`` says otherwise. Each
element is right-aligned to the widest; a row wraps at ``linewidth``; tensors of more than ``threshold``
elements show ``edgeitems`` entries at each end of every dim around ``...``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from genesis_ndarray import float32, get_default_dtype, int64

_INDENT = len("tensor(")


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_PROFILES: dict[str, dict[str, Any]] = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}
PRINT_OPTS = _PrintOptions()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as torch.set_printoptions.

    Args:
        precision: digits after the decimal point (default 4).
        threshold: element count above which a tensor is summarized (default 1000).
        edgeitems: entries shown at each end of a summarized dim (default 3).
        linewidth: characters per line before a row wraps (default 80).
        profile: "default", "short" or "full" sets all of the above at once (the others then override it).
        sci_mode: True / False forces / forbids scientific notation; None (the default) chooses per tensor.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Invalid profile: {profile!r}; expected one of {', '.join(_PROFILES)}")
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode  # (torch assigns it whether given or not)


def get_printoptions() -> dict[str, Any]:
    """The current print options, as set_printoptions takes them (torch._tensor_str.get_printoptions)."""
    return dict(vars(PRINT_OPTS))


class _Formatter:
    """One element format for a whole tensor, chosen from ``values`` (a flat numpy array)."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        p = PRINT_OPTS.precision
        if not self.floating:
            for v in values.tolist():
                self.width = max(self.width, len(str(v)))
        else:
            finite = values[np.isfinite(values) & (values != 0)].astype(np.float64)
            if finite.size:
                mags = np.abs(finite)
                lo, hi = mags.min(), mags.max()
                self.int_mode = bool(np.all(finite == np.ceil(finite)))
                auto = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                self.sci_mode = auto if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
                if self.sci_mode:
                    texts = [f"{v:.{p}e}" for v in finite.tolist()]
                elif self.int_mode:
                    texts = [f"{v:.0f}." for v in finite.tolist()]
                else:
                    texts = [f"{v:.{p}f}" for v in finite.tolist()]
                self.width = max(self.width, *map(len, texts))

    def format(self, value: Any) -> str:
        """``value`` formatted and right-aligned to the tensor's widest element."""
        p = PRINT_OPTS.precision
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{p}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{p}f}"
        return text.rjust(self.width)


def _edges(arr: np.ndarray) -> np.ndarray:
    """The entries a summarized print shows: ``edgeitems`` at each end of every dim."""
    k = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim > 1 and not k:
        return arr[(slice(0, 0),) * arr.ndim]
    if arr.shape[0] > 2 * k:
        arr = np.concatenate((arr[:k], arr[arr.shape[0] - k :]))
    return arr if arr.ndim == 1 else np.stack([_edges(row) for row in arr])


def _vector(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    k = PRINT_OPTS.edgeitems
    per_line = max(1, (PRINT_OPTS.linewidth - indent) // (fmt.width + 2))  # ", " after each element
    if summarize and not k:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * k:
        data = [fmt.format(v) for v in arr[:k].tolist()] + [" ..."]
        data += [fmt.format(v) for v in arr[arr.shape[0] - k :].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    k = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * k:
        rows = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(k)] + ["..."]
        rows += [_nested(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0] - k, arr.shape[0])]
    else:
        rows = [_nested(row, indent + 1, summarize, fmt) for row in arr]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(text: str, suffixes: list[str]) -> str:
    """``text`` and its ``, key=value`` suffixes, each on a new line where it would pass ``linewidth``."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * _INDENT + suffix)
            last = _INDENT + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t: Any) -> str:
    """The repr of a genesis Tensor, laid out as torch lays out its tensors' (see the module docstring)."""
    data = t.data
    if data.dtype.numpy is None:  # bfloat16: print through float32 (torch prints 16-bit floats as float32)
        data = data.astype(float32)
    arr = np.asarray(data.numpy())
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = get_default_dtype()
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype=genesis.{t.dtype.name}")
    else:
        summarize = arr.size > PRINT_OPTS.threshold
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        fmt = _Formatter((_edges(arr) if summarize else arr).reshape(-1))
        body = _nested(arr, _INDENT, summarize, fmt)
        if t.dtype not in (default, int64) and t.dtype.name != "bool":
            suffixes.append(f"dtype=genesis.{t.dtype.name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes("tensor(" + body, suffixes)
