"""Kernel tests run on "cpu" (Triton's interpreter over host memory) and "cuda" (the GPU).

The ``device`` fixture comes from the root conftest. The interpreter must be switched on
before triton is first imported, so this also sets TRITON_INTERPRET=1 when torch sees no
GPU. On a GPU machine (interpreter off) the "cpu" cases are deselected, not skipped: there
the kernels compile for the GPU and cannot read host memory, and the "cuda" cases test the
same kernels on the device; the interpreter tier is CI's.

Under the interpreter the README's quick test command (``./dev test``) runs a cover of each kernel
test's cases: a case is kept when it brings a parameter value (a dtype, a shape, an op) that the test's
earlier cases did not, so every value is run at least once. ``GENESIS_INTERPRETER_TIER=full`` (``./dev
test-interpreter``, which CI also runs) keeps every case and adds the sm_90 compile checks.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

HAS_CUDA = torch.cuda.is_available()
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
FULL_INTERPRETER_TIER = os.environ.get("GENESIS_INTERPRETER_TIER") == "full"

# Compiling every kernel for sm_90 without a GPU checks CI's interpreter tier against the real
# compiler (about three minutes of CPU: the full tier's, not the quick command's); on a GPU machine
# the cuda tests compile and run every kernel for real instead.
collect_ignore = [] if INTERPRET and FULL_INTERPRETER_TIER else ["test_kernels_compile.py"]


@pytest.fixture(autouse=True)
def _device_available(request: pytest.FixtureRequest) -> None:
    device = request.node.callspec.params.get("device") if hasattr(request.node, "callspec") else None
    if device == "cuda" and not HAS_CUDA:
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")


def _brings_new_value(item: pytest.Item, seen: dict[str, set[tuple[str, str]]]) -> bool:
    """Whether ``item`` has a parameter value its test function's earlier cases did not (recording it)."""
    function = f"{item.path}::{getattr(item, 'originalname', item.name)}"
    values = {(name, repr(value)) for name, value in item.callspec.params.items()}
    known = seen.setdefault(function, set())
    new = not values <= known
    known |= values
    return new


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the cases a tier does not run: on a GPU machine every interpreter ("cpu") case; under
    the interpreter (CI) the "cpu" variant of a case marked ``gpu_tier`` (too slow there), and, unless
    the full interpreter tier is asked for, the cases that bring no parameter value not already run."""
    kernel_dir = os.path.dirname(__file__)
    keep, drop = [], []
    seen: dict[str, set[tuple[str, str]]] = {}
    for item in items:
        params = getattr(item, "callspec", None)
        on_cpu = params is not None and params.params.get("device") == "cpu"
        ours = str(item.path).startswith(kernel_dir)
        if INTERPRET:
            unwanted = on_cpu and ours and item.get_closest_marker("gpu_tier") is not None
            if on_cpu and ours and not unwanted and not FULL_INTERPRETER_TIER:
                unwanted = not _brings_new_value(item, seen)
        else:
            unwanted = on_cpu and ours
        (drop if unwanted else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
