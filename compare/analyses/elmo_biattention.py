"""Table 3: ELMo 🔥 on pair tasks with bi-attention and ESIM's enhanced pooling, and without
(each text max-pooled alone, then concatenated), dev scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from snowfire.options import option

from .base import AnalysisConfig, finetune_run, tasks_option
from .output import bars, paired_rows, write

#: ELMo 🔥 dev (Table 3), with and without bi-attention, where PAPER.md quotes it
PAPER_BIATTENTION = {"stsb": (80.2, 38.5)}


@dataclass(frozen=True)
class ElmoBiattentionConfig(AnalysisConfig):
    """ELMo 🔥 on pairs with and without bi-attention (Table 3)."""

    name: ClassVar[str] = "elmo-biattention"

    tasks: list[str] = tasks_option(("sick-e", "sick-r", "stsb", "mrpc"))
    seeds: int = option(1, "seeds per cell (a run each; the table shows mean and sd)", ge=1)
    epochs: int | None = option(None, "epochs cap of each run (default: fine-tuning's)", ge=1)
    max_train_examples: int | None = option(
        None, "train on this many examples drawn with the seed (default: all)", ge=1
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from snowfire.extractor import encoder_family

        if encoder_family(self.encoder) != "elmo":
            raise ValueError(
                "ElmoBiattentionConfig.encoder: elmo-biattention fine-tunes ELMo: --encoder "
                f"elmo:..., got {self.encoder!r}"
            )
        for task, spec in self.specs.items():
            if not spec.pair:
                raise ValueError(
                    f"ElmoBiattentionConfig.tasks: elmo-biattention is about pairs: {task} is a "
                    "single-text task"
                )


def run(cfg: ElmoBiattentionConfig) -> dict[str, Any]:
    """Each task's dev score with and without bi-attention, a mean over the seeds;
    OUT/elmo-biattention.{json,md,png}."""

    from ..verdict import mean_sd

    result: dict[str, Any] = {}
    for task in cfg.names:
        metric = cfg.specs[task].metric
        result[task] = {}
        for bi, key in ((True, "bi-attention"), (False, "none")):
            result[task][key] = mean_sd(
                [
                    finetune_run(
                        cfg,
                        task,
                        cfg.root / task / key / f"seed{s}",
                        s,
                        bi_attention=bi,
                        epochs=cfg.epochs,
                        max_train_examples=cfg.max_train_examples,
                    )["dev"][metric]
                    for s in range(cfg.seeds)
                ]
            )
    header = "| task | with bi-attention | without | paper ELMo with | without |"
    rows = paired_rows(result, ("bi-attention", "none"), PAPER_BIATTENTION, header)
    out = Path(cfg.out)
    bars(
        result,
        ("bi-attention", "none"),
        out / "elmo-biattention.png",
        "ELMo fine-tuned on pairs, with and without bi-attention (dev)",
    )
    return write(out, cfg.name, result, rows, f"ELMo 🔥 dev scores, {cfg.seeds} seed(s)")
