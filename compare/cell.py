"""A cell of `snowfire compare`: one run directory of the comparison, what it runs (`Mode`), on
which task, with which ❄️ head and seed, and, once it has run, its metrics.

    Cell(Mode.SNOW, "stsb", "esim", 0, "OUT/snow/stsb/esim/seed0")
    Cell(Mode.LORA, "stsb", None, 1, "OUT/lora/stsb/seed1")
    Cell(Mode.LORA, "stsb", None, 0, "OUT/lora/stsb/trial3/seed0", trial=3)   # --trials
    cell.finished(metrics)                 the same cell with {split: {metric: value}}
    cell.to_json() / Cell.from_json(raw)   OUT/results.json's "cells" entries:
        {"mode": "snow", "task": ..., "head": ..., "seed": ..., "run": ..., "metrics": {...}}
    (and "trial": k for a cell of a search, `compare --trials`: the arm's k-th draw of its
    search space, compare/search.py)

The JSON form is the dicts compare wrote before cells had a type (same keys, same order), so a
finished comparison's results.json reads back unchanged (`snowfire compare --export`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any


class Mode(str, Enum):
    """What a cell runs: an arm of the comparison (compare/arms.py, in the table's order) or
    the first stage an arm needs."""

    SNOW = "snow"  # ❄️ a head on cached features of every layer
    FIRE = "fire"  # 🔥 every encoder weight, the family's recipe
    ADAPTER = "adapter"  # Houlsby bottleneck adapters and the layer norms
    LORA = "lora"  # LoRA on query and value
    BITFIT = "bitfit"  # the encoder's biases
    L2SP = "l2sp"  # 🔥 pulled towards the pretrained weights
    LPFT = "lpft"  # 🔥 whose output layer starts at a ❄️ probe
    SEQ = "seq"  # 🔥 from an encoder fine-tuned first on --intermediate
    PROBE = "probe"  # lpft's first stage: the ❄️ probe of what 🔥's output layer reads
    INTERMEDIATE = "intermediate"  # seq's first stage: 🔥 on --intermediate, once

    @property
    def is_arm(self) -> bool:
        """An arm of the table (not a first stage)."""
        return self not in (Mode.PROBE, Mode.INTERMEDIATE)

    @property
    def side(self) -> Mode:
        """The side whose budget caps the cell: SNOW for a ❄️ head run (snow, probe), FIRE
        for every 🔥 run (every other mode)."""
        return Mode.SNOW if self in (Mode.SNOW, Mode.PROBE) else Mode.FIRE


@dataclass(frozen=True)
class Cell:
    """One run of a comparison. `head`: the ❄️ head of a snow or probe cell, None for 🔥
    runs; `run`: its run directory; `metrics`: None until it has run (not part of the
    cell's identity: a cell equals its finished self); `trial`: the draw of the arm's search
    space it runs (`compare --trials`), None for the arm's one default recipe."""

    mode: Mode
    task: str
    head: str | None
    seed: int
    run: str
    metrics: dict[str, dict[str, float]] | None = field(default=None, compare=False)
    trial: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.mode, Mode):
            raise TypeError(f"Cell.mode: expected a Mode, got {self.mode!r}")
        if self.head is None and self.mode.side is Mode.SNOW:
            raise ValueError(f"Cell.head: a {self.mode.value} cell needs its ❄️ head, got None")

    def finished(self, metrics: dict[str, dict[str, float]]) -> Cell:
        """This cell with the metrics of its finished run."""
        return replace(self, metrics=metrics)

    def to_json(self) -> dict[str, Any]:
        """The record results.json keeps (`metrics` only once the cell has run)."""
        out: dict[str, Any] = {
            "mode": self.mode.value,
            "task": self.task,
            "head": self.head,
            "seed": self.seed,
            "run": self.run,
        }
        if self.trial is not None:
            out["trial"] = self.trial
        return out if self.metrics is None else out | {"metrics": self.metrics}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Cell:
        """Read `to_json`'s record back; a missing or unknown key, or an unknown mode, is an
        error naming it."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in raw and n not in ("metrics", "trial")]
        unknown = sorted(set(raw) - set(names))
        if missing or unknown:
            raise ValueError(
                f"a compare cell: expected the keys {names} (metrics, trial optional), missing "
                f"{missing}, unknown {unknown}"
            )
        try:
            mode = Mode(raw["mode"])
        except ValueError:
            raise ValueError(
                f"a compare cell's mode: expected one of {[m.value for m in Mode]}, "
                f"got {raw['mode']!r}"
            ) from None
        return cls(
            mode,
            raw["task"],
            raw["head"],
            raw["seed"],
            raw["run"],
            raw.get("metrics"),
            raw.get("trial"),
        )
