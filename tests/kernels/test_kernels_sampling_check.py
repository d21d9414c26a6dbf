"""genesis_kernels.sampling_check: multinomial's probabilities validated on the device. Valid rows come back
as float64 exactly (any float dtype, any strides, short rows sharing a program, long rows looped over);
invalid rows (a negative / nan / inf element, a sum <= 0) become uniform and raise torch's RuntimeError at
the flag read (eager) or at the next replay (under a simulated capture), once."""

from __future__ import annotations

import re

import pytest
import torch
from kernels_helpers import FLOATS, TORCH_DTYPES, buf, sync

import genesis_kernels as gk
from capture_support import simulate_capture

check = gk.sampling_check
BAD_VALUE = r"probability tensor contains either `inf`, `nan` or element < 0"
BAD_SUM = r"invalid multinomial distribution \(sum of probabilities <= 0\)"


def _probs(shape: tuple[int, ...], dtype: str, device: str) -> torch.Tensor:
    """Fresh positive weights (never zeros)."""
    return (torch.rand(shape, dtype=torch.float64) + 0.05).to(TORCH_DTYPES[dtype]).to(device)


def _run(p: torch.Tensor, device: str, row_messages: bool = False) -> tuple[torch.Tensor, str | None]:
    """(the float64 rows written, the error the eager flag reported or None): read once the stream ran."""
    out = torch.full(tuple(p.shape), float("nan"), dtype=torch.float64, device=p.device)
    try:
        check.check_probabilities(buf(p), buf(out), row_messages=row_messages)
        sync(device)
        check.raise_pending()
    except RuntimeError as err:
        sync(device)
        return out, str(err)
    return out, None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 7), (300, 5), (2, 3000)])
def test_valid_rows_copied_as_float64(device, dtype, shape):
    p = _probs(shape, dtype, device)
    out, err = _run(p, device)
    assert err is None
    assert torch.equal(out.cpu(), p.cpu().double())


def test_strided_rows(device):
    base = _probs((9, 6), "float32", device)
    p = base.t()  # (6, 9), column stride 6
    out, err = _run(p, device)
    assert err is None and out.is_contiguous()
    assert torch.equal(out.cpu(), p.cpu().double())


def test_invalid_rows_become_uniform_and_report_once(device):
    p = _probs((6, 9), "float32", device)
    p[1, 4] = -0.5
    p[3, 0] = float("nan")
    p[4, 8] = float("inf")
    p[5] = 0.0
    out, err = _run(p, device)
    assert err is not None and err == check.BAD_VALUE  # a bad element is reported before a zero sum
    bad = [1, 3, 4, 5]
    assert torch.equal(out[bad].cpu(), torch.ones(4, 9, dtype=torch.float64))
    good = [0, 2]
    assert torch.equal(out[good].cpu(), p[good].cpu().double())
    check.raise_pending()  # reported once: the flag was cleared


def test_zero_sum_alone_reports_the_sum(device):
    p = _probs((4, 3000), "bfloat16", device)
    p[2] = 0.0
    out, err = _run(p, device)
    assert err is not None and err == check.BAD_SUM
    assert torch.equal(out[2].cpu(), torch.ones(3000, dtype=torch.float64))
    assert torch.equal(out[3].cpu(), p[3].cpu().double())


NAN, INF = float("nan"), float("inf")
# rows -> (the up-front check's message, the with-replacement kernel's: the first invalid row's first bad entry)
STYLES = [
    ([[0.0, 0.0, 0.0], [0.4, -0.1, 0.7]], check.BAD_VALUE, check.BAD_SUM),
    ([[0.1, 0.2, 0.3], [INF, -1.0, 0.7], [0.4, 0.1, -0.7]], check.BAD_VALUE, "entry = infinity or NaN"),
    ([[0.1, 0.2, 0.3], [0.5, NAN, INF]], check.BAD_VALUE, "entry < 0"),
    ([[0.1, 0.2, 0.3], [0.5, -INF, 0.2], [0.0, 0.0, 0.0]], check.BAD_VALUE, "entry < 0"),
]


@pytest.mark.parametrize("case", range(len(STYLES)))
def test_message_styles_follow_torch(device, case):
    rows, upfront, per_row = STYLES[case]
    # torch's own messages for these rows: up-front (one sample), per row (several with replacement)
    for n, want in ((1, upfront), (2, per_row)):
        with pytest.raises(RuntimeError, match=re.escape(want)):
            torch.multinomial(torch.tensor(rows), n, True)
    p = torch.tensor(rows, dtype=torch.float32, device=device)
    assert _run(p, device)[1] == upfront
    message = _run(p, device, row_messages=True)[1]
    assert message is not None and message.startswith("invalid multinomial distribution") and per_row in message


def test_out_must_be_contiguous_float64(device):
    p = _probs((2, 3), "float32", device)
    with pytest.raises(ValueError, match=r"out must be contiguous float64 \[2, 3\], got \[2, 3\] float32"):
        check.check_probabilities(buf(p), buf(torch.empty(2, 3, device=device)))


@pytest.fixture
def captured(monkeypatch):
    """Simulate a capture on this thread; yields the graph and the hooks registered meanwhile."""
    return simulate_capture(monkeypatch)


def test_captured_check_reports_at_replay(device, captured):
    graph, hooks = captured
    p = _probs((5, 4), "float32", device)
    p[2, 1] = -1.0
    out = torch.empty(5, 4, dtype=torch.float64, device=device)
    check.check_probabilities(buf(p), buf(out))  # nothing raised now: nothing may wait under capture
    sync(device)
    check.raise_pending()  # the eager flags are untouched by a captured launch
    assert torch.equal(out[2].cpu(), torch.ones(4, dtype=torch.float64))
    assert len(hooks) == 1 and graph.kept
    with pytest.raises(RuntimeError, match=BAD_VALUE + r" \(in a replay of a CUDA graph that captured multinomial"):
        hooks[0].on_replay(graph)
    hooks[0].on_replay(graph)  # reported once: the flag is cleared


def test_captured_valid_rows_report_nothing(device, captured):
    graph, hooks = captured
    p = _probs((3, 10), "float64", device)
    out = torch.empty(3, 10, dtype=torch.float64, device=device)
    check.check_probabilities(buf(p), buf(out))
    sync(device)
    assert torch.equal(out, p)
    hooks[0].on_replay(graph)
