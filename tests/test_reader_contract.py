"""One contract every `cache.Reader` passes: the local store, a bucket (moto's S3 server) and
the REST service (uvicorn on loopback) give the same listings, the same keys and texts, reads
equal to the local store's byte for byte, and the same exception types (cache/errors.py).

A new reader is one entry in `READERS`. The local store itself is checked against the arrays
written, so the oracle the others are compared with is not taken on trust.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from snowfire.cache import (
    DirectoryBackend,
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    InvalidSelectionError,
    Reader,
    Store,
    StoreError,
    digest,
    example_key,
    open_reader,
    open_store,
)

LAYERS, DIM = 3, 8
# (id, dtype, encoder seed, task, split, tokens per example, texts stored)
SETS = [
    ("pairs16", "float16", 0, "sst2", "dev", [3, 5, 2, 4, 6, 1, 7], True),
    ("train32", "float32", 1, "sst2", "train", [4, 9, 1, 2, 30, 3], True),
    ("quant8", "int8", 2, "mnli", "dev", [2, 6, 3, 5], True),
    ("twin-a", "float32", 3, "rte", "dev", [2, 3], True),  # two sets of one encoder, task and
    ("twin-b", "float32", 3, "rte", "dev", [4, 1], True),  # split: finding them is ambiguous
    ("bare", "float16", 4, "qnli", "dev", [3, 3, 2], False),  # stored without its texts
]
SEGMENT_EXAMPLES = 3  # examples per segment: every set but the twins spans several
#: The twins' source files: one digest each, read two ways (find_featureset's sha256 and read)
SOURCES = {
    "twin-a": {"path": "a.tsv", "sha256": "a" * 64, "read": "tsv:sentence"},
    "twin-b": {"path": "b.tsv", "sha256": "b" * 64, "read": "tsv:text"},
}


def _examples(seed: int, lengths: list[int]) -> list[tuple[dict, tuple]]:
    """(text, (features (S, L, D) float32, word_ids, type_ids, pair_start)) per example;
    every other example is a pair, its second text from the middle token on."""
    rng = np.random.default_rng(100 + seed)
    out = []
    for i, n in enumerate(lengths):
        pair = i % 2 == 0 and n > 1
        start = n // 2 if pair else -1
        features = rng.normal(size=(n, LAYERS, DIM)).astype(np.float32)  # (S, L, D)
        types = (np.arange(n) >= start).astype(np.int8) if pair else np.zeros(n, np.int8)  # (S,)
        words = np.arange(n, dtype=np.int32)  # (S,) word index within its own text
        if pair:
            words[start:] -= start
        words[0] = -1  # a special token, as [CLS] is
        text = {"a": [f"s{seed}a{i}"], "b": [f"s{seed}b{i}"] if pair else None}
        out.append((text, (features, words, types, start)))
    return out


def write_sets(store: Store) -> dict[str, list[tuple[dict, tuple]]]:
    """Write every set of SETS through the store's own writer; what was written, by set."""
    written = {}
    for fs_id, dtype, seed, task, split, lengths, with_texts in SETS:
        identity = {
            "name": f"enc{seed}",
            "spec": f"fake:{seed}",
            "seed": seed,
            "pair_encoding": "joint" if seed == 0 else None,
        }
        pool = store.ensure_pool(identity, dtype, LAYERS, DIM)
        examples = _examples(seed, lengths) if fs_id != "twin-b" else _examples(5, lengths)
        keys = [example_key(pool, text) for text, _ in examples]
        with store.writer(pool):
            for lo in range(0, len(keys), SEGMENT_EXAMPLES):
                part = slice(lo, lo + SEGMENT_EXAMPLES)
                parts = [p for _, p in examples[part]]
                store.write_segment(pool, digest(keys[part], 24), keys[part], parts, dtype)
        manifest = {
            "id": fs_id,
            "encoder": identity,
            "encoder_id": pool,
            "task": task,
            "split": split,
            "num_layers": LAYERS,
            "dim": DIM,
            "dtype": dtype,
        }
        if fs_id in SOURCES:
            manifest["source"] = SOURCES[fs_id]
        texts = [text for text, _ in examples] if with_texts else None
        store.write_featureset(manifest, keys, texts)
        written[fs_id] = examples
    return written


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The local store's directory and what was written into it."""
    path = tmp_path_factory.mktemp("reader-contract") / "store"
    return path, write_sets(Store(path))


@pytest.fixture(scope="module")
def local(written) -> Store:
    return Store(written[0])


def _local(written, request):
    return open_reader(written[0])


class _ByRanges:
    """The local directory's backend, not saying its objects are files: the store reads its
    segments by byte ranges (cache/ranged.py), as it reads object storage."""

    root = None

    def __init__(self, inner: DirectoryBackend):
        self.inner, self.location = inner, inner.location

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _ranges(written, request):
    return Store(_ByRanges(DirectoryBackend(written[0])))


def _bucket(written, request):
    url = request.getfixturevalue("local_s3")()
    write_sets(open_store(url))
    return open_reader(url)  # a fresh one: nothing cached from the writes


def _rest(written, request):
    from snowfire.api import Settings
    from tests.helpers.service import Server

    server = Server(Settings(store=written[0]))
    server.__enter__()
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    reader = open_reader(server.url)
    request.addfinalizer(reader.close)
    return reader


READERS = {"local": _local, "ranges": _ranges, "bucket": _bucket, "rest": _rest}


@pytest.fixture(scope="module", params=list(READERS))
def reader(request, written) -> Reader:
    return READERS[request.param](written, request)


def assert_same_batch(got, want) -> None:
    """Equal arrays, dtypes alike, and the same layers, keys and scales."""
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts", "scales"):
        a, b = getattr(got, name), getattr(want, name)
        if b is None:
            assert a is None, name
            continue
        assert a.dtype == b.dtype and a.shape == b.shape, (name, a.dtype, b.dtype)
        assert a.tobytes() == b.tobytes(), name
    assert (got.layers, got.keys) == (want.layers, want.keys)


# ---------------------------------------------------------------- the oracle
@pytest.mark.parametrize("fs_id", ["pairs16", "train32"])
def test_the_local_store_reads_back_what_was_written(local, written, fs_id):
    """float sets come back exactly (float16 as the float32 written, rounded once)."""
    dtype = local.get_featureset(fs_id).dtype
    examples = written[1][fs_id]
    order = list(range(len(examples)))[::-1]
    eb = local.read(fs_id, indices=order, layers=[2, 0])
    for i, k in enumerate(order):
        features, words, types, start = examples[k][1]
        np.testing.assert_array_equal(eb.example(i), features[:, [2, 0]].astype(dtype))
        s, e = eb.offsets[i], eb.offsets[i + 1]
        np.testing.assert_array_equal(eb.word_ids[s:e], words)
        np.testing.assert_array_equal(eb.type_ids[s:e], types)
        assert eb.pair_starts[i] == start


# ---------------------------------------------------------------- look-ups
def test_it_is_a_reader(reader):
    assert isinstance(reader, Reader)
    assert str(reader.path)


def test_listing(reader, local):
    got, want = reader.list_featuresets(), local.list_featuresets()
    assert [fs.id for fs in got] == sorted(s[0] for s in SETS)
    assert got == want
    assert [fs.manifest for fs in got] == [fs.manifest for fs in want]
    for fs in want:
        assert reader.get_featureset(fs.id) == fs
        assert reader.get_featureset(fs.id).manifest == fs.manifest


def test_find(reader, local):
    for encoder in ("fake:1", "enc1"):  # by spec or by name
        found = reader.find_featureset(encoder=encoder, task="sst2", split="train")
        assert found == local.get_featureset("train32")
    for pair_encoding in (None, "joint"):
        found = reader.find_featureset(
            encoder="fake:0", task="sst2", split="dev", pair_encoding=pair_encoding
        )
        assert found.id == "pairs16"


def test_find_by_source(reader, local):
    """The twins differ only in their source file: its digest, or how it was read, names one."""
    for fs_id, source in SOURCES.items():
        common = {"encoder": "fake:3", "task": "rte", "split": "dev"}
        assert reader.find_featureset(**common, sha256=source["sha256"]).id == fs_id
        assert reader.find_featureset(**common, read=source["read"]).id == fs_id
        both = reader.find_featureset(**common, sha256=source["sha256"], read=source["read"])
        assert both == local.get_featureset(fs_id)
    with pytest.raises(FeatureSetNotFoundError, match="from the file with sha256 cccccccccccc"):
        reader.find_featureset(encoder="fake:3", task="rte", split="dev", sha256="c" * 64)
    with pytest.raises(FeatureSetNotFoundError, match="'rte', split 'dev'"):
        reader.find_featureset(
            encoder="fake:3", task="rte", split="dev", sha256="a" * 64, read="tsv:text"
        )


def test_keys_order_lengths_and_texts(reader, local, written):
    for fs_id, *_, lengths, _ in SETS:
        assert reader.featureset_lengths(fs_id) == lengths  # as written: the sizes of pages
        keys = reader.featureset_keys(fs_id)
        assert keys == local.featureset_keys(fs_id)
        assert len(keys) == len(written[1][fs_id]) == reader.get_featureset(fs_id).num_examples
        assert reader.storage_order(fs_id) == local.storage_order(fs_id)
        assert sorted(reader.storage_order(fs_id)) == list(range(len(keys)))
    for fs_id in ("pairs16", "train32", "quant8"):
        assert reader.featureset_texts(fs_id) == [t for t, _ in written[1][fs_id]]


# ---------------------------------------------------------------- reads
@pytest.mark.parametrize("fs_id", ["pairs16", "train32", "quant8"])
@pytest.mark.parametrize("layers", [None, [1], [2, 0], [0, 0]])
def test_reads_by_index_and_key_equal_the_local_store(reader, local, fs_id, layers):
    n = local.get_featureset(fs_id).num_examples
    idx = [n - 1, 0, 2, 0, 1]  # out of order, one repeated
    want = local.read(fs_id, indices=idx, layers=layers)
    assert_same_batch(reader.read(fs_id, indices=idx, layers=layers), want)
    assert_same_batch(reader.read(fs_id, indices=np.array(idx), layers=layers), want)
    keys = [local.featureset_keys(fs_id)[i] for i in idx]
    assert_same_batch(reader.read(fs_id, keys=keys, layers=layers), want)
    everything = local.read(fs_id, indices=range(n), layers=layers)
    assert_same_batch(reader.read(fs_id, indices=list(range(n)), layers=layers), everything)


@pytest.mark.parametrize(
    "fs_id, dtype",
    [
        ("pairs16", "float32"),
        ("train32", "float16"),
        ("quant8", "float16"),
        ("quant8", "float32"),
        ("quant8", "int8"),
    ],
)
def test_reads_in_another_dtype_equal_the_local_store(reader, local, fs_id, dtype):
    idx = [3, 1, 0]
    want = local.read(fs_id, indices=idx, layers=[2, 1], dtype=dtype)
    assert str(want.features.dtype) == dtype
    assert (want.scales is not None) == (dtype == "int8")
    assert_same_batch(reader.read(fs_id, indices=idx, layers=[2, 1], dtype=dtype), want)


def test_an_empty_read(reader, local):
    want = local.read("pairs16", indices=[])
    assert len(want) == 0 and want.features.shape == (0, LAYERS, DIM)
    assert_same_batch(reader.read("pairs16", indices=[]), want)
    assert_same_batch(reader.read("pairs16", keys=[]), want)


# ---------------------------------------------------------------- errors
NOT_FOUND = [
    ("get_featureset", {}),
    ("featureset_keys", {}),
    ("featureset_texts", {}),
    ("storage_order", {}),
    ("featureset_lengths", {}),
    ("read", {"indices": [0]}),
    ("read", {"keys": ["abc"]}),
]


@pytest.mark.parametrize("method, kwargs", NOT_FOUND)
def test_an_unknown_feature_set(reader, method, kwargs):
    with pytest.raises(FeatureSetNotFoundError, match="no-such-set"):
        getattr(reader, method)("no-such-set", **kwargs)


@pytest.mark.parametrize("fs_id", ["", "pairs16/..", "../featuresets/pairs16", "a b", "PAIRS16"])
def test_an_id_no_feature_set_can_have(reader, fs_id):
    """Names that are paths or empty are unknown sets, not files or the listing."""
    # the set named, or (REST, an id with a slash) the router's own 404: no route matches it
    unknown = re.escape(f"no feature set {fs_id!r}") + ("|^Not Found$" if "/" in fs_id else "")
    for method in ("get_featureset", "featureset_keys", "featureset_lengths"):
        with pytest.raises(FeatureSetNotFoundError, match=unknown):
            getattr(reader, method)(fs_id)
    with pytest.raises(FeatureSetNotFoundError, match=unknown):
        reader.read(fs_id, indices=[0])


def test_find_without_a_match_or_with_several(reader):
    with pytest.raises(FeatureSetNotFoundError, match="'nobody'"):
        reader.find_featureset(encoder="nobody", task="sst2", split="dev")
    with pytest.raises(FeatureSetNotFoundError, match="'sst2'"):
        reader.find_featureset(encoder="fake:0", task="sst2", split="test")
    with pytest.raises(FeatureSetNotFoundError, match="'fake:0'"):
        reader.find_featureset(encoder="fake:0", task="sst2", split="dev", pair_encoding="separate")
    with pytest.raises(FeatureSetNotFoundError, match="twin-a, twin-b"):
        reader.find_featureset(encoder="fake:3", task="rte", split="dev")


def test_an_unknown_key(reader, local):
    known = local.featureset_keys("pairs16")[0]
    with pytest.raises(ExampleNotFoundError, match="not-a-key"):
        reader.read("pairs16", keys=[known, "not-a-key"])
    other = local.featureset_keys("train32")[0]  # stored, but in another encoder's pool
    with pytest.raises(ExampleNotFoundError, match=other):
        reader.read("pairs16", keys=[other])


@pytest.mark.parametrize(
    "selection, match",
    [
        ({"indices": [0, 7]}, "index 7 out of range"),
        ({"indices": [-1]}, "index -1 out of range"),
        ({"indices": [True]}, "integer"),
        ({"indices": [1.0]}, "index 1.0 is not an integer"),  # JSON's 1.0 is 1; Python's not
        ({"indices": [0], "layers": [3]}, "layer 3 out of range"),
        ({"indices": [0], "layers": [0, -1]}, "layer -1 out of range"),
        ({"indices": [0], "layers": []}, "layers is empty"),
        ({"indices": [0], "keys": ["k"]}, "exactly one of indices or keys"),
        ({}, "exactly one of indices or keys"),
        ({"indices": [0], "dtype": "int8"}, "stored as float16"),
        ({"indices": [0], "dtype": "bfloat16"}, "dtype 'bfloat16'"),
    ],
)
def test_an_invalid_selection(reader, selection, match):
    with pytest.raises(InvalidSelectionError, match=match):
        reader.read("pairs16", **selection)


def test_texts_not_stored(reader):
    with pytest.raises(ExampleNotFoundError, match="without its texts"):
        reader.featureset_texts("bare")
    assert len(reader.read("bare", indices=[2, 0]).keys) == 2  # its features are there


def test_every_error_is_a_store_error_and_a_builtin(reader):
    """Callers catch either: KeyError for what is not there, ValueError for a bad selection."""
    with pytest.raises(FeatureSetNotFoundError) as missing:
        reader.get_featureset("no-such-set")
    assert isinstance(missing.value, StoreError) and isinstance(missing.value, KeyError)
    with pytest.raises(InvalidSelectionError) as invalid:
        reader.read("pairs16", indices=[99])
    assert isinstance(invalid.value, StoreError) and isinstance(invalid.value, ValueError)
