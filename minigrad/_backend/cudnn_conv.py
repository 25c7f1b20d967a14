"""cuDNN convolutions through the cuDNN Frontend Python API (``nvidia-cudnn-frontend``).

CuPy 14 dropped its cuDNN bindings (AMP_REFERENCE section 3), so conv2d on the GPU is either
im2col + one cuBLAS GEMM (``functional/_conv_kernels.py``, always available) or, when the
``cudnn`` package and library load and a GPU is present, the three cuDNN graphs built here:

- ``forward(x, w)``         conv_fprop:  y  = conv(x, w)
- ``data_grad(gy, w)``      conv_dgrad:  gx = conv^T(gy, w)   (also conv_transpose2d)
- ``weight_grad(x, gy)``    conv_wgrad:  gw

float16/bfloat16 in and out, float32 compute (Tensor Core semantics, invariant 4). cuDNN's
convolution engines want channels-last memory, so operands are copied NCHW -> NHWC and the
result back (cuDNN tensors are described by NCHW dims with NHWC strides). Every function returns
None when cuDNN cannot run the case (no package, float32, a graph cuDNN rejects): the caller then
takes the im2col path. Plans are built once per (op, shapes, stride, padding, dilation, groups,
dtype, device) and cached; a rejected key is remembered so it is not retried every step.

Set ``MINIGRAD_CUDNN=0`` (or call ``set_enabled(False)``) to force the im2col path.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from . import cuda_available, cupy
from .dtypes import bfloat16, float16

__all__ = ["available", "set_enabled", "forward", "data_grad", "weight_grad", "plan_cache_info"]

_ndarray = np.ndarray
_state = {"checked": False, "ok": False, "enabled": os.environ.get("MINIGRAD_CUDNN", "1") != "0",
          "module": None}
_plans: dict = {}      # key -> _Plan, or None for a case cuDNN rejected
_handles: dict = {}    # device id -> cudnn handle


def available() -> bool:
    """True when a GPU, the ``cudnn`` frontend package and the cuDNN library all load."""
    if not _state["checked"]:
        _state["checked"] = True
        if cuda_available():
            try:
                import cudnn  # noqa: F401  (nvidia-cudnn-frontend)

                cudnn.backend_version()  # loads libcudnn: fails cleanly when it is missing
                _state["module"] = cudnn
                _state["ok"] = True
            except Exception:  # ImportError, OSError from a missing library, ...
                _state["ok"] = False
    return _state["ok"] and _state["enabled"]


def set_enabled(enabled: bool) -> bool:
    """Turn the cuDNN path on/off (off: im2col + GEMM); returns the previous setting."""
    prev = _state["enabled"]
    _state["enabled"] = bool(enabled)
    return prev


def plan_cache_info() -> dict:
    """Number of cached plans and of remembered unsupported cases (for tests and tuning)."""
    return {"plans": sum(p is not None for p in _plans.values()),
            "unsupported": sum(p is None for p in _plans.values())}


def _usable(*arrays) -> bool:
    a = arrays[0]
    if type(a) is _ndarray or cupy is None or not isinstance(a, cupy.ndarray):
        return False
    if a.dtype not in (float16, bfloat16) or any(x.dtype != a.dtype for x in arrays):
        return False
    return available()


# ----------------------------------------------------------------------------- public ops
def forward(x, w, stride, padding, dilation, groups):
    """``conv2d(x, w)`` (NCHW, no bias) via cuDNN, or None when cuDNN does not apply."""
    if not _usable(x, w):
        return None
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    return _run("fprop", x, w, (n, o, oh, ow), stride, padding, dilation, groups)


def data_grad(gy, w, in_hw, stride, padding, dilation, groups):
    """Input gradient of conv2d (a transposed convolution) via cuDNN, or None."""
    if not _usable(gy, w):
        return None
    c = w.shape[1] * groups
    return _run("dgrad", gy, w, (gy.shape[0], c) + tuple(in_hw), stride, padding, dilation,
                groups)


def weight_grad(x, gy, w_shape, stride, padding, dilation, groups):
    """Weight gradient of conv2d via cuDNN, or None."""
    if not _usable(x, gy):
        return None
    return _run("wgrad", x, gy, tuple(w_shape), stride, padding, dilation, groups)


# ----------------------------------------------------------------------------- plans
def _nhwc(a):
    """One copy NCHW -> NHWC memory, returned as the NCHW-shaped view cuDNN describes."""
    return cupy.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _elem_strides(a):
    return [s // a.itemsize for s in a.strides]


class _Plan:
    """A built cuDNN graph: two input tensors, one output tensor, its workspace size."""

    __slots__ = ("graph", "a", "b", "out", "workspace")

    def __init__(self, kind, a, b, out, stride, padding, dilation, handle):
        cudnn = _state["module"]
        dt = cudnn.data_type.HALF if a.dtype == float16 else cudnn.data_type.BFLOAT16
        g = cudnn.pygraph(handle=handle, io_data_type=dt,
                          intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT)
        ta = g.tensor(name="a", dim=list(a.shape), stride=_elem_strides(a), data_type=dt)
        tb = g.tensor(name="b", dim=list(b.shape), stride=_elem_strides(b), data_type=dt)
        conv = dict(padding=list(padding), stride=list(stride), dilation=list(dilation),
                    compute_data_type=cudnn.data_type.FLOAT)
        if kind == "fprop":
            y = g.conv_fprop(image=ta, weight=tb, **conv)
        elif kind == "dgrad":
            y = g.conv_dgrad(loss=ta, filter=tb, **conv)
        else:
            y = g.conv_wgrad(image=ta, loss=tb, **conv)
        # dgrad/wgrad output dims cannot be inferred (output padding, kernel size): always set.
        y.set_output(True).set_dim(list(out.shape)).set_stride(_elem_strides(out))
        y.set_data_type(dt)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        self.graph, self.a, self.b, self.out = g, ta, tb, y
        self.workspace = int(g.get_workspace_size())


def _handle(device_id):
    h = _handles.get(device_id)
    if h is None:
        h = _handles[device_id] = _state["module"].create_handle()
    return h


class _OnStream:
    """Exports an array through DLPack for a consumer on CuPy's current (non-null) stream.

    cuDNN Frontend calls ``__dlpack__()`` without a stream, which CuPy reads as "the legacy
    default stream" and answers by making that stream wait on ours: a cross-stream dependency
    that is illegal while capturing a CUDA graph. Naming our own stream avoids it.
    """

    __slots__ = ("array", "stream")

    def __init__(self, array, stream):
        self.array, self.stream = array, stream

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(stream=self.stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _run(kind, a, b, out_shape, stride, padding, dilation, groups):
    """Execute (building on first use) the ``kind`` graph; None when cuDNN rejects the case."""
    a_l, b_l = _nhwc(a), _nhwc(b)
    out = cupy.empty((out_shape[0],) + tuple(out_shape[2:]) + (out_shape[1],), a.dtype)
    out = out.transpose(0, 3, 1, 2)  # NCHW view of NHWC memory
    dev = a.device.id
    key = (kind, a.shape, b.shape, out_shape, stride, padding, dilation, groups, a.dtype.str,
           dev)
    plan = _plans.get(key, False)
    cudnn = _state["module"]
    with a.device:
        handle = _handle(dev)
        stream = cupy.cuda.get_current_stream()
        cudnn.set_stream(handle=handle, stream=stream.ptr)
        if plan is False:
            try:
                plan = _Plan(kind, a_l, b_l, out, stride, padding, dilation, handle)
            except Exception as e:  # cudnnGraphNotSupportedError and friends
                warnings.warn(f"cuDNN rejected conv2d {kind} for shapes {a.shape} x {b.shape} "
                              f"(stride {stride}, padding {padding}, dilation {dilation}, "
                              f"groups {groups}, {a.dtype}); using im2col + GEMM: {e}",
                              RuntimeWarning, stacklevel=4)
                plan = None
            _plans[key] = plan
        if plan is None:
            return None
        ws = cupy.empty(max(plan.workspace, 1), np.uint8)
        if stream.ptr:
            pack = {plan.a: _OnStream(a_l, stream.ptr), plan.b: _OnStream(b_l, stream.ptr),
                    plan.out: _OnStream(out, stream.ptr)}
            ws_obj = _OnStream(ws, stream.ptr)
        else:
            pack, ws_obj = {plan.a: a_l, plan.b: b_l, plan.out: out}, ws
        try:
            plan.graph.execute(pack, ws_obj, handle=handle)
        except Exception as e:  # e.g. a DLPack export this CuPy cannot do: never retry
            warnings.warn(f"cuDNN conv2d {kind} failed to execute for {a.shape} x {b.shape} "
                          f"({a.dtype}); using im2col + GEMM from now on: {e}",
                          RuntimeWarning, stacklevel=4)
            _plans[key] = None
            return None
    # The rest of minigrad expects C-contiguous NCHW arrays (as the im2col path returns).
    return cupy.ascontiguousarray(out)
