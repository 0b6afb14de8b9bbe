"""The chunked feature store (zarr v3). Imports nothing from the other snowfire packages."""

from .errors import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    InvalidSelectionError,
    RequestTooLargeError,
    StoreCorruptError,
    StoreError,
    StoreUnreachableError,
)
from .export import export_hdf5
from .keys import (
    STORE_FORMAT_VERSION,
    canonical_json,
    digest,
    encoder_id,
    example_key,
    file_sha256,
    identity_content,
)
from .provenance import versions
from .remote import RemoteStore
from .store import Store
from .types import STORED_DTYPES, ExampleBatch, FeatureSetInfo


def open_store(location) -> Store:
    """The store at a directory, or on object storage for an s3://bucket/prefix URL."""
    from .bucket import BucketStore, is_bucket

    return BucketStore(str(location)) if is_bucket(location) else Store(location)


def open_reader(location: str):
    """A store (open_store), or a `RemoteStore` for an http(s) URL: the same read methods."""
    if str(location).startswith(("http://", "https://")):
        return RemoteStore(str(location))
    return open_store(location)


__all__ = [
    "STORED_DTYPES",
    "STORE_FORMAT_VERSION",
    "ExampleBatch",
    "ExampleNotFoundError",
    "FeatureSetInfo",
    "FeatureSetNotFoundError",
    "IncompatibleStoreError",
    "InvalidSelectionError",
    "RemoteStore",
    "RequestTooLargeError",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreUnreachableError",
    "canonical_json",
    "digest",
    "encoder_id",
    "example_key",
    "export_hdf5",
    "file_sha256",
    "identity_content",
    "open_reader",
    "open_store",
    "versions",
]
