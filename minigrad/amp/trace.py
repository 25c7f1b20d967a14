"""``amp.trace()``: a per-op dtype trace of forward and backward, built on ``dispatch_hooks``.

Every op goes through ``Function.apply`` (invariant 1), which calls the hooks in
``minigrad.core.function.dispatch_hooks`` after the op ran. A trace is one such hook: it
records, per op, the module it ran in, its input dtypes (before autocast's casts), the dtype it
computed in, its output dtypes and the rule that decided (policy row, region or global override,
promotion, cast-cache hit, or "autocast off"). Nothing is installed outside a ``with
amp.trace()`` block, so tracing costs nothing when off.

Casts that autocast inserts are folded into the op that consumed them (its ``casts`` and
``cast_bytes``) instead of appearing as records of their own; casts the user wrote are records.

Backward: the engine calls the hooks once per graph node after its backward ran (phase
``"backward"``, inputs = output gradients, outputs = input gradients). The module path of a node
is captured when its forward runs and stored on the node. The ops a node's backward dispatches
itself (the ``matmul`` inside ``linear``'s backward) are recorded with ``phase="backward"`` and
``backward_of`` naming the node.
"""

from __future__ import annotations


import numpy as np

from .._backend.dtypes import is_floating
from .._backend.sync_debug import host_read
from ..core.modes import current_backward_node, dispatch_hooks, dispatch_policy
from ..nn.module import current_module_path
from ..core.tensor import Tensor
from ..precision import policy as _policy
from ..core.modes import autocast_state as _autocast_state

__all__ = ["Trace", "backward_node", "module_path_of", "trace"]



def backward_node(depth: int = 2):
    """The graph node whose backward is running, or None in a forward pass.

    The engine publishes it in ``current_backward_node`` while debug hooks are installed.
    ``depth`` is accepted for compatibility and ignored.
    """
    return current_backward_node.get()


def _path_str(path) -> str:
    return ".".join([p for p in path if p])


def module_path_of(fn) -> str | None:
    """The dotted module path recorded for node ``fn`` by a debugging hook (None if unknown)."""
    p = getattr(fn, "_amp_path", None)
    return None if p is None else _path_str(p)


_DTYPE_NAMES: dict = {}


def _dn(dtype) -> str:
    """``str(dtype)``, memoised: NumPy builds the name on every call (~4 us)."""
    n = _DTYPE_NAMES.get(dtype)
    if n is None:
        n = _DTYPE_NAMES[dtype] = str(dtype)
    return n


def _dtype_name(x) -> str | None:
    if isinstance(x, Tensor):
        return _dn(x.dtype)
    return None


def _source_of_override(name: str) -> str:
    st = _autocast_state.get()
    if st is not None and (name in st.fp32_ops or name in st.lower_ops):
        return "region override"
    if name in _policy._overrides:
        return "global override"
    return "policy row"


def explain(fn, policy) -> str:
    """Human-readable reason for the dtype ``fn`` ran in (called right after its forward)."""
    if policy is None:
        return "autocast off"
    raw = fn.amp_reason
    if raw is None:
        return "passthrough"
    if raw.startswith("module:"):
        return "module precision: " + raw[len("module:"):]
    if not raw.startswith("autocast:"):
        return raw  # a reason another policy (module precision, O-levels) chose to give
    kind = raw[len("autocast:"):].split("(", 1)[0]
    if kind == "promote":
        return f"promotion to {fn.compute_dtype}"
    return f"{_source_of_override(fn.name)}: {kind}"


def _host64(arr):
    """A float64 NumPy copy of a backend array (for the advisor's comparisons)."""
    if hasattr(arr, "get"):
        arr = host_read(arr, "amp trace")
    return np.asarray(arr).astype(np.float64)


class Trace:
    """The recorder installed by ``trace()``; also the object ``with amp.trace() as t`` binds.

    Args:
        keep_outputs: also keep a float64 host copy of each forward op's first output and the
            indices of the records that produced its inputs (used by ``suggest_policy``).
    """

    def __init__(self, keep_outputs: bool = False):
        self.keep_outputs = keep_outputs
        self._records: list = []
        self._pending: dict = {}      # id(cast output) -> (tensor, src dtype, nbytes, source)
        self._producer: dict = {}     # id(tensor) -> (tensor, record index); keep_outputs only
        self._token = None

    # ------------------------------------------------------------------ context manager
    def __enter__(self):
        self._token = dispatch_hooks.set(dispatch_hooks.get() + (self,))
        return self

    def __exit__(self, *exc):
        dispatch_hooks.reset(self._token)
        self._flush_pending()
        self._producer.clear()  # drop the strong references to traced tensors
        return False

    # ------------------------------------------------------------------ the hook
    def __call__(self, phase, fn, inputs, outputs):
        if phase == "backward":
            self._record_backward(fn, inputs, outputs)
            return
        policy = dispatch_policy.get()
        node = None if policy is not None else backward_node(2)
        if node is None:
            path = current_module_path.get()
        else:
            path = getattr(node, "_amp_path", ())
        fn._amp_path = path
        if policy is not None and fn.name == "cast":
            # Possibly inserted by autocast for the op being dispatched: decide when it arrives.
            out = outputs[0]
            src = inputs[0]
            self._pending[id(out)] = (out, _dn(fn.src_dtype), out._data.nbytes,
                                      self._source_index(src))
            return
        self._record_forward(fn, inputs, outputs, path, node, policy)

    def _source_index(self, x):
        if not self.keep_outputs or not isinstance(x, Tensor):
            return None
        hit = self._producer.get(id(x))
        return hit[1] if hit is not None and hit[0] is x else None

    def _cache_sources(self, policy) -> dict:
        cache = getattr(policy, "cache", None)
        if not cache:
            return {}
        return {id(e[3]): e for e in cache.values()}

    def _record_forward(self, fn, inputs, outputs, path, node, policy):
        pending = self._pending
        in_dtypes, sources = [], []
        casts = cast_bytes = hits = 0
        cached = self._cache_sources(policy) if fn.amp_reason is not None else {}
        for x in inputs:
            if not isinstance(x, Tensor):
                continue
            p = pending.pop(id(x), None) if pending else None
            if p is not None and p[0] is x and fn.amp_reason is not None:
                in_dtypes.append(p[1])
                casts += 1
                cast_bytes += p[2]
                sources.append(p[3])
                continue
            if p is not None:  # a cast the user wrote: a record of its own
                pending[id(x)] = p
            e = cached.get(id(x))
            if e is not None and e[3] is x:
                in_dtypes.append(_dn(e[0].dtype))
                hits += 1
                sources.append(self._source_index(e[0]))
                continue
            in_dtypes.append(_dn(x.dtype))
            sources.append(self._source_index(x))
        self._flush_pending()
        compute = fn.compute_dtype
        if compute is None:
            compute = next((x.dtype for x in inputs
                            if isinstance(x, Tensor) and is_floating(x.dtype)),
                           outputs[0].dtype if outputs else None)
        reason = explain(fn, policy) if node is None else "backward: inputs' dtypes"
        if hits:
            reason += " + cast cache hit"
        fn._amp_why = reason
        rec = {
            "index": len(self._records),
            "phase": "forward" if node is None else "backward",
            "op": fn.name,
            "module": _path_str(path),
            "backward_of": None if node is None else node.name,
            "input_dtypes": tuple(in_dtypes),
            "compute_dtype": None if compute is None else _dn(compute),
            "output_dtypes": tuple([_dtype_name(o) for o in outputs]),
            "output_shape": tuple(outputs[0].shape) if outputs else None,
            "reason": reason,
            "casts": casts,
            "cast_bytes": cast_bytes,
            "cache_hits": hits,
        }
        if self.keep_outputs and node is None and outputs:
            out = outputs[0]
            rec["sources"] = tuple(sources)
            rec["output"] = _host64(out._data) if is_floating(out.dtype) else None
            for o in outputs:
                self._producer[id(o)] = (o, rec["index"])
        self._records.append(rec)

    def _flush_pending(self):
        """Casts that no op consumed as an autocast cast are the user's own: record them."""
        if not self._pending:
            return
        for out, src, nbytes, _ in self._pending.values():
            self._records.append({
                "index": len(self._records), "phase": "forward", "op": "cast",
                "module": _path_str(current_module_path.get()), "backward_of": None,
                "input_dtypes": (src,), "compute_dtype": _dn(out.dtype),
                "output_dtypes": (_dn(out.dtype),), "output_shape": tuple(out.shape),
                "reason": "explicit cast", "casts": 0, "cast_bytes": 0, "cache_hits": 0})
        self._pending.clear()

    def _record_backward(self, fn, grads, gins):
        self._flush_pending()
        compute = fn.compute_dtype
        if compute is None:
            compute = next((g.dtype for g in grads if isinstance(g, Tensor)), None)
        fwd = getattr(fn, "_amp_why", None)
        self._records.append({
            "index": len(self._records),
            "phase": "backward",
            "op": fn.name,
            "module": module_path_of(fn),
            "backward_of": None,
            "input_dtypes": tuple([_dtype_name(g) for g in grads]),
            "compute_dtype": None if compute is None else _dn(compute),
            "output_dtypes": tuple([_dtype_name(g) for g in gins]),
            "output_shape": None,
            "reason": "replays forward" + (f" ({fwd})" if fwd else ""),
            "casts": 0, "cast_bytes": 0, "cache_hits": 0,
        })

    # ------------------------------------------------------------------ results
    def records(self, phase: str | None = None, op: str | None = None) -> list:
        """The records as plain dicts (copies), optionally filtered by phase and op name.

        Keys: ``index, phase, op, module, backward_of, input_dtypes, compute_dtype,
        output_dtypes, output_shape, reason, casts, cast_bytes, cache_hits``.
        """
        out = []
        for r in self._records:
            if (phase is None or r["phase"] == phase) and (op is None or r["op"] == op):
                out.append({k: v for k, v in r.items() if k not in ("output", "sources")})
        return out

    def summary(self) -> str:
        """A compact table: per (phase, op), calls by compute dtype, casts and bytes cast."""
        rows: dict = {}
        for r in self._records:
            op = r["op"] if r["backward_of"] is None else f"{r['op']} (in {r['backward_of']})"
            row = rows.setdefault((r["phase"], op), [0, {}, 0, 0])
            row[0] += 1
            d = r["compute_dtype"] or "-"
            row[1][d] = row[1].get(d, 0) + 1
            row[2] += r["casts"]
            row[3] += r["cast_bytes"]
        lines = [f"{'phase':<9}{'op':<34}{'calls':>6}  {'computed in':<26}{'casts':>6}"
                 f"{'bytes cast':>12}"]
        tot_casts = tot_bytes = 0
        for (phase, op), (n, dts, c, b) in rows.items():
            dt = " ".join(f"{k}:{v}" for k, v in sorted(dts.items()))
            lines.append(f"{phase:<9}{op[:33]:<34}{n:>6}  {dt:<26}{c:>6}{b:>12}")
            tot_casts += c
            tot_bytes += b
        lines.append(f"{len(self._records)} ops, {tot_casts} autocast casts, "
                     f"{tot_bytes} bytes cast")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __len__(self) -> int:
        return len(self._records)


def trace(keep_outputs: bool = False) -> Trace:
    """Record the dtype of every op dispatched inside the block (forward and backward).

    Args:
        keep_outputs: also keep host copies of forward outputs (memory heavy; for the advisor).

    Returns:
        A ``Trace``: use ``t.records()`` for plain data and ``t.summary()`` for a table.

    Example:
        >>> import minigrad as mg
        >>> from minigrad import amp
        >>> a, b = mg.ones(2, 2), mg.ones(2, 2)
        >>> with amp.trace() as t, amp.autocast():
        ...     c = (a @ b).sum()
        >>> [(r["op"], r["compute_dtype"]) for r in t.records()]
        [('matmul', 'float16'), ('sum', 'float32')]
    """
    return Trace(keep_outputs)

