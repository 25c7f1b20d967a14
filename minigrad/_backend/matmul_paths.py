"""Which kernel ran each matmul, recorded only while someone asks (tests, benchmarks).

``with matmul_paths.record() as paths: ...`` collects the path of every matmul issued in the
block (``"cpu"``, ``"cpu-emulated-fp32-accumulate"``, ``"cublas-gemmex-f32"``, ...). Outside a
``record`` block a matmul pays one ContextVar lookup.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

__all__ = ["is_single_element_product", "note", "record"]

_recording: ContextVar = ContextVar("minigrad_matmul_paths", default=None)


def note(path: str) -> None:
    """Record that a matmul ran through ``path`` (a no-op outside ``record``)."""
    paths = _recording.get()
    if paths is not None:
        paths.append(path)


@contextlib.contextmanager
def record():
    """Collect the path of every matmul issued inside the block into the yielded list."""
    paths: list = []
    token = _recording.set(paths)
    try:
        yield paths
    finally:
        _recording.reset(token)


def is_single_element_product(a_shape, b_shape) -> bool:
    """True when ``a @ b`` of at most 2-D operands is one inner product (a 0-d, (1,), (1, 1)
    result): vector . vector, row @ column.

    CuPy sends such fp16/bf16 products to a reduction kernel that accumulates in the output
    dtype instead of cuBLAS GemmEx (AMP_REFERENCE section 3), so the GPU path upcasts them.
    """
    if len(a_shape) > 2 or len(b_shape) > 2 or not a_shape or not b_shape:
        return False
    rows = 1 if len(a_shape) == 1 else a_shape[0]
    cols = 1 if len(b_shape) == 1 else b_shape[1]
    return rows == 1 and cols == 1
