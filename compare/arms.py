"""The arms of `snowfire compare --arms`: the paper's two poles and the adaptation menu between
them (the tutorial's; issue #27). Every arm runs the same cells: the same training draw, seeds,
caps of the budget (🔥's for every fine-tuning arm), metrics, learning curves, and its Δ against
❄️ and against 🔥 from the same paired bootstrap as the verdict (compare/judge.py).

    snow     ❄️ the task's heads on cached features of every layer (the paper)
    fire     🔥 every encoder weight, the family's recipe (the paper)
    adapter  Houlsby bottleneck adapters (m = 64) and the layer norms; rate 1e-3
    lora     LoRA on query and value (r = 8, alpha = 8) through peft; rate 5e-4
    bitfit   the encoder's biases only; rate 1e-3
    l2sp     🔥 with λ ||θ − θ₀||² pulling towards the pretrained weights, λ = L2SP_LAMBDA
    lpft     🔥 whose output layer starts at a ❄️ linear probe of the top layer's [CLS] state
             (tagging: of each word's first piece there; LP-FT); the probe is a ❄️ run of its
             own, OUT/snow/TASK/probe-cls/seedK (tagging: probe-word)
    seq      🔥 from an encoder fine-tuned first on `--intermediate` (a registered task, run
             once as OUT/intermediate/TASK/seed0, or a finished 🔥 run directory)

The partial methods (adapter, lora, bitfit) keep only what they trained (RUN/best.pt) and
reload on the shared encoder: finetune/methods.py. Their rates are their papers' (recipe.py
METHOD_LR); λ was not tuned here.
"""

from __future__ import annotations

from typing import Any

from .cell import Mode

#: Every arm, in the table's order (the arms among compare/cell.py's modes).
ARMS = tuple(m.value for m in Mode if m.is_arm)
DEFAULT_ARMS = ("snow", "fire")
#: What each fine-tuning arm sets on the 🔥 config (the arms that need a run of their own first
#: add it in `arm_options`).
ARM_OPTIONS: dict[str, dict[str, Any]] = {
    "fire": {},
    "adapter": {"method": "adapter"},
    "lora": {"method": "lora"},
    "bitfit": {"method": "bitfit"},
    "l2sp": {"l2sp": 1e-2},
    "lpft": {},
    "seq": {},
}
L2SP_LAMBDA = ARM_OPTIONS["l2sp"]["l2sp"]
#: Words for tables and plots (plots have no emoji).
ARM_NAMES = {
    "snow": "❄️ features + head",
    "fire": "🔥 fine-tuning",
    "adapter": "adapters (Houlsby)",
    "lora": "LoRA",
    "bitfit": "BitFit",
    "l2sp": "🔥 + L2-SP",
    "lpft": "LP-FT",
    "seq": "sequential 🔥",
}
PLAIN_NAMES = {
    "snow": "features + head",
    "fire": "fine-tuning",
    "l2sp": "fine-tuning + L2-SP",
    "seq": "sequential fine-tuning",
}


def probe_recipe(kind: str) -> dict[str, Any]:
    """The ❄️ probe (head "probe") an lpft cell starts from on a task of `kind`, reading what a
    BERT-family 🔥 output layer reads (heads/probe.py FIRE_POOL): its hparams and its folder."""
    from snowfire.heads import FIRE_POOL

    pool = FIRE_POOL[kind]
    return {"hparams": {"pool": pool}, "dir": f"probe-{pool}"}


def plain(arm: str) -> str:
    return PLAIN_NAMES.get(arm, ARM_NAMES[arm])


def parse_arms(items: list[str] | None) -> list[str]:
    """The arms asked for ("snow,fire,lora" or repeated), in `ARMS` order; snow and fire are
    always run (every Δ is against them)."""
    names = [a for item in items or [] for a in item.split(",") if a] or list(DEFAULT_ARMS)
    unknown = [a for a in names if a not in ARMS]
    if unknown:
        raise ValueError(f"CompareConfig.arms: unknown {unknown}; expected among {list(ARMS)}")
    asked = set(names) | set(DEFAULT_ARMS)
    return [a for a in ARMS if a in asked]


def fine_tuning_arms(arms: list[str]) -> list[str]:
    """The arms beside snow and fire (each a 🔥 run per seed)."""
    return [a for a in arms if a not in DEFAULT_ARMS]


def why_not(arm: str, task: str, kind: str, intermediate: str | None) -> str | None:
    """Why `arm` does not run on `task` (of `kind`), in words for the table; None where it
    runs. seq on the task it fine-tuned on first: a task after itself is just more epochs."""
    if arm == "seq" and task == intermediate:
        return f"its first stage is {task} itself: a task after itself is just more epochs"
    return None
