"""The CUDA runtime facade of genesis_ndarray, passed up unchanged (same names, same objects)."""

from genesis_ndarray.cuda import *  # noqa: F403
from genesis_ndarray.cuda import __all__  # noqa: F401
