"""Op-table entries for ``minigrad/functional/loss.py`` and the ``F.nn`` loss spellings.

Losses compute their gradient on arrays (``*_backward`` Functions): no second derivative
(``gradgrad`` stays False; double backward raises NotImplementedError naming the op).
"""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, ints, pos, rand



def _prob(*shape, seed=0):
    return rand(*shape, low=0.1, high=0.9, seed=seed)


def _log_prob(*shape, seed=0):
    return np.asarray(np.log(_prob(*shape, seed=seed)))


def _pointwise(name, target=rand, input_=rand, amp="fp32", kwargs=None, **kw):
    """An ``op(input, target, reduction=...)`` loss; the target is not differentiated."""
    kwargs = kwargs or {}
    samples = (Sample((input_(3, 4), target(3, 4, seed=1)), kwargs, const=(1,)),
               Sample((input_(3, 4), target(3, 4, seed=1)), dict(kwargs, reduction="sum"),
                      const=(1,), name="sum"),
               Sample((input_(3, 4), target(3, 4, seed=1)), dict(kwargs, reduction="none"),
                      const=(1,), name="none"),
               Sample((input_(), target(seed=1)), kwargs, const=(1,), name="0d"),
               Sample((input_(0, 4), target(0, 4, seed=1)), dict(kwargs, reduction="sum"),
                      const=(1,), name="empty"))
    errors = (ErrorInput((input_(2, 3), target(3, 2)), ValueError, (name, "(2, 3)", "(3, 2)"),
                         name="shapes"),
              ErrorInput((input_(2, 3), target(2, 3)), ValueError, (name, "reduction"),
                         {"reduction": "avg"}, name="reduction"))
    return OpInfo(name, "loss", samples, amp, errors=errors, **kw)


def _ce(name, policy_name=None, **kw):
    return OpInfo(name, "loss", (
        Sample((rand(4, 5), ints(5, 4))),
        Sample((rand(4, 5), ints(5, 4)), {"reduction": "sum", "label_smoothing": 0.1},
               name="smoothing"),
        Sample((rand(2, 5, 3), ints(5, 2, 3)), {"reduction": "none"}, name="spatial"),
        Sample((rand(4, 5), _prob(4, 5, seed=1)), const=(1,), name="soft_targets"),
        Sample((rand(0, 5), ints(5, 0)), {"reduction": "sum"}, name="empty")), "fp32",
        policy_name=policy_name,
        errors=(ErrorInput((rand(2, 3), np.array([0, 5])), ValueError,
                           ("cross_entropy", "[0, 3)"), name="target_range"),),
        nonfinite=(NonFinite((np.array([[1.0, NAN]]), np.array([0])), NAN),), **kw)


__all__ = ["OPS"]

OPS = [
    _pointwise("mse_loss"),
    _pointwise("l1_loss", kwargs=None),
    _pointwise("smooth_l1_loss", kwargs={"beta": 0.5}),
    _pointwise("kl_div", target=_prob, input_=_log_prob),
    _pointwise("binary_cross_entropy_with_logits", target=_prob),
    OpInfo("binary_cross_entropy", "loss", (
        Sample((_prob(3, 4), _prob(3, 4, seed=1)), const=(1,)),
        Sample((_prob(3, 4), _prob(3, 4, seed=1), pos(3, 4, seed=2)), {"reduction": "sum"},
               const=(1, 2), name="weight"),
        Sample((_prob(), _prob(seed=1)), const=(1,), name="0d"),
        Sample((_prob(0, 4), _prob(0, 4, seed=1)), {"reduction": "sum"}, const=(1,),
               name="empty")), "fp32_warn",
        errors=(ErrorInput((np.full(2, 0.5), np.array([0.0, 2.0])), ValueError,
                           ("binary_cross_entropy", "target"), name="target_range"),)),
    _ce("cross_entropy"),
    OpInfo("nll_loss", "loss", (
        Sample((rand(4, 5), ints(5, 4))),
        Sample((rand(4, 5), ints(5, 4), pos(5)), {"reduction": "sum"}, const=(2,),
               name="weight"),
        Sample((rand(0, 5), ints(5, 0)), {"reduction": "sum"}, name="empty")), "fp32",
        errors=(ErrorInput((rand(2, 3), np.array([0, 3])), ValueError,
                           ("nll_loss", "[0, 3)"), name="target_range"),)),
    OpInfo("cosine_similarity", "loss", (
        Sample((rand(3, 4), rand(3, 4, seed=1))),
        Sample((rand(3, 4), rand(4, seed=1)), {"axis": -1}, name="broadcast"),
        Sample((rand(0, 4), rand(0, 4, seed=1)), name="empty")), "fp32",
        errors=(ErrorInput((rand(2, 3), rand(4)), ValueError,
                           ("cosine_similarity", "(2, 3)", "(4,)"), name="shapes"),)),
    # F.nn spellings (MegEngine): thin adapters over the ops above.
    _ce("nn.cross_entropy", policy_name="cross_entropy"),
    OpInfo("nn.binary_cross_entropy", "loss", (
        Sample((rand(3, 4), _prob(3, 4, seed=1)), const=(1,)),
        Sample((_prob(3, 4), _prob(3, 4, seed=1)), {"with_logits": False}, const=(1,),
               name="probabilities")), "fp32",
        policy_name="binary_cross_entropy_with_logits"),
    OpInfo("nn.square_loss", "loss", (Sample((rand(3, 4), rand(3, 4, seed=1)), const=(1,)),),
           "fp32", policy_name="mse_loss"),
]


def _log_softmax_of(*shape, seed=0):
    z = rand(*shape, low=-2.0, high=2.0, seed=seed)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


_CTC_TARGETS = np.array([[1, 3, 3, 2], [2, 2, 4, 1], [3, 1, 2, 4]])
_CTC = (_log_softmax_of(12, 3, 5), _CTC_TARGETS, np.array([12, 9, 7]), np.array([4, 3, 0]))

OPS += [
    OpInfo("ctc_loss", "loss", (
        Sample(_CTC, const=()),
        Sample(_CTC, {"reduction": "sum"}, name="sum"),
        Sample(_CTC, {"reduction": "none"}, name="none"),
        Sample((_CTC[0], np.array([1, 3, 3, 2, 2, 2, 4]), _CTC[2], _CTC[3]), name="concatenated"),
        Sample((_log_softmax_of(6, 4), np.array([3, 1]), np.array(6), np.array(2)),
               name="unbatched"),
        Sample((_log_softmax_of(3, 2, 5), np.array([[1, 1], [2, 3]]), np.array([3, 3]),
                np.array([2, 2])), {"zero_infinity": True, "reduction": "none"},
               name="impossible"),  # 1, 1 needs a blank between: 3 frames hold it; [2, 3] too
        Sample((_log_softmax_of(4, 2, 5), np.array([[1], [2]]), np.array([4, 4]),
                np.array([1, 1])), {"blank": 4}, name="blank")), "fp32",
        errors=(ErrorInput((_CTC[0], np.zeros((3, 4), np.int64), _CTC[2], _CTC[3]), ValueError,
                           ("ctc_loss", "blank"), name="blank_target"),
                ErrorInput((_CTC[0], _CTC_TARGETS, np.array([13, 9, 7]), _CTC[3]), ValueError,
                           ("ctc_loss", "input_lengths"), name="too_long"),
                ErrorInput((_CTC[0].astype(np.int64), _CTC_TARGETS, _CTC[2], _CTC[3]),
                           ValueError, ("ctc_loss", "floating"), name="integer"))),
]
