"""Clamps for the special functions' range splits that behave the same on the GPU and under the interpreter.

``tl.minimum`` / ``tl.maximum`` lower to the GPU's min / max instructions, which return the other operand when
one is NaN, while the interpreter's numpy propagates the NaN: a kernel that clamps its argument into a
method's range therefore evaluated the method at the bound for a NaN input on the GPU only (and returned a
number where torch gives NaN). These selects give the bound for NaN on every backend, so the interpreter
tier sees what the GPU computes, and the callers (special_math.special_unary / special_binary) restore NaN
explicitly.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def at_most(x, bound):
    """min(x, bound), and bound for a NaN ``x`` (as the GPU's min instruction)."""
    return tl.where(x < bound, x, bound)


@triton.jit
def at_least(x, bound):
    """max(x, bound), and bound for a NaN ``x`` (as the GPU's max instruction)."""
    return tl.where(x > bound, x, bound)
