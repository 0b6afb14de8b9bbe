"""Equal tuning effort: the search space of every arm, in one place, and the trials drawn from
it. `snowfire compare --trials N` runs N configurations of every arm, so no arm is compared
with one guess against another's tuned recipe (Dodge et al. 2019; peft issue 622's "4-6% lower"
LoRA came from one run per method).

    arm      dimension        values                                   why
    snow     head             paper, smallest, mlp in turn (k mod 3)   the paper's model, the
                                                                       smallest, one between
             hidden           100, 200, 300                            width of its LSTMs/MLP
             dropout          0.0, 0.1, 0.2, 0.3, 0.5
             lr               log-uniform 1e-4 .. 3e-3                 AdamW
             epochs           10, 20, 40                               cap; early-stopped
    fire     lr               log-uniform 1e-5 .. 1e-4                 BERT's 2e-5..5e-5 inside
             epochs           2, 3, 4, 6                               Devlin et al. A.3 + 6
             warmup           0.0, 0.06, 0.1                           share of steps
    adapter  + adapter_size   16, 32, 64, 128;  lr 1e-4 .. 3e-3        Houlsby et al. swept
    lora     + lora_rank      4, 8, 16, 32;  lora_alpha 8, 16, 32;     "LoRA Without Regret":
               lora_targets   attention, all-linear;  lr 1e-4 .. 2e-3  every linear incl. MLP
    bitfit   lr               log-uniform 1e-4 .. 5e-3                 Ben Zaken et al.
    l2sp     + l2sp           log-uniform 1e-4 .. 1e-1                 the pull's strength
    lpft     + probe_epochs   10, 20, 40                               the ❄️ probe it starts at
    seq      (fire's)                                                  the target stage

Every 🔥-side arm also draws fire's `epochs` and `warmup`. Draw k of an arm is a function of
(SEARCH_SEED, the arm, k) alone, so trial k is the same configuration on every task and seed
(a per-kind choice such as `head` maps the same value onto the kind's list), and raising N adds
draws without changing the first N. No default recipe is among them.

❄️'s head is not drawn but taken in turn (`Cycle`: trial k gets the k mod 3-th, the paper's
first), so any N >= 3 tries every head and trial 0 is the paper's model: drawn, the first four
trials held no paper head at all (0 in the first 4 draws of SEARCH_SEED), and ❄️ was weighed
without the model the paper compares. The other dimensions are drawn as before. The budget
curves' estimator (compare/budget_curve.py) reads the N trials as the pool a random n-subset is
taken from, which a fixed rotation of heads leaves intact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arms import ARMS

SEARCH_SEED = 20190610  # the paper's arXiv date: any fixed number


@dataclass(frozen=True)
class Choice:
    """One of `values`, uniformly."""

    name: str
    values: tuple[Any, ...]

    def value(self, u: float) -> Any:
        return self.values[min(int(u * len(self.values)), len(self.values) - 1)]


@dataclass(frozen=True)
class LogUniform:
    """log-uniform on [low, high], kept to 3 significant digits (readable in tables)."""

    name: str
    low: float
    high: float

    def value(self, u: float) -> float:
        x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        return float(f"{x:.3g}")


@dataclass(frozen=True)
class Cycle:
    """`values` in turn: trial k takes values[k mod len] (the draw's number is unused)."""

    name: str
    values: tuple[Any, ...]

    def value(self, u: float, k: int) -> Any:
        return self.values[k % len(self.values)]


Dimension = Choice | LogUniform | Cycle

_FIRE_SCHEDULE = (Choice("epochs", (2, 3, 4, 6)), Choice("warmup", (0.0, 0.06, 0.1)))
SPACES: dict[str, tuple[Dimension, ...]] = {
    "snow": (
        Cycle("head", ("paper", "smallest", "mlp")),
        Choice("hidden", (100, 200, 300)),
        Choice("dropout", (0.0, 0.1, 0.2, 0.3, 0.5)),
        LogUniform("lr", 1e-4, 3e-3),
        Choice("epochs", (10, 20, 40)),
    ),
    "fire": (LogUniform("lr", 1e-5, 1e-4), *_FIRE_SCHEDULE),
    "adapter": (
        LogUniform("lr", 1e-4, 3e-3),
        *_FIRE_SCHEDULE,
        Choice("adapter_size", (16, 32, 64, 128)),
    ),
    "lora": (
        LogUniform("lr", 1e-4, 2e-3),
        *_FIRE_SCHEDULE,
        Choice("lora_rank", (4, 8, 16, 32)),
        Choice("lora_alpha", (8.0, 16.0, 32.0)),
        Choice("lora_targets", ("attention", "all-linear")),
    ),
    "bitfit": (LogUniform("lr", 1e-4, 5e-3), *_FIRE_SCHEDULE),
    "l2sp": (LogUniform("lr", 1e-5, 1e-4), *_FIRE_SCHEDULE, LogUniform("l2sp", 1e-4, 1e-1)),
    "lpft": (LogUniform("lr", 1e-5, 1e-4), *_FIRE_SCHEDULE, Choice("probe_epochs", (10, 20, 40))),
    "seq": (LogUniform("lr", 1e-5, 1e-4), *_FIRE_SCHEDULE),
}
assert set(SPACES) == set(ARMS), "every arm declares its space"

#: ❄️'s head choices by task kind: the paper's model, the smallest, one between.
SNOW_HEADS = {
    "classification": {"smallest": "linear", "mlp": "mlp"},
    "regression": {"smallest": "linear", "mlp": "mlp"},
    "tagging": {"smallest": "crf", "mlp": "bilstm-softmax"},
}


def draw(arm: str, k: int, seed: int = SEARCH_SEED) -> dict[str, Any]:
    """Trial `k` (0-based) of `arm`: one value per dimension of its space."""
    if arm not in SPACES:
        raise ValueError(f"draw: unknown arm {arm!r}; expected one of {', '.join(SPACES)}")
    if k < 0:
        raise ValueError(f"draw: expected a trial number >= 0, got {k}")
    space = SPACES[arm]
    rng = np.random.default_rng([seed, ARMS.index(arm), k])
    units = rng.random(len(space))  # one per dimension, a Cycle's too: the others stay put
    return {
        d.name: d.value(u, k) if isinstance(d, Cycle) else d.value(u)
        for d, u in zip(space, units, strict=True)
    }


def snow_head(choice: str, kind: str, paper: str) -> str:
    """The ❄️ head a `head` draw means for a task of `kind` whose paper head is `paper`."""
    return paper if choice == "paper" else SNOW_HEADS[kind][choice]


def describe_space(arm: str) -> str:
    """One line: the arm's dimensions and their ranges (table.md's "tuned with" note)."""
    parts = []
    for d in SPACES[arm]:
        if isinstance(d, Cycle):
            parts.append(f"{d.name} in turn {', '.join(map(str, d.values))}")
        elif isinstance(d, Choice):
            parts.append(f"{d.name} ∈ {{{', '.join(map(str, d.values))}}}")
        else:
            parts.append(f"{d.name} ~ log-U[{d.low:g}, {d.high:g}]")
    return "; ".join(parts)
