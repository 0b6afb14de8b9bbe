"""The ❄️/🔥 comparison of docs/results.md (experiments/) from hand-made runs, with typed rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

import report  # noqa: E402
import tune_or_not  # noqa: E402
from report import FireRow, SnowRow  # noqa: E402


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
    assert row.score == 0.75 and row.epochs == 3 and row.best_epoch == 2
    assert row.train_used == 3 and row.train_all == 5 and row.seconds == 123.4
    (tmp_path / "runs" / "sst2" / "metrics.json").write_text('{"dev": {"accuracy": 0.8}}')
    with pytest.raises(AssertionError, match="recomputed 0.75"):
        tune_or_not.fire_rows(tmp_path / "runs", str(data))


def test_comparison_takes_the_best_head_per_task_and_the_difference(tmp_path):
    snow = [
        SnowRow("stsb", "esim", "pearson", 0.852, epochs=10, seconds=900.0),
        SnowRow("stsb", "esim-pooled-separate", "pearson", 0.880, epochs=10, seconds=700.0),
        SnowRow("mrpc", "linear", "accuracy", 0.703, epochs=12, seconds=60.0),
        SnowRow("cola", "bcn", "matthews", 0.167, epochs=6, seconds=300.0),  # no 🔥: left out
    ]
    fire = {
        "stsb": FireRow("stsb", "pearson", 0.871, 1500.0, 3, 3, 5749, 5749),
        "mrpc": FireRow("mrpc", "accuracy", 0.81, 900.0, 3, 2, 2000, 3668),
    }
    png = tmp_path / "cmp.png"
    table = report.comparison(snow, fire, png).splitlines()
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

## Notes

- a note
"""


def test_the_section_goes_before_the_snow_table_and_is_replaced_in_place(tmp_path):
    md = tmp_path / "results.md"
    md.write_text(_RESULTS)
    snow = [
        SnowRow("mrpc", "esim", "accuracy", 0.779, epochs=9, seconds=621.0),
        SnowRow("mrpc", "linear", "accuracy", 0.703, epochs=4, seconds=42.0),
    ]
    fire = FireRow("mrpc", "accuracy", 0.85, 900.0, 3, 2, 3668, 3668)
    tune_or_not.write_section(md, snow, {"mrpc": fire})
    first = md.read_text()
    assert first.index("## To tune or not to tune") < first.index("## ❄️ every head")
    assert "| mrpc | accuracy | esim | 77.9 | 621 | **85.0** |" in first
    assert first.endswith("- a note\n") and (tmp_path / "tune_or_not.png").stat().st_size > 0
    lower = FireRow("mrpc", "accuracy", 0.80, 900.0, 3, 2, 3668, 3668)
    tune_or_not.write_section(md, snow, {"mrpc": lower})  # replaces the section, nothing else
    second = md.read_text()
    assert second.count("## To tune or not to tune") == 1 and "**80.0**" in second
    assert "**85.0**" not in second
    assert second.replace("80.0", "85.0").replace("+2.1", "+7.1") == first


def test_rows_round_trip_and_a_bad_row_is_named(tmp_path):
    rows = [SnowRow("mrpc", "esim", "accuracy", 0.779, {"accuracy": 0.779}, 9, 621.0, {"seed": 0})]
    report.write_rows(tmp_path / "results.json", rows)
    assert report.read_rows(tmp_path / "results.json") == rows
    (tmp_path / "bad.json").write_text('[{"task": "mrpc", "head": "esim"}]')
    with pytest.raises(ValueError, match="bad.json: row 0: .*missing 2 required"):
        report.read_rows(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no ❄️ rows at .*absent.json: run experiments/paper"):
        report.read_rows(tmp_path / "absent.json")


def test_paper_tasks_report_writes_the_rows_tune_or_not_reads_back(tmp_path):
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
    [row] = report.read_rows(md.with_suffix(".json"))
    assert (row.task, row.head, row.metric, row.score) == (
        "mrpc",
        name.removeprefix("mrpc-"),
        "accuracy",
        0.5,
    )
    assert (row.epochs, row.seconds, row.train) == (2, 10.0, {"seed": 0})
