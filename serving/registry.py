"""The runs a predictor may serve: every run directory under a runs root (a service's
HOME/runs: its train, finetune and compare jobs' runs, or any run copied there), named by its
path under the root, and runs given by path (`snowfire.Predictor([...])`).

    name                          what
    sst2-linear                   RUNS/sst2-linear, a ❄️ `snowfire train` run
    4f2a.../snow/stsb/esim/seed0  a cell of a compare job's run
    runs/stsb-lora                a path given to snowfire.Predictor, as given

A run directory is one whose config.json has a "train" (❄️) or "finetune" (🔥) record; it is
finished when its metrics.json (written last) and weights are there. A comparison's directory
holds runs and is not one. The listing reads only the runs' small JSON files; nothing is loaded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from snowfire.rundir import BEST, CONFIG, GRID, HEAD, METRICS, PAUSED, RESULTS, WEIGHTS

from .errors import RunNotFoundError, RunNotReadyError

#: How deep under the root run directories are looked for (a compare cell: 4 levels down).
MAX_DEPTH = 6
#: Folders of a run that hold no run of their own worth serving.
_INSIDE = {"predictions", "encoder", GRID}


@dataclass(frozen=True)
class RunInfo:
    """One run as the registry sees it, from its JSON files.

    side: "snow" (a ❄️ head over cached features) or "fire" (🔥, any method); kind: the head
    (linear, esim, bilstm-crf, ...) or the method (full, adapter, lora, bitfit); task_kind:
    classification, regression or tagging; pair: the task reads two texts; metric and score:
    the task's metric on the best split it was scored on (dev, else test, else train);
    size_bytes: what the run keeps to predict (weights.safetensors, or best.pt); identity:
    the encoder it was made with (❄️: of the features; 🔥: the pretrained one it started
    from); finished: metrics.json and the weights are there (else `reason` says what is not).
    """

    name: str
    path: Path
    side: str
    kind: str
    task: str
    task_kind: str | None
    pair: bool | None
    metric: str | None
    score: float | None
    split: str | None
    size_bytes: int
    encoder: str | None
    identity: dict[str, Any] = field(repr=False, default_factory=dict)
    dtype: str | None = None
    finished: bool = False
    reason: str | None = None


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _score(metrics: dict | None, metric: str | None) -> tuple[float | None, str | None]:
    for split in ("dev", "test", "train"):
        value = (metrics or {}).get(split, {}).get(metric)
        if isinstance(value, (int, float)):
            return float(value), split
    return None, None


def _unfinished(path: Path, missing: list[str]) -> str | None:
    """Why a run is not finished (None when it is): the files it lacks, and whether it was
    paused (pause_at: a race's rung; the same config run again continues it)."""
    if not missing:
        return None
    paused = _json(path / PAUSED)
    if isinstance(paused, dict) and "epoch" in paused:
        return f"paused after epoch {paused['epoch']} (no {', '.join(missing)})"
    return f"no {', '.join(missing)}: not finished"


def _snow(name: str, path: Path, config: dict) -> RunInfo:
    from snowfire.heads import run_task

    train = config["train"]
    meta = _json(path / HEAD)
    metrics = _json(path / METRICS)
    spec = None
    try:
        spec = run_task(meta) if meta else None
    except (KeyError, ValueError):
        spec = None
    missing = [f for f in (HEAD, WEIGHTS, METRICS) if not (path / f).is_file()]
    metric = spec.metric if spec else None
    score, split = _score(metrics, metric)
    weights = path / WEIGHTS
    return RunInfo(
        name=name,
        path=path,
        side="snow",
        kind=str(train.get("head")),
        task=spec.name if spec else str(train.get("task") or "?"),
        task_kind=spec.kind if spec else None,
        pair=spec.pair if spec else None,
        metric=metric,
        score=score,
        split=split,
        size_bytes=weights.stat().st_size if weights.is_file() else 0,
        encoder=(meta or {}).get("encoder", {}).get("spec") or train.get("encoder"),
        identity=(meta or {}).get("encoder") or {},
        dtype=(meta or {}).get("dtype"),
        finished=not missing,
        reason=_unfinished(path, missing),
    )


def _fire(name: str, path: Path, config: dict) -> RunInfo:
    from snowfire.finetune import read_run
    from snowfire.tasks import spec_from_record

    cfg = config["finetune"]
    spec = spec_from_record(config["task"]) if "task" in config else None
    chosen, record, missing = path, config, []
    try:
        chosen, record, _, spec = read_run(path)
    except FileNotFoundError:
        missing = [f for f in (METRICS, BEST) if not (path / f).is_file()]
    except (KeyError, ValueError) as err:
        missing = [f"a readable record ({err})"]
    metric = spec.metric if spec else None
    score, split = _score(_json(path / METRICS), metric)
    best = chosen / BEST
    return RunInfo(
        name=name,
        path=path,
        side="fire",
        kind=str(record.get("finetune", cfg).get("method", "full")),
        task=spec.name if spec else str(cfg.get("task") or "?"),
        task_kind=spec.kind if spec else None,
        pair=spec.pair if spec else None,
        metric=metric,
        score=score,
        split=split,
        size_bytes=best.stat().st_size if best.is_file() else 0,
        encoder=record.get("finetune", cfg).get("encoder"),
        identity=record.get("encoder") or {},
        finished=not missing,
        reason=_unfinished(path, missing),
    )


def describe_run(name: str, path: Path) -> RunInfo | None:
    """The RunInfo of a run directory; None when `path` holds no run record."""
    config = _json(path / CONFIG)
    if not isinstance(config, dict):
        return None
    if "train" in config:
        return _snow(name, path, config)
    if "finetune" in config:
        return _fire(name, path, config)
    return None


class RunRegistry:
    """The runs under `root` (None: none) and the runs given by path in `runs` (name -> path)."""

    def __init__(self, root: str | Path | None = None, runs: dict[str, str | Path] | None = None):
        self.root = None if root is None else Path(root)
        self.runs = {name: Path(p) for name, p in (runs or {}).items()}

    def list_runs(self) -> list[RunInfo]:
        """Every run, finished or not, by name."""
        found = {n: info for n, p in self.runs.items() if (info := describe_run(n, p))}
        if self.root is not None and self.root.is_dir():
            for path in self._walk(self.root, 0):
                name = path.relative_to(self.root).as_posix()
                if name not in found and (info := describe_run(name, path)) is not None:
                    found[name] = info
        return [found[n] for n in sorted(found)]

    def _walk(self, folder: Path, depth: int):
        if (folder / CONFIG).is_file() and depth > 0:
            yield folder  # a run: its own folders hold no run to serve
            return
        if depth >= MAX_DEPTH:
            return
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for child in children:
            if child.is_dir() and not child.name.startswith(".") and child.name not in _INSIDE:
                yield from self._walk(Path(child.path), depth + 1)

    def get(self, name: str) -> RunInfo:
        """The finished run `name`: RunNotFoundError when there is none of that name,
        RunNotReadyError when it is not finished."""
        path = self._path(name)
        info = describe_run(name, path)
        if info is None:
            if (path / PAUSED).is_file():  # a ❄️ run writes config.json when it finishes
                raise RunNotReadyError(
                    f"run {name!r} is not finished: {_unfinished(path, [CONFIG])} (the same "
                    "config run again continues it)"
                )
            if (path / RESULTS).is_file():
                raise RunNotFoundError(
                    f"run {name!r} is a comparison, not a run: name one of its runs "
                    f"({name}/snow/TASK/HEAD/seedN, {name}/fire/TASK/seedN, under --trials "
                    f"{name}/ARM/TASK/trialK/seedN; GET /v1/runs)"
                )
            raise RunNotReadyError(
                f"run {name!r} is not finished: its directory holds no {CONFIG} yet "
                "(its job may still be queued or running)"
            )
        if not info.finished:
            raise RunNotReadyError(
                f"run {name!r} is not finished: {info.reason} (its job may still be running, "
                "or it was stopped: see its job)"
            )
        return info

    def _path(self, name: str) -> Path:
        if name in self.runs:
            return self.runs[name]
        where = f"under {self.root}" if self.root is not None else "(no runs directory)"
        missing = RunNotFoundError(f"no run named {name!r} {where}: GET /v1/runs lists them")
        parts = PurePosixPath(name).parts
        if self.root is None or not parts or name.startswith("/") or ".." in parts:
            raise missing
        path = self.root.joinpath(*parts)
        if not path.is_dir():
            raise missing
        return path
