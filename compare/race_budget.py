"""Replay evidence for the budget curves under the race: from finished exhaustive runs
(`--no-race --trials N`), the budget curve racing would have drawn, checked against the
exhaustive curve's bootstrap band.

The race is replayed on the recorded predictions (compare/racing.py `replay`). A trial it
stops at rung k held n_k seeds (`seeds_at`) and had trained e = min(e_k(cap), epochs run)
epochs; it counts with

    score   its seeds' mean of the best selection score within e epochs (RUN/log.jsonl)
    compute Σ over its held seeds of cost · (t_e + F) / T: the run's recorded cost, in the
            share of its time a run cut after e epochs would have taken: t_e the training
            time of its first e epochs (the log's cumulative "seconds"), F what it spent after
            its last epoch (the final scoring with the best weights, its files: RUN/config.json
            "seconds" T minus the last epoch's), which a cut run pays but for the training
            split's scoring (RUN/config.json "scoring_seconds", where recorded: a run a race
            stops scores no training split, rundir.scored_splits); pro rata to the epochs
            (e / epochs run) where the times are not on record

and a trial that ran to the end with every seed's best selection score and full cost. The
exhaustive curve is the same with every trial whole. Both are compare/budget_curve.py's
estimator with the selection score standing for the report score (r = s: the per-epoch log
holds the selection split alone, so a stopped trial's report score at its stop epoch is not
on record); the raced curve lies within the exhaustive band when, at every n, its expected
best lies in the exhaustive curve's 95% percentile-bootstrap band.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snowfire.rundir import CONFIG, LOG, selection_scores

from .budget_curve import budget_curve
from .budget_report import BAND_REPLICATES, _run_cost
from .cell import Cell
from .race import ETA, MARGIN
from .racing import contender, epochs_done, replay, run_cap, rung_target


def best_within(run: str | Path, epochs: int, metric: str) -> float:
    """The best selection score of a run's first `epochs` logged epochs."""
    lines = (Path(run) / LOG).read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()][:epochs]
    if not records:
        raise ValueError(f"{run}: no epoch logged in {LOG}; expected at least one")
    return max(float(selection_scores(r)[metric]) for r in records)


def cost_share(run: str | Path, epochs: int) -> float:
    """The share of a finished run's cost that the run cut after its first `epochs` logged
    epochs would have paid: (t_e + F) / T (the module docstring), or e / epochs run where the
    log or the config records no times."""
    lines = (Path(run) / LOG).read_text().splitlines()
    seconds = [json.loads(line).get("seconds") for line in lines if line.strip()]
    config = json.loads((Path(run) / CONFIG).read_text())
    total = config.get("seconds")
    e = min(epochs, len(seconds))
    if not seconds or None in seconds or not total or total < seconds[-1]:
        return e / len(seconds)
    after = total - seconds[-1]  # the final scoring and the files
    if e < len(seconds):  # cut: a stopped run skips scoring the training split
        after -= min(after, (config.get("scoring_seconds") or {}).get("train", 0.0))
    return (seconds[e - 1] + after) / total


def _trial(cells: list[Cell], epochs: dict[str, int], metric: str) -> tuple[float, float]:
    """(score, compute in hours) of one trial's `cells`, each trained `epochs[run]` epochs."""
    score, compute = 0.0, 0.0
    for cell in cells:
        e = min(epochs[cell.run], epochs_done(cell.run))
        score += best_within(cell.run, e, metric) / len(cells)
        compute += _run_cost(cell.run)[0] * cost_share(cell.run, e) / 3600
    return score, compute


def _contender(cells: list[Cell], name: str) -> list[Cell]:
    """The cells of contender `name`, by seed."""
    return sorted((c for c in cells if contender(c) == name), key=lambda c: c.seed)


def _raced(
    mine: list[Cell], race: dict[str, Any], metric: str, eta: int, first: bool = False
) -> tuple[float, float]:
    """(score, compute in hours) of one contender's cells as the race ran them: whole, or its
    held seeds cut at the rung it was stopped at (`first`: at the first rung, with the seeds
    it held there)."""
    caps = {c.run: run_cap(c.run) for c in mine}
    name = contender(mine[0])
    stop = race["stopped"].get(name)
    if stop is None:
        return _trial(mine, caps, metric)
    rung, held = stop["rung"], mine[: race["seeds"][name][-1]]
    if first:
        rung, held = 1, mine[: race["seeds"][name][0]]
    ends = {c.run: rung_target(caps[c.run], rung, race["rungs"], eta) for c in held}
    return _trial(held, ends, metric)


def replay_cost(
    cells: list[Cell],
    metric: str,
    kind: str,
    margin: float = MARGIN,
    eta: int = ETA,
    keep_leaders: bool = True,
) -> dict[str, Any]:
    """The race replayed on finished exhaustive `cells` and what it would have cost: every
    contender whole ("exhaustive_h") or as the race runs it ("raced_h": a stopped contender's
    held seeds in the share of their cost `cost_share` gives, as the budget curves count
    it), in training hours, with the contenders it stops; and "floor_h", the cost had every
    contender it stops been stopped at the first rung: what any rule that keeps the same
    survivors to the end pays at least (the survivors' whole runs, the losers' first rung).
    keep_leaders: the race's rule (compare/race.py)."""
    race = replay(cells, metric, kind, margin, eta, keep_leaders)
    whole = cut = floor = 0.0
    for name in dict.fromkeys(contender(c) for c in cells):
        mine = _contender(cells, name)
        whole += _trial(mine, {c.run: run_cap(c.run) for c in mine}, metric)[1]
        cut += _raced(mine, race, metric, eta)[1]
        floor += _raced(mine, race, metric, eta, first=True)[1]
    return {
        "exhaustive_h": whole,
        "raced_h": cut,
        "floor_h": floor,
        "stopped": sorted(race["stopped"]),
    }


def raced_budget_curves(
    cells: list[Cell],
    metric: str,
    kind: str,
    margin: float = MARGIN,
    eta: int = ETA,
    keep_leaders: bool = True,
) -> dict[str, dict[str, Any]]:
    """Per arm with trials: its exhaustive and raced curves (n, mean, band, compute in hours)
    and whether the raced curve lies within the exhaustive band at every n ("within");
    keep_leaders: the race's rule (compare/race.py)."""
    trials = [c for c in cells if c.trial is not None]
    if not trials:
        raise ValueError("raced_budget_curves: expected the cells of a --trials comparison")
    race = replay(trials, metric, kind, margin, eta, keep_leaders)
    out: dict[str, dict[str, Any]] = {}
    for arm in dict.fromkeys(c.mode.value for c in trials):
        names = list(dict.fromkeys(contender(c) for c in trials if c.mode.value == arm))
        whole, cut = [], []
        for name in names:
            mine = _contender(trials, name)
            whole.append(_trial(mine, {c.run: run_cap(c.run) for c in mine}, metric))
            cut.append(_raced(mine, race, metric, eta))
        curves = {}
        for label, points in (("exhaustive", whole), ("raced", cut)):
            scores = [s for s, _ in points]
            curves[label] = budget_curve(
                scores, scores, [x for _, x in points], boot=BAND_REPLICATES
            )
        ex, ra = curves["exhaustive"], curves["raced"]
        within = all(
            lo - 1e-12 <= m <= hi + 1e-12
            for m, lo, hi in zip(ra.mean, ex.low, ex.high, strict=True)
        )
        out[arm] = {
            "exhaustive": ex.to_json(),
            "raced": ra.to_json(),
            "stopped": [n for n in names if n in race["stopped"]],
            "within": within,
        }
    return out
