"""Compile representative kernel specialisations for sm_90 on a machine without a GPU.

The interpreter does not run Triton's compiler, so a kernel can pass every CPU test
and still fail to compile for the GPU. This script routes ``Kernel._compiled`` to a
compile-only path (target sm_90, no driver), drives the public API with host buffers
(nothing is launched) and prints one line per compiled specialisation. Run by
``test_compile.py`` in a subprocess, because TRITON_INTERPRET must be off at import.
"""

from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "0"

import numpy as np
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile

import genesis_kernels as gk
from genesis_kernels import runtime

compiled: list[str] = []


def _compile_only(self, types, constexprs, aligned, num_warps, num_stages):  # type: ignore[no-untyped-def]
    signature = {n: ("constexpr" if n in self.constexpr_names else types[n]) for n in self.arg_names}
    consts = {(self.arg_names.index(n),): v for n, v in constexprs.items()}
    attrs = {(self.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    ck = compile(
        ASTSource(self.fn, signature, consts, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps, "num_stages": num_stages},
    )
    ptx = ck.asm["ptx"]
    # Hopper's shared memory per block (227 KB): more fails at load time (OutOfResources), on the GPU only.
    if ck.metadata.shared > 232448:
        raise RuntimeError(
            f"{self.fn.__name__} needs {ck.metadata.shared} bytes of shared memory, over sm_90's 232448 "
            f"(num_warps={num_warps}, num_stages={num_stages}, {constexprs})"
        )
    pointers = ",".join(f"{n}:{t[1:]}" for n, t in types.items() if t.startswith("*"))
    consts = {k: v for k, v in constexprs.items() if k.isupper()}
    compiled.append(
        f"{self.fn.__name__} vector-loads={ptx.count('ld.global.v')} barriers={ptx.count('bar.sync')} "
        f"regs-spill={'.local' in ptx} pointers={pointers} consts={consts}"
    )
    return lambda grid, stream, args: None


runtime.Kernel._compiled = _compile_only  # type: ignore[method-assign]
runtime._sm_count = 132
runtime.scratch = lambda nbytes, stream: 1 << 20  # type: ignore[assignment]  # nothing runs
sys.modules["genesis_kernels.reduce"].scratch = runtime.scratch  # type: ignore[attr-defined]
sys.modules["genesis_kernels.normalization"].scratch = runtime.scratch  # type: ignore[attr-defined]
sys.modules["genesis_kernels.add_norm"].scratch = runtime.scratch  # type: ignore[attr-defined]
# The indexed kernel's error block and read-backs (bounds flags, nonzero counts): nothing ran, nothing to read.
sys.modules["genesis_kernels.indexed"]._error_block = lambda stream: (1 << 20, 0)  # type: ignore[attr-defined]
sys.modules["genesis_kernels.indexed"]._raise_if_bad = lambda host, dims, stream: None  # type: ignore[attr-defined]
runtime.read_int32 = lambda ptr, count, stream: [0] * count  # type: ignore[assignment]


class Host:
    """Host memory that stands in for device memory: nothing is launched."""

    def __init__(self, shape, dtype="float32", strides=None):  # type: ignore[no-untyped-def]
        self.arr = np.zeros(max(1, int(np.prod(shape))) * 8, dtype=np.uint8)
        self.buf = gk.Buffer(self.arr.ctypes.data, shape, strides, dtype)


def b(shape, dtype="float32", strides=None):  # type: ignore[no-untyped-def]
    h = Host(shape, dtype, strides)
    _keep.append(h)
    return h.buf


_keep: list[Host] = []


def main(groups: list[str]) -> None:
    import check_groups  # the per-family drivers, beside this file

    for g in groups:
        getattr(check_groups, g)(b)
    for line in compiled:
        print(line)
    print(f"compiled {len(compiled)} specialisations")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main(sys.argv[1:])
