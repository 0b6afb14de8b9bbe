"""The verdict statistic: Δ = 🔥 − ❄️ with a 95% interval from a paired bootstrap over the
evaluation examples, combined with the seeds.

Side A ran S_A seeds, side B S_B seeds, every seed scored with the task's metric m on the same
N evaluation examples. The point estimate is what the tables show, the difference of the seeds'
mean scores:

    Δ = (1/S_B) Σ_s T_s(B) − (1/S_A) Σ_s T_s(A),     T_s = m(gold, predictions of seed s)

Two things make Δ noisy: which examples the evaluation set happens to hold, and which restarts
the seeds happen to give. Replicate r of the bootstrap

  1. draws N examples with replacement, one draw shared by every side (paired: an example hard
     for both sides moves both scores the same way, so its difficulty cancels in Δ): counts
     c_r ∈ ℕ^N, Σ c_r = N;
  2. scores every seed of every side on that draw, T_s(c_r), and averages each side's seeds:
     m_r = (1/S) Σ_s T_s(c_r), the examples' share of the noise, each seed's own luck on
     particular examples included;
  3. adds the restarts' share of the difference B − A, as Welch's t-interval would:
     Δ*_r = m_r(B) − m_r(A) + √(v_A + v_B) · t_r,  t_r ~ Student's t with ν degrees of freedom,

        s²    = Σ_s (T_s − T̄)² / (S − 1)                a side's seeds' spread on the full sample
        ê     = S/(S−1) · mean_s Var_r(T_s(c_r) − m_r)   the part of s² the draw of examples
                                                         already carries (per-example luck)
        σ̂²_B = max(0, s² − ê)                           the side's restarts' own variance
        v     = σ̂²_B / S,   ν = (v_A + v_B)² / (v_A²/(S_A − 1) + v_B²/(S_B − 1))  (Welch)

  The interval is the percentile interval: the (1−level)/2 and (1+level)/2 quantiles of Δ*.

Why step 3 is not "resample each side's seeds with replacement" (Owen 2007's pigeonhole
bootstrap for a crossed design, `scheme="resample"` here): the seeds' spread s² holds each
seed's per-example luck, which step 1 has counted already, and resampling S seeds shrinks it by
(S − 1)/S and gives it a normal's light tails, where 2-5 seeds leave 1-4 degrees of freedom a
side. On simulated cells with a known Δ (`benchmarks/verdict_interval.py`: 2, 3 and 5 seeds a
side, restarts adding nothing, about a point, or dominating), seed resampling covered the true Δ
in 67-100% of draws (98-100% where restarts add nothing, 67-91% where they dominate); the scheme
above in 92-99% wherever each side had 2 or more seeds (81-99% with one 🔥 seed, whose restarts'
spread no scheme can see). BCa and the basic interval correct a statistic's bias and skew, not a
variance counted wrongly: the basic interval covered within a point of the percentile one on
every cell. Drawing each side's restarts with its own t (S − 1 degrees of freedom) covered as
well but was up to twice as wide with 2 seeds; Welch's ν pools the two sides' degrees of
freedom. A side with one seed adds no restarts' share: exact for the zero-training baseline
(deterministic), unknowable for a trained side, whose interval then holds the examples' noise
only (`Interval.seeds` says so). With 2 seeds a side the restarts' variance rests on one degree
of freedom each, and the interval is wide whenever the two restarts disagree: that is what two
restarts can tell.

Sufficient statistics make a replicate cheap: every metric but Spearman is a function of sums
over examples of per-example statistics F (N, K), so a resampled score is m(c_rᵀ F), one matrix
product for all replicates, seeds and sides:

    accuracy   1[y = ŷ]                                Σ / n
    f1         tp, fp, fn of the positive class "1"    2tp / (2tp + fp + fn)
    macro_f1   per class: tp, 1[y = k], 1[ŷ = k]       mean over classes seen of 2tp / (g + p)
    matthews   1[y = ŷ], onehot(y), onehot(ŷ)         (c n − t·p) / √((n² − p·p)(n² − t·t))
    pearson    1, x, y, x², y², xy (centred)           (n Sxy − Sx Sy) / √(n Sxx − Sx²)(n Syy − Sy²)
    span_f1    per sentence: correct, predicted, gold  2c / (p + g)  (precision c/p, recall c/g)

with the formulas and zero-denominator rule of tasks/metrics.py and tasks/spans.py (0.0, not
NaN). Spearman's ranks change with the draw: a replicate ranks its own sample (copies of one
example tie with each other; ties share the mean rank) and takes the count-weighted Pearson of
those ranks, which is Spearman's rho of the resampled lists exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: The metrics a bootstrap can score: the keys of `tasks.evaluate`'s results.
METRICS = (
    "accuracy",
    "f1",
    "macro_f1",
    "matthews",
    "pearson",
    "spearman",
    "span_f1",
    "precision",
    "recall",
)
#: Replicates per interval: the 2.5% tail holds 125 of them, and a tail percentile's Monte Carlo
#: sd is √(0.025 · 0.975 / R) / φ(1.96) = 0.04 sd of Δ* for a normal Δ*, a fiftieth of the
#: interval's half-width.
REPLICATES = 5000
SCHEMES = ("t", "resample")
_CHUNK = 2_000_000  # count entries (replicates x examples) held at once: ~16 MB of float64


@dataclass(frozen=True)
class Interval:
    """A difference of two sides' mean scores (plus − minus) and its bootstrap interval."""

    estimate: float  # on the full sample: the difference of the seeds' mean scores
    low: float
    high: float
    level: float  # e.g. 0.95
    replicates: int
    seeds: tuple[int, int]  # seeds of (minus, plus)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "delta": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "replicates": self.replicates,
            "seeds": list(self.seeds),
        }


@dataclass(frozen=True)
class Bootstrap:
    """Every side's replicates under one shared draw of examples (module docstring).

    point[side]: the mean over the side's seeds of the metric on the full sample (the table's);
    scores[side]: each seed's score on the full sample; restart_sd[side]: σ̂_B, the restarts'
    own sd (None for one seed); draws[side]: (R,) the side's mean score on each draw of examples
    (scheme "t": m_r, the restarts' share is added per difference; "resample": over drawn seeds).
    """

    point: dict[str, float]
    scores: dict[str, list[float]]
    restart_sd: dict[str, float | None]
    draws: dict[str, np.ndarray]
    scheme: str = "t"
    seed: int = 0

    @property
    def seeds(self) -> dict[str, int]:
        return {side: len(v) for side, v in self.scores.items()}

    def interval(self, minus: str, plus: str, level: float = 0.95) -> Interval:
        """plus − minus, e.g. `interval("snow", "fire")` for Δ = 🔥 − ❄️."""
        for side in (minus, plus):
            if side not in self.point:
                raise ValueError(f"interval: no side {side!r}; expected one of {list(self.point)}")
        if not 0.0 < level < 1.0:
            raise ValueError(f"interval: expected a level in (0, 1), got {level}")
        delta = self.draws[plus] - self.draws[minus]  # (R,)
        if self.scheme == "t":
            delta = delta + self._restarts(minus, plus, len(delta))
        low, high = np.quantile(delta, [(1 - level) / 2, (1 + level) / 2])
        return Interval(
            estimate=self.point[plus] - self.point[minus],
            low=float(low),
            high=float(high),
            level=level,
            replicates=len(delta),
            seeds=(self.seeds[minus], self.seeds[plus]),
        )

    def score(self, side: str, level: float = 0.95) -> Interval:
        """One side's own mean score with its interval: the percentile interval of its draws
        m_r plus its restarts' share √v · t_ν (step 3 with one side, ν = S − 1); an Interval of
        `side` minus nothing (seeds (0, S)), e.g. a probe's score per layer."""
        if side not in self.point:
            raise ValueError(f"score: no side {side!r}; expected one of {list(self.point)}")
        if not 0.0 < level < 1.0:
            raise ValueError(f"score: expected a level in (0, 1), got {level}")
        draws = self.draws[side]  # (R,)
        if self.scheme == "t":
            draws = draws + self._restarts(side, side, len(draws))
        low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
        return Interval(
            estimate=self.point[side],
            low=float(low),
            high=float(high),
            level=level,
            replicates=len(draws),
            seeds=(0, self.seeds[side]),
        )

    def _restarts(self, minus: str, plus: str, r: int) -> np.ndarray | float:
        """(R,) √(v_A + v_B) · t_ν, step 3 of the module docstring; its own random stream per
        pair of sides, so an interval is the same whichever others were asked for first
        (minus == plus: that one side's share, for `score`)."""
        parts = [
            (sd**2 / self.seeds[s], self.seeds[s] - 1)
            for s in dict.fromkeys((minus, plus))
            if (sd := self.restart_sd[s])
        ]
        total = sum(v for v, _ in parts)
        if total == 0.0:
            return 0.0
        nu = total**2 / sum(v * v / df for v, df in parts)
        names = list(self.point)
        rng = np.random.default_rng([self.seed, names.index(minus), names.index(plus)])
        return math.sqrt(total) * rng.standard_t(nu, size=r)


def bootstrap(
    metric: str,
    gold: Sequence,
    sides: Mapping[str, Sequence[Sequence]],
    replicates: int = REPLICATES,
    seed: int = 0,
    scheme: str = "t",
) -> Bootstrap:
    """Replicates of each side's seed-averaged score: examples resampled (one draw for all
    sides); the restarts' share is added per difference (scheme "t"; "resample": seeds drawn
    with replacement, the rejected alternative the benchmark compares); module docstring.

    gold: the evaluation split's answers in `tasks.evaluate`'s form (labels, scores, or one tag
        list per sentence); sides: {name: [predictions of seed 0, of seed 1, ...]}, each like gold.
    """
    if metric not in METRICS:
        raise ValueError(f"bootstrap: unknown metric {metric!r}; expected one of {METRICS}")
    if not isinstance(replicates, int) or replicates < 1:
        raise ValueError(f"bootstrap: expected a positive number of replicates, got {replicates}")
    if not sides:
        raise ValueError("bootstrap: expected at least one side, got none")
    if scheme not in SCHEMES:
        raise ValueError(f"bootstrap: unknown scheme {scheme!r}; expected one of {SCHEMES}")
    names = list(sides)
    flat, owner = [], []
    for name in names:
        runs = sides[name]
        if isinstance(runs, str) or len(runs) == 0:
            raise ValueError(
                f"bootstrap: side {name!r}: expected a list of seeds' predictions, "
                f"got {'a str' if isinstance(runs, str) else 'none'}"
            )
        flat += list(runs)
        owner += [name] * len(runs)
    scorer = _scorer(metric, gold, flat, [f"side {o!r} seed {i}" for o, i in _numbered(owner)])
    n = scorer.n
    rng = np.random.default_rng(seed)
    point_all = scorer.scores(np.ones((1, n)))[0]  # (S_all,)
    chunk = max(1, _CHUNK // n)
    per_seed = np.concatenate(
        [
            scorer.scores(_draw_counts(rng, min(chunk, replicates - start), n))
            for start in range(0, replicates, chunk)
        ]
    )  # (R, S_all)
    point, scores, restart_sd, draws = {}, {}, {}, {}
    for name in names:
        mine = [i for i, o in enumerate(owner) if o == name]
        per, full = per_seed[:, mine], point_all[mine]  # (R, S), (S,)
        point[name], scores[name] = float(full.mean()), full.tolist()
        restart_sd[name] = math.sqrt(restart_variance(per, full)) if len(mine) > 1 else None
        if scheme == "resample" and len(mine) > 1:  # the pigeonhole bootstrap, for comparison
            pick = rng.integers(0, len(mine), size=per.shape)  # (R, S) seeds drawn
            draws[name] = np.take_along_axis(per, pick, axis=1).mean(axis=1)
        else:
            draws[name] = per.mean(axis=1)  # (R,) m_r
    return Bootstrap(point, scores, restart_sd, draws, scheme, seed)


def delta_interval(
    metric: str,
    gold: Sequence,
    snow: Sequence[Sequence],
    fire: Sequence[Sequence],
    level: float = 0.95,
    replicates: int = REPLICATES,
    seed: int = 0,
) -> Interval:
    """Δ = 🔥 − ❄️ with its paired bootstrap interval (each side: one prediction list per seed)."""
    return bootstrap(metric, gold, {"snow": snow, "fire": fire}, replicates, seed).interval(
        "snow", "fire", level
    )


def resampled_scores(
    metric: str, gold: Sequence, preds: Sequence[Sequence], counts: np.ndarray
) -> np.ndarray:
    """(R, S): each seed's score on each resample given as counts (R, N) of the examples; the
    engine of `bootstrap`, exposed so it can be checked against scoring each resample built out."""
    scorer = _scorer(metric, gold, list(preds), [f"seed {i}" for i in range(len(preds))])
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[1] != scorer.n:
        raise ValueError(
            f"resampled_scores: expected counts of shape (R, {scorer.n}), got {counts.shape}"
        )
    return scorer.scores(counts)


def restart_variance(per_seed: np.ndarray, point: np.ndarray) -> float:
    """σ̂²_B = max(0, s² − ê): the seeds' spread less the share of it the examples' draw
    carries (module docstring); per_seed (R, S) scores on the draws, point (S,) on the sample."""
    s = per_seed.shape[1]
    d = point - point.mean()  # (S,)
    spread = float(d @ d) / (s - 1)
    luck = s / (s - 1) * float((per_seed - per_seed.mean(axis=1, keepdims=True)).var(axis=0).mean())
    return max(0.0, spread - luck)


def _numbered(owner: list[str]):
    seen: dict[str, int] = {}
    for o in owner:
        seen[o] = seen.get(o, -1) + 1
        yield o, seen[o]


def _draw_counts(rng: np.random.Generator, r: int, n: int) -> np.ndarray:
    """(r, n) how often each example is drawn in r resamples of n with replacement."""
    idx = rng.integers(0, n, size=(r, n), dtype=np.int32)  # (r, n); r·n < 2³¹ (_CHUNK)
    idx += (np.arange(r, dtype=np.int32) * n)[:, None]  # row k counts into [k n, (k+1) n)
    return np.bincount(idx.ravel(), minlength=r * n).reshape(r, n).astype(np.float64)


# -- metrics as functions of the counts -----------------------------------------------------------


class _Additive:
    """A metric of summed per-example statistics: F (N, S, K) and score(sums (..., S, K))."""

    def __init__(self, features: np.ndarray, score):
        self.features, self.score, self.n = features, score, features.shape[0]

    def scores(self, counts: np.ndarray) -> np.ndarray:
        n, s, k = self.features.shape
        sums = (counts @ self.features.reshape(n, s * k)).reshape(-1, s, k)  # (R, S, K)
        return self.score(sums)  # (R, S)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0.0 where den is 0 (tasks/metrics.py's zero-division rule)."""
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _correlation(n, sx, sy, sxx, syy, sxy) -> np.ndarray:
    varx, vary = n * sxx - sx * sx, n * syy - sy * sy
    den = np.sqrt(np.clip(varx, 0.0, None) * np.clip(vary, 0.0, None))
    return np.clip(_ratio(n * sxy - sx * sy, den), -1.0, 1.0)


def _scorer(metric: str, gold: Sequence, preds: list, names: list[str]):
    if len(gold) == 0:
        raise ValueError(f"{metric}: expected at least one evaluation example, got none")
    for pred, name in zip(preds, names, strict=True):
        if isinstance(pred, str) or len(pred) != len(gold):
            got = "a str" if isinstance(pred, str) else f"{len(pred)} predictions"
            raise ValueError(
                f"{metric}: {name}: expected {len(gold)} predictions (one per "
                f"evaluation example), got {got}"
            )
    if metric in ("span_f1", "precision", "recall"):
        return _spans(metric, gold, preds, names)
    if metric in ("pearson", "spearman"):
        x = _floats(gold, metric, "gold")
        ys = [_floats(p, metric, n) for p, n in zip(preds, names, strict=True)]
        return _Ranks(x, ys) if metric == "spearman" else _pearson(x, ys)
    book: dict = {}
    g = np.array([book.setdefault(v, len(book)) for v in gold])  # (N,)
    ps = [np.array([book.setdefault(v, len(book)) for v in p]) for p in preds]  # S x (N,)
    right = np.stack([p == g for p in ps], axis=1).astype(np.float64)  # (N, S)
    if metric == "accuracy":
        return _Additive(right[:, :, None], lambda s: s[..., 0] / len(gold))
    if metric == "f1":
        gp = np.array([v == "1" for v in gold])[:, None]  # (N, 1) gold positive
        pp = np.stack([np.array([v == "1" for v in p]) for p in preds], axis=1)  # (N, S)
        f = np.stack([gp & pp, ~gp & pp, gp & ~pp], axis=2).astype(np.float64)  # (N, S, 3)
        return _Additive(f, lambda s: _ratio(2 * s[..., 0], 2 * s[..., 0] + s[..., 1] + s[..., 2]))
    k = len(book)
    onehot = np.eye(k)
    if metric == "macro_f1":  # per class: TP, gold count, predicted count (tasks.metrics)
        hits = np.stack([onehot[g] * (p == g)[:, None] for p in ps], axis=1)  # (N, S, K)
        f = np.concatenate(
            [
                hits,
                np.repeat(onehot[g][:, None, :], len(ps), axis=1),
                np.stack([onehot[p] for p in ps], axis=1),
            ],
            axis=2,
        )
        return _Additive(f, lambda s: _macro_f1(s[..., :k], s[..., k : 2 * k] + s[..., 2 * k :]))
    # matthews: Gorodkin's K-class form, as tasks.metrics.matthews_corrcoef
    f = np.concatenate(
        [
            right[:, :, None],
            np.repeat(onehot[g][:, None, :], len(ps), axis=1),
            np.stack([onehot[p] for p in ps], axis=1),
        ],
        axis=2,
    )  # (N, S, 1 + 2K)

    def mcc(s):
        n = float(len(gold))
        c, t, q = s[..., 0], s[..., 1 : 1 + k], s[..., 1 + k :]
        tq, qq, tt = (t * q).sum(-1), (q * q).sum(-1), (t * t).sum(-1)
        return _ratio(c * n - tq, np.sqrt(np.clip((n * n - qq) * (n * n - tt), 0.0, None)))

    return _Additive(f, mcc)


def _macro_f1(tp: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Mean over the classes present in the resample's gold or predictions (seen > 0) of
    2 TP / (gold + predicted), tasks.metrics.macro_f1 on the resample."""
    present = seen > 0
    f1 = np.divide(2 * tp, seen, out=np.zeros_like(tp), where=present)
    return f1.sum(-1) / np.maximum(present.sum(-1), 1)


def _floats(values: Sequence, metric: str, which: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)  # (N,)
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise ValueError(f"{metric}: {which}: expected a flat list of finite numbers")
    return a


def _centred(a: np.ndarray) -> np.ndarray:
    """a − mean(a); exactly zero for a constant series (its correlation is then 0.0)."""
    return np.zeros_like(a) if np.all(a == a[0]) else a - a.mean()


def _pearson(x: np.ndarray, ys: list[np.ndarray]) -> _Additive:
    xc = _centred(x)[:, None]  # (N, 1)
    yc = np.stack([_centred(y) for y in ys], axis=1)  # (N, S)
    one = np.ones_like(yc)
    f = np.stack([one, xc * one, yc, xc * xc * one, yc * yc, xc * yc], axis=2)  # (N, S, 6)
    return _Additive(f, lambda s: _correlation(*np.moveaxis(s, -1, 0)))


class _Ranks:
    """Spearman per replicate: weighted average ranks of each resample (module docstring)."""

    def __init__(self, x: np.ndarray, ys: list[np.ndarray]):
        self.n = len(x)
        self.x, self.ys = _RankPlan(x), [_RankPlan(y) for y in ys]

    def scores(self, counts: np.ndarray) -> np.ndarray:
        n = counts.sum(axis=1)  # (R,) = N
        rx = self.x.ranks(counts)  # (R, N)
        wx = counts * rx
        out = []
        for plan in self.ys:
            ry = plan.ranks(counts)  # (R, N)
            wy = counts * ry
            sums = [wx.sum(1), wy.sum(1), (wx * rx).sum(1), (wy * ry).sum(1), (wx * ry).sum(1)]
            out.append(_correlation(n, *sums))
        return np.stack(out, axis=1)  # (R, S)


class _RankPlan:
    """The sort of one series, reused by every replicate."""

    def __init__(self, v: np.ndarray):
        self.order = np.argsort(v, kind="stable")  # (N,)
        s = v[self.order]
        self.starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])  # (G,) tie groups
        self.group = np.repeat(np.arange(len(self.starts)), np.diff(np.r_[self.starts, len(v)]))

    def ranks(self, counts: np.ndarray) -> np.ndarray:
        """(R, N) each example's average rank in its resample, centred on (n + 1) / 2."""
        sizes = np.add.reduceat(counts[:, self.order], self.starts, axis=1)  # (R, G)
        before = np.cumsum(sizes, axis=1) - sizes  # (R, G) drawn values below the group
        centre = (counts.sum(axis=1, keepdims=True) + 1) / 2  # (R, 1)
        rank = before + (sizes + 1) / 2 - centre  # (R, G)
        out = np.empty_like(counts)
        out[:, self.order] = rank[:, self.group]
        return out


def _spans(metric: str, gold: Sequence, preds: list, names: list[str]) -> _Additive:
    from snowfire.tasks import tag_spans

    chunks = [set(tag_spans(g, i)) for i, g in enumerate(gold)]
    f = np.zeros((len(gold), len(preds), 3))  # (N, S, 3): correct, predicted, gold chunks
    for s, (pred, name) in enumerate(zip(preds, names, strict=True)):
        for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
            if isinstance(p, str) or len(p) != len(g):
                got = "a str" if isinstance(p, str) else f"{len(p)} tags"
                raise ValueError(
                    f"{metric}: {name}: sentence {i}: expected {len(g)} predicted "
                    f"tags (one per gold tag), got {got}"
                )
            mine = set(tag_spans(p, i))
            f[i, s] = (len(mine & chunks[i]), len(mine), len(chunks[i]))
    score = {
        "span_f1": lambda s: _ratio(2 * s[..., 0], s[..., 1] + s[..., 2]),
        "precision": lambda s: _ratio(s[..., 0], s[..., 1]),
        "recall": lambda s: _ratio(s[..., 0], s[..., 2]),
    }[metric]
    return _Additive(f, score)
