"""The feature store: content-addressed example pools plus ordered feature sets, on zarr v3.

    STORE/
      zarr.json                          root group (attrs: format, version)
      pools/<pool_id>/zarr.json          one pool per (encoder identity, dtype); attrs: identity
      pools/<pool_id>/segments/<seg>/    immutable zarr groups of examples (see segment.py)
      pools/<pool_id>/.lock              held by the one writer of the pool
      featuresets/<id>.json              manifest: what made the set, which pool, the
                                         checksums of its other files and of itself
      featuresets/<id>.keys              the set's example keys, one per line, in order
      featuresets/<id>.texts.jsonl       their texts; <id>.json.copy: the manifest again

An example's key hashes its pool id and its canonical text, so the same text is stored once
per pool however many feature sets list it (SICK-E and SICK-R share their pairs).

The store owns this format and is given a storage backend (backend.py) that moves the bytes:
a local directory (directory.py) or an s3:// prefix on object storage (bucket.py), the same
names and bytes in both. Every write is whole or not at all: a segment is one `put_tree`
(a folder renamed into place, or its objects with its checksums.json last) and is committed
once `has_tree` says so; a feature set's files are single `put`s, its manifest last
(sidecars.py). A reader never sees a half-written example or set. Where the backend's objects
are local files (`backend.root`), a segment's features shards are mapped (shards.py); else
they are read by byte ranges (ranged.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import find, quant, ranged, sidecars
from .backend import Backend, check_key
from .bucket import is_bucket
from .directory import DirectoryBackend
from .errors import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    InvalidSelectionError,
)
from .groups import group_json, pool_attributes, root_attributes
from .keys import STORE_FORMAT_VERSION, digest, encoder_id
from .plan import ReadPlan, check_index_type, check_layers, read_dtype
from .segment import CHECKSUMS, Segment, no_checksums, parse_checksums, segment_prefix
from .segment import write_segment as write_segment_files
from .types import STORED_DTYPES, ExampleBatch, FeatureSetInfo

#: Seconds a parsed manifest is trusted before it is read again: another process's rewrite of
#: a feature set is seen within this, this process's own at once. Longer where a read is a
#: round trip to object storage than where it is a local file.
MANIFEST_TTL = {"files": 1.0, "objects": 5.0}


class Store:
    """Pools of examples and the feature sets that list them, on a storage backend.

    location: a directory (a `DirectoryBackend` over it), or any `Backend`; `open_store`
    picks the backend for a directory or an s3:// URL."""

    def __init__(self, location: Backend | str | os.PathLike):
        backend: Backend
        if isinstance(location, (str, os.PathLike)):
            if is_bucket(location):
                raise ValueError(
                    f"Store({str(location)!r}): a bucket URL; open it with "
                    "cache.open_store(url), or Store(ObjectBackend(url))"
                )
            backend = DirectoryBackend(location)
        elif isinstance(location, Backend):
            backend = location
        else:
            raise TypeError(
                f"Store: expected a directory or a cache.Backend, got {type(location).__name__}"
            )
        self.backend = backend
        #: where its segments' files are mapped from; None: read by ranges (ranged.py)
        self._files: Path | None = backend.root
        #: a directory (a Path) or the backend's URL
        self.path = backend.root if backend.root is not None else backend.location
        self.manifest_ttl = MANIFEST_TTL["files" if self._files is not None else "objects"]
        self._lock = threading.Lock()
        self._segments: dict[tuple[str, str], Segment] = {}
        self._index: dict[str, dict[str, tuple[str, int]]] = {}  # pool -> key -> (seg, row)
        self._keys_cache: dict[str, list[str]] = {}
        self._meta_cache: dict[str, dict[str, Any]] = {}
        # fs_id -> (its manifest's bytes, when they were read, info): a read parses the
        # manifest once, and reads it again at most every manifest_ttl seconds
        self._info_cache: dict[str, tuple[bytes, float, FeatureSetInfo]] = {}
        self._format_checked = False

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def check_format(self) -> None:
        """Refuse a directory that is not a store of this format (reads and writes both): a
        store of another format has other keys, and mixing them would serve wrong features."""
        if self._format_checked:
            return
        try:
            attrs = root_attributes(self.backend.get("zarr.json"), f"{self.path}/zarr.json")
        except FileNotFoundError:
            return  # nothing written yet: reads find no feature set
        if attrs.get("format") != "snowfire-store":
            raise IncompatibleStoreError(f"{self.path} is a zarr store but not a snowfire store")
        if attrs.get("version") == STORE_FORMAT_VERSION - 1:
            raise IncompatibleStoreError(
                f"{self.path}: written as snowfire store format {attrs.get('version')}, this "
                f"snowfire reads and writes format {STORE_FORMAT_VERSION} only (its content keys "
                f"differ). Run `snowfire migrate --store {self.path}`: it keeps the stored "
                "features wherever they are still right, and says which feature sets to "
                "extract again; this store is left as it is until then."
            )
        if attrs.get("version") != STORE_FORMAT_VERSION:
            raise IncompatibleStoreError(
                f"{self.path}: written as snowfire store format {attrs.get('version')}, this "
                f"snowfire reads and writes format {STORE_FORMAT_VERSION} only (its content keys "
                "differ). Extract again into a new store; this one is left as it is."
            )
        self._format_checked = True

    # ---------------------------------------------------------------- writing
    def ensure(self) -> None:
        """Create the root group if the store is new; refuse a location holding other things."""
        if self.backend.exists("zarr.json"):
            self.check_format()
            return
        held = self.backend.list_dir("")
        if held:
            raise IncompatibleStoreError(
                f"{self.path} is not empty and is not a store: it holds objects "
                f"({', '.join(held[:3])}{', ...' if len(held) > 3 else ''})"
            )
        attrs = {"format": "snowfire-store", "version": STORE_FORMAT_VERSION}
        self.backend.put("zarr.json", group_json(attrs))

    def ensure_pool(self, identity: dict[str, Any], dtype: str, num_layers: int, dim: int) -> str:
        """Create (once) the pool for an encoder identity at a dtype; return its id."""
        if dtype not in STORED_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(STORED_DTYPES)}, got {dtype!r}")
        self.ensure()
        pool_id = encoder_id(identity, dtype)
        attrs = {"identity": identity, "dtype": dtype, "num_layers": num_layers, "dim": dim}
        if dtype == "int8":
            attrs["quantization"] = quant.QUANTIZATION
        meta = f"pools/{pool_id}/zarr.json"
        if not self.backend.exists(meta):  # two writers put the same bytes
            self.backend.put(meta, group_json(attrs))
        return pool_id

    @contextmanager
    def writer(self, pool_id: str) -> Iterator[None]:
        """Hold the pool's write lock (a directory's: what a killed writer left is removed;
        object storage needs none)."""
        with self.backend.lock(f"pools/{pool_id}"):
            yield

    def write_segment(
        self,
        pool_id: str,
        seg_id: str,
        keys: list[str],
        parts,
        dtype: str,
        tiles: str | None = None,
    ) -> None:
        """Atomically add one segment of examples (call inside `writer`); tiles: of its
        features, "token" (the default) or "layer" (cache/segment.py). Written locally, then
        put whole (`put_tree`), its checksums the commit."""
        if self.has_segment(pool_id, seg_id):
            return
        with self.backend.put_tree(segment_prefix(pool_id, seg_id), CHECKSUMS) as folder:
            write_segment_files(folder, keys, parts, dtype, tiles)
        with self._lock:
            if pool_id in self._index:
                for row, key in enumerate(keys):
                    self._index[pool_id].setdefault(key, (seg_id, row))

    def write_featureset(
        self, manifest: dict[str, Any], keys: Sequence[str], texts: Sequence[dict] | None = None
    ) -> FeatureSetInfo:
        """Atomically record a feature set (its keys must all be stored), with its texts."""
        missing = self.missing_keys(manifest["encoder_id"], keys)
        if missing:
            raise ExampleNotFoundError(f"{len(missing)} keys of the feature set are not stored")
        fs_id = manifest["id"]
        index = self._pool_index(manifest["encoder_id"])
        num_tokens = 0
        for key in keys:
            start, end = self._segment(manifest["encoder_id"], index[key][0]).span(index[key][1])
            num_tokens += end - start
        manifest = {
            **manifest,
            "num_examples": len(keys),
            "num_tokens": num_tokens,
            "keys_sha256": digest(list(keys), 64),
        }
        if texts is not None and len(texts) != len(keys):
            raise ValueError(f"{len(texts)} texts for {len(keys)} keys")
        # texts, keys, the manifest's copy, the manifest last: a reader sees the set only once
        # its files are in place (sidecars.py: the manifest records their checksums)
        files, manifest = sidecars.featureset_files(manifest, keys, texts)
        for rel, data in files:
            self.backend.put(rel, data)
        self._forget(fs_id)
        return _info(manifest)

    # ---------------------------------------------------------------- look-up
    def missing_keys(self, pool_id: str, keys: Sequence[str]) -> list[str]:
        """Keys not yet stored in the pool, in the given order, without duplicates."""
        index = self._pool_index(pool_id, refresh=True)
        return list(dict.fromkeys(k for k in keys if k not in index))

    def featureset_ids(self) -> list[str]:
        """The id of every feature set with a manifest, sound or not (what fsck checks)."""
        names = self.backend.list_dir("featuresets")
        return [n.removesuffix(sidecars.MANIFEST) for n in names if n.endswith(sidecars.MANIFEST)]

    def list_featuresets(self) -> list[FeatureSetInfo]:
        self.check_format()
        return [
            _info(sidecars.load_manifest(self, fs_id, self.backend.get(_manifest(fs_id))))
            for fs_id in self.featureset_ids()
        ]

    def get_featureset(self, fs_id: str) -> FeatureSetInfo:
        cached = self._info_cache.get(fs_id)
        now = time.monotonic()
        if cached is not None and now - cached[1] < self.manifest_ttl:
            return cached[2]  # on every read: no I/O
        self.check_format()
        try:
            data = self.backend.get(_manifest(fs_id)) if _is_id(fs_id) else None
        except FileNotFoundError:
            data = None
        if data is None:
            self._forget(fs_id)
            raise FeatureSetNotFoundError(f"no feature set {fs_id!r} in {self.path}")
        # a manifest is replaced whole, never edited: the same bytes are the same set
        if cached is not None and cached[0] == data:
            self._info_cache[fs_id] = (data, now, cached[2])
            return cached[2]
        self._forget(fs_id)  # replaced: its keys may be others
        info = _info(sidecars.load_manifest(self, fs_id, data))  # StoreCorruptError if damaged
        self._info_cache[fs_id] = (data, now, info)
        return info

    def _forget(self, fs_id: str) -> None:
        self._info_cache.pop(fs_id, None)
        self._keys_cache.pop(fs_id, None)

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
        """The feature set of a task split made by an encoder (named by its spec or name);
        sha256 and read: of its source file, and how it was read (cache/find.py)."""
        return find.find_featureset(
            self.list_featuresets(),
            str(self.path),
            encoder=encoder,
            task=task,
            split=split,
            pair_encoding=pair_encoding,
            sha256=sha256,
            read=read,
        )

    def featureset_keys(self, fs_id: str) -> list[str]:
        if fs_id not in self._keys_cache:
            info = self.get_featureset(fs_id)
            self._keys_cache[fs_id] = sidecars.load_keys(self, info)  # checked, whole
        return self._keys_cache[fs_id]

    def featureset_lengths(self, fs_id: str) -> list[int]:
        """Tokens of each example, in the set's order (what a paged reader sizes pages by):
        its keys located in the pool, no feature read."""
        info = self.get_featureset(fs_id)
        ends = self._plan(info.encoder_id, self.featureset_keys(fs_id), None, None).ends
        return [b - a for a, b in zip(ends, ends[1:], strict=False)]

    def storage_order(self, fs_id: str) -> list[int]:
        """Feature-set indices sorted by where their examples sit on disk (segment, row)."""
        info = self.get_featureset(fs_id)
        index = self._pool_index(info.encoder_id)
        keys = self.featureset_keys(fs_id)
        return sorted(range(len(keys)), key=lambda i: index[keys[i]])

    def featureset_texts(self, fs_id: str) -> list[dict[str, Any]]:
        """The words of each example ({"a": [...], "b": [...] | None}), in order."""
        return sidecars.load_texts(self, self.get_featureset(fs_id))  # checked, whole

    # ---------------------------------------------------------------- reading
    def read(
        self,
        fs_id: str,
        indices: Sequence[int] | None = None,
        keys: Sequence[str] | None = None,
        layers: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> ExampleBatch:
        """Features of some examples of a feature set, by index in the set or by key.

        dtype: None gives the stored dtype, float32 for an int8 set (dequantised); float16 or
        float32 converts; "int8" (an int8 set only) gives the stored values with their scales.
        """
        return self.plan_read(fs_id, indices, keys, layers, dtype).batch()

    def plan_read(
        self,
        fs_id: str,
        indices: Sequence[int] | None = None,
        keys: Sequence[str] | None = None,
        layers: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> ReadPlan:
        """`read`'s look-ups and checks, without reading features yet (cache/plan.py)."""
        info = self.get_featureset(fs_id)
        if (indices is None) == (keys is None):
            raise InvalidSelectionError("give exactly one of indices or keys")
        layer_list = check_layers(layers, info.num_layers)
        if indices is not None:
            all_keys = self.featureset_keys(fs_id)
            for i in indices:
                check_index_type(i)
                if not 0 <= i < len(all_keys):
                    raise InvalidSelectionError(
                        f"index {i} out of range: feature set {fs_id!r} has examples "
                        f"0..{len(all_keys) - 1}"
                    )
            keys = [all_keys[i] for i in indices]
        assert keys is not None  # exactly one of them, checked above
        return self._plan(info.encoder_id, list(keys), layer_list, dtype)

    def read_keys(
        self, pool_id: str, keys: list[str], layers: list[int] | None, dtype: str | None = None
    ) -> ExampleBatch:
        """Features of examples of a pool, by key (dtype as in `read`)."""
        self.check_format()
        layers = check_layers(layers, self._pool_meta(pool_id)["num_layers"])
        return self._plan(pool_id, keys, layers, dtype).batch()

    def _plan(
        self, pool_id: str, keys: list[str], layers: list[int] | None, dtype: str | None
    ) -> ReadPlan:
        """Locate `keys` in the pool (`layers` already checked against it). Plain Python on
        ints and tuples: one example's read costs a few tens of microseconds."""
        index = self._pool_index(pool_id)
        try:
            where = [index[k] for k in keys]  # (segment id, row) of each key
        except KeyError:
            index = self._pool_index(pool_id, refresh=True)
            for key in keys:
                if key not in index:
                    missing = f"example {key!r} is not in pool {pool_id}"
                    raise ExampleNotFoundError(missing) from None
            where = [index[k] for k in keys]
        meta = self._pool_meta(pool_id)
        segments = self._segments
        spans, rows, ends, lo = [], [], [0], 0
        for seg_id, row in where:
            seg = segments.get((pool_id, seg_id)) or self._segment(pool_id, seg_id)
            start, end = seg._bounds[row], seg._bounds[row + 1]
            spans.append((seg, start, end))
            rows.append(row)
            lo += end - start
            ends.append(lo)
        return ReadPlan(
            store=self,
            spans=spans,
            rows=rows,
            ends=ends,
            keys=keys,
            layers=layers,
            num_layers=meta["num_layers"] if layers is None else len(layers),
            dim=meta["dim"],
            stored=meta["dtype"],
            want=read_dtype(dtype, meta["dtype"]),
        )

    def read_spans(self, jobs: list[tuple[Segment, int, int, Any]], layers) -> None:
        """Read each (segment, start, end, out) token range into its out array (`layers`
        are checked against the pool already: the segment's own checks are skipped). Local
        files: each range copied from the mapped shards; else every range of the jobs
        fetched together (ranged.py)."""
        if self._files is None:
            ranged.read_spans(self.backend, jobs, layers)
            return
        for seg, start, end, out in jobs:
            seg.read_checked(start, end, layers, out)  # (S, Lsel, D)

    # ---------------------------------------------------------------- segments
    def has_segment(self, pool_id: str, seg_id: str) -> bool:
        """Whether a segment is committed (a re-run skips it)."""
        return self.backend.has_tree(segment_prefix(pool_id, seg_id), CHECKSUMS)

    def segments(self) -> list[tuple[str, str]]:
        """(pool id, segment id) of every segment written whole, pool by pool (what fsck
        checks; a writer's unfinished one is not listed)."""
        return [
            (pool, seg)
            for pool in self.backend.list_dir("pools")
            for seg in self._segment_names(pool)
            if self.has_segment(pool, seg)
        ]

    # ---------------------------------------------------------------- internals
    def _pool_meta(self, pool_id: str) -> dict[str, Any]:
        if pool_id in self._meta_cache:  # a pool's attributes never change once written
            return self._meta_cache[pool_id]
        try:
            raw = self.backend.get(f"pools/{pool_id}/zarr.json")
        except (FileNotFoundError, ValueError):  # ValueError: not a pool id any key can have
            raise ExampleNotFoundError(f"no pool {pool_id} in {self.path}") from None
        attrs = pool_attributes(raw, f"{self.path}/pools/{pool_id}/zarr.json")
        self._meta_cache[pool_id] = attrs
        return self._meta_cache[pool_id]

    def _pool_index(self, pool_id: str, refresh: bool = False) -> dict[str, tuple[str, int]]:
        with self._lock:
            if pool_id in self._index and not refresh:
                return self._index[pool_id]
            index = dict(self._index.get(pool_id, {}))
            known = {seg for seg, _ in index.values()}
            for name in self._segment_names(pool_id):
                if name in known:
                    continue
                seg = self._segments.get((pool_id, name)) or self._open_segment(pool_id, name)
                if seg is None:  # not committed yet (object storage: its last object is to come)
                    continue
                self._segments[(pool_id, name)] = seg
                for row, key in enumerate(seg.keys):
                    index.setdefault(key, (name, row))
            self._index[pool_id] = index
            return index

    def _segment(self, pool_id: str, seg_id: str) -> Segment:
        seg = self._segments.get((pool_id, seg_id))
        if seg is None:
            seg = self._open_segment(pool_id, seg_id)
            if seg is None:
                raise ExampleNotFoundError(f"segment {seg_id} of pool {pool_id} is not committed")
            self._segments[(pool_id, seg_id)] = seg
        return seg

    def _segment_names(self, pool_id: str) -> list[str]:
        try:
            return self.backend.list_dir(f"pools/{pool_id}/segments")
        except ValueError:  # not a pool id any key can have
            return []

    def _open_segment(self, pool_id: str, seg_id: str) -> Segment | None:
        """The committed segment (None: not committed yet), its checksums read once."""
        prefix = segment_prefix(pool_id, seg_id)
        where = f"{self.backend.location}/{prefix}"
        try:
            table = parse_checksums(self.backend.get(f"{prefix}/{CHECKSUMS}"), where)
        except FileNotFoundError:
            if self.backend.has_tree(prefix, CHECKSUMS):  # whole, yet without its checksums
                raise no_checksums(where) from None
            return None
        if self._files is None:
            return ranged.open_segment(self.backend, prefix, table)
        return Segment(self._files / prefix, table)


def _manifest(fs_id: str) -> str:
    return sidecars.rel(fs_id, sidecars.MANIFEST)


def _is_id(fs_id: str) -> bool:
    """Whether `fs_id` can name a feature set (a path, or a name no key can have, cannot)."""
    if not isinstance(fs_id, str) or not fs_id or "/" in fs_id:
        return False
    try:
        check_key(_manifest(fs_id))
    except ValueError:
        return False
    return True


def _info(manifest: dict[str, Any]) -> FeatureSetInfo:
    return FeatureSetInfo.from_dict(manifest, manifest)
