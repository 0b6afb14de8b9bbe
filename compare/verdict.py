"""The answer per task, in the words of the paper's Table 1: which adaptation wins, or that
they are about equal when the difference is within the seeds' spread."""

from __future__ import annotations

import math
import statistics

#: The paper's Table 2 (test sets), for the rows beside ours.
PAPER_TABLE2 = {
    ("ELMo", "snow"): {"conll2003": 91.7, "sst2": 91.8, "mnli": 79.6, "sick-e": 86.3,
                       "sick-r": 86.1, "mrpc": 76.0, "stsb": 75.9},
    ("ELMo", "fire"): {"conll2003": 91.9, "sst2": 91.2, "mnli": 76.4, "sick-e": 83.3,
                       "sick-r": 83.3, "mrpc": 74.7, "stsb": 75.5},
    ("BERT-base", "snow"): {"conll2003": 92.2, "sst2": 93.0, "mnli": 84.6, "sick-e": 84.8,
                            "sick-r": 86.4, "mrpc": 78.1, "stsb": 82.9},
    ("BERT-base", "fire"): {"conll2003": 92.4, "sst2": 93.5, "mnli": 84.6, "sick-e": 85.8,
                            "sick-r": 88.7, "mrpc": 84.8, "stsb": 87.1},
}  # fmt: skip


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for one value); NaN values are dropped."""
    kept = [v for v in values if not math.isnan(v)]
    if not kept:
        return float("nan"), None
    return statistics.fmean(kept), statistics.stdev(kept) if len(kept) > 1 else None


def verdict(snow: list[float], fire: list[float]) -> dict[str, object]:
    """Δ = mean 🔥 − mean ❄️ and the verdict: "❄️ ≈ 🔥" when |Δ| is within the spread of the
    seeds (the root of the two variances' sum), else which one is better. A side with one seed
    adds no variance it could not measure: the spread is the other side's, and the verdict
    says so; with one seed on both sides the spread is unknown and the call is marked."""
    (ms, ss), (mf, sf) = mean_sd(snow), mean_sd(fire)
    delta = mf - ms
    known = [s for s in (ss, sf) if s is not None]
    spread = math.hypot(*known) if known else None
    if math.isnan(delta):
        text = "no verdict (a side has no score)"
    elif spread is not None and abs(delta) <= spread:
        text = "❄️ ≈ 🔥"
    else:
        text = "🔥 > ❄️" if delta > 0 else "❄️ > 🔥"
    if not math.isnan(delta) and not known:
        text += " (1 seed: spread unknown)"
    elif not math.isnan(delta) and len(known) == 1:
        mine, other = ("❄️", "🔥") if sf is None else ("🔥", "❄️")
        text += f" (spread of {mine}'s seeds; {other}: 1 seed)"
    return {"delta": delta, "spread": spread, "verdict": text}
