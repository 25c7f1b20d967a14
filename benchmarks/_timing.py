"""Timing shared by the benchmark scripts (a folder of scripts, so imported as a sibling)."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, repeats: int, warmup: int = 0) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def interleaved_medians(fns: dict, repeats: int, warmup: int = 0, rounds: int = 3) -> dict:
    """Median wall time of each ``fns[name]()``, measured in alternating blocks.

    Each of ``rounds`` rounds times every function ``ceil(repeats / rounds)`` times, after
    ``warmup`` untimed calls. Taking turns keeps a ratio between frameworks honest on a machine
    whose speed drifts (shared cores): both sample the same stretches of time. The untimed calls
    at each switch let the previous framework's idle worker threads (OpenBLAS, OpenMP spin
    before they sleep) get out of the way, which otherwise slows the next one by up to 3x.
    """
    per_round = -(-repeats // rounds)
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(max(warmup, 1)):
                fn()
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}
