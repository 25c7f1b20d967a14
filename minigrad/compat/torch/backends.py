"""``mg.backends``: PyTorch's ``torch.backends`` switches, each doing the nearest real thing in
minigrad (``import minigrad.backends.cudnn`` works too).

===========================================  ==================================================
``backends.cudnn.enabled`` (True)            convolutions on the GPU use cuDNN when it loads;
                                             False: the im2col + cuBLAS path
``backends.cudnn.deterministic`` (False)     True: convolutions take the im2col + cuBLAS path,
                                             which is run-to-run deterministic (cuDNN's
                                             heuristically chosen kernels may not be); slower
``backends.cudnn.benchmark`` (False)         accepted and kept, no effect: each convolution's
                                             cuDNN plan is built once per shape and cached
                                             whatever it says (no timing sweep)
``backends.cudnn.allow_tf32`` (True)         float32 cuDNN convolutions may use TF32 Tensor
                                             Cores (PyTorch's default); False: IEEE float32
``backends.cudnn.is_available()``            whether cuDNN loads and a GPU is present
``backends.cuda.matmul.allow_tf32`` (False)  accepted and kept; float32 matmuls always run in
                                             IEEE float32 (PyTorch's default), also when True
``backends.cuda.is_built()``                 whether CuPy is installed
``backends.mps.is_available()``              False (minigrad runs on CPUs and CUDA GPUs)
===========================================  ==================================================

Example:
    >>> import minigrad as mg
    >>> mg.backends.cudnn.benchmark = True
    >>> mg.backends.cudnn.deterministic, mg.backends.mps.is_available()
    (False, False)
"""

from __future__ import annotations

import types

from ... import _backend as B
from ..._backend import cudnn_conv

__all__ = ["cuda", "cudnn", "mps"]


class _CudnnModule(types.ModuleType):
    """``mg.backends.cudnn``: the attributes are properties, so setting one takes effect."""

    def __init__(self):
        super().__init__("minigrad.backends.cudnn", "PyTorch's torch.backends.cudnn switches.")
        prev = cudnn_conv.set_enabled(True)  # read the backend's switch (MINIGRAD_CUDNN=0 ...)
        cudnn_conv.set_enabled(prev)
        object.__setattr__(self, "_flags", {"enabled": prev, "deterministic": False,
                                            "benchmark": False})

    def _apply(self):
        f = self._flags
        cudnn_conv.set_enabled(f["enabled"] and not f["deterministic"])

    @property
    def enabled(self) -> bool:
        return self._flags["enabled"]

    @enabled.setter
    def enabled(self, value):
        self._flags["enabled"] = bool(value)
        self._apply()

    @property
    def deterministic(self) -> bool:
        return self._flags["deterministic"]

    @deterministic.setter
    def deterministic(self, value):
        self._flags["deterministic"] = bool(value)
        self._apply()

    @property
    def benchmark(self) -> bool:
        return self._flags["benchmark"]

    @benchmark.setter
    def benchmark(self, value):
        self._flags["benchmark"] = bool(value)

    @property
    def allow_tf32(self) -> bool:
        return cudnn_conv.allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        cudnn_conv.set_allow_tf32(bool(value))

    @staticmethod
    def is_available() -> bool:
        """Whether cuDNN loads and CuPy sees a GPU, switched on or not (never raises)."""
        if not B.cuda_available():
            return False
        prev = cudnn_conv.set_enabled(True)
        try:
            return cudnn_conv.available()
        finally:
            cudnn_conv.set_enabled(prev)

    @staticmethod
    def version():
        """None: minigrad reaches cuDNN through its frontend and reports no library version."""
        return None


class _Matmul:
    """``mg.backends.cuda.matmul``: the TF32 switch PyTorch has (kept, no effect)."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


def _namespace(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


def _cuda_is_built() -> bool:
    return B.cupy is not None


def _false() -> bool:
    return False


cudnn = _CudnnModule()
cuda = _namespace("minigrad.backends.cuda", "PyTorch's torch.backends.cuda.",
                  matmul=_Matmul(), is_built=_cuda_is_built)
mps = _namespace("minigrad.backends.mps", "Apple GPUs: not supported (always False).",
                 is_available=_false, is_built=_false)
