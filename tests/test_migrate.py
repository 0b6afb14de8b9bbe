"""`snowfire migrate`: a format-1 store (tests/fixtures/store-format1, written by snowfire at the
last format-1 commit with the tests' tiny encoder: tests/fixtures/make_format1_store.py) moved
to this format without re-encoding. The kept set reads the bytes format 1 stored and equals a
fresh extraction (pool, keys, id, features); the set whose encoder is gone is named with why;
a migration killed at any step leaves a store refused with the command's name, and the rerun
ends where an uninterrupted one does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from snowfire.cache import IncompatibleStoreError, Store
from snowfire.cache import check_store as check
from snowfire.cache import migration as files
from snowfire.extractor import ExtractConfig, MigrateConfig, migrate_store, run_extract
from tests.helpers.tiny_bert import build_tiny_bert

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store-format1"
KEPT, GONE = "hf-tiny-tiny-greetings-210e79ef", "hf-other-other-greetings-f8783ef6"
TEXTS = ["the dog plays", "a cat runs in the park", "the dog plays", "good movie"]


@pytest.fixture
def work(tmp_path, tiny_bert_dir, monkeypatch) -> Path:
    """A copy of the fixture, in a directory where its recorded spec hf:tiny is the tests'
    tiny encoder (as where the fixture was made); hf:other is not there."""
    shutil.copytree(FIXTURE, tmp_path / "store")
    (tmp_path / "tiny").symlink_to(tiny_bert_dir)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _format1_features(store: Path, fs_id: str) -> list[np.ndarray]:
    """Each example's features as format 1 stored them, read with zarr alone."""
    import zarr

    manifest = json.loads((store / "featuresets" / f"{fs_id}.json").read_text())
    rows = {}
    for seg in (store / "pools" / manifest["encoder_id"] / "segments").iterdir():
        group = zarr.open_group(str(seg), mode="r")
        offsets, features = group["offsets"][:], group["features"][:]
        for i, key in enumerate(group.attrs["keys"]):
            rows[key] = features[offsets[i] : offsets[i + 1]]  # (S, L, D)
    keys = (store / "featuresets" / f"{fs_id}.keys").read_text().split()
    return [rows[k] for k in keys]


def _examples(batch) -> list[np.ndarray]:
    return [batch.features[batch.offsets[i] : batch.offsets[i + 1]] for i in range(len(batch.keys))]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file's bytes (but the report, which names the store as it was given)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != files.REPORT
    }


def test_a_format1_store_is_refused_naming_migrate(work):
    store = Store(work / "store")
    with pytest.raises(IncompatibleStoreError) as err:
        store.list_featuresets()
    assert f"Run `snowfire migrate --store {store.path}`" in str(err.value)
    assert _tree(work / "store") == _tree(FIXTURE)  # refused, unchanged


def test_migrate_keeps_the_stored_bytes_and_equals_a_fresh_extraction(work, capsys):
    from snowfire.cli.main import main

    before = _format1_features(work / "store", KEPT)
    other = build_tiny_bert(work / "seed2", seed=2)  # looked under first: another encoder
    assert main(["migrate", "--store", "store", "--encoder", f"hf:{other}"]) == 0
    printed = capsys.readouterr().out
    store = Store(work / "store")
    (info,) = store.list_featuresets()
    assert f"migrated {KEPT} -> {info.id} (no re-encoding)" in printed
    assert (
        f"RE-EXTRACT {GONE}: its encoder is not found: hf:{other} is another encoder now "
        "(weights_sha256 recorded" in printed
    )
    assert "; hf:other does not load here (" in printed
    assert "run: snowfire extract --encoder hf:other --input " in printed
    assert "--store store --dtype float32" in printed
    migrated = store.read(info.id, indices=list(range(4)))
    for got, old in zip(_examples(migrated), before, strict=True):
        assert got.dtype == old.dtype == np.float16
        assert np.array_equal(got, old)  # the bytes format 1 stored, nothing re-encoded
    old_texts = (FIXTURE / "featuresets" / f"{KEPT}.texts.jsonl").read_text().splitlines()
    assert store.featureset_texts(info.id) == [json.loads(line) for line in old_texts]

    (work / "greetings.txt").write_text("\n".join(TEXTS) + "\n")
    (fresh,) = run_extract(
        ExtractConfig(
            encoder="hf:tiny",
            input="greetings.txt",
            store=str(work / "fresh"),
            device="cpu",
            name="tiny-greetings",
            progress=False,
        )
    )
    assert (fresh.id, fresh.encoder_id) == (info.id, info.encoder_id)
    assert fresh.encoder == info.encoder  # the identity a fresh extraction records
    assert Store(work / "fresh").featureset_keys(fresh.id) == store.featureset_keys(info.id)
    again = Store(work / "fresh").read(fresh.id, indices=list(range(4)))
    for a, b in zip(_examples(again), _examples(migrated), strict=True):
        assert np.array_equal(a, b)
    manifest = store.get_featureset(info.id).manifest
    assert manifest["migrated"] == {
        "from_format": 1,
        "id": KEPT,
        "encoder_id": json.loads((FIXTURE / "featuresets" / f"{KEPT}.json").read_text())[
            "encoder_id"
        ],
        "precision_assumed": "float32",
    }

    report = check(store)  # every segment and feature-set file under the checksums format 2 records
    assert report.damage == [] and report.uncovered == []
    record = json.loads((work / "store" / "format-1" / "MIGRATION.json").read_text())
    assert record["migrated"] == {KEPT: info.id} and list(record["reextract"]) == [GONE]
    assert (work / "store" / "format-1" / "featuresets" / f"{GONE}.json").exists()  # kept
    assert migrate_store(MigrateConfig(store="store")).already  # a rerun finds nothing to do


def test_the_fixture_is_what_the_old_snowfire_wrote():
    assert json.loads((FIXTURE / "zarr.json").read_text())["attributes"]["version"] == 1
    assert sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file()) < 40_000
    assert not list(FIXTURE.rglob("checksums.json"))  # format 1 recorded none


class Killed(Exception):
    pass


@pytest.mark.parametrize("step", ["set_aside", "segment", "rebuild_pool", "write_set", "commit"])
def test_a_migration_killed_at_any_step_is_refused_and_the_rerun_finishes_it(
    work, tmp_path_factory, tiny_bert_dir, monkeypatch, step
):
    clean = tmp_path_factory.mktemp("clean")
    shutil.copytree(FIXTURE, clean / "store")
    migrate_store(MigrateConfig(store=str(clean / "store")))
    expected = _tree(clean / "store")

    real = getattr(files, step if step != "segment" else "record_checksums")

    def dies(*args, **kw):
        if step in ("set_aside", "commit"):
            if step == "set_aside":  # between its two renames
                root = Path(args[0])
                (root / "format-1").mkdir()
                (root / "pools").rename(root / "format-1" / "pools")
            else:  # the report written, the root not yet
                files.atomic_write(Path(args[0]) / "format-1" / files.REPORT, b"{}")
            raise Killed(f"killed at {step}")
        real(*args, **kw)
        raise Killed(f"killed after {step}")  # after the first one's work

    monkeypatch.setattr(files, step if step != "segment" else "record_checksums", dies)
    with pytest.raises(Killed, match=f"killed (at|after) {step}$"):
        migrate_store(MigrateConfig(store="store"))
    monkeypatch.undo()
    monkeypatch.chdir(work)
    with pytest.raises(IncompatibleStoreError, match="snowfire migrate --store"):
        Store(work / "store").list_featuresets()  # refused, as format 1, until finished
    outcome = migrate_store(MigrateConfig(store="store"))
    assert list(outcome.migrated) == [KEPT]
    assert _tree(work / "store") == expected
    record = json.loads((work / "store" / "format-1" / files.REPORT).read_text())
    assert list(record["migrated"]) == [KEPT] and list(record["reextract"]) == [GONE]


def test_a_set_whose_texts_do_not_give_its_keys_is_named_not_migrated(work):
    texts = work / "store" / "featuresets" / f"{KEPT}.texts.jsonl"
    lines = texts.read_text().splitlines()
    lines[1] = lines[1].replace("cat", "dog")  # the key was made from another text
    texts.write_text("\n".join(lines) + "\n")
    outcome = migrate_store(MigrateConfig(store="store"))
    assert outcome.migrated == {}
    assert outcome.reextract[KEPT]["why"] == "its texts do not give its keys (example 1 first)"
    assert Store(work / "store").list_featuresets() == []  # format 2, nothing served wrongly
