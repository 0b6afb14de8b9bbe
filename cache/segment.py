"""One immutable segment of a pool: a zarr v3 group of ragged examples on a flat token axis.

Layout of a segment group (N tokens, n examples, L layers, D dims):
    features     (N, L, D) float16|32, int8   chunks (32, L, D): every layer of 32 tokens per
                                             chunk, so a shard's body is the (St, L, D) array
                                             and an example one contiguous copy; shards
                                             (<=2048, L, D) keep the file count low. Segments
                                             written before (or with tiles="layer") have chunks
                                             (32, 1, D), a layer per chunk; both are read
                                             directly (shards.py)
    offsets      (n + 1,) int64              example i owns tokens offsets[i]:offsets[i+1]
    word_ids     (N,) int32                  word index within its segment, -1 for specials
    type_ids     (N,) int8                   0 first text, 1 second text of a pair
    pair_starts  (n,) int64                  token where text b starts (relative), -1 if none
    scales       (N, L) float32              int8 segments only: each token's scale per layer
                                             (quant.py: features * scales = the values)
    attrs        {"keys": [...], "num_tokens": N}
    checksums.json  crc32c and size of every other file, recorded when the segment is written:
                 the small arrays and metadata are checked when a segment is opened, each
                 features shard file when it is first mapped, all of it by `snowfire fsck`

A segment is written into a temporary directory and renamed into place, so readers see it
whole or not at all. zarr writes the metadata and the small arrays; the `features` shards are
written and read directly (shards.py), still a plain zarr v3 array that any zarr client reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import shards
from .errors import StoreCorruptError
from .written import SegmentArrays, segment_arrays

CHECKSUMS = "checksums.json"

CHUNK_TOKENS = 32
SHARD_TOKENS = 2048
TILES = ("token", "layer")  # a features chunk holds all L layers of its tokens, or one layer
DEFAULT_TILES = "token"


def segment_prefix(pool_id: str, seg_id: str) -> str:
    """Where a segment of a pool lives in a store (its folder, or its objects' prefix)."""
    return f"pools/{pool_id}/segments/{seg_id}"


def check_tiles(tiles: str | None, where: str) -> str:
    """`tiles` (None: DEFAULT_TILES), or ValueError naming `where` and the choices."""
    tiles = tiles or DEFAULT_TILES
    if tiles not in TILES:
        raise ValueError(f"{where}: tiles {tiles!r}, expected one of {TILES}")
    return tiles


def write_segment(
    path: Path,
    keys: list[str],
    parts: list[tuple[np.ndarray, ...]] | SegmentArrays,
    dtype: str,
    tiles: str | None = None,
):
    """Write examples into a new zarr group at `path` (a temporary directory).

    parts[i] = (features (S_i, L, D), word_ids (S_i,), type_ids (S_i,), pair_start int), or
    their arrays already built (written.segment_arrays, in `dtype`).
    tiles: "token" (chunks (32, L, D), DEFAULT_TILES) or "layer" (chunks (32, 1, D), what every
    segment had before token-major tiles: reading one layer from object storage then fetches
    only that layer's bytes).
    """
    tiles = check_tiles(tiles, "write_segment")
    import zarr

    arrays = parts if isinstance(parts, SegmentArrays) else segment_arrays(keys, parts, dtype)
    if len(arrays.pair_starts) != len(keys) or str(arrays.features.dtype) != dtype:
        raise ValueError(
            f"write_segment: arrays of {len(arrays.pair_starts)} {arrays.features.dtype} "
            f"examples for {len(keys)} keys in {dtype}"
        )
    features = arrays.features
    num_tokens, num_layers, dim = features.shape
    shard = min(SHARD_TOKENS, -(-max(num_tokens, 1) // CHUNK_TOKENS) * CHUNK_TOKENS)
    group = zarr.open_group(str(path), mode="w-")
    group.attrs.update({"keys": list(keys), "num_tokens": num_tokens})
    arr = group.create_array(
        "features",
        shape=features.shape,
        dtype=dtype,
        chunks=(CHUNK_TOKENS, num_layers if tiles == "token" else 1, dim),
        shards=(shard, num_layers, dim),
        compressors=None,
        fill_value=0,
    )
    layout = shards.layout(path / "features")
    if layout is not None:
        shards.write(path / "features", layout, features)
    else:  # a zarr whose defaults differ from the layout shards.py writes
        arr[:] = features
    small = arrays.small()
    for name, values in small.items():
        a = group.create_array(
            name,
            shape=values.shape,
            dtype=values.dtype,
            chunks=(max(len(values), 1), *values.shape[1:]),
            fill_value=0,
        )
        a[:] = values
    record_checksums(path)


def file_crc32c(path: Path, block: int = 1 << 22) -> str:
    """crc32c (Castagnoli) of a file's bytes, hex."""
    import google_crc32c

    crc = google_crc32c.Checksum()
    with open(path, "rb") as f:
        while data := f.read(block):
            crc.update(data)
    return crc.digest().hex()


def object_crc32c(backend, key: str, size: int, block: int = 1 << 24) -> str:
    """crc32c of a backend's object of `size` bytes, hex, read `block` bytes at a time (a
    shard may be hundreds of MB)."""
    import google_crc32c

    crc = google_crc32c.Checksum()
    for start in range(0, size, block):
        (data,) = backend.get_ranges({key: [(start, min(block, size - start))]})[key]
        crc.update(bytes(data))
    return crc.digest().hex()


def crc32c(data: bytes) -> str:
    """crc32c of bytes in memory, hex (as file_crc32c gives it)."""
    import google_crc32c

    return f"{google_crc32c.value(data):08x}"


def record_checksums(path: Path) -> None:
    """Write CHECKSUMS: {file relative to the segment: [crc32c hex, size]}."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    table = {str(p.relative_to(path)): [file_crc32c(p), p.stat().st_size] for p in files}
    (path / CHECKSUMS).write_text(json.dumps(table, indent=0, sort_keys=True))


def read_checksums(path: Path) -> dict[str, list]:
    """The CHECKSUMS table of the segment folder `path`."""
    try:
        data = (path / CHECKSUMS).read_bytes()
    except FileNotFoundError:
        raise no_checksums(path) from None
    return parse_checksums(data, path)


def parse_checksums(data: bytes, where) -> dict[str, list]:
    """A CHECKSUMS table from its bytes; StoreCorruptError naming the segment `where`."""
    try:
        table = json.loads(data)
    except ValueError as err:
        raise StoreCorruptError(f"segment {where}: {CHECKSUMS} is unreadable ({err})") from err
    if isinstance(table, dict) and all(
        isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and type(v[1]) is int
        for v in table.values()
    ):
        return table
    raise StoreCorruptError(f"segment {where}: {CHECKSUMS} is not a table of files' [crc32c, size]")


def no_checksums(where) -> StoreCorruptError:
    """What a segment without its CHECKSUMS is (every segment records one when written)."""
    return StoreCorruptError(
        f"segment {where}: no {CHECKSUMS} (every segment records one when written); "
        "run `snowfire fsck --store STORE --repair`"
    )


def mismatch(name: str, size: int | None, crc, recorded: list) -> str | None:
    """Why a segment file differs from its recorded [crc32c hex, size], or None. `size` None:
    the file is missing; `crc()` computes its crc32c (only when the sizes agree)."""
    if size is None:
        return f"{name}: missing"
    if size != recorded[1]:
        return f"{name}: {size} bytes, recorded {recorded[1]}"
    got = crc()
    return None if got == recorded[0] else f"{name}: crc32c {got}, recorded {recorded[0]}"


def damaged_files(
    path: Path, names: list[str] | None = None, table: dict[str, list] | None = None
) -> list[str]:
    """Files of segment `path` (all, or `names`) whose bytes differ from CHECKSUMS (`table`,
    when read already), with why; with all, the files it does not record too."""
    table = read_checksums(path) if table is None else table
    problems = []
    for name in sorted(table if names is None else names):
        f = path / name
        size = f.stat().st_size if f.is_file() else None
        problem = mismatch(name, size, lambda f=f: file_crc32c(f), table[name])
        if problem:
            problems.append(problem)
    if names is None:
        listed = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
        problems += [f"{n}: not recorded" for n in sorted(listed - set(table) - {CHECKSUMS})]
    return problems


def check_objects(backend, prefix: str) -> list[str]:
    """Every object of the segment under `prefix` of a storage backend (backend.py) read, its
    size and crc32c against CHECKSUMS, with why each differs ([] when sound); objects it does
    not record are named too. StoreCorruptError when CHECKSUMS is missing or unreadable (what
    `snowfire fsck` reports)."""
    where = f"{backend.location}/{prefix}"
    try:
        table = parse_checksums(backend.get(f"{prefix}/{CHECKSUMS}"), where)
    except FileNotFoundError:
        raise no_checksums(where) from None
    sizes = {key[len(prefix) + 1 :]: size for key, size in backend.list(prefix).items()}
    problems = [
        problem
        for name in sorted(table)
        if (
            problem := mismatch(
                name,
                sizes.get(name),
                lambda n=name: object_crc32c(backend, f"{prefix}/{n}", sizes[n]),
                table[name],
            )
        )
    ]
    return problems + [f"{n}: not recorded" for n in sorted(set(sizes) - set(table) - {CHECKSUMS})]


def listed_keys(backend, prefix: str) -> list[str]:
    """The keys the metadata of the segment under `prefix` lists ([] when unreadable: fsck
    reports why)."""
    try:
        return list(json.loads(backend.get(f"{prefix}/zarr.json"))["attributes"]["keys"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


class Segment:
    """Read side of one committed segment. The small arrays are loaded once.

    `Segment(path)` opens a segment folder of local files, its features shards mapped
    (shards.py); `Segment.from_parts` one whose arrays were fetched otherwise (ranged.py)."""

    def __init__(self, path: Path, table: dict[str, list] | None = None):
        """table: its CHECKSUMS, when the caller has read them (else they are read here)."""
        import zarr

        self.path: Path | str = path  # a folder, or where the ranges come from (from_parts)
        table = read_checksums(path) if table is None else table
        shard_files = {n for n in table if n.startswith("features/c/")}
        layout = shards.layout(path / "features")
        # the small arrays and metadata now; shard files when first mapped (or all now, when
        # zarr reads a layout shards.py does not)
        small = sorted(set(table) - shard_files) if layout is not None else None
        problems = damaged_files(path, small, table)
        if problems:
            raise StoreCorruptError(
                f"segment {path} is damaged: {'; '.join(problems)}; "
                "run `snowfire fsck --store STORE --repair`"
            )
        self._load(zarr.open_group(str(path), mode="r"))
        # None: a layout we do not write (compressed, index first, ...): zarr reads it
        expected = {n.removeprefix("features/"): table[n][0] for n in shard_files}
        self._shards = (
            None if layout is None else shards.ShardReader(path / "features", layout, expected)
        )

    @classmethod
    def from_parts(cls, where: str, group, shards) -> Segment:
        """A segment of a zarr `group` holding its checked small arrays, its features read
        through `shards` (a reader with shards.ShardReader's `read` and `views`)."""
        seg = cls.__new__(cls)
        seg.path = where
        seg._load(group)
        seg._shards = shards
        return seg

    @property
    def shards(self):
        """What reads its features: shards.ShardReader (mapped files), ranged.RangeReader
        (byte ranges), or None (zarr reads a layout shards.py does not)."""
        return self._shards

    def _load(self, group) -> None:
        """The keys and small arrays of the segment's zarr group."""
        self.keys: list[str] = list(group.attrs["keys"])
        self.features = group["features"]
        self.shape = tuple(self.features.shape)  # (N, L, D)
        self.offsets = group["offsets"][:]  # (n+1,)
        self._bounds = self.offsets.tolist()  # the same as ints: span() is on the read path
        self.word_ids = group["word_ids"][:]  # (N,)
        self.type_ids = group["type_ids"][:]  # (N,)
        self.pair_starts = group["pair_starts"][:]  # (n,)
        self.scales = group["scales"][:] if "scales" in group else None  # (N, L) int8 only

    def span(self, row: int) -> tuple[int, int]:
        return self._bounds[row], self._bounds[row + 1]

    def read_features(self, row: int, layers: list[int] | None) -> np.ndarray:
        """(S, Lsel, D) features of one example."""
        return self.read_range(*self.span(row), layers)

    def read_range(
        self, start: int, end: int, layers: list[int] | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """(end - start, Lsel, D) features of a token range, `layers` in the order given (into
        `out`, C-contiguous and of the segment's dtype, when given)."""
        num_tokens, num_layers, _ = self.shape
        if not 0 <= start <= end <= num_tokens:
            raise ValueError(f"token range {start}:{end} outside 0:{num_tokens} of {self.path}")
        if layers is not None and not all(0 <= layer < num_layers for layer in layers):
            raise ValueError(f"layers {layers} outside 0..{num_layers - 1} of {self.path}")
        return self.read_checked(start, end, layers, out)

    def views(self, start: int, end: int) -> list[np.ndarray] | None:
        """Tokens start:end, all layers, as views of the mapped shard files, or None when
        they are not one slice each (shards.ShardReader.views; zarr reads this layout)."""
        return None if self._shards is None else self._shards.views(start, end)

    def read_checked(
        self, start: int, end: int, layers: list[int] | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """read_range of a range and layers the caller has checked (the store's read path)."""
        if self._shards is not None:
            return self._shards.read(start, end, layers, out)  # (S, Lsel, D)
        if layers is None:
            got = self.features[start:end]  # (S, L, D)
        elif layers == list(range(layers[0], layers[-1] + 1)):
            got = self.features[start:end, layers[0] : layers[-1] + 1]  # contiguous layers
        else:
            got = self.features.get_orthogonal_selection((slice(start, end), layers, slice(None)))
        if out is None:
            return got
        out[...] = got
        return out
