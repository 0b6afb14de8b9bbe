"""The eight registered tasks: where each split lives, what kind of answer it has, how it is
scored. They are `TaskSpec`s like a user's own task (tasks/spec.py), with paths relative to
`<data>/<folder>` and the formats of their releases (GLUE-style TSV layouts, CoNLL columns)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .spec import RELEASE_SPLITS, Source, TaskSpec


def _glue(layout: str, train: str, dev: str, test: str) -> dict[str, Source]:
    files = (train, dev, test)
    return {
        s: Source(f, "glue-tsv", options={"layout": layout})
        for s, f in zip(RELEASE_SPLITS, files, strict=True)
    }


def _conll(train: str, dev: str, test: str) -> dict[str, Source]:
    # token, part of speech, syntactic chunk, named-entity tag: every line has all four
    columns: dict[str, str | int] = {"tokens": 0, "tags": 3}
    files = (train, dev, test)
    return {
        s: Source(f, "conll", columns, {"fields": 4})
        for s, f in zip(RELEASE_SPLITS, files, strict=True)
    }


_CONLL_TAGS = sorted(["O"] + [f"{p}-{t}" for p in "BI" for t in ("PER", "LOC", "ORG", "MISC")])
_SPECS = [
    TaskSpec(
        name="conll2003",
        folder="conll2003",
        splits=_conll("eng.train", "eng.testa", "eng.testb"),
        kind="tagging",
        pair=False,
        labels=_CONLL_TAGS,
        metric="span_f1",
    ),
    TaskSpec(
        name="sst2",
        folder="sst2",
        splits=_glue("sst2", "train.tsv", "dev.tsv", "test.tsv"),
        kind="classification",
        pair=False,
        labels=["0", "1"],
        metric="accuracy",
    ),
    TaskSpec(
        name="mnli",
        folder="mnli",
        splits=_glue("mnli", "train.tsv", "dev_matched.tsv", "test_matched.tsv"),
        kind="classification",
        pair=True,
        labels=["entailment", "neutral", "contradiction"],
        metric="accuracy",
    ),
    TaskSpec(
        name="mrpc",
        folder="mrpc",
        splits=_glue("mrpc", "train.tsv", "dev.tsv", "msr_paraphrase_test.txt"),
        kind="classification",
        pair=True,
        labels=["0", "1"],
        metric="accuracy",
        extra_metrics=("f1",),
    ),
    TaskSpec(
        name="stsb",
        folder="stsb",
        splits=_glue("stsb", "sts-train.csv", "sts-dev.csv", "sts-test.csv"),
        kind="regression",
        pair=True,
        labels=None,
        metric="pearson",
        score_range=(0.0, 5.0),
    ),
    TaskSpec(
        name="sick-e",
        folder="sick",
        splits=_glue("sick-e", "SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        kind="classification",
        pair=True,
        labels=["ENTAILMENT", "NEUTRAL", "CONTRADICTION"],
        metric="accuracy",
    ),
    TaskSpec(
        name="sick-r",
        folder="sick",
        splits=_glue("sick-r", "SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        kind="regression",
        pair=True,
        labels=None,
        metric="pearson",
        score_range=(1.0, 5.0),
    ),
    TaskSpec(
        name="cola",
        folder="cola",
        splits=_glue("cola", "in_domain_train.tsv", "in_domain_dev.tsv", "out_of_domain_dev.tsv"),
        kind="classification",
        pair=False,
        labels=["0", "1"],
        metric="matthews",
    ),
]
TASKS: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})
TASK_NAMES = tuple(TASKS)


def get_task(name: str) -> TaskSpec:
    """The spec of registered task `name`; ValueError naming the known tasks otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"task name: expected str, got {type(name).__name__}")
    if name not in TASKS:
        raise ValueError(
            f"unknown task {name!r}: expected one of {', '.join(TASKS)} (or a spec file: "
            "--task-spec FILE)"
        )
    return TASKS[name]
