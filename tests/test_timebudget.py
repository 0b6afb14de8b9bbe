"""`compare --budget 2h` (compare/timebudget.py): the trials per arm that fit a budget, planned
from one measured trial of every arm, by hand and end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from snowfire.compare.config import named_budget, time_budget
from snowfire.compare.timebudget import MAX_TRIALS, plan_trials


@pytest.mark.parametrize(
    "text, hours", [("2h", 2.0), ("1.5h", 1.5), ("90m", 1.5), (" 30m ", 0.5), ("0h", None)]
)
def test_a_time_budget_reads_as_hours(text, hours):
    assert time_budget(text) == hours
    assert named_budget(text) == ("standard" if hours else text)


def test_named_budgets_are_not_times():
    assert time_budget("quick") is None and named_budget("full") == "full"


def test_the_plan_by_hand():
    per = {"stsb": {"snow": 0.05, "fire": 0.25}, "mrpc": {"snow": 0.1, "fire": 0.6}}  # 1.0 a round
    plan = plan_trials(5.0, 1.2, per)
    assert plan.trials == 1 + math.floor((5.0 - 1.2) / 1.0) == 4
    assert plan.forecast == pytest.approx(1.2 + 3 * 1.0)
    assert plan.describe().startswith("budget 5 CPU-h: 1.20 spent")
    assert plan_trials(0.5, 1.2, per).trials == 1  # the calibration already spent more
    assert plan_trials(1e6, 0.0, per).trials == MAX_TRIALS


def test_impossible_plans_are_refused():
    with pytest.raises(ValueError, match=r"expected hours > 0, got 0"):
        plan_trials(0, 0, {"t": {"snow": 1.0}})
    with pytest.raises(ValueError, match="recorded no compute"):
        plan_trials(1, 0, {"t": {"snow": 0.0}})


def test_a_bad_budget_is_refused_naming_the_forms(tmp_path):
    from snowfire.compare import CompareConfig

    with pytest.raises(ValueError, match=r"CompareConfig.budget: expected one of quick, "):
        CompareConfig(encoder="minilm", tasks=["sst2"], data="d", out=str(tmp_path), budget="2d")


@pytest.mark.slow
def test_a_time_budget_runs_the_trials_it_planned(tiny_bert_dir, tmp_path):
    from snowfire.cli.main import main as run_cli
    from tests.helpers.tasks import write_sst2

    data = write_sst2(tmp_path / "data", sizes=(("train", 32), ("dev", 12)))
    out = tmp_path / "out"
    argv = ["compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "sst2", "--data", str(data)]
    assert run_cli([*argv, "--out", str(out), "--budget", "0.02m", "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    plan = results["time_budget"]
    assert plan["hours"] == pytest.approx(0.02 / 60) and plan["unit"] == "CPU-h"
    one_round = sum(plan["per_trial"]["sst2"].values())
    expected = 1 + max(0, math.floor((plan["hours"] - plan["spent_before_planning"]) / one_round))
    assert plan["trials"] == min(expected, 64) >= 1
    for arm in ("snow", "fire"):
        made = sorted(p.name for p in (Path(out) / arm / "sst2").glob("trial*"))
        assert len(made) == plan["trials"]
    assert results["config"]["trials"] == plan["trials"]
    assert plan["measured_hours"] is not None
