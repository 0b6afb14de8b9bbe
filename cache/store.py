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
per pool however many feature sets list it (SICK-E and SICK-R share their pairs). Writes go to
a temporary directory renamed into place: a reader never sees a half-written example, and a
killed writer leaves only `.tmp-*` directories, removed by the next writer.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import quant, sidecars
from .durable import atomic_write, fsync_dir, fsync_tree
from .errors import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    InvalidSelectionError,
    StoreCorruptError,
)
from .keys import STORE_FORMAT_VERSION, digest, encoder_id
from .plan import ReadPlan, check_index_type, check_layers, read_dtype
from .segment import Segment, damaged_files, write_segment
from .types import STORED_DTYPES, ExampleBatch, FeatureSetInfo


class Store:
    """A directory holding pools of examples and the feature sets that list them."""

    #: Seconds a parsed manifest is trusted before its file is looked at again (one stat):
    #: another process's rewrite of a feature set is seen within this; this process's own at
    #: once. A manifest is replaced whole (a new inode) or deleted, never edited.
    manifest_ttl = 1.0

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._segments: dict[tuple[str, str], Segment] = {}
        self._index: dict[str, dict[str, tuple[str, int]]] = {}  # pool -> key -> (seg, row)
        self._keys_cache: dict[str, list[str]] = {}
        self._meta_cache: dict[str, dict[str, Any]] = {}
        # fs_id -> ((inode, mtime, size) of its .json, when it was looked at, info): a read
        # parses the manifest once, and stats it at most every manifest_ttl seconds
        self._info_cache: dict[str, tuple[tuple[int, int, int], float, FeatureSetInfo]] = {}
        self._format_checked = False
        self._fs_dir = os.fspath(self.path / "featuresets")  # a str: read() builds names on it

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def check_format(self) -> None:
        """Refuse a directory that is not a store of this format (reads and writes both): a
        store of another format has other keys, and mixing them would serve wrong features."""
        if self._format_checked:
            return
        try:
            attrs = json.loads(self._read_text("zarr.json")).get("attributes", {})
        except FileNotFoundError:
            return  # nothing written yet: reads find no feature set
        except (ValueError, AttributeError) as err:  # not JSON, or JSON of another shape
            raise IncompatibleStoreError(f"{self.path}/zarr.json is not a store's: {err}") from err
        if not isinstance(attrs, dict):
            raise IncompatibleStoreError(f"{self.path}/zarr.json: attributes {attrs!r}, not a map")
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
        """Create the root group if the directory is new; refuse a foreign directory."""
        root = self.path / "zarr.json"
        if root.exists():
            self.check_format()
            return
        if self.path.exists() and any(self.path.iterdir()):
            raise IncompatibleStoreError(f"{self.path} exists, is not empty and is not a store")
        import zarr

        group = zarr.open_group(str(self.path), mode="a")
        group.attrs.update({"format": "snowfire-store", "version": STORE_FORMAT_VERSION})
        (self.path / "featuresets").mkdir(exist_ok=True)

    def ensure_pool(self, identity: dict[str, Any], dtype: str, num_layers: int, dim: int) -> str:
        """Create (once) the pool for an encoder identity at a dtype; return its id."""
        if dtype not in STORED_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(STORED_DTYPES)}, got {dtype!r}")
        self.ensure()
        pool_id = encoder_id(identity, dtype)
        attrs = {"identity": identity, "dtype": dtype, "num_layers": num_layers, "dim": dim}
        if dtype == "int8":
            attrs["quantization"] = quant.QUANTIZATION
        self._create_pool(pool_id, attrs)
        return pool_id

    @contextmanager
    def writer(self, pool_id: str) -> Iterator[None]:
        """Hold the pool's write lock; clean up what a killed writer left behind."""
        pool = self.path / "pools" / pool_id
        with open(pool / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for tmp in (pool / "segments").glob(".tmp-*"):
                shutil.rmtree(tmp, ignore_errors=True)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

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
        features, "token" (the default) or "layer" (cache/segment.py)."""
        if self.has_segment(pool_id, seg_id):
            return
        self._commit_segment(pool_id, seg_id, keys, parts, dtype, tiles)
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
            self._write_bytes(rel, data)
        self._forget(fs_id)
        return _info(manifest)

    # ---------------------------------------------------------------- look-up
    def missing_keys(self, pool_id: str, keys: Sequence[str]) -> list[str]:
        """Keys not yet stored in the pool, in the given order, without duplicates."""
        index = self._pool_index(pool_id, refresh=True)
        return list(dict.fromkeys(k for k in keys if k not in index))

    def list_featuresets(self) -> list[FeatureSetInfo]:
        self.check_format()
        return [
            _info(sidecars.load_manifest(self, name[:-5], self._read_bytes(f"featuresets/{name}")))
            for name in self._manifest_names()
        ]

    def get_featureset(self, fs_id: str) -> FeatureSetInfo:
        cached = self._info_cache.get(fs_id)
        now = time.monotonic()
        if cached is not None and now - cached[1] < self.manifest_ttl:
            return cached[2]  # on every read: no system call
        self.check_format()
        path = f"{self._fs_dir}/{fs_id}.json"  # a str: no Path parsing
        try:
            st = None if "/" in fs_id else os.stat(path)
        except (OSError, ValueError):  # missing, or a name no file can have
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            self._forget(fs_id)
            raise FeatureSetNotFoundError(f"no feature set {fs_id!r} in {self.path}")
        # manifests are replaced atomically (a new inode), never edited: the stat tells
        # whether the cached parse is still the file's
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if cached is not None and cached[0] == stamp:
            self._info_cache[fs_id] = (stamp, now, cached[2])
            return cached[2]
        self._forget(fs_id)  # replaced: its keys may be others
        info = _info(sidecars.load_manifest(self, fs_id, Path(path).read_bytes()))
        self._info_cache[fs_id] = (stamp, now, info)
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
        """The feature set of a task split made by an encoder (named by its spec or name).

        sha256: only a set whose manifest's source file had this digest (an edited file's old
        features are not its texts'); read: only a set whose source was read this way (a user
        task's format and columns; a registered task's reading is fixed, its sets record none)."""
        sets = self.list_featuresets()
        hits = [
            fs
            for fs in sets
            if fs.task == task
            and fs.split == split
            and encoder in (fs.encoder.get("spec"), fs.encoder.get("name"))
            and (pair_encoding is None or fs.encoder.get("pair_encoding") == pair_encoding)
            and _same_source(fs.manifest.get("source") or {}, sha256, read)
        ]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            have = sorted({f"{fs.encoder.get('spec')}:{fs.task}/{fs.split}" for fs in sets})
            what = "" if sha256 is None else f" from the file with sha256 {sha256[:12]}…"
            raise FeatureSetNotFoundError(
                f"no feature set for encoder {encoder!r}, task {task!r}, split {split!r}{what} "
                f"in {self.path}; it holds: {', '.join(have) or 'nothing'}"
            )
        raise FeatureSetNotFoundError(
            f"{len(hits)} feature sets match encoder {encoder!r}, task {task!r}, split {split!r}: "
            f"{', '.join(fs.id for fs in hits)}; name one with --featureset"
        )

    def featureset_keys(self, fs_id: str) -> list[str]:
        if fs_id not in self._keys_cache:
            info = self.get_featureset(fs_id)
            self._keys_cache[fs_id] = sidecars.load_keys(self, info)  # checked, whole
        return self._keys_cache[fs_id]

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

    # ---------------------------------------------------------------- internals
    def _read_ranges(self, jobs: list[tuple[Segment, int, int, np.ndarray]], layers) -> None:
        """Read each (segment, start, end, out) token range into its out array (`layers` are
        checked against the pool already: the segment's own checks are skipped)."""
        for seg, start, end, out in jobs:
            seg.read_checked(start, end, layers, out)  # (S, Lsel, D)

    def _pool_meta(self, pool_id: str) -> dict[str, Any]:
        if pool_id in self._meta_cache:  # a pool's attributes never change once written
            return self._meta_cache[pool_id]
        try:
            meta = json.loads(self._read_text(f"pools/{pool_id}/zarr.json"))
        except FileNotFoundError:
            raise ExampleNotFoundError(f"no pool {pool_id} in {self.path}") from None
        except ValueError as err:  # not UTF-8 JSON: the file is damaged (no checksum covers it)
            raise StoreCorruptError(f"{self.path}/pools/{pool_id}/zarr.json: {err}") from err
        attrs = meta.get("attributes") if isinstance(meta, dict) else None
        if not (
            isinstance(attrs, dict)
            and attrs.get("dtype") in STORED_DTYPES
            and all(type(attrs.get(k)) is int and attrs[k] > 0 for k in ("num_layers", "dim"))
        ):
            raise StoreCorruptError(
                f"{self.path}/pools/{pool_id}/zarr.json: not a pool's metadata (expected its "
                f"attributes num_layers, dim and dtype, got {str(attrs)[:200]})"
            )
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

    # ------------------------------------------------ where the bytes live: a local directory
    # (cache/bucket.py puts the same names on object storage)
    def has_segment(self, pool_id: str, seg_id: str) -> bool:
        """Whether a segment is committed (a re-run skips it)."""
        return (self.path / "pools" / pool_id / "segments" / seg_id).exists()

    def _create_pool(self, pool_id: str, attrs: dict[str, Any]) -> None:
        """The pool's group with its attributes, unless it exists."""
        meta = self.path / "pools" / pool_id / "zarr.json"
        if not meta.exists():
            import zarr

            zarr.open_group(str(meta.parent), mode="a").attrs.update(attrs)
            (meta.parent / "segments").mkdir(exist_ok=True)

    def _commit_segment(self, pool_id: str, seg_id: str, keys: list[str], parts, dtype, tiles):
        """Write the segment into a temporary directory, fsync it, rename it into place."""
        final = self.path / "pools" / pool_id / "segments" / seg_id
        tmp = final.with_name(f".tmp-{seg_id}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        write_segment(tmp, keys, parts, dtype, tiles)
        fsync_tree(tmp)
        os.rename(tmp, final)
        fsync_dir(final.parent)

    def _read_text(self, rel: str) -> str:
        return (self.path / rel).read_text()  # FileNotFoundError when absent

    def _read_bytes(self, rel: str) -> bytes:
        return (self.path / rel).read_bytes()  # FileNotFoundError when absent

    def _write_bytes(self, rel: str, data: bytes) -> None:
        (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path / rel, data)

    def _manifest_names(self) -> list[str]:
        fs_dir = self.path / "featuresets"
        return sorted(p.name for p in fs_dir.glob("[!.]*.json")) if fs_dir.is_dir() else []

    def _segment_names(self, pool_id: str) -> list[str]:
        seg_dir = self.path / "pools" / pool_id / "segments"
        return sorted(p.name for p in seg_dir.glob("[!.]*")) if seg_dir.is_dir() else []

    # ------------------------------------------------ checking (cache/fsck.py)
    def _pool_names(self) -> list[str]:
        pools = self.path / "pools"
        if not pools.is_dir():
            return []
        return sorted(p.name for p in pools.iterdir() if p.is_dir() and p.name[0] != ".")

    def segments(self) -> list[tuple[str, str]]:
        """(pool id, segment id) of every segment written whole, pool by pool (what fsck
        checks; a writer's unfinished one is not listed)."""
        return [(p, s) for p in self._pool_names() for s in self._committed_segments(p)]

    def _committed_segments(self, pool_id: str) -> list[str]:
        return self._segment_names(pool_id)  # a local segment appears whole (a rename)

    def _segment_problems(self, pool_id: str, seg_id: str) -> list[str]:
        """What differs between a segment's files and its checksums ([] when sound)."""
        return damaged_files(self.path / "pools" / pool_id / "segments" / seg_id)

    def _segment_keys(self, pool_id: str, seg_id: str) -> list[str]:
        """The keys a segment's metadata lists ([] when unreadable: fsck reports why)."""
        try:
            meta = self._read_text(f"pools/{pool_id}/segments/{seg_id}/zarr.json")
            return list(json.loads(meta)["attributes"]["keys"])
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _set_aside(self, pool_id: str, seg_id: str, name: str) -> str:
        """Move a segment to quarantine/NAME; where it went."""
        dst = self.path / "quarantine" / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.path / "pools" / pool_id / "segments" / seg_id, dst)
        return str(dst)

    def _open_segment(self, pool_id: str, seg_id: str) -> Segment | None:
        return Segment(self.path / "pools" / pool_id / "segments" / seg_id)


def _info(manifest: dict[str, Any]) -> FeatureSetInfo:
    return FeatureSetInfo.from_dict(manifest, manifest)


def _same_source(source: dict[str, Any], sha256: str | None, read: str | None) -> bool:
    """Whether a manifest's source is the file asked for, read the way asked for."""
    if sha256 is not None and source.get("sha256") != sha256:
        return False
    return read is None or source.get("read") == read
