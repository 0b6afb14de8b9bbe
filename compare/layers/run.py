"""`snowfire layers`: which layer should I use? A sweep over one encoder's stored features of one
task, from the store alone (the encoder never runs).

resolve the splits' roles and feature sets (inputs.py) -> the content key (key.py); a finished
sweep of that key in OUT is read back -> read every role's features once, pooled (data.py) ->
train every probe of every layer and seed at once (probes.py, fit.py) -> scores, intervals,
selectivity, expected layer, center of gravity (summary.py) and the words (words.py) ->
OUT/layers.md, layers.png, then layers.json last (its presence says the sweep is finished).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from snowfire.cache import digest, open_reader
from snowfire.rundir import LAYERS, LAYERS_PLOT, LAYERS_TABLE, atomic_write, hold_run, write_json
from snowfire.tasks import read_training

from .config import LayersConfig
from .inputs import ROLES, Inputs, resolve_inputs
from .key import key_record

log = logging.getLogger(__name__)


def layers_key(cfg: LayersConfig) -> str:
    """The content key of `cfg`'s sweep (key.py): reads the store's manifests and hashes the
    task's files, trains nothing."""
    return digest(key_record(cfg, resolve_inputs(cfg, open_reader(cfg.store))), 32)


def read_answer(out: str | Path) -> dict[str, Any] | None:
    """OUT/layers.json when the sweep there is finished, else None."""
    path = Path(out) / LAYERS
    return json.loads(path.read_text()) if path.is_file() else None


def run_layers(cfg: LayersConfig) -> dict[str, Any]:
    """The sweep's answer (OUT/layers.json's content); written to `cfg.out` when given, where a
    finished sweep of the same key is returned as it is and one of another key refused."""
    reader = open_reader(cfg.store)
    inputs = resolve_inputs(cfg, reader)
    record = key_record(cfg, inputs)
    key = digest(record, 32)
    if cfg.out is None:
        return _sweep(cfg, inputs, reader, record, key)
    out = Path(cfg.out)
    with hold_run(out):
        saved = read_answer(out)
        if saved is not None:
            if saved.get("key") == key:
                log.info("%s: the sweep of key %s is finished; read back", out, key)
                return saved
            raise ValueError(
                f"{out / LAYERS} holds another sweep (key {saved.get('key')}: "
                f"{json.dumps(saved.get('identity', {}).get('config'))}); this one is key {key} "
                f"({json.dumps(record['config'])}): give another --out"
            )
        answer = _sweep(cfg, inputs, reader, record, key)
        from .report import layers_table, plot

        atomic_write(out / LAYERS_TABLE, layers_table(answer))
        plot(answer, out / LAYERS_PLOT)
        write_json(out / LAYERS, answer)  # last: the sweep is finished
        return answer


def _sweep(
    cfg: LayersConfig, inputs: Inputs, reader, record: dict[str, Any], key: str
) -> dict[str, Any]:
    from snowfire.extractor import default_device

    from .fit import fit
    from .probes import GROUPS, LayerProbes
    from .scoring import scorer
    from .summary import summarise
    from .words import recommendation

    started = time.perf_counter()
    spec = cfg.spec
    chosen = _examples(cfg, inputs)
    control = cfg.control and spec.kind != "regression"
    data = _data(cfg, inputs, reader, chosen, control)
    info = inputs.train
    layers = list(range(info.num_layers))
    device = default_device(cfg.device)
    model = LayerProbes(
        seeds=list(range(cfg.seeds)),
        layers=layers,
        tops=layers,
        num_layers=info.num_layers,
        dim=info.dim,
        num_labels=1 if spec.kind == "regression" else len(spec.labels or ()),
        hidden=cfg.hidden,
        kind=spec.kind,
        groups=GROUPS if control else ("linear", "mlp", "mix"),
    )
    fitted = fit(
        model,
        data["train"],
        data["selection"],
        data["report"],
        scorer(spec),
        epochs=cfg.epochs,
        patience=cfg.patience,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        check_every=cfg.check_every,
        device=device,
        progress=cfg.progress,
    )
    answer: dict[str, Any] = {
        "key": key,
        "task": {"name": spec.name, "kind": spec.kind, "metric": spec.metric},
        "encoder": info.encoder.get("name") or info.encoder.get("spec"),
        "featuresets": inputs.featureset_ids(),
        "num_layers": info.num_layers,
        "dim": info.dim,
        "roles": inputs.roles.to_json(),
        "examples": {role: len(chosen[role][0]) for role in ROLES},
        "config": cfg.answer_fields(),
        "passes": fitted.passes,
        "checks": fitted.checks,
        **summarise(spec, fitted, data["report"], layers, control),
    }
    answer["recommendation"] = recommendation(answer)
    answer["identity"] = record
    log.info("%s: %s (%.1f s)", spec.name, answer["recommendation"], time.perf_counter() - started)
    return answer


def _examples(cfg: LayersConfig, inputs: Inputs) -> dict[str, tuple[list, list[int]]]:
    """Each role's examples and their indices in its feature set, as a training run reads them
    (tasks.read_training: train less the carved selection slice, capped with seed 0); every
    split's count checked against its set's."""
    spec = cfg.spec
    read = read_training(spec, cfg.data, cap=cfg.max_train_examples, selection=cfg.selection)
    if read.roles != inputs.roles:  # the files changed between resolving and reading
        raise ValueError(f"{spec.name}: its splits' roles changed while the sweep started")
    train_all = read.examples["train"]
    if read.carved is not None and not read.carved:
        raise ValueError(
            f"{spec.name}: {len(train_all)} training examples leave no selection slice to carve "
            "(tasks.selection_slice): give the task a labelled test split, or selection 'dev'"
        )
    every = list(range(len(train_all)))
    keep = every if read.keep is None else read.keep
    chosen = {"train": ([train_all[i] for i in keep], keep)}
    for role in ("selection", "report"):
        split = inputs.split_of(role)
        if role == "selection" and read.carved is not None:
            chosen[role] = ([train_all[i] for i in read.carved], read.carved)
        else:
            chosen[role] = (read.examples[split], list(range(len(read.examples[split]))))
    for split, info in inputs.sets.items():
        count = len(read.examples[split])  # each split file's examples: its set's must match
        if info.num_examples != count:
            raise ValueError(
                f"feature set {info.id} holds {info.num_examples} examples but {spec.name}/"
                f"{split} has {count}: re-extract this split"
            )
    return chosen


def _data(cfg: LayersConfig, inputs: Inputs, reader, chosen, control: bool) -> dict:
    """Each role's pooled vectors (read once), targets and control targets (data.py)."""
    from .data import Probed, control_targets, pooled, targets

    spec, budget = cfg.spec, int(cfg.max_memory_gb * 1e9)
    data: dict[str, Probed] = {}
    for role in ROLES:
        examples, indices = chosen[role]
        y, lengths = targets(spec, examples)
        x = pooled(reader, inputs.sets[inputs.split_of(role)], indices, lengths, budget)
        yc = None
        if control:  # labels drawn from train's distribution, per type
            yc = control_targets(spec, examples, y if role == "train" else data["train"].y)
        data[role] = Probed(x, y, yc, lengths)
        what = "words" if lengths else "examples"
        log.info("%s: %d %s pooled (%s)", role, len(x), what, spec.name)
    return data
