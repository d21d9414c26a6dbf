"""GPT training throughput: genesis against torch eager, the same model code, one GPU, one process.

The model is examples/train_gpt.py's GPT, loaded twice: as written (genesis) and with its three
genesis imports replaced by torch's. Both train on the same random token batches with bf16
autocast, AdamW and gradient clipping, as the example does. Steps alternate between the two
frameworks; each step is timed from a synchronised start to a synchronised end, and the medians
after warm-up give tokens per second. Peak memory is each allocator's own peak.
    python3 benchmarks/bench_gpt.py                 # GPT-2 small: 12 x 768, vocabulary 50,304, 1024 x 8
    python3 benchmarks/bench_gpt.py --quick         # a smaller model, for a smoke run
    python3 benchmarks/bench_gpt.py --example       # the example's default on cuda: 6 x 384, 256 x 64, 65 chars
    python3 benchmarks/bench_gpt.py --graph         # also genesis with the whole step captured as a CUDA graph
    python3 benchmarks/bench_gpt.py --compile       # also genesis.compile and torch.compile, default and
                                                    # reduce-overhead modes
    python3 benchmarks/bench_gpt.py --variants torch-compile genesis-compile   # only these (clean peaks)

Peak memory is the largest allocated during a variant's own timed steps, after warm-up (its allocator's peak,
reset before each step): the steady state of training, not the first calls, where a compiled variant records
or compiles (genesis.compile's capture call runs eagerly, with eager's memory). Genesis variants share one
allocator, so with several of them each peak includes the others' resident weights and optimizer state: run
one genesis variant at a time (--variants) for its own figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_gpt.py"
TO_TORCH = {
    "import genesis\n": "import torch as genesis\n",
    "import genesis.nn as nn\n": "import torch.nn as nn\n",
    "import genesis.nn.functional as F\n": "import torch.nn.functional as F\n",
}


def load(name: str, swap: dict[str, str] | None) -> types.ModuleType:
    source = EXAMPLE.read_text()
    for old, new in (swap or {}).items():
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = str(EXAMPLE)
    sys.modules[name] = module
    exec(compile(source, str(EXAMPLE), "exec"), module.__dict__)
    return module


class Trainer:
    def __init__(self, script: types.ModuleType, config: dict, batch: int) -> None:
        self.lib, self.script = script.genesis, script
        self.model = script.GPT(script.GPTConfig(**config)).to("cuda")
        self.optimizer = script.configure_optimizer(self.model, lr=6e-4, weight_decay=0.1)
        self.batch, self.block = batch, config["block_size"]

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        lib = self.lib
        xs, ys = lib.tensor(x, device="cuda"), lib.tensor(y, device="cuda")
        with lib.autocast("cuda", dtype=lib.bfloat16):
            _, loss = self.model(xs, ys)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.script.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()

    def sync(self) -> None:
        self.lib.cuda.synchronize()


class CompiledTrainer(Trainer):
    """The same step with the model compiled (genesis.compile or torch.compile) in ``mode``."""

    def __init__(self, script: types.ModuleType, config: dict, batch: int, mode: str | None) -> None:
        super().__init__(script, config, batch)
        self.model = script.genesis.compile(self.model, mode=mode)


class GraphTrainer(Trainer):
    """The same step captured whole as one CUDA graph (torch's whole-network recipe): the batch is
    copied into static tensors and the graph replayed. The first call warms up on a side stream
    (three optimizer steps) and captures; Adam's step counters live on the device (capturable)."""

    def __init__(self, script: types.ModuleType, config: dict, batch: int) -> None:
        super().__init__(script, config, batch)
        for group in self.optimizer.param_groups:
            group["capturable"] = True
        self.graph = None

    def _body(self):
        lib = self.lib
        with lib.autocast("cuda", dtype=lib.bfloat16):
            _, loss = self.model(self.static_x, self.static_y)
        loss.backward()
        self.script.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        lib = self.lib
        if self.graph is None:
            self.static_x, self.static_y = lib.tensor(x, device="cuda"), lib.tensor(y, device="cuda")
            side = lib.cuda.Stream()
            side.wait_stream(lib.cuda.current_stream())
            with lib.cuda.stream(side):
                for _ in range(3):
                    self.optimizer.zero_grad(set_to_none=True)
                    self._body()
            lib.cuda.current_stream().wait_stream(side)
            self.optimizer.zero_grad(set_to_none=True)  # backward makes .grad in the graph's pool
            self.graph = lib.cuda.CUDAGraph()
            with lib.cuda.graph(self.graph):
                self.static_loss = self._body()
        self.static_x.copy_(lib.tensor(x, device="cuda"))
        self.static_y.copy_(lib.tensor(y, device="cuda"))
        self.graph.replay()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--example", action="store_true", help="examples/train_gpt.py's default model and batch")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--graph", action="store_true", help="also time genesis with the step captured whole")
    parser.add_argument("--compile", action="store_true", help="also genesis.compile and torch.compile")
    parser.add_argument("--variants", nargs="+", default=None, help="only these variants (names as printed)")
    args = parser.parse_args()
    if args.quick:
        config, batch = dict(vocab_size=8192, block_size=256, n_layer=4, n_head=8, n_embd=512), 8
    elif args.example:  # the character vocabulary of the bundled text
        config, batch = dict(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384), 64
    else:
        config, batch = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768), 8
    rng = np.random.default_rng(0)
    makers = {
        "genesis": lambda: Trainer(load("gpt_genesis", None), config, batch),
        "torch": lambda: Trainer(load("gpt_torch", TO_TORCH), config, batch),
    }
    if args.graph:
        makers["genesis-graph"] = lambda: GraphTrainer(load("gpt_genesis_graph", None), config, batch)
    if args.compile:
        for mode in (None, "reduce-overhead"):
            suffix = "" if mode is None else "-ro"
            makers[f"genesis-compile{suffix}"] = lambda m=mode: CompiledTrainer(load("gpt_gc", None), config, batch, m)
            makers[f"torch-compile{suffix}"] = lambda m=mode: CompiledTrainer(
                load("gpt_tc", TO_TORCH), config, batch, m
            )
    trainers = {name: make() for name, make in makers.items() if args.variants is None or name in args.variants}
    warmup = max(args.warmup, 3) if args.compile else args.warmup  # reduce-overhead records at the third call
    times: dict[str, list[float]] = {name: [] for name in trainers}
    peaks: dict[str, float] = dict.fromkeys(trainers, 0.0)
    first: dict[str, float] = {}
    for step in range(warmup + args.steps):
        x = rng.integers(0, config["vocab_size"], size=(batch, config["block_size"]))
        y = rng.integers(0, config["vocab_size"], size=(batch, config["block_size"]))
        for name, trainer in trainers.items():
            lib = trainer.lib
            trainer.sync()
            lib.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            trainer.step(x, y)
            trainer.sync()
            elapsed = time.perf_counter() - start
            if step == 0:
                first[name] = elapsed
            if step >= warmup:
                times[name].append(elapsed)
                peaks[name] = max(peaks[name], lib.cuda.max_memory_allocated() / 2**30)
    tokens = batch * config["block_size"]
    rate = {name: tokens / statistics.median(v) for name, v in times.items()}
    any_trainer = next(iter(trainers.values()))
    params = sum(p.numel() for p in any_trainer.model.parameters())
    print(f"GPT {params / 1e6:.1f} M parameters, {batch} x {config['block_size']} tokens, bf16 autocast, AdamW")
    for name in trainers:
        print(
            f"  {name:20s} {rate[name]:12,.0f} tokens/s   peak {peaks[name]:6.2f} GiB   first step {first[name]:.1f} s"
        )
    if "torch" in rate:
        for name in rate:
            if name != "torch":
                print(f"  ratio {name} / torch eager tokens/s: {rate[name] / rate['torch']:.3f}")
    for mode in ("", "-ro"):
        ours, theirs = f"genesis-compile{mode}", f"torch-compile{mode}"
        if ours in rate and theirs in rate:
            print(f"  ratio {ours} / {theirs} tokens/s: {rate[ours] / rate[theirs]:.3f}")


if __name__ == "__main__":
    main()
