"""Where a training step's host time goes: cProfile of the bench_stack MLP (4 x Linear(1024) + ReLU,
batch 64) forward + backward on cuda. Run on the GPU machine with PYTHONPATH at the sources."""

import cProfile
import pstats
import time

import genesis
import genesis.nn as gnn

model = gnn.Sequential(*[m for _ in range(4) for m in (gnn.Linear(1024, 1024), gnn.ReLU())]).to("cuda")
x = genesis.randn(64, 1024, device="cuda")


def step() -> None:
    model.zero_grad()
    model(x).sum().backward()


for _ in range(20):
    step()
genesis.cuda.synchronize()
start = time.perf_counter()
for _ in range(200):
    step()
genesis.cuda.synchronize()
print(f"step: {(time.perf_counter() - start) / 200 * 1e3:.3f} ms")
# Host-bound or GPU-bound? Time the enqueueing alone, then the wait for the GPU to drain.
start = time.perf_counter()
for _ in range(200):
    step()
host = time.perf_counter() - start
genesis.cuda.synchronize()
total = time.perf_counter() - start
print(f"host enqueue {host / 200 * 1e3:.3f} ms/step, with the GPU drained {total / 200 * 1e3:.3f} ms/step")
profile = cProfile.Profile()
profile.enable()
for _ in range(200):
    step()
genesis.cuda.synchronize()
profile.disable()
pstats.Stats(profile).sort_stats("tottime").print_stats(30)
