"""The differentiable primitives, each a Function with forward and backward side by side.

elementwise.py  arithmetic and math, one or two operands, with broadcasting
reduce.py       sum, mean, max/min, var, logsumexp, vector norms
shape.py        views and copies of layout: reshape, permute, expand, indexing, cat
linalg.py       matmul, softmax, log_softmax
convert.py      dtype casts and device moves
views.py        diagonal, unfold, as_strided and in-place writes through views (CopySlices)
indexing.py     gather/scatter/scatter_add, index_select/index_add, masked_fill/masked_select,
                take_along_dim, sort/topk
math.py         more unary math, atan2/remainder/fmod, lerp/addcmul/addcdiv, tensor clamp, prod, cumsum/cumprod,
                tril/triu
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
from .indexing import (
    Gather,
    IndexAdd,
    IndexSelect,
    MaskedFill,
    MaskedSelect,
    Scatter,
    ScatterAdd,
    Sort,
    TakeAlongDim,
    TopK,
)
from .linalg import LogSoftmax, MatMul, Softmax
from .math import (
    Addcdiv,
    Addcmul,
    Atan2,
    ClampTensor,
    Cumprod,
    Cumsum,
    Erf,
    Exp2,
    Expm1,
    FloorDivide,
    Fmod,
    Gelu,
    GeluTanh,
    Lerp,
    Log1p,
    Log2,
    Log10,
    Prod,
    Reciprocal,
    Remainder,
    Rsqrt,
    Silu,
    Square,
    Tan,
    Tril,
    Triu,
)
from .reduce import Amax, Amin, Logsumexp, MaxDim, Mean, MinDim, Sum, Var, VectorNorm
from .shape import (
    BasicGetItem,
    Cat,
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
from .views import AsStrided, CopySlices, Diagonal, DiagonalBackward, Restride, Unfold, UnfoldBackward

__all__ = [
    "Abs", "Add", "Amax", "Amin", "AsStrided", "BasicGetItem", "Cast", "Cat", "Clamp", "Clone", "Contiguous", "Copy",
    "CopySlices", "Cos", "Div", "Exp", "Expand", "Fill", "Flatten", "GetItem", "Log", "LogSoftmax", "Logsumexp",
    "MatMul", "MaxDim", "Maximum", "Mean", "MinDim", "Minimum", "Mul", "Narrow", "Neg", "Permute", "Pow", "ReLU",
    "Reshape", "SetItem", "Sigmoid", "Sin", "Softmax", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "ToDevice",
    "Transpose", "Unary", "Unsqueeze", "Var", "VectorNorm", "View", "Where",
    # math.py
    "Addcdiv", "Addcmul", "Atan2", "ClampTensor", "Cumprod", "Cumsum", "Erf", "Exp2", "Expm1", "FloorDivide", "Fmod",
    "Gelu", "GeluTanh", "Lerp", "Log1p", "Log2", "Log10", "Prod", "Reciprocal", "Remainder", "Rsqrt", "Silu",
    "Square", "Tan", "Tril", "Triu",
    # indexing.py
    "Gather", "IndexAdd", "IndexSelect", "MaskedFill", "MaskedSelect", "Scatter", "ScatterAdd", "Sort",
    "TakeAlongDim", "TopK",
    # views.py
    "Diagonal", "DiagonalBackward", "Restride", "Unfold", "UnfoldBackward",
]
