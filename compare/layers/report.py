"""The sweep's evidence: OUT/layers.md (the words, then one row per layer) and OUT/layers.png
(scores by layer with their intervals, the control task, the cumulative mixes; the mix's
layer weights with the expected layer and the center of gravity)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .words import bracket, points


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "–"
    value = entry["score"] if "score" in entry else entry["delta"]
    return f"{points(value)} {bracket(entry)}"


def layers_table(answer: dict[str, Any]) -> str:
    """The markdown page: title, the words, a row per layer, the plot."""
    metric = answer["metric"]
    control = any("selectivity" in r for r in answer["layers"])
    head = ["layer", f"linear {metric}", f"MLP {metric}"]
    if control:
        head += ["control (linear acc.)", "selectivity (linear)", "selectivity (MLP)"]
    head += [f"mix 0..ℓ {metric}", "gain Δ_ℓ", "mix weight"]
    mix = {c["top"]: c for c in answer["cumulative"]}
    weights = answer.get("mix_weights") or []
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in answer["layers"]:
        layer = row["layer"]
        best = "**" if layer == answer["best_layer"] else ""
        cells = [f"{best}{layer}{best}", _cell(row["linear"]), _cell(row["mlp"])]
        if control:
            sel = row["selectivity"]
            cells += [points(row["control"]["linear"]), _cell(sel["linear"]), _cell(sel["mlp"])]
        cumulative = mix.get(layer)
        cells += [
            _cell(cumulative),
            _cell(cumulative.get("gain") if cumulative else None),
            f"{weights[layer]:.3f}" if layer < len(weights) else "–",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    task, roles = answer["task"]["name"], answer["roles"]
    carved = " (carved from train)" if roles["carved"] else ""
    return (
        f"# Which layer? {task} on {answer['encoder']}\n\n{answer['recommendation']}.\n\n"
        f"Scores x100 on the {roles['report']} split with 95% intervals over its examples "
        f"and {answer['config']['seeds']} seeds; each probe's epoch chosen on "
        f"{roles['selection']}{carved}; best layer (bold) chosen there.\n\n"
        + "\n".join(rows)
        + "\n\n![layers](layers.png)\n"
    )


def plot(answer: dict[str, Any], path: Path) -> None:
    """OUT/layers.png: scores by layer (left), the mix's weights (right)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from snowfire.rundir import atomic_write

    rows = answer["layers"]
    layers = [r["layer"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(3, 2))
    for group, style in (("linear", "-o"), ("mlp", "-s")):
        mean = [100 * r[group]["score"] for r in rows]
        low = [100 * r[group]["low"] for r in rows]
        high = [100 * r[group]["high"] for r in rows]
        (line,) = left.plot(layers, mean, style, label=f"{group} probe")
        left.fill_between(layers, low, high, alpha=0.2, color=line.get_color())
    if all("control" in r for r in rows):
        control = [100 * r["control"]["linear"] for r in rows]
        left.plot(layers, control, ":", color="grey", label="linear, control task (accuracy)")
    if answer["cumulative"]:
        tops = [c["top"] for c in answer["cumulative"]]
        left.plot(tops, [100 * c["score"] for c in answer["cumulative"]], "--^", label="mix 0..ℓ")
    left.set_xlabel("layer")
    left.set_ylabel(f"{answer['metric']} x100 ({answer['roles']['report']})")
    left.set_title(f"{answer['task']['name']}: probes by layer")
    left.set_xticks(layers)
    left.legend(fontsize=8)
    weights = answer.get("mix_weights")
    if weights:
        right.bar(range(len(weights)), weights, color="#4c78a8")
        for name, value, style in (
            ("expected layer", answer.get("expected_layer"), "-"),
            ("center of gravity", answer.get("center_of_gravity"), "--"),
        ):
            if value is not None:
                right.axvline(value, linestyle=style, color="black", label=f"{name} {value:.1f}")
        right.set_xticks(range(len(weights)))
        right.legend(fontsize=8)
    right.set_xlabel("layer")
    right.set_title("scalar mix weights (all layers)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write(path, buf.getvalue())
