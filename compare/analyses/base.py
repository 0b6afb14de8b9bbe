"""What the analyses share: the options every one has, and the runs they make (❄️ head runs
and 🔥 runs, ordinary run directories, so a finished one is read back, not trained again)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from snowfire.extractor import ENCODER_FORMS
from snowfire.options import check, option
from snowfire.tasks import TASK_NAMES, TaskListFields


def tasks_option(default: tuple[str, ...], why: str = "the paper's") -> Any:
    """The `tasks` field of an analysis, defaulting to `default`."""
    return option(
        help=f"registered tasks (repeatable, or comma-separated; default: {why}: "
        f"{', '.join(default)}; none with --task-spec)",
        factory=lambda: list(default),
        choices=TASK_NAMES,
    )


@dataclass(frozen=True)
class AnalysisConfig(TaskListFields):
    """The options of every analysis; each analysis' config adds its own, and its `tasks`
    (`tasks_option`, checked here with the user's `task_spec`: tasks.TaskListFields)."""

    #: The analysis' name: `snowfire analyze NAME`, OUT/NAME.json, .md, .png.
    name: ClassVar[str] = ""
    if TYPE_CHECKING:  # a field of each analysis' own config (tasks_option), declared there
        tasks: list[str] = field(default_factory=list)

    encoder: str = option(help=f"the encoder: {ENCODER_FORMS}")
    out: str = option(help="output directory (NAME.json, NAME.md, NAME.png; runs under OUT/NAME/)")
    store: str | None = option(None, "feature store (default: OUT/store)")

    def __post_init__(self) -> None:
        check(self)
        where = type(self).__name__
        for name in ("encoder", "out"):
            if not getattr(self, name):
                raise ValueError(f"{where}.{name}: expected a non-empty string")
        tasks = getattr(self, "tasks", None) or []
        factory = next(f for f in fields(self) if f.name == "tasks").default_factory
        assert callable(factory)  # tasks_option gives a factory
        default = factory()
        if self.task_spec and tasks == default:  # the user's tasks, not the paper's
            tasks = []
        object.__setattr__(self, "tasks", list(dict.fromkeys(tasks)))  # each once, in order
        self.specs  # noqa: B018 (resolved and checked now: the errors name the field)

    @property
    def store_dir(self) -> str:
        """`store`, or OUT/store."""
        return self.store or str(Path(self.out) / "store")

    @property
    def root(self) -> Path:
        """OUT/NAME: the analysis' run directories."""
        return Path(self.out) / self.name


def train_head(
    cfg: AnalysisConfig,
    task: str,
    head: str,
    out: Path,
    pair: str,
    seed: int = 0,
    encoder: str | None = None,
    **options: Any,
) -> dict:
    """A ❄️ head run on the analysis' store (`snowfire train`): its metrics."""
    from snowfire.heads import TrainConfig, train

    from ..run import task_fields

    return train(
        TrainConfig(
            store=cfg.store_dir,
            encoder=encoder or cfg.encoder,
            head=head,
            data=cfg.data,
            out=str(out),
            pair_encoding=pair,
            seed=seed,
            progress=False,
            **task_fields(cfg.specs[task]),
            **options,
        )
    )


def finetune_run(cfg: AnalysisConfig, task: str, out: Path, seed: int, **options: Any) -> dict:
    """A 🔥 run (`snowfire finetune`); options left None keep FinetuneConfig's defaults."""
    from snowfire.finetune import FinetuneConfig, train

    from ..run import task_fields

    options = {k: v for k, v in options.items() if v is not None}
    return train(
        FinetuneConfig(
            encoder=cfg.encoder,
            data=cfg.data,
            out=str(out),
            seed=seed,
            progress=False,
            **task_fields(cfg.specs[task]),
            **options,
        )
    )


def features(
    cfg: AnalysisConfig,
    task: str,
    splits: tuple[str, ...],
    pair: str = "joint",
    encoder: str | None = None,
):
    """The feature sets of `splits` of `task` (extracted where the store lacks them); the last."""
    from ..run import find_or_extract

    info = None
    for split in splits:
        info = find_or_extract(
            encoder or cfg.encoder, cfg.store_dir, cfg.specs[task], cfg.data, split, pair
        )
    return info
