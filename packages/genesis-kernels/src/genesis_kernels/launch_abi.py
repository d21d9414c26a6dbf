"""Triton's C launcher, called directly: one calling convention per Triton release.

Triton's own launch path (``CompiledKernel.run``, i.e. ``CudaLauncher.__call__``) is
public enough to rely on, but it costs a few microseconds per launch. We call the C
function underneath it (``runner.launch``) instead, and that function is private:
its positional arguments changed between releases.

* ``"3.6"`` (triton 3.6): a launcher generated and compiled per signature, called as
  ``launch(gx, gy, gz, stream, function, cooperative, pdl, global_scratch,
  profile_scratch, packed_metadata, launch_metadata, enter_hook, exit_hook, *args)``.
* ``"3.7"`` (triton 3.7, 3.8, 3.9): one shared launcher that reads a signature
  object, called as ``launch(gx, gy, gz, stream, function, cooperative, pdl,
  packed_metadata, launch_metadata, enter_hook, exit_hook, global_scratch,
  profile_scratch, arg_annotations, kernel_signature, args)`` with the kernel's
  arguments as one tuple.

A release not in :data:`CONVENTIONS` is never guessed at: its kernels go through
Triton's public path, with a one-time warning. Kernels that need Triton's global scratch
memory (device-side TMA descriptors) get it from the caller's scratch function;
profiling scratch, or a launcher missing the attributes a convention reads, takes
the same public path.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

Grid = tuple[int, int, int]
LaunchFn = Callable[[Grid, int, tuple], None]

# (major, minor) -> convention name. Each entry is tested in tests/kernels/test_kernels_launch_abi.py
# against the argument list that release's CudaLauncher.__call__ passes to its C launcher.
CONVENTIONS: dict[tuple[int, int], str] = {
    (3, 6): "3.6",
    (3, 7): "3.7",
    (3, 8): "3.7",
    (3, 9): "3.7",
}

_warned: set[str] = set()


def parse_version(version: str) -> tuple[int, int]:
    """``"3.7.1"`` / ``"3.8.0+git1234"`` -> ``(3, 7)`` / ``(3, 8)``."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def convention_for(version: str) -> str | None:
    """The calling convention of Triton ``version``'s C launcher, or None if unknown."""
    return CONVENTIONS.get(parse_version(version))


def _warn_unknown(version: str, why: str) -> None:
    if version not in _warned:
        _warned.add(version)
        warnings.warn(
            f"genesis_kernels: {why} (known: {', '.join('.'.join(map(str, v)) for v in CONVENTIONS)}); "
            "kernels launch through Triton's public launch path instead, which is slower per launch but correct",
            RuntimeWarning,
            stacklevel=3,
        )


def public_launch(runner: Any, function: Any, meta: Any) -> LaunchFn:
    """Launch through Triton's own ``CudaLauncher.__call__`` (allocates scratch, runs hooks)."""

    def launch(grid: Grid, stream: int, args: tuple) -> None:
        if grid[0] * grid[1] * grid[2]:
            runner(grid[0], grid[1], grid[2], stream, function, meta, None, None, None, *args)

    return launch


ScratchFn = Callable[[int, int], int]  # (nbytes, stream) -> device address, at least 256-byte aligned


def scratch_source(runner: Any, scratch: ScratchFn | None) -> Callable[[Grid, int], int | None]:
    """Per launch, the global scratch a kernel needs (device-side TMA descriptors live there), or None.

    Triton sizes it per program: ``global_scratch_size`` bytes for each CTA of the grid.
    """
    per_program = getattr(runner, "global_scratch_size", 0) * getattr(runner, "num_ctas", 1)
    if not per_program or scratch is None:
        return lambda grid, stream: None
    return lambda grid, stream: scratch(grid[0] * grid[1] * grid[2] * per_program, stream)


def _fast_launch_36(runner: Any, function: Any, meta: Any, scratch: ScratchFn | None = None) -> LaunchFn:
    raw = runner.launch
    coop, pdl = runner.launch_cooperative_grid, runner.launch_pdl
    scratch_for = scratch_source(runner, scratch)

    def launch(grid: Grid, stream: int, args: tuple) -> None:
        if grid[0] * grid[1] * grid[2]:
            g = scratch_for(grid, stream)
            raw(grid[0], grid[1], grid[2], stream, function, coop, pdl, g, None, meta, None, None, None, *args)

    return launch


def _fast_launch_37(runner: Any, function: Any, meta: Any, scratch: ScratchFn | None = None) -> LaunchFn:
    raw = runner.launch
    coop, pdl = runner.launch_cooperative_grid, runner.launch_pdl
    annotations, signature = runner.arg_annotations, runner.kernel_signature
    scratch_for = scratch_source(runner, scratch)

    def launch(grid: Grid, stream: int, args: tuple) -> None:
        if grid[0] * grid[1] * grid[2]:
            raw(
                grid[0],
                grid[1],
                grid[2],
                stream,
                function,
                coop,
                pdl,
                meta,
                None,
                None,
                None,
                scratch_for(grid, stream),
                None,
                annotations,
                signature,
                args,
            )

    return launch


_FAST: dict[str, tuple[Callable[..., LaunchFn], tuple[str, ...]]] = {
    # convention -> (builder, the runner attributes it reads)
    "3.6": (_fast_launch_36, ("launch", "launch_cooperative_grid", "launch_pdl")),
    "3.7": (
        _fast_launch_37,
        ("launch", "launch_cooperative_grid", "launch_pdl", "arg_annotations", "kernel_signature"),
    ),
}


def make_launch(runner: Any, function: Any, meta: Any, version: str, scratch: ScratchFn | None = None) -> LaunchFn:
    """The cheapest correct launch function for one compiled kernel.

    ``runner`` is the compiled kernel's ``CudaLauncher`` (``CompiledKernel.run``), ``function``
    its CUfunction handle and ``meta`` its packed metadata; ``version`` is ``triton.__version__``.
    ``scratch`` serves the global scratch memory of kernels that need it (device-side tensor
    descriptors); without it such kernels take Triton's public path, which asks Triton's allocator.
    """
    needs_global = getattr(runner, "global_scratch_size", 0) > 0
    if (needs_global and scratch is None) or getattr(runner, "profile_scratch_size", 0):
        return public_launch(runner, function, meta)  # Triton allocates the scratch per launch
    if getattr(runner, "gsan_enabled", False):
        return public_launch(runner, function, meta)  # the sanitizer appends arguments of its own
    convention = convention_for(version)
    if convention is None:
        _warn_unknown(version, f"Triton {version} is not a version whose C launcher we know")
        return public_launch(runner, function, meta)
    builder, needs = _FAST[convention]
    if not all(hasattr(runner, name) for name in needs):
        _warn_unknown(version, f"Triton {version}'s launcher lacks what its {convention} convention reads")
        return public_launch(runner, function, meta)
    return builder(runner, function, meta, scratch)
