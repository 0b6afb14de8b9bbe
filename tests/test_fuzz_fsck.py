"""The store's own files as `snowfire fsck` and a read find them, under generated damage
(hypothesis): any file of a store (the root's and a pool's metadata, a segment's arrays and
checksums, a feature set's manifest, its copy, keys and texts) with bytes changed, cut short,
replaced by other JSON or gone.

The property: the store opens or is refused with StoreError; fsck's check gives a report (or
StoreError naming what it cannot read); every read gives the bytes it gave before the damage or
StoreError (or the KeyError of a set no longer listed): never another exception, never other
numbers. tests/test_featureset_files.py flips every bit of a set's files one by one; this
goes after the rest, in combinations."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snowfire.cache import FeatureSetNotFoundError, Store, StoreError, check_store
from tests.helpers.fuzz import examples
from tests.helpers.service import build_featureset

SETS = {"fs16": "float16", "fs8": "int8"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A store of a float16 and an int8 set, its files, and what every read gives."""
    root = tmp_path_factory.mktemp("pristine") / "store"
    store = Store(root)
    for i, (fs, dtype) in enumerate(SETS.items()):
        build_featureset(store, fs, dtype, seed=i)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    files = [f for f in files if not f.endswith(".lock")]
    reads = {fs: _read(store, fs) for fs in SETS}
    return root, files, reads


def _read(store: Store, fs: str):
    batch = store.read(fs, indices=list(range(store.get_featureset(fs).num_examples)))
    arrays = (batch.features, batch.offsets, batch.word_ids, batch.type_ids, batch.pair_starts)
    return [a.tobytes() for a in arrays], batch.keys, store.featureset_texts(fs)


DAMAGE = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, 10**6)),
    st.tuples(st.just("json"), st.sampled_from(["{}", "[]", "null", '{"id": 1}', "1e400", "{"])),
    st.tuples(st.just("gone")),
)


def _damage(path: Path, how: tuple) -> None:
    data = path.read_bytes()
    if how[0] == "flip" and data:
        at = how[1] % len(data)
        path.write_bytes(data[:at] + bytes([data[at] ^ how[2]]) + data[at + 1 :])
    elif how[0] == "cut":
        path.write_bytes(data[: how[1] % (len(data) + 1)])
    elif how[0] == "json":
        path.write_text(how[1])
    elif how[0] == "gone":
        path.unlink()


@given(data=st.data())
@example(data=None)
@settings(max_examples=examples(60))
def test_any_damage_to_a_stores_files_is_found_or_refused_never_misread(pristine, data):
    root, files, reads = pristine
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(root, copy)
        if data is None:  # the root's own metadata made another JSON value
            damaged = [("zarr.json", ("json", "[]"))]
        else:
            damaged = data.draw(
                st.lists(st.tuples(st.sampled_from(files), DAMAGE), min_size=1, max_size=3)
            )
        for name, how in damaged:
            if (copy / name).exists():
                _damage(copy / name, how)
        try:
            store = Store(copy)
            report = check_store(store)
        except StoreError:
            return  # refused, naming what it could not read
        assert isinstance(report.lines(), list)
        for fs in SETS:
            try:
                got = _read(store, fs)
            except (StoreError, FeatureSetNotFoundError):
                continue
            arrays, keys, texts = got
            assert (arrays, keys) == reads[fs][:2], f"{fs} read other bytes after {damaged}"
            assert texts == reads[fs][2]


def test_a_manifest_replaced_by_other_json_is_refused_and_named(pristine):
    """A manifest that is valid JSON of another shape: the set's read names the file."""
    root, _, _ = pristine
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(root, copy)
        (copy / "featuresets" / "fs16.json").write_text(json.dumps({"id": 1}))
        store = Store(copy)
        with pytest.raises((StoreError, FeatureSetNotFoundError), match="fs16"):
            store.read("fs16", indices=[0])
        assert np.array_equal(
            store.read("fs8", indices=[0]).offsets, np.array([0, 3])
        )  # the other set reads as before
