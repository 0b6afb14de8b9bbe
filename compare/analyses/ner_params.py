"""Table 5: the parameters added on NER. ❄️ + CRF and ❄️ + BiLSTM + CRF (the `crf` and
`bilstm-crf` heads), and 🔥 with a CRF output, with and without a BiLSTM under it, each with and
without gradual unfreezing; dev F1 beside the paper's ELMo rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from snowfire.options import option

from .base import AnalysisConfig, features, finetune_run, tasks_option, train_head
from .output import hbars, write

#: ELMo, CoNLL-2003 dev F1 (Table 5); the paper lists no 🔥 + BiLSTM + CRF without unfreezing
PAPER_NER = {
    "❄️ + CRF": 91.9,
    "❄️ + BiLSTM + CRF": 95.5,
    "🔥 + CRF": 95.1,
    "🔥 + CRF + gradual unfreezing": 95.5,
    "🔥 + BiLSTM + CRF": None,
    "🔥 + BiLSTM + CRF + gradual unfreezing": 95.2,
}


@dataclass(frozen=True)
class NerParamsConfig(AnalysisConfig):
    """The parameters added on NER: CRF, BiLSTM, gradual unfreezing (Table 5)."""

    name: ClassVar[str] = "ner-params"

    tasks: list[str] = tasks_option(("conll2003",), "the paper's (one tagging task)")
    seeds: int = option(1, "seeds per cell (a run each; the table shows mean and sd)", ge=1)
    epochs: int | None = option(
        None, "epochs cap of each run (default: the head's and fine-tuning's)", ge=1
    )
    max_train_examples: int | None = option(
        None,
        "❄️ and 🔥 on this many training sentences drawn with the seed (default: all)",
        ge=1,
    )
    lstm: int = option(200, "🔥 + BiLSTM: units per direction of the BiLSTM", ge=1)

    def __post_init__(self) -> None:
        super().__post_init__()

        if len(self.specs) != 1 or next(iter(self.specs.values())).kind != "tagging":
            raise ValueError(f"NerParamsConfig.tasks: expected one tagging task, got {self.names}")


def run(cfg: NerParamsConfig) -> dict[str, Any]:
    """Every cell's dev F1, a mean over the seeds; OUT/ner-params.{json,md,png}."""

    from ..verdict import mean_sd

    (task,) = cfg.names
    metric = cfg.specs[task].metric
    features(cfg, task, ("train", "dev"))
    caps: dict[str, Any] = {"max_train_examples": cfg.max_train_examples}
    if cfg.epochs:
        caps["epochs"] = cfg.epochs
    cells = {}
    for head, name in (("crf", "❄️ + CRF"), ("bilstm-crf", "❄️ + BiLSTM + CRF")):
        cells[name] = mean_sd(
            [
                train_head(
                    cfg,
                    task,
                    head,
                    cfg.root / head / f"seed{s}",
                    "joint",
                    seed=s,
                    **caps,
                )["dev"][metric]
                for s in range(cfg.seeds)
            ]
        )
    for units, layer in ((0, "🔥 + CRF"), (cfg.lstm, "🔥 + BiLSTM + CRF")):
        for gradual in (False, True):
            name = layer + (" + gradual unfreezing" if gradual else "")
            run = cfg.root / f"fire-lstm{units}-{'gu' if gradual else 'all'}"
            cells[name] = mean_sd(
                [
                    finetune_run(
                        cfg,
                        task,
                        run / f"seed{s}",
                        s,
                        crf=True,
                        output_lstm=units,
                        gradual_unfreezing=gradual,
                        **caps,
                    )["dev"][metric]
                    for s in range(cfg.seeds)
                ]
            )
    rows = ["| set-up | dev F1 | sd | paper, ELMo |", "| --- | --- | --- | --- |"]
    for name, (mean, sd) in cells.items():
        paper = PAPER_NER.get(name)
        rows.append(
            f"| {name} | {100 * mean:.1f} | {'–' if sd is None else f'{100 * sd:.1f}'} "
            f"| {'–' if paper is None else paper} |"
        )
    out = Path(cfg.out)
    hbars(cells, out / "ner-params.png", f"{cfg.encoder}: parameters added on {task} (dev F1)")
    caption = (
        f"{task} dev {metric}, {cfg.seeds} seed(s); 🔥 BiLSTM: {cfg.lstm} units per direction"
        + (f"; {cfg.epochs} epochs" if cfg.epochs else "")
        + (
            f"; ❄️ and 🔥 on the same {cfg.max_train_examples} training sentences per seed"
            if cfg.max_train_examples
            else ""
        )
    )
    return write(out, cfg.name, {task: cells}, rows, caption)
