"""What the analyses share: the options every one has, and the runs they make (❄️ head runs
and 🔥 runs, ordinary run directories, so a finished one is read back, not trained again)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from extractor import ENCODER_FORMS
from options import check, option
from tasks import TASK_NAMES


def tasks_option(default: tuple[str, ...], why: str = "the paper's") -> Any:
    """The `tasks` field of an analysis, defaulting to `default`."""
    return option(
        help=f"tasks (repeatable, or comma-separated; default: {why}: {', '.join(default)})",
        factory=lambda: list(default), choices=TASK_NAMES,
    )  # fmt: skip


@dataclass(frozen=True)
class AnalysisConfig:
    """The options of every analysis; each analysis' config adds its own, and its `tasks`
    (`tasks_option`, checked here)."""

    #: The analysis' name: `snowfire analyze NAME`, OUT/NAME.json, .md, .png.
    name: ClassVar[str] = ""

    encoder: str = option(help=f"the encoder: {ENCODER_FORMS}")
    data: str = option(help="task data directory (one folder per task)")
    out: str = option(help="output directory (NAME.json, NAME.md, NAME.png; runs under OUT/NAME/)")
    store: str | None = option(None, "feature store (default: OUT/store)")

    def __post_init__(self) -> None:
        check(self)
        where = type(self).__name__
        for field in ("encoder", "data", "out"):
            if not getattr(self, field):
                raise ValueError(f"{where}.{field}: expected a non-empty string")
        tasks = getattr(self, "tasks", None)
        if not tasks:
            raise ValueError(f"{where}.tasks: expected at least one task")
        object.__setattr__(self, "tasks", list(dict.fromkeys(tasks)))  # each once, in order

    @property
    def store_dir(self) -> str:
        """`store`, or OUT/store."""
        return self.store or str(Path(self.out) / "store")

    @property
    def root(self) -> Path:
        """OUT/NAME: the analysis' run directories."""
        return Path(self.out) / self.name


def train_head(cfg: AnalysisConfig, task: str, head: str, out: Path, pair: str, seed: int = 0,
               encoder: str | None = None, **options: Any) -> dict:  # fmt: skip
    """A ❄️ head run on the analysis' store (`snowfire train`): its metrics."""
    from heads import TrainConfig, train

    return train(TrainConfig(
        store=cfg.store_dir, encoder=encoder or cfg.encoder, task=task, head=head, data=cfg.data,
        out=str(out), pair_encoding=pair, seed=seed, progress=False, **options,
    ))  # fmt: skip


def finetune_run(cfg: AnalysisConfig, task: str, out: Path, seed: int, **options: Any) -> dict:
    """A 🔥 run (`snowfire finetune`); options left None keep FinetuneConfig's defaults."""
    from finetune import FinetuneConfig, train

    options = {k: v for k, v in options.items() if v is not None}
    return train(FinetuneConfig(encoder=cfg.encoder, task=task, data=cfg.data, out=str(out),
                                seed=seed, progress=False, **options))  # fmt: skip


def features(cfg: AnalysisConfig, task: str, splits: tuple[str, ...], pair: str = "joint",
             encoder: str | None = None):  # fmt: skip
    """The feature sets of `splits` of `task` (extracted where the store lacks them); the last."""
    from ..run import find_or_extract

    info = None
    for split in splits:
        info = find_or_extract(encoder or cfg.encoder, cfg.store_dir, task, cfg.data, split, pair)
    return info
