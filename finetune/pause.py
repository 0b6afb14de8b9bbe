"""A 🔥 run paused at a race's rung keeps the end it would have if the race stopped it there:
RUN/at-pause/record.json ({"config": its config.json, "metrics": its metrics.json}) and
RUN/at-pause/predictions/<split>.tsv, its best weights so far scored on every split but train
(`scored_splits`), written before RUN/paused.json.

A race that stops the run at that epoch (`stop_at`: compare/racing.py ends a loser at the epochs
it logged) finishes it from them, `finish_from_pause`: nothing is scored again, and neither the
checkpoint nor the weights are needed, so a paused run carried to another machine
(experiments/carry.py keeps the records, never the weights) is ended there as it would have been
here. A run the race keeps goes on from RUN/checkpoint.pt; on a machine without it, it trains
again from scratch (`forget_pause` drops the stale records first). The record's cost is the
paused run's (its clock and CPU time include the scoring, which the checkpoint counts too).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    AT_PAUSE,
    CHECKPOINT,
    CONFIG,
    LOG,
    METRICS,
    PAUSED,
    PREDICTIONS,
    check_same_config,
    write_json,
)

RECORD = "record.json"


def pause_dir(out: str | Path) -> Path:
    """RUN/at-pause/: where a paused run's end is kept (its predictions under predictions/)."""
    return Path(out) / AT_PAUSE


def record_end(out: str | Path, config: dict[str, Any], metrics: dict[str, Any]) -> None:
    """RUN/at-pause/record.json, after the predictions beside it (its presence says whole)."""
    write_json(pause_dir(out) / RECORD, {"config": config, "metrics": metrics})


def recorded_end(out: str | Path, cfg: Any, start: Any) -> dict[str, Any] | None:
    """The record of the run's end at `cfg.stop_at`, when the run paused there with one (its
    log and RUN/paused.json at that epoch) and started from the weights `start` names; None
    otherwise (the run then goes on from its checkpoint, or trains again). A record of
    another config is refused (RunConfigError), as a checkpoint of one is."""
    out = Path(out)
    path = pause_dir(out) / RECORD
    if cfg.stop_at is None or not path.is_file() or not (out / PAUSED).is_file():
        return None
    record = json.loads(path.read_text())
    config = record["config"]
    check_same_config(config["finetune"], cfg, f"{path} records the end of")
    paused = json.loads((out / PAUSED).read_text())["epoch"]
    logged = sum(1 for line in (out / LOG).read_text().splitlines() if line.strip())
    at = config.get("stopped_at")
    if not at == paused == logged == cfg.stop_at or config.get("start") != start:
        return None
    return record


def finish_from_pause(out: str | Path, cfg: Any, record: dict[str, Any], save_encoder) -> dict:
    """End the run as `record` says (`recorded_end`): its predictions moved into
    RUN/predictions/, config.json (this attempt's config, "finished_from": "at-pause"),
    metrics.json last; the checkpoint and the pause records dropped. save_encoder(): writes
    RUN/encoder/ of a method-full run from its best weights, when they are here."""
    out = Path(out)
    kept = pause_dir(out) / PREDICTIONS
    (out / PREDICTIONS).mkdir(parents=True, exist_ok=True)
    for path in sorted(kept.glob("*.tsv")):
        os.replace(path, out / PREDICTIONS / path.name)
    save_encoder()
    config = record["config"] | {"finetune": cfg.to_json(), "finished_from": AT_PAUSE}
    write_json(out / CONFIG, config)
    write_json(out / METRICS, record["metrics"])  # last: the run is finished
    (out / CHECKPOINT).unlink(missing_ok=True)
    forget_pause(out)
    return record["metrics"]


def forget_pause(out: str | Path) -> None:
    """Drop RUN/paused.json and RUN/at-pause/: the run finished, or trains again from scratch."""
    shutil.rmtree(pause_dir(out), ignore_errors=True)
    (Path(out) / PAUSED).unlink(missing_ok=True)
