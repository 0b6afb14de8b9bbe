"""Table 4: the same ❄️ head on pairs encoded jointly (one input) and separately (each text
alone), dev scores beside the paper's BERT-base ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from snowfire.options import option

from .base import AnalysisConfig, features, tasks_option, train_head
from .output import bars, paired_rows, write

#: The paper's Table 4 (BERT-base ❄️ dev: joint, separate).
PAPER_PAIRS = {
    "sick-e": (85.5, 81.2),
    "sick-r": (86.4, 86.8),
    "stsb": (88.1, 86.8),
    "mrpc": (83.3, 81.4),
}


@dataclass(frozen=True)
class PairsConfig(AnalysisConfig):
    """❄️ on pairs encoded jointly vs separately (Table 4)."""

    name: ClassVar[str] = "pairs"

    tasks: list[str] = tasks_option(tuple(PAPER_PAIRS))
    seeds: int = option(1, "seeds per cell (a run each; the table shows mean and sd)", ge=1)
    head: str = option("esim", "the ❄️ head trained both ways (a pair head: esim, bcn, ...)")
    epochs: int | None = option(None, "epochs cap of each run (default: the head's)", ge=1)
    max_train_examples: int | None = option(
        None,
        "train on this many examples drawn with the seed, the same both ways (default: all)",
        ge=1,
    )


def run(cfg: PairsConfig) -> dict[str, Any]:
    """Every task's dev score both ways, mean and sd over the seeds; OUT/pairs.{json,md,png}."""
    from snowfire.extractor import PAIR_ENCODINGS

    from ..verdict import mean_sd

    caps: dict[str, Any] = {"max_train_examples": cfg.max_train_examples}
    caps |= {"epochs": cfg.epochs} if cfg.epochs else {}
    result: dict[str, Any] = {}
    for task in cfg.names:
        metric = cfg.specs[task].metric
        result[task] = {}
        for pair in PAIR_ENCODINGS:
            features(cfg, task, ("train", "dev"), pair)
            scores = [
                train_head(
                    cfg, task, cfg.head, cfg.root / task / pair / f"seed{s}", pair, seed=s, **caps
                )["dev"][metric]
                for s in range(cfg.seeds)
            ]
            result[task][pair] = mean_sd(scores)
    header = "| task | joint | separate | paper BERT-base joint | separate |"
    rows = paired_rows(result, PAIR_ENCODINGS, PAPER_PAIRS, header)
    out = Path(cfg.out)
    title = f"{cfg.encoder}: {cfg.head} on pairs (dev)"
    bars(result, PAIR_ENCODINGS, out / "pairs.png", title)
    limits = (f", {cfg.epochs} epochs at most" if cfg.epochs else "") + (
        f", the same {cfg.max_train_examples} training examples per seed both ways"
        if cfg.max_train_examples
        else ""
    )
    caption = (
        f"❄️ {cfg.head}, pairs encoded jointly vs separately: dev scores (x100), "
        f"{cfg.seeds} seed(s){limits}; the paper's columns are its dev scores"
    )
    return write(out, cfg.name, result, rows, caption)
