"""`snowfire finetune --grid MODE`: the paper tuned the rate and the epochs on dev; this tunes
them on the selection split (tasks/selection.py: dev where a labelled test split reports, else
a slice of train), so the split reported is never the one chosen on.
A FinetuneConfig with `grid` set is a grid (`train` runs it here; so does a finetune job):

    RUN/grid/lr=<rate>[-epochs=<e>]/   one ordinary 🔥 run per sub-run (resumable like any)
    RUN/grid.json                      every cell's selection score, the chosen cell, how it ran
    RUN/grid.md, RUN/grid.png          the same as a table and a plot (score by epochs)
    RUN/metrics.json, predictions/     the chosen cell's run, copied; config.json says so

A cell (rate r, epochs e) is what `snowfire finetune --lr r --epochs e` scores on the
selection split: its best epoch of up to e epochs. The rates are `grid_lrs` (default: the
recipe's), the epoch counts `grid_epochs` (default: 2, 3, 4); two ways (`grid`) to fill it:

    shared (default)  one run per rate with the largest epoch count; cell (r, e) is its best
                      selection score over epochs 1..e. Cheaper by a factor of len(epochs), but the
                      warm-up and decay span the largest count, so a cell with fewer epochs is
                      an approximation of its own run. The chosen cell is then trained as its
                      own run (reused when it is the largest count).
    exact             one run per cell.

The choice reads the selection split only (ties: the smaller rate, then fewer epochs); the
report split is never looked at.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    CONFIG,
    GRID,
    GRID_JSON,
    GRID_PLOT,
    GRID_TABLE,
    LOG,
    METRICS,
    PREDICTIONS,
    atomic_write,
    finished_or_refuse,
    hold_run,
    selection_scores,
    write_json,
)

from .config import GRID_FIELDS, FinetuneConfig
from .recipe import GRID_EPOCHS, RECIPES


def grid_values(cfg: FinetuneConfig) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """The rates (`grid_lrs`, else the recipe's) and epoch counts (`grid_epochs`, else
    GRID_EPOCHS, in increasing order) of the grid of `cfg`."""
    lrs = tuple(float(r) for r in cfg.grid_lrs or RECIPES[cfg.recipe_name].grid_lrs)
    return lrs, tuple(sorted(set(cfg.grid_epochs or GRID_EPOCHS)))


def _cell(cfg: FinetuneConfig, lr: float, epochs: int, run: Path) -> dict[str, Any]:
    """Train the run of one rate up to `epochs` (no early stop before): its metrics."""
    from .trainer import train

    plain: dict[str, Any] = dict.fromkeys(GRID_FIELDS)  # the cell's run is one run, not a grid
    return train(replace(cfg, **plain, lr=lr, epochs=epochs, patience=epochs, out=str(run)))


def _dev_by_epoch(run: Path, metric: str) -> dict[int, float]:
    """The run's score on its selection split after each epoch (RUN/log.jsonl)."""
    rows = [json.loads(line) for line in (run / LOG).read_text().splitlines() if line]
    return {r["epoch"]: selection_scores(r)[metric] for r in rows}


def _best_upto(curve: dict[int, float], e: int) -> float:
    seen = [v for k, v in curve.items() if k <= e and v == v]  # NaN (constant output) skipped
    return max(seen) if seen else float("nan")


def run_grid(cfg: FinetuneConfig) -> dict[str, Any]:
    """Fill the grid of `cfg` (`grid` set), pick on the selection split, write RUN (see the
    module doc); the chosen run's metrics. RUN is held for the whole grid (rundir.hold_run);
    a finished grid of the same config is returned as it is, another refused
    (rundir.finished_or_refuse)."""
    if cfg.grid is None:
        raise ValueError("run_grid: the config asks for no grid (FinetuneConfig.grid is None)")
    with hold_run(cfg.out):
        done = finished_or_refuse(cfg.out, cfg, ("grid", "base"))
        if done is not None:
            return done
        return _fill(cfg)


def _fill(cfg: FinetuneConfig) -> dict[str, Any]:

    lrs, epochs = grid_values(cfg)
    exact = cfg.grid == "exact"
    metric = cfg.spec.metric
    out = Path(cfg.out)
    cells: list[dict[str, Any]] = []
    runs: dict[tuple[float, int], Path] = {}
    for lr in lrs:
        if exact:
            for e in epochs:
                run = out / GRID / f"lr={lr:g}-epochs={e}"
                _cell(cfg, lr, e, run)
                runs[lr, e] = run
                cells.append(
                    {"lr": lr, "epochs": e, "selection": _best_upto(_dev_by_epoch(run, metric), e)}
                )
            continue
        top = max(epochs)
        run = out / GRID / f"lr={lr:g}"
        _cell(cfg, lr, top, run)
        runs[lr, top] = run
        curve = _dev_by_epoch(run, metric)
        cells += [{"lr": lr, "epochs": e, "selection": _best_upto(curve, e)} for e in epochs]
    scored = [c for c in cells if c["selection"] == c["selection"]]
    if not scored:
        raise RuntimeError(
            f"grid of {out}: no cell has a selection {metric} (every run predicted a constant)"
        )
    chosen = max(scored, key=lambda c: (c["selection"], -c["lr"], -c["epochs"]))
    key = (chosen["lr"], chosen["epochs"])
    if key not in runs:  # shared mode, fewer epochs than the rate's run: train the cell itself
        run = out / GRID / f"lr={key[0]:g}-epochs={key[1]}"
        _cell(cfg, *key, run)
        runs[key] = run
    chosen_run = runs[key]
    metrics = json.loads((chosen_run / METRICS).read_text())
    record = {
        "metric": metric,
        "mode": cfg.grid,
        "lrs": list(lrs),
        "epochs": list(epochs),
        "cells": cells,
        "chosen": {
            **chosen,
            "run": str(chosen_run),
            "selection_of_its_run": max(_dev_by_epoch(chosen_run, metric).values()),
        },
    }
    _write(out, cfg, record, chosen_run, metrics)
    return metrics


def _write(out: Path, cfg: FinetuneConfig, record, chosen_run: Path, metrics) -> None:
    write_json(out / GRID_JSON, record)
    atomic_write(out / GRID_TABLE, grid_table(record))
    _plot(record, out / GRID_PLOT)
    if (out / PREDICTIONS).exists():
        shutil.rmtree(out / PREDICTIONS)
    shutil.copytree(chosen_run / PREDICTIONS, out / PREDICTIONS)
    info = json.loads((chosen_run / CONFIG).read_text())
    info["grid"] = {k: v for k, v in record.items() if k != "cells"} | {"base": cfg.to_json()}
    write_json(out / CONFIG, info)
    write_json(out / METRICS, metrics)  # last: its presence says the grid is done


def grid_table(record: dict[str, Any]) -> str:
    """Markdown: one row per rate, one column per epoch count, selection scores x100, the
    chosen bold."""
    chosen = record["chosen"]
    head = "| rate \\ epochs | " + " | ".join(str(e) for e in record["epochs"]) + " |"
    lines = [head, "|" + " --- |" * (len(record["epochs"]) + 1)]
    for lr in record["lrs"]:
        row = []
        for e in record["epochs"]:
            (cell,) = [c for c in record["cells"] if c["lr"] == lr and c["epochs"] == e]
            text = f"{100 * cell['selection']:.1f}"
            row.append(f"**{text}**" if (lr, e) == (chosen["lr"], chosen["epochs"]) else text)
        lines.append(f"| {lr:g} | " + " | ".join(row) + " |")
    return (
        f"selection-split {record['metric']} by peak rate and epochs ({record['mode']} grid); "
        f"chosen: rate {chosen['lr']:g}, {chosen['epochs']} epochs\n\n" + "\n".join(lines) + "\n"
    )


def _plot(record: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for lr in record["lrs"]:
        cells = sorted((c for c in record["cells"] if c["lr"] == lr), key=lambda c: c["epochs"])
        ax.plot(
            [c["epochs"] for c in cells],
            [100 * c["selection"] for c in cells],
            "o-",
            label=f"{lr:g}",
        )
    chosen = record["chosen"]
    ax.plot([chosen["epochs"]], [100 * chosen["selection"]], "k*", markersize=14, label="chosen")
    ax.set_xlabel("epochs")
    ax.set_ylabel(f"selection-split {record['metric']} (x100)")
    ax.set_xticks(record["epochs"])
    ax.legend(title="peak rate", fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
