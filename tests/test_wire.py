"""The features wire format (cache/wire.py): exact round trip, the size estimate, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snowfire.cache import ExampleBatch, StoreError
from snowfire.cache.wire import WIRE_FORMAT, body_bytes, decode, encode


def _batch(dtype: str, n: int = 5, layers=(0, 2)) -> ExampleBatch:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 9, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = int(offsets[-1])
    return ExampleBatch(
        features=rng.standard_normal((tokens, len(layers), 16)).astype(dtype),
        offsets=offsets,
        word_ids=rng.integers(-1, 6, size=tokens).astype(np.int32),
        type_ids=rng.integers(0, 2, size=tokens).astype(np.int8),
        pair_starts=rng.integers(0, 4, size=n).astype(np.int64),
        layers=list(layers),
        keys=[f"{i:032x}" for i in range(n)],
    )


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_round_trip_is_bit_exact(dtype):
    batch = _batch(dtype)
    back = decode(encode(batch, "fs-1"))
    assert back.features.dtype == np.dtype(dtype)
    assert back.features.tobytes() == batch.features.tobytes()
    for name in ("offsets", "word_ids", "type_ids", "pair_starts"):
        assert np.array_equal(getattr(back, name), getattr(batch, name)), name
    assert back.layers == [0, 2] and back.keys == batch.keys


@pytest.mark.parametrize("n", [1, 5, 200])
def test_the_size_estimate_is_the_body_within_its_header(n):
    batch = _batch("float16", n=n)
    size = len(encode(batch, "fs-1"))
    assert body_bytes(batch) <= size <= body_bytes(batch) + 1024


def test_another_format_or_a_broken_body_is_refused():
    body = bytearray(encode(_batch("float32"), "fs-1"))
    n = int.from_bytes(body[:8], "little")
    header = json.loads(body[8 : 8 + n])
    header["__metadata__"]["format"] = "snowfire-features/0"
    text = json.dumps(header, separators=(",", ":")).encode().ljust(n)
    assert len(text) == n
    other = bytes(body[:8]) + text + bytes(body[8 + n :])
    with pytest.raises(StoreError, match=f"format 'snowfire-features/0', expected {WIRE_FORMAT}"):
        decode(other)
    with pytest.raises(StoreError, match="not safetensors"):
        decode(b"\x05\x00\x00\x00\x00\x00\x00\x00{nope")


@pytest.mark.parametrize(("dtype", "n"), [("float16", 5), ("float32", 3), ("float16", 0)])
def test_the_streamed_pieces_are_a_safetensors_file_the_library_reads(dtype, n):
    from safetensors.numpy import load, save

    from snowfire.cache.wire import encode_parts

    batch = _batch(dtype, n)
    parts, length = encode_parts(batch, "fs", {"cached": "[true]"})
    body = b"".join(parts)
    assert len(body) == length and int.from_bytes(body[:8], "little") % 8 == 0
    ours = load(body)  # the safetensors library parses our header and offsets
    reference = load(save({k: v for k, v in ours.items()}))
    assert set(ours) == {"features", "offsets", "word_ids", "type_ids", "pair_starts"}
    for name, array in ours.items():
        assert array.dtype == reference[name].dtype and np.array_equal(array, reference[name])
    assert np.array_equal(ours["features"], batch.features)
    meta = json.loads(body[8 : 8 + int.from_bytes(body[:8], "little")])["__metadata__"]
    assert meta["cached"] == "[true]" and meta["format"] == WIRE_FORMAT


def test_decode_views_a_writable_buffer_and_copies_immutable_bytes():
    body = encode(_batch("float16", 4), "fs")
    from_bytes, from_buffer = decode(body), decode(bytearray(body))
    assert from_bytes.features.flags.writeable and from_buffer.features.flags.writeable
    buf = bytearray(body)
    assert np.shares_memory(decode(buf).features, np.frombuffer(buf, np.uint8))  # no copy
    assert np.array_equal(from_bytes.features, from_buffer.features)


def test_a_tensor_past_the_end_of_the_body_is_refused():
    body = encode(_batch("float32", 3), "fs")
    with pytest.raises(StoreError, match="tensor .* does not fit"):
        decode(body[:-4])
