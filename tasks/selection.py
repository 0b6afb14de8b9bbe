"""The honest protocol's splits: every choice made while training (early stopping, the best
epoch, a grid's or a search's trial, the ❄️ head) is made on a *selection* split, and the
score reported comes from a *report* split that no choice has seen (Chen et al. EMNLP 2022,
"Revisiting Parameter-Efficient Tuning": selecting and reporting on one split inflates the arms
selected hardest).

    the task names a `select` split        select on it; report on test if labelled, else dev
    a labelled test split exists           select on dev, report on test
    otherwise (e.g. GLUE: test unlabelled) select on a slice carved from train, report on dev

The carved slice is stratified (each class, score quintile or tag profile keeps its share of
train), `SELECTION_SHARE` of train with a floor and a cap, never more than a quarter of train,
drawn with its own seed (`SELECTION_SEED`, not the run's), so every arm, head, trial and seed of
a comparison trains on the same examples and selects on the same slice. `selection="dev"` keeps
the old, optimistic protocol (select and report on dev) reachable; results then say so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .example import Example

#: The carved slice: this share of train, at least the floor, at most the cap (and a quarter).
SELECTION_SHARE = 0.1
SELECTION_FLOOR = 200
SELECTION_CAP = 2000
#: The slice's own seed: the same slice whatever the run's seed.
SELECTION_SEED = 0
#: How a run picks its selection split: auto (the table above) or dev (the old protocol).
SELECTIONS = ("auto", "dev")
#: The split name of the selection slice (carved from train, or the task's own file).
SELECT = "select"
#: The help of the options every trainer shares (heads.TrainConfig, finetune.FinetuneConfig).
SELECTION_HELP = (
    "the split every choice is made on (early stopping, the best epoch): auto: dev where a "
    "labelled test split reports, else a stratified slice of train (tasks/selection.py), dev "
    "reporting; dev: select and report on dev (the old protocol: optimistic, flagged)"
)
PAUSE_HELP = (
    "train up to this epoch, then stop with a checkpoint to continue from (a rung of paired "
    "racing); the run is not finished"
)
STOP_HELP = (
    "end the run at this epoch with its best weights so far (paired racing stopped it); "
    "its metrics say so"
)


@dataclass(frozen=True)
class SplitRoles:
    """Which split selects and which reports; `carved`: the selection split is a slice of
    train (then removed from training); `honest`: the two differ."""

    selection: str
    report: str
    carved: bool

    @property
    def honest(self) -> bool:
        return self.selection != self.report

    def to_json(self) -> dict[str, object]:
        return {"selection": self.selection, "report": self.report, "carved": self.carved}


def split_roles(labelled: Sequence[str], selection: str = "auto") -> SplitRoles:
    """The roles for a task whose splits with gold labels are `labelled` (train and dev at
    least)."""
    if selection not in SELECTIONS:
        raise ValueError(f"selection: expected one of {', '.join(SELECTIONS)}, got {selection!r}")
    missing = [s for s in ("train", "dev") if s not in labelled]
    if missing:
        raise ValueError(f"split roles: expected labelled train and dev splits, missing {missing}")
    if selection == "dev":
        return SplitRoles("dev", "dev", carved=False)
    report = "test" if "test" in labelled else "dev"
    if SELECT in labelled:
        return SplitRoles(SELECT, report, carved=False)
    if report == "test":
        return SplitRoles("dev", "test", carved=False)
    return SplitRoles(SELECT, "dev", carved=True)


def selection_size(total: int) -> int:
    """How many of `total` training examples the carved slice takes."""
    size = min(max(round(SELECTION_SHARE * total), SELECTION_FLOOR), SELECTION_CAP)
    return max(1, min(size, total // 4)) if total >= 4 else 0


def _score(example: Example) -> float:
    assert example.label is not None  # a train split's regression example has its score
    return float(example.label)


def _stratum(example: Example, kind: str, cuts: np.ndarray | None) -> object:
    if kind == "classification":
        return example.label
    if kind == "regression":
        assert cuts is not None  # selection_slice cuts a regression task's scores
        return int(np.searchsorted(cuts, _score(example), side="right"))
    # tagging: the entity types a sentence holds (its tag profile, prefixes dropped)
    return tuple(sorted({t.split("-", 1)[-1] for t in example.tags or () if t != "O"}))


def selection_slice(
    examples: Sequence[Example], kind: str, seed: int = SELECTION_SEED
) -> list[int]:
    """The indices (in `examples`, sorted) of the stratified selection slice of train: each
    stratum gets its share of `selection_size(len(examples))` by largest remainder, drawn at
    random within it with `seed`."""
    total = selection_size(len(examples))
    if total == 0:
        return []
    cuts = None
    if kind == "regression":
        scores = np.array([_score(e) for e in examples])  # (N,)
        cuts = np.quantile(scores, [0.2, 0.4, 0.6, 0.8])  # quintile edges
    strata: dict[object, list[int]] = defaultdict(list)
    for i, example in enumerate(examples):
        strata[_stratum(example, kind, cuts)].append(i)
    keys = sorted(strata, key=repr)  # an order that does not depend on the file's
    exact = {k: total * len(strata[k]) / len(examples) for k in keys}
    take = {k: int(exact[k]) for k in keys}
    by_remainder = sorted(keys, key=lambda k: (-(exact[k] - take[k]), repr(k)))
    for k in by_remainder[: total - sum(take.values())]:
        take[k] += 1
    rng = np.random.default_rng(seed)
    chosen = [i for k in keys for i in rng.choice(strata[k], take[k], replace=False).tolist()]
    return sorted(chosen)


def split_off(examples: Sequence[Example], kind: str, seed: int = SELECTION_SEED):
    """(train without the slice, the slice, the slice's indices in train): both keep their
    examples' original `index` (their position in the train file)."""
    chosen = selection_slice(examples, kind, seed)
    taken = set(chosen)
    rest = [e for i, e in enumerate(examples) if i not in taken]
    return rest, [examples[i] for i in chosen], chosen
