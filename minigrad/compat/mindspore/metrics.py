"""MindSpore's ``nn.metrics`` (``Accuracy``, ``Loss``): ``clear()``, ``update(...)``,
``eval()``, as ``Model.eval`` drives them."""

from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor

__all__ = ["Accuracy", "Loss", "Metric"]


def _numpy(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


class Metric:
    """Base of the metrics: ``clear``, ``update(*outputs)``, ``eval``."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        raise NotImplementedError

    def update(self, *inputs) -> None:
        raise NotImplementedError

    def eval(self):
        raise NotImplementedError


class Accuracy(Metric):
    """The fraction of samples whose largest logit is the label (``eval_type="classification"``;
    labels as class indices or one-hot)."""

    def __init__(self, eval_type: str = "classification"):
        if eval_type != "classification":
            raise ValueError(f"Accuracy: eval_type {eval_type!r} is not supported; minigrad has "
                             "'classification'")
        super().__init__()

    def clear(self) -> None:
        self._correct, self._total = 0, 0

    def update(self, logits, labels) -> None:
        logits, labels = _numpy(logits), _numpy(labels)
        if labels.ndim == logits.ndim:
            labels = labels.argmax(axis=-1)
        self._correct += int((logits.argmax(axis=-1) == labels.reshape(-1)).sum())
        self._total += int(labels.size)

    def eval(self) -> float:
        if self._total == 0:
            raise RuntimeError("Accuracy.eval: no samples; call update() first")
        return self._correct / self._total


class Loss(Metric):
    """The mean of the losses given to ``update``."""

    def clear(self) -> None:
        self._sum, self._count = 0.0, 0

    def update(self, loss, *_) -> None:
        self._sum += float(np.mean(_numpy(loss)))
        self._count += 1

    def eval(self) -> float:
        if self._count == 0:
            raise RuntimeError("Loss.eval: no losses; call update() first")
        return self._sum / self._count
