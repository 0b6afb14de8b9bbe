"""How far a side's restarts (seeds) land apart, and which of them failed: the "on-off" case of
large models fine-tuned on small sets (Phang et al. 2018 ran 20 restarts; Dodge et al. 2020).

For the seeds' scores x_1..x_S (S ≥ 2), with med the median and MAD the median absolute deviation
from it, a seed j is degenerate when either

  * it is far below the others, by the modified z-score of Iglewicz & Hoaglin (1993):
        z_j = 0.6745 (x_j − med) / max(MAD, resolution) < −3.5
    (0.6745 MAD estimates one sd for normal scores; 3.5 is their outlier cut-off; needs S ≥ 3,
    since two seeds are always symmetric about their median; `resolution`, 0.01 by default,
    keeps scores that tie exactly (MAD 0) from flagging a seed a point below them); or
  * it stayed near the level of a model that learned nothing (`floor`: the majority label's
    accuracy, 0 for correlations, MCC and span F1):
        x_j − floor < ½ (med_{−j} − floor),   med_{−j} the median of the other seeds,
    i.e. it gained less than half of what the others gained over that level (S ≥ 2).

A degenerate seed is reported, never dropped: the verdict's interval keeps every restart, so a
side that is on-off is uncertain by exactly as much as its restarts are.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

Z_CUT = 3.5
RESOLUTION = 0.01


def restart_spread(
    scores: Sequence[float], floor: float | None = None, resolution: float = RESOLUTION
) -> dict[str, Any]:
    """{"seeds", "mean", "sd", "median", "min", "max", "degenerate": [seed index, ...],
    "why": {index: words}} of one side's seed scores (sd None for one seed)."""
    xs = [float(x) for x in scores]
    if not xs:
        raise ValueError("restart_spread: expected at least one seed's score, got none")
    for i, x in enumerate(xs):
        if not math.isfinite(x):
            raise ValueError(f"restart_spread: seed {i}: expected a finite score, got {x}")
    if not resolution > 0:
        raise ValueError(f"restart_spread: expected resolution > 0, got {resolution}")
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    why: dict[int, str] = {}
    for j, x in enumerate(xs):
        z = 0.6745 * (x - med) / max(mad, resolution)
        if len(xs) >= 3 and z < -Z_CUT:
            why[j] = f"far below the others: {x:.4f} against their median {med:.4f} (z {z:.1f})"
        others = statistics.median(xs[:j] + xs[j + 1 :]) if len(xs) > 1 else None
        if floor is not None and others is not None and others > floor:
            if x - floor < 0.5 * (others - floor):
                near = f"near the untrained level {floor:.4f}: {x:.4f} against {others:.4f}"
                why[j] = f"{why[j]}; {near}" if j in why else near
    return {
        "seeds": len(xs),
        "mean": statistics.fmean(xs),
        "sd": statistics.stdev(xs) if len(xs) > 1 else None,
        "median": med,
        "min": min(xs),
        "max": max(xs),
        "degenerate": sorted(why),
        "why": why,
    }
