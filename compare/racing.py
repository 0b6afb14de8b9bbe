"""The race of `snowfire compare` (on by default; `--no-race` trains every cell to its cap):
each task's cells of every arm and trial train rung by rung, and after each rung the race
(compare/race.py's `decide`) stops what has clearly lost.

A contender is what the table ranks: an arm's recipe ("fire", "lora"), a ❄️ head
("snow:esim") or a trial of a search ("fire#3", "snow#0"); its cells are its seeds. Its arm is
the cell's mode ("snow" for every head and trial of ❄️), so the race is won overall and
within each arm (compare/race.py).

Rungs. A task's race has R rungs, R = len(rung_epochs(c_min)) for the smallest epoch cap
c_min among its contenders: rung j of R (1-based) trains a cell of cap c to

    e_j(c) = ⌈c / η^(R−j)⌉          (e_R(c) = c: the last rung is the cap)

so each cell runs the same fractions 1/η^(R−1), ..., 1/η, 1 of its own cap (❄️'s 40 epochs and
🔥's 6 race side by side at 5|1, 14|2, 40|6). A cell ended by early stopping before a rung
is finished: it keeps its best epoch, and the race weighs that.

At rung j < R each contender's seeds give their selection-split predictions of their best
epoch within e_j (RUN/log.jsonl and RUN/selection/epoch-<k>.tsv, written by both trainers);
`decide` weighs them paired per example (and per seed), and a contender it stops is ended at
the epoch it reached (`stop_at`: its run finishes there, its best epoch so far kept and
scored). The rest train on. Every decision is a function of the recorded files alone, so
`replay` recomputes it from finished runs (raced or exhaustive) without training, a killed
race resumes at its rung with the same decisions, and a run already paused at a rung is not
touched again.

Cells that cannot pause (a 🔥 grid under `--budget full`, lpft's probes, seq's intermediate
stage) run whole before the race and are not contenders.

Seeds. A contender races with 1 seed at rung 1, and the ones still in the race gain seeds
rung by rung (SMAC's intensification: 1, 2, 4, ... and every asked seed at the last rung,
`seeds_at`); a new seed trains from scratch to the rung's epochs, so at every decision the
contenders weighed hold the same seeds (paired per seed where both have it). A contender
stopped early keeps the seeds it had: its other seeds are never run, and the report reads
the runs that exist. A stopped contender keeps its
last score and the compute it used: its cells are ordinary finished runs, so the table, the
verdict and the budget curves (compare/budget_curve.py) read them as they read any run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    CONFIG,
    LOG,
    PAUSED,
    epochs_done,
    selection_file,
    selection_scores,
)

from .cell import Cell, Mode
from .race import ETA, MARGIN, Decision, decide, rung_epochs, seeds_schedule

#: What the race records per task in results.json ("race"): format version 1.
RACE_FORMAT = 1


def contender(cell: Cell) -> str:
    """The name the race weighs a cell under: "fire", "snow:esim", "lora#3" (a trial)."""
    name = cell.mode.value
    if cell.mode is Mode.SNOW and cell.trial is None:
        name = f"{name}:{cell.head}"
    return name if cell.trial is None else f"{name}#{cell.trial}"


def rung_target(cap: int, rung: int, rungs: int, eta: int = ETA) -> int:
    """e_j(c) = ⌈c / η^(R−j)⌉, at least 1: the epochs a cell of cap `cap` has trained at rung
    `rung` (1-based) of `rungs`."""
    if not 1 <= rung <= rungs:
        raise ValueError(f"rung_target: expected a rung in 1..{rungs}, got {rung}")
    return max(1, -(-cap // eta ** (rungs - rung)))


def rung_count(caps: Iterable[int], eta: int = ETA) -> int:
    """R: the rungs of the smallest cap's schedule (compare/race.py's `rung_epochs`)."""
    caps = list(caps)
    if not caps:
        raise ValueError("rung_count: expected at least one epoch cap, got none")
    return len(rung_epochs(min(caps), eta))


def run_cap(run: str | Path) -> int:
    """The epoch cap a run was made with (its RUN/config.json "train" or "finetune" epochs)."""
    config = json.loads((Path(run) / CONFIG).read_text())
    made = config.get("train") or config.get("finetune")
    if not isinstance(made, dict) or "epochs" not in made:
        raise ValueError(f"{run}/{CONFIG}: expected a 'train' or 'finetune' config with epochs")
    return int(made["epochs"])


def paused_at(run: str | Path) -> int | None:
    """The epoch a run paused at (RUN/paused.json), None when it is not paused."""
    path = Path(run) / PAUSED
    return int(json.loads(path.read_text())["epoch"]) if path.is_file() else None


def predictions_at(run: str | Path, epoch: int, metric: str, kind: str) -> tuple[list, list]:
    """(gold, predictions) on the selection split of the run's best epoch within `epoch`
    (the first of equal scores, as the trainers keep it)."""
    from snowfire.tasks import read_predictions

    lines = (Path(run) / LOG).read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()][:epoch]
    if not records:
        raise ValueError(f"{run}: no epoch logged in {LOG}; a race weighs trained epochs")
    scores = [selection_scores(r)[metric] for r in records]
    best = scores.index(max(scores)) + 1
    return read_predictions(selection_file(run, best), kind)


def weigh_rung(
    rung: int,
    rungs: int,
    cells: list[Cell],
    caps: dict[str, int],
    metric: str,
    kind: str,
    margin: float = MARGIN,
    eta: int = ETA,
    keep_leaders: bool = True,
) -> list[Decision]:
    """The decisions at rung `rung` over `cells` (every seed of every contender still in the
    race); caps: each cell's epoch cap by run directory; keep_leaders: compare/race.py's rule."""
    gold = None
    preds: dict[str, list[Any]] = {}
    arm_of: dict[str, str] = {}
    for cell in cells:
        target = rung_target(caps[cell.run], rung, rungs, eta)
        g, p = predictions_at(cell.run, target, metric, kind)
        if gold is None:
            gold, first = g, cell.run
        elif g != gold:
            raise ValueError(
                f"{cell.run}: its selection split's answers differ from {first}'s: the race "
                "weighs the same examples for everyone"
            )
        preds.setdefault(contender(cell), []).append(p)
        arm_of[contender(cell)] = cell.mode.value
    if gold is None:
        return []
    return decide(rung, metric, gold, preds, arm_of, margin, keep_leaders=keep_leaders)


def seeds_at(rung: int, rungs: int, asked: int) -> int:
    """n_j: the seeds a contender still in the race holds at rung `rung` of `rungs` when it was
    asked for `asked` (SMAC's intensification, compare/race.py's `seeds_schedule`): 1, 2, 4,
    ... at rungs 1, 2, 3, ... (never more than asked), and every asked seed at the last rung, so
    the final verdict holds restarts. A contender stopped at rung k keeps its n_k seeds."""
    if asked < 1:
        raise ValueError(f"seeds_at: expected at least one seed asked, got {asked}")
    if not 1 <= rung <= rungs:
        raise ValueError(f"seeds_at: expected a rung in 1..{rungs}, got {rung}")
    schedule = seeds_schedule(asked)
    return asked if rung == rungs else schedule[min(rung, len(schedule)) - 1]


def held(cells: list[Cell], rung: int, rungs: int) -> list[Cell]:
    """The cells that race at `rung`: each contender's first n_j seeds (`seeds_at`, by seed;
    the seeds it was asked for are the cells given)."""
    by_name: dict[str, list[Cell]] = {}
    for cell in cells:
        by_name.setdefault(contender(cell), []).append(cell)
    keep: set[str] = set()
    for mine in by_name.values():
        ordered = sorted(mine, key=lambda c: c.seed)
        keep.update(c.run for c in ordered[: seeds_at(rung, rungs, len(ordered))])
    return [c for c in cells if c.run in keep]


def raced(cells: list[Cell], configs: dict[str, Any]) -> list[Cell]:
    """The cells that race: arms' runs that can pause (not a 🔥 grid, not a first stage)."""
    return [c for c in cells if c.mode.is_arm and getattr(configs[c.run], "grid", None) is None]


def replay(
    cells: list[Cell],
    metric: str,
    kind: str,
    margin: float = MARGIN,
    eta: int = ETA,
    keep_leaders: bool = True,
) -> dict[str, Any]:
    """The race's decisions recomputed from the recorded files of finished (or paused) runs,
    raced or exhaustive, without training: what `race_task` decided, under any margin, η or
    rule (keep_leaders False: the earlier rule, compare/race.py)."""
    caps = {c.run: run_cap(c.run) for c in cells}
    return _race(cells, caps, metric, kind, (margin, eta, keep_leaders), run_rung=None)


def race_task(
    cells: list[Cell],
    caps: dict[str, int],
    metric: str,
    kind: str,
    run_rung: Callable[[list[tuple[Cell, int | None, int | None]]], None],
    margin: float = MARGIN,
    eta: int = ETA,
    keep_leaders: bool = True,
) -> dict[str, Any]:
    """Race `cells` (each a cell that can pause; caps: their epoch caps by run). run_rung
    trains [(cell, pause_at, stop_at)] and returns once all have paused or finished (at once
    on Ray, else in turn). The record results.json keeps (`_race`)."""
    return _race(cells, caps, metric, kind, (margin, eta, keep_leaders), run_rung)


def _race(cells, caps, metric, kind, rule, run_rung) -> dict[str, Any]:
    """The race loop, live (run_rung trains) or replayed (run_rung None: the files are there);
    rule: (margin, η, keep_leaders)."""
    margin, eta, keep_leaders = rule
    if not cells:
        return {}
    rungs = rung_count(caps.values(), eta)
    alive = list(dict.fromkeys(contender(c) for c in cells))
    decisions: list[Decision] = []
    stopped: dict[str, Decision] = {}
    seeds: dict[str, list[int]] = {name: [] for name in alive}
    for rung in range(1, rungs + 1):
        mine = held([c for c in cells if contender(c) in alive], rung, rungs)
        for c in mine:  # the seeds each contender raced with, rung by rung
            name = contender(c)
            if len(seeds[name]) < rung:
                seeds[name].append(0)
            seeds[name][-1] += 1
        last = rung == rungs
        if run_rung is not None:
            steps: list[tuple[Cell, int | None, int | None]] = []
            for c in mine:
                target = rung_target(caps[c.run], rung, rungs, eta)
                _not_ended_before(c, target)
                if last:
                    steps.append((c, None, None))
                elif (paused_at(c.run) or 0) < target:  # resumed: a rung reached stays
                    steps.append((c, target, None))
            run_rung(steps)
        if last:
            break
        now = weigh_rung(rung, rungs, mine, caps, metric, kind, margin, eta, keep_leaders)
        decisions += now
        for d in now:
            if d.stopped:
                alive.remove(d.trial)
                stopped[d.trial] = d
        if run_rung is not None:  # the losers end at the epoch they reached, their best kept
            ends = [c for c in mine if contender(c) in stopped and contender(c) not in alive]
            run_rung([(c, None, max(1, min(epochs_done(c.run), caps[c.run]))) for c in ends])
    return {
        "format": RACE_FORMAT,
        "eta": eta,
        "margin": margin,
        "keep_leaders": keep_leaders,
        "rungs": rungs,
        "epochs": {
            contender(c): [rung_target(caps[c.run], j, rungs, eta) for j in range(1, rungs + 1)]
            for c in cells
        },
        "seeds": seeds,
        "decisions": [d.to_json() for d in decisions],
        "stopped": {name: d.to_json() | {"text": d.describe()} for name, d in stopped.items()},
        "finished": alive,
    }


def _not_ended_before(cell: Cell, target: int) -> None:
    """Refuse to race on a run an earlier race ended (RUN/config.json "stopped_at") before the
    epochs this race trains it to: it would be weighed at its old end. Made by the earlier rule
    (an arm's leader stopped) and kept by today's, or by a larger margin."""
    config = Path(cell.run) / CONFIG
    ended = json.loads(config.read_text()).get("stopped_at") if config.is_file() else None
    if ended is not None and ended < target:
        raise ValueError(
            f"{cell.run}: an earlier race ended this run at epoch {ended} (its config.json "
            f"stopped_at), and this race trains {contender(cell)} on to epoch {target}. Move the "
            "run aside to train it again under this race's rule, or rerun with the rule that "
            "ended it (--race-stops-leaders: an arm's leader stops when clearly behind)"
        )
