"""What the experiment scripts report, as typed rows: ❄️ head runs (`SnowRow`, written by
paper_tasks.py to docs/results.json beside docs/results.md) and 🔥 runs (`FireRow`, read by
tune_or_not.py from its run directories); the ❄️/🔥 section of docs/results.md and its plot.

Every score is checked against the run's predictions/dev.tsv recomputed by an independent tool
(scikit-learn, SciPy, seqeval) before it is reported.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SnowRow:
    """One ❄️ head run: its dev score in the task's metric (a fraction) and its cost."""

    task: str
    head: str
    metric: str
    score: float
    dev: dict[str, float] = field(default_factory=dict)
    epochs: int = 0
    seconds: float = 0.0
    train: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FireRow:
    """One finished 🔥 run: dev score (a fraction), wall time, epochs and training data used."""

    task: str
    metric: str
    score: float
    seconds: float
    epochs: int
    best_epoch: int | None
    train_used: int
    train_all: int
    recipe: str = "bert"  # the recipe's name, with any explicit overrides (see recipe_text)


def recipe_text(record: dict) -> str:
    """A run's config.json "recipe" as a table cell: "bert", or "bert, lr 2e-05" etc."""
    overrides = ", ".join(f"{k} {v}" for k, v in sorted(record.get("overrides", {}).items()))
    return record["name"] + (f", {overrides}" if overrides else "")


def write_rows(path: Path, rows: list[SnowRow]) -> None:
    """The ❄️ rows as JSON (docs/results.json), read back by `read_rows`."""
    path.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")


def read_rows(path: Path) -> list[SnowRow]:
    """The ❄️ rows `write_rows` wrote; a row with missing or unknown fields names its index."""
    if not path.is_file():
        raise ValueError(f"no ❄️ rows at {path}: run experiments/paper_tasks.py first")
    out = []
    for i, raw in enumerate(json.loads(path.read_text())):
        try:
            out.append(SnowRow(**raw))
        except TypeError as err:
            raise ValueError(f"{path}: row {i}: {err}") from err
    return out


def check_score(run: Path, task: str, reported: float) -> None:
    """Raise unless `reported` equals the dev score recomputed from the run's predictions."""
    metric = _metric(task)
    check = recompute(run, task)[metric]
    if abs(check - reported) > 1e-6:
        raise AssertionError(f"{run}: metrics.json {reported} != recomputed {check}")


def _metric(task: str) -> str:
    from tasks import get_task

    return get_task(task).metric


#: Δ = 🔥 − ❄️ of BERT-base in the paper (Peters, Ruder & Smith 2019, Table 2; test sets)
PAPER_DELTA = {
    "conll2003": 0.2,
    "sst2": 0.5,
    "mnli": 0.0,
    "sick-e": 1.0,
    "sick-r": 2.3,
    "mrpc": 6.7,
    "stsb": 4.2,
}


def recompute(run: Path, task: str) -> dict[str, float]:
    """The dev metric recomputed from predictions/dev.tsv by sklearn / scipy / seqeval."""
    from scipy.stats import pearsonr
    from seqeval.metrics import f1_score
    from sklearn.metrics import accuracy_score, matthews_corrcoef

    from tasks import get_task
    from tasks.spans import iob1_to_iob2

    lines = (run / "predictions" / "dev.tsv").read_text().splitlines()
    metric = get_task(task).metric
    if metric == "span_f1":
        sents, cur = [], []
        for line in lines + [""]:
            if line:
                cur.append(line.split(" "))
            elif cur:
                sents.append(cur)
                cur = []
        gold = [iob1_to_iob2([t[1] for t in s]) for s in sents]
        pred = [iob1_to_iob2([t[2] for t in s]) for s in sents]
        return {metric: f1_score(gold, pred)}
    rows = [line.split("\t") for line in lines[1:]]
    gold, pred = [r[1] for r in rows], [r[2] for r in rows]
    if metric == "pearson":
        return {metric: pearsonr([float(g) for g in gold], [float(p) for p in pred])[0]}
    if metric == "matthews":
        return {metric: matthews_corrcoef(gold, pred)}
    return {metric: accuracy_score(gold, pred)}


def comparison(snow: list[SnowRow], fire: dict[str, FireRow], out_png: Path) -> str:
    """The markdown table ❄️ | 🔥 | Δ per task (❄️: the best head of the task), and a plot."""
    best: dict[str, SnowRow] = {}
    for row in snow:
        if row.task not in best or row.score > best[row.task].score:
            best[row.task] = row
    lines = [
        "| task | metric | ❄️ best head | ❄️ dev | ❄️ train (s) | 🔥 dev | 🔥 recipe | 🔥 wall (s) | "
        "🔥 epochs (best) | 🔥 training examples | Δ = 🔥 − ❄️ | paper Δ, BERT-base |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    both = [t for t in fire if t in best]  # in the order of the 🔥 runs
    for task in both:
        s, f = best[task], fire[task]
        used = f"{f.train_used:,}" + (f" of {f.train_all:,}" if f.train_used < f.train_all else "")
        delta = 100 * (f.score - s.score)
        lines.append(
            f"| {task} | {f.metric} | {s.head} | {100 * s.score:.1f} | {s.seconds:.0f} | "
            f"**{100 * f.score:.1f}** | {f.recipe} | {f.seconds:.0f} | {f.epochs} ({f.best_epoch}) "
            f"| {used} | **{delta:+.1f}** | {PAPER_DELTA[task]:+.1f} |"
        )
    if both:
        snow_scores = [100 * best[t].score for t in both]
        _plot(both, snow_scores, [100 * fire[t].score for t in both], out_png)
    return "\n".join(lines)


SECTION = """## To tune or not to tune: ❄️ vs 🔥 per task

{comparison}

![best head vs fine-tuning per task]({fire_png})

🔥: `snowfire finetune --encoder minilm --task T --data ../shared/data --out RUN` with no
optimisation flag (+ the caps in `experiments/tune_or_not.py`), so each cell used the recipe of
the encoder's family, named in the 🔥 recipe column (bert: the [CLS] vector, NER: each word's
first piece, into one output layer, every weight trained with one peak rate 5e-5, AdamW, 10%
linear warm-up then linear decay, batch 32, max 128 pieces); dev score of the best epoch.
❄️: the best head of the task from the table below, trained on features extracted once.
Wall times: the 🔥 runs ran one after another with one torch thread (the other core was busy
with other work at times); a run killed and resumed counts the time of both processes. The ❄️
times exclude the one extraction per dataset (see the notes).
"""


def section(snow: list[SnowRow], fire: dict[str, FireRow], png: Path) -> str:
    """The ❄️/🔥 section of results.md (SECTION filled in), with its plot written to `png`."""
    return SECTION.format(comparison=comparison(snow, fire, png), fire_png=png.name)


def _plot(tasks: list[str], snow: list[float], fire: list[float], out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.bar(x - 0.2, snow, 0.4, label="features + best head", color="#4c8cbf")
    ax.bar(x + 0.2, fire, 0.4, label="fine-tuning", color="#d9622b")
    for i, (s, f) in enumerate(zip(snow, fire, strict=True)):
        ax.text(i, max(s, f) + 1, f"{f - s:+.1f}", ha="center", fontsize=8)
    ax.set_xticks(x, tasks)
    ax.set_ylabel("dev score (%)")
    ax.set_ylim(0, 105)
    ax.set_title("all-MiniLM-L6-v2, dev sets (numbers: fine-tuning minus features)")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
