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
import os
import traceback

import numpy as np

from . import cublas_gemm, cuda_available, cupy, sync_debug

__all__ = ["CaptureError", "CapturedStep", "capture", "supported", "is_capturing", "recording",
           "note_host_values", "keep_alive",
           "stack", "concatenate", "CUDA_BACKEND", "NUMPY_TWIN", "backend_for", "cpu_twin"]


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


# Objects a graph being captured must keep alive (host buffers its copy nodes re-read at every
# replay): a list per capture, owned by the CapturedStep. Outside our capture (a user's own
# cupy.cuda.Graph) they go to the module list, alive for the process.
_keepalive: contextvars.ContextVar = contextvars.ContextVar("minigrad_capture_keepalive",
                                                            default=None)
_foreign_keepalive: list = []
# One capture stream per device, reused by every capture: cuBLAS handles and their workspaces
# are made per stream (cublas_gemm.prepare), so a new stream per capture would leak one each.
_streams: dict = {}


def recording() -> bool:
    """True while :func:`capture` warms a step up or records it on this thread: state that a
    replay must update on the device (not in Python) is moved there in the eager warm-up."""
    return cublas_gemm.recording()


# Host values the fused kernels take as launch arguments (learning rates, Adam's host step...):
# a CUDA graph bakes them in at capture. The NumPy twin logs them per replay and fails when one
# changes, which is how a CPU test sees a value a real graph would silently freeze.
_host_values: contextvars.ContextVar = contextvars.ContextVar("minigrad_capture_host_values",
                                                              default=None)


def note_host_values(kernel: str, *values) -> None:
    """Record the host values one kernel launch takes (a no-op outside the NumPy twin)."""
    log = _host_values.get()
    if log is not None:
        log.append((kernel, values))


def keep_alive(*objs) -> None:
    """Tie ``objs`` to the lifetime of the graph being captured on this thread."""
    held = _keepalive.get()
    (held if held is not None else _foreign_keepalive).extend(objs)


def _needs_host_table(arrays) -> bool:
    # CuPy joins more than 8 arrays with one kernel reading a pointer table that it copies from
    # the host, which it refuses while a stream captures; fewer are joined kernel by kernel.
    return len(arrays) > 8 and is_capturing()


def concatenate(arrays):
    """``xp.concatenate`` of 1-D arrays that stays legal inside a CUDA graph capture."""
    arrays = list(arrays)
    if type(arrays[0]) is np.ndarray or not _needs_host_table(arrays):
        return (np if type(arrays[0]) is np.ndarray else cupy).concatenate(arrays)
    out = cupy.empty(sum(a.size for a in arrays), arrays[0].dtype)
    off = 0
    for a in arrays:  # one device-to-device copy each
        out[off:off + a.size] = a
        off += a.size
    return out


def stack(arrays):
    """``xp.stack`` of same-shape arrays that stays legal inside a CUDA graph capture."""
    arrays = list(arrays)
    if type(arrays[0]) is np.ndarray or not _needs_host_table(arrays):
        return (np if type(arrays[0]) is np.ndarray else cupy).stack(arrays)
    out = cupy.empty((len(arrays),) + arrays[0].shape, arrays[0].dtype)
    for i, a in enumerate(arrays):
        out[i] = a
    return out


def _where(error) -> str:
    """The innermost frame of minigrad (or the user's step) in ``error``'s traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if "cupy" not in f.filename] or frames
    if not inside:
        return ""
    f = inside[-1]
    return f" at {os.path.basename(f.filename)}:{f.lineno} in {f.name}"


class CapturedStep:
    """A recorded step: ``replay(*inputs)`` copies inputs into the static buffers and launches.

    Attributes:
        output: what ``fn`` returned while being captured; its arrays are refilled by each
            replay.
        warmup_output: what the last eager warm-up call of ``fn`` returned.
        static_inputs: the arrays the step reads its inputs from.
    """

    def __init__(self, graph, stream, pool, static_inputs, output, warmup_output, device,
                 held=()):
        self._graph, self._stream, self._pool, self._device = graph, stream, pool, device
        self._held = list(held)  # host buffers the graph's copy nodes read at each replay
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
        warmup: eager calls before the capture (at least 1: the first call compiles kernels
            and makes lazily built device state, such as optimizer moments and cached flags,
            which made inside a capture would be recorded uninitialised).

    Returns:
        A :class:`CapturedStep`; ``warmup_output`` is the last eager call's result.

    Raises:
        CaptureError: no GPU, or CUDA refused an operation during capture (host sync, a
            blocking copy, a call on the legacy default stream, ...). The warm-up calls have
            run by then, so a caller falling back to eager must not repeat them.
    """
    if int(warmup) < 1:
        raise ValueError(f"capture: warmup must be >= 1, got {warmup!r}; state that the step "
                         "makes on first use would be recorded uninitialised")
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
        stream = _streams.get(device.id)
        if stream is None:  # capture is illegal on the legacy default stream
            stream = _streams[device.id] = cupy.cuda.Stream(non_blocking=True)
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
        held: list = []
        with stream, cupy.cuda.using_allocator(pool.malloc):
            stream.begin_capture()
            token = cublas_gemm._recording.set(True)
            held_token = _keepalive.set(held)
            try:
                out = fn()
            except Exception as e:
                _abort_capture(stream)
                raise CaptureError(f"CUDA graph capture failed inside the step ({type(e).__name__}"
                                   f": {e}){_where(e)}; typical causes: .item()/.get()/float() "
                                   "on a GPU array, a synchronize, or a dynamic GradScaler",
                                   warm) from e
            finally:
                _keepalive.reset(held_token)
                cublas_gemm._recording.reset(token)
            try:
                graph = stream.end_capture()
            except Exception as e:
                raise CaptureError(f"CUDA graph capture was invalidated ({type(e).__name__}: "
                                   f"{e}); the step touched the legacy default stream or "
                                   "synchronised", warm) from e
        caller.wait_event(stream.record())
    return CapturedStep(graph, stream, pool, static_inputs, out, warm, device, held)


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
    """The Tensors of a step's output (a Tensor, or nested tuples/lists/dicts of them).

    A Tensor is recognised by its NumPy ``._data`` (the twin runs on NumPy): the backend sits
    below the Tensor type and does not import it."""
    if isinstance(getattr(out, "_data", None), np.ndarray):
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
        self._baked = None  # host kernel arguments of the first replay, as a graph holds them

    def replay(self, *inputs):
        _check_inputs(self.static_inputs, inputs)
        for dst, src in zip(self.static_inputs, inputs):
            if src is not dst:
                np.copyto(dst, src)
        tokens = (sync_debug.sync_mode.set(2), cublas_gemm._recording.set(True),
                  _host_values.set([]))
        try:
            out = self._fn()
            values = _host_values.get()
        except RuntimeError as e:
            if "device-to-host read" not in str(e):
                raise
            raise CaptureError(f"the step reads a device value on the host ({e}); a CUDA graph "
                               "cannot contain that") from e
        finally:
            _host_values.reset(tokens[2])
            cublas_gemm._recording.reset(tokens[1])
            sync_debug.sync_mode.reset(tokens[0])
        self._check_baked(values, out)
        if self.output is None:
            self.output = out
        else:
            static, new = _tensors(self.output), _tensors(out)
            if [(t.shape, t.dtype) for t in static] != [(t.shape, t.dtype) for t in new]:
                raise CaptureError("the step's outputs changed shape or dtype between replays; "
                                   "a CUDA graph writes the same output arrays every time")
            for dst, src in zip(static, new):
                np.copyto(dst._data, src._data)
        self.replays += 1
        return self.output

    def _check_baked(self, values, out) -> None:
        """Fail when a kernel's host arguments differ from the first replay's (the step has
        run eagerly by then: the error carries its output, as a failed capture does)."""
        if self._baked is None:
            self._baked = values
            return
        for (kernel, then), (_, now) in zip(self._baked, values):
            if then != now:
                raise CaptureError(
                    f"{kernel} takes host values {now} at replay {self.replays + 1} but took "
                    f"{then} when captured; a CUDA graph replays the captured values: keep "
                    "values that change per step on the device", out)
        if len(values) != len(self._baked):
            raise CaptureError(f"the step launched {len(values)} fused kernels, but "
                               f"{len(self._baked)} when captured; a CUDA graph replays the same "
                               "launches every time", out)


class _NumpyTwin:
    """CPU stand-in for :data:`CUDA_BACKEND` (tests): same protocol, NumPy arrays."""

    name = "numpy-twin"

    @staticmethod
    def capture(fn, static_inputs, *, warmup=1):
        if int(warmup) < 1:
            raise ValueError(f"capture: warmup must be >= 1, got {warmup!r}")
        static_inputs = list(static_inputs)
        for i, a in enumerate(static_inputs):
            if type(a) is not np.ndarray:
                raise CaptureError(f"capture (NumPy twin): static input {i} is a "
                                   f"{type(a).__name__}, not a NumPy array")
        warm = None
        token = cublas_gemm._recording.set(True)  # as in the real warm-up: see recording()
        try:
            for _ in range(warmup):
                warm = fn()
        finally:
            cublas_gemm._recording.reset(token)
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
