"""The one config of a 🔥 fine-tuning run (recorded in RUN/config.json and RUN/checkpoint.pt).

Defaults, help and ranges live here (the `snowfire finetune` flags and the finetune job's
params are derived from them) and, for the optimisation settings, in the recipe of the
encoder family (finetune/recipe.py). `FinetuneConfig.from_json` reads the `finetune`
section of a run's config.json back, so a run directory is enough to repeat the run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from snowfire.extractor import DEVICE_HELP, ENCODER_FORMS, encoder_family
from snowfire.options import check, option
from snowfire.tasks import PAUSE_HELP, SELECTION_HELP, SELECTIONS, STOP_HELP, TaskFields

from .recipe import (
    FAMILY_RECIPE,
    GRID_EPOCHS,
    GRID_MODES,
    LORA_TARGETS,
    METHOD_LR,
    METHODS,
    RECIPE_FIELDS,
    RECIPES,
    SCHEDULES,
    RecipeSettings,
    resolve,
)

#: The fields of the grid (finetune/grid.py); a cell's run has none of them set.
GRID_FIELDS = ("grid", "grid_lrs", "grid_epochs")


@dataclass(frozen=True)
class FinetuneConfig(TaskFields):
    """Everything that defines a fine-tuning run: the task (`task` or `task_spec`, and `data`:
    tasks.TaskFields) and the fields below, each with its help.

    `recipe` picks the optimisation recipe ("bert" or "elmo", finetune/recipe.py; None: the
    encoder family's); lr, warmup, schedule, discriminative and gradual_unfreezing override
    one value of it each (None keeps the recipe's). With `grid`, the run is a grid of runs
    (finetune/grid.py) whose rate and epochs are chosen on dev. Checked when built. The
    `volatile` fields may change between attempts: a checkpoint or a finished run in `out` made
    with other values of them is resumed or reused (rundir.finished_or_refuse).
    """

    encoder: str = option(help=f"the encoder to fine-tune: {ENCODER_FORMS}")
    out: str = option(
        help="run directory; a checkpoint there is resumed, a finished run returned as it is",
        volatile=True,
    )
    seed: int = option(0, "seeds the output layer's initialisation, the data order and dropout")
    epochs: int = option(
        3, "passes over the training data (the maximum, with early stopping)", ge=1
    )
    batch_size: int = option(32, "examples per optimiser step (and per evaluation batch)", ge=1)
    recipe: str | None = option(
        None,
        "optimisation recipe; default: the encoder family's (bert: minilm and hf:..., "
        "elmo: elmo:...)",
        choices=tuple(RECIPES),
    )
    lr: float | None = option(
        None,
        "peak learning rate of the top group (the output layer); recipe: 5e-5 (bert), 1e-3 (elmo)",
        gt=0,
    )
    warmup: float | None = option(
        None,
        "fraction of all steps spent rising to the peak rate (linear: BERT's warm-up; "
        "slanted: the cut fraction); recipe: 0.1",
        ge=0,
        lt=1,
    )
    schedule: str | None = option(
        None,
        "linear: warm-up then linear decay to 0 (BERT); slanted: slanted triangular "
        "rates (Howard & Ruder 2018, ratio 32)",
        choices=SCHEDULES,
    )
    weight_decay: float = option(
        0.01, "AdamW's decoupled weight decay (not on biases and norm weights)", ge=0
    )
    discriminative: float | None = option(
        None,
        "each lower layer group trains at this factor times the rate of the group above "
        "(the paper: 0.4 for ELMo; recipe bert: 1.0, one rate)",
        gt=0,
        le=1,
    )
    gradual_unfreezing: bool | None = option(
        None,
        "at epoch e only the top e layer groups train (the output layer is the top "
        "group); recipe elmo: on single-text tasks, bert: never",
    )
    max_length: int = option(
        128,
        "BERT family: pieces per input with special tokens (longer: truncated, the longer "
        "text of a pair first); unused by ELMo",
        ge=1,
    )
    dropout: float = option(
        0.1, "dropout on the representation fed to the output layer", ge=0, lt=1
    )
    patience: int = option(
        3, "stop after this many epochs without a better score on the selection split", ge=1
    )
    selection: str = option("auto", SELECTION_HELP, choices=SELECTIONS, absent="dev")
    pause_at: int | None = option(None, PAUSE_HELP, ge=1, volatile=True)
    stop_at: int | None = option(None, STOP_HELP, ge=1, volatile=True)
    keep_remade_start: bool = option(
        False,
        "reuse a finished run (or a paused run's end) that started from other weights than "
        "its encoder or --init-head path holds now, with the start it recorded (an "
        "intermediate encoder or probe trained again, e.g. on another machine, whose CPU "
        "kernels change the last bits); default: refuse it by name",
        volatile=True,
    )
    max_grad_norm: float = option(1.0, "clip the gradient norm to this (0: no clipping)", ge=0)
    device: str | None = option(
        None,
        f"{DEVICE_HELP}; fp16 autocast on GPU",
        volatile=True,
    )
    max_train_examples: int | None = option(
        None,
        "train on N examples drawn at random with the seed, kept in file order (quick "
        "runs); default: all",
        ge=1,
    )
    bi_attention: bool = option(
        True,
        "ELMo pairs: bi-attention and ESIM's enhanced pooling (off: max-pool each text "
        "and concatenate, the paper's Table 3 ablation)",
    )
    crf: bool | None = option(
        None,
        "tagging: a CRF output layer (off: a per-word softmax); default: ELMo yes, the "
        "BERT family no (a softmax over each word's first piece, as Devlin et al.)",
    )
    output_lstm: int = option(
        0,
        "tagging: a BiLSTM of this many units per direction under the output layer "
        "(0: none; the paper's Table 5 adds one)",
        ge=0,
    )
    bucket_pool: int = option(
        50,
        "length-bucketed batches: each epoch's shuffled examples are cut into pools of "
        "this many batches, a pool is sorted by length and cut into batches, and the batches "
        "are shuffled (far less padding: STS-B's random batches of 32 are 60% padding); 0: "
        "random batches, as runs made before this field",
        ge=0,
        absent=0,
    )
    curve_points: int = option(
        0,
        "also score dev this many times within each epoch, evenly spaced, for the learning "
        "curve only (the best weights are still chosen at epoch ends); BERT family (ELMo's "
        "state would change)",
        ge=0,
        volatile=True,
    )
    checkpoint_every: int = option(
        0,
        "also write RUN/checkpoint.pt every this many steps (0: once per epoch)",
        ge=0,
        volatile=True,
    )
    progress: bool = option(
        True, "show a progress bar per epoch and one line per epoch", volatile=True
    )
    method: str = option(
        "full",
        "what trains besides the output layer: full (every encoder weight), bitfit "
        "(the encoder's biases), adapter (Houlsby bottleneck adapters and the layer norms), "
        "lora (rank-r updates of query and value); finetune/methods.py. BERT family only, "
        "except full",
        choices=METHODS,
    )
    adapter_size: int = option(
        64, "method adapter: the bottleneck width m (Houlsby et al.: 8-256)", ge=1
    )
    lora_rank: int = option(8, "method lora: the rank r (Hu et al. GLUE: 8)", ge=1)
    lora_alpha: float = option(
        8.0, "method lora: the update is scaled by alpha / r (Hu et al. GLUE: 8)", gt=0
    )
    lora_targets: str = option(
        "attention",
        "method lora: the linear maps adapted: attention (query and value, Hu et al.) or "
        "all-linear (every linear map of every layer, the MLP's too)",
        choices=tuple(LORA_TARGETS),
        absent="attention",
    )
    l2sp: float = option(
        0.0,
        "λ of the pull λ ||θ − θ₀||² of the trained encoder weights towards the "
        "pretrained ones, added to the loss (L2-SP, Li et al. 2018); 0: none",
        ge=0,
    )
    init_head: str | None = option(
        None,
        "a finished ❄️ probe run (head probe on the top layer, pool cls: its [CLS] state, or "
        "for tagging pool word: each word's first piece) whose weights start the output "
        "layer (LP-FT, Kumar et al. 2022); BERT family (tagging: softmax output, no BiLSTM)",
    )
    grid: str | None = option(
        None,
        "tune the peak rate and the epochs on dev over grid_lrs x grid_epochs and keep the "
        "best cell's run (finetune/grid.py): shared trains one run per rate and reads every "
        "epoch count off it, exact one run per cell; default: no grid",
        choices=GRID_MODES,
    )
    grid_lrs: list[float] | None = option(
        None,
        "the peak rates the grid tries; default: the recipe's (bert: "
        + ", ".join(f"{r:g}" for r in RECIPES["bert"].grid_lrs)
        + "; elmo: "
        + ", ".join(f"{r:g}" for r in RECIPES["elmo"].grid_lrs)
        + ")",
        gt=0,
    )
    grid_epochs: list[int] | None = option(
        None,
        "the epoch counts the grid tries; default: " + ", ".join(map(str, GRID_EPOCHS)),
        ge=1,
    )

    def __post_init__(self) -> None:
        check(self)
        for name in ("encoder", "out"):
            if not getattr(self, name):
                raise ValueError(f"FinetuneConfig.{name}: expected a non-empty string")
        for name in ("grid_lrs", "grid_epochs"):
            if getattr(self, name) is not None and self.grid is None:
                raise ValueError(f"FinetuneConfig.{name}: only for a grid (set grid)")
            if getattr(self, name) == []:
                raise ValueError(f"FinetuneConfig.{name}: expected at least one value, got []")
        if self.grid is not None and self.lr is not None:
            raise ValueError(
                f"FinetuneConfig.lr: a grid tries the rates itself (grid_lrs): drop lr {self.lr:g}"
            )
        try:
            encoder_family(self.encoder)
        except ValueError as err:
            raise ValueError(f"FinetuneConfig.encoder: {err}") from err
        self.resolve_spec()
        if self.family != "hf" and (self.method != "full" or self.init_head):
            what = f"method {self.method}" if self.method != "full" else "init_head"
            raise ValueError(
                f"FinetuneConfig: {what} is for BERT-family encoders, not {self.encoder}"
            )
        if self.curve_points and self.family != "hf":
            raise ValueError(
                "FinetuneConfig.curve_points: for BERT-family encoders (scoring dev "
                "mid-epoch would change ELMo's warm-up state)"
            )
        if self.init_head and self.spec.kind == "tagging" and (self.crf or self.output_lstm):
            what = "a CRF" if self.crf else f"a BiLSTM of {self.output_lstm} units"
            raise ValueError(
                f"FinetuneConfig.init_head: a probe starts a per-word softmax output layer on "
                f"the words' first pieces; this one has {what} the probe never trained"
            )

    @property
    def family(self) -> str:
        """ "hf" (BERT family, incl. the bundled minilm) or "elmo"."""
        return encoder_family(self.encoder)

    @property
    def recipe_name(self) -> str:
        """`recipe`, or the encoder family's when it is None."""
        return self.recipe or FAMILY_RECIPE[self.family]

    def settings(self) -> RecipeSettings:
        """The optimisation settings in effect for this task: the recipe's, overridden by
        every one of `RECIPE_FIELDS` that is not None."""
        overrides = {name: getattr(self, name) for name in RECIPE_FIELDS}
        if overrides["lr"] is None:  # a partial method's own rate (its paper's)
            overrides["lr"] = METHOD_LR.get(self.method)
        return resolve(self.recipe_name, self.spec.pair, overrides)[1]

    def recipe_record(self) -> dict[str, Any]:
        """What RUN/config.json records: recipe name, explicit overrides, settings in effect."""
        overrides = {n: getattr(self, n) for n in RECIPE_FIELDS if getattr(self, n) is not None}
        settings = self.settings().to_json()
        return {"name": self.recipe_name, "overrides": overrides, "settings": settings}

    @property
    def peak_lr(self) -> float:
        """`lr`, or the method's or the recipe's when it is None."""
        if self.lr is not None:
            return self.lr
        return METHOD_LR.get(self.method, RECIPES[self.recipe_name].lr)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> FinetuneConfig:
        """Rebuild from `to_json()`; unknown fields are an error naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"FinetuneConfig: unknown fields {unknown}; expected {sorted(known)}")
        return cls(**raw)
