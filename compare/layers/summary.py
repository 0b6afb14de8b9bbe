"""The sweep's statistics, from every probe's report-split predictions.

Scores and intervals: compare's paired bootstrap (compare/interval.py) over the report
examples with the seeds' restarts added: each probe's seed-averaged score with its 95% interval
(`Bootstrap.score`), and differences between probes on the same draws (`Bootstrap.interval`).

    best layer b      the linear probe with the best mean *selection* score (a choice, so it is
                      made where every choice is made; its score is the report split's)
    carrying          the layers l whose difference b − l has an interval reaching 0 or below:
                      no worse than b on the report split by the evidence
    mix gain          score(mix of all layers) − score(layer b alone), with its interval
    selectivity_l     accuracy_l(task) − accuracy_l(control) (Hewitt & Liang 2019), paired on
                      the report examples; accuracy as the mean of a per-example (per-word, for
                      tagging) indicator of a right answer, so the two differ in their gold only
    expected layer    E[ℓ] = Σ_ℓ ℓ s̄_ℓ, s̄ the seeds' mean softmax weights of the mix of all
                      layers (Tenney et al. ACL 2019, sec. 3)
    gains             Δ_c = score(mix 0..c) − score(mix 0..c−1), c ≥ 1 (cumulative scoring)
    total gain        score(mix 0..L−1) − score(mix 0..0) = Σ_c Δ_c, with its interval
    center of gravity Σ_c c Δ_c / Σ_c Δ_c over c ≥ 1, only where the total gain's interval is
                      above 0: a sum of noise in the denominator would send it anywhere (a
                      store whose label is in no layer gave 12 of layers 0..4); none otherwise
                      (nothing gained after layer 0)
    carries           the best layer's selectivity interval above 0 (no control task, for
                      regression: its score's interval above 0)

A tagging task scored by accuracy is bootstrapped over words (the bootstrap's accuracy takes one
answer per unit); span F1 over sentences, as the task's metric is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..interval import REPLICATES, Bootstrap, bootstrap
from .data import Probed
from .fit import Fitted
from .scoring import answers, correct, gold

LEVEL = 0.95


def _score(boot: Bootstrap, side: str, selection: float) -> dict[str, Any]:
    iv = boot.score(side, LEVEL)
    return {
        "score": iv.estimate,
        "low": iv.low,
        "high": iv.high,
        "seeds": boot.scores[side],
        "selection": selection,
    }


def _task_bootstrap(spec, metric: str, fitted: Fitted, report: Probed, sides: dict) -> Bootstrap:
    """One bootstrap of every task probe: sides {name: (group, index)}."""
    truth = gold(spec, report)
    preds = {
        name: [answers(spec, report, row[p]) for row in fitted.report[g]]
        for name, (g, p) in sides.items()
    }
    if spec.kind == "tagging" and metric == "accuracy":  # one answer per unit: words
        truth = [t for sent in truth for t in sent]
        preds = {k: [[t for sent in seed for t in sent] for seed in v] for k, v in preds.items()}
    return bootstrap(metric, truth, preds, replicates=REPLICATES, seed=0)


def _accuracy_bootstrap(fitted: Fitted, report: Probed, layers: list[int]) -> Bootstrap:
    """Task and control accuracy of every per-layer probe as right/wrong indicators against
    one gold ("1"), so both are scored on the same draws of report examples."""
    if report.yc is None:
        raise ValueError("layers: a control bootstrap without the report split's control labels")
    sides = {}
    for group in ("linear", "mlp"):
        for p, layer in enumerate(layers):
            right = correct(fitted.report[group][:, p], report.y)  # (S, N)
            mock = correct(fitted.report[f"control-{group}"][:, p], report.yc)  # (S, N)
            sides[f"{group}{layer}"] = [["1" if c else "0" for c in row] for row in right]
            sides[f"control-{group}{layer}"] = [["1" if c else "0" for c in row] for row in mock]
    return bootstrap("accuracy", ["1"] * len(report.y), sides, replicates=REPLICATES, seed=0)


def summarise(spec, fitted: Fitted, report: Probed, layers: list[int], control: bool) -> dict:
    """The sweep's JSON answer but its words (words.py) and its identity (run.py); `layers`:
    every layer, 0..L−1, each probed alone and as the top of a cumulative mix."""
    sides = {
        f"{g}{layer}": (g, p) for g in ("linear", "mlp", "mix") for p, layer in enumerate(layers)
    }
    boot = _task_bootstrap(spec, spec.metric, fitted, report, sides)
    chosen = {g: fitted.selection[g].mean(axis=0).tolist() for g in fitted.selection}  # (P,)
    best = layers[int(np.argmax(chosen["linear"]))]  # chosen on the selection split
    acc = _accuracy_bootstrap(fitted, report, layers) if control else None
    rows = [_row(boot, acc, layer, p, chosen) for p, layer in enumerate(layers)]
    cumulative = [
        {
            "top": top,
            **_score(boot, f"mix{top}", chosen["mix"][p]),
            "gain": boot.interval(f"mix{top - 1}", f"mix{top}", LEVEL).to_json() if p else None,
        }
        for p, top in enumerate(layers)
    ]
    top = layers[-1]
    total = boot.interval(f"mix{layers[0]}", f"mix{top}", LEVEL) if top else None
    if fitted.mix_weights is None:
        raise ValueError("layers: a sweep summarised without its cumulative mixes")
    weights = fitted.mix_weights[:, -1, :]  # (S, L): the mix of all layers
    mean = weights.mean(axis=0)  # (L,)
    gravity = None
    if total is not None and total.low > 0:
        gravity = center_of_gravity([c["gain"] for c in cumulative], layers)
    best_row = rows[layers.index(best)]
    if acc is not None:
        carries = best_row["selectivity"]["linear"]["low"] > 0
    else:
        carries = best_row["linear"]["low"] > 0  # regression: no control task, 0 instead
    return {
        "metric": spec.metric,
        "layers": rows,
        "cumulative": cumulative,
        "best_layer": best,
        "carrying": [
            layer
            for layer in layers
            if layer == best or boot.interval(f"linear{layer}", f"linear{best}", LEVEL).low <= 0
        ],
        "carries": carries,
        "mix_gain": boot.interval(f"linear{best}", f"mix{top}", LEVEL).to_json(),
        "mix_weights": mean.tolist(),
        "mix_weights_per_seed": weights.tolist(),
        "expected_layer": expected_layer(mean),
        "total_gain": None if total is None else total.to_json(),
        "center_of_gravity": gravity,
    }


def _row(boot: Bootstrap, acc: Bootstrap | None, layer: int, p: int, chosen) -> dict[str, Any]:
    """One layer: its probes' scores; with a control task their accuracy, the control's and
    the selectivity (task − control, paired)."""
    row: dict[str, Any] = {"layer": layer}
    for group in ("linear", "mlp"):
        row[group] = _score(boot, f"{group}{layer}", chosen[group][p])
    if acc is not None:
        row["accuracy"] = {g: acc.point[f"{g}{layer}"] for g in ("linear", "mlp")}
        row["control"] = {g: acc.point[f"control-{g}{layer}"] for g in ("linear", "mlp")}
        row["selectivity"] = {
            g: acc.interval(f"control-{g}{layer}", f"{g}{layer}", LEVEL).to_json()
            for g in ("linear", "mlp")
        }
    return row


def expected_layer(weights) -> float:
    """E[ℓ] = Σ_ℓ ℓ s_ℓ under layer weights s (L,) summing to 1."""
    w = np.asarray(weights, dtype=np.float64)  # (L,)
    return float(np.arange(len(w)) @ w)


def center_of_gravity(gains: list[dict | None], tops: list[int]) -> float | None:
    """Σ_c c Δ_c / Σ_c Δ_c over the cumulative gains (Δ_c = each gain's "delta"; None: no
    gain, as at c = 0); None without gains or when they sum to 0 or less."""
    pairs = [(top, g["delta"]) for top, g in zip(tops, gains, strict=True) if g is not None]
    total = sum(d for _, d in pairs)
    if not pairs or total <= 0:
        return None
    return float(sum(top * d for top, d in pairs) / total)
