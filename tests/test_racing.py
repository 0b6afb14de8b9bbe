"""compare/racing.py on constructed runs (RUN/config.json, log.jsonl, selection/epoch-k.tsv as
both trainers write them) and a stand-in trainer: a contender far behind stops at the first
rung and ends at the epoch it reached, two indistinguishable ones both run to the cap, the
leader never stops, `replay` of the recorded files gives the live race's decisions exactly,
and a race killed after a rung resumes there (nothing trained twice) with the same decisions.
An arm's leader is never stopped (today's rule); the tests of the mechanics race one trial per
arm under the earlier rule (`EARLIER`: it stops when clearly behind the overall leader), so
that a stop happens between arms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snowfire.compare.cell import Cell, Mode
from snowfire.compare.racing import (
    contender,
    replay,
    rung_count,
    rung_target,
)
from tests.helpers.racing import Trainer, race, race_cells

#: The earlier rule: an arm's leader stops too when clearly behind the overall leader.
EARLIER = {"keep_leaders": False}


def test_rungs_are_fractions_of_each_cap():
    assert rung_count([6, 40]) == 3  # the smallest cap's schedule: 1, 2, 6
    assert [rung_target(40, j, 3) for j in (1, 2, 3)] == [5, 14, 40]
    assert [rung_target(6, j, 3) for j in (1, 2, 3)] == [1, 2, 6]
    assert [rung_target(2, j, 3) for j in (1, 2, 3)] == [1, 1, 2]
    with pytest.raises(ValueError, match=r"expected a rung in 1\.\.3, got 4"):
        rung_target(6, 4, 3)
    with pytest.raises(ValueError, match="expected at least one epoch cap, got none"):
        rung_count([])


def test_a_contender_far_behind_stops_at_the_first_rung_and_ends_there(tmp_path):
    trainer = Trainer({})
    cells = race_cells(
        tmp_path,
        trainer,
        {"fire": [0.80] * 6, "bitfit": [0.55] * 6, "snow": [0.81] * 6},
    )
    record = race(cells, trainer, **EARLIER)
    assert record["rungs"] == 3
    assert list(record["stopped"]) == ["bitfit"]
    stop = record["stopped"]["bitfit"]
    assert stop["rung"] == 1 and stop["against"] in ("fire", "snow:esim")
    assert stop["text"].startswith(f"stopped at rung 1 (behind {stop['against']} by ")
    assert stop["high"] < -0.005  # its upper bound more than δ below the leader
    trained = {run: max(e for r, e in trainer.epochs if r == run) for run, _ in trainer.epochs}
    assert trained[str(tmp_path / "bitfit")] == 1  # ended at the epoch it reached
    assert trained[str(tmp_path / "fire")] == 6 and trained[str(tmp_path / "snow")] == 6
    assert record["finished"] == ["fire", "snow:esim"]  # the leader never stops
    assert (tmp_path / "bitfit" / "metrics.json").is_file()  # a finished run, its score kept


def test_indistinguishable_contenders_both_run_to_the_cap(tmp_path):
    trainer = Trainer({})
    cells = race_cells(tmp_path, trainer, {"fire": [0.80] * 6, "lora": [0.80] * 6})
    record = race(cells, trainer)
    assert record["stopped"] == {}
    assert [d["stopped"] for d in record["decisions"]] == [False, False]  # rungs 1 and 2
    assert len(trainer.epochs) == 12


def test_replay_of_the_recorded_files_gives_the_live_decisions(tmp_path):
    trainer = Trainer({})
    curves = {
        "fire": [0.70, 0.78, 0.80, 0.80, 0.81, 0.81],
        "lora": [0.60, 0.62, 0.63, 0.63, 0.64, 0.64],
        "adapter": [0.70, 0.77, 0.79, 0.80, 0.80, 0.80],
        "bitfit": [0.70, 0.72, 0.72, 0.72, 0.72, 0.72],
    }
    cells = race_cells(tmp_path, trainer, curves)
    live = race(cells, trainer, **EARLIER)
    assert set(live["stopped"]) == {"lora", "bitfit"}
    assert replay(cells, "accuracy", "classification", **EARLIER) == live


def test_an_exhaustive_run_replays_under_the_race(tmp_path):
    trainer = Trainer({})
    cells = race_cells(tmp_path, trainer, {"fire": [0.8] * 6, "bitfit": [0.55] * 6})
    trainer([(c, None, None) for c in cells])  # every cell to its cap: --no-race
    record = replay(cells, "accuracy", "classification", **EARLIER)
    assert list(record["stopped"]) == ["bitfit"] and record["stopped"]["bitfit"]["rung"] == 1


def test_a_killed_race_resumes_at_its_rung_with_the_same_decisions(tmp_path):
    curves = {"fire": [0.8] * 6, "bitfit": [0.55] * 6, "lora": [0.79] * 6}
    whole = Trainer({})
    reference = race(race_cells(tmp_path / "whole", whole, curves), whole, **EARLIER)

    class Killed(Exception):
        pass

    trainer = Trainer({})
    cells = race_cells(tmp_path / "killed", trainer, curves)
    calls = []

    def dies_after_the_first_rung(steps):
        calls.append(steps)
        trainer(steps)
        if len(calls) == 1:
            raise Killed("killed after the first rung")

    with pytest.raises(Killed, match="killed after the first rung"):
        race(cells, dies_after_the_first_rung, **EARLIER)
    assert all((Path(c.run) / "paused.json").is_file() for c in cells)
    first = list(trainer.epochs)
    resumed = race(cells, trainer, **EARLIER)
    again = trainer.epochs[len(first) :]
    assert all(epoch > 1 for _, epoch in again)  # the first rung is not trained twice
    assert resumed["decisions"] == reference["decisions"]
    assert resumed["stopped"].keys() == reference["stopped"].keys() == {"bitfit"}


def _trials(root: Path, trainer: Trainer, curves: dict[str, list[float]]) -> list[Cell]:
    """A cell per "arm#trial" of `curves`, seed 0."""
    cells = []
    for name, curve in curves.items():
        arm, trial = name.split("#")
        run = str(root / name.replace("#", "-"))
        trainer.script[run] = curve
        trainer.setup(run, len(curve))
        cells.append(Cell(Mode(arm), "sst2", None, 0, run, trial=int(trial)))
    return cells


def test_an_arms_leader_trains_to_its_cap_however_far_behind(tmp_path):
    trainer = Trainer({})
    curves = {
        "fire#0": [0.80] * 6,
        "fire#1": [0.55] * 6,  # behind its arm's leader: stops
        "bitfit#0": [0.66] * 6,  # bitfit's leader, far behind fire: trains to its cap
        "bitfit#1": [0.56] * 6,  # behind fire: stops (against fire#0 or bitfit#0)
    }
    cells = _trials(tmp_path, trainer, curves)
    record = race(cells, trainer)
    assert record["keep_leaders"] is True
    assert set(record["stopped"]) == {"fire#1", "bitfit#1"}
    assert record["finished"] == ["fire#0", "bitfit#0"]
    kept = [d for d in record["decisions"] if d["trial"] == "bitfit#0"]
    assert [d["rung"] for d in kept] == [1, 2] and all(d["high"] < -0.005 for d in kept)
    assert not any(d["stopped"] for d in kept)  # behind fire all along, and kept
    ran = {run: max(e for r, e in trainer.epochs if r == run) for run, _ in trainer.epochs}
    assert ran[str(tmp_path / "bitfit-0")] == 6 and ran[str(tmp_path / "bitfit-1")] == 1
    assert replay(cells, "accuracy", "classification") == record
    earlier = replay(cells, "accuracy", "classification", **EARLIER)
    assert set(earlier["stopped"]) == {"fire#1", "bitfit#0", "bitfit#1"}
    assert earlier["keep_leaders"] is False


def test_a_run_the_earlier_rule_ended_is_refused_where_todays_rule_trains_it_on(tmp_path):
    trainer = Trainer({})
    cells = _trials(tmp_path, trainer, {"fire#0": [0.80] * 6, "bitfit#0": [0.55] * 6})
    first = race(cells, trainer, **EARLIER)
    assert list(first["stopped"]) == ["bitfit#0"]
    before = (tmp_path / "bitfit-0" / "log.jsonl").read_text()
    # today's rule keeps bitfit's leader: weighing it at its old end would be wrong
    with pytest.raises(ValueError, match=r"bitfit-0: an earlier race ended this run at epoch 1"):
        race(cells, trainer)
    assert (tmp_path / "bitfit-0" / "log.jsonl").read_text() == before  # nothing touched
    assert race(cells, trainer, **EARLIER) == first  # resumed under its own rule: the same


def test_contender_names():
    assert contender(Cell(Mode.SNOW, "t", "esim", 0, "r")) == "snow:esim"
    assert contender(Cell(Mode.SNOW, "t", "esim", 0, "r", trial=2)) == "snow#2"
    assert contender(Cell(Mode.LORA, "t", None, 1, "r", trial=0)) == "lora#0"
    assert contender(Cell(Mode.FIRE, "t", None, 0, "r")) == "fire"


def test_a_run_the_race_stopped_earns_a_verdict_a_cut_short_one_does_not(tmp_path):
    from snowfire.compare.convergence import RACED, STILL_IMPROVING
    from snowfire.compare.judge import convergence

    for name, stopped in (("raced", 2), ("cut", None)):
        run = tmp_path / name
        run.mkdir()
        config = {"finetune": {"epochs": 6}, "stopped_at": stopped}
        (run / "config.json").write_text(json.dumps(config))
        rising = [{"epoch": e, "selection": {"accuracy": 0.5 + 0.1 * e}} for e in (1, 2)]
        (run / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rising))
    _, raced = convergence(Cell(Mode.BITFIT, "t", None, 0, str(tmp_path / "raced")), "accuracy")
    assert raced.status == RACED and raced.converged
    # its score is where the race left it: the verdict's notes say so, and that it still rose
    why = "ended by the race at epoch 2 of 6, still rising there (compare/racing.py)"
    assert raced.reason == why
    _, cut = convergence(Cell(Mode.BITFIT, "t", None, 0, str(tmp_path / "cut")), "accuracy")
    assert cut.status == STILL_IMPROVING and not cut.converged


def test_seeds_double_for_the_contenders_still_in_the_race():
    from snowfire.compare.racing import seeds_at

    assert [seeds_at(j, 4, 5) for j in (1, 2, 3, 4)] == [1, 2, 4, 5]  # the last rung: all
    assert [seeds_at(j, 3, 8) for j in (1, 2, 3)] == [1, 2, 8]
    assert [seeds_at(j, 3, 1) for j in (1, 2, 3)] == [1, 1, 1]
    with pytest.raises(ValueError, match=r"expected a rung in 1\.\.3, got 0"):
        seeds_at(0, 3, 2)
    with pytest.raises(ValueError, match="expected at least one seed asked, got 0"):
        seeds_at(1, 3, 0)


def test_survivors_gain_seeds_and_a_stopped_contender_keeps_the_ones_it_had(tmp_path):
    trainer = Trainer({})
    curves = {"fire": [0.80] * 6, "lora": [0.80] * 6, "bitfit": [0.55] * 6}
    cells = []
    for name, curve in curves.items():
        for seed in range(3):
            run = str(tmp_path / f"{name}-seed{seed}")
            trainer.script[run] = curve
            trainer.setup(run, len(curve))
            cells.append(Cell(Mode(name), "sst2", None, seed, run))
    record = race(cells, trainer, **EARLIER)
    assert list(record["stopped"]) == ["bitfit"]
    # rungs at epochs 1, 2, 6: 1 seed, then 2, then all 3 asked; bitfit stopped with its 1
    assert record["seeds"] == {"fire": [1, 2, 3], "lora": [1, 2, 3], "bitfit": [1]}
    trained = {run for run, _ in trainer.epochs}
    assert trained == {c.run for c in cells} - {c.run for c in cells[7:9]}  # bitfit 1, 2
    ran = {run: max(e for r, e in trainer.epochs if r == run) for run in trained}
    assert ran[str(tmp_path / "bitfit-seed0")] == 1
    assert all(ran[str(tmp_path / f"{n}-seed{s}")] == 6 for n in ("fire", "lora") for s in range(3))
    # the second seed joins at rung 2 and trains from scratch to its epochs, the third at the last
    first = [e for r, e in trainer.epochs if r == str(tmp_path / "fire-seed1")]
    assert first == [1, 2, 3, 4, 5, 6]
    decided = [d for d in record["decisions"] if d["trial"] != "bitfit"]  # fire vs lora
    assert [d["rung"] for d in decided] == [1, 2] and not any(d["stopped"] for d in decided)
    # replay from the runs that exist (bitfit's unrun seeds are not among them)
    ran_cells = [c for c in cells if (Path(c.run) / "metrics.json").is_file()]
    assert replay(ran_cells, "accuracy", "classification", **EARLIER) == record
