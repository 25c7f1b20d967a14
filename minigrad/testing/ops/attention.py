"""Op-table entries for ``minigrad/functional/attention.py``.

The gradient is computed on arrays (a ``*_backward`` Function): no second derivative, so
``gradgrad`` stays False (double backward raises NotImplementedError naming the op).
"""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, rand


def _sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale or 1 / np.sqrt(q.shape[-1]))
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v


__all__ = ["OPS"]

OPS = [
    OpInfo("scaled_dot_product_attention", "attention", (
        Sample((rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 2, seed=2))),
        Sample((rand(1, 2, 3, 4), rand(1, 2, 3, 4, seed=1), rand(1, 2, 3, 4, seed=2)),
               {"is_causal": True}, name="causal"),
        Sample((rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 2, seed=2), rand(3, 5, seed=3)),
               {"scale": 0.3}, const=(3,), name="additive_mask"),
        Sample((rand(0, 3, 4), rand(0, 5, 4, seed=1), rand(0, 5, 2, seed=2)), name="empty")),
        "lower", ref=_sdpa_ref,
        errors=(ErrorInput((rand(2, 3, 4), rand(2, 3, 5), rand(2, 3, 4)), ValueError,
                           ("scaled_dot_product_attention", "k_shape=(2, 3, 5)"),
                           name="shapes"),)),
]
