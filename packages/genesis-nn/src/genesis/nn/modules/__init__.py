"""genesis.nn.modules: torch.nn.modules' import paths (``from genesis.nn.modules.conv import Conv2d``,
``genesis.nn.modules.loss._Loss``, ``genesis.nn.modules.utils._pair``), one shim per torch submodule.

The classes live in genesis.nn's family files; each shim re-exports torch's names for its submodule
that genesis.nn has, looked up when they are imported (see _reexport), so new layers need no edit here.
``genesis.nn.modules.<Name>`` answers any of them, as torch.nn.modules does.
"""

from __future__ import annotations

from typing import Any

from . import (
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    linear_cross_entropy_options,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from . import utils as utils

_SHIMS = (
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    linear_cross_entropy_options,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted({n for shim in _SHIMS for n in shim.__all__})
    if not name.startswith("__"):
        for shim in _SHIMS:
            try:
                return getattr(shim, name)
            except AttributeError:
                continue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    names = {n for shim in _SHIMS for n in dir(shim)}
    return sorted(names | {m.__name__.rsplit(".", 1)[1] for m in _SHIMS} | {"utils"})
