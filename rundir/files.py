"""The names in a run directory, in one place (writers and readers import them from here).

A ❄️ head run (`snowfire train`, heads/trainer.py):

    RUN/config.json             {"train": TrainConfig, "featureset", "train_examples",
                                "features_manifest", "seconds" (the final scoring included,
                                its share per split in "scoring_seconds"), "cost" (peak memory,
                                CPU seconds, torch threads: rundir/cost.py)}
    RUN/metrics.json            {split: {metric: value}}; written last: the run is finished
    RUN/log.jsonl               one line per epoch: train loss, the selection split's metrics
                                ("selection", and which split it is: "split"), seconds
    RUN/selection/epoch-<k>.tsv the selection split's predictions after each epoch
    RUN/checkpoint.pt           a paused run's state (pause_at: a race's rung); gone once
                                finished
    RUN/final.pt                with keep_state (compare's ❄️ runs): the state after its last
                                epoch, of a run not ended by early stopping: a larger epoch
                                cap continues from it (heads/continuation.py)
    RUN/paused.json             {"epoch", "best_epoch", "selection"}: paused, not finished
    RUN/at-pause/               a paused run's end had a race stopped it where it paused: the
                                files that end writes (config.json, metrics.json, predictions/,
                                ...); the stop finishes from them, no checkpoint needed
                                (rundir/pause.py)
    RUN/scalar_mix.json         {module name: softmax(w) per layer} of every scalar mix
    RUN/head.json               what rebuilds the head without the training data
    RUN/weights.safetensors     the head's weights
    RUN/predictions/<split>.tsv tasks.predictions' format, for every split but train in a run
                                a race stopped (`scored_splits`)

A 🔥 fine-tuning run (`snowfire finetune`, finetune/trainer.py):

    RUN/config.json             {"finetune": FinetuneConfig, "recipe", "peak_lr", "layer_groups",
                                "encoder", "task", "num_examples", "total_steps", "seed",
                                "versions"}; "best_epoch", "seconds", "scoring_seconds" (per
                                split, the final scoring's) and "cost" (trainable params,
                                examples/s, bytes kept, peak memory, CPU seconds, torch
                                threads: rundir/cost.py) once finished
    RUN/metrics.json            {split: {metric: value}} for every split with gold labels;
                                written last: the run is finished
    RUN/log.jsonl               one line per epoch: train loss, the selection split's metrics
                                ("selection", "split"), trainable groups
    RUN/selection/epoch-<k>.tsv, RUN/paused.json, RUN/at-pause/   as above
    RUN/predictions/<split>.tsv as above
    RUN/encoder/                the fine-tuned encoder (HF folder, or ELMo options + HDF5);
                                method full only
    RUN/checkpoint.pt           everything needed to resume; removed once the run finished
    RUN/best.pt                 model weights of the best dev epoch (methods bitfit, adapter,
                                lora: only what they trained; finetune/methods.py)

A 🔥 grid (`snowfire finetune --grid`, finetune/grid.py): RUN/grid/<cell>/ one 🔥 run per
sub-run, RUN/grid.json, grid.md, grid.png, and the chosen run's config.json (with "grid"),
metrics.json and predictions/.

A comparison (`snowfire compare`, compare/report.py): OUT/results.json, table.md, table.png,
layer_weights.png beside its runs.

A layer sweep (`snowfire layers`, compare/layers/): OUT/layers.json (the answer: its content key,
the feature sets, every probe's scores and intervals, the mix weights, the words; written last),
layers.md (the table), layers.png (the plot). A layers job's OUT is HOME/layers/<key>/.

Every run directory holds RUN/.lock (rundir/lock.py) while a process works in it.

A run of a job killed at its deadline (jobs/worker.py) is kept as the kill left it, with
RUN/deadline_exceeded.json {"job", "kind", "attempt", "deadline_s", "elapsed_s", "at"}
beside it: the run is partial, and why (its metrics.json, written last, is absent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

CONFIG = "config.json"
METRICS = "metrics.json"
LOG = "log.jsonl"
PREDICTIONS = "predictions"
SCALAR_MIX = "scalar_mix.json"
HEAD = "head.json"
WEIGHTS = "weights.safetensors"
ENCODER = "encoder"
CHECKPOINT = "checkpoint.pt"
FINAL_STATE = "final.pt"
BEST = "best.pt"
GRID = "grid"
GRID_JSON = "grid.json"
GRID_TABLE = "grid.md"
GRID_PLOT = "grid.png"
RESULTS = "results.json"
TABLE = "table.md"
TABLE_PLOT = "table.png"
LAYER_PLOT = "layer_weights.png"
LAYERS = "layers.json"
LAYERS_TABLE = "layers.md"
LAYERS_PLOT = "layers.png"
LOCK = ".lock"
DEADLINE = "deadline_exceeded.json"
SELECTION = "selection"
PAUSED = "paused.json"
AT_PAUSE = "at-pause"


def epochs_done(run: str | Path) -> int:
    """Epochs a run has logged (RUN/log.jsonl), 0 before its first."""
    log = Path(run) / LOG
    if not log.is_file():
        return 0
    return sum(1 for line in log.read_text().splitlines() if line.strip())


def prediction_file(run: str | Path, split: str) -> Path:
    """RUN/predictions/<split>.tsv."""
    return Path(run) / PREDICTIONS / f"{split}.tsv"


def scored_splits(splits: Iterable[str], stopped_at: int | None) -> list[str]:
    """The splits a finished run scores with its best weights: every one, but train in a run
    a race stopped (`stopped_at`: the epoch it was stopped at). A stopped run has lost: its
    training-split predictions serve no choice and no report, and on the 🔥 side they cost a
    forward pass over every training example."""
    return [s for s in splits if not (stopped_at is not None and s == "train")]


def selection_scores(record: Mapping) -> Mapping:
    """A log record's (or a curve point's) scores on the split its run selected on:
    "selection" (runs since the honest protocol), else "dev" (runs made before it selected on
    dev); KeyError naming both when it has neither."""
    for key in ("selection", "dev"):
        if key in record:
            return record[key]
    raise KeyError("a log record without 'selection' (or 'dev') scores")


def selection_file(run: str | Path, epoch: int) -> Path:
    """RUN/selection/epoch-<k>.tsv: the selection split's predictions after epoch k (what a
    race weighs, and replays)."""
    return Path(run) / SELECTION / f"epoch-{epoch}.tsv"
