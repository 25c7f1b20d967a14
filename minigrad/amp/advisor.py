"""``suggest_policy``: find the ops that lose too much in low precision, as ``fp32_ops`` candidates.

The step runs twice -- in float32 and under ``autocast`` -- with an ``amp.trace(keep_outputs=True)``
recording every forward op's output. Ops are matched by order and name (autocast's own casts are
folded into the ops that consumed them, so both runs have the same op sequence; a
``difflib`` alignment tolerates small differences). For each matched op:

* ``error`` = ``||y_low - y_ref|| / ||y_ref||`` in float64 (inf when the low-precision output
  has inf/NaN the reference lacks);
* ``input_error`` = the largest ``error`` among the ops that produced its inputs (0 for
  parameters and data).

An op is a candidate when ``error > threshold`` *and* it at least doubled the error it received
(``error > 2 * input_error``): the op where precision was lost, not every op downstream of it.
"""

from __future__ import annotations

import difflib

import numpy as np

from .._backend import random as _random
from .autocast import autocast
from .trace import trace

__all__ = ["PolicyAdvice", "suggest_policy"]


def _rel_error(low, ref) -> float:
    if low is None or ref is None or low.shape != ref.shape:
        return float("nan")
    ref_ok = np.isfinite(ref)
    if not np.isfinite(low[ref_ok]).all():
        return float("inf")
    diff = np.linalg.norm((low - ref)[ref_ok])
    norm = np.linalg.norm(ref[ref_ok])
    if norm == 0:
        return float(diff)
    return float(diff / norm)


class PolicyAdvice:
    """Result of ``suggest_policy``: ``candidates``, ``ops`` (all matched), ``fp32_ops``."""

    def __init__(self, ops: list, threshold: float, dtype: str):
        self.ops = ops
        self.threshold = threshold
        self.dtype = dtype
        self.candidates = sorted(
            [o for o in ops if o["error"] > threshold and o["error"] > 2 * o["input_error"]],
            key=lambda o: -o["error"])

    @property
    def fp32_ops(self) -> list:
        """Sorted unique op names of the candidates: pass to ``autocast(fp32_ops=...)``."""
        return sorted({o["op"] for o in self.candidates})

    def report(self) -> str:
        """Printable report: every candidate, then the autocast line to try."""
        lines = [f"{len(self.ops)} forward ops compared ({self.dtype} vs float32), "
                 f"threshold {self.threshold:g}"]
        if not self.candidates:
            lines.append("no op above the threshold: the default policy is fine for this step")
            return "\n".join(lines)
        lines.append(f"{'op':<20}{'module':<28}{'ran in':<10}{'rel. error':>12}"
                     f"{'input err':>12}")
        for o in self.candidates:
            lines.append(f"{o['op'][:19]:<20}{(o['module'] or '<root>')[:27]:<28}"
                         f"{o['compute_dtype'] or '-':<10}{o['error']:>12.3g}"
                         f"{o['input_error']:>12.3g}")
        lines.append(f"try: amp.autocast(dtype={self.dtype!r}, fp32_ops={self.fp32_ops})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _forward_records(t) -> list:
    return [r for r in t._records if r["phase"] == "forward" and "output" in r]


def suggest_policy(model_step_fn, *inputs, threshold: float = 1e-2, dtype="float16",
                   **autocast_kwargs) -> PolicyAdvice:
    """Compare each forward op's autocast output with a float32 run; flag the fragile ones.

    Args:
        model_step_fn: called as ``model_step_fn(*inputs)`` twice. It must not update
            parameters (a forward and loss; a backward is fine). The random state is restored
            between the runs so dropout draws the same masks.
        *inputs: its arguments.
        threshold: relative error above which an op is a candidate.
        dtype: autocast dtype (``"float16"`` or ``"bfloat16"``).
        **autocast_kwargs: more ``autocast`` arguments (e.g. ``fp32_ops`` to test a fix).

    Returns:
        ``PolicyAdvice``: ``.candidates`` (dicts with ``op, module, compute_dtype, error,
        input_error, index``), ``.fp32_ops``, ``.report()``.
    """
    state = _random.get_state()
    with trace(keep_outputs=True) as ref_t:
        model_step_fn(*inputs)
    _random.set_state(state)
    with trace(keep_outputs=True) as low_t, autocast(dtype=dtype, **autocast_kwargs):
        model_step_fn(*inputs)
    ref, low = _forward_records(ref_t), _forward_records(low_t)
    low_pos = {r["index"]: i for i, r in enumerate(low)}
    sm = difflib.SequenceMatcher(a=[r["op"] for r in low], b=[r["op"] for r in ref],
                                 autojunk=False)
    err_of: dict = {}  # position in `low` -> error
    ops = []
    for block in sm.get_matching_blocks():
        for k in range(block.size):
            i, j = block.a + k, block.b + k
            lr, rr = low[i], ref[j]
            err = _rel_error(lr["output"], rr["output"])
            if np.isnan(err):
                continue
            err_of[i] = err
            in_err = max([err_of.get(low_pos.get(s), 0.0) for s in lr["sources"]
                          if s is not None] or [0.0])
            ops.append({"index": lr["index"], "op": lr["op"], "module": lr["module"],
                        "compute_dtype": lr["compute_dtype"], "error": err,
                        "input_error": in_err})
    return PolicyAdvice(ops, threshold, str(dtype))
