"""The features wire format, in one place: what the service writes and the client reads.

Safetensors body (`application/x-safetensors`), n examples, N tokens, its tensors in this
order on the wire:
    offsets      (n + 1,) int64; example i owns rows offsets[i]:offsets[i+1] of features
    word_ids     (N,) int32
    type_ids     (N,) int8
    pair_starts  (n,) int64
    scales       (N, Lsel) float32, only when features are int8 as an int8 set stores them:
                 the values are features * scales[..., None] (cache/quant.py)
    features     (N, Lsel, D) float16|float32|int8, the store's dtype, last
    metadata     format, featureset, dtype, layers (JSON list), keys (JSON list)

Framing: the header (keys included) and the index tensors come first, the features last,
example after example. A body cut short anywhere in its features therefore still says which
examples arrived whole: those whose last row arrived (`whole_examples`); a client keeps them
and asks only for the rest (cache/paging.py). The tensors' places are the header's data
offsets, as safetensors has them: a body of this format with its features first (as written
before the order changed) decodes the same; only a cut one keeps nothing.

Sizes: `example_bytes(...)` is what each example adds to a body (its rows of features and
scales, its ids, offset, pair start and key in the header), `header_bound(...)` bounds the
rest of the header, and `body_bytes(batch)` is a whole body but for that rest: the service's
cap counts it, the client's pages count both.

`encode(batch, fs_id)` -> bytes, `encode_parts` -> the same as pieces to stream without a copy,
`body_layout(...)` -> the header and index tensors of a body whose features are sent after them
as they are read, `parse_frame(head)` -> a checked header (`Frame`) before any tensor arrives,
`decode(bytes)` -> ExampleBatch (refusing another format). No web framework here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Final

import numpy as np

from .errors import StoreError
from .keys import KEY_DIGITS
from .types import STORED_DTYPES, ExampleBatch, token_bytes

SAFETENSORS = "application/x-safetensors"
JSON = "application/json"
#: Bumped when the tensors or metadata of a features body change meaning.
WIRE_FORMAT: Final = "snowfire-features/1"
#: name -> dtype of every index tensor (features keep the store's dtype).
_INDEX_DTYPES = {
    "offsets": np.int64,
    "word_ids": np.int32,
    "type_ids": np.int8,
    "pair_starts": np.int64,
}


#: What a key adds to the header besides its characters: its quotes, escaped inside the
#: metadata string (\"), and the ", " after it.
KEY_FRAMING = 6
#: Bytes of an offset and a pair start: what an example adds to a body besides its tokens.
_EXAMPLE_INDEX = 8 + 8
#: Bytes of a token's word id and type id.
_TOKEN_INDEX = 4 + 1


def example_bytes(
    tokens: np.ndarray, num_layers: int, dim: int, dtype: str, key_chars=KEY_DIGITS
) -> np.ndarray:
    """(n,) int64: the bytes each example of `tokens` tokens adds to a body of `num_layers`
    layers of `dim` in the stored `dtype`: tokens x (features and scales + word and type id)
    + offset + pair start + its key in the header (`key_chars` characters each: a number, or
    one per example; keys are KEY_DIGITS hex digits, cache/keys.py)."""
    per_token = token_bytes(dtype, num_layers, dim) + _TOKEN_INDEX
    keys = np.asarray(key_chars, dtype=np.int64) + KEY_FRAMING
    return np.asarray(tokens, dtype=np.int64) * per_token + _EXAMPLE_INDEX + keys


def header_bound(fs_id: str, num_layers: int) -> int:
    """An upper bound on the bytes of a body's header other than its keys' (those are in
    `example_bytes`): its length field, metadata, the six tensors' entries and padding."""
    return 1024 + 2 * len(fs_id) + 8 * num_layers


def body_bytes(batch: ExampleBatch) -> int:
    """Bytes of the safetensors body of `batch`, but for `header_bound`'s part: the sum of
    its `example_bytes` and the last offset."""
    tokens = np.diff(np.asarray(batch.offsets, dtype=np.int64))
    keys = [len(k) for k in batch.keys]
    layers, dim = batch.features.shape[1], batch.features.shape[2]
    dtype = batch.features.dtype.name
    return 8 + int(example_bytes(tokens, layers, dim, dtype, keys).sum())


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
    8-byte length in front, and the whole body's length. Only shapes are needed, so a body
    can be sent before its features are read (api/features.py)."""
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
    """The body's tensors before the features, in order and in their wire dtypes, from the
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
    dtype) `features`, follow them: what `encode_parts` sends before a batch's features and
    the service before features it reads while it sends."""
    tensors = index_tensors(small)
    shape, dtype = features
    head, length = header(
        [(n, a.dtype.name, a.shape) for n, a in tensors.items()] + [("features", dtype, shape)],
        _metadata(dtype, layers, keys, fs_id, extra),
    )
    return head, [array_bytes(a) for a in tensors.values()], length


def array_bytes(array: np.ndarray) -> memoryview:
    """A C-contiguous array's own buffer as bytes (no copy)."""
    return np.ascontiguousarray(array).reshape(-1).data.cast("B")


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
    return [head, *rest, array_bytes(features)], length


def encode(batch: ExampleBatch, fs_id: str, extra: dict[str, str] | None = None) -> bytes:
    """The safetensors body of `batch` in one piece; `extra` adds metadata strings."""
    parts, _ = encode_parts(batch, fs_id, extra)
    return b"".join(parts)


_NP_DTYPES = {v: k for k, v in _ST_DTYPES.items()}


#: A header longer than this is no features body's (a broken or foreign length field).
MAX_HEADER = 1 << 30


@dataclass(frozen=True)
class Tensor:
    """One tensor of a body: its dtype, shape and data offsets [start, end)."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Frame:
    """A features body's header, checked: where its tensors lie, its layers and keys."""

    size: int  # bytes of the header with its 8-byte length: where the tensors' data begins
    tensors: dict[str, Tensor]  # in body order
    layers: list[int]
    keys: list[str]

    @property
    def data_bytes(self) -> int:
        return max((t.end for t in self.tensors.values()), default=0)

    @property
    def contiguous(self) -> bool:
        """The tensors lie back to back from the first data byte (as safetensors wants)."""
        ends = [0] + [t.end for t in self.tensors.values()]
        return all(t.start == e for t, e in zip(self.tensors.values(), ends, strict=False))

    def whole_examples(self, received: int, offsets: np.ndarray) -> int:
        """How many examples, from the first, arrived whole when the first `received` data
        bytes did (`offsets`: the body's, whole by then): 0 unless the features come last."""
        features = self.tensors["features"]
        if features.end != self.data_bytes or received < features.start:
            return 0
        row = features.dtype.itemsize * int(np.prod(features.shape[1:]))
        rows = (min(received, features.end) - features.start) // max(row, 1)
        return int(np.searchsorted(offsets, rows, side="right")) - 1


def frame_size(first: bytes | memoryview) -> int:
    """The header's size, length field included, from a body's first 8 bytes."""
    if len(first) < 8:
        raise StoreError(f"features body is not safetensors: {len(first)} bytes, no header length")
    n = int.from_bytes(bytes(first[:8]), "little")
    if n > MAX_HEADER:
        raise StoreError(f"features body is not safetensors: a header of {n} bytes")
    return 8 + n


def parse_frame(head: bytes | memoryview) -> Frame:
    """The checked header of a features body from its first `frame_size` bytes; StoreError
    for another format, a malformed tensor entry, or features and scales that disagree.

    Every part is checked before it is used (a header or metadata of another JSON type,
    negative or overflowing shapes), so no header, however cut or garbled, gives another
    exception (tests/test_fuzz_wire.py)."""
    n = frame_size(head) - 8
    if len(head) < 8 + n:
        raise StoreError(
            f"features body is not safetensors: a header of {n} bytes in a body of {len(head)}"
        )
    try:
        header = json.loads(bytes(head[8 : 8 + n]))
        meta = header.pop("__metadata__", {})
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError, RecursionError) as err:
        raise StoreError(f"features body is not safetensors: {err!r}") from err
    if not isinstance(meta, dict) or meta.get("format") != WIRE_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else meta
        raise StoreError(f"features body in format {found!r}, expected {WIRE_FORMAT}")
    tensors = {}
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
        if min(shape, default=0) < 0 or not 0 <= lo <= hi or hi - lo != count * dtype.itemsize:
            raise StoreError(
                f"features body: tensor {name!r} at bytes {lo}..{hi} does not fit its shape "
                f"{list(shape)} of {dtype.name}"
            )
        tensors[name] = Tensor(name, dtype, shape, lo, hi)
    features, scales = tensors["features"], tensors.get("scales")
    quantized = features.dtype == np.int8
    if features.dtype.name not in STORED_DTYPES or quantized != (scales is not None):
        raise StoreError(
            f"features body: features of {features.dtype.name} "
            f"{'with' if scales is not None else 'without'} scales (int8 features come with "
            "scales, float16/float32 features without)"
        )
    if scales is not None and scales.shape != features.shape[:2]:
        raise StoreError(
            f"features body: scales {list(scales.shape)} for features "
            f"{list(features.shape)} (expected one scale per token and layer)"
        )
    layers, keys = _listed(meta, "layers", int), _listed(meta, "keys", str)
    ordered = dict(sorted(tensors.items(), key=lambda item: item[1].start))
    return Frame(8 + n, ordered, layers, keys)


def decode(body: bytes | bytearray | memoryview) -> ExampleBatch:
    """The ExampleBatch of a features body; StoreError for another format or a broken body.

    The arrays are views into `body` (no copy) when it is a writable buffer (a bytearray the
    client read into); copies of an immutable `bytes`, so every array is writable either way.
    """
    view = memoryview(body).cast("B")
    frame = parse_frame(view)
    data = len(view) - frame.size
    t = {}
    for name, tensor in frame.tensors.items():
        if tensor.end > data:
            raise StoreError(
                f"features body: tensor {name!r} at bytes {tensor.start}..{tensor.end} does not "
                f"fit its shape {list(tensor.shape)} of {tensor.dtype.name} or the body's "
                f"{data} data bytes"
            )
        count = math.prod(tensor.shape)
        offset = frame.size + tensor.start
        array = np.frombuffer(view, tensor.dtype, count, offset).reshape(tensor.shape)
        t[name] = array if array.flags.writeable else array.copy()
    _check_layout(t, frame.layers, frame.keys)
    return ExampleBatch(
        features=t["features"],  # (N, Lsel, D)
        offsets=t["offsets"],  # (n + 1,)
        word_ids=t["word_ids"],  # (N,)
        type_ids=t["type_ids"],  # (N,)
        pair_starts=t["pair_starts"],  # (n,)
        layers=frame.layers,
        keys=frame.keys,
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
    # one layer for several named: a mix of them, served as one (cache/reduce.py's convention)
    mixed = features.ndim == 3 and features.shape[1] == 1 and len(layers) > 1
    expected = {
        "features": (
            tokens,
            1 if mixed else len(layers),
            features.shape[-1] if features.ndim == 3 else -1,
        ),
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
