"""A probe's predictions as the task's answers, and their scores: the task's metric
(`tasks.evaluate`) for a task probe, accuracy on the control labels for a control probe.

Predictions are per example, or per word for tagging (regrouped into sentences by the data's
`lengths`, so span F1 is the task's own)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from snowfire.tasks import decode, evaluate

from .data import Probed
from .probes import CONTROL


def sentences(flat: Sequence, lengths: Sequence[int]) -> list[list]:
    """Per-word items regrouped into one list per sentence."""
    cuts = np.cumsum([0, *lengths])  # (N + 1,)
    return [list(flat[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def answers(spec, data: Probed, preds: Sequence | np.ndarray | torch.Tensor) -> list:
    """Predictions (class or tag indices, or scores) in `tasks.evaluate`'s form."""
    values = np.asarray(preds).tolist()
    if spec.kind == "tagging":
        if data.lengths is None:
            raise ValueError(f"{spec.name}: tagging predictions need the sentences' lengths")
        return decode(spec, sentences(values, data.lengths))
    return decode(spec, values)


def gold(spec, data: Probed) -> list:
    """The split's gold answers in `tasks.evaluate`'s form."""
    return answers(spec, data, data.y.numpy())


def scorer(spec, metric: str | None = None) -> Callable[[str, torch.Tensor, Probed], float]:
    """score(group, predictions (N,), data): `metric` (default: the task's) for a task probe,
    accuracy against the control labels for a control probe."""
    metric = metric or spec.metric
    cache: dict[int, list] = {}

    def score(group: str, preds: torch.Tensor, data: Probed) -> float:
        if group in CONTROL:
            if data.yc is None:
                raise ValueError(f"{spec.name}: a {group} probe scored without control labels")
            return float((preds == data.yc).double().mean())
        if id(data) not in cache:
            cache[id(data)] = gold(spec, data)
        truth = cache[id(data)]
        return float(evaluate(spec, truth, answers(spec, data, preds))[metric])

    return score


def correct(preds: np.ndarray, targets: torch.Tensor) -> np.ndarray:
    """(..., N) 1.0 where a prediction is its target (per example, or per word)."""
    return (preds == targets.numpy()).astype(np.float64)
