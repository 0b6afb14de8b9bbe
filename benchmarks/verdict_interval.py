"""The verdict interval (compare/interval.py): its coverage of a known Δ, and its speed.

(a) Coverage. Simulated comparisons with a known true Δ, each side with several seeds:

    accuracy  example i right for a seed when z_i + μ_side + u + e > 0, z_i ~ N(0, 1) shared by
              both sides (paired), u ~ N(0, τ²) a restart's luck, e ~ N(0, 1); the true
              accuracy is Φ(μ / √(2 + τ²)), μ = 0.8 (❄️) and 1.0 (🔥)
    pearson   y = (β_side + v) x + 0.6 d + e, v ~ N(0, τ²) per restart, d ~ N(0, 1) shared,
              e ~ N(0, 0.36); ρ(b) = b / √(b² + 0.72), the true Δ by Gauss-Hermite over v;
              β = 1.0 (❄️) and 1.2 (🔥)

τ = 0 (restarts differ only by per-example luck), 0.05 (their spread about a point, as
❄️'s seeds in docs/results.md) and 0.15 (restarts dominate). Per cell: how often the 95%
interval holds the true Δ, for the scheme compare uses ("t": examples resampled, the restarts'
own variance added with Welch's t) and for resampling the seeds with replacement ("resample":
the pigeonhole bootstrap), and the basic interval (2Δ − the percentiles) of the first.

(b) Speed: one `bootstrap` of 3 + 3 seeds on 10,000 examples (CoNLL-2003-sized: 3,453
sentences for span F1) against building each resample out and scoring it with tasks.evaluate
(timed on 20 replicates); the ratio is evaluate-per-replicate / bootstrap-per-replicate.

    python benchmarks/verdict_interval.py [--reps 200] [--examples 1000] [--json]
"""

from __future__ import annotations

import math
import time

import numpy as np
import report

from snowfire.compare import bootstrap
from snowfire.tasks import evaluate

SIDES = ("snow", "fire")


def accuracy_cells(rng, n, seeds, tau):
    z = rng.normal(size=n)
    sides, truth = {}, []
    for side, mu in zip(SIDES, (0.8, 1.0), strict=True):
        sides[side] = [
            np.where(z + mu + rng.normal(0, tau) + rng.normal(0, 1, n) > 0, "1", "0").tolist()
            for _ in range(seeds[side])
        ]
        truth.append(0.5 * (1 + math.erf(mu / math.sqrt(2 + tau**2) / math.sqrt(2))))
    return ["1"] * n, sides, truth[1] - truth[0]


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(60)


def pearson_cells(rng, n, seeds, tau):
    x, d = rng.normal(size=n), rng.normal(size=n)
    sides, truth = {}, []
    for side, beta in zip(SIDES, (1.0, 1.2), strict=True):
        sides[side] = [
            ((beta + rng.normal(0, tau)) * x + 0.6 * d + rng.normal(0, 0.6, n)).tolist()
            for _ in range(seeds[side])
        ]
        b = beta + tau * _NODES
        truth.append(float(_WEIGHTS @ (b / np.sqrt(b * b + 0.72)) / _WEIGHTS.sum()))
    return x.tolist(), sides, truth[1] - truth[0]


def coverage(metric, cells, seeds, tau, reps, n, replicates, seed):
    rng = np.random.default_rng(seed)
    hits = {"t": 0, "basic": 0, "resample": 0}
    widths = {"t": [], "resample": []}
    for rep in range(reps):
        gold, sides, truth = cells(rng, n, seeds, tau)
        for scheme in ("t", "resample"):
            iv = bootstrap(metric, gold, sides, replicates, seed=rep, scheme=scheme).interval(
                "snow", "fire"
            )
            hits[scheme] += iv.low <= truth <= iv.high
            widths[scheme].append(iv.high - iv.low)
            if scheme == "t":
                hits["basic"] += 2 * iv.estimate - iv.high <= truth <= 2 * iv.estimate - iv.low
    return {k: v / reps for k, v in hits.items()}, {k: float(np.mean(v)) for k, v in widths.items()}


def _inputs(metric, rng, n):
    """gold and 3 + 3 seeds of predictions shaped like the task's."""
    if metric in ("accuracy", "f1", "matthews"):
        gold = rng.integers(0, 2, n).astype(str).tolist()
        seeds = [[g if rng.random() < 0.8 else str(1 - int(g)) for g in gold] for _ in range(6)]
        return gold, seeds, {"accuracy": "sst2", "f1": "mrpc", "matthews": "cola"}[metric]
    if metric in ("pearson", "spearman"):
        gold = np.round(rng.uniform(0, 5, n), 1)
        seeds = [np.clip(gold + rng.normal(0, 1, n), 0, 5).round(2).tolist() for _ in range(6)]
        return gold.tolist(), seeds, "stsb"
    tags = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "B-ORG", "I-ORG"]
    gold = [[tags[i] for i in rng.integers(0, len(tags), rng.integers(5, 20))] for _ in range(n)]
    seeds = [[[t if rng.random() < 0.85 else "O" for t in s] for s in gold] for _ in range(6)]
    return gold, seeds, "conll2003"


def speed(metric, n, replicates, rng):
    gold, seeds, task = _inputs(metric, rng, n)
    sides = {"snow": seeds[:3], "fire": seeds[3:]}
    started = time.perf_counter()
    bootstrap(metric, gold, sides, replicates)
    fast = time.perf_counter() - started
    started, slow_reps = time.perf_counter(), 20
    for _ in range(slow_reps):
        idx = rng.integers(0, n, n)
        g = [gold[i] for i in idx]
        for pred in seeds:
            evaluate(task, g, [pred[i] for i in idx])
    slow = time.perf_counter() - started
    return fast, slow / slow_reps / (fast / replicates)


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=200, help="simulated comparisons per cell")
    p.add_argument("--examples", type=int, default=1000, help="evaluation examples per cell")
    p.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates (coverage)")
    args = p.parse_args()
    rows = []
    for metric, cells in (("accuracy", accuracy_cells), ("pearson", pearson_cells)):
        for snow, fire in ((2, 2), (3, 3), (5, 5), (3, 1)):
            for tau in (0.0, 0.05, 0.15):
                started = time.perf_counter()
                hit, width = coverage(
                    metric,
                    cells,
                    {"snow": snow, "fire": fire},
                    tau,
                    args.reps,
                    args.examples,
                    args.replicates,
                    args.seed,
                )
                rows.append(
                    {
                        "metric": metric,
                        "seeds": f"{snow}+{fire}",
                        "tau": tau,
                        "t": f"{hit['t']:.3f}",
                        "basic": f"{hit['basic']:.3f}",
                        "resample": f"{hit['resample']:.3f}",
                        "width t": f"{width['t']:.3f}",
                        "width resample": f"{width['resample']:.3f}",
                        "s": f"{time.perf_counter() - started:.0f}",
                    }
                )
                print(rows[-1], flush=True)
    columns = ["metric", "seeds", "tau", "t", "basic", "resample", "width t", "width resample"]
    print(
        f"\ncoverage of the 95% interval, {args.reps} comparisons per row, "
        f"{args.examples} examples, {args.replicates} replicates"
    )
    print(report.table(rows, columns))
    rng = np.random.default_rng(args.seed)
    timing = []
    for metric, n in (
        ("accuracy", 10_000),
        ("f1", 10_000),
        ("matthews", 10_000),
        ("pearson", 10_000),
        ("spearman", 10_000),
        ("span_f1", 3_453),
    ):
        for replicates in (2_000, 10_000):
            seconds, ratio = speed(metric, n, replicates, rng)
            timing.append(
                {
                    "metric": metric,
                    "examples": n,
                    "replicates": replicates,
                    "seconds": f"{seconds:.2f}",
                    "evaluate / bootstrap per replicate": f"{ratio:.0f}",
                }
            )
            print(timing[-1], flush=True)
    print("\none bootstrap of 3 + 3 seeds")
    print(report.table(timing, list(timing[0])))
    report.save("verdict_interval", args, {"coverage": rows, "speed": timing})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
