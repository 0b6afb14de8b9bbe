"""A feature set's own files (manifest, its copy, keys, texts) under the checksums recorded when
they are written (cache/sidecars.py), in a directory and on object storage (moto's S3): one
flipped bit or a truncation is named by `snowfire fsck` with what was recorded and what was
found, fails the read that needs the file with StoreCorruptError naming it, and `fsck --repair`
rebuilds the file from the others (or from the set's source file), so the store reads as
before, byte for byte. Sets written before these checksums read as before, are reported as not
covered, and `--repair` adds the checksums."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from snowfire.cache import StoreCorruptError, open_store
from snowfire.cache.fsck import check
from snowfire.cache.sidecars import COPY, FILES, KEYS, MANIFEST, TEXTS, check_set
from snowfire.cli.main import main as snowfire

SUFFIXES = (MANIFEST, COPY, KEYS, TEXTS)


def _flip(data: bytes, at: int, bit: int = 0x40) -> bytes:
    out = bytearray(data)
    out[at] ^= bit
    return bytes(out)


def _extract(tiny_bert_dir, root: Path, store: str) -> None:
    """`snowfire extract --input FILE.jsonl` (the set records its source file) into `store`:
    sentences and pairs, one word not ASCII."""
    lines = [
        {"text_a": f"a man plays {'guitar ' * (i % 4)}{i}", "text_b": "the café is open"}
        if i % 3 == 0
        else {"text": f"the dog runs {'in the park ' * (i % 3)}{i}"}
        for i in range(30)
    ]
    source = root / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = [
        "extract",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--input",
        str(source),
        "--store",
        store,
        "--segment-tokens",
        "150",
        "--quiet",
    ]
    assert snowfire(argv) == 0


class Files:
    """A store's files, a directory's or a bucket's, through its backend: get, put, delete,
    the feature sets'."""

    def __init__(self, location):
        self.backend = open_store(location).backend

    def get(self, rel: str) -> bytes:
        return self.backend.get(rel)

    def put(self, rel: str, data: bytes) -> None:
        self.backend.put(rel, data)

    def delete(self, rel: str) -> None:
        self.backend.delete(rel)

    def featuresets(self) -> dict[str, bytes]:
        """{name: bytes} of every file under featuresets/."""
        return {name: self.get(name) for name in self.backend.list("featuresets")}


@pytest.fixture(scope="module")
def pristine(tiny_bert_dir, tmp_path_factory) -> Path:
    """A local store, kept unchanged: each test damages a copy."""
    root = tmp_path_factory.mktemp("pristine")
    _extract(tiny_bert_dir, root, str(root / "store"))
    return root / "store"


@pytest.fixture
def store(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "store")
    return tmp_path / "store"


@pytest.fixture(scope="module")
def bucket_pristine(tiny_bert_dir, local_s3, tmp_path_factory) -> str:
    """The same extraction into a bucket."""
    url = local_s3()
    _extract(tiny_bert_dir, tmp_path_factory.mktemp("bucket"), url)
    return url


@pytest.fixture(params=["local", "bucket"])
def where(request):
    """A store to damage: a copy of the local one, or the bucket (its feature-set objects put
    back as they were after the test)."""
    if request.param == "local":
        yield request.getfixturevalue("store")
        return
    url = request.getfixturevalue("bucket_pristine")
    files = Files(url)
    saved = files.featuresets()
    yield url
    for name in set(files.featuresets()) - set(saved):
        files.delete(name)
    for name, data in saved.items():
        files.put(name, data)


def _reads(location) -> dict:
    """Everything a reader gets of the store's one feature set."""
    s = open_store(location)
    (info,) = s.list_featuresets()
    batch = s.read(info.id, indices=list(range(info.num_examples)))
    return {
        "info": (info, info.manifest),
        "keys": s.featureset_keys(info.id),
        "texts": s.featureset_texts(info.id),
        "features": batch.features.tobytes(),
        "offsets": batch.offsets.tobytes(),
        "word_ids": batch.word_ids.tobytes(),
        "keys_read": batch.keys,
    }


def _read_needing(location, fs_id: str, suffix: str) -> None:
    """The read that needs the file: its manifest for any read (`read` starts there), its
    keys for a read by index, its texts for the texts."""
    s = open_store(location)
    if suffix == TEXTS:
        s.featureset_texts(fs_id)
    elif suffix == KEYS:
        s.featureset_keys(fs_id)
    else:
        s.get_featureset(fs_id)


def _only_id(files: Files) -> str:
    (name,) = (n for n in files.featuresets() if n.endswith(".json"))
    return name.removeprefix("featuresets/").removesuffix(".json")


def test_a_set_records_its_files_checksums_and_its_own(pristine):
    files = Files(pristine)
    fs_id = _only_id(files)
    assert sorted(files.featuresets()) == sorted(f"featuresets/{fs_id}{x}" for x in SUFFIXES)
    data = files.get(f"featuresets/{fs_id}.json")
    content = json.loads(data)
    import google_crc32c  # an independent crc32c of the bytes on disk

    for suffix in (KEYS, TEXTS):
        sidecar = files.get(f"featuresets/{fs_id}{suffix}")
        assert content[FILES][suffix] == [f"{google_crc32c.value(sidecar):08x}", len(sidecar)]
    own = content["manifest_crc32c"]
    assert data.count(own.encode()) == 1
    assert f"{google_crc32c.value(data.replace(own.encode(), b'00000000')):08x}" == own
    assert files.get(f"featuresets/{fs_id}{COPY}") == data
    assert content["source"]["kind"] == "file" and content["source"]["sha256"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_flipped_byte_of_each_file_is_named_by_the_check_and_fails_its_read(store, suffix):
    """One bit flipped at every byte of the file in turn (bit i % 8 at byte i), and 16
    truncations: the check names that file and only it, and the read needing it fails naming
    it (no read needs the copy: it reads as sound, the manifest's bytes being whole)."""
    fs_id = _only_id(Files(store))
    path = store / "featuresets" / f"{fs_id}{suffix}"
    good = path.read_bytes()
    damaged = [_flip(good, at, 1 << (at % 8)) for at in range(len(good))]
    damaged += [good[: len(good) * k // 16] for k in range(16)]
    for bad in damaged:
        path.write_bytes(bad)
        found = check_set(open_store(store), fs_id)
        assert list(found.problems) == [f"featuresets/{fs_id}{suffix}"], (bad, found.problems)
        if suffix == COPY:
            for needs in (MANIFEST, KEYS, TEXTS):
                _read_needing(store, fs_id, needs)
            continue
        with pytest.raises(StoreCorruptError, match=rf"{store}/featuresets/{fs_id}\{suffix}: "):
            _read_needing(store, fs_id, suffix)
    path.write_bytes(good)
    assert not check_set(open_store(store), fs_id).problems


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_fsck_names_the_file_and_repair_restores_the_reads(where, suffix, damage, capsys):
    """In a directory and in a bucket: a bit flipped in the middle of the file, or the file cut
    to half its length."""
    store = where
    files = Files(store)
    saved = files.featuresets()
    before = _reads(store)
    fs_id = before["info"][0].id
    name = f"featuresets/{fs_id}{suffix}"
    good = files.get(name)
    files.put(name, _flip(good, len(good) // 2) if damage == "flip" else good[: len(good) // 2])
    if suffix != COPY:
        with pytest.raises(StoreCorruptError, match=rf"/{name}: "):
            _reads(store)
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert out.count("DAMAGED") == 1
    if suffix in (MANIFEST, COPY):  # its own crc32c, over its bytes with that blanked
        size = len(good) if damage == "flip" else len(good) // 2
        recorded = json.loads(good)["manifest_crc32c"]
        whole = f"{name}: crc32c " in out and f", recorded {recorded} ({size} bytes)" in out
        cut = f"{name}: not whole JSON (" in out and f"; {size} bytes)" in out  # its record cut
        assert f"DAMAGED feature set {fs_id}: {name}: " in out and (whole or cut)
    elif damage == "truncate":
        assert f"DAMAGED feature set {fs_id}: {name}: {len(good) // 2} bytes, recorded " in out
    else:
        assert f"DAMAGED feature set {fs_id}: {name}: crc32c " in out and ", recorded " in out
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    out = capsys.readouterr().out
    said = {
        MANIFEST: f"{name}: restored from its copy",
        COPY: f"{name}: restored from the manifest",
        KEYS: f"{name}: rebuilt from its texts",
        TEXTS: f"{name}: rebuilt from its source",
    }
    assert said[suffix] in out and "re-extracted" not in out  # no encoder needed
    assert out.strip().endswith("all sound")
    assert _reads(store) == before
    assert files.featuresets() == saved  # the files themselves, byte for byte


def test_keys_and_texts_both_damaged_come_back_from_the_source(where, capsys):
    store = where
    files = Files(store)
    before, saved = _reads(store), files.featuresets()
    fs_id = before["info"][0].id
    for suffix in (KEYS, TEXTS):
        name = f"featuresets/{fs_id}{suffix}"
        files.put(name, _flip(files.get(name), 7))
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"featuresets/{fs_id}.texts.jsonl: rebuilt from its source" in out
    assert f"featuresets/{fs_id}.keys: rebuilt from its texts" in out
    assert _reads(store) == before and files.featuresets() == saved


def test_texts_whose_source_changed_are_not_rebuilt_and_fsck_says_why(store, capsys):
    files = Files(store)
    fs_id = _only_id(files)
    source = Path(json.loads(files.get(f"featuresets/{fs_id}.json"))["source"]["path"])
    saved = source.read_bytes()
    name = f"featuresets/{fs_id}{TEXTS}"
    files.put(name, _flip(files.get(name), 11))
    try:
        source.write_bytes(saved + b"one more line\n")
        assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 1
    finally:
        source.write_bytes(saved)
    out = capsys.readouterr().out
    assert f"{name}: cannot rebuild from its source: {source} has sha256 " in out
    assert ": it changed since the extraction" in out
    assert f"STILL DAMAGED feature set {fs_id}: {name}: crc32c" in out
    assert out.strip().endswith("damage found")


# ------------------------------------------------ sets written before these checksums
def _as_written_before(files: Files) -> str:
    """Turn the store's set into what snowfire wrote before the checksums: its manifest
    without them (rendered as it was then), no copy."""
    fs_id = _only_id(files)
    content = json.loads(files.get(f"featuresets/{fs_id}.json"))
    del content[FILES], content["manifest_crc32c"]
    files.put(f"featuresets/{fs_id}.json", json.dumps(content, indent=2, sort_keys=True).encode())
    files.delete(f"featuresets/{fs_id}{COPY}")
    return fs_id


def test_a_set_written_before_reads_as_before_and_repair_adds_the_checksums(where, capsys):
    store = where
    files = Files(store)
    before, saved = _reads(store), files.featuresets()
    fs_id = _as_written_before(files)
    got = _reads(store)
    assert got.pop("info")[1] == {k: v for k, v in before.pop("info")[1].items() if k != FILES}
    assert got == before  # read as before
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 0  # not damage
    out = capsys.readouterr().out
    assert f"NOTE feature set {fs_id}: not covered by checksums (written before" in out
    assert "its keys match the manifest's keys_sha256 and its texts their keys" in out
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    assert f"feature set {fs_id}: checksums added" in capsys.readouterr().out
    assert files.featuresets() == saved  # as a set written today
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 0
    assert "NOTE" not in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [KEYS, TEXTS])
def test_a_damaged_file_of_a_set_written_before_is_found_by_its_keys_hash(store, suffix, capsys):
    """Without checksums, keys are checked against the manifest's keys_sha256 and texts by
    their example keys: a changed key or word is named, the keys' read fails, and the repair
    rebuilds the file and then adds the checksums."""
    files = Files(store)
    saved = files.featuresets()
    fs_id = _as_written_before(files)
    name = f"featuresets/{fs_id}{suffix}"
    good = files.get(name)
    at = good.index(b"guitar") if suffix == TEXTS else 5
    files.put(name, _flip(good, at, 0x01))  # a key's hex digit, or "guitar" -> "fuitar"
    if suffix == KEYS:
        with pytest.raises(StoreCorruptError, match=rf"{name}: keys_sha256 \w+, recorded \w+"):
            _read_needing(store, fs_id, KEYS)
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert f"DAMAGED feature set {fs_id}: {name}: " in out
    assert f"NOTE feature set {fs_id}: not covered by checksums" in out
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"{name}: rebuilt from its" in out and f"feature set {fs_id}: checksums added" in out
    assert files.featuresets() == saved


# ------------------------------------------------ the write order (crash safety)
def test_files_are_written_texts_keys_copy_manifest(where, monkeypatch):
    """The manifest is the commit, written last (one rename, or one PUT)."""
    store = where
    s = open_store(store)
    (info,) = s.list_featuresets()
    keys, texts = s.featureset_keys(info.id), s.featureset_texts(info.id)
    saved = Files(store).featuresets()
    order = []
    real = s.backend.put
    monkeypatch.setattr(s.backend, "put", lambda rel, data: (order.append(rel), real(rel, data)))
    s.write_featureset(info.manifest, keys, texts)
    assert order == [f"featuresets/{info.id}{x}" for x in (TEXTS, KEYS, COPY, MANIFEST)]
    assert Files(store).featuresets() == saved  # the same bytes again


def test_a_rewrite_killed_before_its_manifest_leaves_the_old_set_sound(store):
    """A rewrite of a set (another manifest) killed after its copy, before its manifest: the
    old manifest still reads, and fsck finds nothing wrong."""
    from snowfire.cache.sidecars import featureset_files

    s = open_store(store)
    (info,) = s.list_featuresets()
    files, _ = featureset_files(
        {**info.manifest, "name": "renamed"},
        s.featureset_keys(info.id),
        s.featureset_texts(info.id),
    )
    for rel, data in files[:-1]:  # all but the manifest
        (store / rel).write_bytes(data)
    assert open_store(store).get_featureset(info.id).manifest["name"] != "renamed"
    report = check(open_store(store))
    assert report.damage == [] and not report.uncovered


def test_a_task_splits_texts_come_back_from_its_data_file(tiny_bert_dir, tmp_path, capsys):
    """The issue's case: the demo SST-2 dev set, a bit flipped in its texts and one in its
    keys; the texts are read again from the split's file under the data directory."""
    from snowfire.tasks import DEMO_DATA_DIR

    store = tmp_path / "store"
    argv = [
        "extract",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task",
        "sst2",
        "--data",
        str(DEMO_DATA_DIR),
        "--split",
        "dev",
        "--store",
        str(store),
        "--quiet",
    ]
    assert snowfire(argv) == 0
    files = Files(store)
    before, saved = _reads(store), files.featuresets()
    fs_id = before["info"][0].id
    assert before["info"][0].manifest["source"]["kind"] == "task"
    for suffix in (TEXTS, KEYS):
        name = f"featuresets/{fs_id}{suffix}"
        files.put(name, _flip(files.get(name), 1000, 0x02))
    with pytest.raises(StoreCorruptError, match=rf"featuresets/{fs_id}\.keys: crc32c"):
        _reads(store)
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert f"featuresets/{fs_id}.texts.jsonl: crc32c" in out
    assert f"featuresets/{fs_id}.keys: crc32c" in out
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    out = capsys.readouterr().out
    dev = DEMO_DATA_DIR.resolve() / "sst2" / "dev.tsv"
    assert f"featuresets/{fs_id}.texts.jsonl: rebuilt from its source {dev}" in out
    assert _reads(store) == before and files.featuresets() == saved


def _user_task(root: Path, fmt: str) -> Path:
    """A pair task of our own (a quoted CSV field holding a comma, a non-ASCII word), as a CSV
    or a saved datasets directory; its spec file."""
    rows = [
        {
            "first": f"a man plays, guitar {i}",
            "second": f"the café is open {i % 3}",
            "same": "yes" if i % 2 else "no",
        }
        for i in range(12)
    ]
    if fmt == "csv":
        lines = ["first,second,same"] + [f'"{r["first"]}",{r["second"]},{r["same"]}' for r in rows]
        (root / "dev.csv").write_text("\n".join(lines) + "\n")
        (root / "train.csv").write_text("\n".join(lines[:7]) + "\n")
        where = "splits: {train: train.csv, dev: dev.csv}\n"
    else:
        import datasets

        splits = {"train": rows[:6], "validation": rows}
        ds = datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in splits.items()})
        ds.save_to_disk(str(root / "saved"))
        where = (
            "splits:\n  train: {path: saved, split: train}\n"
            "  dev: {path: saved, split: validation}\n"
        )
    spec = root / "mine.yaml"
    spec.write_text(
        f"name: mine\nkind: classification\npair: true\nformat: {fmt}\n"
        f"columns: {{text_a: first, text_b: second, label: same}}\n{where}"
    )
    return spec


@pytest.mark.parametrize("fmt", ["csv", "hf-dataset"])
def test_a_user_task_splits_texts_come_back_from_its_file_read_as_its_spec(
    tiny_bert_dir, tmp_path, capsys, fmt
):
    """A user task's split (issue 25) is rebuilt from its own file read the way its feature set
    records (format, columns, pair), even with the spec file gone: a CSV with quoting, and a
    saved datasets directory (whose digest covers its files)."""
    if fmt == "hf-dataset":
        pytest.importorskip("datasets")
    spec = _user_task(tmp_path, fmt)
    store = tmp_path / "store"
    argv = [
        "extract",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task-spec",
        str(spec),
        "--split",
        "dev",
        "--store",
        str(store),
        "--quiet",
    ]
    assert snowfire(argv) == 0
    spec.unlink()
    files = Files(store)
    before, saved = _reads(store), files.featuresets()
    fs_id = before["info"][0].id
    first = {"a": "a man plays, guitar 0".split(), "b": "the café is open 0".split()}
    assert before["texts"][0] == first  # the quoted comma kept, the pair read as pairs
    for suffix in (TEXTS, KEYS):
        name = f"featuresets/{fs_id}{suffix}"
        files.put(name, _flip(files.get(name), 100, 0x02))
    assert snowfire(["fsck", "--store", str(store), "--quiet"]) == 1
    capsys.readouterr()
    assert snowfire(["fsck", "--store", str(store), "--repair", "--quiet"]) == 0
    out = capsys.readouterr().out
    source = before["info"][0].manifest["source"]["path"]
    assert f"featuresets/{fs_id}.texts.jsonl: rebuilt from its source {source}" in out
    assert _reads(store) == before and files.featuresets() == saved
