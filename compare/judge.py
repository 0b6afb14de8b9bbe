"""One task's verdict from its finished cells: the evidence compare/report.py shows.

split      test where every cell scored a labelled test split, else dev
bootstrap  every seed's predictions on that split (RUN/predictions/<split>.tsv), and the
           zero-training baseline's where the task has one (compare/baseline.py), weighed
           by compare/interval.py's paired bootstrap (`verdict.weigh`)
curves     every cell's dev score per epoch (RUN/log.jsonl), marked by
           compare/convergence.py against the epochs the cell was allowed
restarts   each side's seeds' spread and degenerate restarts (compare/restarts.py)
verdict    `verdict.task_verdict`: no call from a cell still improving, the zero-training
           words where neither side beats it, else the call from Δ's 95% interval
arms       each other arm (--arms) in the same bootstrap: its score, its Δ against ❄️ and
           against 🔥 with their 95% intervals, its curves and whether every cell converged
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from snowfire.rundir import CONFIG, prediction_file

from .cell import Cell
from .convergence import RACED, STILL_IMPROVING, mark_curve, read_curve
from .restarts import restart_spread
from .verdict import BASELINE_WORDS, task_verdict, weigh

#: The level a restart that learned nothing sits at, per metric (classification: the majority
#: label's score, from the baseline): a correlation, MCC or span F1 of a model that learned
#: nothing is 0.
_ZERO_FLOOR = ("pearson", "spearman", "matthews", "span_f1")


def cell_roles(cells: list[Cell]) -> dict[str, Any]:
    """The split the cells selected on and the one they report (each run's config.json
    "roles", tasks/selection.py), and whether the two differ ("honest"); every cell must agree.
    Runs made before the honest protocol selected on dev: they report test when every cell has
    a labelled test score, else dev (then selected and reported on one split)."""
    found = set()
    for cell in cells:
        config = json.loads((Path(cell.run) / CONFIG).read_text())
        roles = config.get("roles")
        if roles is None:
            every_test = all("test" in (c.metrics or {}) for c in cells)
            roles = {"selection": "dev", "report": "test" if every_test else "dev"}
        found.add((roles["selection"], roles["report"]))
    if len(found) != 1:
        raise ValueError(
            f"the cells of one task disagree on their splits (selection, report): "
            f"{sorted(found)}; rerun them with one --selection"
        )
    ((selection, report),) = found
    return {"selection": selection, "report": report, "honest": selection != report}


def eval_split(cells: list[Cell]) -> str:
    """The split a verdict weighs: the cells' report split (`cell_roles`)."""
    return cell_roles(cells)["report"]


def _config_of(cell: Cell) -> tuple[Path, dict]:
    """The run whose log is the cell's curve (a 🔥 grid: its chosen run) and its config."""
    run = Path(cell.run)
    config = json.loads((run / CONFIG).read_text())
    if "grid" in config:
        run = Path(config["grid"]["chosen"]["run"])
        config = json.loads((run / CONFIG).read_text())
    return run, config


def convergence(cell: Cell, metric: str):
    """The cell's learning curve and its `Convergence`; a run the race ended early
    (RUN/config.json "stopped_at") is marked RACED whatever its curve did."""
    run, config = _config_of(cell)
    made = config.get("train") or config.get("finetune") or {}  # ❄️'s or 🔥's config
    cap = float(made["epochs"]) if made.get("epochs") is not None else None
    curve = read_curve(run, metric)
    mark = mark_curve(curve, cap=cap)
    stopped = config.get("stopped_at")
    if stopped is not None:
        rising = ", still rising there" if mark.status == STILL_IMPROVING else ""
        why = f"ended by the race at epoch {stopped} of {cap:g}{rising} (compare/racing.py)"
        mark = replace(mark, status=RACED, reason=why)
    return curve, mark


def _predictions(cells: list[Cell], split: str, kind: str) -> tuple[list, list[list]]:
    """Gold (from the first cell) and each cell's predictions on `split`; every cell must have
    scored the same examples in the same order."""
    from snowfire.tasks import read_predictions

    gold, preds = None, []
    for cell in cells:
        path = prediction_file(cell.run, split)
        g, p = read_predictions(path, kind)
        if gold is None:
            gold = g
        elif g != gold:
            raise ValueError(
                f"{path}: its gold answers differ from {cells[0].run}'s on "
                f"{split}: the cells did not score the same examples"
            )
        preds.append(p)
    assert gold is not None  # one cell at least: each side has its seeds
    return gold, preds


def judge(
    spec,
    snow: list[Cell],
    fire: list[Cell],
    baseline: dict | None,
    replicates: int | None = None,
    arms: dict[str, list[Cell]] | None = None,
) -> dict[str, Any]:
    """The task's verdict (see the module docstring) from its best ❄️ head's cells and its 🔥
    cells, each a finished `Cell` of compare/run.py (its run, seed and metrics); `arms`: the
    other arms' cells by arm."""
    arms = arms or {}
    split = eval_split(snow + fire + [c for cells in arms.values() for c in cells])
    metric = spec.metric
    gold, snow_preds = _predictions(snow, split, spec.kind)
    _, fire_preds = _predictions(fire, split, spec.kind)
    others = {arm: _predictions(cells, split, spec.kind)[1] for arm, cells in arms.items()}
    base_preds = (baseline or {}).get("predictions", {}).get(split)
    words = BASELINE_WORDS.get(spec.kind) if base_preds is not None else None
    boot = weigh(
        metric,
        gold,
        snow_preds,
        fire_preds,
        baseline=base_preds,
        replicates=replicates,
        others=others,
    )
    curves = {}
    marks = {}
    for side, cells in (("snow", snow), ("fire", fire)):
        pairs = [convergence(c, metric) for c in cells]
        curves[side] = [
            {"seed": c.seed, "curve": curve, **mark.to_json()}
            for c, (curve, mark) in zip(cells, pairs, strict=True)
        ]
        marks[side] = [mark for _, mark in pairs]
    out = task_verdict(boot, marks["snow"], marks["fire"], baseline=words)
    floor = (
        boot.point["baseline"]
        if spec.kind == "classification" and base_preds is not None
        else 0.0
        if metric in _ZERO_FLOOR
        else None
    )
    out["restarts"] = {
        side: restart_spread(boot.scores[side], floor=floor) for side in ("snow", "fire")
    }
    icon = {"snow": "❄️", "fire": "🔥"}
    degenerate = [
        f"{icon[side]} seed {j} degenerate ({why})"
        for side, r in out["restarts"].items()
        for j, why in r["why"].items()
    ]
    if degenerate:
        out["notes"] = [*out["notes"], *degenerate]
        out["text"] = f"{out['verdict']} ({'; '.join(out['notes'])})"
    out.update(split=split, metric=metric, curves=curves)
    out["arms"] = {arm: _arm(boot, arm, cells, metric) for arm, cells in arms.items()}
    return out


def _arm(boot, arm: str, cells: list[Cell], metric: str) -> dict[str, Any]:
    """One arm's evidence: its seeds' mean and scores, Δ against ❄️ and 🔥 (arm − side) with
    the 95% interval, its curves and their marks."""
    pairs = [convergence(c, metric) for c in cells]
    return {
        "score": boot.point[arm],
        "scores": boot.scores[arm],
        "vs_snow": boot.interval("snow", arm).to_json(),
        "vs_fire": boot.interval("fire", arm).to_json(),
        "converged": all(mark.converged for _, mark in pairs),
        "curves": [
            {"seed": c.seed, "curve": curve, **mark.to_json()}
            for c, (curve, mark) in zip(cells, pairs, strict=True)
        ],
    }
