"""How early does a 🔥-side run's selection score tell how it ends? Read from finished
exhaustive comparisons (`snowfire compare --no-race`), no training: the question behind a race
rung inside the first epoch (docs/racing.md).

🔥-side runs score their selection split at the end of every epoch (the race's evidence) and
`curve_points` times within it (the learning curve: the score alone, no predictions kept). For
each task, each 🔥-side contender's first seed gives its score at every such position p and its
final score (its best epoch, what the run keeps). Per position p (in the first `--epochs`):

- rho:    Spearman's rank correlation, over the contenders, of the score at p with the final
          score (1: p already ranks them as they end; 0: no information);
- spread: the best minus the worst score at p, in points (0: every run predicts alike, e.g.
          the majority class);
- behind: each arm's finally-best trial, points behind the leader at p, and where it ends
          relative to the final leader: what a rung at p would weigh it on.

Beside them, the race's own first rung (compare/racing.py: whole epochs, the same fraction of
each run's own cap, from `replay`): rho of each trial's best score within it.

A rung at p can stop only on what p shows; where rho is near 0 a stop there is a coin flip
about who ends ahead. The paired test the race applies (compare/race.py) needs per-example
predictions, which within-epoch points do not keep, so this reads the point scores.

    python benchmarks/race_early.py RUNS [RUNS ...] [--epochs 2] [--json]

RUNS: a compare's --out folder (its results.json names the cells).
"""

from __future__ import annotations

import json
from pathlib import Path

import report
from race import raced_cells


def trajectory(run: Path, metric: str) -> list[tuple[float, float, bool]]:
    """(nominal position in epochs, selection score, at an epoch's end) of a run, in order:
    an epoch's k-th of n within-epoch points sits at epoch − 1 + k/(n + 1)."""
    from snowfire.rundir import LOG, selection_scores

    out = []
    for line in (run / LOG).read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        within = record.get("within", [])
        for k, point in enumerate(within, 1):
            at = record["epoch"] - 1 + k / (len(within) + 1)
            out.append((round(at, 4), point["selection"][metric], False))
        out.append((float(record["epoch"]), selection_scores(record)[metric], True))
    return out


def contenders(results: dict, task: str) -> dict[str, tuple[str, Path]]:
    """{contender: (arm, run of its first seed)} of the task's 🔥-side raced cells."""
    from snowfire.compare import contender

    out: dict[str, tuple[str, Path]] = {}
    for cell in sorted(raced_cells(results, task), key=lambda c: -c.seed):  # seed 0 last
        if cell.mode.value != "snow":
            out[contender(cell)] = (cell.mode.value, Path(cell.run))
    return out


def rung_one(results: dict, task: str) -> dict[str, float]:
    """{contender: the epochs it has trained at the race's first rung} (`replay`'s record)."""
    from snowfire.compare import replay

    kind = results["task_specs"][task]["kind"]
    record = replay(raced_cells(results, task), results["tasks"][task]["metric"], kind)
    return {name: epochs[0] for name, epochs in record["epochs"].items()}


def early(results: dict, task: str, epochs: float) -> dict:
    """The task's table: per position p <= epochs, rho, spread and each arm's best behind."""
    from snowfire.tasks import spearman

    metric = results["tasks"][task]["metric"]
    runs = contenders(results, task)
    paths = {name: trajectory(run, metric) for name, (_, run) in runs.items()}
    arm_of = {name: arm for name, (arm, _) in runs.items()}
    final = {name: max(s for _, s, end in path if end) for name, path in paths.items()}
    winner = max(final.values())
    arm_best = {}
    for name in sorted(final, key=lambda n: -final[n]):
        arm_best.setdefault(arm_of[name], name)
    positions = sorted({p for path in paths.values() for p, _, _ in path if p <= epochs})
    rows = []
    for p in positions:
        at = {name: s for name, path in paths.items() for q, s, _ in path if q == p}
        if len(at) < 3:
            continue
        names = sorted(at)
        lead = max(at.values())
        rows.append(
            {
                "epoch": p,
                "n": len(at),
                "rho": spearman([final[n] for n in names], [at[n] for n in names]),
                "spread": 100 * (lead - min(at.values())),
                "behind": {
                    arm: {
                        "trial": name,
                        "at_p": round(100 * (at[name] - lead), 1),
                        "at_end": round(100 * (final[name] - winner), 1),
                    }
                    for arm, name in arm_best.items()
                    if name in at
                },
            }
        )
    first = rung_one(results, task)
    within = {n: max(s for p, s, end in paths[n] if end and p <= first[n]) for n in sorted(paths)}
    rung = {
        "epochs": {n: first[n] for n in sorted(paths)},
        "rho": spearman([final[n] for n in sorted(paths)], list(within.values())),
    }
    return {
        "metric": metric,
        "contenders": len(paths),
        "final": final,
        "positions": rows,
        "race_rung_1": rung,
    }


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="compare --out folders (exhaustive)")
    p.add_argument("--epochs", type=float, default=2.0, help="positions up to this many epochs")
    args = p.parse_args()
    out = {}
    for folder in args.runs:
        results = json.loads((Path(folder) / "results.json").read_text())
        for task in results["tasks"]:
            table = early(results, task, args.epochs)
            out[f"{task} ({results['config']['budget']})"] = table
            print(f"\n{task}: {table['contenders']} 🔥-side contenders, {table['metric']}")
            for row in table["positions"]:
                behind = ", ".join(
                    f"{b['trial']} {b['at_p']:+.1f} (ends {b['at_end']:+.1f})"
                    for b in row["behind"].values()
                )
                print(
                    f"  epoch {row['epoch']:.2f}: rho {row['rho']:+.2f}, spread "
                    f"{row['spread']:.1f} pts; arms' best behind the leader: {behind}"
                )
            rung = table["race_rung_1"]
            print(f"  the race's rung 1 (epochs {rung['epochs']}): rho {rung['rho']:+.2f}")
    if args.json:
        report.save("race_early", args, {"tasks": out})


if __name__ == "__main__":
    main()
