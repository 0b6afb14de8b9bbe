"""Reading a selection under a size cap, and writing it as safetensors or JSON.

An unreduced safetensors answer is planned first (its size is known from the index) and
streamed as it is read (`stream_features`). A JSON or reduced answer's size is known only once
reduced, so it is read `read_chunk_examples` at a time and refused (413) as soon as it passes
its cap: memory stays bounded by the cap plus one chunk, and a request under the cap reads each
example once.

The safetensors body is cache/wire.py's format (one encoder and decoder for service and client).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from snowfire.cache import (
    SAFETENSORS,
    ExampleBatch,
    RequestTooLargeError,
    Store,
    array_bytes,
    body_bytes,
    body_layout,
    encode_parts,
    example_bytes,
    reduce_batch,
)

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
    selection: list[Any] | None = request.indices if by_index else request.keys  # ints or keys
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


#: Bytes of features per piece of a streamed answer: the service reads the next piece (in a
#: thread: numpy's gather lets go of the GIL) while the event loop sends this one.
STREAM_BYTES = 4 << 20
#: An example at least this large goes out straight from the mapped shard (a view, no copy in
#: the service: the kernel copies it into the socket); smaller ones are gathered into pieces,
#: so a body of many tiny examples is not thousands of socket writes.
DIRECT_BYTES = 64 << 10


def stream_features(store: Store, fs_id: str, request: FeaturesRequest, settings: Settings):
    """An unreduced safetensors answer streamed from one read plan (cache/plan.py).

    Its size and header are known from the plan before any feature is read, so an answer over
    the cap is refused (413) before reading. The header and index tensors go first, the
    features last (cache/wire.py's framing: a client keeps the examples of a cut body whole).
    When the answer is all layers as stored and every example lies in token-major shards,
    the features are views of the mapped shard files:
    each large example is handed to the socket as it lies on disk, small ones are gathered
    into pieces (`direct_pieces`); the shards are mapped and checked before the answer starts.
    Otherwise the features go out STREAM_BYTES at a time, the next piece read while the last
    is sent, and the client receives meanwhile: the read, the send and the receive overlap
    (benchmarks/rest_vs_inprocess.py). The first piece is read before the answer starts, so a
    store error there is still a proper error status; one in a later piece (a shard damaged
    since it was mapped) can only cut the body short, which the client reports
    (cache/remote.py) and the service logs.
    """
    import asyncio

    from fastapi.responses import StreamingResponse

    raw = store.get_featureset(fs_id).dtype == "int8"  # a byte per value, with its scales
    by_index = request.indices is not None
    plan = store.plan_read(
        fs_id,
        indices=request.indices if by_index else None,
        keys=None if by_index else request.keys,
        layers=request.layers,
        dtype="int8" if raw else None,
    )
    small = plan.small()
    layers = plan.layers if plan.layers is not None else list(range(plan.num_layers))
    shape = (plan.num_tokens, plan.num_layers, plan.dim)
    head, rest, length = body_layout((shape, plan.dtype), small, layers, plan.keys, fs_id)
    _refuse_over_cap(plan, body_cap(settings))
    views = plan.views()
    if views is not None:
        return StreamingResponse(
            _chain([head], rest, direct_pieces(views)),
            media_type=SAFETENSORS,
            headers={"Content-Length": str(length)},
        )
    per_token = plan.num_layers * plan.dim * np.dtype(plan.dtype).itemsize
    pieces, lo = [], 0
    for i in range(1, len(plan.ends)):  # examples lo:i, about STREAM_BYTES of features each
        if (plan.ends[i] - plan.ends[lo]) * per_token >= STREAM_BYTES or i == len(plan.ends) - 1:
            pieces.append((lo, i))
            lo = i
    first = plan.features(*pieces[0]) if pieces else None

    async def body():
        yield head
        for part in rest:  # the index first: a client keeps the examples of a cut body
            yield part
        loop = asyncio.get_running_loop()
        current = first
        for k in range(len(pieces)):
            ahead = None
            if k + 1 < len(pieces):
                ahead = loop.run_in_executor(None, plan.features, *pieces[k + 1])
            assert current is not None  # pieces[k] was read before its turn
            yield array_bytes(current)
            if ahead is not None:
                current = await ahead

    return StreamingResponse(
        body(), media_type=SAFETENSORS, headers={"Content-Length": str(length)}
    )


async def _chain(*parts):
    """One async body of byte iterables (StreamingResponse would step a sync iterator in a
    thread, a thread hop per piece)."""
    for part in parts:
        for data in part:
            yield data


def direct_pieces(views: list[np.ndarray]):
    """The bytes of `views` in order: each of DIRECT_BYTES or more as itself (no copy), the
    smaller ones between them joined into pieces of up to STREAM_BYTES."""
    small: list[memoryview] = []
    size = 0
    for view in views:
        data = array_bytes(view)
        if data.nbytes >= DIRECT_BYTES:
            if small:
                yield b"".join(small)
                small, size = [], 0
            yield data
            continue
        small.append(data)
        size += data.nbytes
        if size >= STREAM_BYTES:
            yield b"".join(small)
            small, size = [], 0
    if small:
        yield b"".join(small)


def _refuse_over_cap(plan, cap: Cap) -> None:
    """RequestTooLargeError (413) naming the example at which the body passes the cap, by
    `body_bytes`' count (`example_bytes`: features, index tensors, keys), before anything is
    read."""
    tokens = np.diff(np.asarray(plan.ends, dtype=np.int64))
    keys = [len(k) for k in plan.keys]
    each = example_bytes(tokens, plan.num_layers, plan.dim, plan.dtype, keys)
    sizes = np.cumsum(each) + 8  # + offsets[0]
    over = np.flatnonzero(sizes > cap.limit)
    if len(over):
        done = int(over[0]) + 1
        raise RequestTooLargeError(
            cap.message.format(limit=cap.limit, done=done, total=len(plan.keys))
        )


def safetensors_response(batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None):
    """The batch's safetensors body sent piece by piece from the arrays' own buffers (the
    header, then each tensor): no copy of the features into one body."""
    from fastapi.responses import StreamingResponse

    parts, length = encode_parts(batch, fs_id, extra)
    return StreamingResponse(
        _chain(parts), media_type=SAFETENSORS, headers={"Content-Length": str(length)}
    )
