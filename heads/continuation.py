"""A ❄️ run at a larger epoch cap, from a finished run at a smaller one, without training its
first epochs again.

    how = continue_from(base, cfg)   # cfg: base's TrainConfig but for a larger `epochs`
    train(cfg)                       # then trains only what is new

A head trains at a constant rate, its batch order is a function of (seed, epoch) and its
random state is saved with it, so the first k epochs of a run capped at E' > k are the first k
epochs of a run capped at E >= k: the larger cap's run is the smaller one's, continued.

- "same": the base run ended by early stopping before its cap (epochs run − best epoch >=
  patience): the run at any larger cap stops at the same epoch with the same weights, so it is
  the base run, copied with its config's cap raised.
- "continued": the base ended at its cap, or a race ended it (`stop_at`): its state after its
  last epoch (RUN/final.pt, kept with `keep_state`) becomes cfg.out's checkpoint, as if it
  had paused there, and `train(cfg)` goes on from it; its log, selection predictions, time
  and CPU time come along, so the run's cost is the whole trajectory's, as if it had never
  stopped.
- None: nothing to go on from (no final state: a run made without `keep_state`, as
  `snowfire train` makes them unless asked): cfg.out trains from scratch.

Either way cfg.out's config records `continued_from` {"run", "epochs", "how"}; the base run
is read, never changed.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    CHECKPOINT,
    CONFIG,
    FINAL_STATE,
    LOCK,
    LOG,
    METRICS,
    SELECTION,
    RunConfigError,
    check_same_config,
    save_torch,
    write_json,
)

from .config import TrainConfig


def _base_record(base: Path, cfg: TrainConfig) -> dict[str, Any]:
    """base's config.json, checked to be cfg's but for a cap no larger than cfg's."""
    if not (base / METRICS).is_file():
        raise RunConfigError(f"{base}: not a finished run (no {METRICS}); nothing to go on from")
    record = json.loads((base / CONFIG).read_text())
    made = record.get("train")
    if not isinstance(made, dict) or not isinstance(made.get("epochs"), int):
        raise RunConfigError(f"{base}/{CONFIG}: expected a ❄️ run's 'train' config with epochs")
    if made["epochs"] > cfg.epochs:
        raise RunConfigError(
            f"{base}: its cap {made['epochs']} is larger than the new run's {cfg.epochs}: a run "
            "continues only to a larger cap"
        )
    check_same_config(made, replace(cfg, epochs=made["epochs"]), f"{base} is a run of")
    return record


def continue_from(base: str | Path, cfg: TrainConfig) -> str | None:
    """Seed cfg.out (absent or empty) from the finished run `base`: "same", "continued" or
    None (the module docstring). A base of another config than cfg (the cap aside) is refused
    (RunConfigError naming the fields)."""
    import torch

    base, out = Path(base), Path(cfg.out)
    record = _base_record(base, cfg)
    if out.exists() and any(p.name != LOCK for p in out.iterdir()):
        raise RunConfigError(f"{out}: not empty; a continued run starts in an empty directory")
    cap, ran, best = record["train"]["epochs"], record.get("epochs_run"), record.get("best_epoch")
    origin = {"run": str(base), "epochs": cap}
    if isinstance(ran, int) and isinstance(best, int) and ran - best >= cfg.patience:
        # metrics.json last, after the raised config: a copy cut short is no finished run
        skip = shutil.ignore_patterns(LOCK, FINAL_STATE, METRICS)
        shutil.copytree(base, out, ignore=skip, dirs_exist_ok=True)
        origin["how"] = f"early-stopped at epoch {ran}: the same run at any larger cap"
        record["train"] = asdict(cfg) | {"pause_at": None, "stop_at": None}
        write_json(out / CONFIG, record | {"continued_from": origin})
        shutil.copy2(base / METRICS, out / METRICS)
        return "same"
    final = base / FINAL_STATE
    if not final.is_file():
        return None
    state = torch.load(final, map_location="cpu", weights_only=True)
    state["config"] = asdict(cfg)
    origin["how"] = f"went on from epoch {state['state']['epoch']}"
    state["state"]["continued_from"] = origin
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(base / LOG, out / LOG)
    shutil.copytree(base / SELECTION, out / SELECTION)
    save_torch(out / CHECKPOINT, state)  # last: its presence makes train() go on from it
    return "continued"
