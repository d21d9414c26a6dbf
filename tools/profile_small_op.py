"""Where a small cuda op spends its host time: cProfile of `a + b` (1,024 elements)."""

import cProfile
import pstats

import genesis

a = genesis.randn(1024, device="cuda")
b = genesis.randn(1024, device="cuda")
for _ in range(100):
    a + b
genesis.cuda.synchronize()
profile = cProfile.Profile()
profile.enable()
for _ in range(5000):
    a + b
profile.disable()
genesis.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(25)
