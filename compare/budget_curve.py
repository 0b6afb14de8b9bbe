"""Budget curves: the expected score of the best of n hyper-parameter trials, as a function of
n and of compute ("Show Your Work", Dodge et al. EMNLP 2019), with the unbiased estimator of
Tang et al. (2020, "Showing Your Work Doesn't Always Work").

N trials of one arm were run; trial j scored s_j on the selection split (what picks it) and
r_j on the report split (what is reported). Among n trials drawn at random *without
replacement* (what a user tuning n configurations actually does), the one with the highest
selection score is kept and its report score is what the user gets. Order the trials by
selection score, ascending, ties broken by trial index (the later trial wins a tie, in the
estimator and in the brute force alike): trial (i) is the best of a random n-subset exactly
when it is in the subset and the other n-1 come from the i-1 below it, so

    E[best of n] = Σ_{i=n..N} r_(i) · C(i-1, n-1) / C(N, n)                      (Tang et al.)

which is unbiased for the expectation over n-subsets of the N trials. Dodge et al.'s original
form draws n trials *with replacement* from the empirical distribution,

    E_D[best of n] = Σ_{i=1..N} r_(i) · ((i/N)^n - ((i-1)/N)^n),

biased low for n close to N (a trial can be drawn twice); it is kept for comparison. With r = s
(no separate report split) both are the expected *maximum*.

The band is a percentile bootstrap over trials: resample the N (s, r) pairs with replacement,
recompute the curve, take the 2.5th and 97.5th percentiles per n. Against compute, trial n
costs the arm's mean measured trial cost, so the curve's x is `fixed + n · mean(cost)` (❄️ pays
the encoder's extraction once: `fixed`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _order(
    select: Sequence[float] | np.ndarray, report: Sequence[float] | np.ndarray | None
) -> np.ndarray:
    """Report scores ordered by (selection score, trial index), ascending."""
    s = np.asarray(select, dtype=float)
    r = s if report is None else np.asarray(report, dtype=float)
    if s.ndim != 1 or r.shape != s.shape or not len(s):
        raise ValueError(
            f"expected as many selection as report scores (at least one), got {s.shape} "
            f"and {r.shape}"
        )
    if not (np.isfinite(s).all() and np.isfinite(r).all()):
        raise ValueError("scores must be finite (a trial without a score cannot be weighed)")
    return r[np.lexsort((np.arange(len(s)), s))]


def _weights(big: int) -> np.ndarray:
    """W[n-1, i-1] = C(i-1, n-1) / C(N, n): the chance that the i-th lowest of N trials is the
    best of a random n-subset (0 for i < n). Each row sums to 1."""
    w = np.zeros((big, big))
    for n in range(1, big + 1):
        total = math.comb(big, n)
        for i in range(n, big + 1):
            w[n - 1, i - 1] = math.comb(i - 1, n - 1) / total
    return w


def expected_best(
    select: Sequence[float], report: Sequence[float] | None = None, n: int = 1
) -> float:
    """Tang et al.'s unbiased E[report score of the selection-best of n of the N trials],
    drawn without replacement (report None: of the selection scores themselves)."""
    r = _order(select, report)
    if not 1 <= n <= len(r):
        raise ValueError(f"n: expected 1..{len(r)} (the trials run), got {n}")
    return float(_weights(len(r))[n - 1] @ r)


def expected_best_dodge(
    select: Sequence[float], report: Sequence[float] | None = None, n: int = 1
) -> float:
    """Dodge et al.'s E[best of n] with n draws *with replacement* (any n >= 1)."""
    r = _order(select, report)
    if n < 1:
        raise ValueError(f"n: expected >= 1, got {n}")
    big = len(r)
    i = np.arange(1, big + 1)
    return float(np.sum(r * ((i / big) ** n - ((i - 1) / big) ** n)))


@dataclass(frozen=True)
class BudgetCurve:
    """One arm's curve: n = 1..N trials, its expected best report score and 95% band, and the
    compute each n costs (x, in the unit of `cost`, e.g. CPU-hours)."""

    n: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    compute: tuple[float, ...]

    def to_json(self) -> dict[str, list]:
        return {
            "n": list(self.n),
            "mean": list(self.mean),
            "low": list(self.low),
            "high": list(self.high),
            "compute": list(self.compute),
        }

    def at(self, budget: float) -> float | None:
        """The expected best score within `budget` of compute: the curve at the largest n
        whose compute fits (None: not even one trial fits)."""
        fits = [m for m, x in zip(self.mean, self.compute, strict=True) if x <= budget + 1e-12]
        return fits[-1] if fits else None


def budget_curve(
    select: Sequence[float],
    report: Sequence[float],
    costs: Sequence[float],
    fixed: float = 0.0,
    boot: int = 1000,
    seed: int = 0,
) -> BudgetCurve:
    """The curve of one arm from its trials' selection and report scores and measured costs
    (`fixed`: compute paid once, whatever n: ❄️'s extraction)."""
    s, r = np.asarray(select, float), np.asarray(report, float)
    big = len(s)
    if len(costs) != big:
        raise ValueError(f"costs: expected one per trial ({big}), got {len(costs)}")
    ns = range(1, big + 1)
    w = _weights(big)  # (N, N): row n-1 weighs the ordered report scores for n trials
    mean = w @ _order(s, r)  # (N,)
    low, high = mean, mean
    if boot:
        picks = np.random.default_rng(seed).integers(0, big, (boot, big))
        draws = np.stack([w @ _order(s[p], r[p]) for p in picks])  # (boot, N)
        low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    unit = float(np.mean(costs))
    return BudgetCurve(
        n=tuple(ns),
        mean=tuple(float(v) for v in mean),
        low=tuple(float(v) for v in low),
        high=tuple(float(v) for v in high),
        compute=tuple(fixed + n * unit for n in ns),
    )


def crossings(curves: dict[str, BudgetCurve]) -> list[tuple[float, str, str]]:
    """Where the leader changes as compute grows: (budget, leader below, leader from there
    on), in budget order (the leader: `_leads`)."""
    leads = _leads(curves)
    return [(x, was, now) for (_, was), (x, now) in zip(leads, leads[1:], strict=False)]


def _leads(curves: dict[str, BudgetCurve]) -> list[tuple[float, str]]:
    """The race's first budget and leader, then each budget where the leader changes. The
    leader at budget x is the arm with the highest expected best score within x; the race
    starts where every arm has a trial, and a tie keeps the leader."""
    points = sorted({x for c in curves.values() for x in c.compute})
    leads: list[tuple[float, str]] = []
    for x in points:
        scores = {arm: v for arm, c in curves.items() if (v := c.at(x)) is not None}
        if len(scores) < len(curves):
            continue  # a lead needs every arm in the race
        best = max(scores.values())
        if not leads or scores[leads[-1][1]] < best:
            leads.append((x, next(a for a, v in scores.items() if v == best)))
    return leads


def describe_crossings(curves: dict[str, BudgetCurve], names: dict[str, str], unit: str) -> str:
    """The verdict's sentence: "❄️ ahead from 0.3 CPU-h (where every arm has a trial), 🔥 from
    0.8 CPU-h", or who leads over the whole range measured. It starts where the race starts:
    below the dearest first trial some arm has no score to compare."""
    (start, first), *later = _leads(curves)
    top = max(max(c.compute) for c in curves.values())
    fmt = _distinct_format([start, *(x for x, _ in later)] if later else [start, top])
    opening = f"{names.get(first, first)} ahead from {fmt.format(start)} {unit}"
    opening += " (where every arm has a trial)"
    if not later:
        return f"{opening} to the top of the range measured ({fmt.format(top)} {unit}): no crossing"
    changes = [f"{names.get(arm, arm)} from {fmt.format(x)} {unit}" for x, arm in later]
    return ", ".join([opening, *changes])


def _distinct_format(budgets: Sequence[float]) -> str:
    """The shortest format, 2 to 4 significant digits, that prints different budgets
    differently ("1.12, 1.14", not "1.1, 1.1")."""
    for digits in (2, 3, 4):
        fmt = f"{{:.{digits}g}}"
        if len({fmt.format(b) for b in budgets}) == len(set(budgets)):
            break
    return fmt
