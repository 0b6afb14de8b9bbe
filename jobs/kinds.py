"""The kinds of job, in one place: what each runs, the config its params fill, what it needs.

    extract   `snowfire extract`: extractor.ExtractConfig   -> {"featuresets": [summaries]}
    train     `snowfire train`:   heads.TrainConfig       -> {split: {metric: value}}
    finetune  `snowfire finetune`: finetune.FinetuneConfig -> {split: {metric: value}}
    compare   `snowfire compare`:  compare.CompareConfig   -> {"table", "results", "verdicts"}
    layers    `snowfire layers`:   compare.LayersConfig    -> {"key", "recommendation", ...}

Each kind's `run` takes the job's resolved params (the config's fields by name) and returns
the JSON-able result the job shows when done. Imports are lazy: a worker loads only the
packages of the kind it runs, and only in the child process that runs the job.

Every kind also takes the params of `JobLimits` (the job's own, not its command's): `deadline`,
the wall-clock seconds an attempt may run, by default the worker's (WorkerConfig.deadline),
by default the kind's (`JobKind.deadline`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from snowfire.options import check, option


@dataclass(frozen=True)
class JobLimits:
    """What bounds a job, whatever its kind: params beside its command's (jobs/params.py
    derives their model from these fields, as it does the kinds' configs)."""

    deadline: float | None = option(
        None,
        "wall-clock seconds an attempt of the job may run; past it the runner is killed, the "
        "job fails with 'deadline exceeded after N s' and its run directory is kept and marked "
        "(none: the worker's default for the kind)",
        gt=0,
    )

    def __post_init__(self) -> None:
        check(self)


#: The param names of `JobLimits`, which no kind's config may use.
LIMIT_PARAMS = tuple(f.name for f in fields(JobLimits))


def split_limits(params: dict[str, Any]) -> tuple[JobLimits, dict[str, Any]]:
    """A job's params as (its limits, the params of its command's config)."""
    limits = JobLimits(**{k: params[k] for k in LIMIT_PARAMS if params.get(k) is not None})
    return limits, {k: v for k, v in params.items() if k not in LIMIT_PARAMS}


def _run_extract(params: dict[str, Any]) -> dict[str, Any]:
    from snowfire.extractor import ExtractConfig, run_extract

    made = run_extract(ExtractConfig(**params))
    return {"featuresets": [info.summary() for info in made]}


def _run_train(params: dict[str, Any]) -> dict[str, Any]:
    from snowfire.heads import TrainConfig, train

    return train(TrainConfig(**params))


def _run_finetune(params: dict[str, Any]) -> dict[str, Any]:
    from snowfire.finetune import FinetuneConfig, train

    return train(FinetuneConfig(**params))


def _run_compare(params: dict[str, Any]) -> dict[str, Any]:
    from snowfire.compare import CompareConfig, run_compare

    return run_compare(CompareConfig(**params))


def _run_layers(params: dict[str, Any]) -> dict[str, Any]:
    from snowfire.compare import LayersConfig, run_layers

    answer = run_layers(LayersConfig(**params))
    shown = ("key", "recommendation", "best_layer", "carrying", "carries", "expected_layer")
    return {k: answer[k] for k in shown} | {"out": params["out"]}


def _layers_config() -> type:
    from snowfire.compare import LayersConfig

    return LayersConfig


def _compare_config() -> type:
    from snowfire.compare import CompareConfig

    return CompareConfig


def _extract_config() -> type:
    from snowfire.extractor import ExtractConfig

    return ExtractConfig


def _train_config() -> type:
    from snowfire.heads import TrainConfig

    return TrainConfig


def _finetune_config() -> type:
    from snowfire.finetune import FinetuneConfig

    return FinetuneConfig


@dataclass(frozen=True)
class JobKind:
    """name: as in the queue and the REST API; run: params -> result; config: the dataclass
    whose fields the params are; gpu: whether the kind wants a GPU where there is one;
    deadline: the default wall-clock limit of an attempt, in seconds (a hung job frees its
    worker after it)."""

    name: str
    run: Callable[[dict[str, Any]], dict[str, Any]]
    config: Callable[[], type]
    gpu: bool
    deadline: float


HOUR = 3600.0

JOB_KINDS: dict[str, JobKind] = {
    kind.name: kind
    for kind in (
        JobKind("extract", _run_extract, _extract_config, gpu=True, deadline=24 * HOUR),
        JobKind("train", _run_train, _train_config, gpu=False, deadline=12 * HOUR),
        JobKind("finetune", _run_finetune, _finetune_config, gpu=True, deadline=72 * HOUR),
        JobKind("compare", _run_compare, _compare_config, gpu=True, deadline=7 * 24 * HOUR),
        JobKind("layers", _run_layers, _layers_config, gpu=False, deadline=12 * HOUR),
    )
}


def job_kind(name: str) -> JobKind:
    """The kind named `name`; ValueError naming the known kinds otherwise."""
    if name not in JOB_KINDS:
        raise ValueError(f"unknown job kind {name!r}: expected one of {', '.join(JOB_KINDS)}")
    return JOB_KINDS[name]
