"""The features wire format's decoder under generated input (hypothesis): a body the encoder
wrote decodes to the same batch, bit for bit; any other body (cut short anywhere, a byte
changed, a header of any shape, bytes at random) is refused with StoreError or decodes to a
batch whose shapes and offsets keep the layout (cache/wire.py); never another exception."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snowfire.cache import ExampleBatch, StoreError
from snowfire.cache.wire import WIRE_FORMAT, decode, encode
from tests.helpers.fuzz import examples


@st.composite
def batches(draw) -> ExampleBatch:
    n = draw(st.integers(0, 4))
    lengths = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    tokens, layers, dim = sum(lengths), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(["float16", "float32", "int8"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.standard_normal((tokens, layers, dim))  # (N, L, D)
    features = (values * 50).astype(np.int8) if dtype == "int8" else values.astype(dtype)
    return ExampleBatch(
        features=features,
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),  # (n + 1,)
        word_ids=rng.integers(-1, 5, tokens).astype(np.int32),  # (N,)
        type_ids=rng.integers(0, 2, tokens).astype(np.int8),  # (N,)
        pair_starts=rng.integers(-1, 3, n).astype(np.int64),  # (n,)
        layers=draw(st.lists(st.integers(0, 12), min_size=layers, max_size=layers)),
        keys=[f"{i:032x}" for i in range(n)],
        scales=rng.random((tokens, layers)).astype(np.float32) if dtype == "int8" else None,
    )


def decoded_or_refused(body: bytes) -> ExampleBatch | None:
    """decode(body), checked: a StoreError (None), or a batch keeping the layout."""
    try:
        batch = decode(body)
    except StoreError:
        return None
    n, tokens = len(batch.keys), batch.features.shape[0]
    assert batch.features.ndim == 3 and batch.features.shape[1] == len(batch.layers)
    assert batch.offsets.shape == (n + 1,) and batch.pair_starts.shape == (n,)
    assert batch.word_ids.shape == batch.type_ids.shape == (tokens,)
    assert batch.offsets[0] == 0 and batch.offsets[-1] == tokens
    assert np.all(np.diff(batch.offsets) >= 0)
    for i in range(n):
        batch.example(i)  # every example's rows are there
    return batch


@given(batches())
@settings(max_examples=examples(60))
def test_a_body_decodes_to_the_batch_bit_for_bit(batch):
    back = decode(encode(batch, "fs"))
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts"):
        a, b = getattr(back, name), getattr(batch, name)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
    assert (back.layers, back.keys) == (batch.layers, batch.keys)
    assert (back.scales is None) == (batch.scales is None)
    if batch.scales is not None:
        assert back.scales.tobytes() == batch.scales.tobytes()


@given(batches(), st.data())
@settings(max_examples=examples(60))
def test_a_body_cut_short_anywhere_is_refused(batch, data):
    body = encode(batch, "fs")
    cut = data.draw(st.integers(0, len(body) - 1))
    assert decoded_or_refused(body[:cut]) is None


@given(batches(), st.data())
@settings(max_examples=examples(80))
def test_a_body_with_bytes_changed_is_refused_or_keeps_the_layout(batch, data):
    body = bytearray(encode(batch, "fs"))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] = data.draw(st.integers(0, 255))
    decoded_or_refused(bytes(body))


SHAPES = st.lists(st.integers(-2, 6) | st.sampled_from([2**40, 2**63]), max_size=4)
TENSOR = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["F16", "F32", "I8", "I32", "I64", "BOOL", "x"]),
        "shape": SHAPES | st.text(max_size=2),
        "data_offsets": st.lists(st.integers(-4, 200), min_size=0, max_size=3),
    }
)
META = st.fixed_dictionaries(
    {"format": st.sampled_from([WIRE_FORMAT, "x"])},
    optional={
        "layers": st.sampled_from(["[0]", "[0, 1]", "[]", "[true]", '"x"', "{", "[1e400]"]),
        "keys": st.sampled_from(["[]", '["a"]', '["a", "b"]', "[1]", "null", "[[[[["]),
    },
)


@given(
    header=st.dictionaries(
        st.sampled_from(["features", "offsets", "word_ids", "type_ids", "pair_starts", "scales"]),
        TENSOR | st.integers() | st.none(),
    ),
    meta=META | st.lists(st.integers(), max_size=2),
    data=st.binary(max_size=200),
    length=st.none() | st.integers(0, 2**64 - 1),
)
@example(header={}, meta={"format": WIRE_FORMAT}, data=b"", length=2**63)
@example(
    header={
        "features": {"dtype": "F32", "shape": [-1, -1], "data_offsets": [0, 4]},
        "offsets": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]},
        "word_ids": {"dtype": "I32", "shape": [0], "data_offsets": [12, 12]},
        "type_ids": {"dtype": "I8", "shape": [0], "data_offsets": [12, 12]},
        "pair_starts": {"dtype": "I64", "shape": [0], "data_offsets": [12, 12]},
    },
    meta={"format": WIRE_FORMAT, "layers": "[]", "keys": "[]"},
    data=bytes(12),
    length=None,
)
@settings(max_examples=examples(100))
def test_a_header_of_any_shape_is_refused_or_keeps_the_layout(header, meta, data, length):
    text = json.dumps({"__metadata__": meta, **header}).encode()
    size = len(text) if length is None else length
    decoded_or_refused(size.to_bytes(8, "little") + text + data)


@given(st.binary(max_size=300))
@example(b"")
@example(b"\x05\x00\x00\x00\x00\x00\x00\x00{nope")
@example(b"\x02\x00\x00\x00\x00\x00\x00\x00[]")
@example(b"\x08\x00\x00\x00\x00\x00\x00\x00" + b"[" * 8)
@settings(max_examples=examples(100))
def test_bytes_at_random_are_refused(body):
    assert decoded_or_refused(body) is None
