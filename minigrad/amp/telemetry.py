"""Scaler telemetry and gradient precision statistics.

* ``plot_scaler(scaler, path)``: the loss scale over iterations (log2 axis) with skipped
  iterations marked by reason, from ``scaler.history``.
* ``scaler_summary(scaler)``: counts of iterations, skips per reason, scale range (plain data).
* ``grad_stats(params_or_module, scaler=None, dtype="float16", lr=None)``: per parameter, how
  many gradient elements the low-precision backward would lose.

Definitions used by ``grad_stats`` (``g`` = a true, unscaled gradient element, ``s`` = the loss
scale). During a mixed-precision backward the gradient exists as ``g * s`` rounded to ``dtype``;
each element is computed exactly in float64 and then rounded with the dtype's real cast:

* **underflow**: ``g != 0`` but ``dtype(g * s) == 0`` (flushed to zero: the update is lost);
* **subnormal**: ``dtype(g * s)`` is nonzero but below the smallest normal number (kept with
  reduced relative precision);
* **overflow**: ``g * s`` is finite but ``dtype(g * s)`` is inf (the scaler would skip the step);
* **lost update** (needs ``lr``): ``g != 0`` and ``param - lr * g`` rounded to the parameter's
  own dtype equals the parameter (the SGD update is below half an ulp: low-precision weights
  stop learning; fp32 master weights avoid it).

Fractions are over all elements of the parameter. Call it after ``unscale_``/``step`` (or pass
gradients that are unscaled); the scale comes from ``scaler`` or ``scale=``.
"""

from __future__ import annotations

import numpy as np

from .._backend.dtypes import finfo, normalize_dtype
from .._backend.sync_debug import host_read

__all__ = ["GradStats", "grad_stats", "plot_scaler", "scaler_summary"]


def _history(scaler_or_history) -> list:
    if hasattr(scaler_or_history, "history"):
        return [dict(h) for h in scaler_or_history.history]
    return [dict(h) for h in scaler_or_history]


def scaler_summary(scaler_or_history) -> dict:
    """Plain-data summary of a scaler's history.

    Returns:
        ``{"iterations", "skipped", "skipped_by_reason", "first_scale", "last_scale",
        "min_scale", "max_scale"}`` (scale fields are None for an empty history).
    """
    hist = _history(scaler_or_history)
    reasons: dict = {}
    for h in hist:
        if h["found_inf"]:
            reasons[h["reason"]] = reasons.get(h["reason"], 0) + 1
    scales = [h["scale"] for h in hist]
    return {"iterations": len(hist), "skipped": sum(reasons.values()),
            "skipped_by_reason": reasons,
            "first_scale": scales[0] if scales else None,
            "last_scale": hist[-1].get("new_scale", scales[-1]) if hist else None,
            "min_scale": min(scales) if scales else None,
            "max_scale": max(scales) if scales else None}


_MARKERS = {"grad_overflow": ("x", "tab:red"), "nonfinite_loss": ("v", "tab:purple")}


def plot_scaler(scaler_or_history, path, title: str | None = None) -> str:
    """Draw the loss scale per iteration (log2 y axis), marking skipped iterations.

    Args:
        scaler_or_history: a ``GradScaler`` or its ``history`` (list of dicts).
        path: the image file to write (``.png``, ``.svg``, ...).
        title: optional plot title.

    Returns:
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    hist = _history(scaler_or_history)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    try:
        steps = [h["step"] for h in hist]
        ax.step(steps, [h["scale"] for h in hist], where="post", color="tab:blue",
                label="loss scale")
        for reason, (marker, color) in _MARKERS.items():
            pts = [(h["step"], h["scale"]) for h in hist if h["found_inf"] and
                   h["reason"] == reason]
            if pts:
                ax.scatter(*zip(*pts), marker=marker, color=color, zorder=3,
                           label=f"skipped: {reason} ({len(pts)})")
        if hist:
            ax.set_yscale("log", base=2)
        ax.set_xlabel("iteration")
        ax.set_ylabel("loss scale")
        s = scaler_summary(hist)
        ax.set_title(title or f"{s['iterations']} iterations, {s['skipped']} skipped")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


# ---------------------------------------------------------------------- gradient statistics
def _host(arr):
    return host_read(arr, "gradient statistics") if hasattr(arr, "get") else np.asarray(arr)


def _named(params_or_module):
    if hasattr(params_or_module, "named_parameters"):
        return list(params_or_module.named_parameters())
    if isinstance(params_or_module, dict):
        return list(params_or_module.items())
    return [(f"param{i}", p) for i, p in enumerate(params_or_module)]


class GradStats:
    """Result of ``grad_stats``: ``rows`` (one dict per parameter) and ``summary()``."""

    def __init__(self, rows: list, dtype, scale: float, lr):
        self.rows = rows
        self.dtype = str(dtype)
        self.scale = scale
        self.lr = lr

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, name: str) -> dict:
        for r in self.rows:
            if r["name"] == name:
                return r
        raise KeyError(f"grad_stats: no parameter named {name!r}")

    def as_dicts(self) -> list:
        return [dict(r) for r in self.rows]

    def summary(self) -> str:
        """A table: per parameter, % underflow / subnormal / overflow / lost updates."""
        lines = [f"gradients in {self.dtype} at loss scale {self.scale:g}"
                 + (f", lr {self.lr:g}" if self.lr is not None else ""),
                 f"{'parameter':<28}{'numel':>9}{'underflow':>11}{'subnormal':>11}"
                 f"{'overflow':>10}{'lost upd':>10}{'max|g|':>11}"]

        def pct(v):
            return "-" if v is None else f"{100 * v:.2f}%"

        for r in self.rows:
            if r["numel"] and r["max_abs"] is None:
                lines.append(f"{r['name'][:27]:<28}{r['numel']:>9}  (no gradient)")
                continue
            lines.append(f"{r['name'][:27]:<28}{r['numel']:>9}{pct(r['underflow']):>11}"
                         f"{pct(r['subnormal']):>11}{pct(r['overflow']):>10}"
                         f"{pct(r['lost_update']):>10}{r['max_abs']:>11.3g}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def grad_stats(params_or_module, scaler=None, dtype="float16", *, lr=None,
               scale=None) -> GradStats:
    """Per-parameter fractions of gradient elements lost to low precision.

    Args:
        params_or_module: a Module (rows named like ``fc1.weight``), a dict name -> Parameter,
            or a list of Parameters (``param0``, ...). Their ``.grad`` must be unscaled.
        scaler: a ``GradScaler``; its current scale is the ``s`` of the definitions.
        dtype: the low-precision dtype of the backward (``"float16"`` or ``"bfloat16"``).
        lr: learning rate for the lost-update statistic (None: not computed).
        scale: explicit scale (overrides ``scaler``; default 1).

    Returns:
        ``GradStats``; each row has ``name, shape, dtype, numel, zeros, underflow, subnormal,
        overflow, lost_update, max_abs, min_abs_nonzero`` (fractions in [0, 1]; ``lost_update``
        None without ``lr``; statistics None for a parameter without gradient).

    Example:
        >>> import minigrad as mg
        >>> from minigrad import amp
        >>> p = mg.Parameter(mg.zeros(4))
        >>> p.grad = mg.full((4,), 1e-8)
        >>> amp.grad_stats([p])["param0"]["underflow"], amp.grad_stats([p], scale=2**16)[
        ...     "param0"]["underflow"]
        (1.0, 0.0)
    """
    low = normalize_dtype(dtype)
    if scale is None:
        scale = scaler.get_scale() if scaler is not None else 1.0
    scale = float(scale)
    tiny = float(finfo(low).tiny)
    rows = []
    for name, p in _named(params_or_module):
        row = {"name": name, "shape": tuple(p.shape), "dtype": str(p.dtype), "numel": p.size,
               "zeros": None, "underflow": None, "subnormal": None, "overflow": None,
               "lost_update": None, "max_abs": None, "min_abs_nonzero": None}
        rows.append(row)
        if p.grad is None or p.size == 0:
            continue
        # Host float64 arithmetic: exact products, then the dtype's own rounding.
        g = _host(p.grad._data).astype(np.float64).ravel()
        n = g.size
        nz = g != 0
        s = g * scale
        q = s.astype(low).astype(np.float64)
        fin = np.isfinite(s)
        aq = np.abs(q)
        ag = np.abs(g[nz & np.isfinite(g)])
        row.update(
            zeros=float(np.count_nonzero(~nz)) / n,
            underflow=float(np.count_nonzero(nz & (q == 0))) / n,
            subnormal=float(np.count_nonzero((aq > 0) & (aq < tiny))) / n,
            overflow=float(np.count_nonzero(fin & ~np.isfinite(q))) / n,
            max_abs=float(ag.max()) if ag.size else 0.0,
            min_abs_nonzero=float(ag.min()) if ag.size else 0.0)
        if lr is not None:
            w = _host(p._data).ravel()
            new = (w.astype(np.float64) - float(lr) * g).astype(w.dtype)
            row["lost_update"] = float(np.count_nonzero(nz & (new == w))) / n
    return GradStats(rows, low, scale, lr)
