"""The autocast policy table: one row per op, op name -> category (invariant 2).

The op name is ``Function.name``, which is also the name of the ``minigrad.functional`` function.
A category is a :class:`Category` member, the one encoding of it everywhere: the table, the
dispatch fast path (``autocast.AutocastPolicy``), the module policy (``precision.module``) and
the op table's ``OpInfo.amp``. Members are ``str`` (``Category.LOWER == "lower"``), so the public
API takes and compares plain strings too. Categories:

* ``LOWER`` (``"lower"``): run in the autocast dtype (float16 / bfloat16). Matmul-like products
  and convolutions, which accumulate in float32 anyway (invariant 4), so only their I/O is narrow.
* ``FP32`` (``"fp32"``): run in float32. Ops whose result overflows or loses too much in float16:
  exp/log families, pow, norms and reductions (whose *output* must hold a float32-sized range),
  softmax and every loss.
* ``PROMOTE`` (``"promote"``): multi-input ops; floating inputs are cast to the widest floating
  input dtype (float16 with bfloat16 widens to float32), so mixed graphs never fail with
  "expected Half".
* ``LOWER_INPUT`` (``"lower_input"``): batch_norm. The data input runs in the autocast dtype,
  every other floating input (running statistics, weight, bias) in float32, and the op computes
  statistics in float32.
* ``FP32_WARN`` (``"fp32_warn"``): binary_cross_entropy on probabilities. PyTorch refuses it under
  autocast; minigrad runs it in float32 and says so once.
* ``PASSTHROUGH`` (``"passthrough"``): runs in whatever dtype its inputs have (the default for
  unlisted ops; every op of ``minigrad.functional`` still gets an explicit row so the table
  documents all of them).

Decisions that differ between the peers:

* ``div`` is ``"promote"`` (PyTorch) rather than MegEngine's always-float32 true division:
  dividing by a count or a norm is everywhere in fp16 graphs and an fp32 round trip per division
  would double their memory traffic. The risky divisions (normalisations) live inside ops that
  are float32 as a whole (layer_norm, softmax, losses).
* ``erf`` is ``"fp32"``: it is computed with a polynomial approximation whose coefficients need
  float32 precision; it is cheap and elementwise. ``gelu`` itself stays pass-through.
* ``mean`` is ``"fp32"`` (MegEngine); ``max``/``min``/``argmax`` are exact in any dtype and pass
  through.

Overrides: ``set(name, category)`` changes a row for every autocast region entered afterwards;
``autocast(fp32_ops=..., lower_ops=...)`` overrides rows inside one region only.
"""

from __future__ import annotations

import enum

from ..core.function import Function

__all__ = ["CATEGORIES", "Category", "as_category", "check_op_name", "functional_op_names", "get",
           "missing_rows", "reset", "set", "set_category", "table"]


class Category(str, enum.Enum):
    """An op's AMP category (see the module docstring for what each one does).

    A ``str`` enum: ``Category.LOWER == "lower"``, it hashes, prints and formats as its value,
    and ``Category("lower") is Category.LOWER``. Inside minigrad members are compared by
    identity (``cat is Category.LOWER``), which is what the dispatch fast path does per op.
    """

    __str__ = str.__str__        # "lower", not "Category.LOWER", on every Python version
    __format__ = str.__format__  # f"{cat}" likewise (Python 3.12 changed the Enum default)

    LOWER = "lower"
    FP32 = "fp32"
    PROMOTE = "promote"
    LOWER_INPUT = "lower_input"
    FP32_WARN = "fp32_warn"
    PASSTHROUGH = "passthrough"


CATEGORIES = tuple(Category)  # in table order: lower, fp32, promote, lower_input, fp32_warn, ...

# Ops the policy must never touch: autocast inserts them itself (casting "cast" would recurse).
_NEVER_CAST = frozenset({"cast", "to_device", "clone"})


def _rows(category: Category, names: str) -> dict:
    return {n: category for n in names.split()}


_DEFAULT: dict = {}
_DEFAULT.update(_rows(Category.LOWER, """
    matmul mm bmm mv linear einsum conv1d conv2d conv3d
    conv_transpose1d conv_transpose2d conv_transpose3d prelu lstm_cell gru_cell rnn_tanh_cell
    rnn_relu_cell scaled_dot_product_attention
"""))
_DEFAULT.update(_rows(Category.FP32, """
    exp exp2 log log2 log10 log1p expm1 pow sqrt rsqrt reciprocal erf erfinv
    acos asin cosh sinh tan softplus
    softmax log_softmax softmin logsumexp layer_norm group_norm instance_norm local_response_norm
    norm normalize sum mean var std cumsum cumprod prod cosine_similarity dist pdist cdist renorm
    interpolate upsample upsample_nearest upsample_bilinear
    cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss kl_div
    binary_cross_entropy_with_logits poisson_nll_loss cosine_embedding_loss
    hinge_embedding_loss margin_ranking_loss soft_margin_loss multi_margin_loss
    multilabel_margin_loss triplet_margin_loss ctc_loss
    pairwise_distance rms_norm gaussian_nll_loss multilabel_soft_margin_loss
"""))
_DEFAULT.update(_rows(Category.PROMOTE, """
    add sub mul div maximum minimum where concat stack scatter_add dot vdot tensordot cross
    atan2 addcmul addcdiv bilinear grid_sample index_put index_add lerp hypot fmod remainder
    copysign
"""))
# AMP_REFERENCE section 1 names added with their ops (issue 15); the other names of that list
# already have rows above. Composite ops (addmm, convolution, the upsample_* modes...) are one
# Function each (functional._composite), so their row governs the whole op.
_DEFAULT.update(_rows(Category.LOWER, """
    addmm addmv addr addbmm baddbmm chain_matmul linalg_multi_dot convolution
"""))
_DEFAULT.update(_rows(Category.FP32, """
    upsample_linear upsample_bicubic upsample_trilinear vector_norm matrix_norm
"""))
_DEFAULT.update(_rows(Category.LOWER_INPUT, "batch_norm"))
_DEFAULT.update(_rows(Category.FP32_WARN, "binary_cross_entropy"))
# PyTorch's spellings of these ops are aliases that run (and are governed) as the op they
# call: clamp as clip, unsqueeze as expand_dims, chunk as split, masked_fill as where; an
# in-place ``x[i] = v`` (setitem) is a write outside the dispatch. They have no rows.
_DEFAULT.update(_rows(Category.PASSTHROUGH, """
    cast to_device clone detach
    neg abs sign relu relu6 leaky_relu elu selu celu gelu silu mish hardswish hardsigmoid
    hardtanh sigmoid logsigmoid tanh sin cos atan floor ceil round trunc clip square
    softsign tanhshrink softshrink hardshrink threshold glu
    pixel_unshuffle alpha_dropout
    dropout max min argmax argmin sort argsort topk kthvalue median mode cummax cummin
    equal not_equal less less_equal greater greater_equal logical_not logical_and logical_or
    logical_xor isnan isinf isfinite
    reshape flatten transpose swapaxes broadcast_to expand_dims squeeze getitem
    split pad flip roll repeat tile gather index_select take_along_axis
    one_hot embedding max_pool1d max_pool2d avg_pool1d avg_pool2d
    adaptive_avg_pool2d adaptive_max_pool2d pixel_shuffle unfold fold permute max_pool2d_gather
    conv2d_backward_data conv2d_backward_filter
"""))

_overrides: dict = {}
_version = 0  # bumped by set_category/reset so regions can cache their merged table
_merged_cache: dict = {}


def as_category(value) -> Category:
    """``value`` (a :class:`Category` or its string) as a :class:`Category`.

    Raises:
        ValueError: not a category; the message lists the valid ones.
    """
    try:
        return Category(value)
    except ValueError:
        raise ValueError(f"amp.policy: unknown category {value!r}; valid categories are "
                         f"{[c.value for c in Category]}") from None


def _function_classes():
    """Every Function subclass defined so far (user Functions included), depth first."""
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        yield cls


def check_op_name(name: str, where: str = "amp.policy") -> None:
    """Raise ValueError, naming the closest op names, if no op is called ``name``.

    An op is known when it has a row or is the ``name`` of a defined ``Function`` subclass, so a
    user-defined Function can be overridden once its class exists. Rows are checked first: the
    common case costs one dict lookup.
    """
    if name in _DEFAULT or name in _overrides:
        return
    known = {cls.name for cls in _function_classes()} | _DEFAULT.keys()
    if name in known:
        return
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
        "see amp.policy.table() for the op names"
    raise ValueError(f"{where}: no op is named {name!r}; {hint} (a user-defined Function is "
                     "known once its class is defined)")


def get(name: str) -> Category:
    """The category of op ``name`` (``Category.PASSTHROUGH`` for unlisted ops).

    Example:
        >>> from minigrad.amp import policy
        >>> policy.get("matmul") is policy.Category.LOWER, policy.get("softmax") == "fp32"
        (True, True)
    """
    cat = _overrides.get(name)
    if cat is None:
        cat = _DEFAULT.get(name, Category.PASSTHROUGH)
    return cat


def set_category(name: str, category: Category | str) -> None:
    """Override the row of op ``name`` globally (for autocast regions entered afterwards).

    Public as ``amp.policy.set(name, category)``.

    Args:
        name: ``Function.name`` of the op (e.g. ``"matmul"``).
        category: a :class:`Category` or its string (``"fp32"``).

    Raises:
        ValueError: unknown category, unknown op name (the message names the closest ones), or
            an op autocast must never cast (``cast``).
    """
    global _version
    cat = as_category(category)
    if not isinstance(name, str):
        raise TypeError(f"amp.policy.set: op name must be a string, got {type(name).__name__}")
    check_op_name(name, "amp.policy.set")
    if name in _NEVER_CAST and cat is not Category.PASSTHROUGH:
        raise ValueError(f"amp.policy.set: op {name!r} is inserted by autocast itself and must "
                         "stay 'passthrough'")
    _overrides[name] = cat
    _version += 1
    _merged_cache.clear()
def reset() -> None:
    """Drop every global override made with ``set``."""
    global _version
    _overrides.clear()
    _version += 1
    _merged_cache.clear()


def table() -> dict:
    """A copy of the effective table (defaults plus global overrides): op name -> Category."""
    out = dict(_DEFAULT)
    out.update(_overrides)
    return out


def merged_table(fp32_ops=(), lower_ops=()) -> dict:
    """Op name -> Category for one region: the table with the region's ``fp32_ops`` and
    ``lower_ops`` applied, pass-through rows and ``_NEVER_CAST`` ops omitted (a lookup miss
    means pass-through).

    Memoised per (global version, overrides) so entering a region in a training loop is cheap.
    """
    key = (_version, fp32_ops, lower_ops)
    merged = _merged_cache.get(key)
    if merged is None:
        eff = table()
        for n in fp32_ops:
            eff[n] = Category.FP32
        for n in lower_ops:
            eff[n] = Category.LOWER
        merged = {n: c for n, c in eff.items()
                  if c is not Category.PASSTHROUGH and n not in _NEVER_CAST}
        if len(_merged_cache) > 64:
            _merged_cache.clear()
        _merged_cache[key] = merged
    return merged


def functional_op_names() -> dict:
    """``Function.name`` -> class name for every Function subclass under ``minigrad.functional``."""

    found = {}
    for cls in _function_classes():
        if cls.name == "function":  # an abstract helper base without a name of its own
            continue
        if cls.__module__.startswith(("minigrad.functional", "minigrad.nn")):
            found.setdefault(cls.name, cls.__qualname__)
    return found


def missing_rows() -> list:
    """Names of ops defined in minigrad that have no explicit row in the table (sorted)."""
    eff = table()
    # "*_backward" Functions only run inside the backward engine, which clears the policy
    # (invariant 5): they are pass-through by construction and need no row.
    return sorted(n for n in functional_op_names()
                  if n not in eff and not n.endswith("_backward"))


# The public spelling is ``amp.policy.set(name, category)`` (as ``amp.policy.get``/``reset``).
# Bound last, and nothing in this module calls the builtin ``set`` (set literals and
# comprehensions only), so the shadowing is confined to the module's public namespace.
set = set_category  # noqa: A001
