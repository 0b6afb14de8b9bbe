"""Where a store's bytes live: the `Backend` protocol one `Store` (store.py) is given.

The store owns the format (pools, segments, manifests, sidecars, checksums, the commit
protocol, reads and read plans); a backend only moves named bytes, as zarr-python's `Store`
does under its arrays. Two implement it, and tests/test_backend_contract.py holds both to the
same answers and errors:

    DirectoryBackend   a local directory, its objects files (directory.py)
    ObjectBackend      an s3:// prefix on object storage, through obstore (bucket.py)

Keys name objects relative to the backend's root, "/"-separated ("pools/P/zarr.json"). No
component is empty, "." or "..", or begins with "." (the directory backend keeps its locks and
temporary files under such names, and listings leave them out). A prefix is a key's leading
components: "pools" holds "pools/P/zarr.json"; "" is the root.

What a segment needs beyond single objects, and why it is here and not in the store: a
segment is many files written together, and appears whole or not at all. A directory does
that with one rename of a temporary folder; object storage cannot rename, so it puts the
segment's objects and its commit object (the checksum table) last. `put_tree` writes a tree
either way and `has_tree` says whether one was written whole; `rename` sets one aside the
same way round (on object storage its commit object goes first, so no reader sees it half
gone). A writer of a directory holds `lock`; object storage needs none: a segment is
content-addressed, and two writers of it put the same bytes.

A backend that holds its objects as local files says where (`root`): the store then maps a
segment's shard files (shards.py) instead of asking for ranges, so a local read makes no
copy beyond the one into its answer.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import ByteRangeError

#: (start, length) in bytes: `length` bytes from byte `start` of an object.
Range = tuple[int, int]


@runtime_checkable
class Backend(Protocol):
    """Named objects under a root: whole or ranged reads, atomic writes, listings."""

    #: Where the objects live, for messages: a directory or an s3:// URL.
    location: str

    @property
    def root(self) -> Path | None:
        """The directory whose files are the objects, or None when they are not local files."""
        ...

    def get(self, key: str) -> bytes:
        """The object's bytes; `ObjectNotFoundError` (a FileNotFoundError) when there is none."""
        ...

    def get_ranges(self, requests: Mapping[str, Sequence[Range]]) -> dict[str, list]:
        """For each object, its (start, length) ranges, in order, as bytes-like objects.

        Several ranges of one object are asked for in one call (object storage merges ranges
        close together into one request) and the objects concurrently where that helps. A
        range may end at the object's end; an empty range is b"". `ByteRangeError` for a
        range that is negative or ends past the object, `ObjectNotFoundError` for a missing
        object."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """The object `key` holds `data`: a reader sees the new bytes whole or the old ones,
        never a part, even when the write fails or the process is killed."""
        ...

    def exists(self, key: str) -> bool:
        """Whether an object `key` exists (a prefix is not an object)."""
        ...

    def list(self, prefix: str) -> dict[str, int]:
        """{key: size in bytes} of every object under `prefix`, at any depth."""
        ...

    def list_dir(self, prefix: str) -> builtins.list[str]:
        """The names one level under `prefix`, sorted: its objects' and its sub-prefixes'."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object `key`; nothing happens when there is none."""
        ...

    def rename(self, src: str, dst: str, commit: str | None = None) -> None:
        """The object, or every object under the prefix, `src` moved to `dst` (which holds
        nothing). commit: for a tree written by `put_tree`, the name of its commit object:
        a backend that moves object by object moves it first. `ObjectNotFoundError` when
        `src` holds nothing."""
        ...

    def put_tree(self, prefix: str, commit: str) -> AbstractContextManager[Path]:
        """A local directory to write a tree into (the path, not yet made); on a clean exit
        its files become the objects under `prefix` (which holds no tree), all of them
        visible or none: the `commit` file, which the tree must hold, is the last to become
        visible. On an exception nothing is published."""
        ...

    def has_tree(self, prefix: str, commit: str) -> bool:
        """Whether a `put_tree(prefix, commit)` finished (on a directory: the folder is there;
        on object storage: its commit object is)."""
        ...

    def lock(self, prefix: str) -> AbstractContextManager[None]:
        """Held while writing trees under `prefix`: one writer at a time where the backend
        needs it (a directory, which also removes what killed writers' `put_tree` left under
        `prefix`); nothing on object storage."""
        ...


def check_key(key: str, *, prefix: bool = False) -> str:
    """`key` if it names an object (or with `prefix`, a prefix: "" too); else ValueError."""
    if not isinstance(key, str):
        raise TypeError(f"a key is a str, got {type(key).__name__} {key!r}")
    if prefix and key == "":
        return key
    parts = key.split("/")
    bad = [p for p in parts if not p or p.startswith(".") or "\0" in p or "\\" in p]
    if bad:
        raise ValueError(
            f"key {key!r}: expected '/'-separated names, none empty, none beginning with '.', "
            f"without NUL or backslash; got {bad[0]!r}"
        )
    return key


def check_ranges(where: str, ranges: Sequence[Range], size: int | None = None) -> list[Range]:
    """`ranges` as (int, int) pairs, each with start >= 0 and length >= 0 and, when the
    object's `size` is known, ending inside it; else ByteRangeError naming the object
    (`where`: its location and key)."""
    out = []
    for r in ranges:
        try:
            start, length = (int(x) for x in r)
        except (TypeError, ValueError):
            raise ByteRangeError(f"{where}: a range is (start, length), got {r!r}") from None
        if start < 0 or length < 0:
            raise ByteRangeError(
                f"{where}: range (start {start}, length {length}): expected both >= 0"
            )
        if size is not None and start + length > size:
            raise ByteRangeError(past_end(where, start, length, size))
        out.append((start, length))
    return out


def past_end(where: str, start: int, length: int, size: int) -> str:
    """What `ByteRangeError` says of a range that ends past its object's `size` bytes."""
    return (
        f"{where}: range (start {start}, length {length}) ends at byte {start + length}, "
        f"past the end of the object ({size} bytes)"
    )
