"""The 🔥 trainer: one readable loop that fine-tunes a whole encoder with a minimal output layer.

build data (examples of every split) -> build model (encoder + output layer) -> AdamW with
discriminative rates, LambdaLR schedule -> for each epoch: unfreeze, for each batch
`out, loss = model(batch)`, backward, clip, step, (checkpoint every N steps) (finetune/epoch.py);
evaluate the selection split; keep the best; checkpoint; stop early -> evaluate every split with
the best weights -> write the run directory (rundir/files.py) and the fine-tuned encoder, ready
for `snowfire extract`.

A killed run resumes from RUN/checkpoint.pt when started again with the same config: model,
optimiser, scheduler, grad scaler, RNG state, position in the epoch (the data order is a
function of seed and epoch) and the early-stopping state, so it ends with the same metrics.
A finished run drops its checkpoint (the encoder's size times three, with AdamW's moments);
started again with the same config it returns the saved metrics without training. A checkpoint
or a finished run of another config is refused (rundir.check_same_config: the config fields
marked volatile may differ), and so is one that started from other weights than the config's
paths now hold (model.start_hashes: a retrained LP-FT probe or intermediate encoder), unless
`keep_remade_start` (it keeps the start it recorded).
A run paused at a race's rung (`pause_at`) keeps the end a stop there gives (RUN/at-pause/,
scored with the best weights so far, read by no choice); a stop where it paused ends from it,
with no checkpoint needed, if it started from the same weights (rundir/pause.py).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from snowfire.cache import versions
from snowfire.extractor import default_device
from snowfire.rundir import (
    BEST,
    CHECKPOINT,
    CONFIG,
    ENCODER,
    LOG,
    METRICS,
    PAUSED,
    PREDICTIONS,
    check_same_config,
    finish_from_pause,
    finished_or_refuse,
    forget_pause,
    hold_run,
    pause_dir,
    prediction_file,
    recorded_end,
    save_torch,
    scored_splits,
    selection_file,
    write_json,
    write_lines,
)
from snowfire.tasks import (
    decode,
    describe,
    gold_of,
    write_predictions,
)

from .base import FireModel
from .config import FinetuneConfig
from .epoch import train_epoch
from .model import (
    build_model,
    check_start,
    predict,
    saved_start,
    start_hashes,
)
from .optim import build_optimizer, unfreeze

log = logging.getLogger(__name__)


@dataclass
class TrainState:
    """Where a run is, besides the weights: saved in every checkpoint, so a killed run resumes
    at the same batch with the same early-stopping state."""

    epoch: int = 1  # the epoch under way (or next)
    batch: int = 0  # batches of it done
    step: int = 0  # optimiser steps in all
    best: float = -math.inf  # best dev primary metric so far
    best_epoch: int | None = None
    bad: int = 0  # epochs since the best
    stopped: bool = False  # early stopping hit
    history: list[dict[str, Any]] = field(default_factory=list)  # one record per epoch
    loss_sum: float = 0.0  # this epoch's summed training loss ...
    loss_n: int = 0  # ... over this many examples
    seconds: float = 0.0  # training time before this process
    cpu_seconds: float = 0.0  # CPU time (every thread) of the processes before this one
    within: list[dict[str, Any]] = field(default_factory=list)  # this epoch's mid-epoch points
    peak: dict[str, Any] | None = None  # the processes before this one: PeakMemory.carried()


@dataclass
class _Fit:
    """What trains, on which device: saved to and restored from RUN/checkpoint.pt."""

    model: FireModel
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    device: torch.device
    amp: bool  # fp16 autocast + loss scaling (GPU only)
    anchors: dict[str, torch.Tensor] | None = None  # L2-SP's θ₀ by parameter name

    def save(self, path: Path, cfg: FinetuneConfig, state: TrainState, start: dict) -> None:
        rng = {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if self.amp else None,
        }
        save_torch(
            path,
            {
                "config": cfg.to_json(),
                "start": start,  # the hashes of the weights it started from
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "rng": rng,
                "state": asdict(state),
            },
        )

    def restore(self, path: Path, cfg: FinetuneConfig, start: dict) -> TrainState:
        ckpt = torch.load(path, map_location=self.device, weights_only=True)
        check_same_config(ckpt["config"], cfg, f"{path} was written by")
        check_start(ckpt.get("start", start), start, f"{path} was written by a run from")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.scaler.load_state_dict(ckpt["scaler"])
        torch.set_rng_state(ckpt["rng"]["torch"].cpu())
        if self.amp and ckpt["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state_all([t.cpu() for t in ckpt["rng"]["cuda"]])
        return TrainState(**ckpt["state"])


def train(
    cfg: FinetuneConfig,
    *,
    on_step: Callable[[int, FireModel], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, dict[str, float]]:
    """Fine-tune, write the run directory, return metrics per split (splits with labels).

    on_step: for tests; called as on_step(0, model) before the first step of a fresh run and
        on_step(step, model) after every optimiser step (raise from it to simulate a kill).
    clock: seconds, what the run's `seconds` (config.json, log.jsonl) are measured with.
    The run directory is held for the whole run (rundir.hold_run). A config with `grid` set is
    a grid of such runs (finetune/grid.py): the chosen run's metrics.
    """
    if not isinstance(cfg, FinetuneConfig):
        raise TypeError(f"train: expected a FinetuneConfig, got {type(cfg).__name__}")
    if cfg.grid is not None:
        from .grid import run_grid

        return run_grid(cfg)
    data = _examples(cfg)  # every row checked before anything is written
    with hold_run(cfg.out):  # one process at a time: a second attempt fails at once
        return _train(cfg, on_step, clock, data)


def _train(cfg: FinetuneConfig, on_step, clock, data) -> dict[str, dict[str, float]]:
    started = clock()
    torch.manual_seed(cfg.seed)
    device = default_device(cfg.device)
    out_dir = Path(cfg.out)
    finished = finished_or_refuse(out_dir, cfg, "finetune")
    if finished is not None:  # and started from the weights the config's paths hold now
        saved = saved_start(json.loads((out_dir / CONFIG).read_text()))
        what = f"{out_dir} holds a finished run from"
        check_start(saved, start_hashes(cfg), what, keep=cfg.keep_remade_start)
        (out_dir / CHECKPOINT).unlink(missing_ok=True)  # killed just before it was dropped
        return finished
    (out_dir / PREDICTIONS).mkdir(parents=True, exist_ok=True)
    spec, roles = cfg.spec, data.roles
    examples = data.trained()  # per split: what the run trains on, selects on, scores
    steps_per_epoch = math.ceil(len(examples["train"]) / cfg.batch_size)
    total_steps = steps_per_epoch * cfg.epochs

    # -- model, optimiser, schedule
    model, identity = build_model(cfg, spec)
    start = start_hashes(cfg, identity)  # the weights it starts from, by content
    if cfg.init_head:  # LP-FT: the output layer starts at the ❄️ probe's weights
        from .methods import load_probe

        linear = model.output.linear
        probe = load_probe(cfg.init_head, linear.in_features, linear.out_features, spec.kind)
        model.output.linear.load_state_dict(probe)
    model.to(device)
    # L2-SP's θ₀: the pretrained encoder weights, before any checkpoint is restored
    anchors = {n: p.detach().clone() for n, p in model.encoder_parameters()} if cfg.l2sp else None
    model.refresh_state()  # on the device (ELMo's warm-up state; BERT: nothing)
    optimizer, scheduler = build_optimizer(model, cfg, total_steps)
    amp = device.type == "cuda"
    fit = _Fit(
        model,
        optimizer,
        scheduler,
        torch.amp.GradScaler(device.type, enabled=amp),
        device,
        amp,
        anchors,
    )
    run_info = _run_info(cfg, spec, fit, identity, examples, total_steps) | {
        "start": start,
        "roles": roles.to_json(),
    }
    write_json(out_dir / CONFIG, run_info)

    # -- resume, or start fresh
    from snowfire.rundir import PeakMemory

    ckpt_path = out_dir / CHECKPOINT
    ended = recorded_end(out_dir, cfg, "finetune", None if cfg.keep_remade_start else start)
    if ended is not None:  # a race stops it where it paused: the end kept then (rundir/pause.py)
        encoder = partial(_save_best_encoder, fit, out_dir)
        return finish_from_pause(out_dir, ended, {"finetune": cfg.to_json()}, encoder)
    resumed = ckpt_path.is_file()
    if resumed:
        state = fit.restore(ckpt_path, cfg, start)
        log.info("resuming %s at epoch %d, batch %d", out_dir, state.epoch, state.batch)
    else:
        forget_pause(out_dir)  # a pause recorded on another machine: trained again from scratch
        state = TrainState()
        if on_step is not None:
            on_step(0, model)
    zero = clock() - state.seconds  # when the run would have started, had it never stopped
    earlier = state.seconds  # trained by the processes before this one (0 when fresh)
    earlier_cpu, cpu0 = state.cpu_seconds, time.process_time()
    peak = PeakMemory(device, earlier=state.peak, resumed=resumed)

    def checkpoint() -> None:
        state.seconds = clock() - zero
        state.cpu_seconds = earlier_cpu + time.process_time() - cpu0
        state.peak = peak.carried()
        fit.save(ckpt_path, cfg, state, start)

    # -- loop
    with peak:
        chosen = (roles.selection, examples[roles.selection])  # every choice reads it alone
        _epochs(
            fit, cfg, examples["train"], chosen, state, out_dir, clock, zero, checkpoint, on_step
        )
        paused = state.epoch <= _last_epoch(cfg) and not state.stopped  # at a race's rung
        # paused: the end a race's stop here would give, kept beside (rundir/pause.py)
        stopped_at = len(state.history) if paused else _stopped_at(cfg, state)
        scored = {s: examples[s] for s in scored_splits(examples, stopped_at)}
        metrics, scoring = _finish(fit, cfg, spec, scored, out_dir, paused)
        if paused:
            checkpoint()  # its clock and CPU time count the scoring
    # a resumed run counts the time of the processes before it too (kept in the checkpoint)
    seconds = clock() - started + earlier
    cost = _cost(fit, out_dir, examples, state, seconds) | peak.record()
    cost["cpu_seconds"] = round(cost["cpu_seconds"] + earlier_cpu, 3)
    run_info.update(
        best_epoch=state.best_epoch,
        epochs_run=len(state.history),
        stopped_at=stopped_at,
        seconds=round(seconds, 2),
        scoring_seconds=scoring,
        cost=cost,
    )
    where = pause_dir(out_dir) if paused else out_dir
    write_json(where / CONFIG, run_info)
    write_json(where / METRICS, metrics)  # last: its presence says the run (or its end) is whole
    if paused:
        _mark_paused(out_dir, state, roles.selection)
        return {}
    ckpt_path.unlink(missing_ok=True)
    forget_pause(out_dir)
    return metrics


def _last_epoch(cfg: FinetuneConfig) -> int:
    """The last epoch this attempt may reach: the cap, or a race's stop."""
    return min(cfg.epochs, cfg.stop_at or cfg.epochs)


def _stopped_at(cfg: FinetuneConfig, state: TrainState) -> int | None:
    """The epoch a race ended the run at (`stop_at` before the cap and early stopping)."""
    done = len(state.history)
    early = cfg.stop_at is not None and done == cfg.stop_at < cfg.epochs
    return done if early and not state.stopped else None


def _mark_paused(out_dir: Path, state: TrainState, split: str) -> None:
    """RUN/paused.json: where the run stopped and its best selection score so far."""
    best = state.history[state.best_epoch - 1] if state.best_epoch else {}
    write_json(
        out_dir / PAUSED,
        {
            "epoch": len(state.history),
            "best_epoch": state.best_epoch,
            "split": split,
            "selection": best.get("selection", {}),
            "seconds": state.seconds,
            "cpu_seconds": state.cpu_seconds,
        },
    )


def _cost(fit: _Fit, out_dir: Path, examples, state: TrainState, seconds: float):
    """The run's cost: parameters trained, training examples per second, bytes it keeps."""
    from snowfire.rundir import saved_bytes

    trained = sum(p.numel() for g in fit.optimizer.param_groups for p in g["params"])
    seen = len(examples["train"]) * len(state.history)
    return {
        "trainable_params": trained,
        "total_params": sum(p.numel() for p in fit.model.parameters()),
        "examples_per_s": round(seen / seconds, 1) if seconds else None,
        "saved_bytes": saved_bytes(out_dir, [BEST]),  # what reloads it on the pretrained encoder
    }


def _epochs(fit: _Fit, cfg, train_set, chosen, state, out_dir, clock, zero, checkpoint, on_step):
    """Train from `state` to the last epoch (the cap, or a race's stop), early stopping, or
    a race's rung (`pause_at`), logging each epoch; every choice scores `chosen` (the
    selection split: its name and examples) alone."""
    model, spec = fit.model, cfg.spec
    split, chosen = chosen
    for epoch in range(state.epoch, _last_epoch(cfg) + 1):
        if state.stopped or (cfg.pause_at is not None and epoch > cfg.pause_at):
            break
        trainable = unfreeze(model.layer_groups(), epoch, cfg.settings().gradual_unfreezing)
        train_epoch(fit, cfg, train_set, epoch, state, checkpoint, on_step, chosen)
        record = _end_epoch(fit, cfg, spec, chosen, epoch, state, out_dir)
        record.update(split=split, trainable=trainable, seconds=round(clock() - zero, 2))
        if state.within:
            record["within"], state.within = state.within, []
        state.history.append(record)
        write_lines(out_dir / LOG, state.history)
        if cfg.progress:
            print(
                f"epoch {epoch}: loss {record['train_loss']:.4f} "
                f"{record['split']} {spec.metric} {record['selection'][spec.metric]:.4f}"
            )
        state.epoch, state.batch, state.loss_sum, state.loss_n = epoch + 1, 0, 0.0, 0
        checkpoint()


def _examples(cfg: FinetuneConfig):
    """The task as a run reads it (`tasks.read_training`, ❄️ heads' path too: every row
    checked; train and dev needed, with gold labels; the split roles of the honest protocol
    and the carved selection slice; train cut to the `max_train_examples` drawn with the
    seed, in file order)."""
    from snowfire.tasks import read_training

    return read_training(
        cfg.spec, cfg.data, cap=cfg.max_train_examples, seed=cfg.seed, selection=cfg.selection
    )


def _run_info(cfg: FinetuneConfig, spec, fit: _Fit, identity, examples, total_steps: int):
    """What RUN/config.json records about the run (`seconds` is added when it finishes)."""
    return {
        "finetune": cfg.to_json(),
        "recipe": cfg.recipe_record(),
        "peak_lr": cfg.settings().lr,
        "layer_groups": [
            {
                "name": g["name"],
                "depth": g["depth"],
                "lr": g["lr"],
                "parameters": sum(p.numel() for p in g["params"]),
            }
            for g in fit.optimizer.param_groups
        ],
        "encoder": identity,
        "task": describe(spec, cfg.data),  # kind, labels, pair, each split file's sha256
        "num_examples": {s: len(e) for s, e in examples.items()},
        "total_steps": total_steps,
        "seed": cfg.seed,
        "versions": versions(),
    }


def _end_epoch(fit: _Fit, cfg, spec, chosen, epoch: int, state: TrainState, out_dir: Path):
    """Score the selection split (its predictions kept: RUN/selection/epoch-k.tsv), keep the
    best weights (RUN/best.pt), update early stopping; the epoch's log record."""
    from snowfire.tasks import evaluate

    preds = decode(spec, predict(fit.model, chosen, cfg.batch_size, fit.device))
    write_predictions(selection_file(out_dir, epoch), spec, chosen, preds)
    gold = gold_of(spec, chosen)
    assert gold is not None  # the selection split is labelled: read_training checks
    scores = evaluate(spec, gold, preds)
    score = scores[spec.metric]  # finite: every metric is (a constant prediction's pearson is 0)
    if score > state.best or state.best_epoch is None:
        state.best, state.best_epoch, state.bad = score, epoch, 0
        save_torch(out_dir / BEST, fit.model.trained_state())
    else:
        state.bad += 1
        state.stopped = state.bad >= cfg.patience
    return {
        "epoch": epoch,
        "step": state.step,
        "train_loss": state.loss_sum / max(state.loss_n, 1),
        "lr": fit.scheduler.get_last_lr()[0],
        "selection": scores,
    }


def _finish(fit: _Fit, cfg, spec, examples, out_dir: Path, paused: bool = False):
    """Each split of `examples` scored with the best weights: predictions and the encoder
    written (paused: the predictions under RUN/at-pause/, no encoder); the metrics returned
    (the caller writes metrics.json last) with each split's scoring seconds (what a replayed
    race charges a cut run: compare/race_budget.py)."""
    from snowfire.tasks import evaluate

    model = fit.model
    model.load_trained(torch.load(out_dir / BEST, map_location=fit.device, weights_only=True))
    metrics, seconds = {}, {}
    where = pause_dir(out_dir) if paused else out_dir
    for split, split_examples in examples.items():
        began = time.perf_counter()
        preds = decode(spec, predict(model, split_examples, cfg.batch_size, fit.device))
        write_predictions(prediction_file(where, split), spec, split_examples, preds)
        gold = gold_of(spec, split_examples)
        if gold is not None:
            metrics[split] = evaluate(spec, gold, preds)
        seconds[split] = round(time.perf_counter() - began, 4)
    if not paused and model.method == "full":  # partial: best.pt is all it keeps
        model.save_encoder(out_dir / ENCODER)
    return metrics, seconds


def _save_best_encoder(fit: _Fit, out_dir: Path) -> None:
    """RUN/encoder/ from RUN/best.pt, for a method-full run ended from its pause record (none
    on a machine that never held the weights: the run then keeps its records alone)."""
    if fit.model.method == "full" and (out_dir / BEST).is_file():
        best = torch.load(out_dir / BEST, map_location=fit.device, weights_only=True)
        fit.model.load_trained(best)
        fit.model.save_encoder(out_dir / ENCODER)
