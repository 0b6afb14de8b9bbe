"""What a trainer reads of a task, one path for ❄️ heads and 🔥 fine-tuning (and what compare
and a job check before they start): every split present, each row checked, train and dev
needed with gold labels, the split that selects and the one that reports (the honest
protocol, tasks/selection.py), and the training subsample a capped run draws with its seed.
Both sides of a comparison with the same cap and seed therefore train on the same examples and
select on the same ones.

    data = read_training(spec, data_dir, cap=2000, seed=3)
    data.examples["train"]    # every training example (the feature set holds them all)
    data.roles                # SplitRoles(selection="select", report="dev", carved=True)
    data.keep                 # positions in train of what trains, in file order (None: all)
    data.carved               # positions in train of the carved selection slice (or None)
    data.trained()            # per split, what the run trains on, selects on, scores
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .example import Example
from .predictions import gold_of
from .readers import as_spec, available_splits, read_split, split_path
from .selection import SELECT, SplitRoles, selection_slice, split_roles
from .spec import TaskSpec

#: The splits every training run needs: it learns on train and picks its epoch on dev.
TRAINING_SPLITS = ("train", "dev")


class MissingSplitError(ValueError, FileNotFoundError):
    """A split whose file is not there: a ValueError as every reader's refusal is, and a
    FileNotFoundError, so a job asking for it is a missing input (404), not a conflict."""


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
        raise MissingSplitError(
            f"no {'/'.join(missing)} split of {spec.name}{inside} (expected {where})"
        )
    if not present:
        raise MissingSplitError(f"no split of {spec.name} in {data}")
    return present


def train_subset(total: int, cap: int | None, seed: int) -> list[int] | None:
    """`cap` of `total` example indices drawn at random with `seed`, in file order; None (all of
    them) when there is no cap or it is not smaller than the split."""
    if cap is None or cap >= total:
        return None
    return sorted(np.random.default_rng(seed).choice(total, cap, replace=False).tolist())


@dataclass(frozen=True)
class TrainingSplits:
    """A task's splits as a training run reads them (the honest protocol: tasks/selection.py).

    examples: every split present, whole (train as in its file);
    roles: which split selects (early stopping, the best epoch) and which reports;
    keep: the positions in train of what the run trains on (the subsample, without the carved
        selection slice), None: every training example;
    carved: the positions in train of the selection slice when it is carved from train (then
        `trained()["select"]` holds it), else None."""

    examples: dict[str, list[Example]]
    keep: list[int] | None
    roles: SplitRoles = field(default_factory=lambda: SplitRoles("dev", "dev", carved=False))
    carved: list[int] | None = None

    def trained(self) -> dict[str, list[Example]]:
        """Per split, the examples a run trains on, scores and writes predictions for: train
        cut to the subsample (and without the carved slice), the carved slice as "select",
        the others whole."""
        out = dict(self.examples)
        if self.keep is not None:
            out["train"] = [self.examples["train"][i] for i in self.keep]
        if self.carved is not None:
            out[SELECT] = [self.examples["train"][i] for i in self.carved]
        return out


def read_training(
    task: TaskSpec | str,
    data: Path | str | None,
    *,
    cap: int | None = None,
    seed: int = 0,
    selection: str = "auto",
) -> TrainingSplits:
    """Every split of `task` present in `data`, each row checked (`need_splits`: train and dev
    needed, and their gold labels), the split roles of the honest protocol (`split_roles`;
    `selection`: "auto", or "dev" for the old protocol), the selection slice carved from train
    where no other split can select (`selection_slice`: the same for every seed), and the
    training subsample of `cap` of the rest drawn with `seed` (`train_subset`)."""
    spec = as_spec(task)
    examples = {s: read_split(spec, data, s) for s in need_splits(spec, data)}
    unlabelled = [s for s in TRAINING_SPLITS if gold_of(spec, examples[s]) is None]
    if unlabelled:
        which = " and ".join(unlabelled) + (" splits" if len(unlabelled) > 1 else " split")
        raise ValueError(
            f"{spec.name}: the {which} in {data} must have a gold label on every row (a run "
            "learns on train and picks its epoch on dev)"
        )
    labelled = [s for s in examples if gold_of(spec, examples[s]) is not None]
    roles = split_roles(labelled, selection)
    train = examples["train"]
    if not roles.carved:
        return TrainingSplits(examples, train_subset(len(train), cap, seed), roles)
    carved = selection_slice(train, spec.kind)
    taken = set(carved)
    rest = [i for i in range(len(train)) if i not in taken]
    drawn = train_subset(len(rest), cap, seed)
    keep = rest if drawn is None else [rest[i] for i in drawn]
    return TrainingSplits(examples, keep, roles, carved)
