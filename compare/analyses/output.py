"""What every analysis writes: OUT/NAME.json (the numbers), OUT/NAME.md (a caption and a
markdown table, the plot linked) and OUT/NAME.png (bars or lines, drawn with matplotlib)."""

from __future__ import annotations

from pathlib import Path


def write(out: Path, name: str, result: dict, rows: list[str], caption: str) -> dict:
    """OUT/NAME.json and OUT/NAME.md (the plot OUT/NAME.png is drawn by the analysis)."""
    from snowfire.rundir import atomic_write, write_json

    write_json(out / f"{name}.json", result)
    atomic_write(
        out / f"{name}.md",
        f"# {name}\n\n{caption}\n\n" + "\n".join(rows) + f"\n\n![{name}]({name}.png)\n",
    )
    return result


def paired_rows(result: dict, keys: tuple[str, str], paper: dict, header: str) -> list[str]:
    """A markdown table: per task, our mean for each of two set-ups, then the paper's two."""
    rows = [header, "| --- | --- | --- | --- | --- |"]
    for task, r in result.items():
        theirs = paper.get(task, ("–", "–"))
        rows.append(
            f"| {task} | {100 * r[keys[0]][0]:.1f} | {100 * r[keys[1]][0]:.1f} | "
            f"{theirs[0]} | {theirs[1]} |"
        )
    return rows


def layer_rows(
    columns: tuple[str, ...], label: str, series: dict[tuple[str, ...], list[float]], fmt
) -> list[str]:
    """A markdown table with one column per layer (`label` + its number) after `columns`: one
    row per key of `series` (the key's cells, then the values formatted by `fmt`)."""
    layers = len(next(iter(series.values())))
    head = [*columns, *(f"{label}{i}" for i in range(layers))]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key, values in series.items():
        rows.append("| " + " | ".join([*key, *map(fmt, values)]) + " |")
    return rows


def _figure(size):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


def _save(fig, ax, path: Path, legend_size: int = 8) -> None:
    import matplotlib.pyplot as plt

    from snowfire.rundir import atomic_write

    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)


def bars(result, keys, path: Path, title: str) -> None:
    """Per task, one bar (mean ± sd) for each of `keys`."""
    tasks = list(result)
    fig, ax = _figure((1.4 * len(tasks) + 2, 3.4))
    for j, key in enumerate(keys):
        means = [100 * result[t][key][0] for t in tasks]
        sds = [100 * (result[t][key][1] or 0) for t in tasks]
        xs = [i + 0.4 * j - 0.2 for i in range(len(tasks))]
        ax.bar(xs, means, 0.4, yerr=sds, capsize=3, label=key)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_ylabel("dev score (x100)")
    ax.set_title(title)
    _save(fig, ax, path)


def hbars(cells: dict[str, tuple[float, float | None]], path: Path, title: str) -> None:
    """One horizontal bar (mean ± sd) per named cell."""
    names = list(cells)
    fig, ax = _figure((6.5, 0.45 * len(names) + 1.2))
    means = [100 * cells[n][0] for n in names]
    ax.barh(
        range(len(names)),
        means,
        xerr=[100 * (cells[n][1] or 0) for n in names],
        capsize=3,
        label="dev",
    )
    plain = [n.replace("❄️", "frozen").replace("🔥", "fine-tuned") for n in names]  # the font
    ax.set_yticks(range(len(names)), plain)
    ax.invert_yaxis()
    ax.set_xlim(max(0.0, min(means) - 10), max(means) + 3)
    fig.suptitle(title, fontsize=9)  # over the whole figure: the long tick labels eat the axes
    _save(fig, ax, path)


def lines(series: dict[str, list[float]], path: Path, ylabel: str) -> None:
    """One line per series, over the layers."""
    fig, ax = _figure((5.5, 3.6))
    for label, values in series.items():
        ax.plot(range(len(values)), values, "o-", label=label)
    ax.set_xlabel("layer (0: embeddings)")
    ax.set_ylabel(ylabel)
    _save(fig, ax, path, legend_size=7)
