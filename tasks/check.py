"""`check_task`: read every split of a task (each row checked) and describe what is there.

The report `snowfire task check` prints: examples per split, the answers (label counts, score
summary, tag counts), text lengths in words (percentiles), texts of dev/test also in train
(leakage) and texts repeated within train. Commands that learn run the same reads first, so a
malformed row stops them before anything is extracted or trained.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .example import Example
from .readers import as_spec, available_splits, split_path
from .spec import TaskSpec

PERCENTILES = (50, 90, 99, 100)
SHOWN = 5  # line numbers shown per duplicate finding


@dataclass
class TaskReport:
    """What `check_task` found: the resolved spec, the examples of every split present, and
    the findings (each a JSON-able dict; `lines` renders them)."""

    spec: TaskSpec
    examples: dict[str, list[Example]]
    paths: dict[str, str]
    findings: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The report as text lines."""
        spec, f = self.spec, self.findings
        out = [
            f"task {spec.name}: {spec.kind}{', pairs' if spec.pair else ''}, metric "
            f"{spec.metric} (reported: {', '.join(spec.reported)})"
        ]
        if spec.labels is not None:
            how = " (inferred from train)" if "labels" in spec.inferred else ""
            what = "tags" if spec.kind == "tagging" else "labels"
            out.append(f"{what}{how}: {', '.join(spec.labels)}")
        if spec.score_range is not None:
            how = " (train's min and max)" if "score_range" in spec.inferred else ""
            out.append(f"score range{how}: [{spec.score_range[0]:g}, {spec.score_range[1]:g}]")
        for split in self.examples:
            s = f["splits"][split]
            out.append(f"{split}: {s['examples']} examples from {self.paths[split]}")
            if "answers" in s:
                out.append(f"  {s['answers_title']}: {s['answers']}")
            words = ", ".join(f"p{p} {v}" for p, v in s["words"].items())
            out.append(f"  words per example: {words}")
            if "pieces" in s:
                pieces = ", ".join(f"p{p} {v}" for p, v in s["pieces"].items())
                out.append(
                    f"  encoder pieces: {pieces}; {s['windowed']} longer than the "
                    f"encoder's window of {s['window']} (windowed, not cut)"
                )
        for name, found in f["duplicates"].items():
            where = Path(self.paths[found["split"]]).name  # the file the lines are of
            out.append(
                f"duplicates {name}: {found['count']}"
                + (
                    f" ({where} lines {', '.join(map(str, found['lines']))}"
                    f"{', ...' if found['count'] > len(found['lines']) else ''})"
                    if found["count"]
                    else ""
                )
            )
        for note in f["notes"]:
            out.append(f"note: {note}")
        return out


def _text(e: Example) -> tuple:
    return (e.words_a, e.words_b)


def _percentiles(values: list[int]) -> dict[int, int]:
    array = np.asarray(values)  # (N,)
    return {p: int(np.percentile(array, p, method="higher")) for p in PERCENTILES}


def _answers(spec: TaskSpec, examples: list[Example]) -> tuple[str, str] | None:
    if spec.kind == "tagging":
        counts: Counter[str | float] = Counter(t for e in examples for t in e.tags or ())
        return "tags", ", ".join(f"{t} {n}" for t, n in sorted(counts.items()))
    labels = [e.label for e in examples if e.label is not None]
    if not labels:
        return None
    if spec.kind == "regression":
        x = np.asarray(labels, dtype=np.float64)  # (N,)
        q = np.percentile(x, (25, 50, 75))
        return "scores", (
            f"min {x.min():g}, q1 {q[0]:g}, median {q[1]:g}, q3 {q[2]:g}, "
            f"max {x.max():g}, mean {x.mean():.3g}, sd {x.std():.3g}"
        )
    counts = Counter(labels)
    n = len(labels)
    return "labels", ", ".join(
        f"{label} {counts[label]} ({100 * counts[label] / n:.1f}%)"
        for label in spec.labels or ()
        if counts[label]
    )


def _duplicates(examples: dict[str, list[Example]]) -> dict[str, dict[str, Any]]:
    """dev/test texts also in train (leakage: their score flatters), and train texts seen
    earlier in train; each a count and the first lines."""
    out = {}
    train = examples.get("train", [])
    seen: dict[tuple, Example] = {}
    repeats = []
    for e in train:
        if _text(e) in seen:
            repeats.append(e)
        else:
            seen[_text(e)] = e
    out["within train"] = {
        "count": len(repeats),
        "lines": [e.line for e in repeats[:SHOWN]],
        "split": "train",
    }
    for split in ("dev", "test"):
        if split in examples:
            leaked = [e for e in examples[split] if _text(e) in seen]
            out[f"of train in {split}"] = {
                "count": len(leaked),
                "lines": [e.line for e in leaked[:SHOWN]],
                "split": split,
            }
    return out


def check_task(task: TaskSpec | str, data: str | None = None, pieces=None) -> TaskReport:
    """Read every split of `task` present (ValueError at the first bad row) and report.

    pieces: optional (list[Example]) -> (list of piece counts, window length), the encoder's
    view of the texts (`snowfire task check --encoder`; tasks/ loads no encoder itself)."""
    from .readers import read_split

    spec = as_spec(task)
    splits = available_splits(spec, data)
    for needed in ("train", "dev"):
        if needed not in splits:
            raise FileNotFoundError(
                f"{spec.name}: expected a {needed} split at {split_path(spec, data, needed)}"
            )
    examples = {s: read_split(spec, data, s) for s in splits}
    paths = {s: str(split_path(spec, data, s)) for s in splits}
    findings: dict[str, Any] = {"splits": {}, "notes": []}
    for split, items in examples.items():
        s: dict[str, Any] = {"examples": len(items)}
        shown = _answers(spec, items)
        if shown is not None:
            s["answers_title"], s["answers"] = shown
        elif split != "train":
            findings["notes"].append(f"{split} has no labels: predictions only, no score")
        s["words"] = _percentiles([len(e.words_a) + len(e.words_b or ()) for e in items])
        if pieces is not None:
            counts, window = pieces(items)
            s["pieces"] = _percentiles(counts)
            s["window"], s["windowed"] = window, sum(c > window for c in counts)
        findings["splits"][split] = s
    if spec.labels is not None and spec.kind == "classification":
        unseen = sorted(set(spec.labels) - {e.label for e in examples["train"]})
        if unseen:
            findings["notes"].append(f"labels never seen in train: {', '.join(unseen)}")
    findings["duplicates"] = _duplicates(examples)
    return TaskReport(spec, examples, paths, findings)
