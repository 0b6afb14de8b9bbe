"""The config of `snowfire layers` (and of a layers job, and `snowfire.layers`): which features,
which task, and how the probes are trained. The CLI flags and the job's params are derived from
its fields; the cache key (key.py) from those marked as changing the answer."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from snowfire.extractor import DEVICE_HELP, PAIR_ENCODINGS
from snowfire.options import check, option, volatile_fields
from snowfire.tasks import SELECTION_HELP, SELECTIONS, TaskFields


@dataclass(frozen=True)
class LayersConfig(TaskFields):
    """A layer sweep: per-layer and cumulative probes of one task (`task` or `task_spec`, and
    `data`: tasks.TaskFields) on one encoder's stored features, several seeds, a control task;
    OUT/layers.json, layers.md and layers.png."""

    store: str = option(
        help="store directory, s3://bucket/prefix or http://HOST:PORT of the service"
    )
    encoder: str | None = option(
        None,
        "the encoder the features were extracted with, by its spec or name (e.g. minilm; "
        "never run here), or --featureset",
    )
    featureset: str | None = option(
        None,
        "a feature-set id of the task (any split; `snowfire ls`): its encoder's features of "
        "every split are probed (instead of --encoder)",
    )
    pair_encoding: str | None = option(
        None, "pick the joint or separate feature sets when both exist", choices=PAIR_ENCODINGS
    )
    out: str | None = option(
        None,
        "output directory (layers.json, layers.md, layers.png); a finished sweep of the same "
        "key there is read back, not trained again; none: nothing written",
        volatile=True,
    )
    seeds: int = option(
        3,
        "seeds per probe (initialisation and data order): the interval's restarts",
        ge=1,
        le=20,
    )
    epochs: int = option(
        30,
        "passes over the training data at most (each probe keeps its state of lowest "
        "selection loss and stops after --patience checks without a lower one)",
        ge=1,
        le=1000,
    )
    patience: int = option(
        3, "checks without a lower selection loss before a probe stops improving", ge=1
    )
    check_every: int = option(
        20000,
        "examples (words, for tagging) between two checks of every probe's selection loss: "
        "after every pass, or every N examples on a larger set",
        ge=1,
    )
    batch_size: int = option(64, "examples (words, for tagging) per optimiser step", ge=1)
    lr: float = option(1e-2, "learning rate of every probe and mix (Adam)", gt=0)
    hidden: int = option(64, "width of the MLP probe's hidden layer", ge=1, le=4096)
    control: bool = option(
        True,
        "train every per-layer probe on a control task too (labels drawn per text, or per "
        "word type for tagging; Hewitt & Liang 2019): selectivity = accuracy - control's",
    )
    selection: str = option("auto", SELECTION_HELP, choices=SELECTIONS)
    max_train_examples: int | None = option(
        None, "train on N training examples drawn at random (default: all)", ge=1
    )
    max_memory_gb: float = option(
        4.0,
        "read a split's features at once up to this size (GB), else stream them",
        gt=0,
        volatile=True,
    )
    progress: bool = option(True, "show a progress bar", volatile=True)
    device: str | None = option(None, DEVICE_HELP, volatile=True)

    def __post_init__(self) -> None:
        check(self)
        if not self.store:
            raise ValueError("LayersConfig.store: expected a non-empty string")
        if (self.encoder is None) == (self.featureset is None):
            raise ValueError(
                "LayersConfig: give either 'encoder' (the spec the features were extracted "
                "with) or 'featureset' (a feature-set id of the task), not "
                + ("both" if self.encoder is not None else "neither")
            )
        self.resolve_spec()  # a bad task fails when the config is built, the field named

    def answer_fields(self) -> dict[str, Any]:
        """The fields that change the answer: all but the volatile ones (where it is written,
        shown or run) and `INPUTS`, which the key holds resolved (the feature sets' ids, the
        task's record); a field added later joins the key unless it says otherwise."""
        skip = volatile_fields(self) | set(INPUTS)
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}


#: The fields naming what is probed; the cache key holds what they resolve to instead.
INPUTS = ("store", "encoder", "featureset", "task", "task_spec", "data", "pair_encoding")
