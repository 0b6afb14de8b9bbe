"""Reading a task's split: the split's `Source` says where the file is and in which format.

A registered task's file is `<data_dir>/<folder>/<path>`; a user task's path is absolute (its
spec file's relative paths were resolved when it was loaded), and `data_dir` is not needed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .answers import Answers
from .conll import read_conll
from .example import Example
from .registry import get_task
from .rows import examples_from_table, roles
from .spec import SPLITS, TaskSpec
from .tables import read_table
from .tsv import LAYOUTS, read_tsv

log = logging.getLogger(__name__)


def as_spec(task: TaskSpec | str) -> TaskSpec:
    """A TaskSpec as it is, a registered task's by name."""
    if isinstance(task, TaskSpec):
        return task
    return get_task(task)


def read_file(spec: TaskSpec, split: str, path: Path | str, answers: Answers | None = None):
    """Every example of one file read as `spec`'s `split` is (any file name, e.g. a GLUE copy).

    answers: the check of each gold answer (default: the spec's labels and score range)."""
    source = spec.splits[split]
    answers = answers or Answers.of(spec)
    path = Path(path)
    if source.format == "glue-tsv":
        examples, _ = read_tsv(answers, LAYOUTS[source.options["layout"]], path)
    elif source.format == "conll":
        tokens, tags = source.columns.get("tokens", 0), source.columns.get("tags", -1)
        assert isinstance(tokens, int) and isinstance(tags, int)  # spec_file: field indices
        fields = source.options.get("fields", 0)
        examples = read_conll(answers, path, tokens=tokens, tags=tags, fields=fields)
    else:
        text_roles, answer_role = roles(spec.pair, spec.kind == "tagging")
        wanted = [str(source.columns[r]) for r in (*text_roles, answer_role)]  # header names
        options = dict(source.options, task_split=split)
        table = read_table(path, source.format, wanted, options)
        return examples_from_table(
            table, source.columns, answers, pair=spec.pair, labelled=split != "test"
        )
    if not examples:
        raise ValueError(f"{path}: expected at least one {spec.name} example, got none")
    return examples


def read_task_file(task: str, path: Path | str) -> list[Example]:
    """Every example of one file in registered task `task`'s format (read as its train split)."""
    return read_file(get_task(task), "train", path)


def _data_dir(data_dir: Path | str | None, spec: TaskSpec) -> Path:
    if data_dir is None:
        raise ValueError(f"task {spec.name} needs its data directory (--data DIR)")
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(
            f"data directory {root} does not exist (expected a folder "
            f"holding one sub-folder per task)"
        )
    return root


def split_path(task: TaskSpec | str, data_dir: Path | str | None, split: str) -> Path:
    """Where `split`'s file is: `<data_dir>/<folder>/<path>` for a registered task, the
    source's own (absolute) path for a user task."""
    spec = as_spec(task)
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {', '.join(SPLITS)}, got {split!r}")
    if split not in spec.splits:
        raise ValueError(f"task {spec.name} has no {split} split (it has {', '.join(spec.splits)})")
    path = Path(spec.splits[split].path)
    if spec.folder is None:
        return path
    return _data_dir(data_dir, spec) / spec.folder / path


def _exists(path: Path, fmt: str) -> bool:
    return path.is_dir() if fmt == "hf-dataset" else path.is_file()


def available_splits(task: TaskSpec | str, data_dir: Path | str | None = None) -> list[str]:
    """The splits of `task` whose files exist, in train, dev, test (, select) order."""
    spec = as_spec(task)
    return [
        s
        for s in SPLITS
        if s in spec.splits and _exists(split_path(spec, data_dir, s), spec.splits[s].format)
    ]


def read_split(task: TaskSpec | str, data_dir: Path | str | None, split: str) -> list[Example]:
    """The examples of one split, `Example.index` = position in the split (0-based); every
    row checked (a bad one: ValueError naming its file, line and column)."""
    spec = as_spec(task)
    path = split_path(spec, data_dir, split)
    if not _exists(path, spec.splits[split].format):
        raise FileNotFoundError(f"{spec.name} {split}: expected the file {path}")
    examples = read_file(spec, split, path)
    log.info("%s %s: %d examples from %s", spec.name, split, len(examples), path)
    return examples
