"""A ❄️ run's state between epochs, so that a paused run (a rung of paired racing: `pause_at`)
continues where it stopped and ends exactly as one that never paused: the head's and the
optimiser's state, the best weights so far, the early-stopping counters, the log, the time
spent and torch's random state (dropout); the batch order is a function of seed and epoch
(tasks.epoch_rng), so it needs nothing."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from snowfire.rundir import PAUSED, check_same_config, save_torch, write_json


@dataclass
class LoopState:
    """Where the loop is, besides the weights."""

    epoch: int = 0  # epochs done
    best: float = -math.inf  # the best selection score so far
    best_epoch: int | None = None
    bad: int = 0  # epochs since the best
    stopped: bool = False  # early stopping hit
    history: list[dict[str, Any]] = field(default_factory=list)  # RUN/log.jsonl's records
    seconds: float = 0.0  # training time of the processes before this one
    cpu_seconds: float = 0.0  # their CPU time
    continued_from: dict[str, Any] | None = None  # a larger cap's run: the run it went on from
    peak: dict[str, Any] | None = None  # the processes before this one: PeakMemory.carried()


def save(path: Path, cfg: Any, head, opt, best_state, state: LoopState) -> None:
    """RUN/checkpoint.pt (atomically: whole or the previous one)."""
    import torch

    save_torch(
        path,
        {
            "config": asdict(cfg),
            "head": head.state_dict(),
            "optimizer": opt.state_dict(),
            "best_state": best_state,
            "rng": torch.get_rng_state(),
            "state": asdict(state),
        },
    )


def restore(path: Path, cfg: Any, head, opt, device) -> tuple[LoopState, dict]:
    """Load RUN/checkpoint.pt into `head` and `opt`: (the loop's state, the best weights);
    a checkpoint of another config is refused (rundir.RunConfigError naming the fields)."""
    import torch

    ckpt = torch.load(path, map_location=device, weights_only=True)
    check_same_config(ckpt["config"], cfg, f"{path} was written by")
    head.load_state_dict(ckpt["head"])
    opt.load_state_dict(ckpt["optimizer"])
    torch.set_rng_state(ckpt["rng"].cpu())
    return LoopState(**ckpt["state"]), ckpt["best_state"]


def mark_paused(out: Path, state: LoopState, split: str) -> None:
    """RUN/paused.json: where the run stopped and its best selection score so far."""
    best = state.history[state.best_epoch - 1] if state.best_epoch else {}
    write_json(
        out / PAUSED,
        {
            "epoch": state.epoch,
            "best_epoch": state.best_epoch,
            "split": split,
            "selection": best.get("selection", {}),
            "seconds": state.seconds,
            "cpu_seconds": state.cpu_seconds,
        },
    )
