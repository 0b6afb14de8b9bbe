"""The record of a resolved task that every artifact keeps (a run's config.json, a compare's
results.json, a feature set's source), and the spec rebuilt from it.

    describe(spec, data) -> {"name", "kind", "pair", "metric", "metrics", "labels",
                             "score_range", "registered", "splits": {split: {"path",
                             "format", "columns", ..., "sha256"}}}

Paths are absolute and each split's file carries its sha256, so a run directory alone says
what it was trained on (and `snowfire predict` needs nothing else: kind, labels, pair).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .answers import Answers
from .readers import as_spec, read_file, split_path
from .spec import METRICS, Source, TaskSpec


def file_digest(path: Path | str) -> str:
    """sha256 of a file's bytes; of a directory (a saved dataset): of each file's relative
    path and bytes, in sorted order."""
    path = Path(path)
    h = hashlib.sha256()
    if path.is_dir():
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(item.relative_to(path)).encode() + b"\0")
            h.update(file_digest(item).encode())
        return h.hexdigest()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe(task: TaskSpec | str, data: Path | str | None = None) -> dict[str, Any]:
    """The record of `task` with each split file's absolute path and sha256 (None for a split
    whose file is absent, e.g. a registered task's test split)."""
    spec = as_spec(task)
    record = spec.to_json()
    record.pop("folder", None)
    record["metrics"] = list(spec.reported)
    record["registered"] = spec.registered
    for split, entry in record["splits"].items():
        path = split_path(spec, data, split) if spec.folder is None or data else None
        if path is None:
            entry["sha256"] = None
            continue
        entry["path"] = str(Path(path).absolute())
        entry["sha256"] = file_digest(path) if path.exists() else None
    return record


def spec_from_record(record: dict[str, Any]) -> TaskSpec:
    """The TaskSpec a record describes (no file is read): what predicting with a saved run
    needs, and the same paths, formats and columns to read the splits again."""
    if record.get("registered"):
        from .registry import get_task

        return get_task(record["name"])
    sources = {}
    for split, entry in record["splits"].items():
        options = {
            k: v for k, v in entry.items() if k not in ("path", "format", "columns", "sha256")
        }
        sources[split] = Source(entry["path"], entry["format"], entry.get("columns", {}), options)
    score_range = record.get("score_range")
    metrics = record.get("metrics") or []
    return TaskSpec(
        name=record["name"],
        kind=record["kind"],
        pair=record["pair"],
        labels=record["labels"],
        metric=record["metric"],
        splits=sources,
        score_range=None if score_range is None else tuple(score_range),
        extra_metrics=tuple(m for m in metrics if m == "macro_f1"),
        origin="record",
    )


def split_source(task: TaskSpec | str, data: Path | str | None, split: str) -> dict[str, Any]:
    """What a feature set of one task split records as its `source`: the file (absolute path,
    sha256) and, for a user task, how it is read (`read`: format, columns, options, pair), so
    the features are found again only for the same texts (`cache` matches both)."""
    spec = as_spec(task)
    path = split_path(spec, data, split)
    out = {
        "kind": "task",
        "task": spec.name,
        "split": split,
        "path": str(path.absolute()),
        "sha256": file_digest(path),
    }
    key = read_key(spec, split)
    if key is not None:
        out["read"] = key
    return out


def read_key(task: TaskSpec | str, split: str) -> str | None:
    """How a user task's split file is read, as one string (None for a registered task, whose
    reading is fixed by the code and its file's sha256)."""
    spec = as_spec(task)
    if spec.registered:
        return None
    entry = spec.splits[split].to_json()
    entry.pop("path")
    entry.update(kind=spec.kind, pair=spec.pair)
    return json.dumps(entry, sort_keys=True)


def read_source(source: dict[str, Any]):
    """The examples of the split file a feature set's `source` names (`split_source`'s
    record), read from its recorded path the way it was read then: a registered task's by its
    code, a user task's by the recorded `read` (format, columns, kind, pair). Gold answers are
    checked for their form only (the texts are what a repair needs); the caller checks the
    file's sha256 first."""
    split, path = source["split"], Path(source["path"])
    if source.get("read") is None:
        from .registry import get_task

        return read_file(get_task(source["task"]), split, path)
    read = json.loads(source["read"])
    kind, pair = read.pop("kind"), read.pop("pair")
    fmt, columns = read.pop("format"), read.pop("columns", {})
    spec = TaskSpec(
        name=source["task"],
        kind=kind,
        pair=pair,
        labels=None if kind == "regression" else [],
        metric=METRICS[kind][0],
        splits={split: Source(str(path), fmt, columns, read)},
        origin="record",
    )
    return read_file(spec, split, path, Answers(kind=kind))
