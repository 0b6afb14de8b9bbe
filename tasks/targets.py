"""What a model trains on: labels and tags as class indices, scores as floats. One mapping for
the ❄️ heads and the 🔥 models (and the analyses), so both sides of a comparison learn the same
index for the same label: its position in `spec.labels`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .predictions import gold_of


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


def task_targets(spec, examples) -> np.ndarray | list[np.ndarray] | None:
    """What a model trains on, per example: class indices (`label_indices` of `spec.labels`),
    float32 scores, or per word an array of tag indices; None for a split without gold labels
    (a test file without gold: predictions only)."""
    if gold_of(spec, examples) is None:
        return None
    if spec.kind == "regression":
        return np.array([float(e.label) for e in examples], dtype=np.float32)
    if spec.kind == "classification":
        return label_indices(spec.labels, (e.label for e in examples))
    return [label_indices(spec.labels, e.tags) for e in examples]
