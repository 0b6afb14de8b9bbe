"""Figure 2: mutual information (nats) between each layer's mean activation and the labels,
on the training split (compare/mi.py: the estimator and why)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from snowfire.options import option

from .base import AnalysisConfig, features, tasks_option
from .output import layer_rows, lines, write


@dataclass(frozen=True)
class MiConfig(AnalysisConfig):
    """Mutual information between each layer and the labels (Figure 2)."""

    name: ClassVar[str] = "mi"

    tasks: list[str] = tasks_option(("cola", "sst2", "mrpc", "stsb"))
    limit: int = option(2000, "at most this many training examples per task", ge=1)
    dims: int = option(
        16, "principal components each layer is reduced to before the estimate", ge=1
    )


def _layer_means(reader, info, limit: int | None = None):
    """(n, L, D) token mean of every layer of each example."""
    import numpy as np

    n = info.num_examples if limit is None else min(limit, info.num_examples)
    out = np.empty((n, info.num_layers, info.dim), dtype=np.float32)
    for start in range(0, n, 512):
        idx = list(range(start, min(start + 512, n)))
        eb = reader.read(info.id, indices=idx)
        for j, i in enumerate(idx):
            out[i] = eb.example(j).astype(np.float32).mean(axis=0)  # (L, D)
    return out


def run(cfg: MiConfig) -> dict[str, Any]:
    """Per task and layer, MI with the labels and with shuffled labels (≈ 0, the check);
    regression labels in 5 equal-frequency bins. OUT/mi.{json,md,png}."""
    import numpy as np

    from snowfire.cache import open_reader
    from snowfire.tasks import label_indices, read_split

    from ..mi import discretise, mi_knn, reduce

    result: dict[str, dict[str, Any]] = {}
    for task in cfg.names:
        spec = cfg.specs[task]
        info = features(cfg, task, ("train",))
        means = _layer_means(open_reader(cfg.store_dir), info, cfg.limit)
        labels = [e.label for e in read_split(spec, cfg.data, "train")][: len(means)]
        if spec.kind == "regression":
            y = discretise(np.array(labels, dtype=np.float64))
        else:
            y = label_indices(spec.labels or [], labels)  # the trainers' indices
        reduced = reduce([means[:, layer] for layer in range(means.shape[1])], dims=cfg.dims)
        shuffled = np.random.default_rng(0).permutation(y)
        result[task] = {
            "mi": [mi_knn(z, y) for z in reduced],
            "mi_shuffled_labels": [mi_knn(z, shuffled) for z in reduced],
            "examples": int(len(y)),
        }
    rows = layer_rows(
        ("task",), "layer ", {(t,): r["mi"] for t, r in result.items()}, lambda v: f"{v:.3f}"
    )
    out = Path(cfg.out)
    lines({t: r["mi"] for t, r in result.items()}, out / "mi.png", "MI with the labels (nats)")
    return write(
        out,
        cfg.name,
        result,
        rows,
        f"MI (nats, Ross 2014 kNN on {cfg.dims} principal components) per layer; the "
        "same with shuffled labels is in mi.json (≈ 0)",
    )
