"""Paired racing (compare/racing.py) against the exhaustive comparison: the same `snowfire
compare` run twice on the same features, once with --no-race (every cell to its cap) and once
raced (the default), then the exhaustive runs replayed under the race (compare/racing.py's
`replay`: the decisions the race would take, from the recorded selection predictions alone).

Reported per comparison: wall seconds of the whole command, training CPU-hours (every cell's
recorded CPU time, the shared extraction left out: both runs read the same store), each task's
verdict words, the race's stops, whether the replay of the exhaustive runs made the live race's
decisions, whether the budget curves the race would draw from the exhaustive trials lie
within their band (compare/race_budget.py; with --trials), the race replayed on each arm's
first trial alone (one configuration per arm: its stops and CPU-hours, a stopped run counted
with its first epochs' time and its final scoring whole; with --trials), the CPU-hours of the
race replayed on every exhaustive trial the same way, and the ratios raced / exhaustive
(the issue's goal: at most 0.5 of the CPU-hours at --trials 4, 0.6 with one configuration per
arm, the same verdict on every task). Each replay also gives its floor: the cost had every
contender it stops been stopped at the first rung (the survivors whole), the least any rule
that ends with the same survivors pays; a goal below the floor needs a survivor stopped.

    python benchmarks/race.py --quick                 # the tests' tiny random BERT, tiny SST-2
    python benchmarks/race.py --encoder minilm --data DIR --tasks stsb,mrpc \
        --budget standard --trials 4 --arms snow,fire,lora,bitfit [--json]

Today's rule keeps every arm's leading trial to its cap (compare/race.py); the figures in
docs/racing.md were recorded under the earlier rule, which `--race-stops-leaders` races and
replays under.

One run of each: a shared machine moves absolute times a lot, so read the ratios, and repeat
on a quiet machine before quoting them.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import report

REPO = Path(__file__).resolve().parent.parent


def quick_setup(work: Path) -> tuple[str, Path]:
    """The tests' tiny random BERT and a tiny SST-2 (48 train, 16 dev: a slice of train
    selects, dev reports)."""
    sys.path.insert(0, str(REPO))  # tests.helpers: the fixtures' builders
    from tests.helpers.tasks import write_sst2
    from tests.helpers.tiny_bert import build_tiny_bert

    bert = build_tiny_bert(work / "tiny_bert")
    return f"hf:{bert}", write_sst2(work / "data", sizes=(("train", 48), ("dev", 16)))


def run(argv: list[str], out: Path) -> tuple[dict, float]:
    """One `snowfire compare` into `out`: its results.json and its wall seconds."""
    from snowfire.cli import main as snowfire

    started = time.perf_counter()
    code = snowfire([*argv, "--out", str(out), "--quiet"])
    if code != 0:
        raise SystemExit(f"race benchmark: compare into {out} exited with {code}")
    return json.loads((out / "results.json").read_text()), time.perf_counter() - started


def training_cpu_hours(results: dict) -> float:
    """Every cell's recorded CPU seconds (RUN/config.json cost; a grid: its runs), in hours."""
    total = 0.0
    for cell in results["cells"]:
        run = Path(cell["run"])
        for path in list(run.glob("grid/*/config.json")) or [run / "config.json"]:
            total += float(json.loads(path.read_text()).get("cost", {}).get("cpu_seconds", 0.0))
    return total / 3600


def raced_cells(results: dict, task: str) -> list:
    """The cells of `task` that race (not LP-FT's probes or seq's intermediate stage)."""
    from snowfire.compare import Cell

    return [
        Cell.from_json(c)
        for c in results["cells"]
        if c["task"] == task and c["mode"] not in ("probe", "intermediate")
    ]


def replayed(results: dict, keep: bool = True) -> dict[str, dict]:
    """The race each task's exhaustive runs would have run (compare/racing.py `replay`; keep:
    an arm's leader is never stopped, today's rule)."""
    from snowfire.compare import replay

    out = {}
    for task, s in results["tasks"].items():
        spec = results["task_specs"][task]
        cells = raced_cells(results, task)
        out[task] = replay(cells, s["metric"], spec["kind"], keep_leaders=keep)
    return out


def replayed_cost(results: dict, keep: bool = True) -> dict[str, dict]:
    """Per task: the race replayed on every raced cell of the exhaustive runs, and the
    training CPU-hours it would take (compare/race_budget.py `replay_cost`: a stopped trial's
    held seeds in the share of their cost a cut run pays, its final scoring whole)."""
    from snowfire.compare import replay_cost

    return {
        task: replay_cost(
            raced_cells(results, task),
            s["metric"],
            results["task_specs"][task]["kind"],
            keep_leaders=keep,
        )
        for task, s in results["tasks"].items()
    }


def one_config(results: dict, keep: bool = True) -> dict[str, dict]:
    """Per task of a --trials comparison: the race replayed on each arm's first trial alone
    (one configuration per arm, what a compare without --trials races) and the training
    CPU-hours it would take against those trials run whole (compare/race_budget.py
    `replay_cost`: a stopped arm in the share of its cost a cut run pays); {} without
    --trials."""
    from snowfire.compare import replay_cost

    out = {}
    for task, s in results["tasks"].items():
        cells = raced_cells(results, task)
        first = {}
        for c in cells:
            if c.trial is not None:
                first[c.mode.value] = min(first.get(c.mode.value, c.trial), c.trial)
        if first:
            chosen = [c for c in cells if c.trial == first.get(c.mode.value)]
            kind = results["task_specs"][task]["kind"]
            out[task] = replay_cost(chosen, s["metric"], kind, keep_leaders=keep)
    return out


def budget_replay(results: dict, keep: bool = True) -> dict[str, dict]:
    """Per task and arm, whether the budget curve racing would draw from the exhaustive trials
    lies within their curve's band (compare/race_budget.py), and the compute of all N trials
    under each; {} without --trials."""
    from snowfire.compare import raced_budget_curves

    out = {}
    for task, s in results["tasks"].items():
        cells = raced_cells(results, task)
        if not any(c.trial is not None for c in cells):
            continue
        kind = results["task_specs"][task]["kind"]
        curves = raced_budget_curves(cells, s["metric"], kind, keep_leaders=keep)
        out[task] = {
            arm: {
                "within": c["within"],
                "raced_h": c["raced"]["compute"][-1],
                "exhaustive_h": c["exhaustive"]["compute"][-1],
            }
            for arm, c in curves.items()
        }
    return out


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the tiny BERT and SST-2, once")
    p.add_argument("--encoder", default="minilm")
    p.add_argument("--data", default=None)
    p.add_argument("--tasks", default="sst2")
    p.add_argument("--budget", default="quick")
    p.add_argument("--trials", type=int, default=None)
    p.add_argument("--seeds", type=int, default=None, help="compare's --seeds (the budget's)")
    p.add_argument("--arms", default="snow,fire,bitfit")
    p.add_argument("--work", default=None, help="keep the runs here (default: a temp dir)")
    p.add_argument(
        "--race-stops-leaders",
        action="store_true",
        help="race (and replay) under the earlier rule, where an arm's leading trial stops too "
        "when clearly behind: the rule docs/racing.md's recorded figures were made with",
    )
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="snowfire-race-"))
    encoder, data = args.encoder, args.data
    if args.quick:
        encoder, data = quick_setup(work)
    argv = ["compare", "--encoder", encoder, "--tasks", args.tasks, "--data", str(data)]
    argv += ["--budget", args.budget, "--arms", args.arms, "--store", str(work / "store")]
    argv += ["--trials", str(args.trials)] if args.trials else []
    argv += ["--seeds", str(args.seeds)] if args.seeds else []
    keep = not args.race_stops_leaders
    raced_more = [] if keep else ["--race-stops-leaders"]
    results, rows, record = {}, [], {}
    record["keep_leaders"] = keep
    for name, more in (("exhaustive", ["--no-race"]), ("raced", raced_more)):
        results[name], wall = run([*argv, *more], work / name)
        cpu = training_cpu_hours(results[name])
        record[name] = {
            "wall_s": round(wall, 1),
            "training_cpu_h": round(cpu, 5),
            "verdicts": {t: s["verdict"]["verdict"] for t, s in results[name]["tasks"].items()},
            "stopped": {
                t: list(s.get("race", {}).get("stopped", {}))
                for t, s in results[name]["tasks"].items()
            },
        }
        rows.append({"run": name, "wall s": f"{wall:.1f}", "training CPU-h": f"{cpu:.4f}"})
    replay = replayed(results["exhaustive"], keep)
    live = {t: s.get("race", {}) for t, s in results["raced"]["tasks"].items()}
    record["replay_matches_live"] = {
        t: replay[t]["decisions"] == live[t].get("decisions") for t in replay
    }
    ex, ra = record["exhaustive"], record["raced"]
    record["ratios"] = {
        "cpu_h": ra["training_cpu_h"] / ex["training_cpu_h"] if ex["training_cpu_h"] else None,
        "wall": ra["wall_s"] / ex["wall_s"] if ex["wall_s"] else None,
    }
    record["same_verdicts"] = ex["verdicts"] == ra["verdicts"]
    print(report.table(rows, ["run", "wall s", "training CPU-h"]))
    ratios = record["ratios"]
    print(f"raced / exhaustive: CPU-h {ratios['cpu_h']:.2f}, wall {ratios['wall']:.2f}")
    for t in ex["verdicts"]:
        print(
            f"{t}: exhaustive {ex['verdicts'][t]!r}, raced {ra['verdicts'][t]!r}; "
            f"stopped {ra['stopped'][t] or 'none'}; replay of the exhaustive runs "
            f"{'makes' if record['replay_matches_live'][t] else 'differs from'} the live decisions"
        )
    record["replay_cost"] = replayed_cost(results["exhaustive"], keep)
    for t, r in record["replay_cost"].items():
        print(
            f"{t}: the race replayed on the exhaustive runs: {r['raced_h']:.3f} of "
            f"{r['exhaustive_h']:.3f} CPU-h ({r['raced_h'] / r['exhaustive_h']:.2f}); its floor, "
            f"every contender it stops stopped at the first rung: {r['floor_h']:.3f} "
            f"({r['floor_h'] / r['exhaustive_h']:.2f})"
        )
    record["budget_replay"] = budget_replay(results["exhaustive"], keep)
    for t, arms in record["budget_replay"].items():
        shown = "; ".join(
            f"{arm} {'within' if b['within'] else 'outside'} "
            f"({b['raced_h']:.4f} of {b['exhaustive_h']:.4f} h)"
            for arm, b in arms.items()
        )
        print(f"{t}: budget curves raced on the exhaustive trials vs their band: {shown}")
    if not record["budget_replay"]:
        print("budget curves: none to replay (they need --trials)")
    record["one_config_replay"] = one_config(results["exhaustive"], keep)
    for t, r in record["one_config_replay"].items():
        ratio = r["raced_h"] / r["exhaustive_h"] if r["exhaustive_h"] else float("nan")
        print(
            f"{t}: one configuration per arm (each arm's first trial), the race replayed: "
            f"{r['raced_h']:.4f} of {r['exhaustive_h']:.4f} training CPU-h ({ratio:.2f}); "
            f"stopped {r['stopped'] or 'none'}; floor {r['floor_h'] / r['exhaustive_h']:.2f}"
        )
    print(f"runs in {work}")
    report.save("race" if args.quick else f"race-{args.tasks.replace(',', '-')}", args, record)


if __name__ == "__main__":
    main()
