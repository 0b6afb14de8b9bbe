"""The features wire format, in one place: what the service writes and the client reads.

Safetensors body (`application/x-safetensors`), n examples, N tokens:
    features     (N, Lsel, D) float16|float32|int8, the store's dtype
    offsets      (n + 1,) int64
    word_ids     (N,) int32
    type_ids     (N,) int8
    pair_starts  (n,) int64
    scales       (N, Lsel) float32, only when features are int8 as an int8 set stores them:
                 the values are features * scales[..., None] (cache/quant.py)
    metadata     format, featureset, dtype, layers (JSON list), keys (JSON list)

`encode(batch, fs_id)` -> bytes, `encode_parts` -> the same as pieces to stream without a copy,
`body_layout(...)` -> the header and index tensors of a body whose features are sent as they are
read (the features come first, so the header only needs their shape),
`decode(bytes)` -> ExampleBatch (refusing another format),
`body_bytes(batch)`: the body's size without its few-hundred-byte header (the service's cap
and the client's request splitting use it). No web framework here.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .errors import StoreError
from .types import STORED_DTYPES, ExampleBatch

SAFETENSORS = "application/x-safetensors"
JSON = "application/json"
#: Bumped when the tensors or metadata of a features body change meaning.
WIRE_FORMAT = "snowfire-features/1"
#: name -> dtype of every index tensor (features keep the store's dtype).
_INDEX_DTYPES = {
    "offsets": np.int64,
    "word_ids": np.int32,
    "type_ids": np.int8,
    "pair_starts": np.int64,
}


def body_bytes(batch: ExampleBatch) -> int:
    """Bytes of the safetensors body of `batch`, to within its header."""
    arrays = (batch.features, batch.offsets, batch.word_ids, batch.type_ids, batch.pair_starts)
    scales = 0 if batch.scales is None else batch.scales.nbytes
    return sum(a.nbytes for a in arrays) + scales + sum(len(k) + 4 for k in batch.keys)


def _metadata(
    dtype: str, layers: list[int], keys: list[str], fs_id: str, extra: dict[str, str] | None
) -> dict[str, str]:
    metadata = {
        "format": WIRE_FORMAT,
        "featureset": fs_id,
        "dtype": dtype,
        "layers": json.dumps([int(layer) for layer in layers]),
        "keys": json.dumps(list(keys)),
    }
    return {**(extra or {}), **metadata}


_ST_DTYPES = {"float16": "F16", "float32": "F32", "int64": "I64", "int32": "I32", "int8": "I8"}


def header(
    tensors: list[tuple[str, str, tuple[int, ...]]], metadata: dict[str, str]
) -> tuple[bytes, int]:
    """The safetensors header of tensors (name, dtype, shape) laid out in that order, with its
    8-byte length in front, and the whole body's length. The features come first, so a body
    can be sent before its features are read, once their shape is known (api/features.py)."""
    head: dict[str, object] = {"__metadata__": metadata}
    start = 0
    for name, dtype, shape in tensors:
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        head[name] = {
            "dtype": _ST_DTYPES[dtype],
            "shape": [int(x) for x in shape],
            "data_offsets": [start, start + nbytes],
        }
        start += nbytes
    text = json.dumps(head, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text, 8 + len(text) + start


def index_tensors(small: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The body's tensors after the features, in order and in their wire dtypes, from the
    arrays of that name (offsets, word_ids, type_ids, pair_starts, and scales when given)."""
    out = {name: np.ascontiguousarray(small[name], dtype=dt) for name, dt in _INDEX_DTYPES.items()}
    if small.get("scales") is not None:
        out["scales"] = np.ascontiguousarray(small["scales"], dtype=np.float32)
    return out


def body_layout(
    features: tuple[tuple[int, ...], str],
    small: dict[str, np.ndarray],
    layers: list[int],
    keys: list[str],
    fs_id: str,
    extra: dict[str, str] | None = None,
) -> tuple[bytes, list[memoryview], int]:
    """(header, the index tensors' bytes, body length) of a body whose features, of (shape,
    dtype) `features`, go between the two: what `encode_parts` sends around a batch's features
    and the service around features it reads while it sends."""
    tensors = index_tensors(small)
    shape, dtype = features
    head, length = header(
        [("features", dtype, shape)] + [(n, a.dtype.name, a.shape) for n, a in tensors.items()],
        _metadata(dtype, layers, keys, fs_id, extra),
    )
    return head, [array_bytes(a) for a in tensors.values()], length


def array_bytes(array: np.ndarray) -> memoryview:
    """A C-contiguous array's own buffer as bytes (no copy)."""
    return memoryview(np.ascontiguousarray(array).reshape(-1)).cast("B")


def encode_parts(
    batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None
) -> tuple[list[bytes | memoryview], int]:
    """The safetensors body of `batch` as pieces to send one after another (the header, then
    each tensor's own buffer: no copy into one body), and its length.

    The layout is the safetensors format: an 8-byte little-endian header length, a JSON header
    padded with spaces to a multiple of 8, then the tensors' bytes back to back, as the
    safetensors library writes and reads them (tests/test_wire.py checks both ways).
    """
    features = np.ascontiguousarray(batch.features)
    small = {name: getattr(batch, name) for name in _INDEX_DTYPES} | {"scales": batch.scales}
    head, rest, length = body_layout(
        (features.shape, features.dtype.name), small, batch.layers, batch.keys, fs_id, extra
    )
    return [head, array_bytes(features), *rest], length


def encode(batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None) -> bytes:
    """The safetensors body of `batch` in one piece; `extra` adds metadata strings."""
    parts, _ = encode_parts(batch, fs_id, extra)
    return b"".join(parts)


_NP_DTYPES = {v: k for k, v in _ST_DTYPES.items()}


def decode(body: bytes | bytearray | memoryview) -> ExampleBatch:
    """The ExampleBatch of a features body; StoreError for another format or a broken body.

    Every part is checked before it is used, so no body, however cut or garbled, gives another
    exception or a batch that breaks the layout above (`_check_layout`). The arrays are views
    into `body` (no copy) when it is a writable buffer (a bytearray the client read into);
    copies of an immutable `bytes`, so every array is writable either way.
    """
    view = memoryview(body).cast("B")
    if len(view) < 8:
        raise StoreError(f"features body is not safetensors: {len(view)} bytes, no header length")
    n = int.from_bytes(view[:8], "little")
    if n > len(view) - 8:
        raise StoreError(
            f"features body is not safetensors: a header of {n} bytes in a body of {len(view)}"
        )
    try:
        header = json.loads(bytes(view[8 : 8 + n]))
        meta = header.pop("__metadata__", {})
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError, RecursionError) as err:
        raise StoreError(f"features body is not safetensors: {err!r}") from err
    if not isinstance(meta, dict) or meta.get("format") != WIRE_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else meta
        raise StoreError(f"features body in format {found!r}, expected {WIRE_FORMAT}")
    start, t = 8 + n, {}
    names = ("features", *_INDEX_DTYPES, *(["scales"] if "scales" in header else []))
    for name in names:
        try:
            info = header[name]
            dtype = np.dtype(_NP_DTYPES[info["dtype"]])
            lo, hi = (int(x) for x in info["data_offsets"])
            shape = tuple(int(x) for x in info["shape"])
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"features body: tensor {name!r} malformed ({err!r})") from err
        count = math.prod(shape)  # Python's ints: no overflow
        if (
            min(shape, default=0) < 0
            or not 0 <= lo <= hi <= len(view) - start
            or (hi - lo != count * dtype.itemsize)
        ):
            raise StoreError(
                f"features body: tensor {name!r} at bytes {lo}..{hi} does not fit its shape "
                f"{list(shape)} of {dtype.name} or the body's {len(view) - start} data bytes"
            )
        array = np.frombuffer(view, dtype=dtype, count=count, offset=start + lo).reshape(shape)
        t[name] = array if array.flags.writeable else array.copy()
    quantized = t["features"].dtype == np.int8
    if t["features"].dtype.name not in STORED_DTYPES or quantized != ("scales" in t):
        raise StoreError(
            f"features body: features of {t['features'].dtype.name} "
            f"{'with' if 'scales' in t else 'without'} scales (int8 features come with scales, "
            "float16/float32 features without)"
        )
    if quantized and t["scales"].shape != t["features"].shape[:2]:
        raise StoreError(
            f"features body: scales {list(t['scales'].shape)} for features "
            f"{list(t['features'].shape)} (expected one scale per token and layer)"
        )
    layers, keys = _listed(meta, "layers", int), _listed(meta, "keys", str)
    _check_layout(t, layers, keys)
    return ExampleBatch(
        features=t["features"],  # (N, Lsel, D)
        offsets=t["offsets"],  # (n + 1,)
        word_ids=t["word_ids"],  # (N,)
        type_ids=t["type_ids"],  # (N,)
        pair_starts=t["pair_starts"],  # (n,)
        layers=layers,
        keys=keys,
        scales=t.get("scales"),  # (N, Lsel) int8 features only
    )


def _listed(meta: dict, name: str, kind: type) -> list:
    """A metadata entry that holds a JSON list of `kind` (layers: ints, keys: strings)."""
    try:
        value = json.loads(meta[name])
    except (KeyError, TypeError, ValueError, RecursionError) as err:
        raise StoreError(f"features body: metadata {name!r} malformed ({err!r})") from err
    if not isinstance(value, list) or not all(
        isinstance(x, kind) and not isinstance(x, bool) for x in value
    ):
        raise StoreError(f"features body: metadata {name!r}: expected a list of {kind.__name__}")
    return value


def _check_layout(t: dict[str, np.ndarray], layers: list[int], keys: list[str]) -> None:
    """The shapes and offsets the module docstring lays out, for n = len(keys) examples of
    N tokens: else StoreError naming what does not fit."""
    features, offsets = t["features"], t["offsets"]
    n, tokens = len(keys), features.shape[0] if features.ndim else -1
    expected = {
        "features": (tokens, len(layers), features.shape[-1] if features.ndim == 3 else -1),
        "offsets": (n + 1,),
        "word_ids": (tokens,),
        "type_ids": (tokens,),
        "pair_starts": (n,),
    }
    for name, shape in expected.items():
        if t[name].shape != shape or (name == "features" and features.ndim != 3):
            raise StoreError(
                f"features body: {name} of shape {list(t[name].shape)}, expected {list(shape)} "
                f"({n} keys, {len(layers)} layers, {max(tokens, 0)} tokens)"
            )
    if offsets[0] != 0 or offsets[-1] != tokens or np.any(np.diff(offsets) < 0):
        raise StoreError(
            f"features body: offsets must rise from 0 to the {tokens} tokens, got "
            f"{offsets[:3].tolist()}...{offsets[-1:].tolist()}"
        )
