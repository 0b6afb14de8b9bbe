"""Serving's fast path (EmbedWorker.features): the texts a request needs encoded come from the
encoder's own arrays, cast as the store holds them, while their segment is written; texts
encoded lately come from memory (cache/recent.py); the others from the store. Every way gives
the bytes `ensure` and `Store.read_keys` give."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from snowfire.cache import ExampleBatch, RecentFeatures, Store, segment_arrays
from tests.helpers import WORDS


def _texts(n: int, seed: int):
    from snowfire.extractor import TextInput

    rng = random.Random(seed)
    return [TextInput(tuple(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))) for _ in range(n)]


def _parts(n: int, layers: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = int(rng.integers(1, 7))
        feats = rng.normal(0, 3, size=(s, layers, dim)).astype(np.float32)
        out.append((feats, np.arange(s, dtype=np.int32) - 1, np.zeros(s, np.int8), i % 2 - 1))
    return out


def _same(a: ExampleBatch, b: ExampleBatch) -> None:
    """Bit for bit: every array, its dtype, the layers and the keys."""
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts", "scales"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name
    assert a.layers == b.layers and a.keys == b.keys


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("layers", [None, [2], [0, 3]])
def test_a_segments_arrays_are_what_a_read_of_the_written_segment_gives(tmp_path, dtype, layers):
    store = Store(tmp_path / "store")
    pool = store.ensure_pool({"encoder": "made-up", "dtype": dtype}, dtype, 4, 6)
    keys = [f"k{i}" for i in range(5)]
    parts = _parts(5, 4, 6, seed=3)
    arrays = segment_arrays(keys, parts, dtype)
    with store.writer(pool):
        store.write_segment(pool, "seg", keys, arrays, dtype)
    order = ["k3", "k0", "k3", "k4"]  # out of order, one twice
    read = store.read_keys(pool, order, layers)
    mine = arrays.batch(keys).with_layers(layers).select([3, 0, 3, 4])
    _same(mine, read)
    # written from the parts themselves: the same files' values
    with store.writer(pool):
        store.write_segment(pool, "seg2", [f"j{i}" for i in range(5)], parts, dtype)
    again = store.read_keys(pool, [f"j{i}" for i in (3, 0, 3, 4)], layers)
    assert again.features.tobytes() == read.features.tobytes()


def test_select_and_with_layers_match_a_hand_slicing():
    keys = ["a", "b", "c"]
    batch = segment_arrays(keys, _parts(3, 3, 2, seed=5), "float32").batch(keys)
    got = batch.select([2, 0]).with_layers([2, 0])
    o = batch.offsets
    want = np.concatenate([batch.features[o[2] : o[3]], batch.features[o[0] : o[1]]])[:, [2, 0]]
    assert np.array_equal(got.features, want)
    assert got.offsets.tolist() == [0, o[3] - o[2], o[3] - o[2] + o[1] - o[0]]
    assert got.keys == ["c", "a"] and got.layers == [2, 0]
    assert got.pair_starts.tolist() == [batch.pair_starts[2], batch.pair_starts[0]]
    assert len(batch.select([])) == 0


def test_recent_features_keep_the_latest_within_their_byte_bound():
    keys = [f"k{i}" for i in range(6)]
    batch = segment_arrays(keys, _parts(6, 2, 4, seed=7), "float16").batch(keys)
    sizes = {k: batch.select([i]).nbytes for i, k in enumerate(keys)}
    bound = sizes["k3"] + sizes["k4"] + sizes["k5"]
    recent = RecentFeatures(bound)
    recent.add("p", batch)
    assert recent.bytes <= bound
    assert [k for k in keys if recent.get("p", k) is not None] == ["k3", "k4", "k5"]
    _same(recent.get("p", "k4"), batch.select([4]))
    assert recent.get("other-pool", "k4") is None
    recent.get("p", "k3")  # used: k4 is now the oldest
    recent.add("p", batch.select([0]))
    assert recent.get("p", "k4") is None and recent.get("p", "k3") is not None
    recent.drop("p", ["k3", "k0"])
    left = [k for k in keys if recent.get("p", k) is not None]
    assert "k3" not in left and "k0" not in left
    assert recent.bytes == sum(sizes[k] for k in left)
    nothing = RecentFeatures(0)
    nothing.add("p", batch)
    assert len(nothing) == 0
    with pytest.raises(ValueError, match="max_bytes"):
        RecentFeatures(-1)


@pytest.fixture
def worker(tiny_bert_dir, tmp_path):
    from snowfire.extractor import EmbedWorker, ExtractConfig

    store = Store(tmp_path / "store")
    config = ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False)
    w = EmbedWorker(store, config, max_wait_ms=0)
    yield w
    w.close()


def test_features_give_the_stored_bytes_for_new_recent_and_stored_texts(worker, tmp_path):
    store = worker.store
    texts = _texts(7, seed=11)
    keys = worker.keys(texts, "joint")
    pool = worker.pool("joint")
    worker.ensure(texts[:3], keys[:3], "joint")  # stored before
    worker.recent.drop(pool, keys[:3])  # so these come from the store
    asked = [texts[4], texts[0], texts[5], texts[4], texts[2]]
    asked_keys = [keys[4], keys[0], keys[5], keys[4], keys[2]]
    layers = [worker.encoder("joint").num_layers - 1, 0]  # the last and the first, that order
    got, hits = worker.features(asked, asked_keys, "joint", layers)
    assert hits == [False, True, False, False, True]  # a repeat of a new text is new too
    rounds = worker.rounds
    worker.ensure(asked, asked_keys, "joint")  # waits for the write behind it
    assert worker.rounds == rounds  # and encodes nothing again
    _same(got, store.read_keys(pool, asked_keys, layers))  # written: the same bytes
    assert worker.recent.get(pool, keys[4]) is not None  # just encoded: kept in memory
    again, hits = worker.features(asked, asked_keys, "joint", None)
    assert hits == [True] * 5
    _same(again, store.read_keys(pool, asked_keys, None))


def test_a_request_is_answered_before_its_segment_is_written_and_a_failed_write_is_forgotten(
    worker,
):
    store, pool = worker.store, worker.pool("joint")
    write, gate, writing = store.write_segment, threading.Event(), threading.Event()

    def held(*args, **kwargs):
        writing.set()
        assert gate.wait(60)
        raise OSError("disk full (made up)")

    store.write_segment = held
    texts = _texts(3, seed=12)
    keys = worker.keys(texts, "joint")
    got, hits = worker.features(texts, keys, "joint", None)  # returns while the write waits
    assert writing.is_set() and hits == [False] * 3
    assert store.missing_keys(pool, keys) == keys  # not written yet
    _same(got, ExampleBatch.concat([worker.recent.get(pool, k) for k in keys]))
    gate.set()
    for _ in range(200):  # the encoder thread fails the write and forgets the texts
        if worker.recent.get(pool, keys[0]) is None:
            break
        threading.Event().wait(0.05)
    assert all(worker.recent.get(pool, k) is None for k in keys)
    store.write_segment = write
    assert worker.ensure(texts, keys, "joint") == [False] * 3  # encoded again, now stored
    stored = store.read_keys(pool, keys, None)
    assert stored.features.tobytes() == got.features.tobytes()
    assert store.missing_keys(pool, keys) == []


def test_an_ensure_waiting_on_a_failed_write_gets_the_error(worker):
    store = worker.store

    def broken(*args, **kwargs):
        raise OSError("disk full (made up)")

    store.write_segment = broken
    texts = _texts(2, seed=13)
    with pytest.raises(OSError, match="disk full"):
        worker.ensure(texts, worker.keys(texts, "joint"), "joint")
