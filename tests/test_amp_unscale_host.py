"""GradScaler's host path on NumPy, whose per-step bookkeeping is kept small: the found-inf check
(large gradients one by one, small ones together per dtype), the scalar-loss check, the in-place
split and the MegEngine repeat check make the decisions the plain array code makes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import amp
from minigrad._backend import fused
from minigrad._backend.dtypes import bfloat16
from minigrad.amp import _unscale, grad_scaler
from minigrad.autodiff import GradManager
from minigrad.optimizer import SGD

N = fused._CHECK_TOGETHER
DTYPES = [np.float32, np.float64, np.float16, bfloat16]
SIZES = [(), (0,), (1,), (3, 4), (N,), (N + 1,), (2, N)]   # both sides of the threshold


def _arrays(draw_specs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for d, shape, special in draw_specs:
        a = np.asarray(rng.standard_normal(shape).astype(DTYPES[d]))
        if special is not None and a.size:
            a.reshape(-1)[rng.integers(a.size)] = special
        out.append(a)
    return out


SPECS = st.lists(st.tuples(st.sampled_from(range(len(DTYPES))), st.sampled_from(SIZES),
                           st.sampled_from([None, None, np.inf, -np.inf, np.nan])),
                 min_size=0, max_size=7)


@settings(max_examples=80, deadline=None)
@given(SPECS, st.integers(0, 2 ** 31))
def test_all_finite_is_isfinite_all(specs, seed):
    arrays = _arrays(specs, seed)
    assert fused._all_finite(arrays) == all(np.isfinite(a).all() for a in arrays)


@settings(max_examples=60, deadline=None)
@given(SPECS, st.sampled_from([2.0 ** -16, 1.0 / 3.0, 2.0 ** 20, 1e-30]),
       st.integers(0, 2 ** 31))
def test_unscale_flags_match_a_per_array_check(specs, inv, seed):
    # large and small gradients, every float dtype, an inf/NaN anywhere (or made by overflow)
    grads = _arrays(specs, seed)
    with np.errstate(over="ignore", invalid="ignore"):
        expect = [(g.astype(np.float32) * np.float32(inv)).astype(g.dtype)
                  if g.dtype in (np.float16, bfloat16) else g * g.dtype.type(inv)
                  for g in grads]
    bad = not all(np.isfinite(e).all() for e in expect)
    out, found = fused.unscale_and_check(grads, inv)
    assert int(found) == bad and found.dtype == np.int32 and found.shape == ()
    flag = np.full((), 7, np.int32)                      # stale: overwritten with 0 or 1
    work = [g.copy() for g in grads]
    fused.unscale_inplace_and_check(work, inv, flag)
    assert int(flag) == bad
    for w, o, e in zip(work, out, expect):
        assert w.tobytes() == o.tobytes() == np.asarray(e).tobytes()


@pytest.mark.parametrize("loss", [
    np.array(1.5, np.float32), np.array(np.nan, np.float32), np.array(-np.inf, np.float16),
    np.array(np.inf, bfloat16), np.array(3, np.int64), np.array([1.0, np.nan]),
    np.array([[2.0]], np.float32), np.array(np.nan, np.complex64)])
def test_loss_check_is_isfinite_all(loss):
    with np.errstate(invalid="ignore"):
        assert grad_scaler._finite(loss) is bool(np.isfinite(loss).all())


@pytest.mark.parametrize("sync_free", [False, True])
def test_nonfinite_loss_of_each_kind_keeps_the_scale(sync_free):
    # growth_interval 1: a clean iteration doubles the scale, one with an inf/NaN loss keeps it
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.5)
    scaler = amp.GradScaler(init_scale=4.0, growth_interval=1, sync_free=sync_free,
                            max_nonfinite_losses=0)
    for loss, bad in [(mg.tensor(np.nan), True), (mg.tensor([1.0, np.inf]), True),
                      (mg.tensor(2.0, dtype=mg.float16), False),
                      (mg.tensor(np.inf, dtype=mg.bfloat16), True),
                      (mg.tensor([[0.5]]), False)]:
        before = scaler.get_scale()
        scaler.scale(loss)
        p.grad = mg.tensor(np.full(2, 4.0, np.float32))
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == (before if bad else 2 * before), loss
    assert scaler.get_scale() == 16.0 and scaler.skipped_steps == 0


def test_inplace_split_with_repeated_and_borrowed_arrays():
    own = np.ones(3, np.float32)
    twice = np.ones(2, np.float32)
    borrowed = np.frombuffer(bytearray(8), np.float32)    # writable, but memory it does not own
    grads = [twice, own, twice, borrowed, np.ones(4, np.float32)]
    inplace, copied = _unscale.inplace_safe(grads, [False] * 5)
    assert inplace == [1, 4] and copied == [0, 2, 3]
    out, found = _unscale.unscale_arrays(grads, 0.5, [False] * 5,
                                         lambda a: np.zeros((), np.int32))
    assert out[1] is own and out[4] is grads[4] and int(found) == 0
    assert out[0] is not twice and out[2] is not twice and twice.tolist() == [1.0, 1.0]
    assert out[0].tolist() == out[2].tolist() == [0.5, 0.5]


def test_all_in_place_returns_the_same_arrays_with_the_reused_flag():
    grads = [np.full(3, 4.0, np.float32), np.full(N + 1, 4.0)]
    flag = np.zeros((), np.int32)
    out, found = _unscale.unscale_arrays(grads, 0.25, [False, False], lambda a: flag)
    assert out is grads and found is flag and int(flag) == 0
    assert grads[0].tolist() == [1.0] * 3 and (grads[1] == 1.0).all()


def test_megengine_repeat_check_only_after_a_first_unscale():
    w = mg.Parameter(np.ones(3, np.float32))
    v = mg.Parameter(np.ones(2, np.float32))
    gm = GradManager().attach([w, v])
    scaler = amp.GradScaler(init_scale=4.0)
    with gm:
        scaler.backward(gm, (w * 2.0).sum() + (v * 3.0).sum(), unscale_grad=False)
    assert not scaler._unscaled
    scaler.unscale([w])
    assert scaler._unscaled
    scaler.unscale([v])                                   # another tensor: allowed
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="already unscaled since the last update"):
        scaler.unscale([v, w])
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])   # nothing unscaled twice
    scaler.update()
    assert not scaler._unscaled
