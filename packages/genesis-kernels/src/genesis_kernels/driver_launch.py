"""Our own launch path: a compiled Triton kernel launched by one ``cuLaunchKernel`` call, from C.

Triton's C launcher takes a tuple of a dozen Python objects, converts every kernel argument by its
type, asks the driver for the current context and builds a launch configuration, on every launch.
Each of our launchers already knows its kernel's argument types, so this path does that work once per
(kernel, specialisation): native_launcher.c makes one ``Launcher`` object per compiled kernel holding
its CUfunction, block size, shared memory and one type code per argument, and a launch is a call of
that object, ``launcher(grid, stream, args)``: no Python frame, one argument conversion per value, one
driver call.

The C file is compiled on first use by Triton's own module builder (the compiler Triton needs for its
launchers), into Triton's cache. It serves the kernels whose launch needs nothing else: pointers, 32-
and 64-bit integers and floats as arguments, one CTA per cluster, no cooperative grid, no
programmatic dependent launch, no profile scratch. Every other kernel, and every kernel where the
module cannot be built, takes Triton's C launcher (launch_abi.py). ``GENESIS_DRIVER_LAUNCH=0`` turns
this path off.
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

Grid = tuple[int, int, int]
LaunchFn = Callable[..., None]

# Triton signature type -> the C launcher's type code.
_CODES: dict[str, str] = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q", "fp32": "f", "fp64": "d", "constexpr": "c"}
MAX_ARGS = 256  # native_launcher.c's MAX_ARGS
ENABLED = os.environ.get("GENESIS_DRIVER_LAUNCH", "1") not in ("0", "")

_module: Any = None
_module_error: BaseException | None = None
_lock = threading.Lock()


def type_codes(types: list[str]) -> bytes | None:
    """One type code per kernel argument ("constexpr" included), or None when an argument has a type
    this path does not convert (fp16 / bf16 / i1 / i8 / i16 scalars, tensor descriptors)."""
    codes = []
    for t in types:
        if t.startswith("*"):
            codes.append("p")
        elif t in _CODES:
            codes.append(_CODES[t])
        else:
            return None
    return "".join(codes).encode()


def build_module() -> Any:
    """Compile native_launcher.c (cached by Triton's module builder) and load it; no driver is set."""
    from triton.runtime.build import compile_module_from_src

    source = Path(__file__).with_name("native_launcher.c").read_text()
    return compile_module_from_src(src=source, name="genesis_native_launcher")


def native_module() -> Any:
    """The compiled launcher module, its driver entry point set to libcuda's cuLaunchKernel, built once;
    None where it cannot be built (no C compiler, no libcuda)."""
    global _module, _module_error
    if _module is not None or _module_error is not None:
        return _module
    with _lock:
        if _module is None and _module_error is None:
            try:
                module = build_module()
                lib = ctypes.CDLL("libcuda.so.1")
                module.set_driver(ctypes.cast(lib.cuLaunchKernel, ctypes.c_void_p).value)
                _module = module
            except Exception as exc:  # Triton's launcher then serves every kernel
                _module_error = exc
                warnings.warn(
                    f"genesis_kernels: the native launch path could not be built ({exc}); "
                    "kernels launch through Triton's C launcher instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
    return _module


def driver_launch(
    function: int,
    types: list[str],
    num_warps: int,
    shared: int,
    scratch_for: Callable[[Grid, int], int | None],
    needs_scratch: bool,
    ensure_context: Callable[[], Any],
) -> LaunchFn | None:
    """A launch function for one compiled kernel, or None where this path does not serve it.

    ``function`` is the CUfunction handle, ``types`` the Triton type of each of the kernel's arguments
    in order ("constexpr" for a constexpr, whose slot the launch's ``args`` still hold),
    ``scratch_for(grid, stream)`` the global scratch address of kernels that ``needs_scratch``, and
    ``ensure_context()`` makes a context current where a thread has none (Triton's launcher asks the
    driver before every launch; here it is done only when the driver reports that none is current).
    """
    codes = type_codes(types)
    if codes is None or len(codes) > MAX_ARGS or not ENABLED:
        return None
    module = native_module()
    if module is None:
        return None

    def on_error(err: int) -> bool:
        ensure_context()
        return True

    launcher = module.Launcher(function, 32 * num_warps, shared, codes, on_error)
    if not needs_scratch:
        return launcher

    def launch(grid: Grid, stream: int, args: tuple) -> None:
        launcher(grid, stream, args, scratch_for(grid, stream))

    return launch


def eligible(runner: Any) -> bool:
    """Whether a compiled kernel's launch needs nothing beyond what ``cuLaunchKernel`` takes."""
    return (
        getattr(runner, "num_ctas", 1) == 1
        and not getattr(runner, "launch_cooperative_grid", False)
        and not getattr(runner, "launch_pdl", False)
        and not getattr(runner, "profile_scratch_size", 0)
        and not getattr(runner, "gsan_enabled", False)
    )


__all__ = ["build_module", "driver_launch", "eligible", "native_module", "type_codes"]
