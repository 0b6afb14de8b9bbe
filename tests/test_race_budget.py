"""compare/race_budget.py on constructed exhaustive trials (tests/test_racing.py's stand-in
trainer): the raced curve counts a stopped trial with the compute of the epochs it trained and
the score it had reached, by hand; it lies within the exhaustive band when the race stopped
only clear losers, and leaves it when the race stopped a late bloomer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snowfire.compare import raced_budget_curves, replay_cost
from snowfire.compare.cell import Cell, Mode
from tests.helpers.racing import Trainer

COST = 3600.0  # CPU-seconds of each whole run: 1 CPU-h


def _trials(root: Path, curves: list[list[float]]) -> list[Cell]:
    """One 🔥 trial per curve, one seed each, trained whole (--no-race), each costing COST."""
    trainer, cells = Trainer({}), []
    for k, curve in enumerate(curves):
        run = str(root / f"trial{k}")
        trainer.script[run] = curve
        trainer.setup(run, len(curve))
        cells.append(Cell(Mode.FIRE, "sst2", None, 0, run, trial=k))
    trainer([(c, None, None) for c in cells])
    for c in cells:
        config = json.loads((Path(c.run) / "config.json").read_text())
        (Path(c.run) / "config.json").write_text(
            json.dumps(config | {"cost": {"cpu_seconds": COST}})
        )
    return cells


def _score(run: str, epochs: int) -> float:
    lines = (Path(run) / "log.jsonl").read_text().splitlines()[:epochs]
    return max(json.loads(line)["selection"]["accuracy"] for line in lines)


def test_a_clear_loser_stopped_early_keeps_the_raced_curve_in_the_band(tmp_path):
    cells = _trials(tmp_path, [[0.80] * 6, [0.81] * 6, [0.79] * 6, [0.50] * 6])
    out = raced_budget_curves(cells, "accuracy", "classification")["fire"]
    assert out["stopped"] == ["fire#3"] and out["within"]
    # by hand: trial 3 stopped at rung 1 (epoch 1 of 6): 1/6 of its CPU-hour, its epoch-1 score
    compute = (3 + 1 / 6) / 4
    assert out["raced"]["compute"][0] == pytest.approx(compute, abs=1e-12)
    assert out["exhaustive"]["compute"][0] == pytest.approx(1.0, abs=1e-12)
    scores = [_score(c.run, 6) for c in cells[:3]] + [_score(cells[3].run, 1)]
    assert out["raced"]["mean"][0] == pytest.approx(sum(scores) / 4, abs=1e-12)  # E[1 trial]
    assert out["raced"]["mean"][-1] == pytest.approx(max(scores), abs=1e-12)  # E[best of 4]


def test_replay_cost_counts_a_stopped_contender_pro_rata_without_times(tmp_path):
    cells = _trials(tmp_path, [[0.80] * 6, [0.81] * 6, [0.79] * 6, [0.50] * 6])
    out = replay_cost(cells, "accuracy", "classification")
    # by hand: three trials whole (1 CPU-h each), trial 3 stopped after epoch 1 of 6
    assert out == {
        "exhaustive_h": pytest.approx(4.0, abs=1e-12),
        "raced_h": pytest.approx(3 + 1 / 6, abs=1e-12),
        "floor_h": pytest.approx(3 + 1 / 6, abs=1e-12),  # stopped at the first rung already
        "stopped": ["fire#3"],
    }
    close = _trials(tmp_path / "close", [[0.80] * 6, [0.80] * 6])  # nothing to stop
    assert replay_cost(close, "accuracy", "classification")["raced_h"] == pytest.approx(2.0)


def test_the_floor_stops_at_the_first_rung_what_the_race_stopped_later(tmp_path):
    """A trial level with the leader at rung 1 (epoch 1) and clearly behind at rung 2 (epoch
    2, the leader having improved) is stopped there: it pays 2/6 of its hour; the floor, the
    least a rule keeping the same survivors pays, charges it its first epoch alone."""
    cells = _trials(tmp_path, [[0.80] + [0.95] * 5, [0.80] * 6])
    out = replay_cost(cells, "accuracy", "classification")
    assert out["stopped"] == ["fire#1"]
    assert out["raced_h"] == pytest.approx(1 + 2 / 6, abs=1e-12)
    assert out["floor_h"] == pytest.approx(1 + 1 / 6, abs=1e-12)


def test_a_stopped_run_pays_its_final_scoring_but_the_training_split(tmp_path):
    """With times on record, a run cut after e epochs costs its first e epochs' training time
    plus what the run spent after its last epoch but scoring the training split, over the
    run's time (by hand)."""
    from snowfire.compare.race_budget import cost_share

    cells = _trials(tmp_path, [[0.80] * 6, [0.50] * 6])
    for c in cells:  # 10 s an epoch, then 20 s of final scoring: 80 s in all
        run = Path(c.run)
        lines = (run / "log.jsonl").read_text().splitlines()
        timed = [json.loads(line) | {"seconds": 10.0 * (i + 1)} for i, line in enumerate(lines)]
        (run / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in timed))
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps(config | {"seconds": 80.0}))
    assert cost_share(cells[1].run, 1) == pytest.approx((10 + 20) / 80, abs=1e-12)
    assert cost_share(cells[1].run, 6) == pytest.approx(1.0, abs=1e-12)
    out = replay_cost(cells, "accuracy", "classification")
    assert out["stopped"] == ["fire#1"]
    assert out["raced_h"] == pytest.approx(1 + 30 / 80, abs=1e-12)  # not 1 + 1/6
    # of those 20 s, 12 scored the training split, which a run the race stops skips
    run = Path(cells[1].run)
    config = json.loads((run / "config.json").read_text())
    scoring = {"train": 12.0, "select": 3.0, "dev": 4.0}
    (run / "config.json").write_text(json.dumps(config | {"scoring_seconds": scoring}))
    assert cost_share(cells[1].run, 1) == pytest.approx((10 + 8) / 80, abs=1e-12)
    assert cost_share(cells[1].run, 6) == pytest.approx(1.0, abs=1e-12)  # whole: it scored train


def test_a_late_bloomer_stopped_early_leaves_the_band(tmp_path):
    late = [0.50, 0.50, 0.95, 0.95, 0.95, 0.95]  # behind at rung 1, best at the cap
    cells = _trials(tmp_path, [[0.80] * 6, [0.80] * 6, [0.80] * 6, late])
    out = raced_budget_curves(cells, "accuracy", "classification")["fire"]
    assert out["stopped"] == ["fire#3"]
    assert not out["within"]  # n = 1: the raced mean sits below the exhaustive band
    assert out["raced"]["mean"][0] < out["exhaustive"]["low"][0]


def test_budget_curves_need_trials(tmp_path):
    cells = [Cell(Mode.FIRE, "sst2", None, 0, str(tmp_path / "r"))]
    with pytest.raises(ValueError, match="expected the cells of a --trials comparison"):
        raced_budget_curves(cells, "accuracy", "classification")
