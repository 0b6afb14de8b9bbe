"""Paired racing: stop what has clearly lost, early, on the evidence the comparison already
has (the same selection examples for everyone, the paired bootstrap of compare/interval.py).

Training runs in rungs: each run of a trial stops at the rung's epoch count (its checkpoint
kept) and the race weighs every surviving trial. At rung k each trial has one list of
selection-split predictions per seed (from its best epoch so far); for a contender c and a
leader ℓ the paired bootstrap gives Δ = m(c) − m(ℓ) with its interval [lo, hi]. c stops when

    hi < −δ        its upper bound sits more than δ below the leader (δ: the margin)

against the overall leader or against its own arm's leader (successive halving within the
arm, judged by evidence rather than by a fixed share). An arm's leader never stops: every arm's
best trial trains to its cap, so arms are compared at their caps, not at a rung where the ones
with short rate schedules (🔥's linear decay over 3 epochs) are still rising. The earlier rule
(`keep_leaders=False`, `--race-stops-leaders`) stopped an arm's leader too when it was clearly
behind the overall leader ("stopped at rung k, behind by Δ [lo, hi]"): cheaper, but on SICK-R it
stopped 🔥's best trial after 2 of its 4 epochs and turned "no call" into "❄️ wins"
(docs/racing.md). The overall leader never stops. Survivors train to the next rung; after the last,
the contenders still in the race gain seeds (SMAC's intensification: 1, 2, 4, ... up to the
asked seeds), so the final verdict holds restarts, and the race is weighed again with them.

Rungs grow by a factor η (ASHA's reduction factor, 3 by default): the epoch counts E/η^j
(rounded up, at least 1) for j = ..., 2, 1, 0, so a 6-epoch cap races at epochs 1, 2 and 6 and
a 40-epoch cap at 1, 2, 5, 14 and 40. Every decision is a function of the recorded predictions
alone, so a finished run can be replayed under another margin or η without training
(`decide` is what both call).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .interval import Interval, bootstrap

#: The race's defaults: the reduction factor, the margin (in the metric's own units: 0.005 is
#: half a point of accuracy or of Pearson) and the interval's level.
ETA = 3
MARGIN = 0.005
LEVEL = 0.95
RACE_REPLICATES = 2000


def rung_epochs(cap: int, eta: int = ETA) -> list[int]:
    """The epoch counts at which a run of `cap` epochs is weighed: ⌈cap/η^j⌉, increasing, the
    cap last."""
    if cap < 1 or eta < 2:
        raise ValueError(f"rung_epochs: expected cap >= 1 and eta >= 2, got {cap}, {eta}")
    rungs, j = set(), 0
    while True:
        e = math.ceil(cap / eta**j)
        rungs.add(e)
        if e == 1:
            return sorted(rungs)
        j += 1


@dataclass(frozen=True)
class Decision:
    """What the race decided for one contender at one rung, and on what evidence."""

    rung: int
    trial: str
    against: str  # the leader it was weighed against
    delta: Interval  # m(trial) − m(against) on the selection split
    stopped: bool

    def to_json(self) -> dict[str, object]:
        return {
            "rung": self.rung,
            "trial": self.trial,
            "against": self.against,
            "stopped": self.stopped,
            **self.delta.to_json(),
        }

    def describe(self, scale: float = 100.0) -> str:
        """ "stopped at rung 2 (behind by 4.1 [2.3, 5.9])": points on the metric's scale."""
        d = self.delta
        behind = f"{-d.estimate * scale:.1f} [{-d.high * scale:.1f}, {-d.low * scale:.1f}]"
        state = "stopped" if self.stopped else "kept"
        return f"{state} at rung {self.rung} (behind {self.against} by {behind})"


def decide(
    rung: int,
    metric: str,
    gold: Sequence,
    preds: Mapping[str, Sequence[Sequence]],
    arm_of: Mapping[str, str],
    margin: float = MARGIN,
    level: float = LEVEL,
    replicates: int = RACE_REPLICATES,
    seed: int = 0,
    keep_leaders: bool = True,
) -> list[Decision]:
    """One rung of the race over the trials in `preds` ({trial: [predictions per seed]} on
    the selection split, whose answers are `gold`); `arm_of` names each trial's arm. A
    decision per trial but the overall leader; `stopped` where it has clearly lost.
    keep_leaders: an arm's leader is kept whatever the overall leader's evidence (False: the
    earlier rule, where it stops when clearly behind the overall leader)."""
    if margin < 0:
        raise ValueError(f"decide: expected a margin >= 0, got {margin}")
    missing = [t for t in preds if t not in arm_of]
    if missing:
        raise ValueError(f"decide: no arm named for the trials {missing}")
    if len(preds) < 2:
        return []
    boot = bootstrap(metric, gold, preds, replicates, seed)
    leader = _leader(boot.point, list(preds))
    arm_leader = {
        arm: _leader(boot.point, [t for t in preds if arm_of[t] == arm])
        for arm in dict.fromkeys(arm_of[t] for t in preds)
    }
    decisions = []
    for trial in preds:
        if trial == leader:
            continue
        overall = boot.interval(leader, trial, level)
        own = arm_leader[arm_of[trial]]
        lost = overall.high < -margin and not (keep_leaders and trial == own)
        decision = Decision(rung, trial, leader, overall, lost)
        if not decision.stopped and trial != own:
            mine = boot.interval(own, trial, level)
            if mine.high < -margin:
                decision = Decision(rung, trial, own, mine, True)
        decisions.append(decision)
    return decisions


def _leader(point: Mapping[str, float], trials: list[str]) -> str:
    """The best mean selection score; a tie goes to the trial listed first."""
    return max(trials, key=lambda t: (point[t], -trials.index(t)))


def seeds_schedule(asked: int) -> list[int]:
    """How many seeds the survivors hold after each round of intensification: 1, 2, 4, ...,
    then the asked number."""
    if asked < 1:
        raise ValueError(f"seeds_schedule: expected at least one seed, got {asked}")
    out = [1]
    while out[-1] < asked:
        out.append(min(out[-1] * 2, asked))
    return out
