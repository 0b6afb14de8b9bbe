"""A task's answer as a function of budget (`compare --trials N`): each arm's budget curve from
its trials (compare/budget_curve.py: the expected report-split score of the trial a user tuning
n trials would pick on the selection split), against trials and against compute, and the
budget where the leader changes.

Compute is what each trial's runs recorded (config.json `cost`): CPU-seconds of every thread
on CPU, wall seconds on a GPU (GPU-seconds), summed over the trial's seeds and, for arm lpft,
its probe's; ❄️ pays the task's extraction once (`fixed`). Shown in hours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snowfire.rundir import CONFIG, atomic_write

from .arms import ARM_NAMES, plain
from .budget_curve import BudgetCurve, budget_curve, crossings, describe_crossings
from .cell import Cell, Mode
from .logaxis import plain_log_x

#: Bootstrap replicates of a curve's band.
BAND_REPLICATES = 1000


def _run_cost(run: str) -> tuple[float, bool]:
    """(seconds of compute, whether on a GPU) of one finished run."""
    config = json.loads((Path(run) / CONFIG).read_text())
    cost = config.get("cost", {})
    if "peak_gpu_mb" in cost:
        return float(config.get("seconds", 0.0)), True
    return float(cost.get("cpu_seconds") or 0.0), False


def trial_costs(cells: list[Cell], probes: list[Cell]) -> tuple[dict[int, float], bool]:
    """Each trial's compute in seconds (its seeds' runs and their lpft probes), and whether any
    ran on a GPU."""
    out: dict[int, float] = {}
    gpu = False
    for cell in [*cells, *probes]:
        seconds, on_gpu = _run_cost(cell.run)
        assert cell.trial is not None
        out[cell.trial] = out.get(cell.trial, 0.0) + seconds
        gpu = gpu or on_gpu
    return out, gpu


def budget_section(
    arms: dict[str, dict[str, Any]],
    arm_cells: dict[str, list[Cell]],
    probes: list[Cell],
    protocol: dict[str, Any],
    extraction: dict[str, Any],
) -> dict[str, Any]:
    """results.json's `budget_curves` of one task: per arm its curve (n, mean, band,
    compute in hours), the unit, and the crossings of the leader (all arms; and ❄️ vs 🔥).

    arms: per arm compare/trials.choose's record (each trial's mean scores per split)."""
    curves: dict[str, BudgetCurve] = {}
    gpu_any = False
    for arm, record in arms.items():
        ks = sorted(record["trials"])
        select = [record["trials"][k][protocol["selection"]] for k in ks]
        report = [record["trials"][k][protocol["report"]] for k in ks]
        mine = [p for p in probes if arm == Mode.LPFT.value]
        costs, gpu = trial_costs(arm_cells[arm], mine)
        gpu_any = gpu_any or gpu
        fixed = float(extraction.get("cpu_seconds", 0.0)) if arm == Mode.SNOW.value else 0.0
        curves[arm] = budget_curve(
            select,
            report,
            [costs[k] / 3600 for k in ks],
            fixed=fixed / 3600,
            boot=BAND_REPLICATES,
        )
    unit = "GPU-h" if gpu_any else "CPU-h"
    names = {a: ARM_NAMES[a] for a in curves}
    poles = {a: c for a, c in curves.items() if a in ("snow", "fire")}
    return {
        "unit": unit,
        "curves": {a: c.to_json() for a, c in curves.items()},
        "crossings": [
            {"at": x, "before": a, "after": b} for x, a, b in crossings(curves) if len(curves) > 1
        ],
        "poles": describe_crossings(poles, names, unit) if len(poles) == 2 else None,
        "leader": describe_crossings(curves, names, unit) if len(curves) > 1 else None,
    }


def budget_file(task: str) -> str:
    """A task's budget-curve plot, relative to OUT."""
    return f"budget-{task}.png"


def plot_budget(task: str, metric: str, section: dict[str, Any], path: Path) -> None:
    """Left: each arm's expected best report score against trials n, with its 95% band;
    right: the same against compute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (by_n, by_cost) = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for arm, c in section["curves"].items():
        label = plain(arm)
        mean = [100 * v for v in c["mean"]]
        low, high = [100 * v for v in c["low"]], [100 * v for v in c["high"]]
        (line,) = by_n.plot(c["n"], mean, "o-", label=label)
        by_n.fill_between(c["n"], low, high, alpha=0.15, color=line.get_color())
        by_cost.step(c["compute"], mean, where="post", color=line.get_color())
        by_cost.plot(c["compute"], mean, "o", color=line.get_color())
    by_n.set_xlabel("trials n")
    by_n.xaxis.set_major_locator(MaxNLocator(integer=True))  # n is a count of trials
    by_n.set_ylabel(f"expected best {metric} (x100), report split")
    by_n.legend(fontsize=7)
    by_cost.set_xlabel(f"compute ({section['unit']}, log)")
    plain_log_x(by_cost)
    fig.suptitle(f"{task}: the answer as a function of budget", fontsize=10)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
