"""The config of a ❄️ head run: every field with its help, choices and range (options.option);
the CLI flags of `snowfire train` and the train job's params are derived from it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from snowfire.extractor import DEVICE_HELP, PAIR_ENCODINGS
from snowfire.options import check, option
from snowfire.tasks import PAUSE_HELP, SELECTION_HELP, SELECTIONS, STOP_HELP, TaskFields


@dataclass(frozen=True)
class TrainConfig(TaskFields):
    """Everything that defines a head run (recorded in RUN/config.json): the task (`task` or
    `task_spec`, and `data`: tasks.TaskFields) and the fields below. Checked when built.
    The `volatile` fields may change between attempts: a finished run in `out` made with
    other values of them is reused (rundir.finished_or_refuse)."""

    store: str = option(
        help="store directory, s3://bucket/prefix or http://HOST:PORT of the service"
    )
    encoder: str = option(help="the encoder spec the features were extracted with (e.g. minilm)")
    head: str = option(help="head name (linear, mlp, probe, bcn, esim, bilstm-crf, ...)")
    out: str = option(help="run directory", volatile=True)
    seed: int = option(0, "seeds the head's initialisation, the data order and dropout")
    epochs: int = option(
        20, "passes over the training data (the maximum, with early stopping)", ge=1
    )
    batch_size: int = option(32, "examples per optimiser step", ge=1)
    bucket_pool: int = option(
        50,
        "length-bucketed batches (tasks.length_batches): each epoch's shuffled examples are "
        "cut into pools of this many batches, a pool is sorted by tokens and cut into batches, "
        "and the batches are shuffled (far less padding in the heads' tensors); 0: random "
        "batches, as runs made before this field",
        ge=0,
        absent=0,
    )
    lr: float = option(1e-3, "learning rate (AdamW)", gt=0)
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay", ge=0)
    patience: int = option(
        3, "epochs without a better score on the selection split before stopping", ge=1
    )
    selection: str = option(
        "auto",
        SELECTION_HELP,
        choices=SELECTIONS,
        absent="dev",
    )
    pause_at: int | None = option(None, PAUSE_HELP, ge=1, volatile=True)
    stop_at: int | None = option(None, STOP_HELP, ge=1, volatile=True)
    keep_state: bool = option(
        False,
        "keep RUN/final.pt, the state after the last epoch (a run not ended by early "
        "stopping), so that a larger --epochs goes on from it (heads/continuation.py); "
        "compare keeps it for its ❄️ runs",
        volatile=True,
    )
    pair_encoding: str | None = option(
        None,
        "pick the joint or separate feature sets when both exist",
        choices=PAIR_ENCODINGS,
    )
    featureset: str | None = option(None, "feature-set id prefix, when several match")
    layer: int | None = option(None, "the layer a probe reads (default: the top one)", ge=0)
    hparams: dict[str, Any] = option(
        help='head options as JSON, e.g. {"hidden": 300}', factory=dict
    )
    max_train_examples: int | None = option(
        None,
        "train on N examples drawn at random with the seed (the draw 🔥 fine-tuning makes "
        "with the same cap and seed); default: all",
        ge=1,
    )
    max_memory_gb: float = option(
        4.0,
        "preload a split's features up to this size (GB), else stream them",
        gt=0,
        volatile=True,
    )
    progress: bool = option(True, "show a progress bar", volatile=True)
    device: str | None = option(None, DEVICE_HELP, volatile=True)

    def __post_init__(self) -> None:
        check(self)
        for name in ("store", "encoder", "head", "out"):
            if not getattr(self, name):
                raise ValueError(f"TrainConfig.{name}: expected a non-empty string")
        from snowfire.extractor import encoder_family

        from .registry import check_head

        try:
            encoder_family(self.encoder)
        except ValueError as err:
            raise ValueError(f"TrainConfig.encoder: {err}") from err
        self.resolve_spec()
        spec = self.spec
        try:
            check_head(self.head, spec.kind, spec.pair, self.hparams)
        except ValueError as err:
            raise ValueError(f"TrainConfig.head: {err}") from err
        except TypeError as err:  # hyper-parameters the head does not take
            raise ValueError(f"TrainConfig.hparams: {err}") from err
        if self.layer is not None and self.head != "probe":
            raise ValueError(
                f"TrainConfig.layer: only the probe head reads one layer, not {self.head!r}"
            )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
