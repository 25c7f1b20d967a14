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
