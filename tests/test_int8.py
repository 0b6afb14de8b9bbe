"""int8 storage (cache/quant.py): the scheme by hand, its error bound, the store, the wire, the
service and extraction, each against the float values they stand for."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from snowfire.cache import ExampleBatch, InvalidSelectionError, Store, StoreError, quant
from snowfire.cache.segment import Segment, write_segment
from snowfire.cache.wire import body_bytes, decode, encode
from tests.helpers.service import DIM, LAYERS, LENGTHS, build_featureset


def test_quantize_by_hand():
    x = np.array([[1.0, -2.54, 0.01, 0.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.1, -0.1, 0.05]])
    q, scale = quant.quantize(x)
    # row 0: scale 2.54 / 127 = 0.02; 1.0 / 0.02 = 50, 0.01 / 0.02 = 0.5 -> 0 (half to even)
    # row 2: scale 0.3 / 127; 0.1 -> 127/3 = 42.33 -> 42; 0.05 -> 21.17 -> 21
    assert q.dtype == np.int8 and scale.dtype == np.float32
    np.testing.assert_allclose(scale, [0.02, 0.0, 0.3 / 127], rtol=1e-6)
    assert q.tolist() == [[50, -127, 0, 0], [0, 0, 0, 0], [127, 42, -42, 21]]
    back = quant.dequantize(q, scale)
    np.testing.assert_allclose(back[0], [1.0, -2.54, 0.0, 0.0], atol=1e-6)
    assert not back[1].any()


@pytest.mark.parametrize("outlier", [1.0, 50.0])
def test_error_is_at_most_half_a_step(outlier):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 4, 64)).astype(np.float32)
    x[:, :, 7] *= outlier  # one large dimension, as BERT-family activations have
    q, scale = quant.quantize(x)
    err = np.abs(quant.dequantize(q, scale) - x)
    step = scale[..., None]
    assert np.all(err <= step / 2 * (1 + 1e-5) + 1e-7)
    assert np.abs(q).max() == 127  # each vector's peak uses the full range
    back16 = quant.dequantize(q, scale, "float16")
    assert back16.dtype == np.float16
    np.testing.assert_allclose(back16, quant.dequantize(q, scale), rtol=1e-3, atol=1e-3)


def test_nan_is_refused():
    with pytest.raises(ValueError, match="NaN or infinity"):
        quant.quantize(np.array([[1.0, np.nan]]))


def _parts(lengths, seed=0, layers=3, dim=16):
    rng = np.random.default_rng(seed)
    return [
        (
            rng.normal(size=(n, layers, dim)).astype(np.float32),
            np.arange(n, dtype=np.int32),
            np.zeros(n, np.int8),
            -1,
        )
        for n in lengths
    ]


def test_segment_stores_a_byte_per_value_that_zarr_reads(tmp_path):
    parts = _parts([40, 2100, 7])
    write_segment(tmp_path / "s", ["a", "b", "c"], parts, "int8")
    x = np.concatenate([p[0] for p in parts])  # (N, L, D)
    q, scale = quant.quantize(x)
    group = zarr.open_group(str(tmp_path / "s"), mode="r")
    assert group["features"].dtype == np.int8
    np.testing.assert_array_equal(group["features"][:], q)  # zarr reads what we wrote
    np.testing.assert_array_equal(group["scales"][:], scale)
    seg = Segment(tmp_path / "s")
    assert seg._shards is not None  # the direct path reads int8 shards too
    np.testing.assert_array_equal(seg.read_range(30, 2140, [2, 0]), q[30:2140, [2, 0]])
    shard_bytes = sum(
        p.stat().st_size for p in (tmp_path / "s" / "features" / "c").rglob("*") if p.is_file()
    )
    # a byte per value (the last chunk padded to 32 tokens) plus each shard's index: 2 shards
    # of 64 chunks (each all 3 layers of 32 tokens) x 16 bytes + 4 bytes of crc
    assert shard_bytes == (2048 + 128) * 3 * 16 + 2 * (64 * 16 + 4)
    assert (tmp_path / "s" / "scales").is_dir()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("int8") / "store")
    build_featureset(store, "fs8", "int8", seed=3)
    build_featureset(store, "fs16", "float16", seed=3)  # the same values, stored as float16
    return store


def _values(indices) -> np.ndarray:
    """(N, L, D) the float32 values build_featureset(seed=3) wrote for these examples."""
    rng = np.random.default_rng(3)
    drawn = [rng.normal(size=(n, LAYERS, DIM)).astype(np.float32) for n in LENGTHS]
    return np.concatenate([drawn[i] for i in indices])


def test_store_reads_dequantised_float32_by_default(store):
    idx = [4, 0, 2]
    got = store.read("fs8", indices=idx)
    raw = store.read("fs8", indices=idx, dtype="int8")
    assert got.features.dtype == np.float32 and got.scales is None
    assert raw.features.dtype == np.int8 and raw.scales.shape == raw.features.shape[:2]
    np.testing.assert_array_equal(got.features, quant.dequantize(raw.features, raw.scales))
    values = _values(idx)  # what the writer was given
    np.testing.assert_array_equal(got.features, quant.dequantize(*quant.quantize(values)))
    step = raw.scales[..., None]
    assert np.all(np.abs(got.features - values) <= step / 2 * (1 + 1e-5) + 1e-7)
    half = store.read("fs8", indices=idx, layers=[2, 0], dtype="float16")
    assert half.features.dtype == np.float16
    np.testing.assert_allclose(half.features, got.features[:, [2, 0]], rtol=1e-3, atol=1e-4)
    for name in ("offsets", "word_ids", "type_ids", "pair_starts"):
        np.testing.assert_array_equal(
            getattr(got, name), getattr(store.read("fs16", indices=idx), name)
        )


def test_dtype_requests_are_checked(store):
    with pytest.raises(InvalidSelectionError, match="stored as float16"):
        store.read("fs16", indices=[0], dtype="int8")
    with pytest.raises(InvalidSelectionError, match="'bfloat16'"):
        store.read("fs8", indices=[0], dtype="bfloat16")
    assert store.get_featureset("fs8").dtype == "int8"
    pool = store.get_featureset("fs8").encoder_id
    assert store._pool_meta(pool)["quantization"] == quant.QUANTIZATION


def test_wire_round_trip_keeps_int8_and_scales(store):
    raw = store.read("fs8", indices=[1, 3], dtype="int8")
    back = decode(encode(raw, "fs8"))
    assert back.features.dtype == np.int8
    np.testing.assert_array_equal(back.features, raw.features)
    np.testing.assert_array_equal(back.scales, raw.scales)
    assert len(encode(raw, "fs8")) < len(encode(store.read("fs16", indices=[1, 3]), "fs16"))
    bad = ExampleBatch(**{**raw.__dict__, "scales": None})
    with pytest.raises(StoreError, match="int8 features come with scales"):
        decode(encode(bad, "fs8"))


def test_service_sends_int8_and_the_client_dequantises(store):
    from snowfire.api import Settings
    from snowfire.cache.remote import RemoteStore
    from tests.helpers.service import Counting, Server

    with Server(Settings(store=store.path)) as server, RemoteStore(server.url) as remote:
        sent = []
        counting = Counting(remote)
        original = counting.send

        def recording(method, url, body, headers):
            response = original(method, url, body, headers)
            if url.endswith("/features"):
                sent.append(int(response.headers["Content-Length"]))
            return response

        counting.send = recording
        idx = [0, 1, 2, 3, 4]
        for dtype in (None, "float16", "int8"):
            got, want = (
                remote.read("fs8", indices=idx, dtype=dtype),
                store.read("fs8", indices=idx, dtype=dtype),
            )
            assert got.features.dtype == want.features.dtype
            np.testing.assert_array_equal(got.features, want.features)
        remote.read("fs16", indices=idx)
        # int8 values and their scales on the wire, not floats
        raw, half = store.read("fs8", indices=idx, dtype="int8"), store.read("fs16", indices=idx)
        assert body_bytes(raw) <= sent[0] <= body_bytes(raw) + 1024
        assert body_bytes(half) <= sent[-1] and body_bytes(raw) < body_bytes(half)


def test_extract_int8_matches_the_float32_extraction(tiny_bert_dir, tmp_path):
    from dataclasses import replace

    from snowfire.extractor import ExtractConfig, TextInput, extract
    from snowfire.extractor.hf import HFEncoder

    texts = [TextInput(tuple("the quick brown fox".split())), TextInput(("a", "b"), ("c",))]
    enc = HFEncoder(tiny_bert_dir, name="tiny", spec=f"hf:{tiny_bert_dir}")
    store = Store(tmp_path / "s")
    cfg = ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False)
    f32 = extract(enc, texts, store, task=None, split=None, config=replace(cfg, dtype="float32"))
    i8 = extract(enc, texts, store, task=None, split=None, config=replace(cfg, dtype="int8"))
    assert f32.encoder_id != i8.encoder_id  # one pool per dtype
    assert i8.manifest["dtype"] == "int8" and i8.manifest["quantization"] == quant.QUANTIZATION
    want = store.read(f32.id, indices=[0, 1]).features
    q, scale = quant.quantize(want)
    np.testing.assert_array_equal(store.read(i8.id, indices=[0, 1], dtype="int8").features, q)
    np.testing.assert_array_equal(
        store.read(i8.id, indices=[0, 1]).features, quant.dequantize(q, scale)
    )


@pytest.mark.parametrize("max_bytes", [10**9, 0])  # held in memory, or streamed in blocks
def test_a_trainer_holds_int8_and_gets_float32_batches(store, max_bytes):
    from snowfire.heads.data import FeatureSource

    info = store.get_featureset("fs8")
    source = FeatureSource(store, info, [2, 0], max_bytes=max_bytes, block_examples=2)
    assert source.nbytes == sum(LENGTHS) * 2 * (DIM + 4)  # a byte per value + its scale
    if max_bytes:
        assert source.all.features.dtype == np.int8
    seen = {}
    for idx, batch in source.iterate(2, np.random.default_rng(0)):
        assert batch.features.dtype == np.float32 and batch.scales is None
        for j, i in enumerate(idx):
            seen[i] = batch.example(j)
    want = store.read("fs8", indices=list(range(len(LENGTHS))), layers=[2, 0])
    assert sorted(seen) == list(range(len(LENGTHS)))
    for i in range(len(LENGTHS)):
        np.testing.assert_array_equal(seen[i], want.example(i))
