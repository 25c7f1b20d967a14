"""fp32 master weights for models whose parameters are stored in float16/bfloat16 (O2, O3).

A float16 parameter cannot absorb small updates: ``w - lr * g`` rounds back to ``w`` once the
update is below half an fp16 ulp, so a pure-fp16 model stops learning long before an fp32 one.
``master_weights(optimizer)`` keeps a float32 copy of every low-precision parameter and lets the
optimizer update the copies:

* the optimizer's parameter groups are rebound to the fp32 masters (same group dicts, so
  hyperparameters and lr schedulers are shared), and its state is float32;
* before the masters are read (``param_groups``, ``step``) the model's gradients are cast into
  ``master.grad`` (float32), once per new gradient object -- so ``GradScaler.unscale_`` and
  gradient clipping see float32 gradients, and gradient accumulation keeps working;
* after each update the masters are rounded into the model's parameters in place (the
  Parameter objects and arrays stay the same) with a ``_version`` bump, which invalidates AMP
  weight-cast caches;
* a model parameter changed behind the optimizer's back (``model.load_state_dict``) is noticed
  through its ``_version`` and its master refreshed from it before the next update;
* ``state_dict()`` is the wrapped optimizer's plus ``"master_weights"`` (index -> fp32 array),
  so a checkpoint resumes with the exact fp32 values, not the rounded fp16 ones.

Use the returned object as the optimizer (``step``, ``zero_grad``, ``GradScaler.step(opt)``).
Clip gradients on ``opt.master_params()`` (after ``scaler.unscale_(opt)``): those are the
gradients the update uses.
Parameters that already are float32/float64 are optimized directly (no copy).
"""

from __future__ import annotations

from .. import _backend as B
from ..core.tensor import Parameter, Tensor
from ..optimizer.optimizer import run_closure

__all__ = ["MasterWeightOptimizer", "master_weights"]

_LOW = (B.float16, B.bfloat16)


class MasterWeightOptimizer:
    """An optimizer wrapper that updates fp32 master copies of low-precision parameters.

    Args:
        optimizer: a minigrad optimizer over the model's parameters.
        fp32_values: optional ``{param: float32 array}`` to start masters from (the values
            before the model was cast to float16, so nothing is lost to the cast).
    """

    def __init__(self, optimizer, *, fp32_values=None):
        if isinstance(optimizer, MasterWeightOptimizer):
            raise TypeError("master_weights: the optimizer already keeps fp32 master weights")
        if not hasattr(optimizer, "param_groups") or not hasattr(optimizer, "state"):
            raise TypeError(f"master_weights expects a minigrad optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        self._pairs: list = []       # [model_param, master, synced_grad, version]
        fp32_values = {id(k): v for k, v in (fp32_values or {}).items()}
        for group in optimizer.param_groups:
            group["params"] = [self._adopt(p, fp32_values) for p in group["params"]]
        # The optimizer de-duplicates parameters by id; it now holds the masters.
        if hasattr(optimizer, "_param_ids"):
            optimizer._param_ids = {id(p) for g in optimizer.param_groups for p in g["params"]}

    def _adopt(self, p, fp32_values):
        if not isinstance(p, Tensor) or p.dtype not in _LOW:
            return p
        src = fp32_values.get(id(p))
        data = (src._data if isinstance(src, Tensor) else src) if src is not None else p._data
        master = Parameter(B.to_device(data, p.device).astype(B.float32, copy=True),
                           device=p.device)
        st = self.optimizer.state.pop(p, None)
        if st is not None:  # state gathered before wrapping follows the master
            self.optimizer.state[master] = {k: v.astype(B.float32) if hasattr(v, "astype")
                                            and v.dtype in _LOW else v for k, v in st.items()}
        self._pairs.append([p, master, None, p._version])
        return master

    # ------------------------------------------------------------------ the optimizer API
    @property
    def param_groups(self) -> list:
        """The wrapped optimizer's groups (holding the masters), with gradients synced."""
        self.sync_grads()
        return self.optimizer.param_groups

    @property
    def state(self) -> dict:
        return self.optimizer.state

    @property
    def defaults(self) -> dict:
        return self.optimizer.defaults

    def master_params(self) -> list:
        """The fp32 master Parameters, in parameter order."""
        return [m for _, m, _, _ in self._pairs]

    def model_params(self) -> list:
        """The low-precision model Parameters the masters mirror."""
        return [p for p, _, _, _ in self._pairs]

    def sync_grads(self) -> None:
        """Cast each model gradient not seen yet into its master's ``.grad`` (float32)."""
        for pair in self._pairs:
            p, m, synced, _ = pair
            g = p.grad
            if g is synced:
                continue
            # zero_grad on the model alone drops the master's gradient too
            m.grad = None if g is None else Tensor._make(g._data.astype(B.float32), False, None, 0)
            pair[2] = g

    def _refresh_stale(self) -> None:
        for pair in self._pairs:
            p, m, _, version = pair
            if p._version != version:  # changed outside the optimizer: the model wins
                m._data = p._data.astype(B.float32)
                m._version += 1
                pair[3] = p._version

    def step(self, closure=None):
        """Update the masters with the wrapped optimizer, then round them into the model;
        returns ``self``, or the loss of PyTorch's ``closure`` when one is given (it runs
        first, its gradients reach the masters)."""
        loss = run_closure(self, closure)
        self.sync_grads()
        self._refresh_stale()
        self.optimizer.step()
        for pair in self._pairs:
            p, m, _, _ = pair
            if m.grad is None:  # not updated (no gradient, or dropped by a scaler)
                continue
            xp = B.get_array_module(p._data)
            xp.copyto(p._data, m._data, casting="unsafe")
            p._version += 1
            pair[3] = p._version
        return self if closure is None else loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of the masters and of the model parameters."""
        self.optimizer.zero_grad(set_to_none)
        for pair in self._pairs:
            p = pair[0]
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                g = p.grad._data
                p.grad = Tensor._make(B.get_array_module(g).zeros_like(g), False, None, 0)
            pair[2] = p.grad

    def clear_grad(self):
        """MegEngine spelling of ``zero_grad()``; returns self."""
        self.zero_grad(True)
        return self

    def add_param_group(self, group: dict) -> None:
        """Add a group; its low-precision parameters get masters too."""
        group = dict(group)
        params = group.get("params", [])
        params = [params] if isinstance(params, Tensor) else list(params)
        group["params"] = [self._adopt(p, {}) for p in params]
        self.optimizer.add_param_group(group)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """The wrapped optimizer's state dict plus ``"master_weights"``: index -> fp32 array."""
        sd = self.optimizer.state_dict()
        index = {}
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
        sd["master_weights"] = {index[id(m)]: m._data for _, m, _, _ in self._pairs}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the wrapped optimizer and the masters; the model gets the rounded masters.

        A state dict without ``"master_weights"`` (saved by a plain optimizer) restores the
        optimizer state and refreshes the masters from the model's current values.
        """
        sd = dict(state_dict)
        masters = sd.pop("master_weights", None)
        self.optimizer.load_state_dict(sd)
        by_index = {}
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                by_index.setdefault(len(by_index), p)
        pos = {id(m): i for i, m in enumerate(self.master_params())}
        for idx, arr in (masters or {}).items():
            m = by_index.get(int(idx))
            if m is None or id(m) not in pos:
                raise ValueError(f"master_weights.load_state_dict: entry {idx} does not match a "
                                 "master weight of this optimizer (different model?)")
            arr = arr._data if isinstance(arr, Tensor) else arr
            if tuple(arr.shape) != m.shape:
                raise ValueError(f"master_weights.load_state_dict: master {idx} has shape "
                                 f"{tuple(arr.shape)}, the parameter has {m.shape}")
            m._data = B.to_device(arr, m.device).astype(B.float32, copy=True)
            m._version += 1
            pair = self._pairs[pos[id(m)]]
            p = pair[0]
            B.get_array_module(p._data).copyto(p._data, m._data, casting="unsafe")
            p._version += 1
            pair[3] = p._version
        if masters is None:
            for pair in self._pairs:
                pair[3] = -1  # force a refresh from the model at the next step
            self._refresh_stale()

    def __getattr__(self, name):
        # Everything else (lr, custom methods) is the wrapped optimizer's.
        if name == "optimizer":
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def __repr__(self) -> str:
        return (f"master_weights({len(self._pairs)} fp32 masters) over "
                + repr(self.optimizer))


def master_weights(optimizer, *, fp32_values=None) -> MasterWeightOptimizer:
    """Give ``optimizer`` fp32 master copies of its float16/bfloat16 parameters.

    Args:
        optimizer: a minigrad optimizer (SGD, Adam, ...) over a low-precision model.
        fp32_values: optional ``{param: float32 array}`` of exact starting values (used by
            ``build_train_network``, which snapshots the weights before casting the model).

    Returns:
        A ``MasterWeightOptimizer``; use it in place of ``optimizer``.

    Example:
        >>> import minigrad as mg, minigrad.nn as nn
        >>> from minigrad import amp
        >>> from minigrad.optimizer import SGD
        >>> model = nn.Linear(4, 2).half()
        >>> opt = amp.master_weights(SGD(model.parameters(), lr=0.1))
        >>> [str(p.dtype) for p in opt.master_params()]
        ['float32', 'float32']
    """
    return MasterWeightOptimizer(optimizer, fp32_values=fp32_values)
