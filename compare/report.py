"""The report of `snowfire compare`: results.json (every cell), table.md (Table 2's layout with
the paper's rows beside ours and the zero-training baseline, then per task the heads, the verdict
and the cost), table.png, layer_weights.png."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from snowfire.rundir import (
    CONFIG,
    GRID,
    LAYER_PLOT,
    LOG,
    RESULTS,
    SCALAR_MIX,
    TABLE,
    TABLE_PLOT,
    WEIGHTS,
    atomic_write,
    write_json,
)

from .arms import ARM_NAMES, fine_tuning_arms
from .arms_report import arm_lines, cost_file, plot_cost
from .baseline import why_none
from .budget import BUDGETS
from .cell import Cell, Mode
from .config import CompareConfig
from .judge import judge
from .verdict import PAPER_TABLE2, mean_sd


def _params_snow(run: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(run / WEIGHTS), "np") as f:
        return int(sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys()))


def _cost(cell: Cell) -> dict[str, Any]:
    """Wall time, training examples per second and trainable parameters of a finished run."""
    run = Path(cell.run)
    config = json.loads((run / CONFIG).read_text())
    seconds = float(config.get("seconds", 0.0))
    if "grid" in config:  # 🔥 tuned on dev: the chosen run's log, the whole grid's time
        sub_runs = [json.loads(p.read_text()) for p in run.glob(f"{GRID}/*/{CONFIG}")]
        seconds = sum(float(c.get("seconds", 0.0)) for c in sub_runs)
        run = Path(config["grid"]["chosen"]["run"])
    epochs = sum(1 for line in (run / LOG).read_text().splitlines() if line)
    if cell.mode.side is Mode.SNOW:
        n_train = config.get("train_examples", config.get("featureset", {}).get("num_examples", 0))
        params = _params_snow(run)
        kept = (run / WEIGHTS).stat().st_size
    else:  # a grid's RUN/config.json is its chosen run's, with "grid" added
        n_train = config["num_examples"]["train"]
        params = sum(g["parameters"] for g in config["layer_groups"])
        kept = config.get("cost", {}).get("saved_bytes")
    rate = round(n_train * epochs / seconds, 1) if seconds else None
    peak = config.get("cost", {}).get("peak_rss_mb")
    return {
        "seconds": seconds,
        "epochs": epochs,
        "params": params,
        "examples_per_s": rate,
        "saved_bytes": kept,
        "peak_rss_mb": peak,
    }


def cost_of(cells: list[Cell]) -> dict[str, Any]:
    """One side's cost over its seeds: time, epochs and examples/s are the seeds' means, peak
    memory their highest; parameters and bytes kept are one run's (the same in every seed)."""
    each = [_cost(c) for c in cells]
    out = dict(each[0])
    for key in ("seconds", "epochs", "examples_per_s"):
        known = [c[key] for c in each if c[key] is not None]
        out[key] = sum(known) / len(known) if known else None
    if out["examples_per_s"] is not None:
        out["examples_per_s"] = round(out["examples_per_s"], 1)
    peaks = [c["peak_rss_mb"] for c in each if c.get("peak_rss_mb") is not None]
    out["peak_rss_mb"] = max(peaks) if peaks else None
    out["seeds"] = len(each)
    return out


def task_hours(cells: list[Cell], extraction: dict[str, Any]) -> dict[str, Any]:
    """What a task cost in all: its extraction and every cell of every seed and arm (a 🔥 grid:
    all its runs), in wall hours and, where the runs recorded it, CPU hours (every thread)."""
    wall, cpu = extraction.get("seconds", 0.0), extraction.get("cpu_seconds", 0.0)
    known = "cpu_seconds" in extraction or not extraction.get("splits")  # none made: in store
    for cell in cells:
        run = Path(cell.run)
        runs = list(run.glob(f"{GRID}/*/{CONFIG}")) or [run / CONFIG]
        for path in runs:
            config = json.loads(path.read_text())
            wall += float(config.get("seconds", 0.0))
            got = config.get("cost", {}).get("cpu_seconds")
            known, cpu = known and got is not None, cpu + (got or 0.0)
    return {
        "wall_hours": round(wall / 3600, 2),
        "cpu_hours": round(cpu / 3600, 2) if known else None,
    }


def summarise(
    cfg: CompareConfig, cells: list[Cell], baselines=None, extraction=None
) -> dict[str, Any]:
    """Per task: each ❄️ head's dev/test mean and sd, the best head (on dev), 🔥, Δ, verdict, and
    the zero-training baseline's scores (compare/baseline.py) where the task has one."""
    out = {}
    for task in cfg.names:
        metric = cfg.specs[task].metric
        mine = [c for c in cells if c.task == task]

        def scores(cs, split, metric=metric):
            return [c.metrics[split][metric] for c in cs if split in c.metrics]

        heads = {}
        for head in cfg.heads_for(task):
            cs = [c for c in mine if c.mode is Mode.SNOW and c.head == head]
            heads[head] = {s: mean_sd(scores(cs, s)) for s in ("dev", "test") if scores(cs, s)}
        best = max(heads, key=lambda h: heads[h]["dev"][0])  # chosen on dev only
        snow = [c for c in mine if c.mode is Mode.SNOW and c.head == best]
        fire = [c for c in mine if c.mode is Mode.FIRE]
        arms = {a: [c for c in mine if c.mode == Mode(a)] for a in fine_tuning_arms(cfg.arms)}
        arms = {a: cs for a, cs in arms.items() if cs}  # seq: not after its own task
        out[task] = {
            "metric": metric,
            "heads": heads,
            "best_head": best,
            "snow": {s: mean_sd(scores(snow, s)) for s in ("dev", "test") if scores(snow, s)},
            "fire": {s: mean_sd(scores(fire, s)) for s in ("dev", "test") if scores(fire, s)},
            "cost": {"snow": cost_of(snow), "fire": cost_of(fire)}
            | {a: cost_of(cs) for a, cs in arms.items()},
            "arms": {
                a: {s: mean_sd(scores(cs, s)) for s in ("dev", "test") if scores(cs, s)}
                for a, cs in arms.items()
            },
        }
        base = (baselines or {}).get(task)
        if base:
            out[task]["baseline"] = {"method": base["method"]} | {
                s: base[s][metric] for s in ("dev", "test") if s in base
            }
        out[task]["verdict"] = judge(cfg.specs[task], snow, fire, base, arms=arms)
        out[task]["hours"] = task_hours(mine, (extraction or {}).get(task, {}))
    return out


def _seeds(cfg: CompareConfig, plain: bool = False) -> str:
    """The seeds per side; `plain` names the sides in words (plot fonts have no emoji)."""
    if cfg.seeds_fire == cfg.seeds:
        return f"{cfg.seeds} seed(s)"
    snow, fire = ("head", "fine-tuning") if plain else ("❄️", "🔥")
    return f"{snow} {cfg.seeds} seeds, {fire} {cfg.seeds_fire}"


def _extraction(ex: dict[str, Any]) -> str:
    """What compare's own extraction of the task cost when made (a rerun reuses it), and which
    splits it covers when others were already in the store."""
    made, every = ex.get("splits", []), ex.get("all_splits", [])
    if not made:
        return "in the store"
    cost = f"{ex.get('seconds', 0):.0f}"
    rest = [s for s in every if s not in made]
    return cost + (f" ({', '.join(made)}; {', '.join(rest)} in the store)" if rest else "")


def _cell(pair) -> str:
    mean, sd = pair
    return f"{100 * mean:.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}")


def curves_file(task: str) -> str:
    """A task's learning-curve plot, relative to OUT."""
    return f"curves-{task}.png"


def _restarts(side: str, r: dict[str, Any]) -> str:
    icon = "❄️" if side == "snow" else "🔥"
    if r["sd"] is None:
        return f"{icon} 1 seed"
    return (
        f"{icon} {r['seeds']} seeds, sd {100 * r['sd']:.1f}, range {100 * r['min']:.1f}–"
        f"{100 * r['max']:.1f}"
    )


def _delta(v: dict[str, Any]) -> str:
    """Δ and its interval, ×100, e.g. "+1.7 [-0.4, +3.9]" (the split when not the table's)."""
    d = v["delta"]
    return f"{100 * d['delta']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"


def _column(cfg: CompareConfig, task: str) -> str:
    """A task's column: a user's task names its metric (the paper's name theirs in its table)."""
    spec = cfg.specs[task]
    return task if spec.registered else f"{task} ({spec.metric})"


def table(cfg: CompareConfig, summary: dict[str, Any], extraction: dict[str, Any]) -> str:
    tasks = cfg.names
    head = "| encoder | mode | split | " + " | ".join(_column(cfg, t) for t in tasks) + " |"
    rows = [head, "|" + " --- |" * (len(tasks) + 3)]
    paper = [t for t in tasks if cfg.specs[t].registered]  # the paper's rows: its tasks only
    for (enc, mode), values in PAPER_TABLE2.items() if paper else ():
        values = {t: v for t, v in values.items() if t in paper}
        icon = "❄️" if mode == "snow" else "🔥"
        rows.append(
            f"| {enc} (paper) | {icon} | test | "
            + " | ".join(f"{values[t]:.1f}" if t in values else "–" for t in tasks)
            + " |"
        )
    for split in ("dev", "test"):
        for mode, icon in (("snow", "❄️"), ("fire", "🔥")):
            if not any(split in summary[t][mode] for t in tasks):
                continue
            cells = [
                _cell(summary[t][mode][split]) if split in summary[t][mode] else "–" for t in tasks
            ]
            rows.append(f"| {cfg.encoder} (ours) | {icon} | {split} | " + " | ".join(cells) + " |")
        for arm in fine_tuning_arms(cfg.arms):
            got = [summary[t]["arms"].get(arm, {}) for t in tasks]
            if any(split in g for g in got):
                cells = [_cell(g[split]) if split in g else "–" for g in got]
                rows.append(
                    f"| {cfg.encoder} (ours) | {ARM_NAMES[arm]} | {split} | "
                    + " | ".join(cells)
                    + " |"
                )
        base = [summary[t].get("baseline", {}) for t in tasks]
        shown = any(split in summary[t][m] for t in tasks for m in ("snow", "fire"))
        if shown or any(split in b for b in base):  # "–": a task with no such answer
            cells = [f"{100 * b[split]:.1f}" if split in b else "–" for b in base]
            rows.append(
                f"| {cfg.encoder} (ours) | no training | {split} | " + " | ".join(cells) + " |"
            )
    judged = [summary[t]["verdict"] for t in tasks]
    splits = sorted({v["split"] for v in judged})
    rows.append(
        "| Δ = 🔥 − ❄️ [95% interval] | | "
        + "/".join(splits)
        + " | "
        + " | ".join(_delta(v) for v in judged)
        + " |"
    )
    rows.append(
        "| verdict | | "
        + "/".join(splits)
        + " | "
        + " | ".join(v["verdict"] for v in judged)
        + " |"
    )
    budget = BUDGETS[cfg.budget]
    lines = [
        f"# ❄️ or 🔥: {cfg.encoder}, {_seeds(cfg)}, budget {cfg.budget}",
        "",
        "\n".join(rows),
        "",
        "Scores ×100 (mean ± sd over seeds); ours: the task's metric on dev, and on test where "
        "the task has a labelled test split"
        + ("; the paper's rows are its test scores" if paper else "")
        + ". ❄️: the best head on dev. Δ = 🔥 − ❄️ on test where every cell has a labelled test "
        "split, else dev, with its 95% interval from a paired bootstrap over the examples and "
        "each side's restarts (seeds); a call (🔥 > ❄️ or ❄️ > 🔥) only when the interval "
        "excludes 0 and every cell converged, else ❄️ ≈ 🔥 or budget-limited: no verdict. "
        "No training: cosine of mean-pooled texts (similarity tasks) or the majority label "
        "(classification), nothing trained; the row a trained answer has to beat (– where no "
        "such answer says anything: tagging, regression of one text).",
        f"Budget {cfg.budget}: ❄️ {budget.snow.to_json() or 'the defaults of snowfire train'}; "
        f"🔥 {budget.fire.to_json()}"
        + (
            " with rate and epochs tuned on dev (snowfire finetune --grid shared)"
            if cfg.budget == "full"
            else ""
        )
        + "".join(
            f"; {t}: {n:,} training examples drawn, both sides"
            for t, n in budget.subsample.items()
            if t in tasks
        )
        + (
            f". ❄️ features of pairs encoded {cfg.pair_encoding_used}"
            if any(cfg.specs[t].pair for t in tasks)
            else ""
        )
        + (f"; head options {json.dumps(cfg.hparams)}." if cfg.hparams else ".")
        + " Train (s) and examples/s: the seeds' means.",
        "",
        "| task | metric | ❄️ head | dev | test | train (s) | examples/s | params "
        "| extraction (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in tasks:
        s = summary[t]
        ex = extraction.get(t, {})
        ext = _extraction(ex)
        for h, v in s["heads"].items():
            c = s["cost"]["snow"] if h == s["best_head"] else None
            lines.append(
                f"| {t} | {s['metric']} | {h}{' (best)' if h == s['best_head'] else ''} | "
                f"{_cell(v['dev'])} | {_cell(v['test']) if 'test' in v else '–'} | "
                + (
                    f"{c['seconds']:.0f} | {c['examples_per_s']} | {c['params']:,} | {ext} |"
                    if c
                    else "| | | |"
                )
            )
        if "baseline" in s:
            b = s["baseline"]
            lines.append(
                f"| {t} | {s['metric']} | no training: {b['method']} | "
                f"{100 * b['dev']:.1f} | "
                + (f"{100 * b['test']:.1f}" if "test" in b else "–")
                + " | 0 | – | 0 | – |"
            )
        else:
            lines.append(
                f"| {t} | {s['metric']} | no training: {why_none(cfg.specs[t])} | – | – "
                "| – | – | – | – |"
            )
        c = s["cost"]["fire"]
        lines.append(
            f"| {t} | {s['metric']} | 🔥 fine-tuning | {_cell(s['fire']['dev'])} | "
            f"{_cell(s['fire']['test']) if 'test' in s['fire'] else '–'} | {c['seconds']:.0f} | "
            f"{c['examples_per_s']} | {c['params']:,} | – |"
        )
    lines += [
        "",
        "Per task: the verdict with its evidence (cells still improving at their "
        "epoch cap, each side's restarts, degenerate seeds), and its learning curves.",
        "",
    ]
    for t in tasks:
        v = summary[t]["verdict"]
        spread = "; ".join(_restarts(side, v["restarts"][side]) for side in ("snow", "fire"))
        h = summary[t]["hours"]
        spent = f"{h['wall_hours']:.2f} h wall" + (
            f", {h['cpu_hours']:.2f} CPU-h" if h["cpu_hours"] is not None else ""
        )
        lines += [
            f"- **{t}** ({v['split']} {v['metric']}): {v['text']}. Restarts: {spread}. "
            f"Cost: {spent} (extraction and every cell). "
            f"![{t} learning curves]({curves_file(t)})"
        ]
    lines += arm_lines(cfg, summary)
    lines += ["", f"![❄️ vs 🔥]({TABLE_PLOT})", "", f"![layer weights]({LAYER_PLOT})", ""]
    return "\n".join(lines)


def write_report(cfg: CompareConfig, cells, extraction, baselines=None) -> dict[str, Any]:
    from snowfire.cache import versions
    from snowfire.options import threads_record
    from snowfire.tasks import describe

    out = Path(cfg.out)
    summary = summarise(cfg, cells, baselines, extraction)
    identity = None
    fire_config = Path(next(c.run for c in cells if c.mode is Mode.FIRE)) / CONFIG
    snow_config = Path(next(c.run for c in cells if c.mode is Mode.SNOW)) / CONFIG
    if snow_config.is_file():
        identity = json.loads(snow_config.read_text())["featureset"]["encoder"]
    results = {
        "config": cfg.to_json(),
        "budget": BUDGETS[cfg.budget].to_json(),
        "encoder": identity,
        "versions": versions(),
        "threads": threads_record(),  # this process's; each cell's run records its own
        "extraction": extraction,
        "baselines": baselines or {},
        # each task as resolved: kind, labels, metric, every split file's path and sha256
        "task_specs": {name: describe(spec, cfg.data) for name, spec in cfg.specs.items()},
        "tasks": summary,
        "cells": [c.to_json() for c in cells],
        "fire_example_config": str(fire_config),
    }
    write_json(out / RESULTS, results)
    atomic_write(out / TABLE, table(cfg, summary, extraction))
    _plot_bars(cfg, summary, out / TABLE_PLOT)
    _plot_layers(cfg, summary, cells, out / LAYER_PLOT)
    for task, s in summary.items():
        _plot_task_curves(cfg, task, s, out / curves_file(task))
        if len(cfg.arms) > 2:
            plot_cost(cfg, task, s, out / cost_file(task))
    return {
        "table": str(out / TABLE),
        "results": str(out / RESULTS),
        "verdicts": {t: s["verdict"]["text"] for t, s in summary.items()},
    }


def _plot_task_curves(cfg, task: str, s: dict[str, Any], path: Path) -> None:
    """Every cell's learning curve of `task` (the best ❄️ head's and 🔥's), written atomically."""
    import tempfile

    from .curves import plot_curves

    v = s["verdict"]
    cells = [
        {
            "mode": side,
            "head": s["best_head"] if side == "snow" else None,
            "seed": c["seed"],
            "curve": c["curve"],
            "status": c["status"],
        }
        for side in ("snow", "fire")
        for c in v["curves"][side]
    ]
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        drawn = Path(tmp) / path.name
        plot_curves(task, v["metric"], cells, drawn)
        atomic_write(path, drawn.read_bytes())


def _plot_bars(cfg, summary, path: Path) -> None:
    """Left: each side's score on the verdict's split (bars: the seeds' mean and sd; dashed: no
    training). Right: Δ = 🔥 − ❄️ with its 95% interval, the error bar the verdict reads."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    tasks = cfg.names
    x = np.arange(len(tasks))
    split = {t: summary[t]["verdict"]["split"] for t in tasks}
    width = max(4, 1.3 * len(tasks) + 2)
    fig, (ax, dx) = plt.subplots(
        1, 2, figsize=(width + 3, 3.6), gridspec_kw={"width_ratios": [width, 3]}
    )
    for offset, mode, label, color in (
        (-0.2, "snow", "features + best head", "#4c8cbf"),
        (0.2, "fire", "fine-tuning", "#d9622b"),
    ):
        means = [100 * summary[t][mode][split[t]][0] for t in tasks]
        sds = [100 * (summary[t][mode][split[t]][1] or 0) for t in tasks]
        ax.bar(x + offset, means, 0.4, yerr=sds, capsize=3, label=label, color=color)
    base = [
        (i, 100 * summary[t]["baseline"][split[t]])
        for i, t in enumerate(tasks)
        if split[t] in summary[t].get("baseline", {})
    ]
    if base:
        ax.hlines(
            [v for _, v in base],
            [i - 0.42 for i, _ in base],
            [i + 0.42 for i, _ in base],
            colors="black",
            linestyles="dashed",
            label="no training",
        )
    ax.set_xticks(x, [f"{t} ({split[t]})" for t in tasks])
    ax.set_ylabel("score (x100)")
    ax.set_title(f"{cfg.encoder}: features + head vs fine-tuning ({_seeds(cfg, plain=True)})")
    ax.legend(fontsize=8, loc="lower left")
    deltas = [summary[t]["verdict"]["delta"] for t in tasks]
    mid = np.array([100 * d["delta"] for d in deltas])
    err = np.array(
        [
            [100 * (d["delta"] - d["low"]) for d in deltas],
            [100 * (d["high"] - d["delta"]) for d in deltas],
        ]
    )
    dx.errorbar(x, mid, yerr=err, fmt="o", color="black", capsize=4)
    dx.axhline(0, color="grey", linewidth=0.8)
    dx.set_xticks(x, tasks)
    dx.set_xlim(-0.6, len(tasks) - 0.4)
    dx.set_ylabel("fine-tuning - features (x100)")
    dx.set_title("difference, 95% interval", fontsize=9)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)


def _plot_layers(cfg, summary, cells, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for task in cfg.names:
        best = summary[task]["best_head"]
        run = next(
            Path(c.run)
            for c in cells
            if c.task == task and c.mode is Mode.SNOW and c.head == best and c.seed == 0
        )
        mixes = json.loads((run / SCALAR_MIX).read_text())
        if mixes:
            weights = next(iter(mixes.values()))
            ax.plot(range(len(weights)), weights, "o-", label=f"{task} ({best})")
    ax.set_xlabel("layer (0: embeddings)")
    ax.set_ylabel("softmax(w) of the scalar mix")
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
