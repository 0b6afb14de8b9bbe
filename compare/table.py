"""table.md of `snowfire compare`: Table 2's layout (the paper's rows beside ours and the
zero-training baseline, on the split each choice was made on and the split reported), then per
task the heads, the cost, the verdict with its evidence, and the arms."""

from __future__ import annotations

import json
from typing import Any

from snowfire.rundir import LAYER_PLOT, TABLE_PLOT

from .arms import ARM_NAMES, fine_tuning_arms
from .arms_report import arm_lines
from .baseline import why_none
from .budget import BUDGETS
from .config import CompareConfig
from .forecast_report import forecast_lines
from .hostload import shared_text
from .race_report import race_lines
from .starts import starts_lines
from .verdict import PAPER_TABLE2

#: The order splits are shown in.
_ORDER = ("select", "dev", "test")


def _shown_splits(summary: dict[str, Any], tasks: list[str]) -> list[str]:
    """Every task's selection and report split, in `_ORDER`."""
    used = {summary[t]["protocol"][k] for t in tasks for k in ("selection", "report")}
    return [s for s in _ORDER if s in used]


def _protocol_words(summary: dict[str, Any]) -> str:
    """How the tasks' splits were used, in words; the old protocol flagged."""
    parts = []
    for task, s in summary.items():
        p = s["protocol"]
        if not p["honest"]:
            parts.append(f"{task}: {p['selection']}, reported on it too (optimistic)")
        else:
            carved = " (a stratified slice of train)" if p["selection"] == "select" else ""
            parts.append(f"{task}: {p['selection']}{carved}, reported on {p['report']}")
    return "; ".join(parts)


def _pair(scores: dict[str, tuple], protocol: dict[str, Any]) -> str:
    """A side's score on its selection split and on its report split (one when they are one)."""
    chosen, reported = protocol["selection"], protocol["report"]
    left = _cell(scores[chosen]) if chosen in scores else "–"
    right = _cell(scores[reported]) if reported in scores else "–"
    return f"{left} | {right if protocol['honest'] else right + ' (same split)'}"


def search_lines(cfg: CompareConfig, summary: dict[str, Any]) -> list[str]:
    """Under --trials: how each arm was tuned, which trial won on the selection split, and the
    answer as a function of budget (the leader's crossings, the curves' plot)."""
    from .budget_report import budget_file

    if not cfg.trials:
        return []
    out = [
        "",
        f"Tuned with {cfg.trials} trials each: every arm's configurations drawn from its "
        "search space (compare/search.py, the same draws for every task and seed), each arm "
        "kept at its best trial on the selection split. The budget curves give the expected "
        "report-split score of the trial a user tuning n trials would keep (Tang et al.'s "
        "unbiased estimator, a 95% bootstrap band), against trials and against compute.",
        "",
    ]
    for t in cfg.names:
        s = summary[t]
        won = "; ".join(
            f"{ARM_NAMES[a]}: trial {r['chosen']} ("
            + ", ".join(
                f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in r["config"].items()
            )
            + ")"
            for a, r in s["search"].items()
        )
        curves = s["budget_curves"]
        out.append(
            f"- **{t}**: {won}. Budget: {curves['poles'] or '–'}"
            + (f"; among every arm, {curves['leader']}" if len(curves["curves"]) > 2 else "")
            + f". ![{t} budget curves]({budget_file(t)})"
        )
    return out


def _gap(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f}"


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
    for split in _shown_splits(summary, tasks):
        for mode, icon in (("snow", "❄️"), ("fire", "🔥")):
            if not any(split in summary[t][mode] for t in tasks):
                continue
            cells = [
                _cell(summary[t][mode][split]) if split in summary[t][mode] else "–" for t in tasks
            ]
            rows.append(f"| {cfg.encoder} (ours) | {icon} | {split} | " + " | ".join(cells) + " |")
        for arm in fine_tuning_arms(cfg.arms or []):
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
    gaps = [summary[t]["optimism"] for t in tasks]
    if any(g.get("snow") is not None or g.get("fire") is not None for g in gaps):
        rows.append(
            "| optimism gap ❄️ / 🔥 | | selection − report | "
            + " | ".join(f"{_gap(g.get('snow'))} / {_gap(g.get('fire'))}" for g in gaps)
            + " |"
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
    budget = BUDGETS[cfg.named_budget]
    lines = [
        f"# ❄️ or 🔥: {cfg.encoder}, {_seeds(cfg)}, budget {cfg.budget}",
        "",
        "\n".join(rows),
        "",
        "Scores ×100 (mean ± sd over seeds); ours: the task's metric on the split every choice "
        "was made on (early stopping, the best epoch, the ❄️ head: "
        + _protocol_words(summary)
        + ") and on the split reported, which no choice saw"
        + ("; the paper's rows are its test scores" if paper else "")
        + ". Optimism gap: a side's score on the selection split minus the reported one. "
        "Δ = 🔥 − ❄️ on the report split, with its 95% interval from a paired bootstrap over "
        "the examples and each side's restarts (seeds); a call (🔥 > ❄️ or ❄️ > 🔥) only when "
        "the interval "
        "excludes 0 and every cell converged, else ❄️ ≈ 🔥 or budget-limited: no verdict. "
        "No training: cosine of mean-pooled texts (similarity tasks) or the majority label "
        "(classification), nothing trained; the row a trained answer has to beat (– where no "
        "such answer says anything: tagging, regression of one text).",
        f"Budget {cfg.budget}: ❄️ {budget.snow.to_json() or 'the defaults of snowfire train'}; "
        f"🔥 {budget.fire.to_json()}"
        + (
            " with rate and epochs tuned on the selection split (snowfire finetune --grid shared)"
            if cfg.named_budget == "full"
            else ""
        )
        + (
            f"; every arm's epoch cap (the budget's or each trial's) times {cfg.epochs_scale} "
            "(--epochs-scale)"
            if cfg.epochs_scale > 1
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
        "| task | metric | ❄️ head | chosen on | reported | train (s) | examples/s | params "
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
                f"{_pair(v, s['protocol'])} | "
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
                + " | ".join(
                    f"{100 * b[x]:.1f}" if x in b else "–"
                    for x in (s["protocol"]["selection"], s["protocol"]["report"])
                )
                + " | 0 | – | 0 | – |"
            )
        else:
            lines.append(
                f"| {t} | {s['metric']} | no training: {why_none(cfg.specs[t])} | – | – "
                "| – | – | – | – |"
            )
        c = s["cost"]["fire"]
        lines.append(
            f"| {t} | {s['metric']} | 🔥 fine-tuning | {_pair(s['fire'], s['protocol'])} | "
            f"{c['seconds']:.0f} | "
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
            f"Cost: {spent} (extraction and every cell; {shared_text(h['shared_cores'])}). "
            f"![{t} learning curves]({curves_file(t)})"
        ]
    lines += search_lines(cfg, summary)
    lines += race_lines(summary)
    lines += forecast_lines(summary)
    lines += arm_lines(cfg, summary)
    lines += starts_lines(cfg, summary)
    lines += ["", f"![❄️ vs 🔥]({TABLE_PLOT})", "", f"![layer weights]({LAYER_PLOT})", ""]
    return "\n".join(lines)
