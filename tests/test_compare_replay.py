"""`snowfire compare --replay` (compare/replaying.py) on constructed runs (tests/test_racing.py's
stand-in trainer) listed in a constructed OUT/results.json: the race's decisions recomputed
without training, printed, written to OUT/replay.json, and checked against the live race."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snowfire.cli.main import main as run_cli
from snowfire.compare import CompareConfig, replay, run_compare
from tests.helpers.racing import Trainer, race, race_cells

CURVES = {"fire": [0.80] * 6, "bitfit": [0.55] * 6, "snow": [0.81] * 6}


def _out(tmp_path: Path, raced: bool, keep_leaders: bool = False) -> tuple[Path, list]:
    """OUT with the runs (raced, or every cell to its cap) and the results.json listing them.
    One trial per arm: bitfit stops only under the earlier rule (keep_leaders False)."""
    out = tmp_path / "out"
    trainer = Trainer({})
    cells = race_cells(out / "runs", trainer, CURVES)
    task: dict = {"metric": "accuracy"}
    if raced:
        task["race"] = race(cells, trainer, keep_leaders=keep_leaders)
    else:
        trainer([(c, None, None) for c in cells])
    results = {
        "tasks": {"sst2": task},
        "task_specs": {"sst2": {"kind": "classification"}},
        "cells": [c.to_json() for c in cells],
    }
    (out / "results.json").write_text(json.dumps(results))
    return out, cells


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_replay_recomputes_the_live_race_and_trains_nothing(tmp_path, capsys):
    out, cells = _out(tmp_path, raced=True)
    before = _snapshot(out / "runs")
    cfg = CompareConfig(encoder="minilm", tasks=["sst2"], data="d", out=str(out), replay=True)
    record = run_compare(cfg)
    assert _snapshot(out / "runs") == before  # nothing trained, no run touched
    written = json.loads((out / "replay.json").read_text())
    assert written == record and written["format"] == 1
    task = written["tasks"]["sst2"]
    assert task["matches_live"] is True
    assert list(task["stopped"]) == ["bitfit"]
    assert {k: v for k, v in task.items() if k != "matches_live"} == replay(
        cells, "accuracy", "classification", keep_leaders=False
    )
    shown = capsys.readouterr().out
    assert "compare sst2 rung 1: bitfit stopped, Δ vs " in shown
    assert "decisions: the live race's" in shown


def test_replay_takes_the_rule_the_live_race_recorded(tmp_path):
    for keep in (True, False):
        out, _ = _out(tmp_path / str(keep), raced=True, keep_leaders=keep)
        cfg = CompareConfig(encoder="minilm", tasks=["sst2"], data="d", out=str(out), replay=True)
        task = run_compare(cfg)["tasks"]["sst2"]
        assert task["matches_live"] is True and task["keep_leaders"] is keep
        assert list(task["stopped"]) == ([] if keep else ["bitfit"])
    # a race recorded before the rule was (no "keep_leaders"): the earlier rule, which it used
    results = json.loads((out / "results.json").read_text())
    del results["tasks"]["sst2"]["race"]["keep_leaders"]
    (out / "results.json").write_text(json.dumps(results))
    task = run_compare(cfg)["tasks"]["sst2"]
    assert task["matches_live"] is True and list(task["stopped"]) == ["bitfit"]


def test_replay_of_an_exhaustive_out_through_the_cli(tmp_path, capsys):
    out, _ = _out(tmp_path, raced=False)
    argv = ["compare", "--encoder", "minilm", "--tasks", "sst2", "--data", "d"]
    assert run_cli([*argv, "--out", str(out), "--replay"]) == 0
    task = json.loads((out / "replay.json").read_text())["tasks"]["sst2"]
    assert task["matches_live"] is None and task["stopped"] == {}  # every arm's leader kept
    assert "decisions: OUT was not raced" in capsys.readouterr().out
    assert run_cli([*argv, "--out", str(out), "--replay", "--race-stops-leaders"]) == 0
    task = json.loads((out / "replay.json").read_text())["tasks"]["sst2"]
    assert task["matches_live"] is None and list(task["stopped"]) == ["bitfit"]


def test_replay_needs_a_finished_comparison(tmp_path):
    cfg = CompareConfig(encoder="minilm", tasks=["sst2"], data="d", out=str(tmp_path), replay=True)
    with pytest.raises(ValueError, match=r"compare --replay: expected a finished comparison's"):
        run_compare(cfg)
