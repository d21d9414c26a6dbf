"""The differentiable primitives, each a Function with forward and backward side by side.

elementwise.py  arithmetic and math, one or two operands, with broadcasting
reduce.py       sum, mean, max/min, var, logsumexp
shape.py        views and copies of layout: reshape, permute, expand, indexing, cat
linalg.py       matmul, softmax, log_softmax
convert.py      dtype casts and device moves
"""

from .convert import Cast, Clone, Contiguous, Copy, Fill, ToDevice
from .elementwise import (
    Abs,
    Add,
    Clamp,
    Cos,
    Div,
    Exp,
    Log,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    ReLU,
    Sigmoid,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Unary,
    Where,
)
from .linalg import LogSoftmax, MatMul, Softmax
from .reduce import Amax, Amin, Logsumexp, MaxDim, Mean, MinDim, Sum, Var
from .shape import (
    AsStrided,
    BasicGetItem,
    Cat,
    CopySlices,
    Expand,
    Flatten,
    GetItem,
    Narrow,
    Permute,
    Reshape,
    SetItem,
    Squeeze,
    Transpose,
    Unsqueeze,
    View,
)

__all__ = [
    "Abs", "Add", "Amax", "Amin", "AsStrided", "BasicGetItem", "Cast", "Cat", "Clamp", "Clone", "Contiguous", "Copy",
    "CopySlices", "Cos", "Div", "Exp", "Expand", "Fill", "Flatten", "GetItem", "Log", "LogSoftmax", "Logsumexp",
    "MatMul", "MaxDim", "Maximum", "Mean", "MinDim", "Minimum", "Mul", "Narrow", "Neg", "Permute", "Pow", "ReLU",
    "Reshape", "SetItem", "Sigmoid", "Sin", "Softmax", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "ToDevice",
    "Transpose", "Unary", "Unsqueeze", "Var", "View", "Where",
]
