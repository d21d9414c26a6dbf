"""buffer.by_layout: launch plans memoised on the operands' shapes, strides and dtypes."""

from __future__ import annotations

import pytest

from genesis_kernels.buffer import Buffer, by_layout


def test_same_layout_is_worked_out_once_and_any_change_is_not_a_hit() -> None:
    calls: list[tuple] = []

    @by_layout
    def plan(bufs, tag):
        calls.append((tuple(b.shape), tuple(b.strides), tag))
        if len(bufs[0].shape) != 2:
            raise ValueError("two dims only")
        return (bufs[0].shape[0], tuple(b.strides[0] for b in bufs), tag)

    a = Buffer(0, (4, 6), (6, 1), "float32")
    b = Buffer(4096, (4, 6), (6, 1), "float32")  # another address, the same layout
    assert plan([a, b], "x") == (4, (6, 6), "x")
    assert plan([b, a], "x") == (4, (6, 6), "x")
    assert len(calls) == 1
    assert plan([a, Buffer(0, (4, 6), (6, 1), "bfloat16")], "x") == (4, (6, 6), "x")  # a dtype is part of it
    assert len(calls) == 2
    transposed = Buffer(0, (4, 6), (1, 4), "float32")
    assert plan([a, transposed], "x") == (4, (6, 1), "x")  # strides differ: worked out anew
    assert plan([a, b], "y") == (4, (6, 6), "y")  # extra arguments are part of the key
    assert plan([a], "x") == (4, (6,), "x")  # so is the number of buffers
    assert len(calls) == 5
    flat = Buffer(0, (24,), (1,), "float32")
    for _ in range(2):  # a layout that raises is never cached: it raises every time
        with pytest.raises(ValueError, match="two dims"):
            plan([flat], "x")
    assert len(calls) == 7


def test_a_full_cache_is_dropped_not_grown(monkeypatch: pytest.MonkeyPatch) -> None:
    import genesis_kernels.buffer as buffer

    monkeypatch.setattr(buffer, "_BY_LAYOUT_MAX", 3)

    @by_layout
    def plan(bufs):
        return tuple(bufs[0].shape)

    for n in range(1, 8):
        assert plan([Buffer(0, (n,), (1,), "float32")]) == (n,)
        assert len(plan.cache) <= 3  # type: ignore[attr-defined]
