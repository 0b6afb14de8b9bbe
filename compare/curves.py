"""A task's learning curves in one picture: the selection split's score per epoch of every
cell (the split every choice is made on: compare/report.py `protocol`), one line per seed, ❄️
heads solid and 🔥 dashed, and a cell that was still improving when its epochs ran out marked
at its last point (compare/convergence.py decides which), and a cell the race stopped marked
with an X where it ended (compare/racing.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .convergence import CONVERGED, RACED

#: Line colour per ❄️ head (cycled) and for 🔥; plot fonts have no emoji, so labels are words.
_SNOW_COLOURS = ("#4c8cbf", "#2a9d8f", "#6a4c93", "#8ab17d")
_FIRE_COLOUR = "#d9622b"


def plot_curves(
    task: str, metric: str, cells: Sequence[Mapping], path: str | Path, split: str = "dev"
) -> dict:
    """Write the PNG at `path`; {"lines": how many, "marked": the labels of cells still improving}.
    `split`: the split the curves score (the selection split).

    cells: {"mode": "snow" | "fire", "head": name (❄️), "seed": k, "curve": [(epoch, score),
    ...], "status": a `Convergence.status` (optional; marked unless converged or raced),
    "stopped": True where the race ended it early (optional; marked with an X)}.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not cells:
        raise ValueError(f"plot_curves {task}: expected at least one cell, got none")
    heads = sorted({str(c.get("head")) for c in cells if c.get("mode") == "snow"})
    fig, ax = plt.subplots(figsize=(6, 3.8))
    named, marked, lines = set(), [], 0
    for i, cell in enumerate(cells):
        mode, curve = cell.get("mode"), cell.get("curve")
        if mode not in ("snow", "fire") or not curve:
            raise ValueError(
                f"plot_curves {task}: cell {i}: expected mode 'snow' or 'fire' and "
                f"a non-empty curve, got mode {mode!r}, curve {curve!r}"
            )
        if mode == "snow":
            colour = _SNOW_COLOURS[heads.index(str(cell.get("head"))) % len(_SNOW_COLOURS)]
            group, style = f"features + {cell.get('head')}", "-"
        else:
            colour, group, style = _FIRE_COLOUR, "fine-tuning", "--"
        xs = [float(x) for x, _ in curve]
        ys = [100 * float(y) for _, y in curve]
        ax.plot(
            xs,
            ys,
            style,
            color=colour,
            marker=".",
            alpha=0.85,
            label=None if group in named else group,
        )
        named.add(group)
        lines += 1
        if cell.get("status", CONVERGED) not in (CONVERGED, RACED):
            marked.append(f"{group}, seed {cell.get('seed')}")
            _mark(ax, xs[-1], ys[-1], "^", colour, "still improving at the cap", named)
        if cell.get("stopped"):  # the race ended it here (compare/racing.py)
            _mark(ax, xs[-1], ys[-1], "X", colour, "stopped by the race", named)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"{metric} (x100), {split} split")
    ax.set_title(f"{task}: learning curves, one line per seed")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return {"lines": lines, "marked": marked}


def _mark(ax, x: float, y: float, marker: str, colour, label: str, named: set[str]) -> None:
    """A curve's last point marked (`label` in the legend once)."""
    ax.plot(
        x,
        y,
        marker,
        color=colour,
        markersize=10,
        markeredgecolor="black",
        label=None if label in named else label,
    )
    named.add(label)
