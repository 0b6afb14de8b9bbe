"""The 🔥 training recipe of each encoder family, as the paper fine-tuned it (sec. 3, 4).

    bert  one peak rate for every layer (no discriminative decay), linear warm-up over the
          first 10% of steps then linear decay to 0, no gradual unfreezing; AdamW, peak 5e-5
          (Devlin et al. 2019, sec. 4 / A.3: the standard BERT recipe the paper followed)
    elmo  discriminative rates (each lower layer 0.4x the one above), slanted triangular rates
          (Howard & Ruder 2018, cut 10%, ratio 32), gradual unfreezing on the single-text tasks
          (the paper used it for SST-2 and NER), peak 1e-3 for the randomly initialised output

The tricks of the elmo recipe made ELMo fine-tuning work in the paper; applied to a BERT-family
encoder they starve its lower layers (0.4^6 = 0.4% of the peak rate six layers down) and cost
it about 15 Pearson points on STS-B (issue #16), so each family gets its own. An explicit
option (`--lr`, `--schedule`, `--discriminative`, ...) overrides one value of the recipe; the
run's config.json records the recipe's name, the overrides and the values in effect.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

SCHEDULES = ("linear", "slanted")


@dataclass(frozen=True)
class RecipeSettings:
    """The optimisation settings in effect for a run: its recipe's, each overridden by the
    config's field of the same name when that is set (`FinetuneConfig.settings()`).

    lr: peak rate of the top group (the output layer); warmup: fraction of steps rising to it;
    schedule: "linear" or "slanted" (finetune/optim.py); discriminative: rate factor per layer
    group going down (1.0: one rate); gradual_unfreezing: one more group trains per epoch.
    """

    lr: float
    warmup: float
    schedule: str
    discriminative: float
    gradual_unfreezing: bool

    def to_json(self) -> dict[str, Any]:
        """What RUN/config.json records (its recipe's "settings"): every field, in order."""
        return asdict(self)


#: The settings a recipe fixes; each is also a `FinetuneConfig` field (None: the recipe's).
RECIPE_FIELDS = tuple(f.name for f in fields(RecipeSettings))


@dataclass(frozen=True)
class Recipe:
    """Optimisation settings of one encoder family.

    lr: peak rate of the top group (the output layer); warmup: fraction of steps rising to it;
    schedule: "linear" or "slanted" (see finetune/optim.py); discriminative: rate factor per
    layer group going down (1.0: one rate); gradual_unfreezing: one more group trains per
    epoch from the top; unfreeze_pairs: also on sentence-pair tasks (the paper: no);
    grid_lrs: the peak rates a grid tries unless told (bert: BERT's 2e-5, 3e-5, 5e-5; elmo: the
    recipe's rate halved and doubled).
    """

    name: str
    lr: float
    warmup: float
    schedule: str
    discriminative: float
    gradual_unfreezing: bool
    unfreeze_pairs: bool = True
    grid_lrs: tuple[float, ...] = ()  # the peak rates `snowfire finetune --grid MODE` tries

    def for_task(self, pair: bool) -> Recipe:
        """The recipe as it applies to a task (gradual unfreezing only where it is used)."""
        if pair and not self.unfreeze_pairs:
            return replace(self, gradual_unfreezing=False)
        return self

    def settings(self) -> RecipeSettings:
        """The recipe's values of `RECIPE_FIELDS`."""
        return RecipeSettings(**{name: getattr(self, name) for name in RECIPE_FIELDS})


RECIPES: dict[str, Recipe] = {
    "bert": Recipe(
        "bert",
        lr=5e-5,
        warmup=0.1,
        schedule="linear",
        discriminative=1.0,
        gradual_unfreezing=False,
        grid_lrs=(2e-5, 3e-5, 5e-5),
    ),
    "elmo": Recipe(
        "elmo",
        lr=1e-3,
        warmup=0.1,
        schedule="slanted",
        discriminative=0.4,
        gradual_unfreezing=True,
        unfreeze_pairs=False,
        grid_lrs=(5e-4, 1e-3, 2e-3),
    ),
}
#: The epoch counts a grid tries unless told (Devlin et al. 2019, A.3: 2, 3, 4).
GRID_EPOCHS = (2, 3, 4)
#: The peak rate of the methods that train a few parameters, from their papers (the output
#: layer trains at it too): adapters 1e-3 (Houlsby et al. 2019 swept 3e-5..3e-3), LoRA 5e-4
#: (Hu et al. 2021, RoBERTa-base on GLUE: 4e-4..5e-4), BitFit 1e-3 (Ben Zaken et al. 2022:
#: 1e-4..1e-3). full keeps its recipe's.
#: What a run trains besides its output layer (finetune/methods.py); every one but full keeps
#: only what it trained (in RUN/best.pt, reloaded on the shared pretrained encoder).
METHODS = ("full", "bitfit", "adapter", "lora")
METHOD_LR = {"adapter": 1e-3, "lora": 5e-4, "bitfit": 1e-3}
#: The linear maps LoRA adapts, by name: `attention` the query and value projections (Hu et al.
#: 2021, sec. 7.1: W_q and W_v); `all-linear` every linear map of every layer, the MLP's too
#: ("LoRA Without Regret", Schulman et al. 2025: attention-only LoRA falls behind), as a
#: regular expression peft matches against each module's full name.
LORA_TARGETS: dict[str, list[str] | str] = {
    "attention": ["query", "value"],
    "all-linear": r".*layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense"
    r"|intermediate\.dense|output\.dense)",
}
#: How a grid is filled (finetune/grid.py): one run per rate, or one run per cell.
GRID_MODES = ("shared", "exact")
#: The recipe of each encoder family ("hf": every BERT-family spec, the bundled minilm too).
FAMILY_RECIPE = {"hf": "bert", "elmo": "elmo"}


def resolve(recipe: str, pair: bool, overrides: dict[str, Any]) -> tuple[Recipe, RecipeSettings]:
    """(the recipe applied to the task, its settings with the non-None `overrides` in place)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
    base = RECIPES[recipe].for_task(pair)
    unknown = sorted(set(overrides) - set(RECIPE_FIELDS))
    if unknown:
        raise ValueError(f"recipe overrides {unknown}: expected among {RECIPE_FIELDS}")
    return base, replace(base.settings(), **{k: v for k, v in overrides.items() if v is not None})
