"""The store's zarr group files, `zarr.json` at the root and in each pool: written byte for byte
as zarr writes them, and read back checked, since no checksum covers them.

A root's attributes say the store's format and version; a pool's its encoder identity, dtype,
layer count and width. A file that is not JSON, or JSON of another shape (a list, attributes
that are not a map, a pool without a positive integer `num_layers` and `dim` or with a dtype
the store does not keep) is refused naming the file, never read as a default
(tests/test_fuzz_fsck.py)."""

from __future__ import annotations

import json
from typing import Any

from .errors import IncompatibleStoreError, StoreCorruptError
from .types import STORED_DTYPES


def group_json(attrs: dict[str, Any]) -> bytes:
    """A zarr v3 group's zarr.json, byte for byte as zarr writes it."""
    group = {"attributes": attrs, "zarr_format": 3, "node_type": "group"}
    return json.dumps(group, indent=2).encode()


def root_attributes(raw: bytes, where: str) -> dict[str, Any]:
    """The attributes of a store's root zarr.json (`where`: its path), {} when it has none;
    IncompatibleStoreError when it is no zarr group's metadata."""
    try:
        attrs = json.loads(raw).get("attributes", {})
    except (ValueError, AttributeError) as err:  # not JSON, or JSON of another shape
        raise IncompatibleStoreError(f"{where} is not a store's: {err}") from err
    if not isinstance(attrs, dict):
        raise IncompatibleStoreError(f"{where}: attributes {attrs!r}, not a map")
    return attrs


def pool_attributes(raw: bytes, where: str) -> dict[str, Any]:
    """The attributes of a pool's zarr.json (`where`: its path); StoreCorruptError unless they
    hold a positive integer num_layers and dim and a stored dtype."""
    try:
        meta = json.loads(raw)
    except ValueError as err:  # not UTF-8 JSON: the file is damaged
        raise StoreCorruptError(f"{where}: {err}") from err
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if not (
        isinstance(attrs, dict)
        and attrs.get("dtype") in STORED_DTYPES
        and all(type(attrs.get(k)) is int and attrs[k] > 0 for k in ("num_layers", "dim"))
    ):
        raise StoreCorruptError(
            f"{where}: not a pool's metadata (expected its attributes num_layers, dim and "
            f"dtype, got {str(attrs)[:200]})"
        )
    return attrs
