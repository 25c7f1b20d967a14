"""Small built-in datasets.

``digits`` is scikit-learn's 8x8 handwritten digits (1797 images, bundled with scikit-learn, no
download), upsampled to 32x32 so LeNet-5 sees its classic input size.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["digits"]

_SPLIT_SEED = 0
_N_TEST = 360


def _bilinear_matrix(n_in: int, n_out: int) -> np.ndarray:
    """``(n_out, n_in)`` weights of align-corners bilinear interpolation along one axis."""
    pos = np.linspace(0.0, n_in - 1.0, n_out)
    lo = np.minimum(np.floor(pos).astype(np.int64), n_in - 2)
    frac = pos - lo
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    m[rows, lo] = 1.0 - frac
    m[rows, lo + 1] = frac
    return m


@functools.lru_cache(maxsize=1)
def _digits_arrays():
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise ImportError(
            "minigrad.data.datasets.digits needs scikit-learn (it ships the 8x8 digits images): "
            'install it with  pip install "minigrad[examples]"  (or pip install scikit-learn)'
        ) from e
    bunch = load_digits()
    small = bunch.images.astype(np.float64) / 16.0          # (N, 8, 8) in [0, 1]
    up = _bilinear_matrix(8, 32)
    # Separable bilinear upsampling as two small matrix products: up @ img @ up.T per image.
    images = np.einsum("ij,njk,lk->nil", up, small, up).astype(np.float32)
    images = np.clip(images, 0.0, 1.0)[:, None, :, :]        # (N, 1, 32, 32)
    labels = bunch.target.astype(np.int64)
    perm = np.random.default_rng(_SPLIT_SEED).permutation(len(labels))
    test, train = perm[:_N_TEST], perm[_N_TEST:]
    return {"train": (images[train], labels[train]), "test": (images[test], labels[test])}


def digits(split: str = "train"):
    """The scikit-learn digits as 32x32 images with a fixed train/test split.

    Args:
        split: ``"train"`` (1437 images) or ``"test"`` (360 images); the split is a fixed
            seeded permutation, the same on every machine.

    Returns:
        ``(images, labels)``: float32 ``(N, 1, 32, 32)`` in ``[0, 1]`` (8x8 originals upsampled
        bilinearly) and int64 ``(N,)`` in ``0..9``. Fresh copies: callers may modify them.

    Raises:
        ImportError: scikit-learn is not installed (``pip install "minigrad[examples]"``).
    """
    if split not in ("train", "test"):
        raise ValueError(f"digits: split must be 'train' or 'test', got {split!r}")
    images, labels = _digits_arrays()[split]
    return images.copy(), labels.copy()
