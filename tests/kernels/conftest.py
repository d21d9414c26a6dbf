"""Kernel tests run on "cpu" (Triton's interpreter over host memory) and "cuda" (the GPU).

The ``device`` fixture comes from the root conftest. The interpreter must be switched on
before triton is first imported, so this also sets TRITON_INTERPRET=1 when torch sees no
GPU. On a GPU machine (interpreter off) the "cpu" cases are skipped: the kernels compile
for the GPU and cannot read host memory.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@pytest.fixture(autouse=True)
def _device_available(request: pytest.FixtureRequest) -> None:
    device = request.node.callspec.params.get("device") if hasattr(request.node, "callspec") else None
    if device == "cuda" and not HAS_CUDA:
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    if device == "cpu" and not INTERPRET:
        pytest.skip("the cpu tier needs TRITON_INTERPRET=1 (a GPU is present and the interpreter is off)")
