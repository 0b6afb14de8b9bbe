"""`Reader`: the read side every store shares, and `open_reader`, which picks one by location.

    Store          a local directory (store.py over directory.py's backend), or an s3://
                   prefix on object storage (store.py over bucket.py's backend)
    RemoteStore    the snowfire REST service at an http(s):// URL (remote.py)

A trainer, the predictor or an analysis holds a `Reader` and cannot tell which it has: the
same answers, byte for byte, and the same exceptions (errors.py) for an unknown feature set
(`FeatureSetNotFoundError`), an unknown key (`ExampleNotFoundError`) and an index or layer
outside the set (`InvalidSelectionError`). tests/test_reader_contract.py holds every
implementation to that; a new one is one entry there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .types import ExampleBatch, FeatureSetInfo

if TYPE_CHECKING:
    from .retry import RetryPolicy
    from .store import Store


@runtime_checkable
class Reader(Protocol):
    """What callers outside the store read through (heads, compare, the CLI)."""

    @property
    def path(self) -> str | os.PathLike:
        """Where the features live: a directory, an s3:// prefix or the service's URL."""
        ...

    def list_featuresets(self) -> list[FeatureSetInfo]:
        """Every feature set, in name order."""
        ...

    def get_featureset(self, fs_id: str) -> FeatureSetInfo:
        """One feature set by id; `FeatureSetNotFoundError` when there is none."""
        ...

    def find_featureset(
        self,
        *,
        encoder: str,
        task: str,
        split: str,
        pair_encoding: str | None = None,
        sha256: str | None = None,
        read: str | None = None,
    ) -> FeatureSetInfo:
        """The one feature set of a task split made by `encoder` (its spec or name);
        `FeatureSetNotFoundError` when none or several match. sha256: only a set made from
        the source file of that digest; read: only one whose source was read that way (a
        user task's format and columns: tasks.split_source gives both)."""
        ...

    def featureset_keys(self, fs_id: str) -> list[str]:
        """The set's example keys, in its order."""
        ...

    def featureset_lengths(self, fs_id: str) -> list[int]:
        """Tokens of each example, in the set's order: the size of each one's features (a
        paged reader cuts its pages by them, cache/paging.py)."""
        ...

    def storage_order(self, fs_id: str) -> list[int]:
        """The set's indices sorted by where their examples are stored (fast to read so)."""
        ...

    def featureset_texts(self, fs_id: str) -> list[dict[str, Any]]:
        """The words of each example ({"a": [...], "b": [...] | None}), in order;
        `ExampleNotFoundError` for a set stored without its texts."""
        ...

    def read(
        self,
        fs_id: str,
        indices: Sequence[int] | None = None,
        keys: Sequence[str] | None = None,
        layers: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> ExampleBatch:
        """Features of some examples, by index in the set or by key (exactly one of them),
        of all layers or of `layers` in the order given. dtype: None gives the stored dtype
        (float32 for an int8 set), "float16"/"float32" converts, "int8" (an int8 set only)
        the stored values with their scales."""
        ...


def open_store(location: str | os.PathLike, retry: RetryPolicy | None = None) -> Store:
    """The store at a directory (a `DirectoryBackend`), or on object storage for an
    s3://bucket/prefix URL (an `ObjectBackend`, retried under `retry`, default
    `RetryPolicy.from_env()`)."""
    from .bucket import ObjectBackend, is_bucket
    from .store import Store

    if is_bucket(location):
        return Store(ObjectBackend(str(location), retry=retry))
    return Store(location)


def open_reader(location: str | os.PathLike, retry: RetryPolicy | None = None) -> Reader:
    """A store (`open_store`), or a `RemoteStore` for an http(s) URL: the same read methods."""
    if str(location).startswith(("http://", "https://")):
        from .remote import RemoteStore

        return RemoteStore(str(location), retry=retry)
    return open_store(location, retry)
