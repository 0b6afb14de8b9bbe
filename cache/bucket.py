"""The store on S3-compatible object storage (`s3://bucket/prefix`), through obstore.

The objects carry the names a local store's files have (store.py), so a bucket prefix and a
directory hold the same bytes and zarr opens either. Credentials, region and endpoint come
from the usual environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
AWS_ENDPOINT_URL; AWS_ALLOW_HTTP=true for a plain-http endpoint such as a local MinIO).
Failures that may pass are retried by obstore under the readers' one `RetryPolicy` (retry.py);
a body cut short, or a request that never left (a pooled connection the server had reset),
both of which obstore may report without retrying, is asked for again here (`attempt`).

Atomicity without rename (docs/scale.md): a PUT makes a whole object visible or nothing.
    a segment    its files are put first, its checksums.json last: a segment without one is
                 not committed and readers do not list it; a writer killed mid-segment leaves
                 objects no reader looks at, and the re-run puts the same bytes again
    a feature set  its .texts.jsonl, .keys and .json.copy first, its .json manifest last
                 (sidecars.py: it records their checksums and its own): a reader sees a
                 set only when every segment it lists and its manifest exist
Segments are content-addressed and extraction is deterministic, so two writers of one
segment put identical bytes: no lock is needed, and none is taken.

Reads fetch a segment's small arrays whole (checked against its checksums), each features
shard's index once (cached, its crc32c checked), and the token ranges asked for as byte
ranges: the ranges of all the examples of a read that fall in one shard go in one call, which
obstore turns into as few requests as ranges less than 1 MiB apart allow; shards are fetched
concurrently.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (
    FeatureSetNotFoundError,
    IncompatibleStoreError,
    StoreCorruptError,
    StoreUnreachableError,
)
from .keys import STORE_FORMAT_VERSION
from .retry import RetryPolicy, Tries
from .segment import CHECKSUMS, Segment, crc32c, mismatch, write_segment
from .shards import EMPTY, Layout, _columns, index_size, layout_of, read_index, shard_spans
from .sidecars import load_manifest
from .store import Store, _info
from .types import FeatureSetInfo

SCHEMES = ("s3://",)
#: Concurrent requests of one read (shards) or one upload (files).
CONCURRENCY = 16
#: Ranges of a shard closer than this many bytes are fetched by one request: obstore's
#: default, which the Rust object_store crate tunes for S3 (a request costs far more than 1 MiB
#: of transfer). Measured on moto (benchmarks/object_store.py), 256 random examples: 0.73 s at
#: 1 MiB, 1.6 s at 256 KiB, 4.4 s at 64 KiB, 11.9 s with no merging.
COALESCE = 1 << 20


@contextmanager
def reaching(url: str, what: str) -> Iterator[None]:
    """Turn an object-storage failure (other than a missing object) into a one-line
    StoreUnreachableError naming the store, what was being done and S3's own code."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as err:
        if not _from_obstore(err):
            raise
        raise StoreUnreachableError(
            f"{url}: {what} failed ({_why(err)}); check the bucket and prefix, AWS_ENDPOINT_URL, "
            "AWS_REGION and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
        ) from None


#: How obstore reports a body that ended early (a reset, fewer bytes than Content-Length):
#: object_store retries a request until the answer's head arrives; a body cut after that it
#: resumes itself at times (up to max_retries), and reports otherwise. So a body cut again
#: and again costs up to attempts x attempts requests, within about twice the deadline.
_BODY_CUT = re.compile(r"body error|decoding response body")
#: A request that could not be sent, reported on its first try (object_store names its
#: retries when it made any): hyper cancels a request whose pooled connection the server has
#: just reset, and object_store does not count that error among those it retries.
_NOT_SENT = re.compile(r"error sending request")
_RETRIED = re.compile(r"after \d+ retries")


class _Cut(Exception):
    """An obstore call cut short (the answer's body, or the request before it left): asked
    for again."""


def attempt(store: BucketStore, what: str, call: Callable[[], Any]) -> Any:
    """`call()` (obstore calls) inside `reaching`; when an answer's body was cut short, or
    the request was never sent, and obstore did not retry it, it is called again under the
    store's `RetryPolicy` (the calls here are reads, or PUTs of whole objects: repeating them
    is safe)."""
    tries = Tries(store.retry, f"{store.path}: {what}", StoreUnreachableError)
    while True:
        try:
            with reaching(store.path, what):
                try:
                    return call()
                except Exception as err:
                    if _from_obstore(err) and (what_cut := _cut(str(err))):
                        raise _Cut(f"{what_cut} ({_why(err)})") from None
                    raise
        except _Cut as cut:
            tries.failed(str(cut))


def _cut(text: str) -> str:
    """What was cut short in an obstore error's `text` that asking again may mend, or ''."""
    if _BODY_CUT.search(text):
        return "the body cut short"
    if _NOT_SENT.search(text) and not _RETRIED.search(text):
        return "the request not sent"
    return ""


def _from_obstore(err: BaseException) -> bool:
    return type(err).__module__.split(".")[0] == "obstore"


def _why(err: BaseException) -> str:
    """S3's own code and message when the error holds them, else its first line."""
    text = str(err)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    message = re.search(r"<Message>([^<]+)</Message>", text)
    return f"{code[1]}: {message[1]}" if code and message else text.splitlines()[0][:300]


def is_bucket(location: Any) -> bool:
    return str(location).startswith(SCHEMES)


def connect(url: str, retry: RetryPolicy | None = None):
    """An obstore client for `s3://bucket/prefix`, configured from the environment, retrying
    under `retry` (default: `RetryPolicy.from_env()`) with obstore's own retry loop, which
    tries again after 5xx answers, refused or dropped connections and timeouts."""
    try:
        from obstore.store import from_url
    except ImportError:
        raise RuntimeError(
            f"{url}: a store on object storage needs obstore: pip install -e '.[s3]'"
        ) from None
    policy = RetryPolicy.from_env() if retry is None else retry
    return from_url(url, retry_config=policy.obstore())


class BucketStore(Store):
    """A snowfire store under an S3 prefix: the read and write methods of `Store`."""

    #: seconds a parsed manifest is trusted before it is fetched again
    manifest_ttl = 5.0

    def __init__(self, url: str, client=None, retry: RetryPolicy | None = None):
        super().__init__(url)
        self.path = url.rstrip("/")  # a URL, for messages: not a local path
        self.retry = RetryPolicy.from_env() if retry is None else retry
        self.client = client if client is not None else connect(self.path, self.retry)
        self._threads = ThreadPoolExecutor(CONCURRENCY, thread_name_prefix="snowfire-s3")

    def __repr__(self) -> str:
        return f"BucketStore({self.path!r})"

    # ------------------------------------------------------------------ objects
    def _get(self, rel: str) -> bytes:
        import obstore

        # FileNotFoundError if absent
        return attempt(self, f"reading {rel}", lambda: bytes(obstore.get(self.client, rel).bytes()))

    def _put(self, rel: str, data: bytes) -> None:
        import obstore

        attempt(self, f"writing {rel}", lambda: obstore.put(self.client, rel, data))

    def _read_text(self, rel: str) -> str:
        return self._get(rel).decode()

    def _write_text(self, rel: str, text: str) -> None:
        self._put(rel, text.encode())  # one PUT: the whole object or nothing

    def _read_bytes(self, rel: str) -> bytes:
        return self._get(rel)

    def _write_bytes(self, rel: str, data: bytes) -> None:
        self._put(rel, data)  # one PUT: the whole object or nothing

    def _exists(self, rel: str) -> bool:
        import obstore

        try:
            attempt(self, f"looking up {rel}", lambda: obstore.head(self.client, rel))
        except FileNotFoundError:
            return False
        return True

    def _listing(self, prefix: str | None) -> dict:
        import obstore

        return attempt(
            self,
            f"listing {prefix or 'the prefix'}",
            lambda: obstore.list_with_delimiter(self.client, prefix),
        )

    def _manifest_names(self) -> list[str]:
        names = (o["path"].rsplit("/", 1)[-1] for o in self._listing("featuresets")["objects"])
        return sorted(n for n in names if n.endswith(".json") and not n.startswith("."))

    def _segment_names(self, pool_id: str) -> list[str]:
        found = self._listing(f"pools/{pool_id}/segments")["common_prefixes"]
        return sorted(p.rsplit("/", 1)[-1] for p in found)

    def has_segment(self, pool_id: str, seg_id: str) -> bool:
        return self._exists(f"pools/{pool_id}/segments/{seg_id}/{CHECKSUMS}")

    def _open_segment(self, pool_id: str, seg_id: str) -> Segment | None:
        try:
            return BucketSegment(self, f"pools/{pool_id}/segments/{seg_id}")
        except _NotCommitted:
            return None

    # ------------------------------------------------------------------ checking (fsck)
    def _pool_names(self) -> list[str]:
        return sorted(p.rsplit("/", 1)[-1] for p in self._listing("pools")["common_prefixes"])

    def _committed_segments(self, pool_id: str) -> list[str]:
        """Segments with their checksums object: the others are a writer's, not yet done."""
        return [s for s in self._segment_names(pool_id) if self.has_segment(pool_id, s)]

    def _segment_problems(self, pool_id: str, seg_id: str) -> list[str]:
        """Every object of the segment fetched, its size and crc32c against the checksums."""
        import obstore

        prefix = f"pools/{pool_id}/segments/{seg_id}"
        table = json.loads(self._get(f"{prefix}/{CHECKSUMS}"))
        sizes = attempt(
            self,
            f"listing {prefix}",
            lambda: {
                o["path"][len(prefix) + 1 :]: o["size"]
                for page in obstore.list(self.client, prefix)
                for o in page
            },
        )
        problems = [
            p
            for name in sorted(table)
            if (
                p := mismatch(
                    name,
                    sizes.get(name),
                    lambda n=name: crc32c(self._get(f"{prefix}/{n}")),
                    table[name],
                )
            )
        ]
        return problems + [
            f"{n}: not recorded" for n in sorted(set(sizes) - set(table)) if n != CHECKSUMS
        ]

    def _set_aside(self, pool_id: str, seg_id: str, name: str) -> str:
        """Copy a segment's objects to quarantine/NAME, then delete them, its checksums first
        (so it is uncommitted, never half there); where they went."""
        import obstore

        prefix = f"pools/{pool_id}/segments/{seg_id}"
        with reaching(self.path, f"setting {prefix} aside"):
            names = [o["path"] for page in obstore.list(self.client, prefix) for o in page]
            for path in names:
                obstore.copy(self.client, path, f"quarantine/{name}/{path[len(prefix) + 1 :]}")
            names.sort(key=lambda path: not path.endswith(f"/{CHECKSUMS}"))
            for path in names:
                obstore.delete(self.client, path)
        self._segments.pop((pool_id, seg_id), None)
        return f"{self.path}/quarantine/{name}"

    # ------------------------------------------------------------------ writing
    def ensure(self) -> None:
        try:
            self._read_text("zarr.json")
        except FileNotFoundError:
            listing = self._listing(None)
            if listing["objects"] or listing["common_prefixes"]:
                raise IncompatibleStoreError(
                    f"{self.path} holds objects and is not a store"
                ) from None
            attrs = {"format": "snowfire-store", "version": STORE_FORMAT_VERSION}
            self._write_text("zarr.json", _group_json(attrs))
        self.check_format()

    def _create_pool(self, pool_id: str, attrs: dict[str, Any]) -> None:
        if not self._exists(f"pools/{pool_id}/zarr.json"):
            self._write_text(f"pools/{pool_id}/zarr.json", _group_json(attrs))

    @contextmanager
    def writer(self, pool_id: str) -> Iterator[None]:
        """No lock: two writers of a segment put the same bytes (see the module's notes)."""
        yield

    def _commit_segment(self, pool_id: str, seg_id: str, keys: list[str], parts, dtype, tiles):
        """Write the segment locally, put its files, then its checksums (the commit)."""
        prefix = f"pools/{pool_id}/segments/{seg_id}"
        with tempfile.TemporaryDirectory(prefix="snowfire-seg-") as tmp:
            local = Path(tmp) / seg_id
            write_segment(local, keys, parts, dtype, tiles)
            files = sorted(p for p in local.rglob("*") if p.is_file() and p.name != CHECKSUMS)
            list(
                self._threads.map(
                    lambda p: self._put(f"{prefix}/{p.relative_to(local)}", p.read_bytes()),
                    files,
                )
            )
            self._put(f"{prefix}/{CHECKSUMS}", (local / CHECKSUMS).read_bytes())

    # ------------------------------------------------------------------ reading
    def get_featureset(self, fs_id: str) -> FeatureSetInfo:
        self.check_format()
        cached = self._info_cache.get(fs_id)
        if cached is not None and time.monotonic() - cached[0] < self.manifest_ttl:
            return cached[1]
        if "/" in fs_id or not fs_id:
            raise FeatureSetNotFoundError(f"no feature set {fs_id!r} in {self.path}")
        try:
            data = self._get(f"featuresets/{fs_id}.json")
        except FileNotFoundError:
            self._forget(fs_id)
            raise FeatureSetNotFoundError(f"no feature set {fs_id!r} in {self.path}") from None
        info = _info(load_manifest(self, fs_id, data))  # StoreCorruptError when damaged
        if cached is not None and cached[1].manifest != info.manifest:
            self._forget(fs_id)  # replaced: its keys may be others
        self._info_cache[fs_id] = (time.monotonic(), info)
        return info

    def _read_ranges(self, jobs, layers) -> None:
        """All the examples' ranges of one shard in one get_ranges call, shards concurrently."""
        plans: dict[str, list] = {}
        for seg, start, end, out in jobs:
            for path, ranges in seg._shards.plan(start, end, layers, out).items():
                plans.setdefault(path, []).extend(ranges)
        attempt(self, "reading features", lambda: fetch(self.client, plans, self._threads))


class _NotCommitted(Exception):
    """A segment prefix without its checksums object: a writer has not finished it."""


class BucketSegment(Segment):
    """A committed segment under a bucket prefix: small arrays fetched once, shards by range."""

    def __init__(self, store: BucketStore, prefix: str):
        import zarr
        from zarr.core.buffer import cpu

        self.path = f"{store.path}/{prefix}"
        try:
            table = json.loads(store._get(f"{prefix}/{CHECKSUMS}"))
        except FileNotFoundError:
            raise _NotCommitted(prefix) from None
        small = sorted(n for n in table if not n.startswith("features/c/"))
        fetched = store._threads.map(lambda n: _get_or_none(store, f"{prefix}/{n}"), small)
        blobs = dict(zip(small, fetched, strict=True))
        sizes = {name: None if data is None else len(data) for name, data in blobs.items()}
        problems = [
            p
            for name, data in blobs.items()
            if (p := mismatch(name, sizes[name], lambda d=data: crc32c(d), table[name]))
        ]
        if problems:
            raise StoreCorruptError(f"segment {self.path} is damaged: {'; '.join(problems)}")
        lay = layout_of(json.loads(blobs["features/zarr.json"]))
        if lay is None:
            raise StoreCorruptError(
                f"segment {self.path}: its features are not in the layout snowfire writes; "
                "a store on object storage is read only in that layout"
            )
        memory = zarr.storage.MemoryStore({n: cpu.Buffer.from_bytes(b) for n, b in blobs.items()})
        self._load(zarr.open_group(memory, mode="r"))
        self._shards = RangeShardReader(store, f"{prefix}/features", lay)


class RangeShardReader:
    """Token ranges of a `features` array on object storage, by byte range (shards.py's
    layout; the same `read` as shards.ShardReader)."""

    def __init__(self, store: BucketStore, array_prefix: str, lay: Layout):
        self.store = store
        self.prefix = array_prefix
        self.layout = lay

    def read(
        self, start: int, end: int, layers: list[int] | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        _, num_layers, dim = self.layout.shape
        n_sel = num_layers if layers is None else len(layers)
        if out is None:
            out = np.empty((end - start, n_sel, dim), dtype=self.layout.dtype)
        plans = self.plan(start, end, layers, out)
        attempt(self.store, "reading features", lambda: fetch(self.store.client, plans))
        return out

    def views(self, start: int, end: int) -> None:
        """None: the bytes are in the bucket, not mapped here (a read copies them)."""
        return None

    def plan(self, start: int, end: int, layers: list[int] | None, out: np.ndarray) -> dict:
        """{shard object: [(byte offset, bytes, out view, tile layers)]} to read tokens
        start:end into `out` (tiles not stored are filled in now). A range is some tokens of
        one tile, all its Lc layers; `fetch` copies its `tile layers` into the view."""
        lay = self.layout
        sel = list(range(lay.shape[1])) if layers is None else layers
        st, tc, lc = lay.shard_tokens, lay.chunk_tokens, lay.chunk_layers
        row = lc * lay.shape[2] * lay.dtype.itemsize  # one token of one tile
        # per layer group: (its layers' columns in out, their places in the tile)
        groups: dict[int, tuple[list[int], list[int]]] = {}
        for j, layer in enumerate(sel):
            cols, within = groups.setdefault(layer // lc, ([], []))
            cols.append(j)
            within.append(layer % lc)
        groups = {g: (_columns(tuple(c)), _columns(tuple(w))) for g, (c, w) in groups.items()}
        wanted: dict[str, list] = {}
        for k, a, b, i in shard_spans(start, end, st):  # tokens a:b of shard k: out[i:]
            offsets = _shard_index(self, k)
            ranges = wanted.setdefault(f"{self.prefix}/c/{k}/0/0", [])
            for c in range(a // tc, -(-b // tc)):
                t0, t1 = max(a, c * tc), min(b, (c + 1) * tc)
                rows = out[i + t0 - a : i + t1 - a]  # (t1-t0, Lsel, D)
                for g, (cols, within) in groups.items():
                    off = EMPTY if offsets is None else offsets[c][g]
                    if off == EMPTY:
                        rows[:, cols] = lay.fill_value
                    else:
                        start_byte = off + (t0 - c * tc) * row
                        ranges.append((start_byte, (t1 - t0) * row, rows, cols, within))
        return {path: r for path, r in wanted.items() if r}


def fetch(client, plans: dict, threads: ThreadPoolExecutor | None = None) -> None:
    """Fetch planned ranges, one get_ranges call per shard object (obstore merges ranges less
    than 1 MiB apart into one request), the objects concurrently when `threads` is given."""
    import obstore

    def one(item):
        path, ranges = item
        got = obstore.get_ranges(
            client,
            path,
            starts=[r[0] for r in ranges],
            lengths=[r[1] for r in ranges],
            coalesce=COALESCE,
        )
        for (_, _, rows, cols, within), data in zip(ranges, got, strict=True):
            tile = np.frombuffer(data, rows.dtype).reshape(len(rows), -1, rows.shape[2])
            rows[:, cols] = tile[:, within]  # (n, Lc, D) -> the wanted layers

    items = list(plans.items())
    if threads is None or len(items) < 2:
        for item in items:
            one(item)
    else:
        list(threads.map(one, items))


@functools.lru_cache(maxsize=2048)
def _shard_index(reader: RangeShardReader, k: int) -> list[list[int]] | None:
    """[chunk][layer group] byte offset of each tile of shard k (EMPTY: not stored), its crc32c and
    bounds checked; None if the shard was never written (all fill value). Fetched once."""
    import obstore

    tail = index_size(reader.layout)
    path = f"{reader.prefix}/c/{k}/0/0"

    def get() -> tuple[bytes, dict]:
        got = obstore.get(reader.store.client, path, options={"range": {"suffix": tail}})
        return bytes(got.bytes()), got.meta

    try:
        raw, meta = attempt(reader.store, f"reading the index of {path}", get)
    except FileNotFoundError:
        return None
    total = meta["size"]
    where = f"{reader.store.path}/{path}"
    if len(raw) != tail:
        raise StoreCorruptError(f"{where}: {total} bytes, shorter than its {tail}-byte shard index")
    return read_index(raw, reader.layout, total - tail, where)[..., 0].tolist()


def _get_or_none(store: BucketStore, rel: str) -> bytes | None:
    try:
        return store._get(rel)
    except FileNotFoundError:
        return None


def _group_json(attrs: dict[str, Any]) -> str:
    """A zarr v3 group's zarr.json, as zarr writes it."""
    return json.dumps({"attributes": attrs, "zarr_format": 3, "node_type": "group"}, indent=2)
