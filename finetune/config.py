"""The one config of a 🔥 fine-tuning run (recorded in RUN/config.json and RUN/checkpoint.pt).

The CLI builds it; defaults live here and, for the optimisation settings, in the recipe of
the encoder family (finetune/recipe.py). `FinetuneConfig.from_json` reads the `finetune`
section of a run's config.json back, so a run directory is enough to repeat the run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .recipe import FAMILY_RECIPE, RECIPE_FIELDS, RECIPES, SCHEDULES, resolve


@dataclass(frozen=True)
class FinetuneConfig:
    """Everything that defines a fine-tuning run. Field by field:

    encoder: encoder spec as for `extractor.load_encoder`: "minilm", "hf:NAME_OR_DIR",
        "elmo:OPTIONS.json,WEIGHTS.hdf5" or "elmo:DIR".
    task: task name (`tasks.TASKS`), e.g. "sst2", "stsb", "conll2003".
    data: the task data directory (one sub-folder per task, as `tasks.read_split` reads it).
    out: the run directory; an existing RUN/checkpoint.pt there is resumed, a finished run
        there is returned as it is.
    seed: seeds the output-layer initialisation, the data order and dropout.
    epochs: passes over the training data (the maximum, with early stopping).
    batch_size: examples per optimiser step (also per evaluation batch).
    recipe: the optimisation recipe, "bert" or "elmo" (finetune/recipe.py); None picks the
        encoder family's ("bert" for minilm and hf:..., "elmo" for elmo:...). The five
        settings below override one value of it each; None keeps the recipe's.
    lr: peak learning rate of the top parameter group (the task's output layer); recipe:
        5e-5 (bert), 1e-3 (elmo).
    warmup: fraction of all steps spent rising to the peak rate ("linear": BERT's warm-up;
        "slanted": the cut fraction of slanted triangular rates); recipe: 0.1.
    schedule: "linear" (linear warm-up, then linear decay to 0; BERT) or "slanted" (slanted
        triangular rates, Howard & Ruder 2018, ratio 32); see `finetune.optim`.
    weight_decay: AdamW's decoupled weight decay (not on biases and norm weights).
    discriminative: each lower layer group gets this factor times the rate of the group above
        it (Howard & Ruder 2018; the paper used 0.4 for ELMo); 1.0 is one rate for all
        layers (recipe bert).
    gradual_unfreezing: at epoch e only the top e layer groups train (the head is the top
        group, so epoch 1 trains the head alone); see `finetune.optim.unfreeze`; recipe elmo:
        on single-text tasks (the paper: SST-2 and NER), bert: never.
    max_length: BERT family: word pieces per input including special tokens; longer inputs
        are truncated (pairs: the longer text first). Unused by ELMo (no limit).
    dropout: dropout on the representation fed to the output layer.
    patience: stop after this many epochs without a better dev primary metric.
    max_grad_norm: clip the gradient norm to this (0 turns clipping off).
    device: "cpu", "cuda", "cuda:1"; None picks the GPU when present. fp16 autocast on GPU.
    max_train_examples: train on N examples drawn at random (with `seed`, kept in file order)
        for quick runs; None for all. Files like STS-B's are sorted by genre, so not the first N.
    bi_attention: ELMo pairs: cross-sentence bi-attention and ESIM's enhanced pooling
        (False: max-pool each sentence and concatenate, the paper's Table 3 ablation).
    crf: ELMo tagging: a CRF output layer (False: a per-word softmax).
    checkpoint_every: also write RUN/checkpoint.pt every this many steps (0: once per epoch).
    progress: show a progress bar per epoch and print one line per epoch.
    """

    encoder: str
    task: str
    data: str
    out: str
    seed: int = 0
    epochs: int = 3
    batch_size: int = 32
    recipe: str | None = None
    lr: float | None = None
    warmup: float | None = None
    schedule: str | None = None
    weight_decay: float = 0.01
    discriminative: float | None = None
    gradual_unfreezing: bool | None = None
    max_length: int = 128
    dropout: float = 0.1
    patience: int = 3
    max_grad_norm: float = 1.0
    device: str | None = None
    max_train_examples: int | None = None
    bi_attention: bool = True
    crf: bool = True
    checkpoint_every: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("encoder", "task", "data", "out"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"FinetuneConfig.{name}: expected a non-empty str")
        if self.family not in FAMILY_RECIPE:
            raise ValueError(
                f"FinetuneConfig.encoder: expected 'minilm', 'hf:NAME_OR_DIR' or 'elmo:...', "
                f"got {self.encoder!r}"
            )
        positive = ("epochs", "batch_size", "max_length")
        for name in positive:
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(
                    f"FinetuneConfig.{name}: expected an int >= 1, got {getattr(self, name)!r}"
                )
        if self.recipe is not None and self.recipe not in RECIPES:
            raise ValueError(
                f"FinetuneConfig.recipe: expected one of {tuple(RECIPES)} or None, "
                f"got {self.recipe!r}"
            )
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"FinetuneConfig.lr: expected > 0 or None, got {self.lr!r}")
        if self.warmup is not None and not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"FinetuneConfig.warmup: expected in [0, 1), got {self.warmup!r}")
        if self.schedule is not None and self.schedule not in SCHEDULES:
            raise ValueError(
                f"FinetuneConfig.schedule: expected one of {SCHEDULES}, got {self.schedule!r}"
            )
        if self.discriminative is not None and not 0.0 < self.discriminative <= 1.0:
            raise ValueError(
                f"FinetuneConfig.discriminative: expected in (0, 1], got {self.discriminative!r}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"FinetuneConfig.dropout: expected in [0, 1), got {self.dropout!r}")
        if self.weight_decay < 0 or self.max_grad_norm < 0 or self.checkpoint_every < 0:
            raise ValueError(
                "FinetuneConfig: weight_decay, max_grad_norm and checkpoint_every must be >= 0"
            )
        if self.patience < 1:
            raise ValueError(f"FinetuneConfig.patience: expected >= 1, got {self.patience!r}")
        if self.max_train_examples is not None and self.max_train_examples < 1:
            raise ValueError(
                f"FinetuneConfig.max_train_examples: expected >= 1 or None, "
                f"got {self.max_train_examples!r}"
            )

    @property
    def family(self) -> str:
        """ "hf" (BERT family, incl. the bundled minilm) or "elmo"."""
        if self.encoder == "minilm":
            return "hf"
        return self.encoder.split(":", 1)[0]

    @property
    def recipe_name(self) -> str:
        """`recipe`, or the encoder family's when it is None."""
        return self.recipe or FAMILY_RECIPE[self.family]

    def settings(self) -> dict[str, Any]:
        """The optimisation settings in effect for this task: the recipe's, overridden by
        every one of `RECIPE_FIELDS` that is not None."""
        from tasks import get_task

        overrides = {name: getattr(self, name) for name in RECIPE_FIELDS}
        return resolve(self.recipe_name, get_task(self.task).pair, overrides)[1]

    def recipe_record(self) -> dict[str, Any]:
        """What RUN/config.json records: recipe name, explicit overrides, settings in effect."""
        overrides = {n: getattr(self, n) for n in RECIPE_FIELDS if getattr(self, n) is not None}
        return {"name": self.recipe_name, "overrides": overrides, "settings": self.settings()}

    @property
    def peak_lr(self) -> float:
        """`lr`, or the recipe's when it is None."""
        return self.lr if self.lr is not None else RECIPES[self.recipe_name].lr

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


def _field_help() -> dict[str, str]:
    """Each field's description, read from the FinetuneConfig docstring (one source)."""
    helps: dict[str, str] = {}
    name = None
    for line in (FinetuneConfig.__doc__ or "").splitlines():
        head, sep, text = line.strip().partition(": ")
        if sep and line.startswith("    ") and not line.startswith("     ") and head.isidentifier():
            name, helps[head] = head, text
        elif name and line.startswith("        "):
            helps[name] += " " + line.strip()
    return {k: v.replace("%", "%%") for k, v in helps.items()}


def add_arguments(parser) -> None:
    """Add `--encoder --task --data --out` (required) and one `--flag` per other field to an
    argparse parser (`snowfire finetune`); `from_args` builds the config back."""
    import argparse

    helps = _field_help()
    for f in fields(FinetuneConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name in ("encoder", "task", "data", "out"):
            parser.add_argument(flag, required=True, help=helps.get(f.name))
        elif isinstance(f.default, bool) or f.name == "gradual_unfreezing":
            parser.add_argument(
                flag,
                action=argparse.BooleanOptionalAction,
                default=f.default,
                help=helps.get(f.name),
            )
        else:
            kind = {
                "lr": float, "warmup": float, "discriminative": float, "schedule": str,
                "recipe": str, "max_train_examples": int, "device": str,
            }.get(f.name, type(f.default))  # fmt: skip
            choices = {"schedule": SCHEDULES, "recipe": tuple(RECIPES)}.get(f.name)
            parser.add_argument(
                flag, type=kind, default=f.default, choices=choices, help=helps.get(f.name)
            )


def from_args(args) -> FinetuneConfig:
    """The config from parsed flags named like the fields (`--batch-size` -> batch_size).

    Fields missing from `args` keep their defaults, so a parser built with
    `argument_default=argparse.SUPPRESS` leaves every default here; attributes that are not
    fields (command, func, verbose) are ignored.
    """
    given = {f.name: getattr(args, f.name) for f in fields(FinetuneConfig) if hasattr(args, f.name)}
    return FinetuneConfig(**given)
