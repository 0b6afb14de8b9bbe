"""🔥 beside ❄️: fine-tune the bundled encoder on every task, compare with the best head.

    python experiments/tune_or_not.py --data ../shared/data --runs FT_RUNS [--only T ...]

Each run is `snowfire finetune --encoder minilm --task T --data DATA --out FT_RUNS/T` plus the
task's extra options in `PLAN`, with the recipe of the encoder family (bert: one learning rate
for all layers, peak 5e-5, linear warm-up and decay; 3 epochs, batch 32).
A run whose metrics.json exists is skipped; a killed run resumes from its checkpoint.

    python experiments/tune_or_not.py --data ../shared/data --runs FT_RUNS --report

writes the ❄️/🔥 section of docs/results.md (and docs/tune_or_not.png) from the finished 🔥 runs
and the ❄️ table already in docs/results.md; `experiments/paper_tasks.py --finetune-runs FT_RUNS`
does the same while it rebuilds the ❄️ table from its own runs.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: task -> options beyond the defaults. CoNLL-2003 and MNLI: 2 epochs; SST-2: 2 epochs on a
#: random 16,000 of its 67,349 phrases — caps that fit all seven runs into about two hours on
#: a 2-core CPU (the ❄️ heads train on all of SST-2; MNLI is the 9,000-pair sample for both).
PLAN = {
    "stsb": {},
    "sick-e": {},
    "sick-r": {},
    "mrpc": {},
    "conll2003": {"epochs": 2},
    "mnli": {"epochs": 2},
    "sst2": {"epochs": 2, "max_train_examples": 16000},
}

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


def run_all(data: str, runs: Path, only: set[str] | None, threads: int) -> None:
    import torch

    from finetune import FinetuneConfig, train

    torch.set_num_threads(threads)
    for task, extra in PLAN.items():
        if (only and task not in only) or (runs / task / "metrics.json").exists():
            continue
        print(f"== 🔥 {task}", flush=True)
        cfg = FinetuneConfig(
            encoder="minilm",
            task=task,
            data=data,
            out=str(runs / task),
            checkpoint_every=100,
            **extra,
        )
        train(cfg)


def fire_rows(runs: Path, data: str) -> dict[str, dict]:
    """task -> the finished 🔥 run's dev score (checked against its predictions), time, data."""
    from paper_tasks import recompute

    from tasks import get_task, read_split

    out = {}
    for task in PLAN:
        run = runs / task
        if not (run / "metrics.json").exists():
            continue
        metric = get_task(task).metric
        dev = json.loads((run / "metrics.json").read_text())["dev"]
        check = recompute(run, task)[metric]
        if abs(check - dev[metric]) > 1e-6:
            raise AssertionError(f"{run}: metrics.json {dev[metric]} != recomputed {check}")
        config = json.loads((run / "config.json").read_text())
        log = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
        out[task] = {
            "metric": metric,
            "score": dev[metric],
            "seconds": config["seconds"],
            "epochs": len(log),
            "best_epoch": config["best_epoch"],
            "train_used": config["num_examples"]["train"],
            "train_all": len(read_split(task, data, "train")),
        }
    return out


def comparison(snow: list[tuple], fire: dict[str, dict], out_png: Path) -> str:
    """The markdown table ❄️ | 🔥 | Δ per task (❄️: the best head of the task), and a plot."""
    best = {}
    for task, head, _metric, score, _, _, secs, _ in snow:
        if task not in best or score > best[task][1]:
            best[task] = (head, score, secs)
    lines = [
        "| task | metric | ❄️ best head | ❄️ dev | ❄️ train (s) | 🔥 dev | 🔥 wall (s) | "
        "🔥 epochs (best) | 🔥 training examples | Δ = 🔥 − ❄️ | paper Δ, BERT-base |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    both = [t for t in PLAN if t in fire and t in best]
    for task in both:
        head, score, secs = best[task]
        f = fire[task]
        used = f"{f['train_used']:,}" + (
            f" of {f['train_all']:,}" if f["train_used"] < f["train_all"] else ""
        )
        delta = 100 * (f["score"] - score)
        lines.append(
            f"| {task} | {f['metric']} | {head} | {100 * score:.1f} | {secs:.0f} | "
            f"**{100 * f['score']:.1f}** | {f['seconds']:.0f} | {f['epochs']} ({f['best_epoch']}) "
            f"| {used} | **{delta:+.1f}** | {PAPER_DELTA[task]:+.1f} |"
        )
    if both:
        snow_scores = [100 * best[t][1] for t in both]
        _plot(both, snow_scores, [100 * fire[t]["score"] for t in both], out_png)
    return "\n".join(lines)


SECTION = """## To tune or not to tune: ❄️ vs 🔥 per task

{comparison}

![best head vs fine-tuning per task]({fire_png})

🔥: `snowfire finetune --encoder minilm --task T --data ../shared/data --out RUN` (+ the caps
in `experiments/tune_or_not.py`; recipe bert, this encoder's default): the [CLS] vector (NER: each
word's first piece) into one output layer, every weight trained with one peak rate 5e-5, AdamW,
10% linear warm-up then linear decay, batch 32, max 128 pieces; dev score of the best epoch.
❄️: the best head of the task from the table below, trained on features extracted once.
Wall times: two 🔥 runs at a time shared the machine's 2 cores (one torch thread each; at times
a third job too; SST-2 ran last, with two threads), so a run alone is faster; the ❄️ times
exclude the one extraction per dataset (see the notes).
"""

#: the header of the ❄️ table `paper_tasks.report` writes and `snow_rows_from_results` reads
SNOW_HEADER = "| task | head | dev metric | dev | all dev metrics | epochs | train time (s) |"


def section(snow: list[tuple], fire: dict[str, dict], png: Path) -> str:
    """The ❄️/🔥 section of results.md (SECTION filled in), with its plot written to `png`."""
    return SECTION.format(comparison=comparison(snow, fire, png), fire_png=png.name)


def snow_rows_from_results(text: str) -> list[tuple]:
    """The ❄️ rows of a results.md written by `paper_tasks.report`, in `comparison`'s form."""
    lines = text.splitlines()
    if SNOW_HEADER not in lines:
        raise ValueError(f"no ❄️ table (header {SNOW_HEADER!r}) in results.md")
    start = lines.index(SNOW_HEADER) + 2
    rows = []
    for n, line in enumerate(lines[start:], start + 1):
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.fullmatch(r"\*\*(-?[0-9.]+)\*\*", cells[3]) if len(cells) == 7 else None
        if m is None:
            raise ValueError(f"results.md line {n}: expected 7 cells with **score**, got {line!r}")
        task, head, metric = cells[:3]
        rows.append((task, head, metric, float(m[1]) / 100, {}, int(cells[5]), float(cells[6]), {}))
    return rows


def write_section(md: Path, snow: list[tuple], fire: dict[str, dict]) -> None:
    """Put (or replace) the ❄️/🔥 section of `md`, before its ❄️ table, and its plot beside it."""
    new = section(snow, fire, md.parent / "tune_or_not.png")
    text = md.read_text()
    head = "## To tune or not to tune"
    if head in text:
        before, rest = text.split(head, 1)
        after = rest[rest.index("\n## ") + 1 :]
    else:
        before, after = text.split("## ❄️ every head", 1)
        after = "## ❄️ every head" + after
    md.write_text(before + new + "\n" + after)


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--only", nargs="*", help="tasks to run; default all")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--report", action="store_true", help="only write docs/results.md's section")
    args = p.parse_args()
    if not args.report:
        run_all(args.data, Path(args.runs), set(args.only) if args.only else None, args.threads)
        return
    md = ROOT / "docs" / "results.md"
    write_section(md, snow_rows_from_results(md.read_text()), fire_rows(Path(args.runs), args.data))
    print(f"wrote {md} and {md.parent / 'tune_or_not.png'}")


if __name__ == "__main__":
    main()
