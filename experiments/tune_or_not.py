"""🔥 beside ❄️: fine-tune the bundled encoder on every task, compare with the best head.

    python experiments/tune_or_not.py --data ../shared/data --runs FT_RUNS [--only T ...]

Each run is `snowfire finetune --encoder minilm --task T --data DATA --out FT_RUNS/T` plus the
task's extra options in `PLAN`, with the recipe of the encoder family (bert: one learning rate
for all layers, peak 5e-5, linear warm-up and decay; 3 epochs, batch 32).
A run whose metrics.json exists is skipped; a killed run resumes from its checkpoint.

    python experiments/tune_or_not.py --data ../shared/data --runs FT_RUNS --report

writes the ❄️/🔥 section of docs/results.md (and docs/tune_or_not.png) from the finished 🔥 runs
and the ❄️ rows in docs/results.json; `experiments/paper_tasks.py --finetune-runs FT_RUNS`
does the same while it rebuilds the ❄️ table from its own runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from report import FireRow, SnowRow, check_score, read_rows, recipe_text, section

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


def fire_rows(runs: Path, data: str) -> dict[str, FireRow]:
    """task -> the finished 🔥 run's dev score (checked against its predictions), time, data."""
    from tasks import get_task, read_split

    out = {}
    for task in PLAN:
        run = runs / task
        if not (run / "metrics.json").exists():
            continue
        metric = get_task(task).metric
        dev = json.loads((run / "metrics.json").read_text())["dev"]
        check_score(run, task, dev[metric])
        config = json.loads((run / "config.json").read_text())
        log = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
        out[task] = FireRow(
            task=task,
            metric=metric,
            score=dev[metric],
            seconds=config["seconds"],
            epochs=len(log),
            best_epoch=config["best_epoch"],
            train_used=config["num_examples"]["train"],
            train_all=len(read_split(task, data, "train")),
            recipe=recipe_text(config.get("recipe", {"name": "(none recorded)"})),
        )
    return out


def write_section(md: Path, snow: list[SnowRow], fire: dict[str, FireRow]) -> None:
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
    write_section(md, read_rows(md.with_suffix(".json")), fire_rows(Path(args.runs), args.data))
    print(f"wrote {md} and {md.parent / 'tune_or_not.png'}")


if __name__ == "__main__":
    main()
