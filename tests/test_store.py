"""The store on its own: round trip (property test), selections, errors, content addressing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snowfire.cache import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    InvalidSelectionError,
    Store,
    canonical_json,
    digest,
    example_key,
)


def _write(store: Store, lengths, layers=3, dim=8, dtype="float32", pair=False, seed=0):
    rng = np.random.default_rng(seed)
    pool = store.ensure_pool({"name": "fake", "spec": "fake"}, dtype, layers, dim)
    parts, keys = [], []
    for i, n in enumerate(lengths):
        feats = rng.normal(size=(n, layers, dim)).astype(np.float32)
        words = np.arange(n, dtype=np.int32) - 1
        types = (np.arange(n) >= n // 2).astype(np.int8) if pair else np.zeros(n, np.int8)
        parts.append((feats, words, types, n // 2 if pair else -1))
        keys.append(example_key(pool, {"a": [str(seed), str(i)], "b": None}))
    with store.writer(pool):
        store.write_segment(pool, digest(keys, 24), keys, parts, dtype)
    manifest = {
        "id": f"fs{seed}",
        "encoder": {"name": "fake", "spec": "fake"},
        "encoder_id": pool,
        "task": "t",
        "split": "dev",
        "num_layers": layers,
        "dim": dim,
        "dtype": dtype,
    }
    return store.write_featureset(manifest, keys), parts


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(1, 70), min_size=1, max_size=12),
    dtype=st.sampled_from(["float16", "float32"]),
    data=st.data(),
)
def test_round_trip(tmp_path_factory, lengths, dtype, data):
    store = Store(tmp_path_factory.mktemp("store") / "s")
    info, parts = _write(store, lengths, dtype=dtype, pair=True)
    idx = data.draw(st.lists(st.integers(0, len(lengths) - 1), min_size=1, max_size=20))
    layers = data.draw(st.none() | st.lists(st.integers(0, 2), min_size=1, max_size=3))
    batch = Store(store.path).read(info.id, indices=idx, layers=layers)
    tol = 2e-3 * 4 if dtype == "float16" else 0  # |x| < ~4.5 for these normals
    for j, i in enumerate(idx):
        want = parts[i][0] if layers is None else parts[i][0][:, layers]
        got = batch.example(j)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.astype(np.float32), want, atol=tol, rtol=1e-3 if tol else 0)
        s, e = batch.offsets[j], batch.offsets[j + 1]
        np.testing.assert_array_equal(batch.word_ids[s:e], parts[i][1])
        np.testing.assert_array_equal(batch.type_ids[s:e], parts[i][2])
        assert batch.pair_starts[j] == parts[i][3]
    assert info.manifest["num_tokens"] == sum(lengths)


def test_read_by_key_and_by_index_agree(tmp_path):
    store = Store(tmp_path / "s")
    info, _ = _write(store, [3, 5, 2])
    keys = store.featureset_keys(info.id)
    a = store.read(info.id, indices=[2, 0])
    b = store.read(info.id, keys=[keys[2], keys[0]])
    np.testing.assert_array_equal(a.features, b.features)
    assert a.keys == b.keys


def test_errors_name_what_was_wrong(tmp_path):
    store = Store(tmp_path / "s")
    info, _ = _write(store, [3, 5])
    with pytest.raises(FeatureSetNotFoundError, match="no feature set 'nope'"):
        store.read("nope", indices=[0])
    with pytest.raises(InvalidSelectionError, match=r"index 2 out of range.*examples 0\.\.1"):
        store.read(info.id, indices=[2])
    with pytest.raises(InvalidSelectionError, match=r"layer 3 out of range.*layers 0\.\.2"):
        store.read(info.id, indices=[0], layers=[3])
    with pytest.raises(InvalidSelectionError, match="exactly one of indices or keys"):
        store.read(info.id)
    with pytest.raises(ExampleNotFoundError, match="'abc' is not in pool"):
        store.read(info.id, keys=["abc"])
    with pytest.raises(
        FeatureSetNotFoundError, match="no feature set for encoder 'other'.*fake:t/dev"
    ):
        store.find_featureset(encoder="other", task="t", split="dev")


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(IncompatibleStoreError, match="not empty and is not a store"):
        Store(tmp_path / "x").ensure()
    assert (tmp_path / "x" / "notes.txt").read_text() == "mine"


def test_float16_overflow_refused_and_nothing_written(tmp_path):
    store = Store(tmp_path / "s")
    pool = store.ensure_pool({"name": "big"}, "float16", 1, 2)
    feats = np.full((2, 1, 2), 1e6, dtype=np.float32)
    with pytest.raises(OverflowError, match="beyond float16 range.*--dtype float32"):
        with store.writer(pool):
            store.write_segment(
                pool,
                "seg",
                ["k"],
                [(feats, np.zeros(2, np.int32), np.zeros(2, np.int8), -1)],
                "float16",
            )
    assert store.missing_keys(pool, ["k"]) == ["k"]


def test_canonical_hashing():
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert digest({"a": 1}) == digest({"a": 1}) != digest({"a": 2})
    with pytest.raises(ValueError, match="non-finite"):
        digest({"x": float("nan")})
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        digest({"x": object()})


def test_manifest_parsed_once_and_reread_when_replaced(tmp_path, monkeypatch):
    from snowfire import cache

    clock = [1000.0]
    monkeypatch.setattr(cache.store.time, "monotonic", lambda: clock[0])
    store = Store(tmp_path / "s")
    info, _ = _write(store, [3, 5])
    assert store.get_featureset(info.id) is store.get_featureset(info.id)  # cached parse
    manifest = {**info.manifest, "task": "renamed"}
    store.write_featureset(manifest, store.featureset_keys(info.id))
    assert store.get_featureset(info.id).task == "renamed"  # this process's write: at once
    # another process replaces the manifest (its keys too): seen once the TTL has passed
    other = Store(tmp_path / "s")
    keys = store.featureset_keys(info.id)
    other.write_featureset({**manifest, "task": "elsewhere"}, keys[:1])
    assert store.get_featureset(info.id).task == "renamed"  # within manifest_ttl: no stat
    clock[0] += store.manifest_ttl
    assert store.get_featureset(info.id).task == "elsewhere"
    assert store.featureset_keys(info.id) == keys[:1]  # the keys were re-read with it
    (tmp_path / "s" / "featuresets" / f"{info.id}.json").unlink()
    clock[0] += store.manifest_ttl
    with pytest.raises(FeatureSetNotFoundError, match=f"no feature set '{info.id}'"):
        store.get_featureset(info.id)
