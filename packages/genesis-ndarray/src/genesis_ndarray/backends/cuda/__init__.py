"""The CUDA backend: genesis_storage StridedViews computed on by genesis_kernels.

Importing this package registers every op under the device type "cuda".
"""

from . import elementwise, linalg, memory, random, reduce, views

__all__ = ["elementwise", "linalg", "memory", "random", "reduce", "views"]
