"""cuDNN convolutions through the cuDNN Frontend Python API (``nvidia-cudnn-frontend`` 1.23).

CuPy 14 dropped its cuDNN bindings (AMP_REFERENCE section 3), so conv2d on the GPU is either
im2col + one cuBLAS GEMM (``functional/_conv_kernels.py``, always available) or, when the
``cudnn`` package and library load and a GPU is present, the three cuDNN graphs built here:

- ``forward(x, w)``         conv_fprop:  y  = conv(x, w)
- ``data_grad(gy, w)``      conv_dgrad:  gx = conv^T(gy, w)   (also conv_transpose2d)
- ``weight_grad(x, gy)``    conv_wgrad:  gw

float16/bfloat16 compute in float32 (Tensor Core semantics, invariant 4). float32 runs on cuDNN
too, as in PyTorch: with TF32 Tensor Cores unless ``set_allow_tf32(False)`` (PyTorch's
``torch.backends.cudnn.allow_tf32``, default True); float64 stays on im2col. cuDNN's convolution
graphs describe minigrad's C-contiguous NCHW arrays as they are (NCHW dims and strides: no copy);
``MINIGRAD_CUDNN_LAYOUT=nhwc`` instead copies the operands to channels-last and the result back
(NHWC strides), which some engines prefer. Every function returns None when cuDNN cannot run the
case (no package, float64, a graph cuDNN rejects): the caller then takes the
im2col path. Plans are built once per (op, shapes, stride, padding, dilation, groups, dtype, TF32,
device) and cached; the plan is looked up before any copy or allocation, and a rejected key is
remembered so it is not retried every step. Arrays reach cuDNN as raw device pointers (the
frontend's ``execute`` takes ints), not DLPack exports.

Set ``MINIGRAD_CUDNN=0`` (or call ``set_enabled(False)``) to force the im2col path. When a GPU is
present but cuDNN cannot load, the first convolution warns once with the reason
(``unavailable_reason()`` returns it).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from . import cuda_available, cupy
from .dtypes import bfloat16, float16, float32

__all__ = ["available", "unavailable_reason", "set_enabled", "set_allow_tf32", "allow_tf32",
           "forward", "data_grad", "weight_grad", "plan_cache_info", "TESTED_FRONTEND"]

# The frontend version whose Python API this module was written against (pyproject pins it):
# 1.24+ reimplemented ``pygraph`` in Python and 1.29+ declare extra required packages.
TESTED_FRONTEND = "1.23.0"

_ndarray = np.ndarray
_DTYPES = (float16, bfloat16, float32)
_state = {"checked": False, "ok": False, "enabled": os.environ.get("MINIGRAD_CUDNN", "1") != "0",
          "tf32": True, "module": None, "reason": None,
          # Memory layout cuDNN is handed: "nchw" passes minigrad's arrays as they are; "nhwc"
          # copies operands to channels-last and the result back (3 copies per call).
          "layout": os.environ.get("MINIGRAD_CUDNN_LAYOUT", "nchw")}
_plans: dict = {}      # key -> _Plan, or None for a case cuDNN rejected
_handles: dict = {}    # device id -> [cudnn handle, stream pointer it was last set to]


def _load():
    """Import the frontend and load libcudnn; returns (module, None) or (None, reason)."""
    try:
        import cudnn  # nvidia-cudnn-frontend
    except ImportError as e:
        return None, (f"the cuDNN frontend is not installed ({e}); install the 'cudnn-cu13' "
                      f"extra (CUDA 13) or 'cudnn' (CUDA 12): nvidia-cudnn-frontend=="
                      f"{TESTED_FRONTEND} with nvidia-cudnn-cu13/-cu12")
    except Exception as e:  # noqa: BLE001 - e.g. its import-time dlopen asserts on 2 libraries
        return None, f"importing the cuDNN frontend failed ({type(e).__name__}: {e})"
    try:
        cudnn.backend_version()  # the frontend dlopens libcudnn at import and fails here if not
    except Exception as e:  # noqa: BLE001 - any failure means "no cuDNN", reported once
        return None, (f"libcudnn.so.9 could not be loaded ({type(e).__name__}: {e}); the "
                      "frontend looks in <purelib>/nvidia/cudnn/lib and on the dynamic linker "
                      "path only: install nvidia-cudnn-cuXX into this environment or add its lib "
                      "folder to LD_LIBRARY_PATH")
    try:  # the frontend dlopens libcudart on its own: only a built plan proves it all loads
        _Plan("fprop", (1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1), float16, (1, 1), (0, 0), (1, 1),
              True, "nchw", cudnn.create_handle(), module=cudnn)
    except Exception as e:  # noqa: BLE001 - any failure means "no cuDNN", reported once
        return None, (f"the cuDNN frontend loaded but could not build a convolution plan "
                      f"({type(e).__name__}: {e}); its CUDA runtime (libcudart) or libcudnn may "
                      "not match this CuPy's CUDA major version")
    version = getattr(cudnn, "__version__", "?")
    if version != TESTED_FRONTEND:
        warnings.warn(f"minigrad's cuDNN path was written for nvidia-cudnn-frontend "
                      f"{TESTED_FRONTEND}, found {version}; convolutions that fail on it fall "
                      "back to im2col + GEMM with a warning", RuntimeWarning, stacklevel=4)
    return cudnn, None


def available() -> bool:
    """True when a GPU, the ``cudnn`` frontend package and the cuDNN library all load (and the
    path is enabled). Warns once, with the reason, when a GPU is present but cuDNN is not."""
    if not _state["checked"]:
        _state["checked"] = True
        if cuda_available():
            _state["module"], _state["reason"] = _load()
            _state["ok"] = _state["module"] is not None
            if not _state["ok"] and _state["enabled"]:
                warnings.warn(f"cuDNN is unavailable, conv2d uses im2col + GEMM: "
                              f"{_state['reason']}", RuntimeWarning, stacklevel=3)
        else:
            _state["reason"] = "no GPU: CuPy sees no device"
    return _state["ok"] and _state["enabled"]


def unavailable_reason() -> str | None:
    """Why cuDNN is not used (None when it is, or before the first check)."""
    if not _state["enabled"]:
        return "disabled (MINIGRAD_CUDNN=0 or set_enabled(False))"
    return None if _state["ok"] else _state["reason"]


def set_enabled(enabled: bool) -> bool:
    """Turn the cuDNN path on/off (off: im2col + GEMM); returns the previous setting."""
    prev = _state["enabled"]
    _state["enabled"] = bool(enabled)
    return prev


def set_allow_tf32(allow: bool) -> bool:
    """Let float32 convolutions use TF32 Tensor Cores (PyTorch's
    ``torch.backends.cudnn.allow_tf32``, default True); returns the previous setting."""
    prev = _state["tf32"]
    _state["tf32"] = bool(allow)
    return prev


def allow_tf32() -> bool:
    """Whether float32 convolutions may use TF32 (see :func:`set_allow_tf32`)."""
    return _state["tf32"]


def plan_cache_info() -> dict:
    """Number of cached plans and of remembered unsupported cases (for tests and tuning)."""
    return {"plans": sum(p is not None for p in _plans.values()),
            "unsupported": sum(p is None for p in _plans.values())}


def _usable(a, b) -> bool:
    if type(a) is _ndarray or cupy is None or not isinstance(a, cupy.ndarray):
        return False
    if a.dtype not in _DTYPES or b.dtype != a.dtype:
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
def nhwc_strides(shape):
    """Element strides of an NCHW-shaped tensor stored channels-last (NHWC)."""
    n, c, h, w = shape
    return [h * w * c, 1, w * c, c]


def nchw_strides(shape):
    """Element strides of a C-contiguous NCHW tensor."""
    n, c, h, w = shape
    return [c * h * w, h * w, w, 1]


def _nhwc(a):
    """One copy NCHW -> NHWC memory (none if already so), as the NCHW-shaped view cuDNN
    describes."""
    return cupy.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


class _Plan:
    """A built cuDNN graph: two input tensors, one output tensor, its workspace size."""

    __slots__ = ("graph", "a", "b", "out", "workspace")

    def __init__(self, kind, a_shape, b_shape, out_shape, dtype, stride, padding, dilation,
                 tf32, layout, handle, module=None):
        cudnn = module or _state["module"]
        dt = {float16: cudnn.data_type.HALF, bfloat16: cudnn.data_type.BFLOAT16,
              float32: cudnn.data_type.FLOAT}[dtype]
        g = cudnn.pygraph(handle=handle, io_data_type=dt,
                          intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT)
        strides = nhwc_strides if layout == "nhwc" else nchw_strides
        ta = g.tensor(name="a", dim=list(a_shape), stride=strides(a_shape), data_type=dt)
        tb = g.tensor(name="b", dim=list(b_shape), stride=strides(b_shape), data_type=dt)
        conv = dict(padding=list(padding), stride=list(stride), dilation=list(dilation),
                    compute_data_type=cudnn.data_type.FLOAT)
        if kind == "fprop":
            y = g.conv_fprop(image=ta, weight=tb, **conv)
        elif kind == "dgrad":
            y = g.conv_dgrad(loss=ta, filter=tb, **conv)
        else:
            y = g.conv_wgrad(image=ta, loss=tb, **conv)
        # dgrad/wgrad output dims cannot be inferred (output padding, kernel size): always set.
        y.set_output(True).set_dim(list(out_shape)).set_stride(strides(out_shape))
        y.set_data_type(dt)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if dtype == float32 and not tf32:
            # What PyTorch does for allow_tf32=False: drop engines that run float32 on Tensor
            # Cores (TF32) or convert the inputs down.
            g.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE,
                                      cudnn.numerical_note.DOWN_CONVERT_INPUTS])
        g.check_support()
        g.build_plans()
        self.graph, self.a, self.b, self.out = g, ta, tb, y
        self.workspace = int(g.get_workspace_size())


def _handle(device_id, stream_ptr):
    """The cuDNN handle of a device, pointed at ``stream_ptr`` (set only when it changes)."""
    entry = _handles.get(device_id)
    if entry is None:
        entry = _handles[device_id] = [_state["module"].create_handle(), None]
    if entry[1] != stream_ptr:
        _state["module"].set_stream(handle=entry[0], stream=stream_ptr)
        entry[1] = stream_ptr
    return entry[0]


def _plan(key, kind, a, b, out_shape, stride, padding, dilation, groups, handle):
    """The cached plan for ``key`` (built on first use), or None for a case cuDNN rejects."""
    plan = _plans.get(key, False)
    if plan is False:
        tf32, layout = key[-3], key[-2]
        try:
            plan = _Plan(kind, a.shape, b.shape, out_shape, a.dtype, stride, padding, dilation,
                         tf32, layout, handle)
        except Exception as e:  # cudnnGraphNotSupportedError and friends
            warnings.warn(f"cuDNN rejected conv2d {kind} for shapes {a.shape} x {b.shape} "
                          f"(stride {stride}, padding {padding}, dilation {dilation}, "
                          f"groups {groups}, {a.dtype}); using im2col + GEMM: {e}",
                          RuntimeWarning, stacklevel=5)
            plan = None
        _plans[key] = plan
    return plan


def _run(kind, a, b, out_shape, stride, padding, dilation, groups):
    """Execute (building on first use) the ``kind`` graph; None when cuDNN rejects the case."""
    dev = a.device.id
    tf32 = _state["tf32"] if a.dtype == float32 else False
    layout = _state["layout"]
    key = (kind, a.shape, b.shape, out_shape, stride, padding, dilation, groups, a.dtype.str,
           tf32, layout, dev)
    plan = _plans.get(key, False)
    if plan is None:  # known unsupported: nothing copied, nothing allocated
        return None
    with a.device:
        stream = cupy.cuda.get_current_stream()
        handle = _handle(dev, stream.ptr)
        if plan is False:
            plan = _plan(key, kind, a, b, out_shape, stride, padding, dilation, groups, handle)
            if plan is None:
                return None
        if layout == "nhwc":
            a_l, b_l = _nhwc(a), _nhwc(b)
            n, c, h, w = out_shape
            out = cupy.empty((n, h, w, c), a.dtype)
        else:  # no copy for the C-contiguous arrays minigrad passes around
            a_l, b_l = cupy.ascontiguousarray(a), cupy.ascontiguousarray(b)
            out = cupy.empty(out_shape, a.dtype)
        ws = cupy.empty(plan.workspace, np.uint8) if plan.workspace else None
        pack = {plan.a: int(a_l.data.ptr), plan.b: int(b_l.data.ptr), plan.out: int(out.data.ptr)}
        try:
            plan.graph.execute(pack, int(ws.data.ptr) if ws is not None else 0, handle=handle)
        except Exception as e:  # never retry a plan that failed to execute
            warnings.warn(f"cuDNN conv2d {kind} failed to execute for {a.shape} x {b.shape} "
                          f"({a.dtype}); using im2col + GEMM from now on: {e}",
                          RuntimeWarning, stacklevel=4)
            _plans[key] = None
            return None
    if layout == "nchw":
        return out
    # The rest of minigrad expects C-contiguous NCHW arrays (as the im2col path returns).
    return cupy.ascontiguousarray(out.transpose(0, 3, 1, 2))
