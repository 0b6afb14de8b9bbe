"""compare's typed records keep the JSON compare wrote when they were dicts: a `Cell` reads
back the "cells" of a results.json written before (and writes the same bytes), a budget
records the same caps, and the modes are the arms plus their first stages."""

from __future__ import annotations

import json

import pytest

from snowfire.compare import BUDGETS, Caps, Cell, Mode
from snowfire.compare.arms import ARMS

# Cells as a finished results.json holds them (written by compare before Cell existed).
OLD_CELLS = [
    {
        "mode": "intermediate",
        "task": "mnli",
        "head": None,
        "seed": 0,
        "run": "o/intermediate/mnli/seed0",
        "metrics": {"dev": {"accuracy": 0.6}},
    },
    {
        "mode": "snow",
        "task": "stsb",
        "head": "esim",
        "seed": 1,
        "run": "o/snow/stsb/esim/seed1",
        "metrics": {"dev": {"pearson": 0.8}, "test": {"pearson": 0.7}},
    },
    {
        "mode": "probe",
        "task": "stsb",
        "head": "probe",
        "seed": 0,
        "run": "o/snow/stsb/probe-cls/seed0",
        "metrics": {"dev": {"pearson": 0.5}},
    },
    {
        "mode": "lora",
        "task": "stsb",
        "head": None,
        "seed": 0,
        "run": "o/lora/stsb/seed0",
        "metrics": {"dev": {"pearson": 0.85}},
    },
]
# The budgets as results.json recorded them when they were dicts.
OLD_BUDGETS = {
    "quick": {
        "snow": {"epochs": 3, "patience": 2, "max_train_examples": 2000},
        "fire": {"epochs": 2, "max_train_examples": 2000, "curve_points": 2},
    },
    "standard": {
        "snow": {"epochs": 40, "patience": 4},
        "fire": {"epochs": 6, "patience": 2, "curve_points": 2},
        "subsample": {"sst2": 20000, "mnli": 20000},
    },
    "full": {"snow": {}, "fire": {"curve_points": 2}},
}


@pytest.mark.parametrize("raw", OLD_CELLS, ids=[c["mode"] for c in OLD_CELLS])
def test_an_old_cell_reads_back_and_writes_the_same_json(raw):
    cell = Cell.from_json(raw)
    assert cell.mode is Mode(raw["mode"]) and cell.metrics == raw["metrics"]
    assert json.dumps(cell.to_json()) == json.dumps(raw)  # same keys, same order


def test_a_planned_cell_has_no_metrics_and_equals_its_finished_self():
    cell = Cell(Mode.FIRE, "stsb", None, 2, "o/fire/stsb/seed2")
    assert cell.to_json() == {
        "mode": "fire",
        "task": "stsb",
        "head": None,
        "seed": 2,
        "run": "o/fire/stsb/seed2",
    }
    done = cell.finished({"dev": {"pearson": 0.9}})
    assert done == cell and hash(done) == hash(cell) and {cell: done}[done] is done
    assert done.to_json()["metrics"] == {"dev": {"pearson": 0.9}} and cell.metrics is None
    with pytest.raises(AttributeError, match="cannot assign to field 'seed'"):
        cell.seed = 3  # frozen


@pytest.mark.parametrize(
    ("raw", "error", "match"),
    [
        (OLD_CELLS[1] | {"mode": "ice"}, ValueError, r"mode: expected one of \['snow', 'fire'"),
        ({"mode": "fire", "task": "t", "seed": 0, "run": "r"}, ValueError, r"missing \['head'\]"),
        (OLD_CELLS[3] | {"arm": "x"}, ValueError, r"unknown \['arm'\]"),
        (OLD_CELLS[1] | {"head": None}, ValueError, "a snow cell needs its ❄️ head, got None"),
    ],
)
def test_a_bad_cell_record_is_refused_naming_what(raw, error, match):
    with pytest.raises(error, match=match):
        Cell.from_json(raw)


def test_a_cell_refuses_a_mode_that_is_not_a_mode():
    with pytest.raises(TypeError, match="Cell.mode: expected a Mode, got 'snow'"):
        Cell("snow", "stsb", "esim", 0, "r")


def test_the_modes_are_the_arms_and_their_first_stages():
    assert [m.value for m in Mode if m.is_arm] == list(ARMS)
    assert {m for m in Mode if not m.is_arm} == {Mode.PROBE, Mode.INTERMEDIATE}
    assert {m for m in Mode if m.side is Mode.SNOW} == {Mode.SNOW, Mode.PROBE}


@pytest.mark.parametrize("name", list(OLD_BUDGETS))
def test_a_budget_records_the_json_it_recorded_as_a_dict(name):
    assert json.dumps(BUDGETS[name].to_json()) == json.dumps(OLD_BUDGETS[name])


def test_a_budget_caps_each_side_and_subsamples_both():
    std = BUDGETS["standard"]
    assert std.caps(Mode.PROBE, "sst2") == Caps(epochs=40, patience=4, max_train_examples=20000)
    assert std.caps(Mode.SEQ, "mnli").max_train_examples == 20000
    assert std.caps(Mode.SEQ, "stsb") == std.fire
    quick = BUDGETS["quick"]  # a side's own cap is kept (none of quick's tasks is subsampled)
    assert quick.caps(Mode.FIRE, "sst2").max_train_examples == 2000
    assert Caps(epochs=2, curve_points=0).options() == {"epochs": 2, "curve_points": 0}


def test_the_log_line_gives_a_run_trained_across_invocations_its_total(tmp_path):
    from snowfire.compare.run import took

    assert took(str(tmp_path / "absent"), 12.4) == "12 s"  # no config.json: this invocation's
    (tmp_path / "config.json").write_text(json.dumps({"seconds": 12.9}))
    assert took(str(tmp_path), 12.4) == "12 s"  # trained in one go: the two agree
    (tmp_path / "config.json").write_text(json.dumps({"seconds": 684.68}))
    assert took(str(tmp_path), 385.2) == "385 s here, 685 s in all"  # resumed after a pause
