"""The ❄️ trainer: one readable loop that fits a head on cached features only.

build data (feature sets of every split + labels; the split roles of the honest protocol,
tasks/selection.py) -> build head -> for each epoch: for each batch `out, loss = head(batch)`,
backward, step; score the selection split; keep the best; stop early -> evaluate every split ->
write config, metrics, per-epoch log, scalar-mix weights, predictions and weights
(safetensors). The encoder is never run here; the report split is scored at the end alone.
A run may pause after an epoch (`pause_at`, a rung of paired racing) and continue later from
RUN/checkpoint.pt, or be ended early at one (`stop_at`: then it scores every split but train,
rundir.scored_splits). A paused run keeps that end beside it (RUN/at-pause/, read by no
choice), and a stop where it paused ends from it (rundir/pause.py).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from snowfire.extractor import current_featureset, default_device
from snowfire.rundir import (
    CHECKPOINT,
    CONFIG,
    FINAL_STATE,
    HEAD,
    LOG,
    METRICS,
    PAUSED,
    PREDICTIONS,
    SCALAR_MIX,
    SELECTION,
    WEIGHTS,
    atomic_write,
    finish_from_pause,
    finished_or_refuse,
    forget_pause,
    hold_run,
    pause_dir,
    prediction_file,
    recorded_end,
    scored_splits,
    selection_file,
    write_json,
    write_lines,
)
from snowfire.tasks import TrainingSplits, decode, gold_of, read_training, write_predictions

from .config import TrainConfig

log = logging.getLogger(__name__)

#: What a head run writes in its directory (cleared before a new attempt).
RUN_FILES = (
    CONFIG,
    METRICS,
    LOG,
    SCALAR_MIX,
    HEAD,
    WEIGHTS,
    PREDICTIONS,
    SELECTION,
    PAUSED,
    FINAL_STATE,
)


def _same_text(reader, cfg: TrainConfig, split: str, source: dict):
    """Feature sets of another task read from the very same file the same way (SICK-E and
    SICK-R share `sick/SICK_train.txt`): the same texts in the same order, so the same
    features."""
    return [
        fs
        for fs in reader.list_featuresets()
        if fs.manifest.get("source", {}).get("sha256") == source["sha256"]
        and fs.manifest.get("source", {}).get("read") == source.get("read")
        and fs.split == split
        and cfg.encoder in (fs.encoder.get("spec"), fs.encoder.get("name"))
        and (cfg.pair_encoding is None or fs.encoder.get("pair_encoding") == cfg.pair_encoding)
    ]


def _featureset(reader, cfg: TrainConfig, split: str, n_examples: int):
    """The feature set of one split of the task: the current one of this very file
    (extractor.current_featureset), else the one --featureset names, else one of another task
    read from the same file the same way."""
    from snowfire.cache import FeatureSetNotFoundError
    from snowfire.tasks import split_source

    source = split_source(cfg.spec, cfg.data, split)
    try:
        info = current_featureset(reader, cfg.encoder, cfg.spec, cfg.data, split, cfg.pair_encoding)
    except FeatureSetNotFoundError:
        if cfg.featureset is not None:
            hits = [
                fs
                for fs in reader.list_featuresets()
                if fs.id.startswith(cfg.featureset) and fs.split == split
            ]
        else:
            hits = _same_text(reader, cfg, split, source)
        if len(hits) != 1:
            raise
        info = hits[0]
        log.info("%s/%s: using %s (extracted from the same file)", cfg.spec.name, split, info.id)
    if info.num_examples != n_examples:
        raise ValueError(
            f"feature set {info.id} holds {info.num_examples} examples but {cfg.spec.name}/"
            f"{split} ({source['path']}) has {n_examples}: re-extract this split"
        )
    return info


def _predict(head, source, targets, kind: str, batch_size: int, word_level: bool, device):
    import torch

    from .batch import collate

    head.eval()
    preds: dict = {}
    with torch.inference_mode():
        for idx, eb in source.iterate(batch_size):
            batch = collate(eb, _subset(targets, idx), kind=kind, word_level=word_level)
            out, _ = head(batch.to(device))
            preds.update(zip(idx, head.predict(out), strict=True))
    return [preds[i] for i in source.examples]  # a capped training set: its examples only


def _subset(targets, idx):
    if targets is None:
        return None
    return [targets[i] for i in idx] if isinstance(targets, list) else targets[idx]


def train(cfg: TrainConfig) -> dict[str, dict[str, float]]:
    """Fit a head; write the run directory (rundir/files.py); return metrics per split, or {}
    when the run paused (`pause_at`: RUN/paused.json says where; the same config continues).

    The run directory is held by this process for the whole run (rundir.hold_run: a retry of the
    same job while this one lives fails at once). A finished run of the same config there is
    returned as it is, one of another config refused (rundir.finished_or_refuse); a paused run
    of the same config continues from its checkpoint; what a killed attempt left otherwise is
    cleared first, so a run never continues on top of half-written files.
    """
    # every row checked before anything is written; the split roles and the subsample 🔥 uses
    # with this cap, seed and selection
    data = read_training(
        cfg.spec, cfg.data, cap=cfg.max_train_examples, seed=cfg.seed, selection=cfg.selection
    )
    out = Path(cfg.out)
    with hold_run(out):
        done = finished_or_refuse(out, cfg, "train")
        if done is not None:
            return done
        ended = recorded_end(out, cfg, "train")
        if ended is not None:  # a race stops it where it paused: the end kept then
            return finish_from_pause(out, ended, {"train": asdict(cfg)})
        if not (out / CHECKPOINT).is_file():
            for name in RUN_FILES:
                target = out / name
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
            forget_pause(out)  # a pause kept on another machine: trained again from scratch
        return _fit(cfg, data)


def _fit(cfg: TrainConfig, data: TrainingSplits) -> dict[str, dict[str, float]]:
    import torch
    from tqdm import tqdm

    from snowfire.cache import open_reader
    from snowfire.rundir import PeakMemory
    from snowfire.tasks import SELECT, epoch_rng, evaluate, task_targets

    from . import checkpoint
    from .batch import collate
    from .data import FeatureSource
    from .registry import build_head

    torch.manual_seed(cfg.seed)
    device = default_device(cfg.device)
    spec, roles = cfg.spec, data.roles
    examples = data.trained()  # per split: what the run trains on, selects on, scores
    chosen_on = roles.selection  # every choice below reads this split alone

    # -- data: feature sets + targets of every split (a carved selection slice: train's set)
    reader = open_reader(cfg.store)
    stored = list(data.examples)
    infos = {s: _featureset(reader, cfg, s, len(data.examples[s])) for s in stored}
    pools = {info.encoder_id for info in infos.values()}
    if len(pools) != 1:
        raise ValueError(
            f"splits were extracted by different encoders: "
            f"{ {s: i.encoder_id for s, i in infos.items()} }"
        )
    info = infos["train"]
    layers = [cfg.layer] if cfg.head == "probe" and cfg.layer is not None else None
    budget = int(cfg.max_memory_gb * 1e9)
    sources = {
        s: FeatureSource(
            reader, infos[s], layers, budget, subset=data.keep if s == "train" else None
        )
        for s in stored
    }
    targets = {s: task_targets(spec, data.examples[s]) for s in stored}
    if data.carved is not None:
        sources[SELECT] = FeatureSource(reader, info, layers, budget, subset=data.carved)
        targets[SELECT] = targets["train"]  # indexed by position in train
    word_level = spec.kind == "tagging"  # word-piece taggers: hparams {"over_pieces": true}
    gold_chosen = gold_of(spec, examples[chosen_on])
    assert gold_chosen is not None  # the selection split is labelled: read_training checks

    # -- model
    num_labels = 1 if spec.kind == "regression" else len(spec.labels or ())
    hparams = dict(cfg.hparams)
    if cfg.head == "probe" and cfg.layer is not None:
        hparams.setdefault("layer", 0)  # the store returns just that layer
    head = build_head(
        cfg.head,
        kind=spec.kind,
        pair=spec.pair,
        num_layers=len(layers) if layers else info.num_layers,
        dim=info.dim,
        num_labels=num_labels,
        **hparams,
    ).to(device)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    out_dir = Path(cfg.out)
    (out_dir / PREDICTIONS).mkdir(parents=True, exist_ok=True)
    ckpt = out_dir / CHECKPOINT
    state, best_state = checkpoint.LoopState(), None
    resumed = ckpt.is_file()
    if resumed:  # a paused run: continue where it stopped
        state, best_state = checkpoint.restore(ckpt, cfg, head, opt, device)
        log.info("%s: continuing after epoch %d", out_dir, state.epoch)
    last = min(cfg.epochs, cfg.stop_at or cfg.epochs)  # a race's stop ends the run early

    # -- loop
    peak = PeakMemory(device, earlier=state.peak, resumed=resumed).start()
    started = time.perf_counter() - state.seconds  # as if it had never paused
    n_train = sources["train"].num_examples
    for epoch in range(state.epoch + 1, last + 1):
        if state.stopped or (cfg.pause_at is not None and state.epoch >= cfg.pause_at):
            break
        head.train()
        total, seen = 0.0, 0
        bar = tqdm(
            total=n_train, desc=f"epoch {epoch}", unit="ex", disable=not cfg.progress, leave=False
        )
        rng = epoch_rng(cfg.seed, epoch)  # the epoch's example order, as 🔥 draws it
        for idx, eb in sources["train"].iterate(cfg.batch_size, rng, cfg.bucket_pool):
            batch = collate(
                eb, _subset(targets["train"], idx), kind=spec.kind, word_level=word_level
            )
            _, loss = head(batch.to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total, seen = total + loss.item() * len(idx), seen + len(idx)
            bar.update(len(idx))
            bar.set_postfix(loss=f"{total / seen:.4f}")
        bar.close()
        preds = decode(
            spec,
            _predict(
                head,
                sources[chosen_on],
                targets[chosen_on],
                spec.kind,
                cfg.batch_size,
                word_level,
                device,
            ),
        )
        write_predictions(selection_file(out_dir, epoch), spec, examples[chosen_on], preds)
        scores = evaluate(spec, gold_chosen, preds)
        score = scores[spec.metric]
        state.history.append(
            {
                "epoch": epoch,
                "train_loss": total / max(seen, 1),
                "split": chosen_on,
                "selection": scores,
                "seconds": round(time.perf_counter() - started, 2),
            }
        )
        write_lines(out_dir / LOG, state.history)
        if cfg.progress:
            print(
                f"epoch {epoch}: loss {total / max(seen, 1):.4f} "
                f"{chosen_on} {spec.metric} {score:.4f}"
            )
        if score > state.best or state.best_epoch is None:
            state.best, state.best_epoch, state.bad = score, epoch, 0
            best_state = {k: v.detach().clone() for k, v in head.state_dict().items()}
        else:
            state.bad += 1
            state.stopped = state.bad >= cfg.patience
        state.epoch = epoch
    peak.stop()
    state.seconds = time.perf_counter() - started
    state.cpu_seconds += peak.cpu
    state.peak = peak.carried()  # for the next piece, if any
    paused = state.epoch < last and not state.stopped  # at a rung: the state kept, no metrics
    assert best_state is not None  # at least one epoch ran, and its score was taken
    if paused:  # the state it goes on from (saved again once its end is scored)
        checkpoint.save(ckpt, cfg, head, opt, best_state, state)
        trained = {k: v.detach().clone() for k, v in head.state_dict().items()}
    elif cfg.keep_state and not state.stopped:  # a larger cap continues from here
        checkpoint.save(out_dir / FINAL_STATE, cfg, head, opt, best_state, state)
    head.load_state_dict(best_state)

    # -- evaluate every split, write the run (paused: the end a race's stop here would give,
    # kept in RUN/at-pause/: rundir/pause.py); its time and CPU time count, as a 🔥 run's do
    stopped_at = state.epoch if paused else _stopped_at(cfg, state)
    where = pause_dir(out_dir) if paused else out_dir
    metrics, scoring = {}, {}
    cpu_before = time.process_time()
    for split in scored_splits(examples, stopped_at):  # train: the examples trained on
        began = time.perf_counter()
        preds = decode(
            spec,
            _predict(
                head, sources[split], targets[split], spec.kind, cfg.batch_size, word_level, device
            ),
        )
        gold = gold_of(spec, examples[split])
        if gold is not None:  # a test split without labels gets predictions only
            metrics[split] = evaluate(spec, gold, preds)
        write_predictions(prediction_file(where, split), spec, examples[split], preds)
        scoring[split] = round(time.perf_counter() - began, 4)
    scoring_cpu = time.process_time() - cpu_before
    cost = peak.record() | {"cpu_seconds": round(state.cpu_seconds + scoring_cpu, 3)}
    protocol = {
        "roles": roles.to_json(),
        "best_epoch": state.best_epoch,
        "epochs_run": state.epoch,
        "stopped_at": stopped_at,
        "selection_examples": len(examples[chosen_on]),
        "scoring_seconds": scoring,  # per split, the final scoring's (in "seconds" too)
    }
    if state.continued_from is not None:  # heads/continuation.py: a smaller cap's run, on
        protocol["continued_from"] = state.continued_from
    seconds = state.seconds + sum(scoring.values())
    _write_run(where, cfg, head, info, metrics, seconds, layers, cost, protocol)
    if paused:  # its clock and CPU time count the scoring, as the end's do
        head.load_state_dict(trained)
        state.seconds, state.cpu_seconds = seconds, state.cpu_seconds + scoring_cpu
        checkpoint.save(ckpt, cfg, head, opt, best_state, state)
        checkpoint.mark_paused(out_dir, state, chosen_on)
        return {}
    ckpt.unlink(missing_ok=True)
    forget_pause(out_dir)
    return metrics


def _stopped_at(cfg: TrainConfig, state) -> int | None:
    """The epoch a race ended the run at (`stop_at` before the cap and early stopping)."""
    early = cfg.stop_at is not None and state.epoch == cfg.stop_at < cfg.epochs
    return state.epoch if early and not state.stopped else None


def _write_run(
    out_dir: Path,
    cfg: TrainConfig,
    head,
    info,
    metrics,
    seconds: float,
    layers,
    cost=None,
    protocol=None,
) -> None:
    from safetensors.torch import save

    from snowfire.nn import ScalarMix
    from snowfire.tasks import describe

    mixes = {
        name: m.weights().tolist() for name, m in head.named_modules() if isinstance(m, ScalarMix)
    }
    write_json(out_dir / SCALAR_MIX, mixes)
    state = {k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}
    weights = save(state, metadata={"head": cfg.head, "task": cfg.spec.name, "featureset": info.id})
    atomic_write(out_dir / WEIGHTS, weights)
    task = describe(cfg.spec, cfg.data)  # kind, labels, pair and each split file's sha256
    # what rebuilds the head without the training data: heads/predict.py reads it
    head_json = {
        "head": head.config,  # build_head(**config)
        "layers": layers,  # the store layers it reads (a probe: one), None: all
        "task": cfg.spec.name,
        "labels": list(cfg.spec.labels or []),
        "task_spec": task,  # predict rebuilds the task from it (tasks.spec_from_record)
        "featureset": info.id,
        "encoder": info.encoder,
        "dtype": info.dtype,
    }
    write_json(out_dir / HEAD, head_json)
    config = {
        "train": asdict(cfg),
        "task": task,
        "featureset": info.summary(),
        "train_examples": min(cfg.max_train_examples or info.num_examples, info.num_examples),
        "features_manifest": info.manifest | {"keys": None},
        "seconds": round(seconds, 2),
        # the peak memory while it trained (rundir/cost.py); what it keeps: its weights
        "cost": (cost or {}) | {"saved_bytes": len(weights)},
        "parameters": sum(v.numel() for v in state.values()),  # the head's, as saved
        **(protocol or {}),  # roles, best epoch, epochs run, a race's stop (tasks/selection.py)
    }
    write_json(out_dir / CONFIG, config)
    write_json(out_dir / METRICS, metrics)  # last: its presence says the run is finished
