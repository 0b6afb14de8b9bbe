"""The report of `snowfire compare`: results.json (every cell), table.md (Table 2's layout with
the paper's rows beside ours and the zero-training baseline, then per task the heads, the verdict
and the cost), table.png, layer_weights.png."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    CONFIG,
    GRID,
    LAYER_PLOT,
    LOG,
    RESULTS,
    TABLE,
    TABLE_PLOT,
    WEIGHTS,
    atomic_write,
    write_json,
)

from .arms import fine_tuning_arms, why_not
from .arms_report import cost_file, plot_cost
from .budget import BUDGETS
from .budget_report import budget_file, budget_section, plot_budget
from .cell import Cell, Mode
from .config import CompareConfig
from .forecast_report import budget_forecast, check_forecasts
from .hostload import shared_cores
from .judge import cell_roles, judge
from .plots import plot_bars, plot_layers, plot_task_curves
from .race_report import race_section
from .search import draw
from .starts import starts_section
from .table import curves_file, table
from .trials import choose
from .verdict import BUDGET_LIMITED, mean_sd


def _params_snow(run: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(run / WEIGHTS), "np") as f:
        return int(sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys()))


def _cost(cell: Cell) -> dict[str, Any]:
    """Wall time, training examples per second and trainable parameters of a finished run."""
    run = Path(cell.run)
    config = json.loads((run / CONFIG).read_text())
    seconds = float(config.get("seconds", 0.0))
    if "grid" in config:  # 🔥 tuned: the chosen run's log, the whole grid's time
        sub_runs = [json.loads(p.read_text()) for p in run.glob(f"{GRID}/*/{CONFIG}")]
        seconds = sum(float(c.get("seconds", 0.0)) for c in sub_runs)
        run = Path(config["grid"]["chosen"]["run"])
    epochs = sum(1 for line in (run / LOG).read_text().splitlines() if line)
    if cell.mode.side is Mode.SNOW:
        n_train = config.get("train_examples", config.get("featureset", {}).get("num_examples", 0))
        # recorded by the run (a run from before they were: read off its weights)
        params = config.get("parameters") or _params_snow(run)
        kept = config.get("cost", {}).get("saved_bytes") or (run / WEIGHTS).stat().st_size
    else:  # a grid's RUN/config.json is its chosen run's, with "grid" added
        n_train = config["num_examples"]["train"]
        params = sum(g["parameters"] for g in config["layer_groups"])
        kept = config.get("cost", {}).get("saved_bytes")
    rate = round(n_train * epochs / seconds, 1) if seconds else None
    peak = config.get("cost", {}).get("peak_rss_mb")
    return {
        "seconds": seconds,
        "epochs": epochs,
        "params": params,
        "examples_per_s": rate,
        "saved_bytes": kept,
        "peak_rss_mb": peak,
        # measured in a process that trained nothing before (a run before the field: unknown)
        "peak_rss_own": config.get("cost", {}).get("peak_rss_own", False),
    }


def cost_of(cells: list[Cell]) -> dict[str, Any]:
    """One side's cost over its seeds: time, epochs and examples/s are the seeds' means, peak
    memory their highest (`peak_rss_own`: every seed's measured in a process of its own);
    parameters and bytes kept are one run's (the same in every seed)."""
    each = [_cost(c) for c in cells]
    out = dict(each[0])
    for key in ("seconds", "epochs", "examples_per_s"):
        known = [c[key] for c in each if c[key] is not None]
        out[key] = sum(known) / len(known) if known else None
    if out["examples_per_s"] is not None:
        out["examples_per_s"] = round(out["examples_per_s"], 1)
    peaks = [c["peak_rss_mb"] for c in each if c.get("peak_rss_mb") is not None]
    out["peak_rss_mb"] = max(peaks) if peaks else None
    out["peak_rss_own"] = all(c.get("peak_rss_own", False) for c in each)
    out["seeds"] = len(each)
    return out


def task_hours(cells: list[Cell], extraction: dict[str, Any]) -> dict[str, Any]:
    """What a task cost in all: its extraction and every cell of every seed and arm (a 🔥 grid:
    all its runs), in wall hours and, where the runs recorded it, CPU hours (every thread)."""
    wall, cpu = extraction.get("seconds", 0.0), extraction.get("cpu_seconds", 0.0)
    known = "cpu_seconds" in extraction or not extraction.get("splits")  # none made: in store
    for cell in cells:
        run = Path(cell.run)
        runs = list(run.glob(f"{GRID}/*/{CONFIG}")) or [run / CONFIG]
        for path in runs:
            config = json.loads(path.read_text())
            wall += float(config.get("seconds", 0.0))
            got = config.get("cost", {}).get("cpu_seconds")
            known, cpu = known and got is not None, cpu + (got or 0.0)
    return {
        "wall_hours": round(wall / 3600, 2),
        "cpu_hours": round(cpu / 3600, 2) if known else None,
    }


def summarise(
    cfg: CompareConfig, cells: list[Cell], baselines=None, extraction=None, races=None
) -> dict[str, Any]:
    """Per task: the splits it selected and reported on (the honest protocol), each ❄️ head's
    mean and sd on both, the best head (chosen on the selection split), 🔥 and the arms, each
    side's optimism gap (selection − report), Δ, verdict, and the zero-training baseline's
    scores (compare/baseline.py) where the task has one."""
    out = {}
    for task in cfg.names:
        metric = cfg.specs[task].metric
        mine = [c for c in cells if c.task == task and c.mode is not Mode.PROBE]
        protocol = cell_roles(mine)
        shown = list(dict.fromkeys([protocol["selection"], protocol["report"]]))

        def scores(cs, split, metric=metric):
            return [c.metrics[split][metric] for c in cs if split in c.metrics]

        def side(cs, shown=shown):
            return {s: mean_sd(scores(cs, s)) for s in shown if scores(cs, s)}

        chosen_on = protocol["selection"]
        arms = {a: [c for c in mine if c.mode == Mode(a)] for a in fine_tuning_arms(cfg.arms)}
        arms = {a: cs for a, cs in arms.items() if cs}
        kind = cfg.specs[task].kind
        not_run = {
            a: why
            for a in fine_tuning_arms(cfg.arms)
            if (why := why_not(a, task, kind, cfg.intermediate))
        }
        search: dict[str, Any] = {}
        if cfg.trials:  # each arm's best trial on the selection split (compare/trials.py)
            every = {"snow": [c for c in mine if c.mode is Mode.SNOW]}
            every |= {"fire": [c for c in mine if c.mode is Mode.FIRE]} | arms
            search = {a: choose(cs, chosen_on, metric) for a, cs in every.items()}
            snow, fire = search["snow"]["cells"], search["fire"]["cells"]
            arms = {a: search[a]["cells"] for a in arms}
            best = snow[0].head
            heads = {best: side(snow)}
        else:
            heads = {}
            for head in cfg.heads_for(task):
                heads[head] = side([c for c in mine if c.mode is Mode.SNOW and c.head == head])
            best = max(heads, key=lambda h: heads[h][chosen_on][0])  # the selection's call
            snow = [c for c in mine if c.mode is Mode.SNOW and c.head == best]
            fire = [c for c in mine if c.mode is Mode.FIRE]
        sides = {"snow": side(snow), "fire": side(fire)} | {a: side(cs) for a, cs in arms.items()}
        out[task] = {
            "metric": metric,
            "protocol": protocol,
            "heads": heads,
            "best_head": best,
            "snow": sides["snow"],
            "fire": sides["fire"],
            "optimism": {k: _optimism(v, protocol) for k, v in sides.items()},
            "cost": {"snow": cost_of(snow), "fire": cost_of(fire)}
            | {a: cost_of(cs) for a, cs in arms.items()},
            "arms": {a: sides[a] for a in arms},
            "not_run": not_run,  # arms that do not apply to the task, and why
        }
        base = (baselines or {}).get(task)
        if base:
            out[task]["baseline"] = {"method": base["method"]} | {
                s: base[s][metric] for s in ("dev", "test") if s in base
            }
        out[task]["verdict"] = judge(cfg.specs[task], snow, fire, base, arms=arms)
        if out[task]["verdict"]["verdict"] == BUDGET_LIMITED:  # a stated forecast instead
            out[task]["verdict"]["forecast"] = budget_forecast(out[task]["verdict"])
        if search:
            probes = [c for c in cells if c.task == task and c.mode is Mode.PROBE]
            out[task]["search"] = {
                a: {"chosen": r["chosen"], "config": draw(a, r["chosen"]), "trials": r["trials"]}
                for a, r in search.items()
            }
            out[task]["budget_curves"] = budget_section(
                search, every, probes, protocol, (extraction or {}).get(task, {})
            )
            if out[task]["budget_curves"]["poles"]:
                out[task]["verdict"]["budget"] = out[task]["budget_curves"]["poles"]
        out[task]["hours"] = task_hours(mine, (extraction or {}).get(task, {}))
        every_run = [c for c in cells if c.task == task]  # lpft's probes were timed too
        # OUT/load.jsonl (compare/hostload.py): which attempts were timed beside other work
        out[task]["hours"]["shared_cores"] = shared_cores(cfg.out, every_run)
        if starts := starts_section(cfg, every_run):  # seq's and lpft's runs, by what they
            out[task]["starts"] = starts  # started from: the same weights as their paths now?
        if (races or {}).get(task):  # who the race stopped, when, on what evidence
            out[task]["race"] = race_section(races[task], snow, fire)
    return out


def _timing(timing, summary: dict[str, Any]) -> dict[str, Any]:
    """A time budget's plan beside what the comparison then cost (CPU-h from the runs)."""
    spent = [s["hours"]["cpu_hours"] for s in summary.values()]
    measured = round(sum(spent), 4) if all(h is not None for h in spent) else None
    return timing.to_json() | {"measured_hours": measured}


def _optimism(scores: dict[str, tuple], protocol: dict[str, Any]) -> float | None:
    """A side's optimism gap: its mean on the selection split minus its mean on the report
    split (None where they are one split: the old protocol's number holds its optimism)."""
    if not protocol["honest"]:
        return None
    chosen, reported = scores.get(protocol["selection"]), scores.get(protocol["report"])
    if chosen is None or reported is None:
        return None
    return chosen[0] - reported[0]


def _earlier(cfg: CompareConfig) -> list[tuple[str, dict[str, Any]]]:
    """(source, results.json) of the runs whose forecasts this one may measure: --forecast-from
    (an OUT or its results.json), then OUT's own results.json before it is rewritten."""
    paths = [Path(cfg.forecast_from)] if cfg.forecast_from else []
    paths = [p / RESULTS if p.is_dir() else p for p in paths] + [Path(cfg.out) / RESULTS]
    return [(str(p), json.loads(p.read_text())) for p in paths if p.is_file()]


def write_report(
    cfg: CompareConfig, cells, extraction, baselines=None, timing=None, races=None
) -> dict[str, Any]:
    from snowfire.cache import versions
    from snowfire.options import threads_record
    from snowfire.tasks import describe

    out = Path(cfg.out)
    summary = summarise(cfg, cells, baselines, extraction, races)
    check_forecasts(summary, _earlier(cfg))  # a smaller run's forecast, measured here
    identity = None
    fire_config = Path(next(c.run for c in cells if c.mode is Mode.FIRE)) / CONFIG
    snow_config = Path(next(c.run for c in cells if c.mode is Mode.SNOW)) / CONFIG
    if snow_config.is_file():
        identity = json.loads(snow_config.read_text())["featureset"]["encoder"]
    results = {
        "config": cfg.to_json(),
        "budget": BUDGETS[cfg.named_budget].to_json(),
        "encoder": identity,
        "versions": versions(),
        "threads": threads_record(),  # this process's; each cell's run records its own
        "extraction": extraction,
        "baselines": baselines or {},
        # each task as resolved: kind, labels, metric, every split file's path and sha256
        "task_specs": {name: describe(spec, cfg.data) for name, spec in cfg.specs.items()},
        "tasks": summary,
        "cells": [c.to_json() for c in cells],
        **({"time_budget": _timing(timing, summary)} if timing is not None else {}),
        "fire_example_config": str(fire_config),
    }
    write_json(out / RESULTS, results)
    atomic_write(out / TABLE, table(cfg, summary, extraction))
    plot_bars(cfg, summary, out / TABLE_PLOT)
    plot_layers(cfg, summary, cells, out / LAYER_PLOT)
    for task, s in summary.items():
        plot_task_curves(cfg, task, s, out / curves_file(task))
        if "budget_curves" in s:
            plot_budget(task, s["metric"], s["budget_curves"], out / budget_file(task))
        if len(cfg.arms) > 2:
            plot_cost(cfg, task, s, out / cost_file(task))
    return {
        "table": str(out / TABLE),
        "results": str(out / RESULTS),
        "verdicts": {t: s["verdict"]["text"] for t, s in summary.items()},
    }
