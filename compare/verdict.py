"""The answer per task, in the words of the paper's Table 1: which adaptation wins, or that
they are about equal.

`task_verdict` (compare/judge.py gathers its evidence from the runs): a call only when the 95%
interval of Δ from `weigh`'s paired bootstrap (compare/interval.py) excludes 0, only for cells
that converged (compare/convergence.py), and in words when neither side beats the zero-training
baseline."""

from __future__ import annotations

import math
import statistics
from typing import Any

from .convergence import RACED

#: The paper's Table 2 (test sets), for the rows beside ours.
PAPER_TABLE2 = {
    ("ELMo", "snow"): {
        "conll2003": 91.7,
        "sst2": 91.8,
        "mnli": 79.6,
        "sick-e": 86.3,
        "sick-r": 86.1,
        "mrpc": 76.0,
        "stsb": 75.9,
    },
    ("ELMo", "fire"): {
        "conll2003": 91.9,
        "sst2": 91.2,
        "mnli": 76.4,
        "sick-e": 83.3,
        "sick-r": 83.3,
        "mrpc": 74.7,
        "stsb": 75.5,
    },
    ("BERT-base", "snow"): {
        "conll2003": 92.2,
        "sst2": 93.0,
        "mnli": 84.6,
        "sick-e": 84.8,
        "sick-r": 86.4,
        "mrpc": 78.1,
        "stsb": 82.9,
    },
    ("BERT-base", "fire"): {
        "conll2003": 92.4,
        "sst2": 93.5,
        "mnli": 84.6,
        "sick-e": 85.8,
        "sick-r": 88.7,
        "mrpc": 84.8,
        "stsb": 87.1,
    },
}


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for one value); NaN values are dropped."""
    kept = [v for v in values if not math.isnan(v)]
    if not kept:
        return float("nan"), None
    return statistics.fmean(kept), statistics.stdev(kept) if len(kept) > 1 else None


# -- the interval verdict: a paired bootstrap interval, earned only by converged cells ----------

BUDGET_LIMITED = "budget-limited: no verdict"
ICON = {"snow": "❄️", "fire": "🔥"}
#: The zero-training row per task kind (compare/baseline.py), as the verdict names it.
BASELINE_WORDS = {
    "regression": "the encoder's own similarity",
    "classification": "the majority label",
}


def call(delta) -> str:
    """The words for Δ = 🔥 − ❄️ (an `Interval`): "🔥 > ❄️" or "❄️ > 🔥" only when its interval
    excludes 0, else "❄️ ≈ 🔥"."""
    if delta.low > 0:
        return "🔥 > ❄️"
    if delta.high < 0:
        return "❄️ > 🔥"
    return "❄️ ≈ 🔥"


def zero_training_words(snow_gain, fire_gain, baseline: str = BASELINE_WORDS["regression"]) -> str:
    """What the zero-training row says, from the intervals of ❄️ − baseline and 🔥 − baseline:
    a side beats the baseline only when its interval lies above 0."""
    snow, fire = snow_gain.low > 0, fire_gain.low > 0
    if snow and fire:
        return f"both adaptations beat {baseline}"
    if snow or fire:
        return f"only {'❄️' if snow else '🔥'} beats {baseline} at this budget"
    return f"neither adaptation beats {baseline} at this budget"


def weigh(
    metric: str,
    gold,
    snow,
    fire,
    baseline=None,
    replicates: int | None = None,
    seed: int = 0,
    others=None,
):
    """One bootstrap (compare/interval.py) of ❄️'s and 🔥's seeds, one prediction list per seed,
    of the zero-training baseline's predictions where given (deterministic: one list), and of
    `others` {arm: seeds' predictions} after them (adding arms leaves ❄️/🔥's draws as they are)."""
    from .interval import REPLICATES, bootstrap

    sides = {"snow": snow, "fire": fire} | ({} if baseline is None else {"baseline": [baseline]})
    sides |= others or {}
    return bootstrap(metric, gold, sides, replicates or REPLICATES, seed)


def task_verdict(
    boot, snow_cells=(), fire_cells=(), baseline: str | None = None, level: float = 0.95
) -> dict[str, Any]:
    """A task's verdict from `weigh`'s bootstrap and each side's cells' `Convergence` (one per
    seed), in this order:

      1. BUDGET_LIMITED, with both scores, when any cell did not converge: never a call;
      2. the zero-training words when neither side beats the baseline (`baseline`: what it is,
         e.g. BASELINE_WORDS[kind]; the bootstrap needs its "baseline" side): no ranking of two
         sides that both lose to training nothing;
      3. `call(Δ)`.

    {"verdict": the words, "text": the words with the numbers and notes, "snow", "fire": the
    seeds' mean scores, "delta": Δ's interval, "restart_sd", "baseline": its score, words and
    the sides' gains over it, "notes"}.
    """
    delta = boot.interval("snow", "fire", level)
    snow, fire = boot.point["snow"], boot.point["fire"]
    out: dict[str, object] = {
        "snow": snow,
        "fire": fire,
        "delta": delta.to_json(),
        "restart_sd": dict(boot.restart_sd),
    }
    cells = {"snow": snow_cells, "fire": fire_cells}
    unconverged = [
        f"{ICON[side]} seed {i} {cell.status}"
        for side in ICON
        for i, cell in enumerate(cells[side])
        if not cell.converged
    ]
    notes = [
        f"{ICON[side]}: 1 seed, its restarts' spread is not in the interval"
        for side in ICON
        if boot.seeds[side] == 1
    ]
    # a side the race stopped is scored where it stopped, not at its cap: say so
    notes += [
        f"{ICON[side]} seed {i} {cell.reason}"
        for side in ICON
        for i, cell in enumerate(cells[side])
        if cell.status == RACED
    ]
    beaten = None
    if baseline is not None:
        gains = {side: boot.interval("baseline", side, level) for side in ("snow", "fire")}
        beaten = zero_training_words(gains["snow"], gains["fire"], baseline)
        out["baseline"] = {
            "score": boot.point["baseline"],
            "words": beaten,
            "snow_gain": gains["snow"].to_json(),
            "fire_gain": gains["fire"].to_json(),
        }
    shown = f"Δ {100 * delta.estimate:+.1f} [{100 * delta.low:+.1f}, {100 * delta.high:+.1f}]"
    if unconverged:
        words, notes = BUDGET_LIMITED, [f"❄️ {100 * snow:.1f}, 🔥 {100 * fire:.1f}", *unconverged]
    elif beaten is not None and beaten.startswith("neither"):
        words, notes = beaten, [shown, *notes]
    else:
        words = call(delta)
        notes = [shown, *notes] + ([beaten] if beaten and beaten.startswith("only") else [])
    out.update(verdict=words, text=f"{words} ({'; '.join(notes)})", notes=notes)
    return out
