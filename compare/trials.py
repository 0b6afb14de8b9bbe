"""`snowfire compare --trials N`: every arm tuned with the same effort. Trial k of an arm is
the k-th draw of its search space (compare/search.py), the same configuration on every task
and seed; it runs as its own cells, one per seed, and each arm keeps the trial with the best
mean score on the selection split (the report split never decides). Every trial's scores and
cost then draw the arm's budget curve (compare/budget_curve.py).

    OUT/snow/<task>/trial<k>/seed<s>/               ❄️ trial k (its head is part of the draw)
    OUT/<arm>/<task>/trial<k>/seed<s>/              🔥 and the other arms
    OUT/snow/<task>/probe-cls/trial<k>/seed<s>/     arm lpft's probe of trial k (tagging:
                                                    probe-word, each word's first piece)
    OUT/<arm>/<task>/epochs-x<K>/trial<k>/seed<s>/  under --epochs-scale K > 1 (not the probe)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .arms import fine_tuning_arms, probe_recipe, why_not
from .cell import Cell, Mode
from .config import CompareConfig, paper_head
from .search import draw, snow_head


def trial_cells(cfg: CompareConfig, task: str) -> list[Cell]:
    """The cells of `task` under --trials: for each trial k, each arm's seeds (lpft: its probe
    first); an arm that does not apply to the task (compare/arms.py `why_not`) has none."""
    assert cfg.trials is not None
    spec = cfg.specs[task]
    from .config import PAPER_HEAD

    paper = PAPER_HEAD[task] if spec.registered else paper_head(spec.kind, spec.pair)
    cells = []
    for k in range(cfg.trials):
        head = snow_head(draw("snow", k)["head"], spec.kind, paper)
        for seed in range(cfg.seeds or 1):
            run = cfg.arm_dir(Mode.SNOW, task) / f"trial{k}" / f"seed{seed}"
            cells.append(Cell(Mode.SNOW, task, head, seed, str(run), trial=k))
        for arm in (Mode.FIRE, *map(Mode, fine_tuning_arms(cfg.arms or []))):
            if why_not(arm.value, task, spec.kind, cfg.intermediate):
                continue  # the report says why
            for seed in range(cfg.seeds_fire):
                if arm is Mode.LPFT:
                    probe = probe_run(cfg, task, seed, k)
                    cells.append(Cell(Mode.PROBE, task, "probe", seed, probe, trial=k))
                run = cfg.arm_dir(arm, task) / f"trial{k}" / f"seed{seed}"
                cells.append(Cell(arm, task, None, seed, str(run), trial=k))
    return cells


def probe_run(cfg: CompareConfig, task: str, seed: int, trial: int | None) -> str:
    """The run directory of arm lpft's ❄️ probe (of a trial, under --trials)."""
    where = Path(cfg.out) / "snow" / task / probe_recipe(cfg.specs[task].kind)["dir"]
    return str((where if trial is None else where / f"trial{trial}") / f"seed{seed}")


def snow_options(cell: Cell, caps: dict[str, Any]) -> dict[str, Any]:
    """What trial `cell.trial` sets on a ❄️ run (TrainConfig fields): the draw's rate and epoch
    cap, its width and dropout where the head takes them; the budget's other caps stay."""
    from snowfire.heads import HEADS

    assert cell.trial is not None and cell.head is not None
    if cell.mode is Mode.PROBE:  # lpft's start: the probe's epochs are the draw's
        return caps | {"epochs": draw("lpft", cell.trial)["probe_epochs"]}
    d = draw("snow", cell.trial)
    takes = HEADS[cell.head].hparams()
    hparams = {k: d[k] for k in ("hidden", "dropout") if k in takes}
    return caps | {"lr": d["lr"], "epochs": d["epochs"], "hparams": hparams}


#: The draw's names that are FinetuneConfig fields of the same name.
_FIRE_FIELDS = ("lr", "epochs", "warmup", "adapter_size", "lora_rank", "lora_alpha")


def fire_options(cell: Cell, caps: dict[str, Any]) -> dict[str, Any]:
    """What trial `cell.trial` sets on a 🔥-side run (FinetuneConfig fields): the rate, the
    epochs, the warm-up and the arm's own knobs; the budget's other caps stay."""
    assert cell.trial is not None
    d = draw(cell.mode.value, cell.trial)
    options = {k: d[k] for k in _FIRE_FIELDS if k in d}
    if "lora_targets" in d:
        options["lora_targets"] = d["lora_targets"]
    if "l2sp" in d:
        options["l2sp"] = d["l2sp"]
    return caps | options


def choose(cells: list[Cell], split: str, metric: str) -> dict[str, Any]:
    """One arm's trials on one task: each trial's mean score per split over its seeds, and the
    trial with the best mean on the selection split `split` (a tie: the lower trial)."""
    trials: dict[int, list[dict[str, dict[str, float]]]] = {}
    chosen_cells: dict[int, list[Cell]] = {}
    for c in cells:
        assert c.trial is not None and c.metrics is not None
        trials.setdefault(c.trial, []).append(c.metrics)
        chosen_cells.setdefault(c.trial, []).append(c)
    scored = {
        k: {s: sum(m[s][metric] for m in ms) / len(ms) for s in ms[0] if all(s in m for m in ms)}
        for k, ms in sorted(trials.items())
    }
    chosen = max(scored, key=lambda k: (scored[k][split], -k))
    return {"chosen": chosen, "trials": scored, "cells": chosen_cells[chosen]}
