"""DataLoader batching, seeded shuffling, drop_last, collation; the digits dataset."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.data import DataLoader, Dataset, TensorDataset, default_collate


def _ds(n=10):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    return TensorDataset(x, np.arange(n))


def _labels(loader):
    return [y.numpy().tolist() for _, y in loader]


def test_batches_in_order(device):
    loader = DataLoader(_ds(), batch_size=4, device=device)
    assert len(loader) == 3
    batches = list(loader)
    assert [tuple(x.shape) for x, _ in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0][0].dtype == mg.float32 and batches[0][1].dtype == mg.int64
    assert batches[0][0].device == mg.tensor(0.0, device=device).device
    np.testing.assert_array_equal(batches[2][0].numpy(), [[16, 17], [18, 19]])
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_batches_do_not_alias_the_dataset():
    ds = _ds()
    x, _ = next(iter(DataLoader(ds, batch_size=4)))
    x.data[...] = -1
    assert ds.arrays[0][0, 0] == 0


def test_drop_last():
    loader = DataLoader(_ds(), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_seeded_per_epoch():
    a = DataLoader(_ds(), batch_size=3, shuffle=True, seed=7)
    b = DataLoader(_ds(), batch_size=3, shuffle=True, seed=7)
    e0, e1 = _labels(a), _labels(a)
    assert e0 != e1                                # a new order each epoch
    for epoch in (e0, e1):                         # every sample exactly once
        assert sorted(sum(epoch, [])) == list(range(10))
    b.set_epoch(1)                                 # a resumed run sees epoch 1's order
    assert _labels(b) == e1
    assert b.epoch == 2 and b.state_dict() == {"seed": 7, "epoch": 2}
    order = np.random.default_rng([7, 0]).permutation(10)
    assert sum(e0, []) == order.tolist()
    assert _labels(DataLoader(_ds(), batch_size=3, shuffle=True, seed=8)) != e0


def test_shuffle_seed_from_manual_seed():
    mg.manual_seed(3)
    a = _labels(DataLoader(_ds(), batch_size=5, shuffle=True))
    mg.manual_seed(3)
    assert _labels(DataLoader(_ds(), batch_size=5, shuffle=True)) == a


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(3, i, np.float32), "y": float(i * i)}


def test_generic_dataset_and_collate():
    batches = list(DataLoader(Squares(), batch_size=2, shuffle=True, seed=0))
    ys = sorted(sum((b["y"].numpy().tolist() for b in batches), []))
    assert ys == [0.0, 1.0, 4.0, 9.0, 16.0]
    assert batches[0]["y"].dtype == mg.float32 and batches[0]["x"].shape == (2, 3)
    np.testing.assert_array_equal(batches[0]["x"].numpy()[:, 0] ** 2, batches[0]["y"].numpy())
    out = list(DataLoader(_ds(4), batch_size=2, collate_fn=lambda s: len(s)))
    assert out == [2, 2]
    (x, y) = default_collate([(np.ones(2), 1), (np.zeros(2), 2)])
    assert x.shape == (2, 2) and y.numpy().tolist() == [1, 2]


def test_bad_arguments():
    with pytest.raises(ValueError, match="different lengths"):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(_ds(), batch_size=0)


def test_digits():
    pytest.importorskip("sklearn")
    from minigrad.data.datasets import digits

    x, y = digits("train")
    xt, yt = digits("test")
    assert x.shape == (1437, 1, 32, 32) and xt.shape == (360, 1, 32, 32)
    assert x.dtype == np.float32 and y.dtype == np.int64 and yt.dtype == np.int64
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert set(np.unique(y)) == set(range(10))
    x2, y2 = digits("train")                      # fixed split, fresh copies
    np.testing.assert_array_equal(y, y2)
    x2[0] = 5.0
    assert digits("train")[0].max() <= 1.0
    from sklearn.datasets import load_digits   # upsampling keeps the 8x8 corner pixels
    raw = load_digits()
    first = np.random.default_rng(0).permutation(len(raw.target))[360]
    assert y[0] == raw.target[first]
    np.testing.assert_allclose(x[0, 0, ::31, ::31], raw.images[first][::7, ::7] / 16.0,
                               rtol=1e-6)
    with pytest.raises(ValueError, match="split"):
        digits("valid")


def test_a_samplers_epoch_is_its_own():
    # PyTorch: the loader never resets sampler.set_epoch(e); loader.set_epoch passes it on
    from minigrad.data import DistributedSampler

    ds = TensorDataset(np.arange(16, dtype=np.float32), np.arange(16))
    s = DistributedSampler(ds, num_replicas=2, rank=0, seed=3)
    loader = DataLoader(ds, batch_size=8, sampler=s)
    s.set_epoch(3)
    first = next(iter(loader))[1].numpy().tolist()
    assert s.epoch == 3 and sorted(first) == sorted(s.indices().tolist())
    loader.set_epoch(5)
    assert s.epoch == 5
    s2 = DistributedSampler(ds, num_replicas=2, rank=0, seed=3)
    s2.set_epoch(3)
    assert first == s2.indices().tolist()


def test_an_iterator_never_advanced_uses_up_no_epoch():
    # tqdm.auto's progress bar calls iter(loader) in its constructor and iterates again: the
    # shuffle order must be the one set_epoch chose, with or without the bar.
    import numpy as np

    import minigrad as mg
    from minigrad.data.dataloader import DataLoader
    from minigrad.data import TensorDataset

    for workers in (0, 1):
        loader = DataLoader(TensorDataset(mg.tensor(np.arange(20))), batch_size=4, shuffle=True,
                            seed=3, num_workers=workers)
        loader.set_epoch(0)
        plain = [b[0].numpy().tolist() for b in loader]
        loader.set_epoch(0)
        iter(loader)  # made, never advanced
        assert [b[0].numpy().tolist() for b in loader] == plain


def test_a_sampler_iterator_never_advanced_uses_up_no_epoch():
    from minigrad.utils.data import RandomSampler

    sampler = RandomSampler(range(10), generator=5)
    sampler.set_epoch(0)
    plain = list(sampler)
    sampler.set_epoch(0)
    iter(sampler)  # made, never advanced
    assert list(sampler) == plain
