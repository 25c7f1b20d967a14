"""Cost of AMP's debugging tools: microseconds per op on the 16x16 (mul, add) chain of
``benchmarks/overhead.py``, with autocast off, on, on + ``amp.trace()``, and on +
``amp.debug_overflow()``.

Tracing and overflow checks are hooks in ``dispatch_hooks``; when they are off the tuple is
empty, so the first two rows are the normal cost and the last two the price of debugging.

    python benchmarks/amp_overhead.py [--ops 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from overhead import bench_minigrad  # noqa: E402  (sibling script, not a package)

MODES = ("autocast off", "autocast on", "autocast + trace", "autocast + debug_overflow")


def _region(mode):
    from minigrad import amp

    stack = contextlib.ExitStack()
    if mode != "autocast off":
        stack.enter_context(amp.autocast())
    if mode == "autocast + trace":
        stack.enter_context(amp.trace())
    if mode == "autocast + debug_overflow":
        stack.enter_context(amp.debug_overflow())
    return stack


def bench(mode, n, repeats):
    """(forward us/op, forward+backward us/op) for one mode; the region spans the backward."""
    return bench_minigrad(n, repeats, lambda: _region(mode))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=2000, help="iterations of the (mul, add) chain")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    rows = [(m, *bench(m, args.ops, args.repeats)) for m in MODES]
    base = rows[1]
    print(f"{'mode':<28}{'fwd us/op':>11}{'fwd+bwd us/op':>15}{'fwd vs autocast':>17}")
    for name, f, fb in rows:
        print(f"{name:<28}{f:>11.2f}{fb:>15.2f}{f / base[1]:>16.2f}x")
    return rows


if __name__ == "__main__":
    main()
