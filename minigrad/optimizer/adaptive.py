"""Per-coordinate adaptive step sizes: Adagrad, Adadelta and RMSprop (PyTorch update rules).

Each keeps PyTorch's state names (``sum``; ``square_avg``/``acc_delta``; ``square_avg``,
``momentum_buffer``, ``grad_avg``), so state dicts line up. One body for NumPy and CuPy
(``_elementwise``).
"""

from __future__ import annotations

from .. import _backend as B
from ._elementwise import frames, lerp
from .adam import _advance, count_step
from .optimizer import Optimizer, check_switches, state_dtype

__all__ = ["Adagrad", "Adadelta", "RMSprop"]


def _check(name, **values):
    for key, value in values.items():
        if value < 0:
            raise ValueError(f"{name}: invalid {key} {value} (must be >= 0)")


class Adagrad(Optimizer):
    """Adagrad: ``sum += g * g``; ``p -= clr * g / (sqrt(sum) + eps)`` with
    ``clr = lr / (1 + (t - 1) * lr_decay)`` and ``g = grad + weight_decay * p``.

    As PyTorch's, the state (``step`` 0, ``sum`` filled with ``initial_accumulator_value``)
    exists from construction on, for every parameter, stepped or not (so state dicts line up);
    parameters of a group added later get theirs too (PyTorch's step fails on them). Unlike
    PyTorch, whose ``__init__`` fills every ``sum`` with the constructor's value, a group's own
    ``initial_accumulator_value`` is used for its parameters, as PyTorch documents for group
    options.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        lr_decay: learning-rate decay per step.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: the starting value of ``sum``.
        eps: added to the denominator.
        maximize: ascend instead of descend.
        foreach, differentiable, fused: PyTorch's implementation switches, accepted (they
            change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        _check("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
               initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_switches("Adagrad", foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def add_param_group(self, group: dict) -> None:
        """Add a parameter group, creating its parameters' state (see the class docstring)."""
        super().add_param_group(group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self.state[p] = _adagrad_state(p, group["initial_accumulator_value"])

    def _update_group(self, group: dict, found_inf=None) -> None:
        for f in frames(group, found_inf):
            p = f.p
            st = self.state.get(p)
            if st is None:  # a state dict loaded without this parameter's entry
                st = self.state[p] = _adagrad_state(p, group["initial_accumulator_value"])
            t = count_step(st, p._data, found_inf)
            clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
            g = f.g
            total = st["sum"] + g * g
            std = f.xp.sqrt(total) + f.c.type(group["eps"])
            f.store(st["sum"], total)
            f.commit(f.w + f.scalar(-clr) * g / std)


def _adagrad_state(p, initial_accumulator_value: float) -> dict:
    data = p._data
    with B.device_scope(data):
        return {"step": 0, "sum": B.get_array_module(data).full(
            data.shape, initial_accumulator_value, state_dtype(data.dtype))}


class Adadelta(Optimizer):
    """Adadelta: ``v = rho * v + (1 - rho) * g * g``; ``d = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * d * d``; ``p -= lr * d``.

    Args:
        params: Parameters or parameter-group dicts.
        lr: the factor applied to the step (PyTorch's default 1.0).
        rho: decay of the running averages.
        eps: added inside the square roots.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend instead of descend.
        foreach, capturable, differentiable: PyTorch's implementation switches, accepted
            (they change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        _check("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: invalid rho {rho} (must be in [0, 1])")
        check_switches("Adadelta", foreach=foreach, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        for f in frames(group, found_inf):
            p = f.p
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "square_avg": f.zeros(),
                                      "acc_delta": f.zeros()}
            _advance(st, p._data, found_inf)
            rho, eps, c, sqrt = group["rho"], f.c.type(group["eps"]), f.c, f.xp.sqrt
            g = f.g
            v = st["square_avg"] * c.type(rho) + c.type(1 - rho) * g * g
            delta = sqrt(st["acc_delta"] + eps) / sqrt(v + eps) * g
            u = st["acc_delta"] * c.type(rho) + c.type(1 - rho) * delta * delta
            f.store(st["square_avg"], v)
            f.store(st["acc_delta"], u)
            f.commit(f.w + c.type(-group["lr"]) * delta)


class RMSprop(Optimizer):
    """RMSprop: ``v = alpha * v + (1 - alpha) * g * g``; ``avg = sqrt(v) + eps`` (centered:
    ``sqrt(v - mean(g) ** 2) + eps`` with ``mean(g)`` a running average); with momentum
    ``buf = momentum * buf + g / avg; p -= lr * buf``, else ``p -= lr * g / avg``.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        alpha: smoothing constant of the squared-gradient average.
        eps: added to the denominator.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalise by the variance estimate instead of the second moment.
        maximize: ascend instead of descend.
        foreach, capturable, differentiable: PyTorch's implementation switches, accepted
            (they change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        _check("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
               momentum=momentum)
        check_switches("RMSprop", foreach=foreach, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        for f in frames(group, found_inf):
            p = f.p
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "square_avg": f.zeros()}
            if group["momentum"] > 0 and "momentum_buffer" not in st:
                st["momentum_buffer"] = f.zeros()
            if group["centered"] and "grad_avg" not in st:
                st["grad_avg"] = f.zeros()
            _advance(st, p._data, found_inf)
            alpha, c, g = group["alpha"], f.c, f.g
            v = st["square_avg"] * c.type(alpha) + c.type(1 - alpha) * g * g
            f.store(st["square_avg"], v)
            if group["centered"]:
                ga = st["grad_avg"]
                ga = lerp(ga, g, 1 - alpha, c)
                f.store(st["grad_avg"], ga)
                avg = f.xp.sqrt(v + c.type(-1) * ga * ga)
            else:
                avg = f.xp.sqrt(v)
            avg = avg + c.type(group["eps"])
            lr = c.type(-group["lr"])
            if group["momentum"] > 0:
                buf = st["momentum_buffer"] * c.type(group["momentum"]) + g / avg
                f.store(st["momentum_buffer"], buf)
                f.commit(f.w + lr * buf)
            else:
                f.commit(f.w + lr * g / avg)
