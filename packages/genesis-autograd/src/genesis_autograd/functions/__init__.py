"""The differentiable primitives, one module per op family (the same names on every floor of Genesis).

Each module holds the family's Functions, forward and backward side by side, and the Tensor mixin
of the family (its Tensor methods); tensor.py puts the mixins together.

activation.py   gelu / silu with a fused backward; gated units: glu, swiglu, geglu
fused_pointwise.py  a generated pointwise program (genesis_kernels.codegen) with its generated backward
elementwise.py  unary math (one table of derivative rules), arithmetic, comparisons, ternary ops, clamp
reduce.py       sum, mean, prod, amax/amin, max/min, var/std, logsumexp, vector norms, any/all
softmax.py      softmax, log_softmax
cross_entropy.py  fused cross-entropy over logits with class-index targets
linear_cross_entropy.py  cross-entropy of a linear layer's output, chunked: the logits never exist whole
normalization.py  layer_norm, rms_norm (fused forward and backward)
rnn.py          fused LSTM / GRU cells; one node per recurrent layer and direction over a whole sequence
rope.py         rotary position embeddings of q and k, one node, fused both ways (apply_rotary_emb)
attention.py    scaled_dot_product_attention (fused: flash attention on cuda)
matmul.py       matmul / @
index.py        gather, scatter(_add), index_select, index_add, masked_fill, masked_select, take_along_dim
getitem.py      x[index] and x[index] = value
sort.py         sort, argsort, topk
scan.py         cumsum, cumprod
random.py       in-place random fills, bernoulli, the zero gradient of sampling
creation.py     tril, triu
views.py        reshape/view/permute/..., diagonal, unfold, as_strided, cat, in-place writes through views
optimizer.py    multi-tensor optimizer steps, total norm and clip (in place, outside the graph)
memory.py       dtype casts, device moves, clone, contiguous, fill_, copy_, item/tolist/numpy/DLPack
"""

from .activation import Gated, Gelu, GeluTanh, Glu, Silu
from .attention import ScaledDotProductAttention
from .creation import Tril, Triu
from .cross_entropy import CrossEntropy
from .elementwise import (
    Abs,
    Add,
    Addcdiv,
    Addcmul,
    Atan2,
    Ceil,
    Clamp,
    ClampTensor,
    Cos,
    Div,
    Erf,
    Exp,
    Exp2,
    Expm1,
    Floor,
    FloorDivide,
    Fmod,
    Lerp,
    Log,
    Log1p,
    Log2,
    Log10,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    Reciprocal,
    ReLU,
    Remainder,
    Round,
    Rsqrt,
    Sigmoid,
    Sign,
    Sin,
    Sqrt,
    Square,
    Sub,
    Tan,
    Tanh,
    Trunc,
    Unary,
    Where,
)
from .fused_pointwise import FusedPointwise
from .getitem import BasicGetItem, GetItem, SetItem
from .index import Gather, IndexAdd, IndexSelect, MaskedFill, MaskedSelect, Scatter, ScatterAdd, TakeAlongDim
from .linear_cross_entropy import LinearCrossEntropy
from .matmul import Linear, MatMul
from .memory import Cast, Clone, Contiguous, Copy, Fill, ToDevice
from .normalization import LayerNorm, RMSNorm
from .reduce import Amax, Amin, Logsumexp, MaxDim, Mean, MinDim, Prod, Sum, Var, VectorNorm
from .rnn import FusedGRUCell, FusedLSTMCell, RNNLayer
from .rope import Rotary
from .scan import Cumprod, Cumsum
from .softmax import LogSoftmax, Softmax
from .sort import Sort, TopK
from .views import (
    AsStrided,
    Cat,
    CopySlices,
    Diagonal,
    DiagonalBackward,
    Expand,
    Flatten,
    Narrow,
    Permute,
    Reshape,
    Restride,
    Squeeze,
    Transpose,
    Unfold,
    UnfoldBackward,
    Unsqueeze,
    View,
)

__all__ = [
    # fused_pointwise.py
    "FusedPointwise",
    # activation.py
    "Gated",
    "Gelu",
    "GeluTanh",
    "Glu",
    "Silu",
    # elementwise.py
    "Abs",
    "Add",
    "Addcdiv",
    "Addcmul",
    "Atan2",
    "Ceil",
    "Clamp",
    "ClampTensor",
    "Cos",
    "Div",
    "Erf",
    "Exp",
    "Exp2",
    "Expm1",
    "Floor",
    "FloorDivide",
    "Fmod",
    "Lerp",
    "Log",
    "Log1p",
    "Log2",
    "Log10",
    "Maximum",
    "Minimum",
    "Mul",
    "Neg",
    "Pow",
    "ReLU",
    "Reciprocal",
    "Remainder",
    "Round",
    "Rsqrt",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sqrt",
    "Square",
    "Sub",
    "Tan",
    "Tanh",
    "Trunc",
    "Unary",
    "Where",
    # reduce.py, softmax.py, cross_entropy.py, normalization.py, matmul.py
    "Amax",
    "Amin",
    "Logsumexp",
    "MaxDim",
    "Mean",
    "MinDim",
    "Prod",
    "Sum",
    "Var",
    "VectorNorm",
    "LogSoftmax",
    "Softmax",
    "Linear",
    "LinearCrossEntropy",
    "CrossEntropy",
    "LayerNorm",
    "RMSNorm",
    # rope.py
    "Rotary",
    # rnn.py
    "FusedGRUCell",
    "FusedLSTMCell",
    "RNNLayer",
    "MatMul",
    "ScaledDotProductAttention",
    # index.py, getitem.py, sort.py, scan.py, creation.py
    "Gather",
    "IndexAdd",
    "IndexSelect",
    "MaskedFill",
    "MaskedSelect",
    "Scatter",
    "ScatterAdd",
    "TakeAlongDim",
    "BasicGetItem",
    "GetItem",
    "SetItem",
    "Sort",
    "TopK",
    "Cumprod",
    "Cumsum",
    "Tril",
    "Triu",
    # views.py, memory.py
    "AsStrided",
    "Cat",
    "CopySlices",
    "Diagonal",
    "DiagonalBackward",
    "Expand",
    "Flatten",
    "Narrow",
    "Permute",
    "Reshape",
    "Restride",
    "Squeeze",
    "Transpose",
    "Unfold",
    "UnfoldBackward",
    "Unsqueeze",
    "View",
    "Cast",
    "Clone",
    "Contiguous",
    "Copy",
    "Fill",
    "ToDevice",
]
