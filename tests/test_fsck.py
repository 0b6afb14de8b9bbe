"""Checksums recorded at write time: a flipped byte in a shard or a small array fails the read
naming the segment (never wrong numbers); `snowfire fsck` lists it, `--repair` re-extracts."""

from __future__ import annotations

import pytest

from snowfire.cache import Store, StoreCorruptError
from snowfire.cli.main import main as snowfire


def _flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.fixture
def store(tiny_bert_dir, tmp_path):
    texts = tmp_path / "in.txt"
    texts.write_text(
        "".join(f"the man plays {'guitar ' * (i % 7)}in the park {i}\n" for i in range(60))
    )
    path = tmp_path / "store"
    argv = [
        "extract",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--input",
        str(texts),
        "--store",
        str(path),
        "--segment-tokens",
        "200",
        "--quiet",
    ]
    assert snowfire(argv) == 0
    return path


def _read_all(path):
    s = Store(path)
    (info,) = s.list_featuresets()
    return info, s.read(info.id, indices=list(range(info.num_examples)))


def test_a_flipped_shard_byte_fails_the_read_and_repair_restores_it(store, capsys):
    info, before = _read_all(store)
    segments = sorted(p for p in store.glob(f"pools/{info.encoder_id}/segments/[!.]*"))
    assert len(segments) > 1
    shard = segments[1] / "features" / "c" / "0" / "0" / "0"
    _flip(shard, 100)  # inside the features, not the shard index: zarr's own crc misses it
    with pytest.raises(StoreCorruptError, match=rf"segment {segments[1]}: features shard c/0/0/0"):
        _read_all(store)
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert f"DAMAGED pools/{info.encoder_id}/segments/{segments[1].name}" in out
    assert f"(feature sets: {info.id})" in out and "features/c/0/0/0: crc32c" in out
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    assert f"re-extracted 1 feature sets: {info.id}" in capsys.readouterr().out
    assert list((store / "quarantine").iterdir())  # set aside, not deleted
    again, after = _read_all(store)
    assert again.id == info.id
    assert after.features.tobytes() == before.features.tobytes()
    assert (after.offsets == before.offsets).all()
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 0


def test_a_flipped_small_array_fails_when_the_segment_opens(store):
    info, _ = _read_all(store)
    seg = sorted(store.glob(f"pools/{info.encoder_id}/segments/[!.]*"))[0]
    chunk = next((seg / "offsets").rglob("c/*"))
    _flip(chunk, 3)
    with pytest.raises(StoreCorruptError, match=rf"segment {seg} is damaged: offsets/c/0: crc32c"):
        _read_all(store)
