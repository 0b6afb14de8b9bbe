"""Content addressing: a key is the hash of canonical JSON of everything that changes the bytes."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

#: Bump when the stored bytes for the same encoder + text could change (layout, dtype rules).
STORE_FORMAT_VERSION = 1


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept, NaN/Infinity refused.

    Raises TypeError/ValueError for anything JSON cannot represent exactly: a hashing failure
    must raise, never fall back to a random key.
    """
    _check_finite(obj)
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _check_finite(obj: Any) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ValueError(f"cannot hash a non-finite float: {obj!r}")
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"cannot hash a dict with a non-string key: {k!r}")
            _check_finite(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_finite(v)


def digest(obj: Any, length: int = 32) -> str:
    """Hex sha256 of `canonical_json(obj)`, cut to `length` hex characters."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def encoder_id(identity: dict[str, Any], dtype: str) -> str:
    """Id of the example pool for one encoder identity stored at one dtype.

    The `spec` the user typed (which may hold a path) is left out: the same weights reached by
    another path or name share one pool; the weights and tokenizer hashes tell encoders apart.
    """
    content = {k: v for k, v in identity.items() if k != "spec"}
    return digest({"encoder": content, "dtype": dtype, "format": STORE_FORMAT_VERSION}, 16)


def example_key(pool_id: str, payload: dict[str, Any]) -> str:
    """Key of one example: its pool (encoder identity + dtype) and its canonical text."""
    return digest({"pool": pool_id, "text": payload}, 32)


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
