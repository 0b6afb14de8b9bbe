"""Content addressing: a key is the hash of canonical JSON of everything that changes the bytes."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

#: Bump when the stored bytes or the keys for the same encoder + text could change (layout,
#: dtype rules, what the encoder identity covers). 2: the identity covers the extractor
#: version, the precision policy and the model's config.json; labels (spec, name) left out.
STORE_FORMAT_VERSION = 2
#: Identity fields that label an encoder but do not change its output: the spec the user typed
#: and the name, which for `hf:DIR` is a path. Listed with the feature sets, never hashed.
LABEL_FIELDS = ("spec", "name")


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

    The label fields (`LABEL_FIELDS`: the spec the user typed and the name, either of which may
    be a path) are left out: the same weights reached by another path or name share one pool;
    the content hashes (weights, tokenizer, config), the precision policy, the pair encoding and
    the extractor version tell encoders apart.
    """
    return digest(
        {"encoder": identity_content(identity), "dtype": dtype, "format": STORE_FORMAT_VERSION},
        16,
    )


def identity_content(identity: dict[str, Any]) -> dict[str, Any]:
    """The part of an encoder identity that decides the stored bytes (labels left out)."""
    return {k: v for k, v in identity.items() if k not in LABEL_FIELDS}


#: Hex digits of an example's key (the wire's page sizes count them, cache/wire.py).
KEY_DIGITS = 32


def example_key(pool_id: str, payload: dict[str, Any]) -> str:
    """Key of one example: its pool (encoder identity + dtype) and its canonical text."""
    return digest({"pool": pool_id, "text": payload}, KEY_DIGITS)


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
