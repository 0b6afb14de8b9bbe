"""`snowfire.FeatureDataset`, `StreamingFeatureDataset`, their collate and `LengthBucketSampler`:
the same bytes as `Store.read` over every reader (a directory, a moto bucket, the REST service),
padding and masks checked by hand, labels from the task's files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import snowfire
from snowfire.cache import Store, digest, example_key, open_reader, open_store

LAYERS, DIM = 3, 8
LENGTHS = [3, 5, 2, 4, 6, 3, 7]  # tokens per example of the hand-built sets
# id -> (dtype, pairs): pairs are `[CLS] a [SEP] b [SEP]`, single texts `[CLS] a [SEP]`
SETS = {
    "f16": ("float16", False),
    "f32": ("float32", False),
    "q8": ("int8", False),
    "pairs": ("float32", True),
}


def _example(rng, n: int, pair: bool):
    """(features (S, L, D), word_ids, type_ids, pair_start) of n tokens, specials at the ends
    (and, in a pair, between the texts: b starts after it)."""
    features = rng.normal(size=(n, LAYERS, DIM)).astype(np.float32)  # (S, L, D)
    words, types, start = np.full(n, -1, np.int32), np.zeros(n, np.int8), -1
    if not pair:
        words[1:-1] = np.arange(n - 2)
        return features, words, types, start
    start = 1 + (n - 3) // 2 + 1  # [CLS] a.. [SEP] | b.. [SEP]
    words[1 : start - 1] = np.arange(start - 2)
    words[start:-1] = np.arange(n - 1 - start)
    types[start:] = 1
    return features, words, types, start


def _write(store) -> None:
    for k, (fs_id, (dtype, pair)) in enumerate(SETS.items()):
        rng = np.random.default_rng(k)
        identity = {"name": f"fake{k}", "spec": f"fake:{k}"}
        pool = store.ensure_pool(identity, dtype, LAYERS, DIM)
        lengths = [n + 2 for n in LENGTHS] if pair else LENGTHS  # two pieces of each text
        texts = [
            {"a": [f"{fs_id}a{i}"], "b": [f"{fs_id}b{i}"] if pair else None}
            for i in range(len(lengths))
        ]
        keys = [example_key(pool, t) for t in texts]
        with store.writer(pool):
            parts = [_example(rng, n, pair) for n in lengths]
            for lo in range(0, len(keys), 3):  # segments of 3 examples
                store.write_segment(
                    pool,
                    digest(keys[lo : lo + 3], 24),
                    keys[lo : lo + 3],
                    parts[lo : lo + 3],
                    dtype,
                )
        manifest = {
            "id": fs_id,
            "encoder": identity,
            "encoder_id": pool,
            "task": None,
            "split": None,
            "num_layers": LAYERS,
            "dim": DIM,
            "dtype": dtype,
        }
        store.write_featureset(manifest, keys, texts)


@pytest.fixture(scope="module")
def local_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("dataset") / "store"
    _write(Store(path))
    return path


def _local(local_dir, request):
    return open_reader(local_dir)


def _bucket(local_dir, request):
    url = request.getfixturevalue("local_s3")()
    _write(open_store(url))
    return open_reader(url)


def _rest(local_dir, request):
    from snowfire.api import Settings
    from tests.helpers.service import Server

    server = Server(Settings(store=local_dir))
    server.__enter__()
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    reader = open_reader(server.url)
    request.addfinalizer(reader.close)
    return reader


READERS = {"local": _local, "bucket": _bucket, "rest": _rest}


@pytest.fixture(scope="module", params=list(READERS))
def reader(request, local_dir):
    return READERS[request.param](local_dir, request)


def _same_item(item, eb, i: int) -> None:
    """Item equals example i of ExampleBatch `eb`, byte for byte, dtype alike."""
    want = eb.example(i)
    got = item["features"].numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    s, e = eb.offsets[i], eb.offsets[i + 1]
    assert item["word_ids"].tolist() == eb.word_ids[s:e].tolist()
    assert item["type_ids"].tolist() == eb.type_ids[s:e].tolist()
    assert (item["pair_start"], item["key"]) == (int(eb.pair_starts[i]), eb.keys[i])


@pytest.mark.parametrize("fs_id", ["f16", "f32", "q8"])
@pytest.mark.parametrize("layers", [None, [2, 0]])
def test_items_are_the_bytes_store_read_gives(reader, local_dir, fs_id, layers):
    want = Store(local_dir).read(fs_id, indices=list(range(len(LENGTHS))), layers=layers)
    data = snowfire.FeatureDataset(reader, fs_id, layers=layers)
    assert len(data) == len(LENGTHS)
    for i in range(len(data)):
        _same_item(data[i], want, i)
        assert data[i]["index"] == i and "label" not in data[i]
    _same_item(data[-1], want, len(LENGTHS) - 1)
    with pytest.raises(IndexError, match="index 7 out of range for 7 examples"):
        data[7]


@pytest.mark.parametrize("fs_id", ["f16", "q8"])
def test_the_stream_gives_the_same_items_in_prefetched_blocks(reader, local_dir, fs_id):
    want = Store(local_dir).read(fs_id, indices=list(range(len(LENGTHS))), layers=[1])
    data = snowfire.StreamingFeatureDataset(reader, fs_id, layers=[1], block_examples=2)
    items = list(data)
    assert sorted(it["index"] for it in items) == list(range(len(LENGTHS)))
    for it in items:
        _same_item(it, want, it["index"])
    shuffled = snowfire.StreamingFeatureDataset(
        reader, fs_id, layers=[1], block_examples=3, shuffle=True, seed=1
    )
    first, second = [it["index"] for it in shuffled], [it["index"] for it in shuffled]
    assert sorted(first) == sorted(second) == list(range(len(LENGTHS)))
    assert first != second  # a new order each epoch
    for it in shuffled:
        _same_item(it, want, it["index"])


def test_mix_and_pool_as_computed_by_hand(local_dir):
    eb = Store(local_dir).read("f32", indices=[1])  # 5 tokens, word ids -1 0 1 2 -1
    rows = eb.example(0).astype(np.float64)  # (S, L, D)
    w, gamma = [0.2, 0.3, 0.5], 2.0
    data = snowfire.FeatureDataset(local_dir, "f32", mix={"weights": w, "gamma": gamma})
    mixed = sum(gamma * w[layer] * rows[:, layer] for layer in range(LAYERS))  # (S, D)
    tol = {"rtol": 1e-5, "atol": 1e-6}  # float32 sums
    np.testing.assert_allclose(data[1]["features"][:, 0].numpy(), mixed, **tol)
    pooled = snowfire.FeatureDataset(local_dir, "f32", pool="mean", layers=[2])
    words = rows[1:4, 2]  # the word pieces: the first and last tokens are special ones
    np.testing.assert_allclose(pooled[1]["features"].numpy(), words.mean(0)[None, None], **tol)
    both = snowfire.FeatureDataset(local_dir, "f32", pool="max", mix=(w, gamma))
    np.testing.assert_allclose(both[1]["features"][0, 0].numpy(), mixed[1:4].max(0), **tol)


def test_bad_arguments_are_named(local_dir):
    with pytest.raises(ValueError, match="pool: expected one of none, mean, max, first, cls, got"):
        snowfire.FeatureDataset(local_dir, "f32", pool="avg")
    with pytest.raises(ValueError, match="mix: 2 weights for 3 layers read"):
        snowfire.FeatureDataset(local_dir, "f32", mix=([0.5, 0.5], 1.0))
    with pytest.raises(ValueError, match="labels: 2 given for 7 examples of f32"):
        snowfire.FeatureDataset(local_dir, "f32", labels=[0, 1])
    with pytest.raises(ValueError, match="dtype: expected None, float16 or float32, got 'int8'"):
        snowfire.FeatureDataset(local_dir, "q8", dtype="int8")


def test_collate_pads_at_the_end_and_masks_by_hand(local_dir):
    data = snowfire.FeatureDataset(local_dir, "f16", labels=[0, 1, 1, 0, 1, 0, 1])
    items = [data[0], data[1], data[2]]  # 3, 5 and 2 tokens
    batch = data.collate(items)
    assert batch.features.shape == (3, 5, LAYERS, 8) and batch.features.dtype == torch.float32
    assert batch.mask.dtype == torch.bool
    assert batch.mask.tolist() == [
        [True, True, True, False, False],
        [True, True, True, True, True],
        [True, True, False, False, False],
    ]
    for b, it in enumerate(items):
        n = len(it["features"])
        assert torch.equal(batch.features[b, :n], it["features"].float())
        assert not batch.features[b, n:].any()  # zeros after the real tokens
        assert batch.word_ids[b].tolist() == it["word_ids"].tolist() + [-1] * (5 - n)
        assert batch.type_ids[b].tolist() == it["type_ids"].tolist() + [0] * (5 - n)
    assert batch.labels.tolist() == [0, 1, 1] and batch.keys == [it["key"] for it in items]
    assert batch.features_a is None  # single texts


def test_collate_splits_pairs_into_their_texts_by_hand(local_dir):
    data = snowfire.FeatureDataset(local_dir, "pairs")
    items = [data[0], data[1]]  # [CLS] a [SEP] b [SEP], [CLS] a a [SEP] b b [SEP]
    batch = data.collate(items)
    for b, it in enumerate(items):
        words, types = it["word_ids"].numpy(), it["type_ids"].numpy()
        a = it["features"][(words >= 0) & (types == 0)].float()  # specials left out
        b_ = it["features"][(words >= 0) & (types == 1)].float()
        assert torch.equal(batch.features_a[b, : len(a)], a)
        assert torch.equal(batch.features_b[b, : len(b_)], b_)
        assert batch.mask_a[b].sum() == len(a) and batch.mask_b[b].sum() == len(b_)
    assert batch.mask_a.tolist() == [[True, False], [True, True]]
    assert batch.mask_b.tolist() == [[True, False], [True, True]]


@pytest.fixture(scope="module")
def sst2_store(tiny_bert_dir, data_dir, tmp_path_factory):
    """sst2 extracted with the tiny BERT: (reader, train set's info)."""
    store = tmp_path_factory.mktemp("sst2") / "store"
    snowfire.extract(
        snowfire.ExtractConfig(
            encoder=f"hf:{tiny_bert_dir}",
            task="sst2",
            data=str(data_dir),
            store=str(store),
            progress=False,
        )
    )
    reader = snowfire.open_store(store)
    return reader, reader.find_featureset(encoder=f"hf:{tiny_bert_dir}", task="sst2", split="train")


def test_labels_come_from_the_tasks_files_and_a_loader_feeds_a_head(sst2_store, data_dir):
    from torch.utils.data import DataLoader

    from snowfire.heads import build_head
    from snowfire.tasks import get_task, read_split

    reader, info = sst2_store
    data = snowfire.FeatureDataset(reader, info, data=data_dir)
    labels = get_task("sst2").labels
    gold = [labels.index(str(e.label)) for e in read_split("sst2", data_dir, "train")]
    assert [int(data[i]["label"]) for i in range(len(data))] == gold
    sampler = snowfire.LengthBucketSampler(data.lengths, token_budget=64, seed=0)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=data.collate)
    head = build_head(
        "linear",
        kind="classification",
        pair=False,
        num_layers=info.num_layers,
        dim=info.dim,
        num_labels=2,
    )
    seen = []
    for batch in loader:
        assert batch.features.shape[0] * batch.features.shape[1] <= 64 or len(batch) == 1
        _, loss = head(batch)
        assert torch.isfinite(loss)
        seen += batch.keys
    assert sorted(seen) == sorted(reader.featureset_keys(info.id))


def test_lengths_are_the_stored_token_counts(sst2_store):
    reader, info = sst2_store
    data = snowfire.FeatureDataset(reader, info)
    eb = reader.read(info.id, indices=list(range(info.num_examples)))
    assert data.lengths.tolist() == np.diff(eb.offsets).tolist()


def test_the_sampler_buckets_by_length_and_shuffles_batches_per_epoch():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8, 4, 6]
    fixed = snowfire.LengthBucketSampler(lengths, batch_size=3, shuffle=False)
    assert list(fixed) == [[1, 6, 3], [4, 8, 0], [9, 5, 7], [2]]  # by (length, index)
    budget = snowfire.LengthBucketSampler(lengths, token_budget=12, shuffle=False)
    batches = list(budget)
    assert sorted(i for b in batches for i in b) == list(range(10))
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 12 or len(b) == 1
    shuffled = snowfire.LengthBucketSampler(lengths, batch_size=3, seed=4)
    first, second = list(shuffled), list(shuffled)
    assert sorted(first) == sorted(second) == sorted(fixed.batches) and first != second
    again = snowfire.LengthBucketSampler(lengths, batch_size=3, seed=4)
    assert list(again) == first  # the seed fixes the order
    with pytest.raises(ValueError, match="exactly one of batch_size, token_budget"):
        snowfire.LengthBucketSampler(lengths)


def test_tagging_labels_are_per_word_and_padded_by_collate(tiny_bert_dir, data_dir, tmp_path):
    from snowfire.tasks import get_task, read_split

    store = tmp_path / "store"
    snowfire.extract(
        snowfire.ExtractConfig(
            encoder=f"hf:{tiny_bert_dir}",
            task="conll2003",
            data=str(data_dir),
            store=str(store),
            split=["dev"],
            progress=False,
        )
    )
    info = snowfire.open_store(store).find_featureset(
        encoder=f"hf:{tiny_bert_dir}", task="conll2003", split="dev"
    )
    data = snowfire.FeatureDataset(store, info, data=data_dir)
    tags = get_task("conll2003").labels
    examples = read_split("conll2003", data_dir, "dev")
    for i in (0, 1):
        assert data[i]["label"].tolist() == [tags.index(t) for t in examples[i].tags]
    batch = data.collate([data[0], data[1]])
    n0, n1 = len(examples[0].tags), len(examples[1].tags)
    assert batch.labels.shape == (2, max(n0, n1))
    assert batch.labels[0, n0:].tolist() == [-100] * (max(n0, n1) - n0)  # padding is ignored
    assert batch.word_mask.sum(-1).tolist() == [n0, n1]
    with pytest.raises(ValueError, match="pool 'mean': conll2003 labels every word; pool none"):
        snowfire.FeatureDataset(store, info, data=data_dir, pool="mean")
