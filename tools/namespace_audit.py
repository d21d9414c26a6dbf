"""Which of torch's names genesis has: torch's top level (``torch.__all__`` and its public attributes)
against ``genesis``, and the ``torch.Tensor`` methods against ``genesis.Tensor``.

Run from a checkout (torch installed):  python tools/namespace_audit.py [--missing-only]
Each missing name is put in the group that says why it is absent: the intentionally absent groups
are listed in packages/genesis-nn/README.md; what falls in no group is the work still planned.
"""

from __future__ import annotations

import argparse
import re
import sys

import torch

import genesis

# Groups of names genesis leaves out on purpose: regular expressions matched against the name (first group wins).
INTENTIONALLY_ABSENT: dict[str, list[str]] = {
    "sparse tensors": [
        "sparse",
        "coalesce",
        "crow_",
        "ccol_",
        "col_indices",
        "row_indices",
        "^indices",
        "^values",
        "to_dense",
        "smm",
        "spmm",
        "dsmm",
        "hsmm",
        "hspmm",
        "sspaddmm",
        "saddmm",
        "dense_dim",
    ],
    "quantization": [
        "quantiz",
        "^q_",
        "qint",
        "quint",
        "qscheme",
        "int_repr",
        "fbgemm",
        "dequantize",
        "per_channel",
        "per_tensor",
        "choose_qparams",
        "fake_quant",
        r"^bits\d",
    ],
    "complex numbers": [
        "complex",
        "conj",
        "^real$",
        "^imag$",
        "angle",
        "polar",
        "view_as_real",
        "cdouble",
        "cfloat",
        "chalf",
        "^is_neg$",
        "resolve_neg",
        "^sgn_?$",
        "^mH$",
        "adjoint",
    ],
    "named tensors": [
        "^names$",
        "rename",
        "refine_names",
        "align_to",
        "align_as",
        "^name$",
    ],
    "jit / fx / compile / export": [
        "jit",
        "script",
        "Script",
        "^fx$",
        "compile",
        "export",
        "^trace$(?#torch.trace is jit tracing at the top level)",
        "Trace",
        "^ir",
        "_ir",
        "Graph",
        "Node",
        "^Block$",
        "^Value$",
        "^Use$",
        "Type$",
        "Schema",
        "parse_",
        "CompilationUnit",
        "Code$",
        "FileCheck",
        "AliasDb",
        "Future",
        "fork",
        "wait",
        "^vmap$",
        "^func$",
        "^cond$",
        "while_loop",
        "^library$",
        "^ops$",
        "classes",
        "^Tag$",
        "^sym_",
        "^Sym",
        "Dispatch",
        "Argument",
        "Capsule",
        "ModuleType",
        "Logger",
        "StaticModule",
        "^Aggregation",
        "^AVG$",
        "^SUM$",
        "ErrorReport",
        "ExecutionPlan",
        "CallStack",
        "Gradient$",
        "DeepCopy",
        "BenchmarkConfig",
        "BenchmarkExecutionStats",
        "ThroughputBenchmark",
        "merge_type",
        "unify_type",
        "import_ir",
        "PRIVATE_OPS",
        "OperatorInfo",
        "IODescriptor",
        "ArgumentSpec",
        "ConcreteModule",
        "PyTorchFile",
        "StorageContext",
        "ScriptModuleSerializer",
        "^overrides$",
        "DisableTorchFunction",
        "ExcludeDispatchKeyGuard",
        "BufferDict",
        "ParameterDict",
        "ModuleDict",
        "LiteScriptModule",
        "(?<!index)_copy$",
        "slice_inverse",
        "^H$",
        "^mT$",
        "JITException",
        "TracingState",
        "^index$(?#Tensor.index binds functorch's first-class dims)",
    ],
    "legacy storages and typed tensors": [
        "Storage",
        "storage",
        "Tensor$",
        "^set_$",
        "resize",
        "^new$",
        "set_default_tensor_type",
        "^data_ptr$",
        "untyped",
        "^is_set_to",
        "^from_file$",
    ],
    "other backends and devices": [
        "cudnn",
        "miopen",
        "mkldnn",
        "^(is_)?(mps|xpu|ipu|xla|mtia|maia|vulkan|hpu|meta)$",
        "autocast_(ipu|xla)|_(ipu|xla)_",
        "accelerator",
        "Accelerator",
        "FatalError",
        "^cpu$",
        "nested",
        "jagged",
        "to_padded",
        "has_lapack",
        "has_mkl",
        "has_openmp",
        "has_spectral",
        "backends",
        "compiled_with",
        "^platform$",
        "^version$",
        "torch_version",
        "^hub$",
        "^package$",
        "^profiler",
        "^testing$",
        "^utils$",
        "^monitor$",
        "^futures$",
        "multiprocessing",
        "^distributed$",
        "^signal$",
        "^fft$",
        "^masked$",
        "^quasirandom$",
        "^return_types$",
        "^types$",
        "^cpp$",
        "^ao$",
        "^functional$",
        "^compiler$",
        "^inspect$",
        "^nn$",
        "^optim$",
        "^amp$",
        "^autograd$",
        "^cuda$",
        "^linalg$",
        "^random$",
        "^serialization$",
        "^storage$",
    ],
    "Python modules torch happens to import": [
        "^(os|sys|math|glob|builtins|ctypes|importlib|textwrap|threading|warnings|functools|typing|TYPE_CHECKING|USE_GLOBAL_DEPS|USE_RTLD_GLOBAL_WITH_LIBTORCH|classproperty|thread_safe_generator|torch|get_file_path)$",
    ],
    "dtypes genesis does not store": [
        r"^(u?int[1-7]|uint16|uint32|uint64|float8\w*|float4\w*|bits?\w*|qint\w*)$",
    ],
    # torch's top-level nn ops are in genesis (_torch_nn_ops / _torch_nn_ops_spatial / _torch_nn_ops_more);
    # what is left are the kernels torch's own nn code calls, with outputs that are backward buffers.
    "torch's internal kernels (native_* forms returning saved statistics, SyncBatchNorm's cuda-only batch_norm_* "
    "helpers, embedding_bag's four-tensor form: user code calls nn.functional)": [
        r"^(native_\w+|batch_norm_(stats|elemt|update_stats|gather_stats\w*|backward_\w+)|embedding_bag)$",
    ],
    "in-place aliases of rarely used ops": [
        "^(absolute|arccos|arccosh|arcsin|arcsinh|arctan|arctanh|arctan2|negative|true_divide|subtract|multiply|divide|not_equal|greater|greater_equal|less|less_equal|fix|swapaxes|swapdims|unsqueeze|squeeze|t|transpose|as_strided)_$",
    ],
    # The special functions, statistics and windows are in genesis (_torch_special / _torch_stats /
    # _torch_windows, genesis.special); what is left needs machinery genesis does not have.
    "signal processing and rare math (stft / istft need an FFT; histogramdd, gradient, hash_tensor not planned; "
    "torch.signal.windows' functions are at genesis' top level)": [
        "stft",
        "istft",
        "histogramdd",
        "^gradient$",
        "hash_tensor",
        "^windows$(?#torch.signal.windows: genesis has the window functions at its top level)",
    ],
    "dense linear algebra (in genesis.linalg when added)": [
        "cholesky",
        "^lu",
        "lstsq",
        "^qr$",
        "^svd",
        "symeig",
        "^eig$",
        "det$",
        "logdet",
        "slogdet",
        "inverse",
        "pinverse",
        "solve",
        "matrix_exp",
        "matrix_power",
        "matrix_rank",
        "geqrf",
        "orgqr",
        "ormqr",
        "lobpcg",
        "pca_lowrank",
        "svd_lowrank",
        "triangular_solve",
        "nuclear_norm",
        "frobenius_norm",
        "^kron$",
        "chain_matmul",
        "^cov$",
        "corrcoef",
        "^cdist$",
        "^pdist$",
        "^dist$",
    ],
}

_GROUPS = {group: re.compile("|".join(patterns)) for group, patterns in INTENTIONALLY_ABSENT.items()}


def torch_top_level() -> list[str]:
    """torch.__all__ plus its public attributes (einsum, outer, ... are not all in __all__)."""
    names = set(getattr(torch, "__all__", [])) | {n for n in dir(torch) if not n.startswith("_")}
    return sorted(names)


def torch_tensor_methods() -> list[str]:
    return sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))


def group_of(name: str) -> str | None:
    """The intentionally-absent group a name falls in, or None when it is planned."""
    for group, pattern in _GROUPS.items():
        if pattern.search(name):
            return group
    return None


def audit(names: list[str], namespace: object) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(present, {group: absent names}, planned): the names ``namespace`` has, and those it lacks."""
    present, planned = [], []
    absent: dict[str, list[str]] = {}
    for name in names:
        if hasattr(namespace, name):
            present.append(name)
        elif (group := group_of(name)) is not None:
            absent.setdefault(group, []).append(name)
        else:
            planned.append(name)
    return present, absent, planned


def _report(title: str, names: list[str], namespace: object, missing_only: bool) -> None:
    present, absent, planned = audit(names, namespace)
    print(f"== {title}: {len(present)} of {len(names)} torch names exist in genesis")
    if not missing_only:
        print("present:", " ".join(present))
    for group, members in absent.items():
        print(f"absent on purpose - {group} ({len(members)}):", " ".join(members))
    print(f"missing, planned ({len(planned)}):", " ".join(planned))
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing-only", action="store_true", help="list only the names genesis lacks")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__} against genesis {genesis.__version__}\n")
    _report("top level (torch.X vs genesis.X)", torch_top_level(), genesis, args.missing_only)
    methods = torch_tensor_methods()
    _report("Tensor methods (torch.Tensor.X vs genesis.Tensor.X)", methods, genesis.Tensor, args.missing_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
