"""The op table: one declarative entry per public op of ``minigrad.functional``.

Each :class:`OpInfo` says how to call the op (:class:`Sample` inputs: ordinary, broadcast,
empty, 0-d...), which calls must fail and how (:class:`ErrorInput`), what an inf/NaN input gives
(:class:`NonFinite`), the AMP category it must run in under ``autocast`` and whether its second
derivative is supported. ``tests/test_op_table.py`` runs one parametrised suite over the table
and fails when a public op has no entry, so adding an op is: one ``Function`` class, one row in
``minigrad/precision/policy.py``, one entry in ``minigrad/testing/ops/<family>.py``.

Inputs are NumPy arrays (float64 for floating inputs): floating arrays are the differentiable
inputs unless their position is listed in ``Sample.const``; integer arrays and Python values
are passed through unchanged. A list or tuple of arrays (``concat``'s input, ``lstm_cell``'s
``(h, c)``) counts as one argument.
Known deviations from the expected (PyTorch-like) behaviour are declared with ``xfail=reason``;
the runner turns them into ``pytest.mark.xfail(strict=True)``, so a fixed bug whose mark
stays fails the suite.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field

import numpy as np

from .. import functional as F
from ..core.creation import tensor
from ..precision.policy import Category, as_category

__all__ = ["FAMILIES", "INF", "NAN", "NON_OPS", "ErrorInput", "NonFinite", "OpInfo", "Sample",
           "bind", "ints", "op_table", "pos", "public_ops", "rand"]

# Names exported by a family's ``__all__`` that are not ops (none today). Every exclusion
# carries its reason; the coverage test reads this dict.
NON_OPS: dict = {}

# Op families that must declare at least one error input (one file each under functional/).
FAMILIES = ("activation", "attention", "cast", "conv", "conv_nd", "distance", "dropout",
            "elementwise", "loss", "loss_margin", "matmul", "normalization", "pooling",
            "recurrent", "reduction", "sampling", "scan", "shape", "sorting", "sparse",
            "transcendental", "upsample")


@dataclass(frozen=True)
class Sample:
    """One call of the op: ``op(*args, **kwargs)``.

    Attributes:
        args: positional inputs (NumPy arrays, lists of arrays, Python values).
        kwargs: keyword options (never differentiated).
        name: short id used in test names (``exp-broadcast``).
        const: positions of floating arrays that are not differentiated (targets, running
            statistics); they are passed as float64 Tensors without grad.
        grad: False when the float64 gradient check does not apply to this sample.
        expect: expected output value (array-like) where it is not obvious; NaN compares equal.
        xfail: reason this sample is known to fail (every test).
        xfail_grad: reason only its gradient is known to be wrong (gradcheck, non-contiguous).
    """

    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = "base"
    const: tuple = ()
    grad: bool = True
    expect: object = None
    xfail: str | None = None
    xfail_grad: str | None = None


@dataclass(frozen=True)
class ErrorInput:
    """A call that must raise ``exc`` (a type or tuple of types) whose message contains
    ``match`` (a substring, or a tuple of substrings that must all appear)."""

    args: tuple
    exc: type
    match: str | tuple
    kwargs: dict = field(default_factory=dict)
    name: str = "error"
    xfail: str | None = None


@dataclass(frozen=True)
class NonFinite:
    """inf/NaN propagation: ``op(*args, **kwargs)`` equals ``expect`` (NaN == NaN)."""

    args: tuple
    expect: object
    kwargs: dict = field(default_factory=dict)
    name: str = "nonfinite"
    xfail: str | None = None


@dataclass(frozen=True)
class OpInfo:
    """Everything the suite needs to know about one public op.

    Attributes:
        name: the public name: ``"relu"`` is ``F.relu``, ``"nn.cross_entropy"`` is
            ``F.nn.cross_entropy``.
        family: the ``minigrad/functional/<family>.py`` it lives in.
        samples: the calls every test runs (gradcheck, forward, non-contiguous).
        amp: expected ``amp.policy`` category of its ``Function`` (``policy_name``): a
            ``Category``, or its string (``"fp32"``), which is validated and stored as the
            ``Category``; None when the op dispatches no Function of its own (``amp_note`` says
            why).
        policy_name: the ``Function.name`` / policy row when it differs from ``name``.
        errors: calls that must raise.
        nonfinite: inf/NaN propagation checks.
        differentiable: False for ops with integer/bool outputs (argmax, comparisons).
        gradgrad: the op supports a second derivative (checked with ``gradgradcheck``).
        ref: NumPy reference ``ref(*args, **kwargs)`` for the forward value of every sample.
        tol: keyword arguments for ``gradcheck`` (``atol``, ``rtol``, ``eps``).
        amp_note: why ``amp`` is None.
        xfail: test name (``"forward"``, ``"gradcheck"``, ``"gradgrad"``, ``"noncontiguous"``,
            ``"autocast"``, ``"nonfinite"``, ``"error"``) -> reason.
        fn: the callable, for an op not reachable as ``F.<name>`` (an example, a draft).
    """

    name: str
    family: str
    samples: tuple
    amp: Category | None
    policy_name: str | None = None
    errors: tuple = ()
    nonfinite: tuple = ()
    differentiable: bool = True
    gradgrad: bool = False
    ref: object = None
    tol: dict = field(default_factory=dict)
    amp_note: str = ""
    xfail: dict = field(default_factory=dict)
    fn: object = None

    def __post_init__(self):
        if self.amp is not None:  # one encoding: the policy's Category (ValueError if unknown)
            object.__setattr__(self, "amp", as_category(self.amp))

    @property
    def op(self):
        if self.fn is not None:
            return self.fn
        obj = F
        for part in self.name.split("."):
            obj = getattr(obj, part)
        return obj

    @property
    def row(self) -> str:
        """The policy-table row (``Function.name``) of this op."""
        return self.policy_name or self.name.split(".")[-1]


def public_ops() -> set:
    """Every public op: each family module's ``__all__`` plus ``F.nn.__all__`` (as ``nn.<name>``).

    ``F.nn`` re-exports family ops under the same names; only the names it defines itself
    (MegEngine spellings such as ``nn.cross_entropy``, ``nn.square_loss``) are separate ops.
    Also picks up families added later (any public ``minigrad/functional/*.py``).
    """
    names: set = set()
    for mod in pkgutil.iter_modules(F.__path__):
        if mod.name.startswith("_") or mod.name == "nn":
            continue
        m = importlib.import_module(f"minigrad.functional.{mod.name}")
        names.update(getattr(m, "__all__", ()))
    names.update(importlib.import_module("minigrad.core.cast").__all__)  # the cast family
    for n in F.nn.__all__:
        own = getattr(F.nn, n)
        if getattr(F, n, None) is not own:
            names.add(f"nn.{n}")
    return names - set(NON_OPS)


def op_table() -> dict:
    """Public name -> :class:`OpInfo`, from the ``OPS`` lists of ``minigrad/testing/ops/*.py``."""
    from . import ops

    table: dict = {}
    for mod in pkgutil.iter_modules(ops.__path__):
        if mod.name.startswith("_"):
            continue
        m = importlib.import_module(f"{ops.__name__}.{mod.name}")
        for info in m.OPS:
            if info.name in table:
                raise ValueError(f"op table: {info.name!r} declared twice")
            table[info.name] = info
    return table


def _is_float(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def bind(op, sample: Sample, convert=None):
    """Split a sample into ``(fn, arrays)``: ``fn(*tensors)`` calls ``op`` on ``arrays``.

    ``arrays`` are the differentiable (floating, non-const) inputs in order; every other array
    becomes a Tensor built by ``convert(array)`` (default: a Tensor over a copy, so ops that
    update buffers in place, batch_norm's running statistics, never change the table).
    """
    convert = convert or (lambda a: tensor(np.array(a)))
    arrays: list = []
    plan: list = []  # per argument: ("diff", k) / ("seq", list|tuple, [slots]) / ("value", v)

    def slot(a, const):
        if _is_float(a) and not const:
            arrays.append(a)
            return ("diff", len(arrays) - 1)
        if isinstance(a, np.ndarray):
            return ("value", convert(a))
        return ("value", a)

    for i, a in enumerate(sample.args):
        if isinstance(a, (list, tuple)) and any(isinstance(x, np.ndarray) for x in a):
            plan.append(("seq", type(a), [slot(x, i in sample.const) for x in a]))
        else:
            plan.append(slot(a, i in sample.const))

    def build(s, tensors):
        if s[0] == "seq":
            return s[1](build(x, tensors) for x in s[2])
        return tensors[s[1]] if s[0] == "diff" else s[1]

    def fn(*tensors):
        return op(*[build(p, tensors) for p in plan], **sample.kwargs)

    return fn, arrays


# Shared input makers: deterministic per shape so the table reads as data.
def rand(*shape, low=-1.0, high=1.0, seed=0):
    """float64 uniform in [low, high)."""
    return np.random.default_rng(seed + 7 * len(shape)).uniform(low, high, shape)


def pos(*shape, seed=0):
    """float64 in [0.5, 2): safe for log, sqrt, division."""
    return rand(*shape, low=0.5, high=2.0, seed=seed)


def ints(high, *shape, seed=0):
    """int64 in [0, high)."""
    return np.random.default_rng(seed + 11).integers(0, high, shape).astype(np.int64)


NAN, INF = float("nan"), float("inf")
