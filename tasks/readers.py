"""Reading a task's split from a data directory laid out as `<data_dir>/<folder>/<file>`."""

from __future__ import annotations

import logging
from pathlib import Path

from .conll import read_conll
from .example import Example
from .registry import SPLITS, get_task
from .tsv import LAYOUTS, read_tsv

log = logging.getLogger(__name__)


def read_task_file(task: str, path: Path | str) -> list[Example]:
    """Every example of one file in `task`'s format (any file name, e.g. a GLUE copy)."""
    spec = get_task(task)
    if spec.kind == "tagging":
        examples = read_conll(spec, path)
    else:
        examples, _ = read_tsv(spec, LAYOUTS[task], path)
    if not examples:
        raise ValueError(f"{path}: expected at least one {task} example, got none")
    return examples


def _data_dir(data_dir: Path | str) -> Path:
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(
            f"data directory {root} does not exist (expected a folder "
            f"holding one sub-folder per task)"
        )
    return root


def available_splits(task: str, data_dir: Path | str) -> list[str]:
    """The splits of `task` whose files exist under `data_dir`, in train, dev, test order."""
    spec = get_task(task)
    folder = _data_dir(data_dir) / spec.folder
    return [s for s in SPLITS if s in spec.files and (folder / spec.files[s]).is_file()]


def read_split(task: str, data_dir: Path | str, split: str) -> list[Example]:
    """The examples of one split, `Example.index` = position in the split (0-based)."""
    spec = get_task(task)
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {', '.join(SPLITS)}, got {split!r}")
    if split not in spec.files:
        raise ValueError(f"task {task} has no {split} split (it has {', '.join(spec.files)})")
    path = _data_dir(data_dir) / spec.folder / spec.files[split]
    if not path.is_file():
        raise FileNotFoundError(f"{task} {split}: expected the file {path}")
    examples = read_task_file(task, path)
    log.info("%s %s: %d examples from %s", task, split, len(examples), path)
    return examples
