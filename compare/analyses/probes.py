"""Figure 1: a probe per layer (logistic or linear regression on the layer's token mean: the
`probe` head), dev score by layer, for the pretrained encoder and, given a 🔥 run of the task,
for its saved encoder re-extracted."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from snowfire.options import option

from .base import AnalysisConfig, features, tasks_option, train_head
from .output import layer_rows, lines, write


@dataclass(frozen=True)
class ProbesConfig(AnalysisConfig):
    """A probe per layer, of the pretrained and the fine-tuned encoder (Figure 1)."""

    name: ClassVar[str] = "probes"

    tasks: list[str] = tasks_option(("cola", "sst2", "mrpc", "stsb"))
    finetuned: list[str] | None = option(
        None,
        "TASK=RUN: a 🔥 run of TASK whose saved encoder (RUN/encoder) is probed too (repeatable)",
    )
    epochs: int = option(10, "epochs of each probe", ge=1)
    lr: float = option(1e-2, "learning rate of each probe", gt=0)

    def __post_init__(self) -> None:
        super().__post_init__()
        for item in self.finetuned or []:
            task, _, run = item.partition("=")
            if not (task and run):
                raise ValueError(f"ProbesConfig.finetuned: expected TASK=RUN, got {item!r}")

    @property
    def runs(self) -> dict[str, str]:
        """Task -> the 🔥 run directory whose encoder is probed."""
        return dict(item.split("=", 1) for item in self.finetuned or [])


def run(cfg: ProbesConfig) -> dict[str, Any]:
    """Each task's dev score by layer, per encoder state; OUT/probes.{json,md,png}."""

    result: dict[str, Any] = {}
    for task in cfg.names:
        metric = cfg.specs[task].metric
        result[task] = {}
        encoders = {"pretrained": cfg.encoder}
        if task in cfg.runs:
            encoders["fine-tuned"] = f"hf:{Path(cfg.runs[task]) / 'encoder'}"
        for state, encoder in encoders.items():
            info = features(cfg, task, ("train", "dev"), encoder=encoder)
            scores = []
            for layer in range(info.num_layers):
                out = cfg.root / task / state / f"layer{layer}"
                m = train_head(
                    cfg,
                    task,
                    "probe",
                    out,
                    "joint",
                    encoder=encoder,
                    layer=layer,
                    epochs=cfg.epochs,
                    lr=cfg.lr,
                )
                scores.append(m["dev"][metric])
            result[task][state] = scores
    series = {f"{t} ({s})": v for t, r in result.items() for s, v in r.items()}
    lines(series, Path(cfg.out) / "probes.png", "probe dev score")
    by_state: dict[tuple[str, ...], list[float]] = {
        (t, s): v for t, r in result.items() for s, v in r.items()
    }
    rows = layer_rows(("task", "state"), "L", by_state, lambda x: f"{100 * x:.1f}")
    return write(Path(cfg.out), cfg.name, result, rows, "probe dev score per layer (x100)")
