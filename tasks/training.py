"""What a trainer reads of a task, one path for ❄️ heads and 🔥 fine-tuning (and what compare
and a job check before they start): every split present, each row checked, train and dev
needed with gold labels, and the training subsample a capped run draws with its seed. Both
sides of a comparison with the same cap and seed therefore train on the same examples.

    data = read_training(spec, data_dir, cap=2000, seed=3)
    data.examples["train"]    # every training example (the feature set holds them all)
    data.keep                 # positions of the subsample, in file order (None: all)
    data.trained()            # per split, what the run trains on, scores and predicts
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .example import Example
from .predictions import gold_of
from .readers import as_spec, available_splits, read_split, split_path
from .spec import TaskSpec

#: The splits every training run needs: it learns on train and picks its epoch on dev.
TRAINING_SPLITS = ("train", "dev")


def need_splits(task: TaskSpec | str, data: Path | str | None, needed=TRAINING_SPLITS) -> list[str]:
    """The splits of `task` whose files are in `data` (train, dev, test order), after checking
    that each of `needed` is and that there is at least one: ValueError naming every missing
    split with the file expected for it."""
    spec = as_spec(task)
    present = available_splits(spec, data)
    missing = [s for s in needed if s not in present]
    if missing:
        where = ", ".join(
            str(split_path(spec, data, s)) if s in spec.splits else f"no {s} split" for s in missing
        )
        inside = f" in {data}" if spec.folder is not None else ""
        raise ValueError(f"no {'/'.join(missing)} split of {spec.name}{inside} (expected {where})")
    if not present:
        raise ValueError(f"no split of {spec.name} in {data}")
    return present


def train_subset(total: int, cap: int | None, seed: int) -> list[int] | None:
    """`cap` of `total` example indices drawn at random with `seed`, in file order; None (all of
    them) when there is no cap or it is not smaller than the split."""
    if cap is None or cap >= total:
        return None
    return sorted(np.random.default_rng(seed).choice(total, cap, replace=False).tolist())


@dataclass(frozen=True)
class TrainingSplits:
    """A task's splits as a training run reads them: `examples` whole (each split present),
    `keep` the positions of the training subsample (None: every training example)."""

    examples: dict[str, list[Example]]
    keep: list[int] | None

    def trained(self) -> dict[str, list[Example]]:
        """Per split, the examples a run trains on, scores and writes predictions for: train
        cut to the subsample, the others whole."""
        if self.keep is None:
            return dict(self.examples)
        return self.examples | {"train": [self.examples["train"][i] for i in self.keep]}


def read_training(
    task: TaskSpec | str, data: Path | str | None, *, cap: int | None = None, seed: int = 0
) -> TrainingSplits:
    """Every split of `task` present in `data`, each row checked (`need_splits`: train and dev
    needed, and their gold labels), and the training subsample of `cap` examples drawn with
    `seed` (`train_subset`)."""
    spec = as_spec(task)
    examples = {s: read_split(spec, data, s) for s in need_splits(spec, data)}
    unlabelled = [s for s in TRAINING_SPLITS if gold_of(spec, examples[s]) is None]
    if unlabelled:
        which = " and ".join(unlabelled) + (" splits" if len(unlabelled) > 1 else " split")
        raise ValueError(
            f"{spec.name}: the {which} in {data} must have a gold label on every row (a run "
            "learns on train and picks its epoch on dev)"
        )
    return TrainingSplits(examples, train_subset(len(examples["train"]), cap, seed))
