"""The peers' data pipelines: ``minigrad.utils.data`` (PyTorch's and OneFlow's
``utils.data``) against PyTorch's ``torch.utils.data``, MegEngine's ``minigrad.data`` batch
samplers, ``DataLoader(sampler=, transform=, collator=)`` and ``data.transform``, MindSpore's
``minigrad.dataset`` pipelines with ``dataset.vision`` / ``dataset.transforms``, and what
``num_workers``/``pin_memory`` do here."""

import collections
import threading

import numpy as np
import pytest

import minigrad as mg
import minigrad.data.transform as T
from minigrad import data
from minigrad.utils import data as udata

torch = pytest.importorskip("torch")
import torch.utils.data as tdata  # noqa: E402


def _np(x):
    if isinstance(x, (list, tuple)):
        return [_np(v) for v in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return x.numpy() if hasattr(x, "numpy") else x


def _same_batches(ours, theirs):
    ours, theirs = list(ours), list(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = _np(a), _np(b)
        if isinstance(b, dict):
            assert a.keys() == b.keys()
            for k in b:
                np.testing.assert_array_equal(a[k], b[k])
        elif isinstance(b, list):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            np.testing.assert_array_equal(a, b)


class Squares:
    """A map-style dataset that is not a minigrad Dataset (duck typing, as PyTorch allows)."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.full(3, i, np.float32), i * i


# ----------------------------------------------------------------------------- module paths
def test_utils_data_paths_serve_pytorch_and_oneflow_spellings():
    import minigrad.utils.data.distributed as dist
    from minigrad.utils.data import sampler as sampler_module
    from minigrad.utils.data.sampler import RandomSampler

    assert udata.Dataset is data.Dataset and udata.TensorDataset is data.TensorDataset
    assert dist.DistributedSampler is data.DistributedSampler
    assert RandomSampler is sampler_module.RandomSampler is udata.RandomSampler
    assert issubclass(udata.DataLoader, data.dataloader.DataLoader)
    # one name, two peers: the imported path decides
    assert udata.RandomSampler is not data.RandomSampler
    assert list(udata.SequentialSampler(range(3))) == [0, 1, 2]        # indices (PyTorch)
    assert list(data.SequentialSampler(range(3), batch_size=2)) == [[0, 1], [2]]  # batches


# ----------------------------------------------------------------------------- PyTorch
def test_dataloader_positional_order_and_values_match_pytorch():
    ds = Squares()
    _same_batches(udata.DataLoader(ds, 3, False, None, None, 0, None, False, True),
                  tdata.DataLoader(ds, 3, False, None, None, 0, None, False, True))
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    _same_batches(udata.DataLoader(udata.TensorDataset(mg.tensor(x), mg.tensor(y)), batch_size=4),
                  tdata.DataLoader(tdata.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                   batch_size=4))


def test_samplers_and_batch_sampler_match_pytorch():
    ds = list(range(11))
    for drop in (False, True):
        ours = udata.BatchSampler(udata.SequentialSampler(ds), 4, drop)
        theirs = tdata.BatchSampler(tdata.SequentialSampler(ds), 4, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    sub = [3, 1, 4, 9]
    order = list(udata.SubsetRandomSampler(sub, generator=5))
    assert sorted(order) == sorted(sub) and len(udata.SubsetRandomSampler(sub)) == 4
    ours = udata.DataLoader(Squares(), batch_sampler=udata.BatchSampler(
        udata.SequentialSampler(Squares()), 3, False))
    theirs = tdata.DataLoader(Squares(), batch_sampler=tdata.BatchSampler(
        tdata.SequentialSampler(Squares()), 3, False))
    _same_batches(ours, theirs)
    assert len(ours) == len(theirs) == 3


def test_random_sampler_draws_a_new_permutation_each_epoch_repeatably():
    s = udata.RandomSampler(range(10), generator=3)
    e0, e1 = list(s), list(s)
    assert sorted(e0) == sorted(e1) == list(range(10)) and e0 != e1
    again = udata.RandomSampler(range(10), generator=3)
    assert list(again) == e0
    again.set_epoch(1)
    assert list(again) == e1
    mg.manual_seed(4)
    a = list(udata.RandomSampler(range(10)))
    mg.manual_seed(4)
    assert list(udata.RandomSampler(range(10))) == a
    rep = list(udata.RandomSampler(range(3), replacement=True, num_samples=50, generator=1))
    assert len(rep) == 50 and set(rep) <= {0, 1, 2}
    long = list(udata.RandomSampler(range(4), num_samples=10, generator=1))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    gen = np.random.default_rng(9)
    assert sorted(udata.RandomSampler(range(5), generator=gen)) == list(range(5))


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0, 0.0]
    draws = list(udata.WeightedRandomSampler(w, 4000, generator=0))
    counts = np.bincount(draws, minlength=4)
    assert counts[0] == counts[3] == 0
    assert abs(counts[2] / counts[1] - 3.0) < 0.4
    no_rep = list(udata.WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, generator=0))
    assert sorted(no_rep) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="without replacement"):
        udata.WeightedRandomSampler(w, 3, replacement=False)
    with pytest.raises(ValueError, match="num_samples"):
        udata.WeightedRandomSampler(w, 0)


def test_dataloader_argument_rules_follow_pytorch():
    ds = Squares()
    bs = udata.BatchSampler(udata.SequentialSampler(ds), 2, False)
    for kw in (dict(batch_size=2), dict(shuffle=True), dict(drop_last=True),
               dict(sampler=udata.SequentialSampler(ds))):
        with pytest.raises(ValueError, match="batch_sampler"):
            udata.DataLoader(ds, batch_sampler=bs, **kw)
        with pytest.raises(ValueError):
            tdata.DataLoader(ds, batch_sampler=bs, **kw)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        udata.DataLoader(ds, sampler=udata.SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        udata.DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        udata.DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="drop_last"):
        udata.DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers"):
        udata.DataLoader(ds, num_workers=-1)


def test_sampler_and_shuffle_order():
    ds = Squares()
    s = udata.SequentialSampler(ds)
    loader = udata.DataLoader(ds, batch_size=3, sampler=s)
    assert [y.numpy().tolist() for _, y in loader] == [[0, 1, 4], [9, 16, 25], [36]]
    rs = udata.RandomSampler(ds, generator=2)
    loader = udata.DataLoader(ds, batch_size=7, sampler=rs)
    e0, e1 = [next(iter(loader))[1].numpy().tolist() for _ in range(2)]
    assert sorted(e0) == sorted(e1) and e0 != e1            # the sampler's epoch advances
    a = udata.DataLoader(ds, batch_size=7, shuffle=True, generator=11)
    b = udata.DataLoader(ds, batch_size=7, shuffle=True, generator=11)
    assert next(iter(a))[1].numpy().tolist() == next(iter(b))[1].numpy().tolist()


def test_default_collate_structures_match_pytorch():
    Point = collections.namedtuple("Point", "x y")
    samples = [
        [(np.ones(2, np.float32) * i, i, "name") for i in range(3)],
        [{"a": np.arange(3) + i, "b": (i, np.float32(i))} for i in range(2)],
        [Point(np.float32(i), np.arange(2) * i) for i in range(3)],
    ]
    for batch in samples:
        ours, theirs = udata.default_collate(batch), tdata.default_collate(batch)
        if isinstance(theirs, dict):
            np.testing.assert_array_equal(ours["a"].numpy(), theirs["a"].numpy())
            for o, t in zip(ours["b"], theirs["b"]):
                np.testing.assert_array_equal(o.numpy(), t.numpy())
        elif isinstance(theirs, tuple):                     # the namedtuple keeps its type
            assert type(ours) is Point
            for o, t in zip(ours, theirs):
                np.testing.assert_array_equal(o.numpy(), t.numpy())
        else:
            np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
            np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
            assert list(ours[2]) == list(theirs[2]) == ["name"] * 3
    # the documented difference: Python floats collate to float32 (PyTorch: float64)
    assert udata.default_collate([1.5, 2.5]).dtype == mg.float32


def test_unbatched_and_iterable_datasets_match_pytorch():
    _same_batches(udata.DataLoader(Squares(), batch_size=None),
                  tdata.DataLoader(Squares(), batch_size=None))

    class Stream(udata.IterableDataset):
        def __iter__(self):
            for i in range(7):
                yield np.float32(i), i

    class TStream(tdata.IterableDataset):
        def __iter__(self):
            for i in range(7):
                yield np.float32(i), i

    for drop in (False, True):
        _same_batches(udata.DataLoader(Stream(), batch_size=3, drop_last=drop),
                      tdata.DataLoader(TStream(), batch_size=3, drop_last=drop))
    with pytest.raises(ValueError, match="IterableDataset"):
        udata.DataLoader(Stream(), shuffle=True)
    chained = list(udata.DataLoader(Stream() + Stream(), batch_size=7))
    assert len(chained) == 2


def test_subset_concat_random_split():
    base = udata.TensorDataset(np.arange(11, dtype=np.float32), np.arange(11))
    parts = udata.random_split(base, [0.3, 0.3, 0.4], generator=0)
    tparts = tdata.random_split(range(11), [0.3, 0.3, 0.4],
                                generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(p) for p in tparts] == [4, 3, 4]
    seen = sorted(int(y) for p in parts for _, y in (p[i] for i in range(len(p))))
    assert seen == list(range(11))
    again = udata.random_split(base, [4, 3, 4], generator=0)
    assert [p.indices for p in again] == [p.indices for p in parts]
    with pytest.raises(ValueError, match="sum"):
        udata.random_split(base, [5, 5])
    # a Subset of a TensorDataset is batched by slicing, with the subset's order
    sub = udata.Subset(base, [7, 2, 5])
    (x, y), = list(udata.DataLoader(sub, batch_size=3))
    assert y.numpy().tolist() == [7, 2, 5] and x.numpy().tolist() == [7.0, 2.0, 5.0]
    nested = udata.Subset(sub, [2, 0])
    assert next(iter(udata.DataLoader(nested, batch_size=2)))[1].numpy().tolist() == [5, 7]
    cat, tcat = udata.ConcatDataset([Squares(), Squares()]), tdata.ConcatDataset([Squares(),
                                                                                Squares()])
    assert len(cat) == len(tcat) == 14
    for i in (0, 6, 7, 13, -1, -14):
        np.testing.assert_array_equal(cat[i][0], tcat[i][0])
    with pytest.raises(IndexError):
        cat[14]


def test_tensor_dataset_rows_keep_their_kind():
    t = udata.TensorDataset(mg.arange(5.0), np.arange(5))
    x, y = t[3]
    assert isinstance(x, mg.Tensor) and x.shape == () and float(x.item()) == 3.0
    assert isinstance(y, np.integer) and y == 3


# ----------------------------------------------------------------------------- num_workers
class Augmented(udata.Dataset):
    """Draws from minigrad's generator in __getitem__ (a random augmentation)."""

    def __len__(self):
        return 20

    def __getitem__(self, i):
        noise = mg.randn(3).numpy()
        return noise + i, i


def test_num_workers_gives_the_same_batches_in_a_background_thread():
    # the same order and, with nothing else drawing meanwhile, the same random draws
    seen = {}

    def init(worker_id):
        seen["id"] = worker_id
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["info"] = udata.get_worker_info()

    def load(workers, **kw):
        mg.manual_seed(5)
        loader = udata.DataLoader(Augmented(), batch_size=6, shuffle=True, generator=1,
                                  num_workers=workers, pin_memory=True, **kw)
        return [(x.numpy(), y.numpy()) for x, y in loader]

    plain = load(0)
    threaded = load(3, worker_init_fn=init, prefetch_factor=1, timeout=30)
    for (a, b), (c, d) in zip(plain, threaded):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert seen["id"] == 0 and seen["thread"]
    assert seen["info"].id == 0 and seen["info"].num_workers == 1
    assert udata.get_worker_info() is None


def test_worker_errors_and_timeouts_reach_the_caller():
    class Broken(udata.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("sample 2 is missing")
            return np.float32(i)

    with pytest.raises(KeyError, match="sample 2"):
        list(udata.DataLoader(Broken(), batch_size=1, num_workers=2))

    gate = threading.Event()

    class Slow(udata.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            gate.wait(5)
            return np.float32(i)

    with pytest.raises(RuntimeError, match="timed out"):
        next(iter(udata.DataLoader(Slow(), num_workers=1, timeout=0.05)))
    gate.set()


def test_persistent_workers_run_worker_init_once():
    calls = []
    loader = udata.DataLoader(Squares(), batch_size=4, num_workers=1,
                              persistent_workers=True, worker_init_fn=calls.append)
    for _ in range(3):
        list(loader)
    assert calls == [0]
    calls.clear()
    loader = udata.DataLoader(Squares(), batch_size=4, num_workers=1,
                              worker_init_fn=calls.append)
    for _ in range(2):
        list(loader)
    assert calls == [0, 0]


def test_sharded_iterable_dataset_reads_every_sample_once_with_workers():
    class Sharded(udata.IterableDataset):
        def __iter__(self):
            info = udata.get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, 10, step))

    out = [int(v) for b in udata.DataLoader(Sharded(), batch_size=4, num_workers=4)
           for v in b.numpy()]
    assert out == list(range(10))


# ----------------------------------------------------------------------------- MegEngine
def test_megengine_batch_samplers():
    ds = data.ArrayDataset(np.arange(10, dtype=np.float32), np.arange(10))
    assert data.ArrayDataset is data.dataset.ArrayDataset
    s = data.SequentialSampler(ds, batch_size=4, drop_last=True)
    assert list(s) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(s) == 2
    assert list(data.SequentialSampler(ds, batch_size=4, indices=[9, 8, 7])) == [[9, 8, 7]]
    r = data.RandomSampler(ds, batch_size=3, seed=1)
    e0, e1 = [sum(list(r), []) for _ in range(2)]
    assert sorted(e0) == sorted(e1) == list(range(10)) and e0 != e1 and len(r) == 4
    assert sum(list(data.RandomSampler(ds, batch_size=3, seed=1)), []) == e0
    shards = [sum(list(data.RandomSampler(ds, batch_size=2, world_size=3, rank=k)), [])
              for k in range(3)]
    assert all(len(sh) == 4 for sh in shards)                 # ceil(10 / 3), padded
    assert set().union(*map(set, shards)) == set(range(10))
    picks = sum(list(data.ReplacementSampler(ds, batch_size=5, num_samples=20,
                                             weights=[1] * 5 + [0] * 5, seed=0)), [])
    assert len(picks) == 20 and max(picks) < 5
    inf = iter(data.Infinite(data.SequentialSampler(ds, batch_size=4)))
    assert [next(inf) for _ in range(4)][3] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="batch_size"):
        data.RandomSampler(ds, batch_size=0)
    with pytest.raises(ValueError, match="drop_last"):
        data.RandomSampler(ds, drop_last=1)


def test_megengine_dataloader_with_transform_and_collator():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 5, 5, 3)).astype(np.uint8)
    ds = data.ArrayDataset(images, np.arange(6))
    mean, std = [103.5, 116.3, 123.7], [57.4, 57.1, 58.4]
    transform = T.Compose([T.Normalize(mean=mean, std=std), T.ToMode("CHW")],
                          order=["image", "image_category"])
    loader = data.DataLoader(ds, sampler=data.SequentialSampler(ds, batch_size=4),
                             transform=transform)
    (x, y), (x2, y2) = list(loader)
    assert len(loader) == 2 and x.shape == (4, 3, 5, 5) and x2.shape == (2, 3, 5, 5)
    expect = ((images[:4].astype(np.float32) - np.float32(mean)) / np.float32(std))
    np.testing.assert_allclose(x.numpy(), expect.transpose(0, 3, 1, 2), rtol=1e-6)
    assert y.numpy().tolist() == [0, 1, 2, 3]

    class Sizes(data.Collator):
        def apply(self, inputs):
            return [np.asarray(i).shape for i, _ in inputs]

    out = list(data.DataLoader(ds, sampler=data.SequentialSampler(ds, batch_size=3),
                               collator=Sizes(), num_workers=2))
    assert out == [[(5, 5, 3)] * 3] * 2
    # minigrad's own keywords still work on the MegEngine spelling
    assert len(data.DataLoader(ds, batch_size=4, shuffle=True, seed=0)) == 2
    with pytest.raises(ValueError, match="divide"):
        data.DataLoader(ds, divide=True)


def test_megengine_transforms():
    img = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    assert T.ToMode("CHW").apply(img).shape == (3, 4, 6)
    np.testing.assert_array_equal(T.CenterCrop(2).apply(img), img[1:3, 2:4])
    padded = T.Pad(1, value=7).apply(img)
    assert padded.shape == (6, 8, 3) and padded[0, 0, 0] == 7
    assert T.Pad((1, 2)).apply(img).shape == (5, 8, 3)       # (bottom, right)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(prob=1.0).apply(img), img[:, ::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(prob=0.0).apply(img), img)
    np.testing.assert_array_equal(T.RandomVerticalFlip(prob=1.0).apply(img), img[::-1])
    crop = T.RandomCrop(4, padding_size=2).apply(img)
    assert crop.shape == (4, 4, 3)
    big = np.pad(img, ((2, 2), (2, 2), (0, 0)))
    assert any(np.array_equal(crop, big[i:i + 4, j:j + 4]) for i in range(5) for j in range(7))
    assert T.RandomCrop((6, 8)).apply(img).shape == (6, 8, 3)  # pads up to the window
    assert T.Resize(8).apply(img).shape == (8, 12, 3)          # the shorter side
    # a (image, mask, label) sample: the mask follows the geometry, the label passes
    mask = (img[..., :1] > 30).astype(np.uint8)
    out = T.Compose([T.RandomHorizontalFlip(1.0), T.Resize((8, 12))],
                    order=["image", "mask", "image_category"]).apply((img, mask, 5))
    assert out[0].shape == (8, 12, 3) and out[1].shape == (8, 12, 1) and out[2] == 5
    assert set(np.unique(out[1])) <= {0, 1}


@pytest.mark.parametrize("size", [(8, 12), (3, 5), (4, 6)])
def test_resize_matches_pytorch_interpolate(size):
    img = np.random.default_rng(1).standard_normal((4, 6, 3)).astype(np.float32)
    t = torch.tensor(img).permute(2, 0, 1)[None]
    ref = torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)
    ours = T.Resize(size).apply(img)
    np.testing.assert_allclose(ours, ref[0].permute(1, 2, 0).numpy(), rtol=1e-5, atol=1e-6)
    near = torch.nn.functional.interpolate(t, size=size, mode="nearest")
    np.testing.assert_array_equal(T.Resize(size, T.INTER_NEAREST).apply(img),
                                  near[0].permute(1, 2, 0).numpy())
    u8 = (np.random.default_rng(2).random((4, 6, 3)) * 255).astype(np.uint8)
    ref8 = torch.nn.functional.interpolate(torch.tensor(u8, dtype=torch.float64)
                                           .permute(2, 0, 1)[None], size=size, mode="bilinear")
    np.testing.assert_array_equal(T.Resize(size).apply(u8),
                                  np.rint(ref8[0].permute(1, 2, 0).numpy()).astype(np.uint8))


def test_random_transforms_follow_manual_seed():
    img = np.arange(64 * 3, dtype=np.uint8).reshape(8, 8, 3)
    t = T.Compose([T.RandomHorizontalFlip(), T.RandomCrop(5, padding_size=1)])
    mg.manual_seed(1)
    a = [t.apply(img) for _ in range(4)]
    mg.manual_seed(1)
    for x, y in zip(a, [t.apply(img) for _ in range(4)]):
        np.testing.assert_array_equal(x, y)


# ----------------------------------------------------------------------------- MindSpore
class Source:
    def __init__(self, n=10):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (n, 6, 6, 1)).astype(np.uint8)
        self.labels = np.arange(n)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]

    def __len__(self):
        return len(self.labels)


def test_mindspore_quick_start_pipeline():
    import minigrad.dataset as ds
    from minigrad.dataset import transforms, vision

    src = Source()
    dataset = ds.GeneratorDataset(src, column_names=["image", "label"], shuffle=False)
    image_transforms = [vision.Rescale(1.0 / 255.0, 0),
                        vision.Normalize(mean=(0.1307,), std=(0.3081,)), vision.HWC2CHW()]
    dataset = dataset.map(image_transforms, "image")
    dataset = dataset.map(transforms.TypeCast(mg.int32), "label")
    dataset = dataset.batch(4)
    assert dataset.get_dataset_size() == 3 and dataset.get_col_names() == ["image", "label"]
    batches = list(dataset.create_tuple_iterator())
    assert [b[0].shape for b in batches] == [(4, 1, 6, 6)] * 2 + [(2, 1, 6, 6)]
    assert batches[0][1].dtype == mg.int32 and batches[2][1].numpy().tolist() == [8, 9]
    expect = (src.images[:4].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081)
    np.testing.assert_allclose(batches[0][0].numpy(), expect.transpose(0, 3, 1, 2), rtol=1e-5)
    rows = list(dataset.create_dict_iterator(output_numpy=True))
    assert isinstance(rows[0]["image"], np.ndarray) and rows[1]["label"].tolist() == [4, 5, 6, 7]
    dropped = ds.GeneratorDataset(src, ["image", "label"]).batch(4, drop_remainder=True)
    assert dropped.get_dataset_size() == 2 and len(list(dropped)) == 2


def test_mindspore_sources_orders_and_shards():
    import minigrad.dataset as ds

    src = Source()
    labels = lambda d: [int(r[1]) for r in d.create_tuple_iterator(output_numpy=True)]  # noqa
    shuffled = ds.GeneratorDataset(src, ["image", "label"])          # MindSpore's default
    it = shuffled.create_tuple_iterator(num_epochs=2, output_numpy=True)
    e0, e1 = [[int(r[1]) for r in it] for _ in range(2)]
    assert sorted(e0) == sorted(e1) == list(range(10)) and e0 != e1
    assert labels(ds.GeneratorDataset(src, ["image", "label"], shuffle=False)) == list(range(10))
    shards = [labels(ds.GeneratorDataset(src, ["image", "label"], num_shards=3, shard_id=k))
              for k in range(3)]
    assert all(len(s) == 4 for s in shards) and set(sum(shards, [])) == set(range(10))
    with pytest.raises(RuntimeError, match="together"):
        ds.GeneratorDataset(src, ["image", "label"], num_shards=2)

    def gen():
        for i in range(5):
            yield np.array([i, i + 1]), np.array(i)

    out = [x.numpy().tolist() for x, _ in ds.GeneratorDataset(gen, ["a", "b"]).batch(2)]
    assert out == [[[0, 1], [1, 2]], [[2, 3], [3, 4]], [[4, 5]]]
    with pytest.raises(ValueError, match="random-accessible"):
        ds.GeneratorDataset(gen, ["a", "b"], shuffle=True)
    assert ds.GeneratorDataset([1, 2, 3], ["v"],
                               shuffle=False).get_dataset_size() == 3
    slices = ds.NumpySlicesDataset({"x": np.arange(6.0), "y": np.arange(6)}, shuffle=False)
    assert slices.get_col_names() == ["x", "y"] and slices.get_dataset_size() == 6
    ops = slices.skip(1).take(3).project(["y"]).rename("y", "label").repeat(2)
    assert ops.get_col_names() == ["label"] and ops.get_dataset_size() == 6
    assert [int(r[0]) for r in ops.create_tuple_iterator(output_numpy=True)] == [1, 2, 3] * 2
    buffered = [int(r[1]) for r in slices.shuffle(3).create_tuple_iterator(output_numpy=True)]
    assert sorted(buffered) == list(range(6))
    two = slices.map(lambda x, y: (x + y, x - y), ["x", "y"], ["s", "d"])
    assert two.get_col_names() == ["s", "d"]
    assert next(iter(two.create_dict_iterator(output_numpy=True)))["s"] == 0.0


def test_mindspore_vision_and_transforms():
    from minigrad.dataset import transforms, vision
    import minigrad.dataset.vision.c_transforms as CV

    assert CV.Resize is vision.Resize
    img = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    chw = vision.ToTensor()(img)
    assert chw.shape == (3, 4, 6) and chw.dtype == np.float32 and chw.max() <= 1.0
    np.testing.assert_allclose(vision.Normalize([1, 2, 3], [2, 2, 2], is_hwc=False)(chw),
                               (chw - np.float32([1, 2, 3])[:, None, None]) / 2, rtol=1e-6)
    assert vision.Resize((8, 12))(img).shape == (8, 12, 3)
    assert vision.Resize(2)(img).shape == (2, 3, 3)
    assert vision.RandomCrop(3, padding=1)(img).shape == (3, 3, 3)
    assert vision.RandomCrop(8, pad_if_needed=True)(img).shape == (8, 8, 3)
    np.testing.assert_array_equal(vision.RandomHorizontalFlip(1.0)(img), img[:, ::-1])
    np.testing.assert_array_equal(vision.CenterCrop(2)(img), img[1:3, 2:4])
    assert transforms.TypeCast(mg.float16)(np.array([1, 2])).dtype == np.float16
    np.testing.assert_array_equal(transforms.OneHot(3)(np.array([2, 0])),
                                  [[0, 0, 1], [1, 0, 0]])
    assert transforms.Compose([vision.HWC2CHW(), transforms.TypeCast("float32")])(img).shape \
        == (3, 4, 6)
    with pytest.raises(NotImplementedError, match="Inter"):
        vision.Resize(4, vision.Inter.CUBIC)
