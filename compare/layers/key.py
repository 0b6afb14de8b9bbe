"""The content key of a layer sweep: a hash of the canonical JSON of everything that can change
its answer, so a finished sweep is found again (OUT/layers.json, a job's HOME/layers/<key>/)
and never confused with another.

    version       LAYERS_VERSION, bumped whenever the code would answer differently
    featuresets   {split: id} of every split read; an id is the hash of its encoder pool and
                  its examples' content keys, so it changes with the features' bytes
    roles         which split trains, selects and reports (tasks.split_roles)
    task          the task's record (tasks.describe) without the files' paths: kind, pair,
                  labels, metric, score range, each split file's sha256 and how it is read
    config        LayersConfig.answer_fields(): seeds, epochs, patience, batch size, rate,
                  hidden width, control task, selection rule, training cap

Where the answer is written, shown or computed (out, progress, device, memory) is not in it,
nor how the features were named (the store's location, --encoder or --featureset): the same
features and labels give the same key. tests/test_layers_key.py changes each part in turn.
"""

from __future__ import annotations

from typing import Any

from snowfire.cache import digest
from snowfire.tasks import describe

from .config import LayersConfig
from .inputs import Inputs

#: Bumped when the sweep's code would answer a key differently: old answers are not reused.
LAYERS_VERSION = 1


def key_record(cfg: LayersConfig, inputs: Inputs) -> dict[str, Any]:
    """What the key hashes (module docstring); layers.json keeps it beside the answer."""
    task = describe(cfg.spec, cfg.data)
    for entry in task["splits"].values():
        entry.pop("path", None)  # the content's hash says it; the path may differ by caller
    task.pop("registered", None)
    return {
        "version": LAYERS_VERSION,
        "featuresets": inputs.featureset_ids(),
        "roles": inputs.roles.to_json(),
        "task": task,
        "config": cfg.answer_fields(),
    }


def sweep_key(cfg: LayersConfig, inputs: Inputs) -> str:
    """The sweep's content key: 32 hex characters."""
    return digest(key_record(cfg, inputs), 32)
