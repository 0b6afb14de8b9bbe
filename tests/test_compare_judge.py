"""compare/judge.py on constructed run directories: the verdict reads each cell's predictions
and learning curve, and calls only what converged cells and Δ's interval earn."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snowfire.compare import Caps, Cell, Mode
from snowfire.compare.judge import eval_split, judge
from snowfire.compare.verdict import BUDGET_LIMITED
from snowfire.tasks import get_task, pearson

N = 300
RISING = [0.50, 0.60, 0.70]  # still rising at its cap of 3 epochs
PEAKED = [0.60, 0.72, 0.71, 0.70]  # best at epoch 2 of 4, then flat: converged


def _run(path, mode, seed, gold, pred, curve, cap, splits=("dev",)):
    """A finished cell's run directory as the trainers leave it: config.json (the epoch cap),
    log.jsonl (dev pearson per epoch) and predictions/<split>.tsv."""
    path.mkdir(parents=True)
    key = "train" if mode == "snow" else "finetune"
    (path / "config.json").write_text(json.dumps({key: {"epochs": cap}}))
    (path / "log.jsonl").write_text(
        "".join(
            json.dumps({"epoch": i + 1, "dev": {"pearson": y}}) + "\n" for i, y in enumerate(curve)
        )
    )
    (path / "predictions").mkdir()
    metrics = {}
    for split in splits:
        rows = "".join(
            f"{i}\t{g!r}\t{p!r}\n" for i, (g, p) in enumerate(zip(gold, pred, strict=True))
        )
        (path / "predictions" / f"{split}.tsv").write_text("index\tgold\tpredicted\n" + rows)
        metrics[split] = {"pearson": pearson(gold, pred)}
    head = "esim" if mode == "snow" else None
    return Cell(Mode(mode), "stsb", head, seed, str(path), metrics)


def _sides(tmp_path, snow_noise, fire_noise, curves, caps=(4, 4), seeds=3, splits=("dev",)):
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, N).round(2).tolist()
    out = {}
    for side, noise, curve, cap in (
        ("snow", snow_noise, curves[0], caps[0]),
        ("fire", fire_noise, curves[1], caps[1]),
    ):
        out[side] = [
            _run(
                tmp_path / side / f"seed{s}",
                side,
                s,
                gold,
                (np.asarray(gold) + rng.normal(0, noise, N)).round(4).tolist(),
                curve,
                cap,
                splits,
            )
            for s in range(seeds)
        ]
    return gold, out


def test_converged_cells_far_apart_earn_a_call_with_an_interval(tmp_path):
    gold, cells = _sides(tmp_path, snow_noise=2.0, fire_noise=0.5, curves=(PEAKED, PEAKED))
    v = judge(get_task("stsb"), cells["snow"], cells["fire"], None, replicates=2000)
    snow = np.mean([c.metrics["dev"]["pearson"] for c in cells["snow"]])
    fire = np.mean([c.metrics["dev"]["pearson"] for c in cells["fire"]])
    assert v["delta"]["delta"] == pytest.approx(fire - snow, abs=1e-9)
    assert v["delta"]["low"] > 0 and v["verdict"] == "🔥 > ❄️" and v["split"] == "dev"
    assert all(c["status"] == "converged" for side in v["curves"].values() for c in side)
    curve = [list(point) for point in v["curves"]["snow"][0]["curve"]]
    assert curve == [[1.0, 0.60], [2.0, 0.72], [3.0, 0.71], [4.0, 0.70]]
    assert v["restarts"]["snow"]["seeds"] == 3 and v["restarts"]["fire"]["degenerate"] == []


def test_identical_sides_are_about_equal(tmp_path):
    gold, cells = _sides(tmp_path, snow_noise=1.0, fire_noise=1.0, curves=(PEAKED, PEAKED))
    for f, s in zip(cells["fire"], cells["snow"], strict=True):  # 🔥 predicts what ❄️ does
        (tmp_path / "fire" / f"seed{f.seed}" / "predictions" / "dev.tsv").write_text(
            (tmp_path / "snow" / f"seed{s.seed}" / "predictions" / "dev.tsv").read_text()
        )
    v = judge(get_task("stsb"), cells["snow"], cells["fire"], None, replicates=2000)
    assert v["delta"]["low"] <= 0 <= v["delta"]["high"] and v["verdict"] == "❄️ ≈ 🔥"


def test_a_cell_still_improving_at_its_cap_gets_no_call(tmp_path):
    gold, cells = _sides(
        tmp_path, snow_noise=2.0, fire_noise=0.5, curves=(PEAKED, RISING), caps=(4, 3)
    )
    v = judge(get_task("stsb"), cells["snow"], cells["fire"], None, replicates=500)
    assert v["delta"]["low"] > 0  # the interval alone would call 🔥 ...
    assert v["verdict"] == BUDGET_LIMITED  # ... but 🔥 was still rising at its cap
    assert v["curves"]["fire"][0]["status"] == "still improving at the cap"
    assert "🔥 seed 0 still improving at the cap" in v["text"]


def test_the_zero_training_row_is_weighed_too(tmp_path):
    gold, cells = _sides(tmp_path, snow_noise=2.0, fire_noise=1.5, curves=(PEAKED, PEAKED))
    cosine = (np.asarray(gold) + np.random.default_rng(9).normal(0, 0.3, N)).tolist()
    base = {"method": "cosine", "predictions": {"dev": cosine}}
    v = judge(get_task("stsb"), cells["snow"], cells["fire"], base, replicates=2000)
    assert v["verdict"] == "neither adaptation beats the encoder's own similarity at this budget"
    assert v["baseline"]["score"] == pytest.approx(pearson(gold, cosine), abs=1e-9)


def test_test_split_when_every_cell_has_one_and_a_degenerate_restart_is_named(tmp_path):
    gold, cells = _sides(
        tmp_path,
        snow_noise=1.0,
        fire_noise=0.5,
        curves=(PEAKED, PEAKED),
        seeds=4,
        splits=("dev", "test"),
    )
    assert eval_split(cells["snow"] + cells["fire"]) == "test"
    bad = tmp_path / "fire" / "seed2" / "predictions" / "test.tsv"  # an "off" restart: noise
    noise = np.random.default_rng(5).uniform(0, 5, N).tolist()
    rows = [f"{i}\t{g!r}\t{p!r}\n" for i, (g, p) in enumerate(zip(gold, noise, strict=True))]
    bad.write_text("index\tgold\tpredicted\n" + "".join(rows))
    v = judge(get_task("stsb"), cells["snow"], cells["fire"], None, replicates=500)
    assert v["split"] == "test" and v["restarts"]["fire"]["degenerate"] == [2]
    assert "🔥 seed 2 degenerate" in v["text"]
    cells["fire"][0].metrics.pop("test")
    assert eval_split(cells["snow"] + cells["fire"]) == "dev"


def test_cells_that_scored_other_examples_are_refused(tmp_path):
    gold, cells = _sides(tmp_path, snow_noise=1.0, fire_noise=1.0, curves=(PEAKED, PEAKED))
    path = tmp_path / "fire" / "seed1" / "predictions" / "dev.tsv"
    path.write_text(path.read_text().replace(f"\t{gold[0]!r}\t", "\t9.99\t", 1))
    with pytest.raises(ValueError, match="did not score the same examples"):
        judge(get_task("stsb"), cells["snow"], cells["fire"], None, replicates=100)


def test_the_budgets_caps_and_default_seeds():
    from snowfire.compare import CompareConfig
    from snowfire.tasks import DEMO_DATA_DIR

    def cfg(**kw):
        return CompareConfig(
            encoder="minilm", tasks=["sst2", "stsb"], data=str(DEMO_DATA_DIR), out="unused", **kw
        )

    assert cfg().seeds == 1 and cfg(budget="standard").seeds == 3 and cfg(budget="full").seeds == 3
    assert cfg(budget="standard", seeds=2).seeds == 2
    std = cfg(budget="standard")
    # SST-2's subsample is the same for both sides; STS-B trains on every example
    assert std.caps(Mode.SNOW, "sst2").max_train_examples == 20000
    assert std.caps(Mode.FIRE, "sst2").max_train_examples == 20000
    assert std.caps(Mode.FIRE, "stsb").max_train_examples is None
    assert std.caps(Mode.SNOW, "stsb") == Caps(epochs=40, patience=4)
    assert cfg().caps(Mode.FIRE, "sst2") == Caps(epochs=2, max_train_examples=2000, curve_points=2)
    # a ❄️ probe (lpft's first stage) runs on ❄️'s caps, every other arm on 🔥's
    assert std.caps("probe", "sst2") == std.caps("snow", "sst2")
    assert (
        std.caps(Mode.INTERMEDIATE, "stsb")
        == std.caps(Mode.LORA, "stsb")
        == std.caps("fire", "stsb")
    )
    assert std.caps(Mode.SNOW, "stsb").options() == {"epochs": 40, "patience": 4}
    elmo = CompareConfig(encoder="elmo:o.json,w.hdf5", tasks=["stsb"], data="d", out="o")
    assert elmo.caps("fire", "stsb").curve_points is None  # ELMo: epoch ends only
    with pytest.raises(ValueError, match=r"CompareConfig.caps: expected a mode among \['snow'"):
        std.caps("ice", "stsb")
