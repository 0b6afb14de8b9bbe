"""`evaluate`: every metric a task reports, from gold and predicted answers."""

from __future__ import annotations

from collections.abc import Sequence

from .metrics import accuracy, binary_f1, macro_f1, matthews_corrcoef, pearson, spearman
from .registry import get_task
from .spans import span_scores
from .spec import TaskSpec

_CLASSIFICATION = {
    "accuracy": accuracy,
    "macro_f1": macro_f1,
    "matthews": matthews_corrcoef,
    "f1": lambda g, p: binary_f1(g, p, positive="1"),  # GLUE's MRPC F1: "1" = paraphrase
}


def _check_labels(spec: TaskSpec, values: Sequence, which: str) -> None:
    allowed = set(spec.labels or ())
    for i, value in enumerate(values):
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(
                f"evaluate({spec.name!r}): {which}[{i}] = {value!r} is not a label "
                f"of the task (expected one of {', '.join(map(repr, spec.labels or ()))})"
            )


def evaluate(task: TaskSpec | str, gold: list, pred: list) -> dict[str, float]:
    """Every metric `task.reported` names (a registered task may be given by name), as
    fractions (correlations in [-1, 1]); the primary metric `task.metric` is always there.

    classification: gold/pred are label strings of the task -> accuracy, and macro_f1,
        matthews, f1 (positive "1": MRPC) where the task reports them
    regression: gold/pred are scores -> pearson, spearman
    tagging: gold/pred are lists of tag sequences, one per sentence -> span_f1, precision,
        recall (conlleval chunks; see `tasks.spans`), or accuracy over every tag
    """
    spec = get_task(task) if isinstance(task, str) else task
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"evaluate: expected a TaskSpec or a task name, got {type(task).__name__}")
    if len(gold) != len(pred):
        raise ValueError(
            f"evaluate({spec.name!r}): expected gold and pred of the same length, "
            f"got {len(gold)} and {len(pred)}"
        )
    if spec.kind == "tagging":
        if spec.metric == "span_f1":
            return span_scores(gold, pred)
        for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
            if len(g) != len(p):
                raise ValueError(
                    f"evaluate({spec.name!r}): sentence {i}: expected {len(g)} predicted tags "
                    f"(one per gold tag), got {len(p)}"
                )
        flat_gold = [t for seq in gold for t in seq]
        return {"accuracy": accuracy(flat_gold, [t for seq in pred for t in seq])}
    if spec.kind == "regression":
        return {"pearson": pearson(gold, pred), "spearman": spearman(gold, pred)}
    _check_labels(spec, gold, "gold")
    _check_labels(spec, pred, "pred")
    return {name: _CLASSIFICATION[name](gold, pred) for name in spec.reported}
