"""Task datasets and metrics: a task's spec (registered in code, or a user's spec file), readers
for each format, checks of every row, and scoring.

    from snowfire.tasks import resolve_task, read_split, evaluate
    spec = resolve_task("stsb")                      # or "mytask.yaml", or a spec dict
    examples = read_split(spec, data_dir, "dev")     # list[Example], index = position
    scores = evaluate(spec, gold, pred)              # {"pearson": ..., "spearman": ...}

`DEMO_DATA_DIR` is a small sample (SST-2, STS-B) laid out like a data directory.
"""

from pathlib import Path

from .batches import example_length, length_batches
from .check import TaskReport, check_task
from .describe import (
    describe,
    file_digest,
    read_key,
    read_source,
    spec_from_record,
    split_source,
)
from .example import Example
from .metrics import accuracy, binary_f1, macro_f1, matthews_corrcoef, pearson, spearman
from .predictions import decode, gold_of, read_predictions, write_predictions
from .readers import as_spec, available_splits, read_split, split_path
from .registry import TASK_NAMES, TASKS, get_task
from .scoring import evaluate
from .spans import span_scores, tag_spans
from .spec import FORMATS, KINDS, METRICS, SPLITS, USER_FORMATS, Source, TaskSpec
from .spec_file import (
    SPEC_SUFFIXES,
    config_task,
    load_spec_file,
    resolve_task,
    spec_from_dict,
)
from .subset import train_subset
from .text_file import read_text_file
from .text_rule import (
    INT_MAX,
    INT_MIN,
    TEXT_PATTERN,
    WORD_PATTERN,
    WORDS_PATTERN,
    dotted,
    escaped,
    integral,
    text_fault,
    value_fault,
)

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo"

__all__ = [
    "DEMO_DATA_DIR",
    "FORMATS",
    "INT_MAX",
    "INT_MIN",
    "KINDS",
    "METRICS",
    "SPEC_SUFFIXES",
    "SPLITS",
    "TASKS",
    "TASK_NAMES",
    "TEXT_PATTERN",
    "USER_FORMATS",
    "WORDS_PATTERN",
    "WORD_PATTERN",
    "Example",
    "Source",
    "TaskReport",
    "TaskSpec",
    "accuracy",
    "as_spec",
    "available_splits",
    "binary_f1",
    "check_task",
    "config_task",
    "decode",
    "describe",
    "dotted",
    "escaped",
    "evaluate",
    "example_length",
    "file_digest",
    "get_task",
    "integral",
    "gold_of",
    "length_batches",
    "load_spec_file",
    "macro_f1",
    "matthews_corrcoef",
    "pearson",
    "read_key",
    "read_predictions",
    "read_source",
    "read_split",
    "read_text_file",
    "resolve_task",
    "span_scores",
    "spearman",
    "spec_from_dict",
    "spec_from_record",
    "split_path",
    "split_source",
    "tag_spans",
    "text_fault",
    "train_subset",
    "value_fault",
    "write_predictions",
]
