"""``minigrad.hub``: MegEngine/PyTorch-style ``hub.load`` over the offline model zoo.

There is no network access: names resolve to builders in ``minigrad.models``, and pretrained
weights come from a local checkpoint (``pretrained="path/to/ckpt"``) read by ``minigrad.load``.
"""

from __future__ import annotations

import os

__all__ = ["help", "list_models", "load"]

_BUILTIN_OWNERS = ("minigrad", "megengine", "pytorch", "torchvision")


def _zoo(repo: str) -> dict:
    from .models import ZOO

    base = repo.split(":", 1)[0].rstrip("/")  # "megengine/models:v1" -> "megengine/models"
    if base == "models" or base.endswith("/models"):
        return ZOO
    raise ValueError(
        f"hub: unknown repo {repo!r}. minigrad's hub is offline and serves only its built-in "
        f"zoo: use 'minigrad/models' (also accepted: any 'owner/models', e.g. "
        f"{', '.join(o + '/models' for o in _BUILTIN_OWNERS[1:])})")


def list_models(repo: str = "minigrad/models") -> list:
    """Names ``load`` accepts for ``repo``."""
    return sorted(_zoo(repo))


def help(repo: str, name: str) -> str:
    """The docstring of model ``name``."""
    return _resolve(repo, name).__doc__ or ""


def _resolve(repo, name):
    zoo = _zoo(repo)
    key = name.lower().replace("-", "").replace("_", "")
    aliases = {"lenet": "lenet5"}
    key = aliases.get(key, key)
    if key not in zoo:
        raise ValueError(f"hub: no model {name!r} in {repo!r}; available: "
                         f"{', '.join(sorted(zoo))}")
    return zoo[key]


def load(repo: str, name: str, pretrained=False, **kwargs):
    """Build model ``name`` from the zoo, optionally loading weights from a local checkpoint.

    Args:
        repo: "minigrad/models" (MegEngine-style "megengine/models" and an optional ":tag" are
            accepted too).
        name: a zoo entry, e.g. "resnet18", "lenet5", "mlp".
        pretrained: False for random initialisation, or the path of a checkpoint written by
            ``minigrad.save(model.state_dict(), path)``. ``True`` is an error: there is no
            download.
        **kwargs: forwarded to the builder (``num_classes=10``, ``small_input=True``...).

    Returns:
        The Module (in training mode).

    Example:
        >>> from minigrad import hub
        >>> net = hub.load("minigrad/models", "lenet5", num_classes=10)
    """
    builder = _resolve(repo, name)
    if pretrained is True:
        raise ValueError(
            f"hub.load({name!r}, pretrained=True): minigrad's hub does not download weights. "
            "Train or convert a checkpoint yourself, save it with "
            "minigrad.save(model.state_dict(), path), and pass pretrained=path")
    model = builder(**kwargs)
    if pretrained:
        path = os.fspath(pretrained)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"hub.load({name!r}): checkpoint {path!r} not found")
        from .serialization import load as _load_checkpoint

        state = _load_checkpoint(path)
        if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
            state = state["state_dict"]  # a training checkpoint bundle
        model.load_state_dict(state)
    return model
