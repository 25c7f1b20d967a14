"""``minigrad.dataset.transforms``: MindSpore's ``mindspore.dataset.transforms`` (also
``transforms.c_transforms`` / ``transforms.py_transforms``): ``TypeCast``, ``OneHot``,
``Compose``, each a callable on NumPy arrays.

Example:
    >>> import numpy as np
    >>> import minigrad as mg
    >>> from minigrad.dataset import transforms
    >>> transforms.TypeCast(mg.int32)(np.array([1, 2])).dtype.name
    'int32'
"""

from __future__ import annotations

import numpy as np

from ... import _backend as B

__all__ = ["TypeCast", "OneHot", "Compose"]


class TypeCast:
    """Cast to ``data_type`` (a minigrad dtype, a NumPy dtype or its name)."""

    def __init__(self, data_type):
        self.data_type = B.normalize_dtype(data_type)

    def __call__(self, x):
        return np.asarray(x).astype(self.data_type)


class OneHot:
    """Integer labels to one-hot rows of ``num_classes`` (with ``smoothing_rate``: the rows
    become ``1 - s + s / num_classes`` and ``s / num_classes``)."""

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0):
        self.num_classes = int(num_classes)
        self.smoothing_rate = float(smoothing_rate)

    def __call__(self, label):
        label = np.asarray(label)
        out = (label[..., None] == np.arange(self.num_classes)).astype(label.dtype)
        if self.smoothing_rate:
            s = self.smoothing_rate
            out = out.astype(np.float32) * (1 - s) + s / self.num_classes
        return out


class Compose:
    """Apply ``transforms`` in turn."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, *values):
        for t in self.transforms:
            res = t(*values)
            values = tuple(res) if isinstance(res, tuple) else (res,)
        return values[0] if len(values) == 1 else values
