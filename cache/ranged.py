"""A segment read through a storage backend by byte ranges: what a store does when its
objects are not local files it can map (object storage, backend.py's `root` None).

Opening fetches the segment's small arrays and metadata whole (one ranged call for all of
them: their sizes are in its checksums, which the store read to know the segment committed)
and checks them against the checksums; each features shard's index is fetched once (its
crc32c and bounds checked, then cached); a read asks for the token ranges it needs as byte
ranges. `read_spans` gathers the ranges of all the examples of a read by shard, so each shard
is one backend call (merged into as few requests as its layout allows) and the shards of a
read are fetched together. The bytes asked for are exactly those of shards.py's layout, read
in place into the answer's rows.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from .errors import ByteRangeError, StoreCorruptError
from .segment import Segment, crc32c, mismatch
from .shards import EMPTY, Layout, _columns, index_size, layout_of, read_index, shard_spans

#: A features shard's object, relative to its segment ("features/c/K/0/0").
SHARDS = "features/c/"


def open_segment(backend, prefix: str, table: dict[str, list]) -> Segment:
    """The committed segment under `prefix` (its CHECKSUMS `table`), its small arrays fetched
    and checked; StoreCorruptError naming each damaged object."""
    import zarr
    from zarr.core.buffer import cpu

    where = f"{backend.location}/{prefix}"
    small = sorted(n for n in table if not n.startswith(SHARDS))
    try:
        got = backend.get_ranges({f"{prefix}/{n}": [(0, table[n][1])] for n in small})
        blobs: dict[str, bytes | None] = {n: bytes(got[f"{prefix}/{n}"][0]) for n in small}
    except (FileNotFoundError, ByteRangeError):  # damaged: each object whole, to name each
        blobs = {n: _get_or_none(backend, f"{prefix}/{n}") for n in small}
    problems = [
        p
        for name, data in blobs.items()
        if (
            p := mismatch(
                name, None if data is None else len(data), lambda d=data: crc32c(d), table[name]
            )
        )
    ]
    if problems:
        raise StoreCorruptError(f"segment {where} is damaged: {'; '.join(problems)}")
    whole = {n: b for n, b in blobs.items() if b is not None}  # none missing: checked above
    lay = layout_of(json.loads(whole["features/zarr.json"]))
    if lay is None:
        raise StoreCorruptError(
            f"segment {where}: its features are not in the layout snowfire writes; "
            "a store on object storage is read only in that layout"
        )
    sizes = {n.removeprefix("features/"): table[n][1] for n in table if n.startswith(SHARDS)}
    memory = zarr.storage.MemoryStore({n: cpu.Buffer.from_bytes(b) for n, b in whole.items()})
    reader = RangeReader(backend, f"{prefix}/features", lay, sizes)
    return Segment.from_parts(where, zarr.open_group(memory, mode="r"), reader)


def read_spans(backend, jobs, layers: list[int] | None) -> None:
    """Each (segment, start, end, out) token range of ranged segments read into its out
    array: every range of one shard in one call, the shards of all the jobs in one
    `get_ranges`."""
    plans: dict[str, list] = {}
    for seg, start, end, out in jobs:
        for key, ranges in seg.shards.plan(start, end, layers, out).items():
            plans.setdefault(key, []).extend(ranges)
    fetch(backend, plans)


class RangeReader:
    """Token ranges of a `features` array on a backend, by byte range (shards.py's layout;
    the same `read` and `views` as shards.ShardReader)."""

    def __init__(self, backend, array_prefix: str, lay: Layout, sizes: dict[str, int]):
        """sizes: each shard object's size ("c/K/0/0" -> bytes) as recorded when written; a
        shard it does not list was never written (all fill value)."""
        self.backend = backend
        self.prefix = array_prefix
        self.layout = lay
        self.sizes = sizes

    def read(
        self, start: int, end: int, layers: list[int] | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        _, num_layers, dim = self.layout.shape
        n_sel = num_layers if layers is None else len(layers)
        if out is None:
            out = np.empty((end - start, n_sel, dim), dtype=self.layout.dtype)  # (S, Lsel, D)
        fetch(self.backend, self.plan(start, end, layers, out))
        return out

    def views(self, start: int, end: int) -> None:
        """None: the bytes are not mapped here (a read copies them)."""
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
        picks = {g: (_columns(tuple(c)), _columns(tuple(w))) for g, (c, w) in groups.items()}
        wanted: dict[str, list] = {}
        for k, a, b, i in shard_spans(start, end, st):  # tokens a:b of shard k: out[i:]
            offsets = _shard_index(self, k)
            ranges = wanted.setdefault(f"{self.prefix}/c/{k}/0/0", [])
            for c in range(a // tc, -(-b // tc)):
                t0, t1 = max(a, c * tc), min(b, (c + 1) * tc)
                rows = out[i + t0 - a : i + t1 - a]  # (t1-t0, Lsel, D)
                for g, (take, place) in picks.items():
                    off = EMPTY if offsets is None else offsets[c][g]
                    if off == EMPTY:
                        rows[:, take] = lay.fill_value
                    else:
                        start_byte = off + (t0 - c * tc) * row
                        ranges.append((start_byte, (t1 - t0) * row, rows, take, place))
        return {key: r for key, r in wanted.items() if r}


def fetch(backend, plans: dict) -> None:
    """Fetch planned ranges (one backend call: each shard's ranges together, the shards
    concurrently where the backend can) and copy each into its rows."""
    if not plans:
        return
    try:
        got = backend.get_ranges({key: [r[:2] for r in ranges] for key, ranges in plans.items()})
    except (FileNotFoundError, ByteRangeError) as err:  # the index promised these bytes
        raise StoreCorruptError(f"a features shard is damaged: {err}") from None
    for key, ranges in plans.items():
        for (_, _, rows, cols, within), data in zip(ranges, got[key], strict=True):
            tile = np.frombuffer(data, rows.dtype).reshape(len(rows), -1, rows.shape[2])
            rows[:, cols] = tile[:, within]  # (n, Lc, D) -> the wanted layers


@functools.lru_cache(maxsize=2048)
def _shard_index(reader: RangeReader, k: int) -> list[list[int]] | None:
    """[chunk][layer group] byte offset of each tile of shard k (EMPTY: not stored), its
    crc32c and bounds checked; None if the shard was never written (all fill value).
    Fetched once: its last `index_size` bytes, where the recorded size puts them."""
    lay = reader.layout
    size = reader.sizes.get(f"c/{k}/0/0")
    if size is None:
        return None
    tail = index_size(lay)
    key = f"{reader.prefix}/c/{k}/0/0"
    where = f"{reader.backend.location}/{key}"
    if size < tail:
        raise StoreCorruptError(f"{where}: {size} bytes, shorter than its {tail}-byte shard index")
    try:
        (raw,) = reader.backend.get_ranges({key: [(size - tail, tail)]})[key]
    except (FileNotFoundError, ByteRangeError) as err:
        raise StoreCorruptError(f"{where}: not the {size} bytes recorded ({err})") from None
    return read_index(bytes(raw), lay, size - tail, where)[..., 0].tolist()


def _get_or_none(backend, key: str) -> bytes | None:
    try:
        return backend.get(key)
    except FileNotFoundError:
        return None
