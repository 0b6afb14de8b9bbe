"""`snowfire compare --trials N` end to end (tiny BERT, a tiny SST-2 with no test labels, so a
slice of train selects and dev reports): every arm runs the same N draws, keeps its best trial
on the selection split, draws its budget curve; a rerun trains nothing, raising N trains only
the new trials; and the black-box honesty check: the same comparison with the report split's
labels permuted makes every choice the same (epochs, trials, heads), only the reported scores
differ."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from snowfire.cli.main import main as run_cli
from tests.helpers.tasks import permute_labels, write_sst2

pytestmark = pytest.mark.slow  # a dozen tiny runs


def _data(root: Path) -> Path:
    return write_sst2(root, sizes=(("train", 48), ("dev", 16)))


def _compare(tiny_bert_dir, data, out, trials):
    argv = ["compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "sst2", "--data", str(data)]
    argv += ["--out", str(out), "--budget", "quick", "--seeds", "1", "--trials", str(trials)]
    # in this process: the tests spy on the trainers (monkeypatch reaches no cell process)
    assert run_cli([*argv, "--quiet", "--no-cell-processes"]) == 0
    return json.loads((out / "results.json").read_text())


def _choices(results) -> dict:
    """Everything a comparison chose: each cell's epochs and head, each arm's trial."""
    cells = {}
    for c in results["cells"]:
        config = json.loads((Path(c["run"]) / "config.json").read_text())
        cells[(c["mode"], c.get("trial"), c["seed"])] = (config.get("best_epoch"), c["head"])
    chosen = {a: r["chosen"] for a, r in results["tasks"]["sst2"]["search"].items()}
    return {"cells": cells, "chosen": chosen}


def test_trials_choose_on_selection_and_draw_budget_curves(tiny_bert_dir, tmp_path):
    data = _data(tmp_path / "data")
    out = tmp_path / "out"
    results = _compare(tiny_bert_dir, data, out, trials=2)
    s = results["tasks"]["sst2"]
    assert s["protocol"] == {"selection": "select", "report": "dev", "honest": True}
    for arm in ("snow", "fire"):
        record = s["search"][arm]
        trials = record["trials"]
        assert sorted(int(k) for k in trials) == [0, 1]
        best = max(trials, key=lambda k: (trials[k]["select"], -int(k)))
        assert int(best) == record["chosen"]  # the selection split decides, nothing else
        for k in (0, 1):
            assert (out / arm / "sst2" / f"trial{k}" / "seed0" / "metrics.json").is_file()
        curve = s["budget_curves"]["curves"][arm]
        assert curve["n"] == [1, 2]
        reports = sorted(trials[k]["dev"] for k in trials)
        assert curve["mean"][0] == pytest.approx(sum(reports) / 2)  # E[best of 1]: the mean
        assert curve["compute"][0] > 0
    race = s["race"]  # today's rule: an arm's leading trial trains to its cap, whatever
    assert race["keep_leaders"] is True  # the other arm's evidence says
    assert {name.split("#")[0] for name in race["finished"]} == {"snow", "fire"}
    assert s["budget_curves"]["unit"] == "CPU-h"
    assert s["budget_curves"]["poles"].startswith(("no crossing", "❄️", "🔥"))
    assert (out / "budget-sst2.png").stat().st_size > 1000
    table = (out / "table.md").read_text()
    assert "Tuned with 2 trials each" in table and "budget-sst2.png" in table


def test_a_rerun_trains_nothing_and_more_trials_train_only_the_new(
    tiny_bert_dir, tmp_path, monkeypatch
):
    import snowfire.finetune.trainer
    import snowfire.heads.trainer

    data = _data(tmp_path / "data")
    out = tmp_path / "out"
    first = _compare(tiny_bert_dir, data, out, trials=1)
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")}
    kept = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in _trial0_files(out)}
    trained = []
    real_fit, real_build = snowfire.heads.trainer._fit, snowfire.finetune.trainer.build_model
    monkeypatch.setattr(
        snowfire.heads.trainer, "_fit", lambda cfg, d: trained.append(cfg.out) or real_fit(cfg, d)
    )
    monkeypatch.setattr(  # built only for a run that trains (a finished one is read back)
        snowfire.finetune.trainer,
        "build_model",
        lambda cfg, spec: trained.append(cfg.out) or real_build(cfg, spec),
    )
    assert _compare(tiny_bert_dir, data, out, trials=1)["cells"] == first["cells"]
    assert trained == []
    _compare(tiny_bert_dir, data, out, trials=2)
    new = {str(out / arm / "sst2" / "trial1" / "seed0") for arm in ("snow", "fire")}
    assert set(trained) == new  # only trial 1 of each arm: trial 0 is read back
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())  # untouched
    # raced (the default): trial 0's runs weigh with their recorded predictions, byte for byte
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in _trial0_files(out)} == kept
    assert len(kept) > 10


def _trial0_files(out: Path) -> list[Path]:
    """Every file of every trial-0 run (lock files aside: held while a process looks)."""
    return sorted(p for p in out.glob("*/sst2/trial0/**/*") if p.is_file() and p.name != ".lock")


def _report_column(results, mode, column):
    """One column (1: gold, 2: predicted) of the chosen trial's report-split predictions."""
    chosen = results["tasks"]["sst2"]["search"][mode]["chosen"]
    run = next(c["run"] for c in results["cells"] if c["mode"] == mode and c.get("trial") == chosen)
    rows = (Path(run) / "predictions" / "dev.tsv").read_text().splitlines()[1:]
    return [r.split("\t")[column] for r in rows]


def test_permuted_report_labels_change_no_choice(tiny_bert_dir, tmp_path):
    data = _data(tmp_path / "data")
    other = permute_labels(data, tmp_path / "permuted")
    a = _compare(tiny_bert_dir, data, tmp_path / "a", trials=2)
    b = _compare(tiny_bert_dir, other, tmp_path / "b", trials=2)
    assert _choices(a) == _choices(b)
    sa, sb = a["tasks"]["sst2"], b["tasks"]["sst2"]
    assert (
        sa["search"]["fire"]["trials"]["0"]["select"]
        == sb["search"]["fire"]["trials"]["0"]["select"]
    )
    for mode in ("snow", "fire"):  # the same answers, weighed against other labels
        assert _report_column(a, mode, 2) == _report_column(b, mode, 2)
        assert _report_column(a, mode, 1) != _report_column(b, mode, 1)
