"""Reading and writing a segment's `features` shards directly, without zarr's codec pipeline.

zarr-python (3.1) re-reads and checksums a shard's index on every partial read and decodes
each inner chunk separately; writing runs the same pipeline per chunk. Segments are immutable,
so a shard's index can be checked once and its bytes copied with numpy. The files stay a plain
zarr v3 array: this module relies on exactly the layout below and, for anything else, `layout`
returns None and the caller uses zarr.

The layout (zarr v3 core spec, "sharding_indexed" codec v1.0), for `features` (N, L, D):

    zarr.json   chunk_grid regular, chunk_shape (St, L, D): one shard per St tokens
                chunk_key_encoding default, separator "/": shard k lives in c/k/0/0
                codecs [sharding_indexed {chunk_shape (Tc, Lc, D), Lc = L or 1
                                          codecs [bytes little-endian]      (no compression;
                                                  int8: bytes without an endianness)
                                          index_codecs [bytes little-endian, crc32c]
                                          index_location "end"}]
    c/k/0/0     the stored inner chunks, Tc * Lc * D * itemsize bytes each, back to back; then
                the index, a (St/Tc, L/Lc, 1, 2) uint64 little-endian array in C order giving
                each inner chunk's (offset, nbytes) in the file, (2^64-1, 2^64-1) for a chunk
                not stored; then crc32c (Castagnoli, as google_crc32c, which zarr uses) of the
                index bytes, 4 bytes little-endian.

Two tilings: token-major (Lc = L, what `write_segment` writes now: a tile holds every layer of
Tc tokens, so the shard's body is the (St, L, D) array itself and an example is one contiguous
copy) and layer-major (Lc = 1, what it wrote before: a tile holds one layer, so reading one
layer over a network fetches only that layer's bytes). Both are read directly.

zarr stores inner chunks in Morton (Z) order of their coordinates in the shard's chunk grid
(St/Tc, L/Lc, 1); readers follow the index, so only the writer cares, and it keeps that order
so a shard written here is byte-identical to one written by zarr, except that zarr leaves out
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
from .types import STORED_DTYPES

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
    chunk_layers: int = 1  # Lc: 1 (a tile per layer) or L (a tile holds every layer)

    @property
    def groups(self) -> int:
        """Tiles per Tc tokens: L / Lc."""
        return self.shape[1] // self.chunk_layers

    @property
    def tile_bytes(self) -> int:
        return self.chunk_tokens * self.chunk_layers * self.shape[2] * self.dtype.itemsize


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
            and meta["data_type"] in STORED_DTYPES
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
            and chunk[1] in (1, shape[1])
            and chunk[2] == shape[2]
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
        chunk[1],
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
    st, tc, lc, groups = lay.shard_tokens, lay.chunk_tokens, lay.chunk_layers, lay.groups
    order = morton_order((st // tc, groups, 1))[:, :2]  # (St/Tc * G, 2): (chunk, layer group)
    for k in range(-(-n // st)):
        block = features[k * st : (k + 1) * st]  # (<=St, L, D)
        m = -(-len(block) // tc)  # inner chunks along tokens that hold data
        if len(block) < m * tc:  # the array's last chunk: pad with the fill value
            pad = np.full((m * tc - len(block), num_layers, dim), lay.fill_value, lay.dtype)
            block = np.concatenate([block, pad])  # (m*Tc, L, D)
        stored = order[order[:, 0] < m]  # (m*G, 2) in Morton order
        if groups == 1:  # token-major: the tiles in order are the block itself, no copy
            body = np.ascontiguousarray(block)
        else:
            tiles = block.reshape(m, tc, groups, lc, dim).transpose(0, 2, 1, 3, 4)
            body = tiles[stored[:, 0], stored[:, 1]]  # (m*G, Tc, Lc, D), one copy
        index = np.full((st // tc, groups, 2), EMPTY, dtype="<u8")  # (St/Tc, G, 2)
        index[stored[:, 0], stored[:, 1], 0] = (
            np.arange(len(stored), dtype=np.uint64) * lay.tile_bytes
        )
        index[stored[:, 0], stored[:, 1], 1] = lay.tile_bytes
        index_bytes = index.tobytes()
        path = array_dir / "c" / str(k) / "0" / "0"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.write(body.data)
            f.write(index_bytes)
            f.write(google_crc32c.value(index_bytes).to_bytes(4, "little"))


def shard_spans(start: int, end: int, shard_tokens: int):
    """(k, a, b, i) for each shard that tokens start:end touch: tokens a:b of shard k are
    tokens i:i + b - a of the range."""
    pos = start
    while pos < end:
        k = pos // shard_tokens
        stop = min(end, (k + 1) * shard_tokens)
        yield k, pos - k * shard_tokens, stop - k * shard_tokens, pos - start
        pos = stop


def index_size(lay: Layout) -> int:
    """Bytes of a shard's index and its crc32c, the last bytes of the shard file."""
    return lay.shard_tokens // lay.chunk_tokens * lay.groups * 16 + 4


def read_index(tail: bytes, lay: Layout, body_end: int, where: str) -> np.ndarray:
    """A shard's (St/Tc, G, 2) index of (offset, nbytes) from its last `index_size` bytes,
    its crc32c checked and every stored tile checked to lie in the body (`body_end` bytes)."""
    chunks, groups = lay.shard_tokens // lay.chunk_tokens, lay.groups
    stored = int.from_bytes(tail[-4:], "little")
    computed = google_crc32c.value(tail[:-4])
    if stored != computed:
        raise StoreCorruptError(
            f"{where}: shard index checksum mismatch "
            f"(crc32c stored {stored:08x}, computed {computed:08x})"
        )
    index = np.frombuffer(tail[:-4], "<u8").reshape(chunks, groups, 2)  # (St/Tc, G, 2)
    present = index[..., 0] != EMPTY
    tile = lay.tile_bytes
    if np.any(index[present, 1] != tile) or np.any(index[present, 0] > body_end - tile):
        raise StoreCorruptError(
            f"{where}: shard index names a chunk that is not {tile} bytes inside the file"
        )
    return index


@dataclass(frozen=True)
class _Shard:
    """One mapped shard file: its bytes, and where each tile starts counted in token rows.

    A tile of a stored inner chunk is Tc token rows of Lc * D values, and every tile starts at
    a multiple of the row size, so the file's body is one (R, Lc, D) array of rows and token t
    of layer group g is row first_row[t // Tc, g] + t % Tc. That table, token_rows (St, G), is
    built when the shard is mapped (8 bytes per token and group, under 1% of the shard), so
    reading a token range is one numpy gather through a slice of it. Token-major tiles written
    in order (`linear`) need no table at all: token t is row t, and a range is a slice.
    """

    raw: np.ndarray  # (file bytes,) uint8 over the map
    rows: np.ndarray | None  # (R, Lc, D) the body as rows; None if a tile is not row-aligned
    token_rows: np.ndarray  # (St, G) intp row of each token of each group, < 0 if not stored
    offsets: list[list[int]]  # [chunk][group] byte offset of the tile, EMPTY if not stored
    complete: bool  # every tile stored (no fill-value tiles to patch in)
    linear: bool  # one group, every tile of the array's tokens stored in order: rows[t] = t


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
        for k, a, b, i in shard_spans(start, end, self.layout.shard_tokens):
            dst = out[i : i + b - a]  # (b-a, Lsel, D): tokens a:b of shard k
            shard = self._shard(k)
            if shard is None:
                dst[...] = self.layout.fill_value
            elif shard.linear:  # token-major in order: tokens a:b are rows a:b, a view
                assert shard.rows is not None  # a linear shard is row-aligned
                src = shard.rows[a:b]  # (S', L, D)
                if layers is None:
                    np.copyto(dst, src)
                elif isinstance(cols := _columns(tuple(layers)), slice):
                    np.copyto(dst, src[:, cols])
                else:
                    np.take(src, cols, axis=1, out=dst)
            elif shard.rows is None:
                self._copy_tiles(shard, a, b, layers, dst)
            else:
                self._gather(shard, a, b, layers, dst)
        return out

    def views(self, start: int, end: int) -> list[np.ndarray] | None:
        """Tokens start:end, all layers, as views of the mapped shards ((S', L, D) each, no
        copy), or None where a shard is not token-major in order (read() copies those)."""
        out = []
        for k, a, b, _ in shard_spans(start, end, self.layout.shard_tokens):
            shard = self._shard(k)
            if shard is None or not shard.linear or shard.rows is None:
                return None
            out.append(shard.rows[a:b])
        return out

    def _gather(self, shard: _Shard, a: int, b: int, layers, dst: np.ndarray) -> None:
        """Tokens a:b of a shard by one numpy take through its token_rows table."""
        assert shard.rows is not None  # read() gathers from row-aligned shards only
        rows = shard.token_rows[a:b]  # (S', G), a view
        # rows are checked inside the body when the shard is mapped: clip never clips
        if self.layout.chunk_layers == 1:  # a row per token and layer
            if layers is not None:  # a view for a run of layers, else a gather
                rows = rows[:, _columns(tuple(layers))]
            shard.rows.take(rows, axis=0, out=dst[:, :, None], mode="clip")  # (S', Lsel, 1, D)
            missing = rows < 0  # (S', Lsel)
        else:  # a row per token, all layers
            if layers is None:
                shard.rows.take(rows[:, 0], axis=0, out=dst, mode="clip")
            else:
                dst[...] = shard.rows.take(rows[:, 0], axis=0, mode="clip")[:, layers]
            missing = rows[:, 0] < 0  # (S',)
        if not shard.complete and missing.any():
            dst[missing] = self.layout.fill_value

    def _copy_tiles(self, shard: _Shard, a: int, b: int, layers, dst: np.ndarray) -> None:
        """Tokens a:b of a shard whose tiles are not all row-aligned, tile by tile."""
        lay = self.layout
        tc, lc = lay.chunk_tokens, lay.chunk_layers
        sel = range(lay.shape[1]) if layers is None else layers
        for c in range(a // tc, -(-b // tc)):
            t0, t1 = max(a, c * tc), min(b, (c + 1) * tc)  # tokens of chunk c, in the shard
            for j, layer in enumerate(sel):
                off = shard.offsets[c][layer // lc]
                if off == EMPTY:
                    dst[t0 - a : t1 - a, j] = lay.fill_value
                else:
                    tile = shard.raw[off : off + lay.tile_bytes].view(dst.dtype)
                    tile = tile.reshape(tc, lc, lay.shape[2])  # (Tc, Lc, D)
                    dst[t0 - a : t1 - a, j] = tile[t0 - c * tc : t1 - c * tc, layer % lc]

    def _shard(self, k: int) -> _Shard | None:
        return _open(self, k)

    def _map(self, k: int) -> _Shard | None:
        """Map shard k and check its index (once: the segment is immutable); None if absent."""
        path = self.dir / "c" / str(k) / "0" / "0"
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
            if self.expected is not None and f"c/{k}/0/0" in self.expected:
                raise StoreCorruptError(  # written and recorded, now gone: not fill values
                    f"segment {self.dir.parent}: features shard c/{k}/0/0 is missing, though "
                    "recorded when it was written; run `snowfire fsck --store STORE --repair`"
                ) from None
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
        present = index[..., 0] != EMPTY  # (St/Tc, G)
        offsets = index[..., 0]  # (St/Tc, G) byte offsets
        lay = self.layout
        tc, lc, dim = lay.chunk_tokens, lay.chunk_layers, lay.shape[2]
        row = lc * dim * lay.dtype.itemsize
        aligned = bool(np.all(offsets[present] % row == 0))
        rows = raw[: body_end - body_end % row].view(lay.dtype).reshape(-1, lc, dim)
        first_row = np.full(offsets.shape, -(2**40), dtype=np.intp)  # (St/Tc, G)
        if aligned:
            first_row[present] = (offsets[present] // row).astype(np.intp)
        tokens = np.arange(lay.shard_tokens)
        token_rows = first_row[tokens // tc] + (tokens % tc)[:, None]  # (St, G)
        # the tiles holding the array's tokens in this shard, each stored (first_row >= 0:
        # present and row-aligned) and in order from the start of the body
        held = -(-min(lay.shard_tokens, lay.shape[0] - k * lay.shard_tokens) // tc)
        linear = lay.groups == 1 and np.array_equal(first_row[:held, 0], np.arange(held) * tc)
        return _Shard(
            raw,
            rows if aligned else None,
            token_rows,
            offsets.tolist(),
            bool(present.all()),
            linear,
        )
