"""The plots of `snowfire compare`: each task's learning curves, the ❄️ and 🔥 bars with Δ's
interval, the scalar-mix weights of the best ❄️ heads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snowfire.rundir import SCALAR_MIX, atomic_write

from .cell import Mode
from .race_report import stopped_side
from .table import _seeds


def plot_task_curves(cfg, task: str, s: dict[str, Any], path: Path) -> None:
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
            "stopped": stopped_side(s, side),  # ended early by the race
        }
        for side in ("snow", "fire")
        for c in v["curves"][side]
    ]
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        drawn = Path(tmp) / path.name
        plot_curves(task, v["metric"], cells, drawn, s.get("protocol", {}).get("selection", "dev"))
        atomic_write(path, drawn.read_bytes())


def plot_bars(cfg, summary, path: Path) -> None:
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


def plot_layers(cfg, summary, cells, path: Path) -> None:
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
