"""The sweep's answer in words: which layers carry the task, what a mix adds over the best one,
how selective the probe is, and where the task sits in depth; or that no layer carries it.

    layers 3–4 carry most of it (layer 4: accuracy 91.2 [90.1, 92.3]); a mix of all layers
    adds +0.6 [-0.3, +1.5] over layer 4 alone: layer 4 alone does as well; selectivity 31.0
    points [28.2, 33.9]; expected layer 3.6, center of gravity 3.2

Scores are shown x100 (points), intervals at 95% (summary.py says how each is made).
"""

from __future__ import annotations

from typing import Any


def points(x: float, sign: bool = False) -> str:
    return f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"


def bracket(iv: dict[str, Any], sign: bool = False) -> str:
    """`[low, high]` of an interval's JSON, x100."""
    return f"[{points(iv['low'], sign)}, {points(iv['high'], sign)}]"


def layer_ranges(layers: list[int]) -> str:
    """ "layer 3", "layers 3–4", "layers 0, 3–5": runs of consecutive layers."""
    runs: list[list[int]] = []
    for layer in sorted(layers):
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)
    return f"layer{'s' if len(layers) > 1 else ''} {text}"


def recommendation(answer: dict[str, Any]) -> str:
    """The words for a summary (summary.summarise's JSON)."""
    best, metric = answer["best_layer"], answer["metric"]
    row = next(r for r in answer["layers"] if r["layer"] == best)
    score = row["linear"]
    shown = f"layer {best}: {metric} {points(score['score'])} {bracket(score)}"
    selectivity = (row.get("selectivity") or {}).get("linear")
    if not answer["carries"]:
        if selectivity is not None:
            return (
                f"no layer carries it: the best probe ({shown}) does no better than on a "
                f"control task of labels drawn at random per "
                f"{'word type' if answer['task']['kind'] == 'tagging' else 'text'} (selectivity "
                f"{points(selectivity['delta'])} points {bracket(selectivity)}); these "
                "features hold no linear trace of the labels"
            )
        return (
            f"no layer carries it: the best probe's score ({shown}) is not above 0 by its interval"
        )
    carrying = answer["carrying"]
    verb = "carries" if len(carrying) == 1 else "carry"
    if len(carrying) == len(answer["layers"]) > 1:  # no layer stands out by the intervals
        parts = [f"every layer does about as well ({shown}, the best)"]
    else:
        parts = [f"{layer_ranges(carrying)} {verb} most of it ({shown})"]
    gain = answer.get("mix_gain")
    if gain is not None:
        if gain["low"] > 0:
            then = "use the mix"
        elif gain["high"] < 0:
            then = f"layer {best} alone does better"
        else:
            then = f"layer {best} alone does as well"
        parts.append(
            f"a mix of all layers adds {points(gain['delta'], True)} {bracket(gain, True)} "
            f"over layer {best} alone: {then}"
        )
    if selectivity is not None:
        parts.append(f"selectivity {points(selectivity['delta'])} points {bracket(selectivity)}")
    depth = []
    if answer.get("expected_layer") is not None:
        depth.append(f"expected layer {answer['expected_layer']:.1f}")
    if answer.get("center_of_gravity") is not None:
        depth.append(f"center of gravity {answer['center_of_gravity']:.1f}")
    if depth:
        parts.append(", ".join(depth))
    return "; ".join(parts)
