"""Server-side reductions (cache/reduce.py; `mix`, `pool`, `pool_sides` on /features) against
the same computation written as plain loops over the full features."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app
from snowfire.cache import ExampleBatch, InvalidSelectionError, Store, wire
from snowfire.cache.reduce import mix_layers, pool_examples, reduce_batch


def _batch(rng, lengths, pair_starts, n_layers=3, dim=4) -> ExampleBatch:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words, types = [], []
    for length, start in zip(lengths, pair_starts, strict=True):
        w = np.arange(length, dtype=np.int32) - 1
        w[0] = w[-1] = -1  # [CLS] ... [SEP]
        t = np.zeros(length, np.int8)
        if start >= 0:
            w[start - 1] = -1  # the [SEP] between the texts
            t[start:] = 1
        words.append(w)
        types.append(t)
    return ExampleBatch(
        features=rng.standard_normal((int(offsets[-1]), n_layers, dim)).astype(np.float16),
        offsets=offsets,
        word_ids=np.concatenate(words),
        type_ids=np.concatenate(types),
        pair_starts=np.array(pair_starts, np.int64),
        layers=list(range(n_layers)),
        keys=[f"k{i}" for i in range(len(lengths))],
    )


def test_mix_is_the_weighted_sum_of_layers():
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((5, 3, 4)).astype(np.float16)
    got = mix_layers(feats, [0.2, 0.3, 0.5], 2.0)
    want = np.zeros((5, 1, 4), np.float64)
    for t in range(5):
        for layer, w in enumerate([0.2, 0.3, 0.5]):
            want[t, 0] += 2.0 * w * feats[t, layer].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    with pytest.raises(InvalidSelectionError, match="2 weights for 3 layers"):
        mix_layers(feats, [0.5, 0.5], 1.0)


@pytest.mark.parametrize("how", ["mean", "max", "first"])
def test_pooling_per_example_and_per_side_equals_loops(how):
    rng = np.random.default_rng(1)
    batch = _batch(rng, [7, 9, 6], [4, 5, 3])
    whole, sides = pool_examples(batch, how), pool_examples(batch, how, sides=True)
    assert whole.shape == (3, 3, 4) and sides.shape == (3, 2, 3, 4)
    for i in range(3):
        rows = batch.example(i).astype(np.float32)
        w = batch.word_ids[batch.offsets[i] : batch.offsets[i + 1]]
        t = batch.type_ids[batch.offsets[i] : batch.offsets[i + 1]]
        pick = {"mean": lambda r: r.mean(0), "max": lambda r: r.max(0), "first": lambda r: r[0]}
        want = rows[0] if how == "first" else pick[how](rows[w >= 0])
        np.testing.assert_allclose(whole[i], want, rtol=0, atol=1e-6)
        for side in (0, 1):
            np.testing.assert_allclose(
                sides[i, side], pick[how](rows[(w >= 0) & (t == side)]), rtol=0, atol=1e-6
            )
    single = _batch(rng, [5], [-1])
    with pytest.raises(InvalidSelectionError, match="example 0 .* is a single text"):
        pool_examples(single, how, sides=True)


def test_reduced_batches_keep_the_batch_shape_contract():
    rng = np.random.default_rng(2)
    batch = _batch(rng, [6, 8], [3, 4])
    out = reduce_batch(batch, pool="mean", sides=True, mix=([0.5, 0.25, 0.25], 1.5))
    assert out.features.shape == (4, 1, 4) and list(out.offsets) == [0, 2, 4]
    assert list(out.type_ids) == [0, 1, 0, 1] and out.keys == batch.keys
    mixed = mix_layers(batch.features, [0.5, 0.25, 0.25], 1.5)
    staged = ExampleBatch(
        mixed,
        batch.offsets,
        batch.word_ids,
        batch.type_ids,
        batch.pair_starts,
        batch.layers,
        batch.keys,
    )
    np.testing.assert_array_equal(
        out.features.reshape(2, 2, 1, 4), pool_examples(staged, "mean", sides=True)
    )
    with pytest.raises(InvalidSelectionError, match="pool_sides needs a pool"):
        reduce_batch(batch, sides=True)


@pytest.fixture
def pair_store(tiny_bert_dir, tmp_path):
    from snowfire.extractor import ExtractConfig, extract, load_encoder
    from snowfire.extractor.base import TextInput

    store = Store(tmp_path / "store")
    pairs = [
        ("a man plays", "the guitar is good"),
        ("the dog runs", "a cat eats"),
        ("someone eats food in the park", "people eat"),
    ]
    texts = [TextInput(tuple(a.split()), tuple(b.split())) for a, b in pairs]
    info = extract(
        load_encoder(f"hf:{tiny_bert_dir}"),
        texts,
        store,
        task=None,
        split=None,
        config=ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False),
    )
    return store, info.id


def test_the_service_reduces_as_the_plain_computation_does(pair_store):
    store, fs_id = pair_store
    settings = Settings(store=store.path, read_chunk_examples=2)  # reduced chunk by chunk
    with TestClient(create_app(settings=settings)) as client:
        full = store.read(fs_id, indices=[2, 0, 1], layers=[1, 2])
        body = {
            "indices": [2, 0, 1],
            "layers": [1, 2],
            "mix": {"weights": [0.7, 0.3], "gamma": 0.5},
            "pool": "max",
            "pool_sides": True,
        }
        r = client.post(f"/v1/featuresets/{fs_id}/features", json=body)
        assert r.status_code == 200, r.text
        got = wire.decode(r.content)
        want = reduce_batch(full, pool="max", sides=True, mix=([0.7, 0.3], 0.5))
        np.testing.assert_allclose(got.features, want.features, rtol=0, atol=1e-6)
        assert got.keys == full.keys and list(got.offsets) == [0, 2, 4, 6]
        j = client.post(
            f"/v1/featuresets/{fs_id}/features", json=body, headers={"Accept": "application/json"}
        ).json()
        np.testing.assert_array_equal(np.asarray(j["features"], np.float32), got.features)
        mixed = client.post(
            f"/v1/featuresets/{fs_id}/features",
            json={"indices": [0], "mix": {"weights": [1, 0, 0]}},
        )
        np.testing.assert_array_equal(
            wire.decode(mixed.content).features[:, 0], store.read(fs_id, indices=[0]).features[:, 0]
        )
        bad = client.post(
            f"/v1/featuresets/{fs_id}/features", json={"indices": [0], "mix": {"weights": [1, 0]}}
        )
        assert bad.status_code == 409 and "2 weights for 3 layers" in bad.json()["detail"]
