"""A stand-in trainer and constructed runs for compare/racing.py's tests (RUN/config.json,
log.jsonl and selection/epoch-k.tsv as both trainers write them)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from snowfire.compare.cell import Cell, Mode
from snowfire.compare.racing import race_task

N = 400
GOLD = [str(v) for v in np.random.default_rng(0).integers(0, 2, N)]


def preds_right(correct: float, seed: int) -> list[str]:
    """Predictions right on a `correct` share of the examples (which ones: `seed`)."""
    right = np.random.default_rng(seed).random(N) < correct
    return [g if r else ("1" if g == "0" else "0") for g, r in zip(GOLD, right, strict=True)]


class Trainer:
    """A stand-in for both trainers: epoch k of a run scores script[run][k-1] (its share of
    right answers), writes its log line and its selection predictions, pauses at `pause_at`
    (RUN/paused.json) and finishes at the cap or `stop_at` (RUN/metrics.json; config.json's
    "stopped_at" says a race ended it)."""

    def __init__(self, script: dict[str, list[float]]):
        self.script, self.epochs = script, []

    def setup(self, run: str, cap: int) -> None:
        Path(run).mkdir(parents=True)
        (Path(run) / "config.json").write_text(json.dumps({"finetune": {"epochs": cap}}))

    def __call__(self, steps) -> None:
        for cell, pause, stop in steps:
            run, cap = Path(cell.run), len(self.script[cell.run])
            if (run / "metrics.json").is_file():
                continue  # finished runs are returned as they are
            done = (
                len((run / "log.jsonl").read_text().splitlines())
                if (run / "log.jsonl").is_file()
                else 0
            )
            last = min(cap, stop or cap, pause or cap)
            for epoch in range(done + 1, last + 1):
                share = self.script[cell.run][epoch - 1]
                preds = preds_right(share, seed=zlib.crc32(f"{run.name}/{epoch}".encode()))
                score = sum(p == g for p, g in zip(preds, GOLD, strict=True)) / N
                with open(run / "log.jsonl", "a") as f:
                    f.write(json.dumps({"epoch": epoch, "selection": {"accuracy": score}}) + "\n")
                (run / "selection").mkdir(exist_ok=True)
                rows = "".join(
                    f"{i}\t{g}\t{p}\n" for i, (g, p) in enumerate(zip(GOLD, preds, strict=True))
                )
                (run / "selection" / f"epoch-{epoch}.tsv").write_text(
                    "index\tgold\tpredicted\n" + rows
                )
                self.epochs.append((cell.run, epoch))
            if pause is not None and last < min(cap, stop or cap):
                (run / "paused.json").write_text(json.dumps({"epoch": last}))
            else:
                (run / "paused.json").unlink(missing_ok=True)
                (run / "metrics.json").write_text(json.dumps({"dev": {"accuracy": 0.0}}))
                config = json.loads((run / "config.json").read_text())
                ended = stop is not None and last == stop < cap  # as the trainers record it
                config["stopped_at"] = last if ended else None
                (run / "config.json").write_text(json.dumps(config))


def race_cells(root: Path, trainer: Trainer, arms: dict[str, list[float]]) -> list[Cell]:
    cells = []
    for name, curve in arms.items():
        run = str(root / name)
        trainer.script[run] = curve
        trainer.setup(run, len(curve))
        mode = Mode.SNOW if name == "snow" else Mode(name)
        cells.append(Cell(mode, "sst2", "esim" if mode is Mode.SNOW else None, 0, run))
    return cells


def race(cells, run_rung, keep_leaders=True):
    caps = {
        c.run: int(json.loads((Path(c.run) / "config.json").read_text())["finetune"]["epochs"])
        for c in cells
    }
    return race_task(cells, caps, "accuracy", "classification", run_rung, keep_leaders=keep_leaders)
