"""One generator for pointwise kernels: an IR of per-element programs, Triton source from it, a launcher,
and the reverse-mode gradient program of any program.

ir.py        Program (plain data: nodes in topological order, outputs), ProgramBuilder (shares
             common subexpressions, checks ops as they are added), the op table
source.py    a program -> the source of one @triton.jit kernel, dense or strided (rank r)
device.py    device helpers the generated kernels call (dropout keep-mask, act'(x))
launch.py    fused_pointwise(program, inputs, outputs, scalars, stream): generates, caches, launches
gradient.py  Program.gradient(...): the program of the inputs' gradients, recomputing intermediates
programs.py  the hand-written activation chains as programs (GELU, SiLU, bias + GELU + residual, ...)
"""

from . import programs
from .gradient import GradientProgram
from .ir import OPS, Node, Program, ProgramBuilder, Value
from .launch import STATS, cache_dir, fused_pointwise, generated_source

__all__ = [
    "OPS",
    "STATS",
    "GradientProgram",
    "Node",
    "Program",
    "ProgramBuilder",
    "Value",
    "cache_dir",
    "fused_pointwise",
    "generated_source",
    "programs",
]
