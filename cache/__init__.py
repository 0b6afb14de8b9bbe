"""The chunked feature store (zarr v3). Imports nothing from the other snowfire packages."""

from .durable import atomic_write
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
from .reader import Reader, open_reader, open_store
from .remote import RemoteStore
from .store import Store
from .types import STORED_DTYPES, ExampleBatch, FeatureSetInfo

__all__ = [
    "STORED_DTYPES",
    "STORE_FORMAT_VERSION",
    "ExampleBatch",
    "ExampleNotFoundError",
    "FeatureSetInfo",
    "FeatureSetNotFoundError",
    "IncompatibleStoreError",
    "InvalidSelectionError",
    "Reader",
    "RemoteStore",
    "RequestTooLargeError",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreUnreachableError",
    "atomic_write",
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
