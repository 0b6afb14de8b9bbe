"""What a task is: its kind, its labels, its metric, and where each split lives and how to read it.

One class for the eight registered tasks (tasks/registry.py, in code) and for a user's own task
(tasks/spec_file.py, from a YAML or JSON spec). A split's `Source` names a file, its format and
the columns that hold the text(s) and the answer:

    format      columns (role -> column)                     options
    glue-tsv    - (the layout of tasks/tsv.py LAYOUTS)        layout: the LAYOUTS key
    conll       tokens, tags: 0-based field indices           -
    csv, tsv    text | text_a + text_b, label (header names)  quoting: bool
                tokens, tags (tagging: space-separated)
    jsonl       as csv; tagging: tokens, tags are lists       -
    parquet     as jsonl                                      -
    hf-dataset  as jsonl (a ClassLabel gives its names)       split: the DatasetDict's split

A registered task's paths are relative to `<data>/<folder>`; a user task's are absolute (its
spec file's relative paths are resolved against the spec file when it is loaded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The split names, in the order they are listed and extracted. `select`: a task's own selection
#: split (tasks/selection.py: where a run makes its choices), which a user's spec may name.
SPLITS = ("train", "dev", "test", "select")
#: The splits of a registered task's release.
RELEASE_SPLITS = ("train", "dev", "test")
KINDS = ("classification", "regression", "tagging")
FORMATS = ("glue-tsv", "conll", "csv", "tsv", "jsonl", "parquet", "hf-dataset")
#: The formats a spec file may name (glue-tsv is the registered tasks' own).
USER_FORMATS = FORMATS[1:]
#: The metrics a task of each kind may choose as its primary one; the first is the default.
METRICS = {
    "classification": ("accuracy", "macro_f1", "matthews"),
    "regression": ("pearson", "spearman"),
    "tagging": ("span_f1", "accuracy"),
}
#: What `evaluate` reports besides the primary metric, by kind and primary metric.
_ALWAYS = {
    "classification": ("accuracy",),
    "regression": ("pearson", "spearman"),
    "tagging": (),
}
_WITH = {("tagging", "span_f1"): ("precision", "recall")}


@dataclass(frozen=True)
class Source:
    """One split's file: `path`, its `format` (FORMATS), which `columns` hold what (role ->
    header name or field index), and the format's `options` (see the module docstring)."""

    path: str
    format: str
    columns: dict[str, str | int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(
                f"Source {self.path}: expected format in {', '.join(FORMATS)}, got {self.format!r}"
            )

    def to_json(self) -> dict[str, Any]:
        """The spec-file form of this source (format options at the top level)."""
        out: dict[str, Any] = {"path": self.path, "format": self.format}
        if self.columns:
            out["columns"] = dict(self.columns)
        return out | dict(self.options)


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    name:   registry key or the spec's name, e.g. "sick-e", "tickets"
    kind:   "classification" (label is a class name), "regression" (label is a float score) or
            "tagging" (one tag per word)
    pair:   whether an example holds two texts (words_a, words_b)
    labels: class names, or the tag set of a tagging task; None for regression
    metric: name of the primary metric, a key of `evaluate(...)`'s result
    splits: the `Source` of each split the task has (train and dev at least for a user task)
    score_range: (low, high) bounds of a regression score, inclusive; None otherwise
    folder: registered tasks: the sub-folder of the data directory their paths are relative
            to (sick-e and sick-r share "sick"); None: a user task (absolute paths)
    extra_metrics: metrics `evaluate` reports beside the kind's (mrpc: f1, a user
            classification task: macro_f1)
    origin: "registered", or where a user spec came from (its file, or "inline")
    inferred: which of labels / score_range were inferred from the train split
    """

    name: str
    kind: str
    pair: bool
    labels: list[str] | None
    metric: str
    splits: dict[str, Source]
    score_range: tuple[float, float] | None = None
    folder: str | None = None
    extra_metrics: tuple[str, ...] = ()
    origin: str = "registered"
    inferred: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        where = f"TaskSpec {self.name}"
        if self.kind not in KINDS:
            raise ValueError(f"{where}: expected kind in {KINDS}, got {self.kind!r}")
        if set(self.splits) - set(SPLITS):
            raise ValueError(f"{where}: expected splits among {SPLITS}, got {sorted(self.splits)}")
        if (self.kind == "regression") != (self.labels is None):
            raise ValueError(f"{where}: labels must be None exactly for regression")
        if self.kind != "regression" and self.score_range is not None:
            raise ValueError(f"{where}: score_range is for regression tasks only")
        if self.kind == "tagging" and self.pair:
            raise ValueError(f"{where}: a tagging task tags the words of one text (pair: false)")
        allowed = METRICS[self.kind] + (("f1",) if self.kind == "classification" else ())
        for metric in (self.metric, *self.extra_metrics):
            if metric not in allowed:
                raise ValueError(
                    f"{where}: expected a {self.kind} metric ({', '.join(METRICS[self.kind])}), "
                    f"got {metric!r}"
                )

    @property
    def registered(self) -> bool:
        """One of the eight tasks in code (tasks/registry.py), not a user's spec."""
        return self.origin == "registered"

    @property
    def reported(self) -> tuple[str, ...]:
        """Every metric `evaluate` returns, the primary one first."""
        names = (self.metric, *_WITH.get((self.kind, self.metric), ()), *_ALWAYS[self.kind])
        return tuple(dict.fromkeys(names + self.extra_metrics))

    def to_json(self) -> dict[str, Any]:
        """The spec as a spec-file dict (every split's path absolute when the task is a user's,
        relative to `<data>/<folder>` for a registered one); `tasks.describe` adds sha256."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "pair": self.pair,
            "metric": self.metric,
            "labels": None if self.labels is None else list(self.labels),
            "score_range": None if self.score_range is None else list(self.score_range),
            "splits": {s: src.to_json() for s, src in self.splits.items()},
        }
        if self.folder is not None:
            out["folder"] = self.folder
        return out
