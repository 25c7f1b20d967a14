"""Capture a step function into a CUDA graph (CuPy) and replay it.

A training step launches hundreds of small kernels; a CUDA graph launches them all with one
call, which removes Python and launch overhead when shapes are static. Usage::

    static = [x.copy(), y.copy()]                  # CuPy arrays the step reads its inputs from
    step = cuda_graph.capture(lambda: train_step(*static), static)
    first = step.warmup_output                     # the capture call ran the step once, eagerly
    out = step.replay(x2, y2)                      # copies x2, y2 into ``static``, one launch

``capture`` runs ``fn`` ``warmup`` times eagerly on a private non-default stream (that is this
call's real work, and it initialises lazily built kernels, cuBLAS/cuDNN state and optimizer
state), then records one more call of ``fn`` without executing it. Replays execute the recording.

Rules a captured step must follow (violations raise ``CaptureError`` where CUDA detects them, so
the caller can warn and stay eager):

- no host synchronisation: no ``.item()``, ``.get()``, ``float(array)``, ``mg.cuda.synchronize``,
  no data-dependent Python branching (a ``GradScaler`` without ``sync_free=True`` reads its
  found-inf flag on the host, so it cannot be captured);
- Python-side values are frozen at capture: learning rates, scheduler steps, Adam's step count
  and anything else computed on the host are replayed with their capture-time values;
- every array the step reads must stay alive and at the same address (parameters, optimizer
  state, the static inputs); results are written to the same output arrays on every replay, so
  copy an output that must outlive the next replay.

Matrix products recorded in the step run through ``cublas_gemm`` (cuBLAS via nvmath-python on a
handle prepared before capture), because CuPy's cuBLAS wrappers refuse to run during capture;
without nvmath-python a step with a matmul raises ``CaptureError`` saying so.

Memory allocated during capture comes from a private pool owned by the returned object, so no
other code can be handed memory that a replay writes to.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from . import cublas_gemm, cuda_available, cupy, sync_debug

__all__ = ["CaptureError", "CapturedStep", "capture", "supported", "is_capturing",
           "CUDA_BACKEND", "NUMPY_TWIN", "backend_for", "cpu_twin"]


class CaptureError(RuntimeError):
    """The step could not be captured (host sync, unsupported call, no GPU); run it eagerly.

    Attributes:
        warmup_output: what the eager warm-up call(s) returned (None when capture failed before
            any warm-up): that call already did this step's work, so a caller falling back to
            eager returns it instead of running the step again.
    """

    def __init__(self, message: str, warmup_output=None):
        super().__init__(message)
        self.warmup_output = warmup_output


def supported() -> bool:
    """True when CUDA graphs can be captured here (CuPy sees a GPU)."""
    return cuda_available()


def is_capturing() -> bool:
    """True while the current CuPy stream is recording a graph (False without a GPU)."""
    if not cuda_available():
        return False
    return bool(cupy.cuda.get_current_stream().is_capturing())


class CapturedStep:
    """A recorded step: ``replay(*inputs)`` copies inputs into the static buffers and launches.

    Attributes:
        output: what ``fn`` returned while being captured; its arrays are refilled by each
            replay.
        warmup_output: what the last eager warm-up call of ``fn`` returned.
        static_inputs: the arrays the step reads its inputs from.
    """

    def __init__(self, graph, stream, pool, static_inputs, output, warmup_output, device):
        self._graph, self._stream, self._pool, self._device = graph, stream, pool, device
        self.static_inputs = static_inputs
        self.output = output
        self.warmup_output = warmup_output
        self.replays = 0

    def replay(self, *inputs):
        """Run the recorded step on ``inputs`` (same shapes and dtypes as the static inputs).

        Returns:
            ``self.output``, whose arrays now hold this replay's results.
        """
        _check_inputs(self.static_inputs, inputs)
        with self._device:
            caller = cupy.cuda.get_current_stream()
            self._stream.wait_event(caller.record())  # inputs were produced on the caller's
            with self._stream:
                for dst, src in zip(self.static_inputs, inputs):
                    if src is not dst:
                        cupy.copyto(dst, src)
                self._graph.launch(stream=self._stream)
            caller.wait_event(self._stream.record())  # results visible to the caller's stream
        self.replays += 1
        return self.output


def _check_inputs(static, inputs) -> None:
    if len(inputs) != len(static):
        raise ValueError(f"CapturedStep.replay: captured with {len(static)} inputs, called with "
                         f"{len(inputs)}")
    for i, (dst, src) in enumerate(zip(static, inputs)):
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise ValueError(
                f"CapturedStep.replay: input {i} is {src.dtype}{tuple(src.shape)} but the graph "
                f"was captured for {dst.dtype}{tuple(dst.shape)}; CUDA graphs need static "
                "shapes: capture another graph for this shape or run eagerly")


def _abort_capture(stream):
    """End a failed capture so the stream is usable again; the partial graph is dropped."""
    try:
        if stream.is_capturing():
            stream.end_capture()
    except Exception:  # the capture was invalidated: ending it reports that again
        pass


def capture(fn, static_inputs=(), *, warmup: int = 1) -> CapturedStep:
    """Warm ``fn`` up eagerly, then record one call of it into a CUDA graph.

    Args:
        fn: a callable with no arguments that reads its inputs from ``static_inputs`` (close
            over Tensors wrapping them) and launches only GPU work.
        static_inputs: CuPy arrays that :meth:`CapturedStep.replay` refills.
        warmup: eager calls before the capture (>= 1 unless ``fn`` already ran on this device
            with these shapes: the first call compiles kernels and allocates lazily built state).

    Returns:
        A :class:`CapturedStep`; ``warmup_output`` is the last eager call's result.

    Raises:
        CaptureError: no GPU, or CUDA refused an operation during capture (host sync, a
            blocking copy, a call on the legacy default stream, ...). The warm-up calls have
            run by then, so a caller falling back to eager must not repeat them.
    """
    if not cuda_available():
        raise CaptureError("CUDA graph capture needs a GPU: CuPy sees none; run the step eagerly")
    static_inputs = list(static_inputs)
    for i, a in enumerate(static_inputs):
        if not isinstance(a, cupy.ndarray):
            raise CaptureError(f"capture: static input {i} is a {type(a).__name__}, not a CuPy "
                               "array; move the inputs to the GPU first")
    device = static_inputs[0].device if static_inputs else cupy.cuda.Device()
    with device:
        caller = cupy.cuda.get_current_stream()
        stream = cupy.cuda.Stream(non_blocking=True)  # capture is illegal on the default stream
        stream.wait_event(caller.record())
        warm = None
        # Matmuls take the capturable cuBLAS path in the warm-up too, so its kernels are loaded
        # and its numerics are the replays' (handle, stream, workspace set before the capture).
        # (Without nvmath-python the warm-up stays on CuPy; the capture then fails clearly.)
        token = cublas_gemm._recording.set(cublas_gemm.available())
        try:
            if cublas_gemm.available():
                cublas_gemm.prepare(stream)
            with stream:
                for _ in range(warmup):
                    warm = fn()
        finally:
            cublas_gemm._recording.reset(token)
        pool = cupy.cuda.MemoryPool()
        with stream, cupy.cuda.using_allocator(pool.malloc):
            stream.begin_capture()
            token = cublas_gemm._recording.set(True)
            try:
                out = fn()
            except Exception as e:
                _abort_capture(stream)
                raise CaptureError(f"CUDA graph capture failed inside the step ({type(e).__name__}"
                                   f": {e}); typical causes: .item()/.get()/float() on a GPU "
                                   "array, a synchronize, or a dynamic GradScaler", warm) from e
            finally:
                cublas_gemm._recording.reset(token)
            try:
                graph = stream.end_capture()
            except Exception as e:
                raise CaptureError(f"CUDA graph capture was invalidated ({type(e).__name__}: "
                                   f"{e}); the step touched the legacy default stream or "
                                   "synchronised", warm) from e
        caller.wait_event(stream.record())
    return CapturedStep(graph, stream, pool, static_inputs, out, warm, device)


# ----------------------------------------------------------------------------- backends
# ``nn.Graph`` talks to a capture backend object, so everything around the capture (signature
# cache, fallback decisions, static input buffers, output reuse) runs on the CPU against the
# NumPy twin below and on the GPU against the real thing, through one code path.


class _CudaBackend:
    """Real CUDA graphs (CuPy arrays)."""

    name = "cuda"

    @staticmethod
    def capture(fn, static_inputs, *, warmup=1):
        return capture(fn, static_inputs, warmup=warmup)


def _tensors(out) -> list:
    """The Tensors of a step's output (a Tensor, or nested tuples/lists/dicts of them)."""
    from ..tensor import Tensor  # the tensor layer sits above the backend: imported on use

    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


class TwinStep:
    """The NumPy twin of :class:`CapturedStep`: "recording" keeps the Python step; a replay
    copies the inputs into the static buffers, calls the step again on them (with host reads
    turned into errors: a real replay runs no Python, so a step that reads a value back could
    not have been captured) and copies its results into the first replay's output arrays, so
    callers see the same objects refilled, as with a real graph."""

    def __init__(self, fn, static_inputs, warmup_output):
        self._fn = fn
        self.static_inputs = static_inputs
        self.warmup_output = warmup_output
        self.output = None
        self.replays = 0

    def replay(self, *inputs):
        _check_inputs(self.static_inputs, inputs)
        for dst, src in zip(self.static_inputs, inputs):
            if src is not dst:
                np.copyto(dst, src)
        token = sync_debug.sync_mode.set(2)
        try:
            out = self._fn()
        except RuntimeError as e:
            if "device-to-host read" not in str(e):
                raise
            raise CaptureError(f"the step reads a device value on the host ({e}); a CUDA graph "
                               "cannot contain that") from e
        finally:
            sync_debug.sync_mode.reset(token)
        if self.output is None:
            self.output = out
        else:
            static, new = _tensors(self.output), _tensors(out)
            if [(t.shape, t.dtype) for t in static] != [(t.shape, t.dtype) for t in new]:
                raise CaptureError("the step's outputs changed shape or dtype between replays; "
                                   "a CUDA graph writes the same output arrays every time")
            for dst, src in zip(static, new):
                np.copyto(dst.data, src.data)
        self.replays += 1
        return self.output


class _NumpyTwin:
    """CPU stand-in for :data:`CUDA_BACKEND` (tests): same protocol, NumPy arrays."""

    name = "numpy-twin"

    @staticmethod
    def capture(fn, static_inputs, *, warmup=1):
        static_inputs = list(static_inputs)
        for i, a in enumerate(static_inputs):
            if type(a) is not np.ndarray:
                raise CaptureError(f"capture (NumPy twin): static input {i} is a "
                                   f"{type(a).__name__}, not a NumPy array")
        warm = None
        for _ in range(warmup):
            warm = fn()
        return TwinStep(fn, static_inputs, warm)


CUDA_BACKEND = _CudaBackend()
NUMPY_TWIN = _NumpyTwin()
_twin_on: contextvars.ContextVar = contextvars.ContextVar("minigrad_capture_twin", default=False)


@contextlib.contextmanager
def cpu_twin():
    """Let steps on NumPy arrays be "captured" by the NumPy twin (tests of capture logic)."""
    token = _twin_on.set(True)
    try:
        yield
    finally:
        _twin_on.reset(token)


def backend_for(arrays):
    """The capture backend for a step over ``arrays``, or None (run eagerly, nothing to say):
    CUDA for CuPy arrays on a machine with a GPU, the NumPy twin for NumPy arrays inside
    :func:`cpu_twin`. Mixed or empty input lists get None."""
    if not arrays:
        return None
    if all(type(a) is np.ndarray for a in arrays):
        return NUMPY_TWIN if _twin_on.get() else None
    if supported() and all(isinstance(a, cupy.ndarray) for a in arrays):
        return CUDA_BACKEND
    return None
