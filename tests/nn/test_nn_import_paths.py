"""torch.nn's import paths in genesis: every genesis.nn.modules.<sub> shim offers each torch class of
torch.nn.modules.<sub> that genesis.nn has; _Loss / _WeightedLoss are the losses' real bases; the private
bases and tuple helpers user code names; genesis.nn.parameter."""

from __future__ import annotations

import importlib
import inspect
from collections import OrderedDict

import pytest
import torch

import genesis
import genesis.nn as nn
from genesis.nn.modules import utils as gutils

SUBMODULES = [
    "activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout", "flatten",
    "fold", "instancenorm", "linear", "loss", "module", "normalization", "padding", "pixelshuffle", "pooling", "rnn",
    "sparse", "transformer", "upsampling",
]  # fmt: skip


def _torch_classes(sub: str) -> list[str]:
    module = importlib.import_module(f"torch.nn.modules.{sub}")
    public = [n for n in getattr(module, "__all__", []) if inspect.isclass(getattr(module, n, None))]
    private = [
        n for n, o in vars(module).items()
        if n.startswith("_") and not n.startswith("__") and inspect.isclass(o) and o.__module__ == module.__name__
    ]  # fmt: skip
    return public + private


@pytest.mark.parametrize("sub", SUBMODULES)
def test_every_torch_class_genesis_has_is_importable_from_its_shim(sub):
    shim = importlib.import_module(f"genesis.nn.modules.{sub}")
    names = [n for n in _torch_classes(sub) if hasattr(nn, n)]
    for name in names:
        assert getattr(shim, name) is getattr(nn, name), name
        assert getattr(nn.modules, name) is getattr(nn, name), name
        exec(f"from genesis.nn.modules.{sub} import {name}", {})
    assert set(names) <= set(shim.__all__) | {n for n in names if n.startswith("_")}


def test_missing_names_raise_import_error():
    with pytest.raises(ImportError):
        exec("from genesis.nn.modules.conv import NoSuchConv", {})
    with pytest.raises(AttributeError, match="has no attribute"):
        nn.modules.loss.NotALoss  # noqa: B018


def test_star_import_takes_the_available_names():
    namespace: dict = {}
    exec("from genesis.nn.modules.loss import *", namespace)
    assert namespace["CTCLoss"] is nn.CTCLoss and namespace["CrossEntropyLoss"] is nn.CrossEntropyLoss
    assert "_Loss" not in namespace


def test_losses_derive_from_the_loss_bases():
    from genesis.nn.modules.loss import _Loss, _WeightedLoss

    for name in torch.nn.modules.loss.__all__:
        if hasattr(nn, name):
            assert issubclass(getattr(nn, name), _Loss), name
            weighted = issubclass(getattr(torch.nn, name), torch.nn.modules.loss._WeightedLoss)
            assert issubclass(getattr(nn, name), _WeightedLoss) == weighted, name
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert _Loss(size_average=False).reduction == "sum"
    assert _WeightedLoss(weight=genesis.ones(3)).weight is not None
    assert "weight" in dict(_WeightedLoss(weight=genesis.ones(3)).named_buffers())


class _MyLoss(nn.modules.loss._Loss):
    """A user loss on genesis' base, as torch code writes one."""

    def forward(self, input, target):
        return nn.functional.l1_loss(input, target, reduction=self.reduction)


def test_a_user_loss_on_the_base_class_works():
    loss = _MyLoss(reduction="sum")
    a, b = genesis.randn(3, 2), genesis.randn(3, 2)
    assert abs(loss(a, b).item() - (a - b).abs().sum().item()) < 1e-5


def test_private_bases_and_module_paths():
    from genesis.nn.modules.batchnorm import _BatchNorm, _NormBase
    from genesis.nn.modules.conv import _ConvNd
    from genesis.nn.modules.dropout import _DropoutNd
    from genesis.nn.modules.module import Module

    assert Module is nn.Module
    assert issubclass(nn.BatchNorm1d, _BatchNorm) and issubclass(nn.BatchNorm2d, _NormBase)
    assert issubclass(nn.Conv2d, _ConvNd) and issubclass(nn.Dropout, _DropoutNd)
    from genesis.nn.parameter import Parameter

    assert Parameter is nn.Parameter


@pytest.mark.parametrize("name", ["_single", "_pair", "_triple", "_quadruple"])
@pytest.mark.parametrize("value", [3, (1, 2), [4, 5, 6], 2.5])
def test_tuple_helpers_match_torch(name, value):
    assert getattr(gutils, name)(value) == getattr(torch.nn.modules.utils, name)(value)


def test_ntuple_and_reverse_repeat_match_torch():
    assert gutils._ntuple(5)(7) == torch.nn.modules.utils._ntuple(5)(7)
    assert gutils._reverse_repeat_tuple((1, 2, 3), 2) == torch.nn.modules.utils._reverse_repeat_tuple((1, 2, 3), 2)


def test_consume_prefix_matches_torch():
    state = OrderedDict([("module.a", 1), ("module.b.c", 2), ("d", 3)])
    state._metadata = OrderedDict([("", {}), ("module", {"v": 1}), ("module.b", {"v": 2})])
    tstate = OrderedDict(state)
    tstate._metadata = OrderedDict(state._metadata)
    gutils.consume_prefix_in_state_dict_if_present(state, "module.")
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(tstate, "module.")
    assert list(state.items()) == list(tstate.items())
    assert state._metadata == tstate._metadata
