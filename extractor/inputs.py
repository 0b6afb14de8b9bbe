"""What `snowfire extract` reads (a task's splits, or a raw text file), and the whole command
as one function, shared by the CLI and the extract job runner."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snowfire.cache import FeatureSetInfo, file_sha256, is_bucket, open_store

from .base import TextInput
from .config import ExtractConfig
from .encoders import load_encoder
from .run import extract


@dataclass(frozen=True)
class InputSet:
    """One feature set to make: its texts and where they came from."""

    task: str | None
    split: str | None
    texts: list[TextInput]
    source: dict[str, Any]
    name: str | None = None


def _texts(examples) -> list[TextInput]:
    return [
        TextInput(tuple(e.words_a), None if e.words_b is None else tuple(e.words_b))
        for e in examples
    ]


def gather_inputs(
    *,
    task=None,
    data: str | None = None,
    splits: list[str] | None = None,
    input: str | None = None,
    name: str | None = None,
) -> list[InputSet]:
    """A task's splits (every split present by default; `task` a TaskSpec or a registered
    name), every row of each read and checked before anything is extracted, or one raw text
    file."""
    from snowfire.tasks import as_spec, need_splits, read_split, read_text_file, split_source

    if (input is None) == (task is None):
        raise ValueError("give either a task (with its data directory) or an input file")
    if input is not None:
        path = Path(input)
        source = {"kind": "file", "path": str(path.resolve()), "sha256": file_sha256(path)}
        return [InputSet(None, None, _texts(read_text_file(path)), source, name or path.stem)]
    spec = as_spec(task)
    if spec.folder is not None and data is None:
        raise ValueError(f"task {spec.name!r} needs its data directory (--data DIR)")
    present = need_splits(spec, data, splits or [])  # each asked for, and at least one
    out = []
    for split in splits or present:
        texts = _texts(read_split(spec, data, split))
        out.append(InputSet(spec.name, split, texts, split_source(spec, data, split)))
    return out


def source_payloads(source: dict[str, Any]) -> list[dict[str, Any]]:
    """The texts (`TextInput.payload()`) of a source `gather_inputs` recorded, read again from
    its file; ValueError when none is recorded or the file's sha256 is no longer the one
    recorded (FileNotFoundError when it is gone)."""
    from snowfire.tasks import file_digest, read_source, read_text_file

    if source.get("kind") not in ("file", "task") or not source.get("path"):
        raise ValueError(f"no source file recorded (source: {source or 'none'})")
    path = Path(source["path"])
    found = file_digest(path)  # a saved datasets directory: its files' digest
    if found != source.get("sha256"):
        raise ValueError(
            f"{path} has sha256 {found}, recorded {source.get('sha256')}: it changed since the "
            "extraction"
        )
    if source["kind"] == "file":
        return [t.payload() for t in _texts(read_text_file(path))]
    return [t.payload() for t in _texts(read_source(source))]  # a task's split, read as then


def run_extract(config: ExtractConfig) -> list[FeatureSetInfo]:
    """`snowfire extract` (and an extract job, whose params are built into the config first):
    every feature set the config names, extracted into its store."""
    if not isinstance(config, ExtractConfig):
        raise TypeError(
            f"run_extract: expected an ExtractConfig, got {type(config).__name__} (a job's "
            "params: ExtractConfig(**params))"
        )
    config.check_inputs()
    inputs = gather_inputs(
        task=config.spec if config.names_task else None,
        data=config.data,
        splits=config.split,
        input=config.input,
        name=config.name,
    )
    # the encoder of this process (it plans); on Ray, each actor builds its own the same way
    factory = functools.partial(load_encoder, config.encoder, **config.encoder_options())
    encoder = factory()
    store = open_store(config.store)
    runner = None
    if config.ray is not None:
        from .ray_run import RayRunner

        where = config.store if is_bucket(config.store) else str(Path(config.store).resolve())
        runner = RayRunner(
            factory,
            where,
            address=config.ray,
            actors=config.actors,
            gpus_per_actor=config.gpus_per_actor,
        )
    try:
        return [
            extract(
                encoder,
                item.texts,
                store,
                task=item.task,
                split=item.split,
                config=config,
                name=item.name,
                source=item.source,
                runner=runner,
            )
            for item in inputs
        ]
    finally:
        if runner is not None:
            runner.close()
