"""What a trainer reads of a task (tasks/training.py, tasks/targets.py) and how a config names
its tasks (tasks/fields.py): one home each, errors with what was expected and what was given.
The two trainers reading through them alike: tests/test_snow_fire_data.py."""

from __future__ import annotations

import dataclasses

import pytest

from snowfire.compare import CompareConfig, analysis_config
from snowfire.extractor import ExtractConfig
from snowfire.finetune import FinetuneConfig
from snowfire.heads import TrainConfig
from snowfire.options import option
from snowfire.tasks import (
    TaskFields,
    TaskListFields,
    get_task,
    label_indices,
    need_splits,
    read_training,
    resolve_tasks,
    task_targets,
)
from tests.helpers.tasks import FILMS_SPEC, write_films, write_sst2


def test_label_indices_are_positions_in_the_labels():
    assert label_indices(["neg", "pos"], ["pos", "neg", "pos"]).tolist() == [1, 0, 1]
    assert label_indices(["0", "1"], [1, 0]).tolist() == [1, 0]  # a label read as a number
    assert label_indices(["O", "B-PER"], []).dtype.name == "int64"
    with pytest.raises(ValueError, match=r"label 'meh': expected one of neg, pos \(the task's"):
        label_indices(["neg", "pos"], ["pos", "meh"])


def _unlabel(tsv) -> None:
    """Rewrite a GLUE SST-2 file without its label column (as GLUE ships its test file)."""
    rows = tsv.read_text().splitlines()[1:]
    tsv.write_text("sentence\n" + "".join(row.split("\t")[0] + "\n" for row in rows))


def test_targets_are_indices_scores_or_tag_arrays(data_dir, tmp_path):
    from snowfire.tasks import read_split

    stsb = read_split("stsb", data_dir, "dev")
    scores = task_targets(get_task("stsb"), stsb)
    assert scores.dtype.name == "float32"
    assert scores.tolist() == pytest.approx([float(e.label) for e in stsb], abs=1e-6)
    write_sst2(tmp_path, sizes=(("test", 4),))
    _unlabel(tmp_path / "sst2" / "test.tsv")
    unlabelled = read_split("sst2", tmp_path, "test")
    assert len(unlabelled) == 4 and task_targets(get_task("sst2"), unlabelled) is None


def test_need_splits_names_each_missing_file(tmp_path):
    write_sst2(tmp_path, sizes=(("train", 4), ("test", 4)))
    with pytest.raises(ValueError) as err:
        need_splits("sst2", tmp_path)
    expected = tmp_path / "sst2" / "dev.tsv"
    assert str(err.value) == f"no dev split of sst2 in {tmp_path} (expected {expected})"
    assert need_splits("sst2", tmp_path, needed=["train"]) == ["train", "test"]
    (tmp_path / "empty" / "sst2").mkdir(parents=True)
    with pytest.raises(ValueError, match=f"no split of sst2 in {tmp_path / 'empty'}$"):
        need_splits("sst2", tmp_path / "empty", needed=[])


def test_read_training_draws_one_subsample_per_seed(data_dir):
    full = read_training("sst2", data_dir, selection="dev")  # the old protocol: nothing carved
    assert full.keep is None and full.trained() == full.examples
    assert list(full.examples) == ["train", "dev"]
    capped = read_training("sst2", data_dir, cap=9, seed=3, selection="dev")
    train = capped.trained()["train"]
    assert [e.index for e in train] == capped.keep == sorted(capped.keep) and len(train) == 9
    assert capped.trained()["dev"] == full.examples["dev"]  # only train is cut
    assert capped.keep == read_training("sst2", data_dir, cap=9, seed=3, selection="dev").keep
    assert capped.keep != read_training("sst2", data_dir, cap=9, seed=4, selection="dev").keep
    everything = len(full.examples["train"])
    assert read_training("sst2", data_dir, cap=everything, seed=3, selection="dev").keep is None


def test_read_training_carves_the_selection_slice_where_no_test_reports(data_dir):
    from snowfire.tasks import SplitRoles

    honest = read_training("sst2", data_dir)  # train and dev only: a slice of train selects
    assert honest.roles == SplitRoles("select", "dev", carved=True)
    train = honest.examples["train"]
    assert sorted(honest.keep + honest.carved) == list(range(len(train)))
    assert honest.carved == read_training("sst2", data_dir, seed=5).carved  # every seed's
    capped = read_training("sst2", data_dir, cap=9, seed=3)
    assert capped.carved == honest.carved and len(capped.keep) == 9
    assert not set(capped.keep) & set(capped.carved)  # what selects never trains
    trained = capped.trained()
    assert [e.index for e in trained["select"]] == honest.carved
    assert [e.index for e in trained["train"]] == capped.keep
    assert trained["dev"] == honest.examples["dev"]  # the report split, whole and unseen


def test_read_training_needs_gold_labels_on_train_and_dev(tmp_path):
    write_sst2(tmp_path, sizes=(("train", 6), ("dev", 4)))
    _unlabel(tmp_path / "sst2" / "dev.tsv")
    with pytest.raises(ValueError, match=r"sst2: the dev split in .* must have a gold label"):
        read_training("sst2", tmp_path)


def test_resolve_tasks_keeps_the_order_and_refuses_clashes(tmp_path):
    write_films(tmp_path)
    specs = resolve_tasks("Cfg", ["stsb", "sst2"], [FILMS_SPEC], str(tmp_path))
    assert list(specs) == ["stsb", "sst2", "films"] and not specs["films"].registered
    for names, refs, data, message in (
        ([], None, None, r"Cfg.tasks: expected at least one task \(or task_spec\)"),
        (["sst2"], None, None, "Cfg.data: the tasks sst2 need their data directory"),
        (["imdb"], None, "d", "Cfg.tasks: unknown task 'imdb'"),
        (
            [],
            [FILMS_SPEC, FILMS_SPEC],
            str(tmp_path),
            r"Cfg.task_spec: expected tasks of distinct names .*, got \['films', 'films'\]",
        ),
        ([], [{**FILMS_SPEC, "kind": "ranking"}], str(tmp_path), "Cfg.task_spec: task spec"),
    ):
        with pytest.raises(ValueError, match=message):
            resolve_tasks("Cfg", names, refs, data)


@dataclasses.dataclass(frozen=True)
class Toy(TaskFields):
    n: int = option(help="a required field of the config's own, after the mixin's")

    def __post_init__(self) -> None:
        self.resolve_spec()


def test_a_config_with_the_task_fields_names_its_field_in_errors(data_dir):
    assert Toy(1, task="sst2", data=str(data_dir)).spec.name == "sst2"  # n stays positional
    with pytest.raises(ValueError, match=r"Toy: give either 'task' .* not neither"):
        Toy(1)
    with pytest.raises(ValueError, match="Toy.data: task 'sst2' needs its data directory"):
        Toy(1, task="sst2")


def test_every_config_shares_the_task_fields_help():
    """One help text per field: each config that names a task has the mixin's fields."""
    one = {f.name: f.metadata["help"] for f in dataclasses.fields(TaskFields)}
    for cls in (ExtractConfig, TrainConfig, FinetuneConfig):
        mine = {f.name: f.metadata["help"] for f in dataclasses.fields(cls) if f.name in one}
        assert mine == one, cls.__name__
    many = {f.name: f.metadata["help"] for f in dataclasses.fields(TaskListFields)}
    for cls in (CompareConfig, analysis_config("pairs")):
        mine = {f.name: f.metadata["help"] for f in dataclasses.fields(cls) if f.name in many}
        assert mine == many, cls.__name__
