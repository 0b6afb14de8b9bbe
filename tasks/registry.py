"""The tasks: where each split lives, what kind of answer it has, and how it is scored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from .metrics import accuracy, binary_f1, matthews_corrcoef, pearson, spearman
from .spans import span_scores

#: The split names, in the order they are listed and extracted.
SPLITS = ("train", "dev", "test")
KINDS = ("classification", "regression", "tagging")


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    name:   registry key, e.g. "sick-e"
    folder: sub-folder of the data directory holding its files (sick-e and sick-r share "sick")
    files:  file name of each split present in the release (of SPLITS)
    kind:   "classification" (label is a class name), "regression" (label is a float score) or
            "tagging" (one tag per word)
    pair:   whether an example holds two texts (words_a, words_b)
    labels: class names, or the tag set of a tagging task (sorted, "O" included); None for
            regression
    metric: name of the primary metric, a key of `evaluate(...)`'s result
    score_range: (low, high) bounds of a regression score, inclusive; None otherwise
    """

    name: str
    folder: str
    files: dict[str, str]
    kind: str
    pair: bool
    labels: list[str] | None
    metric: str
    score_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"TaskSpec {self.name}: expected kind in {KINDS}, got {self.kind!r}")
        if set(self.files) - set(SPLITS):
            raise ValueError(
                f"TaskSpec {self.name}: expected splits among {SPLITS}, got {sorted(self.files)}"
            )
        if (self.kind == "regression") != (self.labels is None):
            raise ValueError(f"TaskSpec {self.name}: labels must be None exactly for regression")
        if (self.kind == "regression") != (self.score_range is not None):
            raise ValueError(f"TaskSpec {self.name}: score_range is for regression tasks only")


def _files(train: str, dev: str, test: str) -> dict[str, str]:
    return dict(zip(SPLITS, (train, dev, test), strict=True))


_CONLL_TAGS = sorted(["O"] + [f"{p}-{t}" for p in "BI" for t in ("PER", "LOC", "ORG", "MISC")])
_SPECS = [
    TaskSpec(
        name="conll2003",
        folder="conll2003",
        files=_files("eng.train", "eng.testa", "eng.testb"),
        kind="tagging",
        pair=False,
        labels=_CONLL_TAGS,
        metric="span_f1",
    ),
    TaskSpec(
        name="sst2",
        folder="sst2",
        files=_files("train.tsv", "dev.tsv", "test.tsv"),
        kind="classification",
        pair=False,
        labels=["0", "1"],
        metric="accuracy",
    ),
    TaskSpec(
        name="mnli",
        folder="mnli",
        files=_files("train.tsv", "dev_matched.tsv", "test_matched.tsv"),
        kind="classification",
        pair=True,
        labels=["entailment", "neutral", "contradiction"],
        metric="accuracy",
    ),
    TaskSpec(
        name="mrpc",
        folder="mrpc",
        files=_files("train.tsv", "dev.tsv", "msr_paraphrase_test.txt"),
        kind="classification",
        pair=True,
        labels=["0", "1"],
        metric="accuracy",
    ),
    TaskSpec(
        name="stsb",
        folder="stsb",
        files=_files("sts-train.csv", "sts-dev.csv", "sts-test.csv"),
        kind="regression",
        pair=True,
        labels=None,
        metric="pearson",
        score_range=(0.0, 5.0),
    ),
    TaskSpec(
        name="sick-e",
        folder="sick",
        files=_files("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        kind="classification",
        pair=True,
        labels=["ENTAILMENT", "NEUTRAL", "CONTRADICTION"],
        metric="accuracy",
    ),
    TaskSpec(
        name="sick-r",
        folder="sick",
        files=_files("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        kind="regression",
        pair=True,
        labels=None,
        metric="pearson",
        score_range=(1.0, 5.0),
    ),
    TaskSpec(
        name="cola",
        folder="cola",
        files=_files("in_domain_train.tsv", "in_domain_dev.tsv", "out_of_domain_dev.tsv"),
        kind="classification",
        pair=False,
        labels=["0", "1"],
        metric="matthews",
    ),
]
TASKS: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})
TASK_NAMES = tuple(TASKS)


def get_task(name: str) -> TaskSpec:
    """The spec of task `name`; ValueError naming the known tasks otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"task name: expected str, got {type(name).__name__}")
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: expected one of {', '.join(TASKS)}")
    return TASKS[name]


def _check_labels(spec: TaskSpec, values: Sequence, which: str) -> None:
    allowed = set(spec.labels or ())
    for i, value in enumerate(values):
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(
                f"evaluate({spec.name!r}): {which}[{i}] = {value!r} is not a label "
                f"of the task (expected one of {', '.join(map(repr, spec.labels))})"
            )


def evaluate(task: str, gold: list, pred: list) -> dict[str, float]:
    """Every usual metric of `task`, as fractions (correlations in [-1, 1]).

    classification: gold/pred are label strings of the task -> accuracy, plus
        f1 (positive "1") for mrpc and matthews for cola
    regression: gold/pred are scores -> pearson, spearman
    tagging: gold/pred are lists of tag sequences, one per sentence -> span_f1, precision,
        recall (conlleval chunks; see `tasks.spans`)
    The result always holds the task's primary metric `get_task(task).metric`.
    """
    spec = get_task(task)
    if len(gold) != len(pred):
        raise ValueError(
            f"evaluate({task!r}): expected gold and pred of the same length, "
            f"got {len(gold)} and {len(pred)}"
        )
    if spec.kind == "tagging":
        return span_scores(gold, pred)
    if spec.kind == "regression":
        return {"pearson": pearson(gold, pred), "spearman": spearman(gold, pred)}
    _check_labels(spec, gold, "gold")
    _check_labels(spec, pred, "pred")
    result = {"accuracy": accuracy(gold, pred)}
    if task == "mrpc":
        result["f1"] = binary_f1(gold, pred, positive="1")
    if task == "cola":
        result["matthews"] = matthews_corrcoef(gold, pred)
    return result
