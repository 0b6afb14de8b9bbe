"""What `snowfire extract` reads (a task's splits, or a raw text file), and the whole command
as one function, shared by the CLI and the extract job runner."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cache import FeatureSetInfo, file_sha256, open_store
from cache.bucket import is_bucket

from .base import TextInput
from .encoders import load_encoder
from .options import ExtractOptions
from .run import ExtractConfig, extract


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
    task: str | None = None,
    data: str | None = None,
    splits: list[str] | None = None,
    input: str | None = None,
    name: str | None = None,
) -> list[InputSet]:
    """A task's splits (every split present by default) or one raw text file."""
    from tasks import available_splits, get_task, read_split, read_text_file

    if (input is None) == (task is None):
        raise ValueError("give either a task (with its data directory) or an input file")
    if input is not None:
        path = Path(input)
        source = {"kind": "file", "path": str(path.resolve()), "sha256": file_sha256(path)}
        return [InputSet(None, None, _texts(read_text_file(path)), source, name or path.stem)]
    if data is None:
        raise ValueError(f"task {task!r} needs its data directory (--data DIR)")
    spec = get_task(task)
    present = available_splits(task, data)
    out = []
    for split in splits or present:
        path = Path(data) / spec.folder / spec.files.get(split, "?")
        if split not in present:
            raise ValueError(f"no {split} split for {task}: expected {path}")
        source = {
            "kind": "task",
            "task": task,
            "split": split,
            "path": str(path.resolve()),
            "sha256": file_sha256(path),
        }
        out.append(InputSet(task, split, _texts(read_split(task, data, split)), source))
    return out


def run_extract(options: ExtractOptions | dict[str, Any]) -> list[FeatureSetInfo]:
    """`snowfire extract`: its options, or the same by name (a job's params)."""
    opts = options if isinstance(options, ExtractOptions) else ExtractOptions(**options)
    inputs = gather_inputs(
        task=opts.task, data=opts.data, splits=opts.split, input=opts.input, name=opts.name
    )
    # the encoder of this process (it plans); on Ray, each actor builds its own the same way
    factory = functools.partial(
        load_encoder,
        opts.encoder,
        pair_encoding=opts.pair_encoding,
        max_length=opts.max_length,
        device=opts.device,
        elmo_state=opts.elmo_state,
        batch_size=opts.batch_size,
    )
    encoder = factory()
    store = open_store(opts.store)
    runner = None
    if opts.ray is not None:
        from .ray_run import RayRunner

        where = opts.store if is_bucket(opts.store) else str(Path(opts.store).resolve())
        runner = RayRunner(
            factory, where, address=opts.ray, actors=opts.actors, gpus_per_actor=opts.gpus_per_actor
        )
    try:
        return _extract_all(opts, inputs, encoder, store, runner)
    finally:
        if runner is not None:
            runner.close()


def _extract_all(opts, inputs, encoder, store, runner) -> list[FeatureSetInfo]:
    made = []
    for item in inputs:
        config = ExtractConfig(
            dtype=opts.dtype,
            tiles=opts.tiles,
            token_budget=opts.token_budget,
            segment_tokens=opts.segment_tokens,
            batch_size=opts.batch_size,
            progress=opts.progress,
            source=item.source,
        )
        made.append(
            extract(
                encoder,
                item.texts,
                store,
                task=item.task,
                split=item.split,
                config=config,
                name=item.name,
                runner=runner,
            )
        )
    return made
