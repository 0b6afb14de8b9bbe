"""Reading a selection under a size cap, and writing it as safetensors or JSON.

The store does not know a selection's token count before reading it, so a response is read
`read_chunk_examples` at a time and refused (413) as soon as it passes its cap: memory stays
bounded by the cap plus one chunk, and a request under the cap reads each example once.

The safetensors body is cache/wire.py's format (one encoder and decoder for service and client).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cache import ExampleBatch, RequestTooLargeError, Store, wire
from cache.reduce import reduce_batch
from cache.wire import SAFETENSORS, body_bytes

from .schemas import FeaturesJSON, FeaturesRequest
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


def reducer(request: FeaturesRequest) -> Callable[[ExampleBatch], ExampleBatch]:
    """The request's mix and pool as one function of a batch (identity when none)."""
    mix = None if request.mix is None else (request.mix.weights, request.mix.gamma)
    return lambda batch: reduce_batch(batch, pool=request.pool, sides=request.pool_sides, mix=mix)


def read_capped(
    store: Store, fs_id: str, request: FeaturesRequest, chunk: int, cap: Cap, raw: bool = False
) -> ExampleBatch:
    """`store.read` of the request, reduced as it asks chunk by chunk (so a pooled answer of
    many examples never holds all their tokens), raising RequestTooLargeError once the answer
    passes `cap`. raw: an int8 set's values as stored, with their scales, when nothing is
    reduced (the safetensors answer: a byte per value on the wire); float32 otherwise."""
    reduce = reducer(request)
    unreduced = request.mix is None and request.pool == "none"
    dtype = "int8" if raw and unreduced and store.get_featureset(fs_id).dtype == "int8" else None
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
            dtype=dtype,
        )
        part = reduce(part)
        total += cap.size(part)
        if total > cap.limit:
            done = start + len(part_sel)
            raise RequestTooLargeError(
                cap.message.format(limit=cap.limit, done=done, total=len(selection))
            )
        parts.append(part)
    return parts[0] if len(parts) == 1 else ExampleBatch.concat(parts)


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


def safetensors_response(batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None):
    """The batch's safetensors body sent piece by piece from the arrays' own buffers (the
    header, then each tensor): no copy of the features into one body."""
    from fastapi.responses import StreamingResponse

    parts, length = wire.encode_parts(batch, fs_id, extra)
    return StreamingResponse(
        iter(parts), media_type=SAFETENSORS, headers={"Content-Length": str(length)}
    )
