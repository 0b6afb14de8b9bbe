"""The arms' part of compare's report (--arms; compare/arms.py): per task a row per arm with
its score, Δ against ❄️ and against 🔥 with their 95% intervals, and its cost; and the
cost–score plot per task (score against trainable parameters and against wall time, log x)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snowfire.rundir import atomic_write

from .arms import ARM_NAMES, plain
from .convergence import CONVERGED, RACED
from .logaxis import plain_log_x


def cost_file(task: str) -> str:
    """A task's cost–score plot, relative to OUT."""
    return f"cost-{task}.png"


#: Under the table when a peak was measured in a process that had trained before.
SHARED_PEAK = (
    "† Peak measured in a process that had trained earlier cells (`--no-cell-processes`, or a "
    "run from before cells had processes of their own): its resident set holds what they left "
    "(memory the allocator kept, feature shards still mapped), an upper bound on the arm's own."
)


def _peak(cost: dict[str, Any]) -> str:
    """The peak RSS cell of a row: MB, † where it may hold earlier cells' memory."""
    peak = cost.get("peak_rss_mb")
    if peak is None:
        return "–"
    return f"{peak} †" if not cost.get("peak_rss_own", False) else f"{peak}"


def _interval(d: dict[str, Any]) -> str:
    return f"{100 * d['delta']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"


def _mb(n: float | None) -> str:
    return "–" if n is None else f"{n / 2**20:.2f}" if n < 2**30 else f"{n / 2**30:.2f} GB"


def points(s: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every arm of one task's summary: its score on the verdict's split (seeds' mean), the
    seeds' lowest and highest, and its cost."""
    v = s["verdict"]
    out = {
        side: {
            "score": v[side],
            "min": v["restarts"][side]["min"],
            "max": v["restarts"][side]["max"],
            "cost": s["cost"][side],
        }
        for side in ("snow", "fire")
    }
    for arm, a in v.get("arms", {}).items():
        out[arm] = {
            "score": a["score"],
            "min": min(a["scores"]),
            "max": max(a["scores"]),
            "cost": s["cost"][arm],
        }
    return out


def arm_lines(cfg, summary: dict[str, Any]) -> list[str]:
    """The markdown of the arms' table (empty with only ❄️ and 🔥)."""
    if len(cfg.arms) <= 2:
        return []
    lines = [
        "",
        "Arms between ❄️ and 🔥 (compare/arms.py): each arm's score on the verdict's split "
        "(mean of its seeds), Δ = arm − ❄️ and arm − 🔥 with their 95% intervals (the same "
        "paired bootstrap as the verdict), and its cost: parameters trained, share of 🔥's, "
        "training time and examples/s (the seeds' means), what a task keeps on disk beside the "
        "shared encoder (❄️: the head; 🔥: the whole model; partial methods: what they trained), "
        "peak resident memory (the seeds' highest). Sequential 🔥's cost leaves out its "
        "intermediate run, made once for every task.",
        "",
        "| task | arm | score | Δ vs ❄️ [95%] | Δ vs 🔥 [95%] | params trained | of 🔥 | train (s) "
        "| examples/s | kept (MB) | peak RSS (MB) | converged |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for task, s in summary.items():
        v = s["verdict"]
        fire_params = s["cost"]["fire"]["params"]
        marks = {
            side: all(c["status"] in (CONVERGED, RACED) for c in v["curves"][side])
            for side in ("snow", "fire")
        }
        for arm, p in points(s).items():
            c, a = p["cost"], v.get("arms", {}).get(arm)
            vs_snow = "0" if arm == "snow" else _interval(a["vs_snow"] if a else v["delta"])
            d = v["delta"]  # ❄️ − 🔥 is −Δ, its interval flipped
            flipped = {"delta": -d["delta"], "low": -d["high"], "high": -d["low"]}
            vs_fire = "0" if arm == "fire" else _interval(a["vs_fire"] if a else flipped)
            converged = a["converged"] if a else marks[arm]
            lines.append(
                f"| {task} | {ARM_NAMES[arm]} | {100 * p['score']:.1f} | {vs_snow} | {vs_fire} "
                f"| {c['params']:,} | {100 * c['params'] / fire_params:.2f}% | {c['seconds']:.0f} "
                f"| {c['examples_per_s']} | {_mb(c.get('saved_bytes'))} "
                f"| {_peak(c)} | {'yes' if converged else 'no'} |"
            )
    if any(_peak(p["cost"]).endswith("†") for s in summary.values() for p in points(s).values()):
        lines += ["", SHARED_PEAK]
    skipped = [
        f"- {ARM_NAMES[arm]} on {task}: not run; {why}."
        for task, s in summary.items()
        for arm, why in s.get("not_run", {}).items()
    ]
    if skipped:
        lines += ["", "Arms that do not apply:", "", *skipped]
    if cfg.seeds_fire == 1:
        lines += [
            "",
            "One seed per arm (🔥 included): each Δ's interval holds the spread over the "
            "examples only, not the restarts' (seeds); a few tenths of a point apart may be "
            "one seed's luck. Run `--fire-seeds 2` or more to weigh them.",
        ]
    lines += [""] + [f"![{t}: score against cost]({cost_file(t)})" for t in summary]
    return lines


def plot_cost(cfg, task: str, s: dict[str, Any], path: Path) -> None:
    """Score (×100, the seeds' mean; bars: their range) against trainable parameters and
    against training time, log x: the picture for choosing an arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v = s["verdict"]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.6), sharey=True)
    for arm, p in points(s).items():
        y = 100 * p["score"]
        err = [[y - 100 * p["min"]], [100 * p["max"] - y]]
        for ax, x in zip(axes, (p["cost"]["params"], p["cost"]["seconds"]), strict=True):
            ax.errorbar(
                [max(x, 1)],
                [y],
                yerr=err,
                fmt="o",
                capsize=3,
                label=plain(arm),
                color=f"C{list(ARM_NAMES).index(arm)}",
            )
    base = v.get("baseline")
    for ax, label in zip(axes, ("parameters trained", "training time (s)"), strict=True):
        plain_log_x(ax)
        ax.set_xlabel(label + " (log)")
        if base:
            ax.axhline(100 * base["score"], color="black", linestyle="dashed", linewidth=0.8)
    axes[0].set_ylabel(f"{v['metric']} on {v['split']} (x100)")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    dashed = " (dashed: no training)" if base else ""  # tagging has no untrained answer
    fig.suptitle(f"{cfg.encoder} on {task}: score against cost{dashed}", fontsize=9)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
