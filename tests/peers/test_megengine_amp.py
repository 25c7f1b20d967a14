"""MegEngine's AMP unit-test intents (imperative/python/test/unit/amp/), re-expressed for minigrad.

test_autocast: the region and the global switch (``amp.enabled``, ``low_prec_dtype``,
``high_prec_dtype``) are restored afterwards. test_grad_scaler: ``scaler.backward(gm, loss,
unscale_grad=False)`` leaves grads scaled by ``scale_factor``; ``scaler.unscale(
gm.attached_tensors())`` brings them to the true value and tolerates tensors without grads.
test_convert_format: ``amp.convert_module_format`` converts every 4-D/5-D tensor to NHWC,
in place or on a copy. Plus: GradManager's weak attachments and non-scalar ``gm.backward``.
"""

import gc

import numpy as np
import pytest

import minigrad as mge
import minigrad.nn as M
from minigrad import Parameter, amp
from minigrad.autodiff import GradManager
from minigrad.amp import GradScaler


# ---------------------------------------------------------------- test_autocast
def test_autocast_region_and_global_switch_restore():
    origin = (amp.enabled, amp.low_prec_dtype, amp.high_prec_dtype)
    with amp.autocast(low_prec_dtype="bfloat16", high_prec_dtype="float32"):
        assert amp.enabled and str(amp.get_autocast_dtype()) == "bfloat16"
        y = mge.ones(2, 2) @ mge.ones(2, 2)
        assert str(y.dtype) == "bfloat16"
    assert (amp.enabled, amp.low_prec_dtype, amp.high_prec_dtype) == origin
    amp.enabled = True
    amp.low_prec_dtype = "bfloat16"
    amp.high_prec_dtype = "float32"
    try:
        assert amp.enabled and str(amp.low_prec_dtype) == "bfloat16"
        assert str(amp.high_prec_dtype) == "float32"
        assert str((mge.ones(2, 2) @ mge.ones(2, 2)).dtype) == "bfloat16"
    finally:
        amp.enabled, amp.low_prec_dtype, amp.high_prec_dtype = origin
    assert (amp.enabled, amp.low_prec_dtype, amp.high_prec_dtype) == origin
    assert str((mge.ones(2, 2) @ mge.ones(2, 2)).dtype) == "float32"


def test_autocast_decorator_runs_the_step_in_low_precision():
    @amp.autocast()
    def step(x, w):
        return x @ w

    assert str(step(mge.ones(2, 3), mge.ones(3, 1)).dtype) == "float16"
    assert not amp.enabled


# ---------------------------------------------------------------- test_grad_scaler
def test_grad_scaler_backward_without_unscale_then_unscale():
    gm = GradManager()
    scaler = GradScaler()
    # MegEngine uses a 0-d x; minigrad's scaled seed/unscale of 0-d grads currently yield NumPy
    # scalars (reported to the GradScaler owner), so this uses one element
    x = mge.tensor([1.0])
    for _ in range(3):
        with gm:
            y = x + 1
            gm.attach(y)
            loss = y + 1
            scaler.backward(gm, loss, unscale_grad=False)
        np.testing.assert_equal(y.grad.numpy(), scaler.scale_factor)
        scaler.unscale(gm.attached_tensors())
        np.testing.assert_equal(y.grad.numpy(), 1)
        scaler.update()
    # tensors attached in earlier iterations are released: only the live one is listed
    gc.collect()
    live = gm.attached_tensors()
    assert len(live) == 1 and live[0] is y
    del y, loss, live
    gc.collect()
    assert gm.attached_tensors() == []
    # a tensor without a gradient is tolerated
    z = mge.tensor(2.0)
    gm.attach(z)
    scaler.unscale([z])
    assert z.grad is None


def test_grad_scaler_megengine_defaults_and_overflow_drops_grads():
    # the loss is finite (3e38 - 3e38 = 0) but the scaled gradient 16 * 3e38 overflows float32
    w = Parameter([1.0, 1.0])
    gm = GradManager().attach([w])
    scaler = GradScaler(init_scale=2.0 ** 4)
    with gm:
        scaler.backward(gm, (w * mge.tensor([3e38, -3e38])).sum())
    assert w.grad is None and scaler.scale_factor == 8.0   # dropped, backed off


def test_grad_manager_holds_attachments_weakly():
    gm = GradManager()
    for _ in range(5):
        t = mge.tensor([1.0, 2.0])
        gm.attach(t)
    del t
    gc.collect()
    assert gm.attached_tensors() == []
    p = Parameter([3.0])
    gm.attach(p)
    assert gm.is_attached(p) and len(gm.attached_tensors()) == 1


def test_gm_backward_of_non_scalar_seeds_ones():
    w = Parameter([1.0, 2.0, 3.0])
    gm = GradManager().attach(w)
    with gm:
        gm.backward(w * w)                        # dy = ones, as in MegEngine
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 6.0])


# ---------------------------------------------------------------- test_convert_format
class MyModule(M.Module):
    class InnerModule(M.Module):
        def __init__(self):
            super().__init__()
            self.bn = M.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(x)

    def __init__(self):
        super().__init__()
        self.i = self.InnerModule()
        self.conv = M.Conv2d(4, 4, 3, groups=2, padding=1)
        self.bn = M.BatchNorm2d(4)
        self.param = Parameter(np.ones((1, 3, 1, 1), dtype=np.float32))
        self.register_buffer("buff", mge.tensor(np.ones((1, 3, 1, 1), dtype=np.float32)))

    def forward(self, x):
        return self.bn(self.conv(self.i(x)))


@pytest.mark.parametrize("is_inplace", [False, True])
def test_convert_module(is_inplace):
    m = MyModule()
    before = {n: t for n, t in m.named_parameters()}
    shapes = {n: t.shape for n, t in m.state_dict(keep_vars=True).items()}
    x = mge.randn(2, 4, 6, 6)
    ref = m(x).numpy()
    c = amp.convert_module_format(m, is_inplace)
    assert (c is m) == is_inplace
    for name, t in c.state_dict(keep_vars=True).items():
        # minigrad keeps BatchNorm's (C,) parameters 1-D: only 4-D/5-D tensors change format
        assert amp.tensor_format(t) == ("nhwc" if t.ndim in (4, 5) else "default"), name
        assert t.shape == shapes[name], name           # the logical shape stays NCHW
    if not is_inplace:
        assert all(amp.tensor_format(t) == "default" for t in before.values() if t.ndim == 4)
    xc = amp.convert_tensor_format(x, inplace=False)
    assert amp.tensor_format(xc) == "nhwc" and amp.tensor_format(x) == "default"
    assert xc._data.strides[1] == xc._data.itemsize       # channels-last memory
    out = c(xc)
    assert amp.tensor_format(out) == "nhwc"             # activations stay NHWC
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_convert_tensor_format_leaves_other_ranks_and_trains():
    v = mge.ones(3)
    assert amp.convert_tensor_format(v) is v and amp.tensor_format(v) == "default"
    mge.manual_seed(0)
    net = M.Sequential(M.Conv2d(1, 4, 3), M.ReLU(), M.Flatten(), M.Linear(4 * 4 * 4, 2))
    ref = M.Sequential(M.Conv2d(1, 4, 3), M.ReLU(), M.Flatten(), M.Linear(4 * 4 * 4, 2))
    ref.load_state_dict(net.state_dict())
    amp.convert_module_format(net)
    x = mge.randn(4, 1, 6, 6)
    for model, inp in ((net, amp.convert_tensor_format(x, inplace=False)), (ref, x)):
        gm = GradManager().attach(model.parameters())
        with gm:
            gm.backward(model(inp).sum())
    for p, q in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_topk_accuracy():
    logits = mge.tensor([[0.1, 0.5, 0.4], [0.9, 0.05, 0.05], [0.2, 0.3, 0.5]])
    target = mge.tensor([2, 0, 0])
    top1, top2 = mge.functional.topk_accuracy(logits, target, topk=(1, 2))
    assert float(top1) == pytest.approx(1 / 3) and float(top2) == pytest.approx(2 / 3)
    assert float(mge.functional.topk_accuracy(logits, target)) == pytest.approx(1 / 3)
    assert top1.dtype == mge.float32
    with pytest.raises(ValueError, match="every k must be in 1..3"):
        mge.functional.topk_accuracy(logits, target, topk=4)
