"""Where a small op spends its host time, layer by layer, beside torch's time for the same op.

Each case is timed at every floor it passes through, top to bottom:

    tensor     the Tensor method or operator a user calls (``a + b``)
    function   the autograd Function (``Add.apply(a, b)``): autocast, grad mode, graph node, wrapping
    ndarray    the NDArray method (``a.data + b.data``): device check, backend dispatch, result wrapping
    registry   finding the backend's function: the lookup of the op's resolved entry for this signature
               (registry.py), or of the general implementation where the backend resolves none
    backend    that function itself, on native arrays (a torch tensor on cpu, a View on cuda)

so that the difference between two neighbouring rows is what that floor adds. The torch row is the
same op in torch on the same device. ``calls`` is the number of Python-level calls (functions and
builtins, as cProfile counts them) one op makes at that floor.

    python tools/profile_small_op.py                  # every case, on cuda when available, else cpu
    python tools/profile_small_op.py --device cpu --cases add add_grad --profile 20

Host time only: on cuda the loop enqueues kernels and synchronises once at the end of each timing.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable

import torch

import genesis
import genesis.nn as gnn
from genesis_autograd import functions as F
from genesis_ndarray import registry

Layers = dict[str, Callable[[], object]]


def _sync(device: str) -> None:
    if device == "cuda":
        genesis.cuda.synchronize()
        torch.cuda.synchronize()


def _pair(device: str, shape: tuple[int, ...], requires_grad: bool = False):
    a = genesis.randn(*shape, device=device).requires_grad_(requires_grad)
    b = genesis.randn(*shape, device=device).requires_grad_(requires_grad)
    ta = torch.randn(*shape, device=device).requires_grad_(requires_grad)
    tb = torch.randn(*shape, device=device).requires_grad_(requires_grad)
    return a, b, ta, tb


def _dispatch(
    device_type: str, family: str, op: str, *signature: object, tail: tuple = (), named: bool = True
) -> tuple[Callable[[], object], Callable]:
    """(the registry layer's work per call, the backend function it finds): the resolved entry's lookup
    and function where the backend resolved one for this signature (registry.py), else the general one
    (called with the op's name first where ``named``, and ``tail`` after the entry's arguments)."""
    ops = registry.table(device_type)
    key = (family, op, *signature)
    resolved = getattr(ops, "resolved", None)  # None: a registry from before resolved entries
    entry = None if resolved is None else resolved[key]
    if entry is None:
        general = registry.lookup(family, device_type)
        head = (op,) if named else ()
        return (lambda: registry.lookup(family, device_type)), (lambda *args: general(*head, *args, *tail))
    fn = entry[0] if isinstance(entry, tuple) else entry
    return (lambda: resolved[key]), fn


def case_add(device: str, requires_grad: bool = False) -> tuple[Layers, Callable[[], object]]:
    a, b, ta, tb = _pair(device, (1024,), requires_grad)
    na, nb = a.data, b.data
    find, impl = _dispatch(a.device.type, "binary", "add", a.dtype, b.dtype)
    xa, xb = na.native, nb.native
    layers = {
        "tensor": lambda: a + b,
        "function": lambda: F.Add.apply(a, b),
        "ndarray": lambda: na + nb,
        "registry": find,
        "backend": lambda: impl(xa, xb),
    }
    return layers, lambda: ta + tb


def case_add_grad(device: str) -> tuple[Layers, Callable[[], object]]:
    return case_add(device, requires_grad=True)


def case_mul_(device: str) -> tuple[Layers, Callable[[], object]]:
    a, _, ta, _ = _pair(device, (1024,))
    na = a.data
    find, impl = _dispatch(a.device.type, "binary_", "mul", a.dtype, int)
    xa = na.native
    # Multiplying by 1 keeps the values finite however often it runs; the work is the same.
    layers = {
        "tensor": lambda: a.mul_(1),
        "ndarray": lambda: na.mul_(1),
        "registry": find,
        "backend": lambda: impl(xa, 1),
    }
    return layers, lambda: ta.mul_(1)


def case_sum(device: str) -> tuple[Layers, Callable[[], object]]:
    a, _, ta, _ = _pair(device, (1024,))
    na = a.data
    find, impl = _dispatch(a.device.type, "reduce", "sum", a.dtype, tail=(None,))
    xa = na.native
    layers = {
        "tensor": lambda: a.sum(),
        "function": lambda: F.Sum.apply(a, None, False, None),
        "ndarray": lambda: na.sum(),
        "registry": find,
        "backend": lambda: impl(xa, None, False),
    }
    return layers, lambda: ta.sum()


def case_matmul(device: str) -> tuple[Layers, Callable[[], object]]:
    x, _, tx, _ = _pair(device, (16, 32))
    w, _, tw, _ = _pair(device, (32, 16))
    nx, nw = x.data, w.data
    find, impl = _dispatch(x.device.type, "matmul", "matmul", x.dtype, w.dtype, named=False)
    xx, xw = nx.native, nw.native
    layers = {
        "tensor": lambda: x @ w,
        "function": lambda: F.MatMul.apply(x, w),
        "ndarray": lambda: nx.matmul(nw),
        "registry": find,
        "backend": lambda: impl(xx, xw),
    }
    return layers, lambda: tx @ tw


def case_relu(device: str) -> tuple[Layers, Callable[[], object]]:
    a, _, ta, _ = _pair(device, (1024,))
    na = a.data
    find, impl = _dispatch(a.device.type, "unary", "relu", a.dtype)
    xa = na.native
    layers = {
        "tensor": lambda: a.relu(),
        "function": lambda: F.ReLU.apply(a),
        "ndarray": lambda: na.relu(),
        "registry": find,
        "backend": lambda: impl(xa),
    }
    return layers, lambda: ta.relu()


def case_mlp(device: str, width: int) -> tuple[Layers, Callable[[], object]]:
    """4 x (Linear(width) + ReLU), batch 64: zero_grad, forward, sum, backward (tools/profile_mlp.py's step)."""
    model = gnn.Sequential(*[m for _ in range(4) for m in (gnn.Linear(width, width), gnn.ReLU())]).to(device)
    tmodel = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]).to(
        device
    )
    x = genesis.randn(64, width, device=device)
    tx = torch.randn(64, width, device=device)

    def step() -> None:
        model.zero_grad()
        model(x).sum().backward()

    def tstep() -> None:
        tmodel.zero_grad()
        tmodel(tx).sum().backward()

    return {"tensor": step}, tstep


CASES = ("add", "add_grad", "mul_", "sum", "matmul", "relu", "mlp")


def _time(fns: list[Callable[[], object]], device: str, number: int, repeat: int) -> list[float]:
    """Best of ``repeat`` runs of ``number`` calls of each of ``fns``, in microseconds per call.

    The runs of the functions alternate (one run of each per round), so that a load that comes and goes
    on a shared machine weighs on all of them alike. On cpu the clock is this process's CPU time; on
    cuda it is wall time (the wait for the GPU at the end is part of a run).
    """
    clock = time.process_time if device == "cpu" else time.perf_counter
    for fn in fns:
        for _ in range(max(number // 10, 3)):
            fn()
    _sync(device)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = clock()
            for _ in range(number):
                fn()
            _sync(device)
            best[i] = min(best[i], clock() - start)
    return [b / number * 1e6 for b in best]


def _calls(fn: Callable[[], object], number: int = 200) -> float:
    """Python-level calls per op, as cProfile counts them (the timing loop's own call excluded)."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(number):
        fn()
    profile.disable()
    total = sum(stat[1] for stat in pstats.Stats(profile).stats.values())  # type: ignore[attr-defined]
    return total / number - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_device = "cuda" if genesis.cuda.is_available() and torch.cuda.is_available() else "cpu"
    parser.add_argument("--device", default=default_device, choices=("cpu", "cuda"))
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--number", type=int, default=2000, help="calls per timing run")
    parser.add_argument("--repeat", type=int, default=15, help="timing runs; the best is reported")
    parser.add_argument(
        "--mlp-width", type=int, default=None, help="the MLP's width (default 1024 on cuda, 128 on cpu)"
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also print cProfile's top N per case")
    args = parser.parse_args()
    device = args.device
    width = args.mlp_width or (1024 if device == "cuda" else 128)
    if device == "cpu":  # both frameworks compute through torch here: one thread each, less noise
        torch.set_num_threads(1)

    print(f"device {device}; us per op, best of {args.repeat} x {args.number} calls; MLP width {width}, batch 64")
    print(f"{'case':10s} {'layer':9s} {'us':>9s} {'calls':>7s}   {'x torch':>8s}")
    for name in args.cases:
        if name == "mlp":
            layers, reference = case_mlp(device, width)
            number = max(args.number // 100, 5)
        else:
            layers, reference = globals()[f"case_{name}"](device)
            number = args.number
        ref, *times = _time([reference, *layers.values()], device, number, args.repeat)
        for (layer, fn), us in zip(layers.items(), times):
            calls = _calls(fn, max(number // 10, 5))
            print(f"{name:10s} {layer:9s} {us:9.2f} {calls:7.0f}   {us / ref:7.2f}x")
        print(f"{name:10s} {'torch':9s} {ref:9.2f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(number):
                layers["tensor"]()
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
