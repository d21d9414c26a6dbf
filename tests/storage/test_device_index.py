"""genesis_storage.device_index reads a device argument as torch.cuda's _get_device_index does, without a GPU.

The cases that name an index explicitly, or that torch refuses, are compared with torch itself (its CPU build
answers them before it touches CUDA); the ones that mean "the current device" read this thread's setting.
"""

from __future__ import annotations

import sys
import threading

import pytest
import torch
from torch.cuda._utils import _get_device_index as torch_device_index

import genesis_storage as gs

_device_module = sys.modules["genesis_storage.device"]


@pytest.mark.parametrize("arg", [0, 3, "cuda:0", "cuda:2", torch.device("cuda", 1), torch.device("cuda:5")], ids=repr)
@pytest.mark.parametrize("optional", [False, True])
def test_explicit_indices_like_torch(arg, optional):
    assert gs.device_index(arg, optional) == torch_device_index(arg, optional)


@pytest.mark.parametrize("arg", ["cuda", None, torch.device("cuda"), "cpu", torch.device("cpu")], ids=repr)
def test_refusals_like_torch(arg):
    with pytest.raises(ValueError) as theirs:
        torch_device_index(arg)
    with pytest.raises(ValueError) as ours:
        gs.device_index(arg)
    # the same sentence, less torch's own class name
    assert str(ours.value).replace(" a device", " a torch.device") == str(theirs.value)


@pytest.mark.parametrize("arg", ["cuda:x", "cuda:-1", "cuda:01", "cuda:"])
def test_bad_strings_like_torch(arg):
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.device(arg)
    with pytest.raises(RuntimeError, match="Invalid device string"):
        gs.device_index(arg)


def test_an_unindexed_device_is_this_threads_current_one(monkeypatch):
    monkeypatch.setattr(_device_module._tls, "device", 1)
    for arg in (None, "cuda", torch.device("cuda")):
        assert gs.device_index(arg, optional=True) == 1
    seen = []
    worker = threading.Thread(target=lambda: seen.append(gs.device_index("cuda", optional=True)))
    worker.start()
    worker.join()
    assert seen == [0]  # per thread, like the CUDA runtime's current device (a new thread starts at 0)
