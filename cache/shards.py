"""Reading and writing a segment's `features` shards directly, without zarr's codec pipeline.

zarr-python (3.1) re-reads and checksums a shard's index on every partial read and decodes
each (Tc, 1, D) inner chunk separately; writing runs the same pipeline per chunk. Segments are
immutable, so a shard's index can be checked once and its tiles copied with numpy. The files
stay a plain zarr v3 array: this module relies on exactly the layout below and, for anything
else, `layout` returns None and the caller uses zarr.

The layout (zarr v3 core spec, "sharding_indexed" codec v1.0), for `features` (N, L, D):

    zarr.json   chunk_grid regular, chunk_shape (St, L, D): one shard per St tokens
                chunk_key_encoding default, separator "/": shard k lives in c/k/0/0
                codecs [sharding_indexed {chunk_shape (Tc, 1, D),
                                          codecs [bytes little-endian]      (no compression;
                                                  int8: bytes without an endianness)
                                          index_codecs [bytes little-endian, crc32c]
                                          index_location "end"}]
    c/k/0/0     the stored inner chunks, Tc * D * itemsize bytes each, back to back; then the
                index, a (St/Tc, L, 1, 2) uint64 little-endian array in C order giving each
                inner chunk's (offset, nbytes) in the file, (2^64-1, 2^64-1) for a chunk not
                stored; then crc32c (Castagnoli, as google_crc32c, which zarr uses) of the index
                bytes, 4 bytes little-endian.

zarr stores inner chunks in Morton (Z) order of their coordinates in the shard's chunk grid
(St/Tc, L, 1); readers follow the index, so only the writer cares, and it keeps that order so
a shard written here is byte-identical to one written by zarr, except that zarr leaves out
chunks equal to the fill value where this writes every chunk (so -0.0 survives). A chunk not
stored reads as the array's fill_value, and so does a whole shard whose file is missing. In the
partial last shard the chunks wholly past N are not stored and the last partial chunk is padded
with the fill value.
"""

from __future__ import annotations

import functools
import json
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

import google_crc32c
import numpy as np

from .errors import StoreCorruptError

EMPTY = 2**64 - 1  # offset and nbytes of an inner chunk that is not stored
_BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}


@dataclass(frozen=True)
class Layout:
    """What `features` must look like for the direct path: shape, dtype, shard and chunk size."""

    shape: tuple[int, int, int]  # (N, L, D)
    dtype: np.dtype
    shard_tokens: int  # St
    chunk_tokens: int  # Tc
    fill_value: float


def layout(array_dir: Path) -> Layout | None:
    """The layout of the zarr array at `array_dir`, or None if it is not exactly ours."""
    try:
        meta = json.loads((array_dir / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    return layout_of(meta)


def layout_of(meta: dict) -> Layout | None:
    """The layout a zarr array's metadata (its zarr.json, parsed) describes, or None if it is
    not exactly ours."""
    try:
        shape = tuple(meta["shape"])
        (codec,) = meta["codecs"]
        cfg = codec["configuration"]
        shard = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
        chunk = tuple(cfg["chunk_shape"])
        ours = (
            meta["zarr_format"] == 3
            and meta["node_type"] == "array"
            and meta["data_type"] in ("float16", "float32", "int8")
            and not meta.get("storage_transformers")
            and meta["chunk_grid"]["name"] == "regular"
            and meta["chunk_key_encoding"]
            == {"name": "default", "configuration": {"separator": "/"}}
            and codec["name"] == "sharding_indexed"
            and cfg["codecs"] in ([_BYTES_LE], [{"name": "bytes"}])  # int8: no endianness
            and cfg["index_codecs"] == [_BYTES_LE, {"name": "crc32c"}]
            and cfg.get("index_location", "end") == "end"
            and len(shape) == len(shard) == len(chunk) == 3
            and shard[1:] == shape[1:]
            and chunk[1:] == (1, shape[2])
            and chunk[0] > 0
            and shard[0] % chunk[0] == 0
            and isinstance(meta["fill_value"], (int, float))
            and not isinstance(meta["fill_value"], bool)
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not ours:
        return None
    return Layout(
        shape,
        np.dtype(meta["data_type"]).newbyteorder("<"),
        shard[0],
        chunk[0],
        float(meta["fill_value"]),
    )


def morton_order(grid: tuple[int, ...]) -> np.ndarray:
    """(n, len(grid)) coordinates of a chunk grid in zarr's Morton order.

    A coordinate's code interleaves its bits, lowest first, dimension by dimension, giving
    dimension d only the (grid[d] - 1).bit_length() bits it needs (zarr.core.indexing).
    """
    coords = np.indices(grid).reshape(len(grid), -1).T  # (n, ndim), C order
    bits = [(g - 1).bit_length() for g in grid]
    code = np.zeros(len(coords), dtype=np.int64)  # (n,)
    out_bit = 0
    for bit in range(max(bits, default=0)):
        for d, nbits in enumerate(bits):
            if bit < nbits:
                code |= ((coords[:, d] >> bit) & 1) << out_bit
                out_bit += 1
    return coords[np.argsort(code, kind="stable")]


def write(array_dir: Path, lay: Layout, features: np.ndarray) -> None:
    """Write (N, L, D) `features` as the shard files of the array at `array_dir`."""
    n, num_layers, dim = lay.shape
    assert features.shape == lay.shape, (features.shape, lay)
    features = np.asarray(features, dtype=lay.dtype)  # little-endian on disk (a no-op on x86)
    st, tc = lay.shard_tokens, lay.chunk_tokens
    tile = tc * dim * lay.dtype.itemsize  # bytes of one inner chunk
    order = morton_order((st // tc, num_layers, 1))[:, :2]  # (St/Tc * L, 2): (chunk, layer)
    for k in range(-(-n // st)):
        block = features[k * st : (k + 1) * st]  # (<=St, L, D)
        m = -(-len(block) // tc)  # inner chunks along tokens that hold data
        if len(block) < m * tc:  # the array's last chunk: pad with the fill value
            pad = np.full((m * tc - len(block), num_layers, dim), lay.fill_value, lay.dtype)
            block = np.concatenate([block, pad])  # (m*Tc, L, D)
        tiles = block.reshape(m, tc, num_layers, dim).transpose(0, 2, 1, 3)  # (m, L, Tc, D)
        stored = order[order[:, 0] < m]  # (m*L, 2) in Morton order
        body = tiles[stored[:, 0], stored[:, 1]]  # (m*L, Tc, D), one copy
        index = np.full((st // tc, num_layers, 2), EMPTY, dtype="<u8")  # (St/Tc, L, 2)
        index[stored[:, 0], stored[:, 1], 0] = np.arange(len(stored), dtype=np.uint64) * tile
        index[stored[:, 0], stored[:, 1], 1] = tile
        index_bytes = index.tobytes()
        path = array_dir / "c" / str(k) / "0" / "0"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.write(body.data)
            f.write(index_bytes)
            f.write(google_crc32c.value(index_bytes).to_bytes(4, "little"))


def index_size(lay: Layout) -> int:
    """Bytes of a shard's index and its crc32c, the last bytes of the shard file."""
    return lay.shard_tokens // lay.chunk_tokens * lay.shape[1] * 16 + 4


def read_index(tail: bytes, lay: Layout, body_end: int, where: str) -> np.ndarray:
    """A shard's (St/Tc, L, 2) index of (offset, nbytes) from its last `index_size` bytes,
    its crc32c checked and every stored tile checked to lie in the body (`body_end` bytes)."""
    chunks, num_layers = lay.shard_tokens // lay.chunk_tokens, lay.shape[1]
    stored = int.from_bytes(tail[-4:], "little")
    computed = google_crc32c.value(tail[:-4])
    if stored != computed:
        raise StoreCorruptError(
            f"{where}: shard index checksum mismatch "
            f"(crc32c stored {stored:08x}, computed {computed:08x})"
        )
    index = np.frombuffer(tail[:-4], "<u8").reshape(chunks, num_layers, 2)  # (St/Tc, L, 2)
    present = index[..., 0] != EMPTY
    tile = lay.chunk_tokens * lay.shape[2] * lay.dtype.itemsize
    if np.any(index[present, 1] != tile) or np.any(index[present, 0] > body_end - tile):
        raise StoreCorruptError(
            f"{where}: shard index names a chunk that is not {tile} bytes inside the file"
        )
    return index


@dataclass(frozen=True)
class _Shard:
    """One mapped shard file: its bytes, and where each tile starts counted in token rows.

    A tile of a stored inner chunk is Tc rows of D values, and every tile starts at a multiple
    of the row size, so the file's body is one (R, D) array of rows and token t of a layer is
    row first_row[t // Tc, layer] + t % Tc. That table, token_rows (St, L), is built when the
    shard is mapped (8 bytes per token and layer, under 1% of the shard), so reading a token
    range is one numpy gather through a slice of it.
    """

    raw: np.ndarray  # (file bytes,) uint8 over the map
    rows: np.ndarray | None  # (R, D) the body as rows; None if a tile is not row-aligned
    token_rows: np.ndarray  # (St, L) intp row of each token of each layer, < 0 if not stored
    offsets: list[list[int]]  # [chunk][layer] byte offset of the tile, EMPTY if not stored
    complete: bool  # every tile stored (no fill-value tiles to patch in)


# Open shard maps, shared by every reader in the process. A map costs no memory beyond the
# page cache, but each holds a file descriptor (Python's mmap keeps a dup) and address space,
# and a pool can hold thousands of shards: an LRU bounds both. os.pread would need no bound
# but one system call and one extra copy per read; a map lets numpy copy the rows straight
# into the output. An evicted map is only dropped, not closed: a reader that took it before
# the eviction still copies from it, and it is unmapped when that reader lets go. The LRU is
# functools.lru_cache (in C, thread-safe, a hit costs about a dict look-up: it is on every
# read); two threads opening the same shard at once may both map and check it, once each.
MAX_OPEN_SHARDS = 256


def _map_shard(reader: ShardReader, k: int) -> _Shard | None:
    return reader._map(k)


_open = functools.lru_cache(maxsize=MAX_OPEN_SHARDS)(_map_shard)  # (reader, shard) -> map


def set_max_open_shards(n: int) -> None:
    """Bound the open shard maps at `n` (the maps open now are dropped)."""
    global _open
    _open = functools.lru_cache(maxsize=n)(_map_shard)


@functools.lru_cache(maxsize=1024)
def _columns(layers: tuple[int, ...]) -> slice | list[int]:
    """The token_rows columns of `layers`: a slice (a view) for a run, else the list."""
    if layers == tuple(range(layers[0], layers[0] + len(layers))):
        return slice(layers[0], layers[-1] + 1)
    return list(layers)


class ShardReader:
    """Token ranges of the `features` array at `array_dir`, read from its shard files."""

    def __init__(self, array_dir: Path, lay: Layout, expected: dict[str, str] | None = None):
        """expected: shard file (relative to `array_dir`, e.g. "c/0/0/0") -> crc32c hex of the
        whole file, checked when the shard is first mapped (the segment's checksums)."""
        self.dir = array_dir
        self.layout = lay
        self.expected = expected

    def read(
        self, start: int, end: int, layers: list[int] | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """(end - start, Lsel, D) features of tokens start:end, `layers` in the order given,
        into `out` (C-contiguous, that shape, the array's dtype) when given."""
        _, num_layers, dim = self.layout.shape
        n_sel = num_layers if layers is None else len(layers)
        if out is None:
            out = np.empty((end - start, n_sel, dim), dtype=self.layout.dtype)  # (S, Lsel, D)
        elif out.shape != (end - start, n_sel, dim) or out.dtype != self.layout.dtype:
            raise ValueError(
                f"out is {out.shape} {out.dtype}, the range needs "
                f"{(end - start, n_sel, dim)} {self.layout.dtype}"
            )
        st = self.layout.shard_tokens
        pos = start
        while pos < end:
            k = pos // st
            stop = min(end, (k + 1) * st)
            dst = out[pos - start : stop - start]  # (stop-pos, Lsel, D)
            shard = self._shard(k)
            if shard is None:
                dst[...] = self.layout.fill_value
            elif shard.rows is None:
                self._copy_tiles(shard, pos - k * st, stop - k * st, layers, dst)
            else:
                rows = shard.token_rows[pos - k * st : stop - k * st]  # (S', L), a view
                if layers is not None:  # a view for a run of layers, else a gather
                    rows = rows[:, _columns(tuple(layers))]
                # rows are checked inside the body when the shard is mapped: clip never clips
                shard.rows.take(rows, axis=0, out=dst, mode="clip")
                if not shard.complete and (rows < 0).any():
                    dst[rows < 0] = self.layout.fill_value
            pos = stop
        return out

    def _copy_tiles(self, shard: _Shard, a: int, b: int, layers, dst: np.ndarray) -> None:
        """Tokens a:b of a shard whose tiles are not all row-aligned, tile by tile."""
        dim, tc = self.layout.shape[2], self.layout.chunk_tokens
        row = dim * dst.itemsize
        sel = range(self.layout.shape[1]) if layers is None else layers
        for c in range(a // tc, -(-b // tc)):
            t0, t1 = max(a, c * tc), min(b, (c + 1) * tc)  # tokens of chunk c, in the shard
            for j, layer in enumerate(sel):
                off = shard.offsets[c][layer]
                if off == EMPTY:
                    dst[t0 - a : t1 - a, j] = self.layout.fill_value
                else:
                    lo = off + (t0 - c * tc) * row
                    src = shard.raw[lo : lo + (t1 - t0) * row]
                    dst[t0 - a : t1 - a, j] = src.view(dst.dtype).reshape(t1 - t0, dim)

    def _shard(self, k: int) -> _Shard | None:
        return _open(self, k)

    def _map(self, k: int) -> _Shard | None:
        """Map shard k and check its index (once: the segment is immutable); None if absent."""
        path = self.dir / "c" / str(k) / "0" / "0"
        dim = self.layout.shape[2]
        tail = index_size(self.layout)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < tail:
                    raise StoreCorruptError(
                        f"{path}: {size} bytes, shorter than its {tail}-byte shard index"
                    )
                raw = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
        except FileNotFoundError:
            return None  # never written: all fill value, as zarr reads it
        body_end = size - tail
        index = read_index(raw[body_end:].tobytes(), self.layout, body_end, str(path))
        if self.expected is not None:
            name = f"c/{k}/0/0"
            crc = google_crc32c.Checksum()
            for i in range(0, size, 1 << 22):
                crc.update(raw[i : i + (1 << 22)].tobytes())
            if crc.digest().hex() != self.expected.get(name):
                raise StoreCorruptError(
                    f"segment {self.dir.parent}: features shard {name} does not match the "
                    f"checksum recorded when it was written (crc32c {crc.digest().hex()}, "
                    f"recorded {self.expected.get(name)}); run `snowfire fsck --store STORE "
                    "--repair`"
                )
        present = index[..., 0] != EMPTY
        offsets = index[..., 0]  # (St/Tc, L) byte offsets
        row = dim * self.layout.dtype.itemsize
        aligned = bool(np.all(offsets[present] % row == 0))
        rows = raw[: body_end - body_end % row].view(self.layout.dtype).reshape(-1, dim)
        first_row = np.full(offsets.shape, -(2**40), dtype=np.intp)  # (St/Tc, L)
        if aligned:
            first_row[present] = (offsets[present] // row).astype(np.intp)
        tokens = np.arange(self.layout.shard_tokens)
        tc = self.layout.chunk_tokens
        token_rows = first_row[tokens // tc] + (tokens % tc)[:, None]  # (St, L)
        return _Shard(
            raw,
            rows if aligned else None,
            token_rows,
            offsets.tolist(),
            bool(present.all()),
        )
