"""Fused per-step kernels: AMP unscale + inf/NaN check, SGD and Adam parameter updates.

On the GPU each is one kernel launch (per dtype group for the unscale, in place through a table
of gradient addresses or over one concatenated copy; per parameter for the updates) instead of
the ~10 small launches the composed array code makes. The NumPy functions here are the
reference semantics of those kernels and the CPU path: same signatures, same arithmetic order,
same dtype rules, so the CPU tests verify the formulas that the GPU kernels implement.

Found-inf protocol (no host round trip): ``unscale_and_check`` writes 1 into a device int32 flag
when any unscaled gradient is inf/NaN; ``sgd_update``/``adam_update`` take that flag as
``found_inf`` and leave the parameter and every state buffer exactly unchanged when it is nonzero
(invariant 9), all inside the kernel. The caller reads the flag once per step, if at all.

Math runs in the optimizer state dtype: float32 for float16/bfloat16/float32 parameters, float64
for float64 ones; low-precision parameters are rounded once at the end.
"""

from __future__ import annotations

import math

import numpy as np

from . import cuda_graph, cupy, loss_scale_rule, multi_tensor
from .dtypes import acc_dtype, float32, float64
from .loss_scale_rule import F32_MAX

__all__ = ["use_fused", "unscale_and_check", "unscale_inplace_and_check", "sgd_update",
           "sgd_update_many", "adam_update", "scale_update"]

_ndarray = np.ndarray


def use_fused(array) -> bool:
    """True when ``array`` lives on the GPU, where the fused kernels replace composed ops."""
    return type(array) is not _ndarray and cupy is not None and isinstance(array, cupy.ndarray)




# ----------------------------------------------------------------------------- unscale + check
def unscale_and_check(grads, inv_scale: float):
    """Multiply every gradient by ``inv_scale`` and flag any inf/NaN in the results.

    Args:
        grads: backend arrays (NumPy or CuPy; any float dtype). They are not modified.
        inv_scale: ``1 / scale`` as a Python float (on the GPU also a 0-d device array);
            applied in float32 (float64 for float64 gradients), float16/bfloat16 results
            rounded once.

    Returns:
        ``(unscaled, found_inf)``: new arrays in the order of ``grads`` (on the GPU, views into
        one flat buffer per dtype group) and a 0-d int32 array on the gradients' device that is
        1 when any unscaled value is inf/NaN, else 0. Reading it is the caller's one host sync.
    """
    grads = list(grads)
    on_gpu = [use_fused(g) for g in grads]
    if not any(on_gpu):
        return _unscale_numpy(grads, inv_scale)
    if all(on_gpu):
        return _unscale_cupy(grads, inv_scale)
    # Mixed CPU/GPU gradients (unusual): each side on its own, the CPU flag folded in.
    cpu_idx = [i for i, g in enumerate(on_gpu) if not g]
    gpu_idx = [i for i, g in enumerate(on_gpu) if g]
    cpu_out, cpu_found = _unscale_numpy([grads[i] for i in cpu_idx], inv_scale)
    gpu_out, found = _unscale_cupy([grads[i] for i in gpu_idx], inv_scale)
    found |= int(cpu_found)
    out = [None] * len(grads)
    for i, u in zip(cpu_idx, cpu_out):
        out[i] = u
    for i, u in zip(gpu_idx, gpu_out):
        out[i] = u
    return out, found


def _unscale_numpy(grads, inv_scale):
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is flagged, not warned about
        out = [_unscale_one(g, inv_scale) for g in grads]
    return out, np.array(not _all_finite(out), np.int32)


def _unscale_one(g, inv_scale):
    if g.dtype == float64:
        u = g * inv_scale
    elif g.dtype == float32:
        u = g * np.float32(inv_scale)
    else:  # float16/bfloat16: compute in float32, round once
        u = (g.astype(float32) * np.float32(inv_scale)).astype(g.dtype)
    return np.asarray(u)  # a 0-d gradient times a scalar is a NumPy scalar: keep it an array


# The CPU found-inf check. Arrays up to this many elements (biases, norms) are checked together,
# one concatenation per dtype: for them the fixed cost of a reduction call (~1 µs) outweighs
# copying them; larger ones are checked one by one.
_CHECK_TOGETHER = 4096
_isfinite, _all_true = np.isfinite, np.logical_and.reduce


def _all_finite(arrays) -> bool:
    """Whether every value of the NumPy ``arrays`` is finite."""
    small: dict = {}
    for a in arrays:
        if a.size <= _CHECK_TOGETHER:
            small.setdefault(a.dtype, []).append(a)
        elif not _all_true(_isfinite(a), None):
            return False
    return all(_all_true(_isfinite(np.concatenate(group, axis=None)))
               for group in small.values())


_UNSCALE_OP = """
{C} v = static_cast<{C}>(g) * inv;
u = static_cast<T>(v);
if (!isfinite(static_cast<{C}>(u))) found[0] = 1;
"""
_kernels: dict = {}


def _kernel(name, in_params, out_params, op, ctype):
    """Compile (once) a kernel whose ``{C}`` is the compute type: ``"float"`` or ``"double"``.

    Parameter lists take NumPy type names, the loop body C++ ones, hence two spellings.
    """
    key = (name, ctype)
    k = _kernels.get(key)
    if k is None:
        np_name = "float64" if ctype == "double" else "float32"
        k = _kernels[key] = cupy.ElementwiseKernel(
            in_params.format(C=np_name), out_params, op.format(C=ctype),
            f"minigrad_{name}_{np_name}")
    return k


def _unscale_cupy(grads, inv_scale):
    groups: dict = {}
    for i, g in enumerate(grads):
        groups.setdefault((g.device.id, g.dtype), []).append(i)
    out = [None] * len(grads)
    flags = []
    for (dev, dtype), idx in groups.items():
        ctype = "double" if dtype == float64 else "float"
        inv = inv_scale
        if use_fused(inv):  # a sync-free scaler's device scalar, in the kernel's compute type
            inv = inv.astype(float64 if dtype == float64 else float32)
        k = _kernel("unscale", "T g, {C} inv", "T u, raw int32 found", _UNSCALE_OP, ctype)
        with cupy.cuda.Device(dev):
            flag = cupy.zeros(1, np.int32)
            if len(idx) == 1:
                flat = cupy.empty(grads[idx[0]].shape, dtype)
                k(grads[idx[0]], inv, flat, flag)
                out[idx[0]] = flat
            else:
                # One copy into a flat buffer, then ONE kernel for the whole group; the results
                # are reshaped views of that buffer (new arrays: p.grad may be shared).
                flat = cuda_graph.concatenate([grads[i].reshape(-1) for i in idx])
                k(flat, inv, flat, flag)
                off = 0
                for i in idx:
                    n = grads[i].size
                    out[i] = flat[off:off + n].reshape(grads[i].shape)
                    off += n
        flags.append(flag)
    found = flags[0]
    with found.device:
        for f in flags[1:]:  # gradients on several GPUs: fold the flags onto the first one
            found |= cupy.asarray(f)
    return out, found.reshape(())


# ----------------------------------------------------------------------------- in place
def unscale_inplace_and_check(grads, inv_scale, found) -> None:
    """Multiply every gradient by ``inv_scale`` in place; set ``found`` to 1 if any result is
    inf/NaN, else 0.

    Same arithmetic as :func:`unscale_and_check` (bit-identical results), without its
    concatenated copy and without a new flag array: on the GPU one multi-tensor kernel per
    dtype walks all gradients of that dtype through a table of their addresses.

    Args:
        grads: C-contiguous, writable arrays on one device, no two sharing memory (the caller
            guarantees it: two aliases would be unscaled twice).
        inv_scale: as for :func:`unscale_and_check`.
        found: the caller's reusable 0-d int32 flag on the gradients' device (overwritten).
    """
    if use_fused(found):
        _unscale_inplace_cupy(grads, inv_scale, found)
        return
    inv32 = np.float32(inv_scale)
    small, finite = [], True
    with np.errstate(over="ignore", invalid="ignore"):
        for g in grads:
            dt = g.dtype
            if dt == float32:
                np.multiply(g, inv32, g)
            elif dt == float64:
                np.multiply(g, inv_scale, g)
            else:  # float16/bfloat16: compute in float32, round once
                g[...] = (g.astype(float32) * inv32).astype(dt)
            # a large array is checked now, while it is in cache; small ones together after
            if g.size <= _CHECK_TOGETHER:
                small.append(g)
            elif finite:
                finite = _all_true(_isfinite(g), None)
    found[...] = not (finite and _all_finite(small))


def _unscale_inplace_cupy(grads, inv_scale, found):
    groups: dict = {}
    for g in grads:
        if g.size:
            groups.setdefault(g.dtype, []).append(g)
    with found.device:
        found.fill(0)
        for dtype, arrs in groups.items():
            cdt = float64 if dtype == float64 else float32
            inv = (inv_scale.astype(cdt).reshape(1) if use_fused(inv_scale)
                   else cupy.full(1, inv_scale, cdt))
            multi_tensor.unscale(arrs, inv, found)


# ----------------------------------------------------------------------------- SGD
def _zeros_like_param(param, shape, dtype):
    """Zeros on ``param``'s backend and device (CuPy allocates on the *current* device)."""
    if not use_fused(param):
        return np.zeros(shape, dtype)
    with param.device:
        return cupy.zeros(shape, dtype)


def _host_found(found_inf) -> bool:
    return found_inf is not None and bool(np.asarray(found_inf).reshape(-1)[0])


def sgd_update(param, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov,
               found_inf=None):
    """One SGD step on ``param`` in place (PyTorch rule, as ``optimizer.SGD``).

    Args:
        param: the parameter array (updated in place).
        grad: its gradient (any float dtype, broadcastable to ``param``).
        momentum_buf: the momentum buffer (state dtype), or None before the first step.
        lr, momentum, dampening, weight_decay, nesterov: the hyperparameters.
        found_inf: optional int32 flag array (from :func:`unscale_and_check`); when nonzero
            nothing is modified.

    Returns:
        The momentum buffer (newly allocated on the first step) or None when ``momentum == 0``.
        A buffer allocated on a skipped first step holds zeros, which equals PyTorch's first
        step afterwards whenever ``dampening == 0``.
    """
    first = momentum != 0 and momentum_buf is None
    cuda_graph.note_host_values("sgd", lr, momentum, dampening, weight_decay, nesterov, first)
    if first:
        momentum_buf = _zeros_like_param(param, param.shape, acc_dtype(param.dtype))
    if use_fused(param):
        _sgd_cupy(param, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov,
                  found_inf, first)
    elif not _host_found(found_inf):
        _sgd_numpy(param, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov,
                   first)
    return momentum_buf if momentum != 0 else None


def sgd_update_many(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
                    found_inf=None) -> None:
    """:func:`sgd_update` (after the first step: ``bufs`` hold the momentum buffers, or None
    when ``momentum == 0``) for many GPU parameters: one multi-tensor launch per device and
    dtype triple instead of one per parameter. Same arithmetic, bit for bit."""
    cuda_graph.note_host_values("sgd", lr, momentum, dampening, weight_decay, nesterov, False)
    bufs = bufs if momentum != 0 else [None] * len(params)
    groups: dict = {}
    for p, g, b in zip(params, grads, bufs):
        if g.shape != p.shape or not (p.flags.c_contiguous and g.flags.c_contiguous):
            _sgd_cupy(p, g, b, lr, momentum, dampening, weight_decay, nesterov, found_inf,
                      False)  # broadcast or strided gradients: the per-tensor kernel
        elif p.size:
            key = (p.device.id, p.dtype, g.dtype, None if b is None else b.dtype)
            groups.setdefault(key, ([], [], []))
            for lst, a in zip(groups[key], (p, g, b)):
                lst.append(a)
    for (dev, *_), (ps, gs, bs) in groups.items():
        with cupy.cuda.Device(dev):
            multi_tensor.sgd(ps, gs, bs, lr, momentum, dampening, weight_decay, nesterov,
                             _flag(found_inf, dev))


def _sgd_numpy(param, grad, buf, lr, momentum, dampening, wd, nesterov, first):
    """The CPU body of ``optimizer.SGD`` (its only one): the NumPy twin of ``_SGD_OP``,
    ``_SGD_PLAIN_OP`` and ``multi_tensor.sgd``, operation for operation (one rounding each;
    tests/test_optimizer_one_body.py runs the kernels' text on the CPU against it; the GPU
    compiler may still fuse a multiply-add, so GPU tests compare with a tolerance)."""
    c = acc_dtype(param.dtype)
    exact = param.dtype == c  # update in place; else compute in c and round once
    w = param if exact else param.astype(c)
    d = grad.astype(c, copy=False)
    if wd != 0:
        d = d + c.type(wd) * w  # a new array: the gradient itself is never modified
    if momentum != 0:
        if first:
            buf[...] = d
        else:
            buf *= c.type(momentum)
            buf += c.type(1.0 - dampening) * d
        d = d + c.type(momentum) * buf if nesterov else buf
    if exact:
        param -= c.type(lr) * d
    else:
        np.copyto(param, w - c.type(lr) * d, casting="unsafe")


_SGD_OP = """
if (found[0] == 0) {{
  {C} w = static_cast<{C}>(p);
  {C} d = static_cast<{C}>(g);
  if (wd != 0) d += wd * w;
  {C} b = first ? d : mom * static_cast<{C}>(buf) + damp * d;
  buf = b;
  d = nesterov ? d + mom * b : b;
  p = static_cast<P>(w - lr * d);
}}
"""
_SGD_PLAIN_OP = """
if (found[0] == 0) {{
  {C} w = static_cast<{C}>(p);
  {C} d = static_cast<{C}>(g);
  if (wd != 0) d += wd * w;
  p = static_cast<P>(w - lr * d);
}}
"""
_no_flag: dict = {}


def _flag(found_inf, device_id):
    """The found_inf flag as a 1-element int32 device array (a cached zero when None)."""
    if found_inf is None:
        f = _no_flag.get(device_id)
        if f is None:
            with cupy.cuda.Device(device_id):
                f = _no_flag[device_id] = cupy.zeros(1, np.int32)
        return f
    return cupy.asarray(found_inf, dtype=np.int32).reshape(1)


def _sgd_cupy(param, grad, buf, lr, momentum, dampening, wd, nesterov, found_inf, first):
    ct = "double" if param.dtype == float64 else "float"
    with param.device:
        flag = _flag(found_inf, param.device.id)
        if momentum != 0:
            k = _kernel("sgd_momentum",
                        "G g, {C} lr, {C} mom, {C} damp, {C} wd, int32 nesterov, int32 first, "
                        "raw int32 found", "P p, B buf", _SGD_OP, ct)
            k(grad, lr, momentum, 1.0 - dampening, wd, int(nesterov), int(first), flag,
              param, buf)
        else:
            k = _kernel("sgd", "G g, {C} lr, {C} wd, raw int32 found", "P p", _SGD_PLAIN_OP, ct)
            k(grad, lr, wd, flag, param)


# ----------------------------------------------------------------------------- Adam
def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
                weight_decay, decoupled, amsgrad, found_inf=None, device_step=None):
    """One Adam/AdamW step on ``param`` and its moments in place (as ``optimizer.Adam``).

    Args:
        param: the parameter array (updated in place).
        grad: its gradient.
        exp_avg, exp_avg_sq: first and second moments (state dtype, updated in place).
        max_exp_avg_sq: AMSGrad running maximum, or None (allocated when ``amsgrad``).
        step: this step's number, counting from 1 (already incremented by the caller).
        lr, beta1, beta2, eps, weight_decay: the hyperparameters.
        decoupled: AdamW (``p *= 1 - lr * wd``) instead of L2 added to the gradient.
        amsgrad: use the running maximum of the second moment.
        found_inf: optional int32 flag; when nonzero nothing is modified. ``step`` is a host
            counter: a caller skipping on a device flag must not advance it (see docs/gpu.md).
        device_step: the step counter as a 1-element int64 array (already advanced by the
            caller, by ``found_inf == 0`` when skipping on a device flag); ``step`` is then
            ignored. On the GPU the kernel computes the bias corrections from it, so neither a
            skipped step nor a CUDA graph replay (which reruns no Python) uses a stale host
            value.

    Returns:
        ``max_exp_avg_sq`` (allocated as zeros on first use) or None when not ``amsgrad``.
    """
    if amsgrad and max_exp_avg_sq is None:
        # zeros, not a copy of v: max(0, v_new) == v_new, PyTorch's value on the first step
        max_exp_avg_sq = _zeros_like_param(param, exp_avg_sq.shape, exp_avg_sq.dtype)
    scal = dict(lr=lr, omb1=1.0 - beta1, beta2=beta2, omb2=1.0 - beta2, eps=eps,
                wd=weight_decay, decay=1.0 - lr * weight_decay)
    cuda_graph.note_host_values("adam", lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
                                step if device_step is None else "device")
    if device_step is not None and use_fused(param):
        scal.update(step=device_step, beta1=beta1)  # bias corrections computed in the kernel
    else:  # a NumPy counter is already on the host: reading it costs nothing
        t = step if device_step is None else int(device_step.reshape(-1)[0])
        scal.update(step_size=lr / (1.0 - beta1 ** t), bc2=math.sqrt(1.0 - beta2 ** t))
    if use_fused(param):
        _adam_cupy(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scal, decoupled, amsgrad,
                   found_inf)
    elif not _host_found(found_inf):
        _adam_numpy(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scal, decoupled, amsgrad)
    return max_exp_avg_sq if amsgrad else None


def _adam_numpy(param, grad, m, v, vmax, s, decoupled, amsgrad):
    """The CPU body of ``optimizer.Adam``/``AdamW`` (their only one): the NumPy twin of
    ``_ADAM_OP`` (with ``_AMS``, and ``_SC``'s in-kernel bias corrections), operation for
    operation (tests/test_optimizer_one_body.py runs the kernel's text on the CPU against it)."""
    c = acc_dtype(param.dtype)
    exact = param.dtype == c  # update in place; else compute in c and round once
    w = param if exact else param.astype(c)
    d = grad.astype(c, copy=False)
    if s["wd"] != 0:
        if decoupled:
            w *= c.type(s["decay"])
        else:
            d = d + c.type(s["wd"]) * w
    # PyTorch updates m with lerp(m, d, 1 - beta1): m + (1 - beta1) * (d - m).
    m += c.type(s["omb1"]) * (d - m)
    v *= c.type(s["beta2"])
    v += c.type(s["omb2"]) * (d * d)
    vv = v
    if amsgrad:
        np.maximum(vmax, v, out=vmax)
        vv = vmax
    denom = np.sqrt(vv)
    denom /= c.type(s["bc2"])
    denom += c.type(s["eps"])
    upd = m / denom
    upd *= c.type(s["step_size"])
    w -= upd
    if not exact:
        np.copyto(param, w, casting="unsafe")


_ADAM_OP = """
if (found[0] == 0) {{
  {C} w = static_cast<{C}>(p);
  {C} d = static_cast<{C}>(g);
  if (wd != 0) {{ if (decoupled) w *= decay; else d += wd * w; }}
  {C} mm = static_cast<{C}>(m);
  mm += omb1 * (d - mm);
  m = mm;
  {C} vv = static_cast<{C}>(v) * beta2 + omb2 * (d * d);
  v = vv;
  {AMS}
  w -= (mm / (sqrt(vv) / bc2 + eps)) * step_size;
  p = static_cast<P>(w);
}}
"""
_AMS = "vv = max(static_cast<{C}>(vmax), vv); vmax = vv;"
_ADAM_IN = ("G g, {C} omb1, {C} beta2, {C} omb2, {C} eps, {C} wd, {C} decay, {C} step_size, "
            "{C} bc2, int32 decoupled, raw int32 found")


# Device step counter: the bias corrections are computed in the kernel from the counter (the
# same double-precision expressions as the host path's Python floats, then rounded to {C}), so a
# replayed CUDA graph or a skipped step never uses a stale host value, for no extra launch.
_ADAM_IN_DEV = _ADAM_IN.replace("{C} step_size, {C} bc2", "float64 lr, float64 beta1, "
                                "float64 beta2d, raw int64 step")
_SC = ("const double t_ = (double)step[0];\n"
       "const {C} step_size = lr / (1.0 - pow(beta1, t_));\n"
       "const {C} bc2 = sqrt(1.0 - pow(beta2d, t_));\n")


def _adam_cupy(param, grad, m, v, vmax, s, decoupled, amsgrad, found_inf):
    ct = "double" if param.dtype == float64 else "float"
    dev = "step" in s
    with param.device:
        flag = _flag(found_inf, param.device.id)
        sc = (s["lr"], s["beta1"], s["beta2"], s["step"]) if dev else (s["step_size"], s["bc2"])
        args = (grad, s["omb1"], s["beta2"], s["omb2"], s["eps"], s["wd"], s["decay"], *sc,
                int(decoupled), flag)
        op = _ADAM_OP.replace("{AMS}", _AMS if amsgrad else "")
        name = ("adam_amsgrad" if amsgrad else "adam") + ("_devstep" if dev else "")
        outs = "P p, B m, B v, B vmax" if amsgrad else "P p, B m, B v"
        k = _kernel(name, _ADAM_IN_DEV if dev else _ADAM_IN, outs, (_SC + op) if dev else op, ct)
        k(*args, param, m, v, *((vmax,) if amsgrad else ()))


# ----------------------------------------------------------------------------- loss-scale update
def scale_update(scale, tracker, found_inf, loss_bad, growth_factor, backoff_factor,
                 growth_interval, min_scale, max_scale=None):
    """The dynamic loss-scale rule (:func:`loss_scale_rule.adjust`) on device arrays, in place,
    without a host read: on the GPU as one small kernel, on the CPU as the rule itself.

    Args:
        scale: 1-element float64 array (float64 so that it equals the host path's Python float
            bit for bit).
        tracker: 1-element int64 array (clean iterations since the last change).
        found_inf: 1-element int32 flag: some gradient of the iteration was inf/NaN.
        loss_bad: 1-element int32 flag: a loss was inf/NaN (a model problem, not a scale one:
            scale and tracker are kept).
        growth_factor, backoff_factor, growth_interval: the rule's constants (interval 0:
            a static scale, left as is).
        min_scale: the floor of the backoff (0.0 for none).
        max_scale: the cap of the growth (None: float32 max).
    """
    cap = F32_MAX if max_scale is None else max_scale
    if growth_interval == 0:
        return  # the rule's static case: nothing changes, so nothing is launched
    if use_fused(scale):
        with scale.device:
            _scale_kernel()(found_inf, loss_bad, growth_factor, backoff_factor, growth_interval,
                            min_scale, cap, scale, tracker)
        return
    # The CPU form is the rule itself (array ops, no host read either), written back in place.
    scale[...], tracker[...] = loss_scale_rule.adjust(
        scale, tracker, found_inf, loss_bad, growth_factor=growth_factor,
        backoff_factor=backoff_factor, growth_interval=growth_interval, min_scale=min_scale,
        max_scale=cap)


# The compiled form of loss_scale_rule.adjust (same branches, same float64 operations);
# tests/test_loss_scale_rule.py executes this source on the CPU against the rule.
_SCALE_OP = """
if (loss_bad[0] == 0) {
  if (found[0] != 0) {
    double b = s * backoff;
    s = b < min_scale ? min_scale : b;
    t = 0;
  } else if (t + 1 == interval) {
    double g = s * growth;
    s = g < cap ? g : cap;
    t = 0;
  } else {
    t = t + 1;
  }
}
"""


def _scale_kernel():
    k = _kernels.get("scale_update")
    if k is None:
        k = _kernels["scale_update"] = cupy.ElementwiseKernel(
            "raw int32 found, raw int32 loss_bad, float64 growth, float64 backoff, "
            "int64 interval, float64 min_scale, float64 cap", "float64 s, int64 t",
            _SCALE_OP, "minigrad_scale_update")
    return k
