"""The chunked feature store (zarr v3). Imports nothing from the other snowfire packages."""

from . import migrate as migration  # `snowfire migrate`'s file side (extractor/migrate.py)
from .backend import Backend
from .bucket import ObjectBackend, is_bucket
from .directory import DirectoryBackend
from .durable import atomic_write
from .errors import (
    ByteRangeError,
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    InvalidSelectionError,
    ObjectNotFoundError,
    RequestTooLargeError,
    ServiceUnreachableError,
    StoreCorruptError,
    StoreError,
    StoreUnreachableError,
)
from .export import export_hdf5
from .fsck import Damage, Report, quarantine, repair_files
from .fsck import check as check_store
from .keys import (
    STORE_FORMAT_VERSION,
    canonical_json,
    digest,
    encoder_id,
    example_key,
    file_sha256,
    identity_content,
)
from .paging import DEFAULT_PAGE_BYTES, split_pages
from .provenance import versions
from .quant import QUANTIZATION
from .reader import Reader, open_reader, open_store
from .recent import RecentFeatures
from .reduce import POOLS, mix_layers, pool_examples, reduce_batch
from .remote import RemoteStore
from .retry import RetryPolicy
from .segment import DEFAULT_TILES, TILES
from .store import Store
from .types import STORED_DTYPES, ExampleBatch, FeatureSetInfo, token_bytes
from .wire import (
    JSON,
    SAFETENSORS,
    WIRE_FORMAT,
    array_bytes,
    body_bytes,
    body_layout,
    encode_parts,
    example_bytes,
)
from .written import SegmentArrays, segment_arrays

__all__ = [
    "DEFAULT_PAGE_BYTES",
    "DEFAULT_TILES",
    "JSON",
    "POOLS",
    "QUANTIZATION",
    "SAFETENSORS",
    "STORED_DTYPES",
    "STORE_FORMAT_VERSION",
    "TILES",
    "WIRE_FORMAT",
    "Backend",
    "ByteRangeError",
    "Damage",
    "DirectoryBackend",
    "ExampleBatch",
    "ExampleNotFoundError",
    "FeatureSetInfo",
    "FeatureSetNotFoundError",
    "IncompatibleStoreError",
    "InvalidSelectionError",
    "ObjectBackend",
    "ObjectNotFoundError",
    "Reader",
    "RecentFeatures",
    "RemoteStore",
    "Report",
    "RequestTooLargeError",
    "RetryPolicy",
    "SegmentArrays",
    "ServiceUnreachableError",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreUnreachableError",
    "array_bytes",
    "atomic_write",
    "body_bytes",
    "body_layout",
    "canonical_json",
    "check_store",
    "digest",
    "encode_parts",
    "encoder_id",
    "example_bytes",
    "example_key",
    "segment_arrays",
    "export_hdf5",
    "file_sha256",
    "identity_content",
    "is_bucket",
    "mix_layers",
    "open_reader",
    "open_store",
    "pool_examples",
    "quarantine",
    "repair_files",
    "reduce_batch",
    "split_pages",
    "token_bytes",
    "versions",
    "migration",
]
