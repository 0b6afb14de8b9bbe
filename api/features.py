"""Reading a selection under a size cap, and writing it as safetensors or JSON.

The store does not know a selection's token count before reading it, so a response is read
`read_chunk_examples` at a time and refused (413) as soon as it passes its cap: memory stays
bounded by the cap plus one chunk, and a request under the cap reads each example once.

Safetensors body (`application/x-safetensors`), n examples, N tokens:
    features     (N, Lsel, D) float16|float32, the store's dtype
    offsets      (n + 1,) int64
    word_ids     (N,) int32
    type_ids     (N,) int8
    pair_starts  (n,) int64
    metadata     format, featureset, dtype, layers (JSON list), keys (JSON list)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cache import ExampleBatch, RequestTooLargeError, Store

from .schemas import SAFETENSORS, WIRE_FORMAT, FeaturesJSON, FeaturesRequest
from .settings import Settings


@dataclass(frozen=True)
class Cap:
    """A response-size cap: `size(batch)` may not pass `limit`; `message` says why (with
    {limit}, {done} and {total} filled in)."""

    limit: int
    size: Callable[[ExampleBatch], int]
    message: str


def feature_values(batch: ExampleBatch) -> int:
    return int(batch.features.size)


def body_bytes(batch: ExampleBatch) -> int:
    """Bytes of the safetensors body, to within its few-hundred-byte header."""
    arrays = (batch.features, batch.offsets, batch.word_ids, batch.type_ids, batch.pair_starts)
    return sum(a.nbytes for a in arrays) + sum(len(k) + 4 for k in batch.keys)


def json_cap(settings: Settings) -> Cap:
    return Cap(
        settings.max_json_values,
        feature_values,
        "a JSON response holds at most {limit:,} feature values (tokens x layers x dim; "
        "SNOWFIRE_MAX_JSON_VALUES) and this one passes it after {done} of {total} examples: "
        f"ask for fewer examples or layers, or Accept: {SAFETENSORS}",
    )


def body_cap(settings: Settings) -> Cap:
    return Cap(
        settings.max_body_bytes,
        body_bytes,
        "a safetensors response holds at most {limit:,} bytes (SNOWFIRE_MAX_BODY_BYTES) and "
        "this one passes it after {done} of {total} examples: split the request",
    )


def read_capped(
    store: Store, fs_id: str, request: FeaturesRequest, chunk: int, cap: Cap
) -> ExampleBatch:
    """`store.read` of the request, raising RequestTooLargeError once it passes `cap`."""
    by_index = request.indices is not None
    selection = request.indices if by_index else request.keys
    assert selection is not None  # FeaturesRequest guarantees exactly one
    parts, total = [], 0
    for start in range(0, max(len(selection), 1), chunk):
        part_sel = selection[start : start + chunk]
        part = store.read(
            fs_id,
            indices=part_sel if by_index else None,
            keys=None if by_index else part_sel,
            layers=request.layers,
        )
        total += cap.size(part)
        if total > cap.limit:
            done = start + len(part_sel)
            raise RequestTooLargeError(
                cap.message.format(limit=cap.limit, done=done, total=len(selection))
            )
        parts.append(part)
    return parts[0] if len(parts) == 1 else ExampleBatch.concat(parts)


def to_safetensors(batch: ExampleBatch, fs_id: str) -> bytes:
    from safetensors.numpy import save

    tensors = {
        "features": np.ascontiguousarray(batch.features),
        "offsets": np.ascontiguousarray(batch.offsets, dtype=np.int64),
        "word_ids": np.ascontiguousarray(batch.word_ids, dtype=np.int32),
        "type_ids": np.ascontiguousarray(batch.type_ids, dtype=np.int8),
        "pair_starts": np.ascontiguousarray(batch.pair_starts, dtype=np.int64),
    }
    metadata = {
        "format": WIRE_FORMAT,
        "featureset": fs_id,
        "dtype": str(batch.features.dtype),
        "layers": json.dumps([int(layer) for layer in batch.layers]),
        "keys": json.dumps(list(batch.keys)),
    }
    return save(tensors, metadata=metadata)


def to_json(batch: ExampleBatch, fs_id: str) -> FeaturesJSON:
    # float16/float32 -> Python float is exact, and JSON floats round-trip a float64 exactly
    return FeaturesJSON(
        featureset=fs_id,
        dtype=str(batch.features.dtype),
        layers=[int(layer) for layer in batch.layers],
        keys=list(batch.keys),
        shape=list(batch.features.shape),
        features=batch.features.tolist(),
        offsets=batch.offsets.tolist(),
        word_ids=batch.word_ids.tolist(),
        type_ids=batch.type_ids.tolist(),
        pair_starts=batch.pair_starts.tolist(),
    )
