"""MindSpore's high-level ``Model``: ``Model(network, loss_fn, optimizer, metrics,
amp_level=...)`` with ``train(epoch, dataset, callbacks)``, ``eval(dataset)`` and
``predict(*inputs)``.

The training step is ``amp.build_train_network`` at ``amp_level`` (with ``loss_scale_manager``
and ``keep_batchnorm_fp32`` as given). Data comes from the dataset's ``create_tuple_iterator()``
(any iterable of ``(data, label)`` tuples works too). ``dataset_sink_mode=True`` trains the
same steps as False: minigrad has no device-side data sink.
"""

from __future__ import annotations

import types

from ...autodiff import no_grad
from .callback import Callback, RunContext
from .o_levels import build_train_network

__all__ = ["Model"]


def _batches(dataset):
    make = getattr(dataset, "create_tuple_iterator", None)
    return make() if make is not None else iter(dataset)


def _size(dataset):
    size = getattr(dataset, "get_dataset_size", None)
    if size is not None:
        return size()
    return len(dataset) if hasattr(dataset, "__len__") else 0


def _callbacks(callbacks) -> list:
    if callbacks is None:
        return []
    callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for cb in callbacks:
        if not isinstance(cb, Callback):
            raise TypeError(f"Model.train: callbacks must be Callback objects, got "
                            f"{type(cb).__name__}")
    return callbacks


class Model:
    """Train and evaluate ``network`` (see the module docstring)."""

    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        unknown = set(kwargs) - {"loss_scale_manager", "keep_batchnorm_fp32"}
        if unknown:
            raise TypeError(f"Model: unsupported arguments {sorted(unknown)}")
        if eval_network is not None or eval_indexes is not None:
            raise NotImplementedError("Model(eval_network=, eval_indexes=) is not supported; "
                                      "evaluation runs network and loss_fn")
        self._network, self._loss_fn, self._optimizer = network, loss_fn, optimizer
        self._metrics = dict(metrics or {})
        self._train_network = None
        if optimizer is not None:
            self._train_network = build_train_network(
                network, optimizer, loss_fn, level=amp_level, boost_level=boost_level,
                loss_scale_manager=kwargs.get("loss_scale_manager"),
                keep_batchnorm_fp32=kwargs.get("keep_batchnorm_fp32"))

    @property
    def train_network(self):
        return self._train_network

    def train(self, epoch: int, train_dataset, callbacks=None, dataset_sink_mode: bool = False,
              sink_size: int = -1, initial_epoch: int = 0):
        """Run ``epoch - initial_epoch`` passes over ``train_dataset``."""
        if self._train_network is None:
            raise RuntimeError("Model.train: the Model was built without an optimizer")
        if sink_size != -1:
            raise NotImplementedError("Model.train(sink_size=): minigrad has no data sink; "
                                      "leave sink_size=-1 (each epoch is the whole dataset)")
        callbacks = _callbacks(callbacks)
        cb = types.SimpleNamespace(
            network=self._network, train_network=self._train_network,
            optimizer=self._optimizer, loss_fn=self._loss_fn, train_dataset=train_dataset,
            epoch_num=epoch, batch_num=_size(train_dataset), cur_epoch_num=initial_epoch,
            cur_step_num=0, net_outputs=None, mode="train", dataset_sink_mode=dataset_sink_mode)
        context = RunContext(cb)
        self._train_network.set_train(True)
        for c in callbacks:
            c.on_train_begin(context)
        for e in range(initial_epoch, epoch):
            cb.cur_epoch_num = e + 1
            for c in callbacks:
                c.on_train_epoch_begin(context)
            for batch in _batches(train_dataset):
                cb.cur_step_num += 1
                for c in callbacks:
                    c.on_train_step_begin(context)
                cb.net_outputs = self._train_network(*batch)
                for c in callbacks:
                    c.on_train_step_end(context)
                if context.get_stop_requested():
                    break
            for c in callbacks:
                c.on_train_epoch_end(context)
            if context.get_stop_requested():
                break
        for c in callbacks:
            c.on_train_end(context)

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode: bool = False) -> dict:
        """``{metric name: value}`` over ``valid_dataset``; the ``"loss"`` metric uses
        ``loss_fn``."""
        if not self._metrics:
            raise ValueError("Model.eval: the Model was built without metrics")
        for metric in self._metrics.values():
            metric.clear()
        was_training = self._network.training
        self._network.set_train(False)
        try:
            with no_grad():
                for data, label in _batches(valid_dataset):
                    logits = self._network(data)
                    for name, metric in self._metrics.items():
                        if name.lower() == "loss":
                            metric.update(self._loss_fn(logits, label))
                        else:
                            metric.update(logits, label)
        finally:
            self._network.set_train(was_training)
        return {name: metric.eval() for name, metric in self._metrics.items()}

    def predict(self, *inputs):
        """The network's output in evaluation mode, without gradients."""
        was_training = self._network.training
        self._network.set_train(False)
        try:
            with no_grad():
                return self._network(*inputs)
        finally:
            self._network.set_train(was_training)
