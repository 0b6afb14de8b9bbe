"""The layer sweep's content key (compare/layers/key.py): each part of it, changed alone,
changes the key; where the answer is written, shown or computed, and how the features were
named, do not. Nothing is trained: the key reads manifests and hashes the task's files."""

from __future__ import annotations

import dataclasses

import pytest

from snowfire.compare import LayersConfig, layers_key
from snowfire.compare.layers.config import INPUTS
from snowfire.options import volatile_fields
from tests.helpers.layers import planted

SIZES = (("train", 40), ("dev", 20))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("key")
    spec, store = planted(root, 1, SIZES)
    cfg = LayersConfig(store=str(store), encoder="planted", task_spec=str(spec), progress=False)
    return root, spec, store, cfg


#: A different value of each field that changes the answer.
CHANGED = {
    "seeds": 2,
    "epochs": 5,
    "patience": 1,
    "check_every": 7,
    "batch_size": 8,
    "lr": 0.5,
    "hidden": 3,
    "control": False,
    "selection": "dev",
    "max_train_examples": 10,
}


def test_every_field_that_changes_the_answer_is_listed_here(made):
    *_, cfg = made
    assert set(cfg.answer_fields()) == set(CHANGED)
    named = set(INPUTS) | volatile_fields(LayersConfig)
    assert set(CHANGED) | named == {f.name for f in dataclasses.fields(LayersConfig)}


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_each_answer_field_changes_the_key(made, field):
    *_, cfg = made
    assert layers_key(dataclasses.replace(cfg, **{field: CHANGED[field]})) != layers_key(cfg)


@pytest.mark.parametrize(
    "field, value",
    [("out", "elsewhere"), ("progress", True), ("device", "cpu"), ("max_memory_gb", 0.5)],
)
def test_where_it_is_written_shown_or_run_does_not(made, field, value):
    *_, cfg = made
    assert layers_key(dataclasses.replace(cfg, **{field: value})) == layers_key(cfg)


def test_the_features_change_the_key_and_their_naming_does_not(made, tmp_path):
    root, spec, store, cfg = made
    key = layers_key(cfg)
    moved = tmp_path / "moved"
    import shutil

    shutil.copytree(store, moved)  # the same store elsewhere: the same sets
    assert layers_key(dataclasses.replace(cfg, store=str(moved))) == key
    train_id = [fs for fs in _sets(store) if fs.split == "train"][0].id
    by_id = dataclasses.replace(cfg, encoder=None, featureset=train_id)
    assert layers_key(by_id) == key
    # the same files, features of another encoder of the same name (another revision): the
    # sets' ids hash the encoder's identity, so the key changes with the features
    revised = {"name": "planted", "spec": "planted", "revision": "2"}
    other_spec, other = planted(tmp_path / "other", 1, SIZES, identity=revised)
    assert other_spec.read_bytes() == spec.read_bytes()
    same = (other_spec.parent / "train.csv").read_bytes()
    assert same == (spec.parent / "train.csv").read_bytes()
    assert layers_key(dataclasses.replace(cfg, store=str(other))) != key


def test_the_task_files_and_the_version_change_the_key(made, tmp_path, monkeypatch):
    root, spec, store, cfg = made
    key = layers_key(cfg)
    monkeypatch.setattr("snowfire.compare.layers.key.LAYERS_VERSION", 2)
    assert layers_key(cfg) != key
    monkeypatch.undo()
    again_spec, again_store = planted(tmp_path, 1, SIZES, seed=3)  # other texts and labels
    again = dataclasses.replace(cfg, store=str(again_store), task_spec=str(again_spec))
    assert layers_key(again) != key


def _sets(store):
    from snowfire.cache import open_reader

    return open_reader(str(store)).list_featuresets()
