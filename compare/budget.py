"""The budgets of `snowfire compare` (`--budget`): per side, the caps on its runs' options, a
training subsample per task applied to both sides (the same examples, drawn with the seed:
tasks.train_subset), and the seeds run when --seeds is not given.

    quick     a first look that fits a 2-core laptop in minutes: 2,000 training examples, ❄️ 3
              epochs, 🔥 2; its cells rarely converge, so its verdicts mostly read
              "budget-limited: no verdict" (compare/judge.py). One seed.
    standard  converges on the smaller tasks on a laptop: every training example (SST-2 and
              MNLI: 20,000 drawn), ❄️ the paper's head alone, early-stopped (up to 40 epochs,
              patience 4), 🔥 with its family's recipe, up to 6 epochs scored each, the best
              epoch's weights kept (patience 2); no grid. Three seeds.
    full      the commands' defaults, and 🔥 with its rate and epochs tuned (`snowfire finetune
              --grid shared`: 3 rates x 2, 3, 4 epochs). Three seeds.

Every choice (early stopping, the best epoch, a grid's cell) is made on the selection split
(tasks/selection.py), never on the split reported.

Every budget scores 🔥's dev twice within each epoch too (curve_points), for its curve. A budget
meant to give a verdict runs enough restarts for their spread to enter Δ's interval.
OUT/results.json records the budget as `Budget.to_json()`: the dicts compare wrote before the
caps had a type (same keys, same order).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from .cell import Mode


@dataclass(frozen=True)
class Caps:
    """What a budget fixes on one side's runs: options of `heads.TrainConfig` (❄️) or
    `finetune.FinetuneConfig` (🔥) of the same names; None leaves the command's default."""

    epochs: int | None = None  # passes over the training data, at most
    patience: int | None = None  # epochs without a better dev score before stopping
    max_train_examples: int | None = None  # training examples drawn with the seed
    curve_points: int | None = None  # 🔥: dev scored this many times within each epoch

    def options(self) -> dict[str, int]:
        """The caps set, as keyword options of the side's run config (in field order)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def to_json(self) -> dict[str, int]:
        """What results.json records: the caps set."""
        return self.options()


@dataclass(frozen=True)
class Budget:
    """One `--budget`: each side's caps, the training subsample per task (both sides) and the
    seeds per side when --seeds is not given."""

    snow: Caps
    fire: Caps
    seeds: int
    subsample: dict[str, int] = field(default_factory=dict)

    def side(self, mode: Mode) -> Caps:
        """The caps of the side a cell of `mode` runs on (`Mode.side`)."""
        return self.snow if mode.side is Mode.SNOW else self.fire

    def caps(self, mode: Mode, task: str) -> Caps:
        """The caps of a `mode` cell of `task`: its side's, with the task's subsample where the
        side caps no training examples itself."""
        caps = self.side(mode)
        if task in self.subsample and caps.max_train_examples is None:
            caps = replace(caps, max_train_examples=self.subsample[task])
        return caps

    def to_json(self) -> dict[str, Any]:
        """What results.json records: {"snow": caps, "fire": caps, "subsample"?: {task: n}}."""
        out: dict[str, Any] = {"snow": self.snow.to_json(), "fire": self.fire.to_json()}
        return out | ({"subsample": dict(self.subsample)} if self.subsample else {})


BUDGETS: dict[str, Budget] = {
    "quick": Budget(
        snow=Caps(epochs=3, patience=2, max_train_examples=2000),
        fire=Caps(epochs=2, max_train_examples=2000, curve_points=2),
        seeds=1,
    ),
    "standard": Budget(
        snow=Caps(epochs=40, patience=4),
        fire=Caps(epochs=6, patience=2, curve_points=2),
        seeds=3,
        subsample={"sst2": 20000, "mnli": 20000},
    ),
    "full": Budget(snow=Caps(), fire=Caps(curve_points=2), seeds=3),
}
