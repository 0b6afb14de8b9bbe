"""What a model trains on: labels and tags as class indices, scores as floats. One mapping for
the ❄️ heads and the 🔥 models (and the analyses), so both sides of a comparison learn the same
index for the same label: its position in `spec.labels`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def label_indices(labels: Sequence[str], values: Iterable) -> np.ndarray:
    """(n,) int64: the position in `labels` of each value (as a string: a label read as 1 is
    the label "1"). ValueError naming the first value that is not a label, and the labels."""
    index = {label: i for i, label in enumerate(labels)}
    out = []
    for value in values:
        found = index.get(str(value))
        if found is None:
            raise ValueError(
                f"label {value!r}: expected one of {', '.join(map(str, labels))} (the task's "
                "labels)"
            )
        out.append(found)
    return np.array(out, dtype=np.int64)


def encode_targets(
    kind: str, labels: Sequence[str] | None, examples
) -> np.ndarray | list[np.ndarray] | None:
    """What a model of a `kind` task with these `labels` trains on, per example: class indices
    (`label_indices`), float32 scores, or per word an array of tag indices; None when an
    example has no gold answer (a test file without gold: predictions only)."""
    tagging = kind == "tagging"
    if any((e.tags if tagging else e.label) is None for e in examples):
        return None
    if kind == "regression":
        return np.array([float(e.label) for e in examples], dtype=np.float32)
    if labels is None:
        raise ValueError(f"encode_targets: a {kind} task needs its labels, got None")
    if kind == "classification":
        return label_indices(labels, (e.label for e in examples))
    return [label_indices(labels, e.tags) for e in examples]


def task_targets(spec, examples) -> np.ndarray | list[np.ndarray] | None:
    """`encode_targets` of a task (`tasks.TaskSpec`): its kind and labels."""
    return encode_targets(spec.kind, spec.labels, examples)
