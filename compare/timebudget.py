"""`snowfire compare --budget 2h`: as many trials per arm as fit a budget of compute.

The budget is compute as the runs measure it (compare/budget_report.py): CPU-hours of every
thread on CPU, GPU-hours on a GPU. Every arm gets the same number of trials N (equal tuning
effort), planned from what one trial of each arm costs on each task:

  1. calibrate: trial 0 of every arm on every task, one seed (trials of the search, not a
     separate probe: they count among the N, and a rerun reads them back);
  2. per-trial cost c_(task, arm): the measured compute of that trial (its lpft probe too);
  3. spent S: the extraction and the calibration;
  4. N = 1 + floor((B − S) / Σ c), at least 1, at most MAX_TRIALS; the forecast of the whole
     comparison is S + (N − 1) Σ c.

The plan is printed before the rest runs and recorded in results.json (`time_budget`), with
what the comparison then really cost, so the forecast can be checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .budget_report import trial_costs
from .cell import Cell, Mode

#: The most trials a time budget plans per arm (a budget that would buy more is reported).
MAX_TRIALS = 64


@dataclass(frozen=True)
class TrialPlan:
    """A time budget's plan: trials per arm, and its forecast (hours)."""

    hours: float
    spent: float  # hours spent before planning: extraction and calibration
    per_trial: dict[str, dict[str, float]]  # task -> arm -> hours of one trial
    trials: int
    forecast: float  # hours of the whole comparison if every trial costs its calibration's
    unit: str

    def to_json(self) -> dict[str, Any]:
        return {
            "hours": self.hours,
            "unit": self.unit,
            # unrounded: the plan is recomputed from these (a budget of minutes is 1e-4 h)
            "spent_before_planning": self.spent,
            "per_trial": self.per_trial,
            "trials": self.trials,
            "forecast_hours": self.forecast,
        }

    def describe(self) -> str:
        one = sum(h for arms in self.per_trial.values() for h in arms.values())
        return (
            f"budget {self.hours:g} {self.unit}: {self.spent:.2f} spent on extraction and one "
            f"trial of every arm ({one:.2f} {self.unit} a round of trials); {self.trials} "
            f"trial(s) per arm, about {self.forecast:.2f} {self.unit} in all"
        )


def plan_trials(
    hours: float, spent: float, per_trial: dict[str, dict[str, float]], unit: str = "CPU-h"
) -> TrialPlan:
    """The number of trials per arm that fits `hours` (see the module docstring)."""
    if hours <= 0:
        raise ValueError(f"a time budget: expected hours > 0, got {hours}")
    round_cost = sum(h for arms in per_trial.values() for h in arms.values())
    if round_cost <= 0:
        raise ValueError("a time budget: the calibration trials recorded no compute")
    more = max(0, math.floor((hours - spent) / round_cost))
    trials = min(1 + more, MAX_TRIALS)
    return TrialPlan(hours, spent, per_trial, trials, spent + (trials - 1) * round_cost, unit)


def calibration_costs(
    cells: list[Cell], extraction: dict[str, dict[str, Any]]
) -> tuple[float, dict[str, dict[str, float]], str]:
    """(hours spent, hours of one trial per task and arm, unit) from the finished trial-0
    cells and the tasks' extraction records."""
    per: dict[str, dict[str, float]] = {}
    gpu = False
    for task in dict.fromkeys(c.task for c in cells):
        mine = [c for c in cells if c.task == task]
        probes = [c for c in mine if c.mode is Mode.PROBE]
        for mode in dict.fromkeys(c.mode for c in mine if c.mode.is_arm):
            arm = [c for c in mine if c.mode is mode]
            costs, on_gpu = trial_costs(arm, probes if mode is Mode.LPFT else [])
            gpu = gpu or on_gpu
            per.setdefault(task, {})[mode.value] = sum(costs.values()) / len(costs) / 3600
    spent = sum(float(e.get("cpu_seconds", 0.0)) for e in extraction.values()) / 3600
    spent += sum(h for arms in per.values() for h in arms.values())
    return spent, per, "GPU-h" if gpu else "CPU-h"
