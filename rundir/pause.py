"""A run paused at a race's rung keeps the end it would have if the race stopped it there:
RUN/at-pause/ holds the files that end writes (config.json with "stopped_at", metrics.json,
predictions/ of every split but train, scored with the best weights so far; a ❄️ run's head
records and weights too), written before RUN/paused.json.

A race that stops the run at that epoch (`stop_at`: compare/racing.py ends a loser at the
epochs it logged) finishes it from them (`finish_from_pause`): nothing trained or scored again,
and neither the checkpoint nor the weights are needed, so a paused run carried to another
machine (experiments/carry.py keeps the records, never the weights) ends there as it would have
here. A run the race keeps goes on from RUN/checkpoint.pt; on a machine without it, it trains
again from scratch (`forget_pause` drops the stale records first). The recorded end's cost is
the paused run's, the scoring included (so is the checkpoint's clock: a kept run counts it).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .files import AT_PAUSE, CHECKPOINT, CONFIG, METRICS, PAUSED, epochs_done
from .reuse import check_same_config
from .write import write_json


def pause_dir(out: str | Path) -> Path:
    """RUN/at-pause/: the run as a stop where it paused leaves it."""
    return Path(out) / AT_PAUSE


def recorded_end(
    out: str | Path, cfg: Any, section: str, start: Any = None
) -> dict[str, Any] | None:
    """The config.json of the run's end at `cfg.stop_at` (RUN/at-pause/), when the run paused
    there with it (its log and RUN/paused.json at that epoch) and, `start` given, started from
    the weights it names; None otherwise (the run goes on from its checkpoint, or trains
    again). An end of another config (its `section`) is refused (RunConfigError)."""
    out, ended = Path(out), pause_dir(out)
    if cfg.stop_at is None or not (out / PAUSED).is_file():
        return None
    if not all((ended / name).is_file() for name in (CONFIG, METRICS)):
        return None
    config = json.loads((ended / CONFIG).read_text())
    check_same_config(config[section], cfg, f"{ended / CONFIG} is the end of")
    paused = json.loads((out / PAUSED).read_text())["epoch"]
    if not config.get("stopped_at") == paused == epochs_done(out) == cfg.stop_at:
        return None
    if start is not None and config.get("start") != start:
        return None
    return config


def finish_from_pause(
    out: str | Path,
    config: dict[str, Any],
    section: Mapping[str, Any],
    before: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """End the run as RUN/at-pause/ holds it (`recorded_end`'s `config`): its files moved up,
    config.json with this attempt's `section` (the one key of the trainer's config) and
    "finished_from": "at-pause", metrics.json last; the checkpoint and the pause dropped.
    before(): called before metrics.json (a 🔥 run's encoder, from weights at hand)."""
    out, ended = Path(out), pause_dir(out)
    for path in sorted(p for p in ended.rglob("*") if p.is_file()):
        if path.name in (CONFIG, METRICS) and path.parent == ended:
            continue
        target = out / path.relative_to(ended)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    if before is not None:
        before()
    write_json(out / CONFIG, config | dict(section) | {"finished_from": AT_PAUSE})
    metrics = json.loads((ended / METRICS).read_text())
    write_json(out / METRICS, metrics)  # last: the run is finished
    (out / CHECKPOINT).unlink(missing_ok=True)
    forget_pause(out)
    return metrics


def forget_pause(out: str | Path) -> None:
    """Drop RUN/paused.json and RUN/at-pause/: the run finished, or trains again from scratch."""
    shutil.rmtree(pause_dir(out), ignore_errors=True)
    (Path(out) / PAUSED).unlink(missing_ok=True)
