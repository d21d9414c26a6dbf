"""The hand-written activation kernels' work as generated programs (one generator for pointwise kernels).

Each function returns the Program whose generated kernel does what a hand-written launcher does:

``activation(kind)``           elementwise.unary(kind, x)               y = act(x)
``activation_backward(kind)``  activation.activation_backward(kind)     dx = dy * act'(x)
``gated(kind)``                activation.gated_forward(kind)           out = act(gate) * up
``gated_backward(kind)``       activation.gated_backward(kind)          dgate, dup
``bias_act_residual(kind)``    binary add + unary act + binary add      out = act(x + bias) + residual
``dropout_residual(p)``        random.dropout + binary add              out = dropout(x, p) + residual

Programs are built once per argument (cached) and hash the same in every process.
"""

from __future__ import annotations

import functools

from .ir import Program, ProgramBuilder

KINDS = ("gelu", "gelu_tanh", "silu", "sigmoid")
_GRAD = {"gelu": "gelu_grad", "gelu_tanh": "gelu_tanh_grad", "silu": "silu_grad"}


def _check(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown activation kind {kind!r}; expected one of {KINDS}")


def _slope(b: ProgramBuilder, x, kind: str):
    if kind == "sigmoid":
        s = b.sigmoid(x)
        return s * (1.0 - s)
    return b.op(_GRAD[kind], x)


@functools.cache
def activation(kind: str) -> Program:
    """``act(x)``."""
    _check(kind)
    b = ProgramBuilder()
    b.output(b.op(kind, b.input()))
    return b.build()


@functools.cache
def activation_backward(kind: str) -> Program:
    """Inputs (dy, x): ``dy * act'(x)``."""
    _check(kind)
    b = ProgramBuilder()
    dy, x = b.input(), b.input()
    b.output(dy * _slope(b, x, kind))
    return b.build()


@functools.cache
def gated(kind: str) -> Program:
    """Inputs (gate, up): ``act(gate) * up``."""
    _check(kind)
    b = ProgramBuilder()
    gate, up = b.input(), b.input()
    b.output(b.op(kind, gate) * up)
    return b.build()


@functools.cache
def gated_backward(kind: str) -> Program:
    """Inputs (dy, gate, up); outputs (dgate, dup) = (dy * up * act'(gate), dy * act(gate))."""
    _check(kind)
    b = ProgramBuilder()
    dy, gate, up = b.input(), b.input(), b.input()
    b.output(dy * up * _slope(b, gate, kind))
    b.output(dy * b.op(kind, gate))
    return b.build()


@functools.cache
def bias_act_residual(kind: str) -> Program:
    """Inputs (x, bias, residual): ``act(x + bias) + residual`` (bias broadcast along the rows)."""
    _check(kind)
    b = ProgramBuilder()
    x, bias, residual = b.input(), b.input(), b.input()
    b.output(b.op(kind, x + bias) + residual)
    return b.build()


@functools.cache
def dropout_residual(p: float) -> Program:
    """Inputs (x, residual): ``dropout(x, p) + residual``."""
    b = ProgramBuilder()
    x, residual = b.input(), b.input()
    b.output(b.dropout(x, p) + residual)
    return b.build()
