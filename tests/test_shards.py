"""The direct shard path (cache/shards.py) against zarr itself: same files, same reads, fallback.

zarr is the brute force here: whatever the direct writer writes, zarr must read bit-identically
(and zarr writing the same data must give the same bytes); whatever the direct reader returns,
zarr's read of the same selection must equal exactly; any layout the direct path does not
write must be read by zarr.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec
from zarr.core.indexing import _morton_order

from snowfire.cache import StoreCorruptError, quant, shards
from snowfire.cache.segment import (
    CHUNK_TOKENS,
    SHARD_TOKENS,
    Segment,
    record_checksums,
    write_segment,
)

L, D = 3, 8  # layers, hidden: small, the layout code does not care


def _parts(lengths, seed=0, layers=L, dim=D):
    rng = np.random.default_rng(seed)
    return [
        (
            rng.normal(size=(n, layers, dim)).astype(np.float32),  # (S, L, D)
            np.arange(n, dtype=np.int32),
            np.zeros(n, np.int8),
            -1,
        )
        for n in lengths
    ]


def _segment(path: Path, lengths, dtype, seed=0, tiles="token") -> tuple[Segment, np.ndarray]:
    """A segment written through write_segment, and its features as zarr would store them
    (int8: the quantised values, cache/quant.py)."""
    parts = _parts(lengths, seed)
    write_segment(path, [f"k{i}" for i in range(len(parts))], parts, dtype, tiles=tiles)
    values = np.concatenate([p[0] for p in parts])  # (N, L, D)
    return Segment(path), quant.quantize(values)[0] if dtype == "int8" else values.astype(dtype)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _bits(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.int8:
        return a
    return a.view(np.uint16 if a.dtype == np.float16 else np.uint32)  # compare -0.0, NaN too


def _shard_file(seg: Segment, k: int = 0) -> Path:
    return seg.path / "features" / "c" / str(k) / "0" / "0"


@pytest.mark.parametrize("grid", [(64, 7, 1), (64, 13, 1), (3, 5, 1), (1, 1, 1), (4, 3, 2)])
def test_morton_order_is_zarrs(grid):
    np.testing.assert_array_equal(shards.morton_order(grid), np.asarray(_morton_order(grid)))


TILE_LAYERS = {"token": L, "layer": 1}  # write_segment's tiles -> layers per inner chunk


@pytest.mark.parametrize("tiles", TILE_LAYERS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("n", [1, 31, 32, 2047, 2048, 2049, 5000])
def test_zarr_reads_what_we_write_and_writes_the_same_bytes(tmp_path, n, dtype, tiles):
    seg, want = _segment(tmp_path / "ours", [n], dtype, tiles=tiles)
    assert seg._shards is not None, "our own layout must take the direct path"
    assert seg._shards.layout.chunk_layers == TILE_LAYERS[tiles]
    # token tiles in order: an example is a slice of the mapped shard, no gather table
    assert seg._shards._shard(0).linear == (tiles == "token")
    got = zarr.open_array(str(tmp_path / "ours" / "features"), mode="r")[:]  # (N, L, D)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    # zarr writing the same array gives the same files (no chunk equals the fill value here)
    shard = min(SHARD_TOKENS, -(-n // CHUNK_TOKENS) * CHUNK_TOKENS)
    theirs = zarr.open_group(str(tmp_path / "theirs"), mode="w-").create_array(
        "features",
        shape=want.shape,
        dtype=dtype,
        chunks=(CHUNK_TOKENS, TILE_LAYERS[tiles], D),
        shards=(shard, L, D),
        compressors=None,
        fill_value=0,
    )
    theirs[:] = want
    assert _files(tmp_path / "ours" / "features") == _files(tmp_path / "theirs" / "features")
    assert len(list((tmp_path / "ours" / "features" / "c").iterdir())) == -(-n // SHARD_TOKENS)


@pytest.mark.parametrize("tiles", TILE_LAYERS)
def test_zero_chunks_are_stored_and_negative_zero_survives(tmp_path, tiles):
    """zarr leaves out chunks equal to the fill value (reading -0.0 back as 0.0); we store them."""
    parts = _parts([70])
    parts[0][0][:32, :] = -0.0  # a whole chunk of negative zeros in either tiling
    parts[0][0][32:64, :] = 0.0
    write_segment(tmp_path / "s", ["k"], parts, "float32", tiles=tiles)
    got = zarr.open_array(str(tmp_path / "s" / "features"), mode="r")[:]
    np.testing.assert_array_equal(_bits(got), _bits(parts[0][0]))
    assert np.signbit(got[:32]).all()
    np.testing.assert_array_equal(
        _bits(Segment(tmp_path / "s").read_range(0, 70, None)), _bits(got)
    )


def test_same_inputs_give_identical_files(tmp_path):
    for name in ("a", "b"):
        write_segment(tmp_path / name, ["x", "y"], _parts([40, 2100], seed=3), "float16")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    """Segments with full, partial and single-chunk shards, every stored dtype, both tilings."""
    root = tmp_path_factory.mktemp("segs")
    return [
        _segment(root / "a", [5, 2100, 1, 2000, 60], "float16", seed=1),
        _segment(root / "b", [33, 7], "float32", seed=2),
        _segment(root / "c", [2050, 9, 130], "int8", seed=3),
        _segment(root / "d", [5, 2100, 1, 2000, 60], "float16", seed=1, tiles="layer"),
        _segment(root / "e", [2050, 9, 130], "int8", seed=3, tiles="layer"),
    ]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_direct_reads_equal_zarr_reads(segments, data):
    seg, _ = data.draw(st.sampled_from(segments))
    n = seg.features.shape[0]
    start = data.draw(st.integers(0, n))
    end = data.draw(st.integers(start, min(n, start + 2 * SHARD_TOKENS + 100)))
    layers = data.draw(
        st.none()
        | st.lists(st.integers(0, L - 1), min_size=1, max_size=5)  # unsorted, repeated
        | st.integers(0, L - 1).flatmap(lambda a: st.just(list(range(a, L))))  # contiguous
    )
    got = seg.read_range(start, end, layers)  # (S, Lsel, D)
    want = seg.features.get_orthogonal_selection(
        (slice(start, end), slice(None) if layers is None else layers, slice(None))
    )
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_read_range_checks_its_arguments(segments):
    seg, _ = segments[1]
    with pytest.raises(ValueError, match=r"token range 30:41 outside 0:40 of .*b"):
        seg.read_range(30, 41, None)
    with pytest.raises(ValueError, match=r"layers \[3\] outside 0\.\.2"):
        seg.read_range(0, 4, [3])


def _zarr_features(path: Path, data: np.ndarray, **how) -> None:
    """Replace a segment's features by the same data written by zarr in another layout."""
    import shutil

    shutil.rmtree(path / "features")
    zarr.open_group(str(path), mode="a").create_array(
        "features", shape=data.shape, dtype=data.dtype, fill_value=0, **how
    )[:] = data


OTHER_LAYOUTS = {
    "zstd": dict(chunks=(32, 1, D), shards=(64, L, D), compressors=ZstdCodec()),
    "index at start": dict(
        chunks=(64, L, D),
        serializer=ShardingCodec(chunk_shape=(32, 1, D), index_location="start"),
        compressors=None,
    ),
    "big-endian chunks": dict(
        chunks=(64, L, D),
        serializer=ShardingCodec(chunk_shape=(32, 1, D), codecs=[BytesCodec(endian="big")]),
        compressors=None,
    ),
    "not sharded": dict(chunks=(32, 1, D), compressors=None),
    "half the dims per chunk": dict(chunks=(32, 1, D // 2), shards=(64, L, D), compressors=None),
    "no shard per layer": dict(chunks=(64, 1, D), shards=(64, 1, D), compressors=None),
}


@pytest.mark.parametrize("how", OTHER_LAYOUTS, ids=list(OTHER_LAYOUTS))
def test_other_layouts_are_read_by_zarr(tmp_path, how):
    _, want = _segment(tmp_path / "s", [50, 90], "float16")
    _zarr_features(tmp_path / "s", want, **OTHER_LAYOUTS[how])
    record_checksums(tmp_path / "s")  # as a writer of that layout records them
    seg = Segment(tmp_path / "s")
    assert seg._shards is None
    np.testing.assert_array_equal(seg.read_range(10, 130, [2, 0]), want[10:130, [2, 0]])
    np.testing.assert_array_equal(seg.read_range(0, 140, None), want)


def test_writer_falls_back_to_zarr_for_a_layout_it_does_not_know(tmp_path, monkeypatch):
    monkeypatch.setattr(shards, "layout", lambda path: None)
    _, want = _segment(tmp_path / "s", [50, 3000], "float16")
    monkeypatch.undo()
    seg = Segment(tmp_path / "s")
    assert seg._shards is not None  # zarr wrote the layout we read directly
    np.testing.assert_array_equal(seg.read_range(0, 3050, [1]), want[:, [1]])


@pytest.mark.parametrize("where", [-1, -5, -40])  # the checksum, the index's last entry, mid
def test_a_flipped_index_byte_is_reported_with_the_file(tmp_path, where):
    seg, _ = _segment(tmp_path / "s", [100], "float16")
    path = _shard_file(seg)
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreCorruptError, match=rf"{path}: shard index checksum mismatch"):
        Segment(tmp_path / "s").read_range(0, 10, None)


@pytest.mark.parametrize("tiles, index", [("token", 4 * 1 * 16 + 4), ("layer", 4 * L * 16 + 4)])
def test_a_truncated_shard_is_reported(tmp_path, tiles, index):
    seg, _ = _segment(tmp_path / "s", [100], "float16", tiles=tiles)  # 4 chunks of 32 tokens
    path = _shard_file(seg)
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(
        StoreCorruptError, match=rf"{path}: 50 bytes, shorter than its {index}-byte"
    ):
        Segment(tmp_path / "s").read_range(0, 10, None)


def test_a_missing_shard_reads_as_fill_value_like_zarr_unless_it_was_recorded(tmp_path):
    """A shard the segment's checksums record and the disk lacks is damage, not fill values
    (found by tests/test_fuzz_fsck.py: the read gave zeros); one never recorded, as zarr
    leaves a shard of fill values unwritten, reads as zarr reads it."""
    import json

    seg, want = _segment(tmp_path / "s", [3000], "float16")
    _shard_file(seg, 1).unlink()
    seg = Segment(tmp_path / "s")
    with pytest.raises(StoreCorruptError, match="features shard c/1/0/0 is missing, though"):
        seg.read_range(2000, 2100, None)
    table = json.loads((tmp_path / "s" / "checksums.json").read_text())
    del table["features/c/1/0/0"]
    (tmp_path / "s" / "checksums.json").write_text(json.dumps(table))
    seg = Segment(tmp_path / "s")
    got = seg.read_range(2000, 2100, None)
    np.testing.assert_array_equal(got, seg.features[2000:2100])
    np.testing.assert_array_equal(got[:48], want[2000:2048])
    assert not got[48:].any()


def test_index_checked_once_per_mapped_shard(tmp_path, monkeypatch):
    seg, _ = _segment(tmp_path / "s", [3000], "float16")
    calls = []
    value = shards.google_crc32c.value
    monkeypatch.setattr(shards.google_crc32c, "value", lambda b: calls.append(1) or value(b))
    for _ in range(3):
        seg.read_range(0, 3000, [0])
        seg.read_range(2040, 2050, None)
    assert len(calls) == 2  # two shards, each checked when first mapped


@pytest.fixture
def three_open_maps():
    shards.set_max_open_shards(3)
    yield
    shards.set_max_open_shards(shards.MAX_OPEN_SHARDS)


def test_open_maps_are_bounded_and_threads_read_the_same(tmp_path, three_open_maps):
    seg, want = _segment(tmp_path / "s", [9000, 500], "float32")  # 5 shards, more than the LRU
    n = len(want)
    rng = np.random.default_rng(0)
    jobs = [(int(s), int(s) + int(rng.integers(1, 3000))) for s in rng.integers(0, n - 3000, 64)]
    errors = []

    def reader(offset: int) -> None:
        try:
            for start, end in jobs[offset:] + jobs[:offset]:
                assert np.array_equal(seg.read_range(start, end, [2, 0]), want[start:end, [2, 0]])
                assert shards._open.cache_info().currsize <= 3
        except Exception as exc:  # surfaced below: a thread's assertion does not fail the test
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(8 * i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert shards._open.cache_info().currsize <= 3


@pytest.mark.parametrize("bad", [np.inf, np.nan, 7e4])
def test_float16_range_checked_per_example(tmp_path, bad):
    parts = _parts([4, 6])
    parts[1][0][5, 2, 1] = bad
    with pytest.raises(OverflowError, match="beyond float16 range"):
        write_segment(tmp_path / "s", ["a", "b"], parts, "float16")


def test_examples_must_agree_on_layers_and_dim(tmp_path):
    parts = _parts([4]) + _parts([6], layers=1)
    with pytest.raises(
        ValueError, match=r"example 1 has features \(6, 1, 8\), expected \(S, 3, 8\)"
    ):
        write_segment(tmp_path / "s", ["a", "b"], parts, "float16")


def _rewrite_index(seg: Segment, edit) -> None:
    """Rewrite shard 0's body and index with `edit(body, index) -> body` (a valid zarr shard
    still: zarr reads the tiles wherever the index puts them), then re-record the checksums."""
    path = _shard_file(seg)
    raw = path.read_bytes()
    chunks = SHARD_TOKENS // CHUNK_TOKENS if seg.features.shape[0] >= SHARD_TOKENS else None
    chunks = chunks or -(-seg.features.shape[0] // CHUNK_TOKENS)
    groups = seg._shards.layout.groups
    size = chunks * groups * 16
    index = np.frombuffer(raw[-size - 4 : -4], "<u8").reshape(chunks, groups, 2).copy()
    body = edit(raw[: -size - 4], index)
    index_bytes = index.tobytes()
    crc = shards.google_crc32c.value(index_bytes).to_bytes(4, "little")
    path.write_bytes(body + index_bytes + crc)
    record_checksums(seg.path)


@pytest.mark.parametrize("tiles", TILE_LAYERS)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_tiles_off_the_row_grid_are_read_tile_by_tile(tmp_path, dtype, tiles):
    seg, want = _segment(tmp_path / "s", [40, 57], dtype, tiles=tiles)

    def shift(body: bytes, index: np.ndarray) -> bytes:
        index[..., 0] += 1  # every tile one byte later: no longer a multiple of the row size
        return b"\0" + body

    _rewrite_index(seg, shift)
    seg = Segment(tmp_path / "s")
    assert seg._shards is not None
    assert seg._shards._shard(0).rows is None  # the tile-by-tile path
    np.testing.assert_array_equal(seg.features[:], want)  # zarr agrees the shard is valid
    for start, end, layers in [(0, 97, None), (5, 70, [2, 0]), (31, 33, [1])]:
        np.testing.assert_array_equal(
            seg.read_range(start, end, layers),
            want[start:end, layers] if layers else want[start:end],
        )


@pytest.mark.parametrize("tiles", TILE_LAYERS)
def test_tiles_not_stored_read_as_fill_value_like_zarr(tmp_path, tiles):
    seg, want = _segment(tmp_path / "s", [40, 57], "float16", tiles=tiles)

    def drop(body: bytes, index: np.ndarray) -> bytes:
        index[1, -1] = shards.EMPTY  # tokens 32:64 of layer 2 (layer tiles) or all layers
        return body

    _rewrite_index(seg, drop)
    seg = Segment(tmp_path / "s")
    shard = seg._shards._shard(0)
    assert shard.rows is not None and not shard.complete and not shard.linear
    for layers in ([2, 1], None, [2]):
        got = seg.read_range(20, 90, layers)
        np.testing.assert_array_equal(
            got,
            seg.features.get_orthogonal_selection(
                (slice(20, 90), slice(None) if layers is None else layers, slice(None))
            ),
        )
    got = seg.read_range(20, 90, [2, 1])
    assert not got[12:44, 0].any() and got[:12, 0].any() and got[44:, 0].any()
    if tiles == "layer":
        np.testing.assert_array_equal(got[:, 1], want[20:90, 1])
    else:
        assert not got[12:44, 1].any()
        np.testing.assert_array_equal(got[:12, 1], want[20:32, 1])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 2 * SHARD_TOKENS + 70),
    layers=st.integers(1, 4),
    dim=st.sampled_from([1, 3, 8]),
    dtype=st.sampled_from(["float16", "float32", "int8"]),
    token_tiles=st.booleans(),
    data=st.data(),
)
def test_what_zarr_writes_in_our_layout_we_read(
    tmp_path_factory, n, layers, dim, dtype, token_tiles, data
):
    """The other way round: zarr writes an array of random shape and dtype in a layout the
    direct path knows (either tiling); ShardReader reads random token ranges and layer subsets
    of it. zarr leaves out all-zero chunks, which the reader must fill in."""
    rng = np.random.default_rng(n * 31 + layers)
    if dtype == "int8":
        want = rng.integers(-127, 128, size=(n, layers, dim)).astype(np.int8)
    else:
        want = rng.standard_normal((n, layers, dim)).astype(dtype)
    if data.draw(st.booleans()):  # some whole chunks of zeros: zarr does not store them
        want[CHUNK_TOKENS : 3 * CHUNK_TOKENS] = 0
    root = tmp_path_factory.mktemp("zarr-writes")
    shard = min(SHARD_TOKENS, -(-n // CHUNK_TOKENS) * CHUNK_TOKENS)
    arr = zarr.open_group(str(root), mode="w-").create_array(
        "features",
        shape=want.shape,
        dtype=dtype,
        chunks=(CHUNK_TOKENS, layers if token_tiles else 1, dim),
        shards=(shard, layers, dim),
        compressors=None,
        fill_value=0,
    )
    arr[:] = want
    lay = shards.layout(root / "features")
    assert lay is not None, "zarr's own write of our layout must take the direct path"
    reader = shards.ShardReader(root / "features", lay)
    start = data.draw(st.integers(0, n - 1))
    end = data.draw(st.integers(start, n))
    sel = data.draw(st.none() | st.lists(st.integers(0, layers - 1), min_size=1, max_size=4))
    got = reader.read(start, end, sel)
    np.testing.assert_array_equal(
        _bits(got), _bits(want[start:end] if sel is None else want[start:end, sel])
    )
