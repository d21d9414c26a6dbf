"""The direct C-launcher path packs arguments exactly as each Triton release's own launcher does.

The expected argument lists below are read from each release's
``triton/backends/nvidia/driver.py`` (``CudaLauncher.__call__``); the last test checks
the installed release against its real ``CudaLauncher.__call__``, on CPU, by recording
what it hands to the C function.
"""

from __future__ import annotations

import warnings

import pytest

from genesis_kernels import launch_abi

FUNCTION, META, STREAM = object(), object(), 0x1234
COOP, PDL, ANNOTATIONS, SIGNATURE = object(), object(), object(), object()
KERNEL_ARGS = (0xA000, 0xB000, 17, 2.5, None)  # pointers, a size, a scalar, a constexpr slot


class Recorder:
    """A stand-in for Triton's CudaLauncher: records what reaches the C function or __call__."""

    def __init__(self, **attrs: object) -> None:
        self.calls: list[tuple] = []
        self.public_calls: list[tuple] = []
        self.launch_cooperative_grid, self.launch_pdl = COOP, PDL
        self.global_scratch_size = self.profile_scratch_size = 0
        self.arg_annotations, self.kernel_signature = ANNOTATIONS, SIGNATURE
        self.__dict__.update(attrs)

    def launch(self, *args: object) -> None:
        self.calls.append(args)

    def __call__(self, *args: object) -> None:
        self.public_calls.append(args)


EXPECTED = {
    # 3.6: grid, stream, function, cooperative, pdl, global scratch, profile scratch,
    #      packed metadata, launch metadata, enter hook, exit hook, *kernel args
    "3.6": (2, 3, 1, STREAM, FUNCTION, COOP, PDL, None, None, META, None, None, None, *KERNEL_ARGS),
    # 3.7+: grid, stream, function, cooperative, pdl, packed metadata, launch metadata,
    #       enter hook, exit hook, global scratch, profile scratch, annotations, signature, (kernel args,)
    "3.7": (
        2,
        3,
        1,
        STREAM,
        FUNCTION,
        COOP,
        PDL,
        META,
        None,
        None,
        None,
        None,
        None,
        ANNOTATIONS,
        SIGNATURE,
        KERNEL_ARGS,
    ),
}


@pytest.mark.parametrize(
    ("version", "convention"),
    [
        ("3.6.0", "3.6"),
        ("3.7.0", "3.7"),
        ("3.7.1", "3.7"),
        ("3.8.0", "3.7"),
        ("3.9.0", "3.7"),
        ("3.9.0+git1a2b3c", "3.7"),
    ],
)
def test_known_versions_pack_like_their_launcher(version: str, convention: str) -> None:
    assert launch_abi.convention_for(version) == convention
    runner = Recorder()
    launch = launch_abi.make_launch(runner, FUNCTION, META, version)
    launch((2, 3, 1), STREAM, KERNEL_ARGS)
    assert runner.calls == [EXPECTED[convention]]
    assert runner.public_calls == []


@pytest.mark.parametrize("version", ["3.10.0", "4.0.0", "3.5.1", "nonsense"])
def test_unknown_version_takes_the_public_path_and_warns_once(version: str) -> None:
    launch_abi._warned.discard(version)
    runner = Recorder()
    with pytest.warns(RuntimeWarning, match="public launch path"):
        launch = launch_abi.make_launch(runner, FUNCTION, META, version)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch_abi.make_launch(runner, FUNCTION, META, version)  # a second kernel: no second warning
    launch((2, 3, 1), STREAM, KERNEL_ARGS)
    assert runner.calls == []
    assert runner.public_calls == [(2, 3, 1, STREAM, FUNCTION, META, None, None, None, *KERNEL_ARGS)]


def test_a_known_version_missing_the_conventions_attributes_is_not_guessed_at() -> None:
    launch_abi._warned.discard("3.8.0")
    runner = Recorder()
    del runner.kernel_signature
    with pytest.warns(RuntimeWarning, match="lacks"):
        launch = launch_abi.make_launch(runner, FUNCTION, META, "3.8.0")
    launch((1, 1, 1), STREAM, KERNEL_ARGS)
    assert runner.calls == [] and len(runner.public_calls) == 1


@pytest.mark.parametrize("attrs", [{"global_scratch_size": 128}, {"profile_scratch_size": 64}, {"gsan_enabled": True}])
def test_kernels_needing_tritons_own_work_take_the_public_path(attrs: dict) -> None:
    runner = Recorder(**attrs)
    launch_abi.make_launch(runner, FUNCTION, META, "3.7.1")((4, 1, 1), STREAM, KERNEL_ARGS)
    assert runner.calls == [] and len(runner.public_calls) == 1


@pytest.mark.parametrize("version", ["3.6.0", "3.7.1", "4.0.0"])
def test_an_empty_grid_launches_nothing(version: str) -> None:
    runner = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch = launch_abi.make_launch(runner, FUNCTION, META, version)
    launch((0, 1, 1), STREAM, KERNEL_ARGS)
    assert runner.calls == [] and runner.public_calls == []


def test_installed_triton_matches_its_own_launcher() -> None:
    """Triton's real CudaLauncher.__call__ and our fast path hand the C function the same arguments."""
    import triton
    from triton.backends.nvidia.driver import CudaLauncher

    known = launch_abi.convention_for(triton.__version__)
    assert known is not None, f"installed Triton {triton.__version__} is outside the supported table"
    theirs = Recorder()
    real = object.__new__(CudaLauncher)  # skip __init__: it compiles or loads the C module (needs a GPU)
    real.__dict__.update({k: v for k, v in vars(theirs).items() if k not in ("calls", "public_calls")})
    real.num_ctas, real.gsan_enabled = 1, False
    real.global_scratch_align = real.profile_scratch_align = 1
    real.launch = theirs.launch
    real(2, 3, 1, STREAM, FUNCTION, META, None, None, None, *KERNEL_ARGS)

    ours = Recorder()
    launch_abi.make_launch(ours, FUNCTION, META, triton.__version__)((2, 3, 1), STREAM, KERNEL_ARGS)
    assert len(theirs.calls) == 1
    assert ours.calls == theirs.calls
