"""The ❄️/🔥 comparison of docs/results.md (experiments/tune_or_not.py) from hand-made runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

import tune_or_not  # noqa: E402


def _fire_run(root: Path, task: str, gold: list[str], pred: list[str], score: float) -> None:
    run = root / task
    (run / "predictions").mkdir(parents=True)
    rows = [f"{i}\t{g}\t{p}" for i, (g, p) in enumerate(zip(gold, pred, strict=True))]
    (run / "predictions" / "dev.tsv").write_text("index\tgold\tpredicted\n" + "\n".join(rows))
    (run / "metrics.json").write_text(json.dumps({"dev": {"accuracy": score}}))
    config = {"seconds": 123.4, "best_epoch": 2, "num_examples": {"train": 3}}
    (run / "config.json").write_text(json.dumps(config))
    (run / "log.jsonl").write_text('{"epoch": 1}\n{"epoch": 2}\n{"epoch": 3}\n')


def test_fire_rows_check_the_score_against_the_predictions(tmp_path):
    data = tmp_path / "data"
    (data / "sst2").mkdir(parents=True)
    rows = "".join(f"a fine film {i}\t{i % 2}\n" for i in range(5))  # 5 training phrases
    (data / "sst2" / "train.tsv").write_text("sentence\tlabel\n" + rows)
    # a run that trained on 3 of them; 3 of 4 dev predictions right = accuracy 0.75
    gold, pred = ["1", "0", "1", "0"], ["1", "0", "0", "0"]
    _fire_run(tmp_path / "runs", "sst2", gold, pred, 0.75)
    row = tune_or_not.fire_rows(tmp_path / "runs", str(data))["sst2"]
    assert row["score"] == 0.75 and row["epochs"] == 3 and row["best_epoch"] == 2
    assert row["train_used"] == 3 and row["train_all"] == 5 and row["seconds"] == 123.4
    (tmp_path / "runs" / "sst2" / "metrics.json").write_text('{"dev": {"accuracy": 0.8}}')
    with pytest.raises(AssertionError, match="recomputed 0.75"):
        tune_or_not.fire_rows(tmp_path / "runs", str(data))


def test_comparison_takes_the_best_head_per_task_and_the_difference(tmp_path):
    snow = [  # (task, head, metric, score, dev, epochs, seconds, train config)
        ("stsb", "esim", "pearson", 0.852, {}, 10, 900.0, {}),
        ("stsb", "esim-pooled-separate", "pearson", 0.880, {}, 10, 700.0, {}),
        ("mrpc", "linear", "accuracy", 0.703, {}, 12, 60.0, {}),
        ("cola", "bcn", "matthews", 0.167, {}, 6, 300.0, {}),  # no 🔥 run: left out
    ]
    fire = {
        "stsb": dict(
            metric="pearson", score=0.871, seconds=1500.0, epochs=3, best_epoch=3,
            train_used=5749, train_all=5749,
        ),
        "mrpc": dict(
            metric="accuracy", score=0.81, seconds=900.0, epochs=3, best_epoch=2,
            train_used=2000, train_all=3668,
        ),
    }  # fmt: skip
    png = tmp_path / "cmp.png"
    table = tune_or_not.comparison(snow, fire, png).splitlines()
    assert len(table) == 4 and png.stat().st_size > 0
    stsb = [c.strip() for c in table[2].strip("|").split("|")]
    assert stsb[:4] == ["stsb", "pearson", "esim-pooled-separate", "88.0"]
    assert stsb[5] == "**87.1**" and stsb[-2] == "**-0.9**" and stsb[-3] == "5,749"
    mrpc = [c.strip() for c in table[3].strip("|").split("|")]
    assert mrpc[2:4] == ["linear", "70.3"] and mrpc[-2] == "**+10.7**"
    assert mrpc[-3] == "2,000 of 3,668" and mrpc[-4] == "3 (2)" and mrpc[-1] == "+6.7"


_RESULTS = """# Results

intro

## ❄️ every head

| task | head | dev metric | dev | all dev metrics | epochs | train time (s) |
| --- | --- | --- | --- | --- | --- | --- |
| mrpc | esim | accuracy | **77.9** | accuracy 77.9, f1 85.2 | 9 | 621 |
| mrpc | linear | accuracy | **70.3** | accuracy 70.3, f1 81.9 | 4 | 42 |

## Notes

- a note
"""


def test_the_section_goes_before_the_snow_table_and_is_replaced_in_place(tmp_path):
    md = tmp_path / "results.md"
    md.write_text(_RESULTS)
    snow = tune_or_not.snow_rows_from_results(_RESULTS)
    assert [r[:4] for r in snow] == [
        ("mrpc", "esim", "accuracy", 0.779),
        ("mrpc", "linear", "accuracy", 0.703),
    ]
    assert snow[0][5:7] == (9, 621.0)
    fire = dict(
        metric="accuracy", score=0.85, seconds=900.0, epochs=3, best_epoch=2,
        train_used=3668, train_all=3668,
    )  # fmt: skip
    tune_or_not.write_section(md, snow, {"mrpc": fire})
    first = md.read_text()
    assert first.index("## To tune or not to tune") < first.index("## ❄️ every head")
    assert "| mrpc | accuracy | esim | 77.9 | 621 | **85.0** |" in first
    assert first.endswith("- a note\n") and (tmp_path / "tune_or_not.png").stat().st_size > 0
    fire["score"] = 0.80  # a second report replaces the section, nothing else changes
    tune_or_not.write_section(md, snow, {"mrpc": fire})
    second = md.read_text()
    assert second.count("## To tune or not to tune") == 1 and "**80.0**" in second
    assert "**85.0**" not in second
    assert second.replace("80.0", "85.0").replace("+2.1", "+7.1") == first


def test_a_malformed_snow_row_is_reported_with_its_line(tmp_path):
    bad = _RESULTS.replace("| **70.3** |", "| 70.3 |")
    with pytest.raises(ValueError, match="line 10: expected 7 cells"):
        tune_or_not.snow_rows_from_results(bad)
    with pytest.raises(ValueError, match="no ❄️ table"):
        tune_or_not.snow_rows_from_results("# empty\n")


def test_paper_tasks_report_writes_the_table_tune_or_not_reads_back(tmp_path):
    import paper_tasks  # experiments/ is on sys.path above

    name = next(n for n, t, *_ in paper_tasks._runs() if t == "mrpc")
    run = tmp_path / "runs" / name
    (run / "predictions").mkdir(parents=True)
    (run / "predictions" / "dev.tsv").write_text("index\tgold\tpredicted\n0\t1\t1\n1\t0\t1\n")
    (run / "metrics.json").write_text(json.dumps({"dev": {"accuracy": 0.5}}))
    (run / "config.json").write_text(json.dumps({"seconds": 10.0, "train": {"seed": 0}}))
    (run / "log.jsonl").write_text('{"epoch": 1}\n{"epoch": 2}\n')
    (run / "scalar_mix.json").write_text(json.dumps({"mix": [1 / 7] * 7}))
    md = tmp_path / "results.md"
    paper_tasks.report(tmp_path / "runs", {}, md, tmp_path / "layers.png")
    assert "## To tune or not to tune" not in md.read_text()  # no 🔥 runs given
    [row] = tune_or_not.snow_rows_from_results(md.read_text())
    assert row[:4] == ("mrpc", name.removeprefix("mrpc-"), "accuracy", 0.5)
    assert row[5:7] == (2, 10.0)
