"""Shape and indexing ops: NumPy/PyTorch semantics, gradients, round-trip properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.functional as F
from minigrad.testing import gradcheck


def _t(a, device="cpu"):
    return mg.tensor(a, dtype=mg.float64, device=device)


def test_views_forward_and_grad(device, rng):
    a = rng.standard_normal((2, 3, 4))
    t = _t(a, device)
    cases = [
        (lambda x: F.reshape(x, (4, -1)), lambda v: v.reshape(4, -1)),
        (lambda x: F.transpose(x), lambda v: v.transpose()),
        (lambda x: F.transpose(x, (1, 2, 0)), lambda v: v.transpose(1, 2, 0)),
        (lambda x: F.permute(x, (2, 0, 1)), lambda v: v.transpose(2, 0, 1)),
        (lambda x: F.swapaxes(x, 0, 2), lambda v: v.swapaxes(0, 2)),
        (lambda x: F.broadcast_to(x[:, :1], (5, 2, 3, 4)),
         lambda v: np.broadcast_to(v[:, :1], (5, 2, 3, 4))),
        (lambda x: F.expand_dims(x, 1), lambda v: np.expand_dims(v, 1)),
        (lambda x: F.expand_dims(x, (0, -1)), lambda v: np.expand_dims(v, (0, -1))),
        (lambda x: F.squeeze(x[:, :1], 1), lambda v: v[:, 0]),
        (lambda x: F.squeeze(x[:1, :1]), lambda v: v[0, 0]),
        (lambda x: F.flatten(x), lambda v: v.reshape(-1)),
        (lambda x: F.flatten(x, 1), lambda v: v.reshape(2, -1)),
        (lambda x: F.flatten(x, 0, 1), lambda v: v.reshape(6, 4)),
    ]
    for fn, ref in cases:
        np.testing.assert_array_equal(fn(t).numpy(), ref(a))
        assert gradcheck(fn, [a], device=device)


def test_tensor_methods_use_these_signatures(rng):
    a = rng.standard_normal((2, 1, 3))
    t = _t(a)
    assert t.flatten(1).shape == (2, 3)
    assert t.squeeze(1).shape == (2, 3) and t.squeeze().shape == (2, 3)
    assert t.unsqueeze(0).shape == (1, 2, 1, 3)
    assert t.permute(2, 0, 1).shape == (3, 2, 1) and t.permute((2, 0, 1)).shape == (3, 2, 1)
    assert t.transpose(0, 2).shape == (3, 1, 2) and t.transpose().shape == (3, 1, 2)
    assert t.reshape(3, 2).shape == (3, 2) and t.T.shape == (3, 1, 2)
    # PyTorch's method leaves a named axis of another size; MegEngine's F.squeeze raises
    assert t.squeeze(0).shape == (2, 1, 3) and t.squeeze((0, 1)).shape == (2, 3)
    with pytest.raises(ValueError, match="squeeze"):
        F.squeeze(t, 0)
    with pytest.raises(ValueError, match="reshape"):
        t.reshape(4, 2)


def test_concat_stack_split(device, rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    np.testing.assert_array_equal(F.concat([_t(a, device), _t(b, device)], 1).numpy(),
                                  np.concatenate([a, b], 1))
    assert gradcheck(lambda x, y: F.concat([x, y], axis=-1), [a, b], device=device)
    c = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(F.stack([_t(a), _t(c)], 1).numpy(), np.stack([a, c], 1))
    assert gradcheck(lambda x, y: F.stack([x, y], axis=2), [a, c], device=device)
    parts = F.split(_t(b, device), [1, 3], axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 2), (2, 2)]
    assert len(F.split(_t(b), 5, axis=1)) == 5
    assert gradcheck(lambda x: F.split(x, [1, 3], 1), [b], device=device)
    # only some parts used: the unused ones get zero gradient
    assert gradcheck(lambda x: F.split(x, 5, 1)[3] * 2, [b], device=device)
    with pytest.raises(ValueError, match="split"):
        F.split(_t(b), 2, axis=1)
    with pytest.raises(ValueError, match="concat"):
        F.concat([_t(a), _t(b)], 0)
    with pytest.raises(ValueError, match="stack"):
        F.stack([_t(a), _t(b)])


INDICES = [
    (1,), (slice(None), 2), (Ellipsis, 1), (None, slice(1, 3)), (slice(None, None, -1),),
    (np.array([2, 0, 2]),), (slice(None), np.array([[0, 1], [1, 1]])),
    (np.array([0, 1]), slice(None), np.array([3, 3])), ([1, 1, 0],),
    (np.array([True, False, True]),), (-1, Ellipsis, None),
]


@pytest.mark.parametrize("index", INDICES, ids=[str(i) for i in range(len(INDICES))])
def test_getitem_matches_numpy_and_grads(index, device, rng):
    a = rng.standard_normal((3, 4, 5))
    idx = index if len(index) > 1 else index[0]
    np.testing.assert_array_equal(_t(a, device)[idx].numpy(), a[idx])
    assert gradcheck(lambda x: x[idx], [a], device=device)


def test_getitem_repeated_indices_accumulate(device):
    x = mg.zeros((4, 2), requires_grad=True, device=device, dtype=mg.float32)
    x[mg.tensor([0, 0, 3, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3, 3], [0, 0], [0, 0], [1, 1]])
    x.grad = None
    mask = mg.tensor([True, False, True, False], device=device)
    (x[mask] * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], [2, 0, 2, 0])
    x.grad = None
    x[:, mg.tensor([1, 1])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2]] * 4)


@pytest.mark.parametrize("shape,index", [
    ((3, 0), (np.array([0, 2, 2]),)),  # pdist's case: integer rows of (N, 0)
    ((3, 0, 2), (np.array([0, 2]), slice(None), 1)),
    ((0, 4), (np.array([], dtype=np.int64),)),
])
def test_getitem_backward_zero_size(shape, index, device):
    """A zero-size row shape made getitem's backward reshape with an ambiguous -1."""
    x = mg.zeros(shape, requires_grad=True, device=device, dtype=mg.float32)
    x[index].sum().backward()
    assert x.grad.shape == shape
    x.grad = None
    F.index_select(x, 0, np.zeros(2, dtype=np.int64) if shape[0] else
                   np.zeros(0, dtype=np.int64)).sum().backward()
    assert x.grad.shape == shape


def test_getitem_second_derivative(rng):
    from minigrad.testing import gradgradcheck
    a = rng.standard_normal((4, 3))
    assert gradgradcheck(lambda x: x[[0, 0, 2]] ** 3, [a])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap", "symmetric"])
def test_pad(mode, device, rng):
    a = rng.standard_normal((3, 4))
    width = ((1, 2), (2, 1))
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    out = F.pad(_t(a, device), width, mode=mode, value=1.5)
    np.testing.assert_array_equal(out.numpy(), np.pad(a, width, mode=mode, **kw))
    assert gradcheck(lambda x: F.pad(x, width, mode=mode), [a], device=device)
    assert F.pad(_t(a), 1).shape == (5, 6) and F.pad(_t(a), (0, 2)).shape == (5, 6)
    with pytest.raises(ValueError, match="pad"):
        F.pad(_t(a), 1, mode="bogus")


def test_repeat_tile(device, rng):
    a = rng.standard_normal((2, 3))
    t = _t(a, device)
    np.testing.assert_array_equal(F.repeat(t, 2, axis=1).numpy(), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(F.repeat(t, 2).numpy(), np.repeat(a, 2))
    np.testing.assert_array_equal(F.repeat(t, [1, 0, 3], axis=1).numpy(),
                                  np.repeat(a, [1, 0, 3], axis=1))
    assert gradcheck(lambda x: F.repeat(x, 3, axis=0), [a], device=device)
    assert gradcheck(lambda x: F.repeat(x, [2, 1, 3], axis=1), [a], device=device)
    for reps in (2, (2, 1), (2, 1, 3), (3,)):
        np.testing.assert_array_equal(F.tile(t, reps).numpy(), np.tile(a, reps))
        assert gradcheck(lambda x, r=reps: F.tile(x, r), [a], device=device)


def test_gather_index_select_scatter_add(device, rng):
    a = rng.standard_normal((3, 4))
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    g = F.gather(_t(a, device), 1, mg.tensor(idx, device=device))
    np.testing.assert_array_equal(g.numpy(), np.take_along_axis(a, idx, 1))
    idx0 = np.array([[2, 2, 0, 1]])  # smaller than x on axis... 0 is the gather axis
    np.testing.assert_array_equal(F.gather(_t(a), 0, idx0).numpy(),
                                  np.take_along_axis(a, idx0, 0))
    assert gradcheck(lambda x: F.gather(x, 1, idx), [a], device=device)
    assert gradcheck(lambda x: F.gather(x, 0, idx0), [a], device=device)
    sel = np.array([3, 0, 3])
    np.testing.assert_array_equal(F.index_select(_t(a), 1, sel).numpy(), a[:, sel])
    assert gradcheck(lambda x: F.index_select(x, 1, sel), [a], device=device)
    assert gradcheck(lambda x: F.index_select(x, 0, np.array([1, 1])), [a], device=device)
    src = rng.standard_normal((3, 3))
    sidx = np.array([[0, 0], [3, 1], [3, 3]])
    out = F.scatter_add(_t(a), 1, sidx, _t(src))
    ref = a.copy()
    for i in range(sidx.shape[0]):
        for j in range(sidx.shape[1]):
            ref[i, sidx[i, j]] += src[i, j]
    np.testing.assert_allclose(out.numpy(), ref)
    assert gradcheck(lambda x, s: F.scatter_add(x, 1, sidx, s), [a, src], device=device)
    with pytest.raises(ValueError, match="gather"):
        F.gather(_t(a), 1, np.array([[0, 4]]))
    with pytest.raises(ValueError, match="index_select"):
        F.index_select(_t(a), 0, np.array([5]))


def test_gather_scatter_against_torch(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 5))
    idx = rng.integers(0, 4, (3, 5))
    src = rng.standard_normal((3, 5))
    np.testing.assert_allclose(
        F.gather(_t(a), 0, idx).numpy(),
        torch.gather(torch.tensor(a), 0, torch.tensor(idx)).numpy())
    np.testing.assert_allclose(
        F.scatter_add(_t(a), 0, idx, _t(src)).numpy(),
        torch.tensor(a).scatter_add(0, torch.tensor(idx), torch.tensor(src)).numpy())


def test_one_hot(device):
    y = F.one_hot(mg.tensor([[0, 2], [1, 0]], device=device), 3)
    assert y.dtype == mg.int64 and y.shape == (2, 2, 3) and not y.requires_grad  # PyTorch
    np.testing.assert_array_equal(y.numpy()[0], [[1, 0, 0], [0, 0, 1]])
    assert F.one_hot(mg.tensor([1, 3])).shape == (2, 4)
    with pytest.raises(ValueError, match="one_hot"):
        F.one_hot(mg.tensor([3]), 3)


@settings(max_examples=25, deadline=None)
@given(a=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
                    elements=st.floats(-10, 10)),
       data=st.data())
def test_shape_round_trips(a, data):
    t = _t(a)
    np.testing.assert_array_equal(t.reshape(-1).reshape(a.shape).numpy(), a)
    perm = data.draw(st.permutations(range(a.ndim)))
    inv = tuple(int(i) for i in np.argsort(perm))
    np.testing.assert_array_equal(F.transpose(F.transpose(t, perm), inv).numpy(), a)
    axis = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[axis]
    points = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    parts = F.split(t, points, axis)
    assert len(parts) == len(points) + 1
    np.testing.assert_array_equal(F.concat(parts, axis).numpy(), a)
    np.testing.assert_array_equal(F.stack(F.split(t, n, axis), axis).numpy(),
                                  np.stack(np.split(a, n, axis), axis))


def test_axis_errors_are_pytorchs_dimension_out_of_range():
    x = mg.zeros((2, 3))
    cases = [("permute", lambda: F.permute(x, (0, 2)), 2, "[-2, 1]"),
             ("swapaxes", lambda: F.swapaxes(x, 0, 4), 4, "[-2, 1]"),
             ("swapaxes", lambda: F.swapaxes(x, -3, 0), -3, "[-2, 1]"),
             ("expand_dims", lambda: F.expand_dims(x, 5), 5, "[-3, 2]"),
             ("flatten", lambda: F.flatten(x, 3), 3, "[-2, 1]"),
             ("transpose", lambda: F.transpose(x, (0, 2)), 2, "[-2, 1]"),
             ("concat", lambda: F.concat([x, x], 2), 2, "[-2, 1]")]
    for name, call, axis, valid in cases:
        with pytest.raises(IndexError, match=rf"^{name}: axis {axis} .*Dimension out of range "
                                             rf"\(expected to be in range of \{valid[:-1]}\], "
                                             rf"but got {axis}\)"):
            call()
    assert F.swapaxes(mg.tensor(1.0), 0, -1).shape == ()  # 0-d: axes 0 and -1, as in PyTorch
    assert F.swapaxes(x, -1, 0).shape == (3, 2)


def test_transpose_repeated_axes_name_the_op_and_axes():
    with pytest.raises(ValueError, match=r"transpose: axes \(0, 0\) are not a permutation"):
        F.transpose(mg.zeros((2, 3)), (0, 0))
    with pytest.raises(ValueError, match=r"permute: axes \(1,\) are not a permutation"):
        F.permute(mg.zeros((2, 3)), (1,))


def test_repeat_and_tile_reject_negative_counts():
    x = mg.zeros((2, 3))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative, got -1"):
        F.repeat(x, -1)
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative, got -2"):
        F.repeat(x, [1, -2, 1], axis=1)
    with pytest.raises(ValueError, match=r"tile: reps must be non-negative, got \(2, -1\)"):
        F.tile(x, (2, -1))
    assert F.repeat(x, 0, axis=1).shape == (2, 0) and F.tile(x, (0, 1)).shape == (0, 3)


def test_pad_refuses_fewer_pairs_than_axes():
    # NumPy would broadcast the one pair to every axis, PyTorch's F.pad would pad only the last
    # axis: either reading surprises someone, so say what to write instead.
    x = mg.zeros((2, 3))
    with pytest.raises(ValueError, match=r"pad: pad_width \(\(1, 1\),\) has 1 .* pairs for a "
                                         r"2-D tensor; give one pair per axis, e.g. "
                                         r"\(\(0, 0\), \(1, 1\)\)"):
        F.pad(x, ((1, 1),))
    assert F.pad(x, ((0, 0), (1, 1))).shape == (2, 5)
    assert F.pad(x, (1, 1)).shape == (4, 5) and F.pad(x, 1).shape == (4, 5)  # NumPy forms
    assert F.pad(mg.zeros(3), ((1, 2),)).shape == (6,)


@pytest.mark.parametrize("op", [F.clone, F.detach])
def test_clone_and_detach_need_a_tensor(op):
    with pytest.raises(TypeError, match=rf"{op.__name__}: expected a Tensor, got int"):
        op(3)
    assert op(mg.ones(2)).tolist() == [1.0, 1.0]


def test_setitem_refuses_a_value_that_requires_grad_while_recording():
    x = mg.zeros(3)
    v = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"__setitem__: the value \(shape \(2,\)\) requires "
                                           "grad while recording.*F.index_put"):
        x[:2] = v
    assert x.tolist() == [0.0, 0.0, 0.0]  # nothing written
    x[:2] = v.detach()
    with mg.no_grad():
        x[1:] = v
    assert x.tolist() == [1.0, 1.0, 2.0]
    y = F.index_put(x, (np.array([0, 1]),), v)  # the recorded way: the gradient reaches v
    y.sum().backward()
    assert v.grad.tolist() == [1.0, 1.0]
