"""The ❄️ trainer: one readable loop that fits a head on cached features only.

build data (feature sets of every split + labels) -> build head -> for each epoch: for each
batch `out, loss = head(batch)`, backward, step; evaluate dev; keep the best; stop early ->
evaluate every split -> write config, metrics, per-epoch log, scalar-mix weights, predictions
and weights (safetensors). The encoder is never run here.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from snowfire.extractor import current_featureset, default_device
from snowfire.rundir import (
    CONFIG,
    HEAD,
    LOG,
    METRICS,
    PREDICTIONS,
    SCALAR_MIX,
    WEIGHTS,
    atomic_write,
    finished_or_refuse,
    hold_run,
    prediction_file,
    write_json,
    write_lines,
)
from snowfire.tasks import TrainingSplits, decode, gold_of, read_training, write_predictions

from .config import TrainConfig

log = logging.getLogger(__name__)

#: What a head run writes in its directory (cleared before a new attempt).
RUN_FILES = (CONFIG, METRICS, LOG, SCALAR_MIX, HEAD, WEIGHTS, PREDICTIONS)


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
    """Fit a head; write the run directory (rundir/files.py); return metrics per split.

    The run directory is held by this process for the whole run (rundir.hold_run: a retry of the
    same job while this one lives fails at once). A finished run of the same config there is
    returned as it is, one of another config refused (rundir.finished_or_refuse); what a killed
    attempt left (no metrics.json) is cleared first, so a run never continues on top of
    half-written files.
    """
    # every row checked before anything is written; the subsample 🔥 draws with this cap and seed
    data = read_training(cfg.spec, cfg.data, cap=cfg.max_train_examples, seed=cfg.seed)
    out = Path(cfg.out)
    with hold_run(out):
        done = finished_or_refuse(out, cfg, "train")
        if done is not None:
            return done
        for name in RUN_FILES:
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        return _fit(cfg, data)


def _fit(cfg: TrainConfig, data: TrainingSplits) -> dict[str, dict[str, float]]:
    import torch
    from tqdm import tqdm

    from snowfire.cache import open_reader
    from snowfire.tasks import epoch_rng, evaluate, task_targets

    from .batch import collate
    from .registry import build_head

    torch.manual_seed(cfg.seed)
    examples, keep = data.examples, data.keep  # every example: the feature sets hold them all
    device = default_device(cfg.device)
    spec = cfg.spec
    splits = list(examples)

    # -- data: feature sets + targets of every split
    reader = open_reader(cfg.store)
    infos = {s: _featureset(reader, cfg, s, len(examples[s])) for s in splits}
    pools = {info.encoder_id for info in infos.values()}
    if len(pools) != 1:
        raise ValueError(
            f"splits were extracted by different encoders: "
            f"{ {s: i.encoder_id for s, i in infos.items()} }"
        )
    info = infos["train"]
    layers = [cfg.layer] if cfg.head == "probe" and cfg.layer is not None else None
    budget = int(cfg.max_memory_gb * 1e9)
    from .data import FeatureSource

    sources = {
        s: FeatureSource(reader, infos[s], layers, budget, subset=keep if s == "train" else None)
        for s in splits
    }
    targets = {s: task_targets(spec, examples[s]) for s in splits}
    word_level = spec.kind == "tagging"  # word-piece taggers: hparams {"over_pieces": true}

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
    history: list[dict] = []  # RUN/log.jsonl, rewritten whole after every epoch

    # -- loop
    from snowfire.rundir import PeakMemory

    peak = PeakMemory(device).start()
    best, best_state, bad, started = -float("inf"), None, 0, time.perf_counter()
    n_train = sources["train"].num_examples
    for epoch in range(1, cfg.epochs + 1):
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
        preds = _predict(
            head, sources["dev"], targets["dev"], spec.kind, cfg.batch_size, word_level, device
        )
        gold = gold_of(spec, examples["dev"])
        assert gold is not None  # dev is labelled: read with its answers
        dev = evaluate(spec, gold, decode(spec, preds))
        score = dev[spec.metric]
        record = {
            "epoch": epoch,
            "train_loss": total / max(seen, 1),
            "dev": dev,
            "seconds": round(time.perf_counter() - started, 2),
        }
        history.append(record)
        write_lines(out_dir / LOG, history)
        if cfg.progress:
            print(f"epoch {epoch}: loss {record['train_loss']:.4f} dev {spec.metric} {score:.4f}")
        if score > best:
            best, bad = score, 0
            best_state = {k: v.detach().clone() for k, v in head.state_dict().items()}
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    assert best_state is not None  # epochs >= 1, and epoch 1 scores above -inf (finite metrics)
    head.load_state_dict(best_state)

    # -- evaluate every split, write the run
    metrics = {}
    examples = data.trained()  # the train split's scores and predictions: the examples trained on
    for split in splits:
        preds = decode(
            spec,
            _predict(
                head, sources[split], targets[split], spec.kind, cfg.batch_size, word_level, device
            ),
        )
        gold = gold_of(spec, examples[split])
        if gold is not None:  # a test split without labels gets predictions only
            metrics[split] = evaluate(spec, gold, preds)
        write_predictions(prediction_file(out_dir, split), spec, examples[split], preds)
    cost = peak.stop().record()
    _write_run(out_dir, cfg, head, info, metrics, time.perf_counter() - started, layers, cost)
    return metrics


def _write_run(
    out_dir: Path, cfg: TrainConfig, head, info, metrics, seconds: float, layers, cost=None
) -> None:
    from safetensors.torch import save

    from snowfire.nn import ScalarMix
    from snowfire.tasks import describe

    mixes = {
        name: m.weights().tolist() for name, m in head.named_modules() if isinstance(m, ScalarMix)
    }
    write_json(out_dir / SCALAR_MIX, mixes)
    weights = save(
        {k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()},
        metadata={"head": cfg.head, "task": cfg.spec.name, "featureset": info.id},
    )
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
        "cost": cost or {},  # the peak memory while it trained (rundir/cost.py)
    }
    write_json(out_dir / CONFIG, config)
    write_json(out_dir / METRICS, metrics)  # last: its presence says the run is finished
