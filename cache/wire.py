"""The features wire format, in one place: what the service writes and the client reads.

Safetensors body (`application/x-safetensors`), n examples, N tokens:
    features     (N, Lsel, D) float16|float32, the store's dtype
    offsets      (n + 1,) int64
    word_ids     (N,) int32
    type_ids     (N,) int8
    pair_starts  (n,) int64
    metadata     format, featureset, dtype, layers (JSON list), keys (JSON list)

`encode(batch, fs_id)` -> bytes, `decode(bytes)` -> ExampleBatch (refusing another format),
`body_bytes(batch)`: the body's size without its few-hundred-byte header (the service's cap
and the client's request splitting use it). No web framework here.
"""

from __future__ import annotations

import json

import numpy as np

from .errors import StoreError
from .types import ExampleBatch

SAFETENSORS = "application/x-safetensors"
JSON = "application/json"
#: Bumped when the tensors or metadata of a features body change meaning.
WIRE_FORMAT = "snowfire-features/1"
#: name -> dtype of every index tensor (features keep the store's dtype).
_INDEX_DTYPES = {"offsets": np.int64, "word_ids": np.int32, "type_ids": np.int8,
                 "pair_starts": np.int64}  # fmt: skip


def body_bytes(batch: ExampleBatch) -> int:
    """Bytes of the safetensors body of `batch`, to within its header."""
    arrays = (batch.features, batch.offsets, batch.word_ids, batch.type_ids, batch.pair_starts)
    return sum(a.nbytes for a in arrays) + sum(len(k) + 4 for k in batch.keys)


def encode(batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None) -> bytes:
    """The safetensors body of `batch`; `extra` adds metadata strings (never the format's)."""
    from safetensors.numpy import save

    tensors = {"features": np.ascontiguousarray(batch.features)}
    for name, dtype in _INDEX_DTYPES.items():
        tensors[name] = np.ascontiguousarray(getattr(batch, name), dtype=dtype)
    metadata = {
        "format": WIRE_FORMAT,
        "featureset": fs_id,
        "dtype": str(batch.features.dtype),
        "layers": json.dumps([int(layer) for layer in batch.layers]),
        "keys": json.dumps(list(batch.keys)),
    }
    metadata = {**(extra or {}), **metadata}
    return save(tensors, metadata=metadata)


def decode(body: bytes) -> ExampleBatch:
    """The ExampleBatch of a features body; StoreError for another format or a broken body."""
    from safetensors.numpy import load

    try:
        n = int.from_bytes(body[:8], "little")
        meta = json.loads(body[8 : 8 + n]).get("__metadata__", {})
    except (ValueError, UnicodeDecodeError) as err:
        raise StoreError(f"features body is not safetensors: {err}") from err
    if meta.get("format") != WIRE_FORMAT:
        raise StoreError(f"features body in format {meta.get('format')!r}, expected {WIRE_FORMAT}")
    t = load(body)
    return ExampleBatch(
        features=t["features"],  # (N, Lsel, D)
        offsets=t["offsets"],  # (n + 1,)
        word_ids=t["word_ids"],  # (N,)
        type_ids=t["type_ids"],  # (N,)
        pair_starts=t["pair_starts"],  # (n,)
        layers=json.loads(meta["layers"]),
        keys=json.loads(meta["keys"]),
    )
