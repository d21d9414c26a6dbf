"""The CUDA backend: genesis_storage StridedViews computed on by genesis_kernels.

Importing this package registers every op under the device type "cuda".
"""

from . import elementwise, index_ops, linalg, math_ops, memory, random, reduce, views

__all__ = ["elementwise", "index_ops", "linalg", "math_ops", "memory", "random", "reduce", "views"]
