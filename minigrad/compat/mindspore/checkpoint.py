"""MindSpore's checkpoint functions: ``save_checkpoint(net, path)``, ``load_checkpoint(path)`` (a
dict of ``Parameter`` by name) and ``load_param_into_net(net, param_dict)``.

The file is minigrad's checkpoint (``mg.save``: safetensors, no pickle, written atomically),
holding the network's ``state_dict()`` (parameters and buffers such as BatchNorm's running
statistics, which MindSpore keeps as non-trainable Parameters) under their dotted names. As in
MindSpore, a name without the ``.ckpt`` suffix gets it (``.safetensors`` for
``format="safetensors"``). MindSpore's own ``.ckpt`` files (protobuf) are not read; encryption
(``enc_key``/``dec_key``) is refused.

Example:
    >>> import os, tempfile, minigrad as mg
    >>> net = mg.nn.Linear(2, 3)
    >>> path = os.path.join(tempfile.mkdtemp(), "net.ckpt")
    >>> mg.save_checkpoint(net, path)
    >>> params = mg.load_checkpoint(path)
    >>> sorted(params), type(params["weight"]).__name__
    (['bias', 'weight'], 'Parameter')
    >>> mg.load_param_into_net(mg.nn.Linear(2, 3), params)
    ([], [])
"""

from __future__ import annotations

import os

from ..._backend.dtypes import is_floating
from ...core.tensor import Parameter, Tensor
from ...serialization import load, save

__all__ = ["load_checkpoint", "load_param_into_net", "save_checkpoint"]

_SUFFIX = {"ckpt": ".ckpt", "safetensors": ".safetensors"}


def _path(name, fmt: str) -> str:
    if fmt not in _SUFFIX:
        raise ValueError(f"checkpoint format must be 'ckpt' or 'safetensors', got {fmt!r}")
    name = os.fspath(name)
    return name if name.endswith(_SUFFIX[fmt]) else name + _SUFFIX[fmt]


def _no_encryption(key, what):
    if key is not None:
        raise NotImplementedError(f"{what}: encrypted checkpoints are not supported")


def _entries(save_obj) -> dict:
    """name -> Tensor of a network, a dict, or MindSpore's list of {"name", "data"} dicts."""
    if callable(getattr(save_obj, "state_dict", None)):
        return dict(save_obj.state_dict(keep_vars=True))
    if isinstance(save_obj, dict):
        return dict(save_obj)
    if isinstance(save_obj, (list, tuple)):
        out = {}
        for item in save_obj:
            if not isinstance(item, dict) or {"name", "data"} - item.keys():
                raise TypeError("save_checkpoint: a list must hold {'name': ..., 'data': ...} "
                                f"dicts, got {item!r:.80}")
            out[item["name"]] = item["data"]
        return out
    raise TypeError(f"save_checkpoint: save_obj must be a network (Cell/Module), a dict or a "
                    f"list of {{'name', 'data'}} dicts, got {type(save_obj).__name__}")


def save_checkpoint(save_obj, ckpt_file_name, integrated_save=True, async_save=False,
                    append_dict=None, enc_key=None, enc_mode="AES-GCM", choice_func=None,
                    *, format="ckpt", **kwargs) -> None:  # noqa: A002 - MindSpore's name
    """``mindspore.save_checkpoint``: write the network's (or dict's) parameters, plus
    ``append_dict``'s numbers/tensors, keeping the names ``choice_func`` accepts."""
    _no_encryption(enc_key, "save_checkpoint")
    entries = _entries(save_obj)
    for k, v in (append_dict or {}).items():
        if k in entries:
            raise ValueError(f"save_checkpoint: append_dict key {k!r} is also a parameter name")
        entries[k] = v if isinstance(v, Tensor) else Tensor(v)
    if choice_func is not None:
        entries = {k: v for k, v in entries.items() if choice_func(k)}
    save({k: (v.detach() if isinstance(v, Tensor) and not isinstance(v, Parameter) else v)
          for k, v in entries.items()}, _path(ckpt_file_name, format))


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None,
                    dec_key=None, dec_mode="AES-GCM", specify_prefix=None, choice_func=None,
                    *, format="ckpt", **kwargs) -> dict:  # noqa: A002 - MindSpore's name
    """``mindspore.load_checkpoint``: ``{name: Parameter}`` read from the file (buffers and
    appended values as Parameters that do not require grad), skipping names that start with
    ``filter_prefix`` or that ``choice_func`` rejects; with ``net``, also loads it
    (:func:`load_param_into_net`)."""
    _no_encryption(dec_key, "load_checkpoint")
    path = os.fspath(ckpt_file_name)
    if not os.path.exists(path):
        path = _path(path, format)
    state = load(path)
    if not isinstance(state, dict):
        raise ValueError(f"load_checkpoint: {path!r} holds a {type(state).__name__}, not a "
                         "dict of parameters; write it with save_checkpoint")
    prefixes = (filter_prefix,) if isinstance(filter_prefix, str) else tuple(filter_prefix or ())
    params = {}
    for name, value in state.items():
        if prefixes and str(name).startswith(prefixes):
            continue
        if choice_func is not None and not choice_func(name):
            continue
        if not isinstance(value, Parameter):
            value = Parameter(value, requires_grad=False) if isinstance(value, Tensor) else value
        if isinstance(value, Parameter):
            value.name = name
            if not is_floating(value.dtype):
                value.requires_grad = False
        params[name] = value
    if net is not None:
        load_param_into_net(net, params, strict_load)
    return params


def load_param_into_net(net, parameter_dict: dict, strict_load: bool = False, **kwargs):
    """``mindspore.load_param_into_net``: copy the values of ``parameter_dict`` into ``net``'s
    parameters and buffers of the same names, in place.

    Returns:
        ``(param_not_load, ckpt_not_load)``: the network's names the dict did not have, and the
        dict's names the network does not have. A shape mismatch raises ``RuntimeError``.
    """
    if not isinstance(parameter_dict, dict):
        raise TypeError(f"load_param_into_net: parameter_dict must be a dict, got "
                        f"{type(parameter_dict).__name__}")
    own = net.state_dict()
    usable = {k: v for k, v in parameter_dict.items() if k in own}
    net.load_state_dict(usable, strict=False)
    return ([k for k in own if k not in parameter_dict],
            [k for k in parameter_dict if k not in own])
