"""Task datasets and metrics: a task's spec (registered in code, or a user's spec file), readers
for each format, checks of every row, and scoring.

    from snowfire.tasks import resolve_task, read_split, evaluate
    spec = resolve_task("stsb")                      # or "mytask.yaml", or a spec dict
    examples = read_split(spec, data_dir, "dev")     # list[Example], index = position
    scores = evaluate(spec, gold, pred)              # {"pearson": ..., "spearman": ...}

`DEMO_DATA_DIR` is a small sample (SST-2, STS-B) laid out like a data directory.
"""

from pathlib import Path

from .batches import epoch_batches, epoch_rng, example_length, length_batches
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
from .fields import DATA_HELP, TaskFields, TaskListFields, config_task, resolve_tasks
from .metrics import accuracy, binary_f1, macro_f1, matthews_corrcoef, pearson, spearman
from .predictions import (
    decode,
    format_predictions,
    gold_of,
    gold_text,
    parse_predictions,
    read_predictions,
    write_predictions,
)
from .readers import as_spec, available_splits, read_split, split_path
from .registry import TASK_NAMES, TASKS, get_task
from .scoring import evaluate
from .selection import (
    PAUSE_HELP,
    SELECT,
    SELECTION_HELP,
    SELECTIONS,
    STOP_HELP,
    SplitRoles,
    selection_slice,
    split_roles,
)
from .spans import span_scores, tag_spans
from .spec import FORMATS, KINDS, METRICS, RELEASE_SPLITS, SPLITS, USER_FORMATS, Source, TaskSpec
from .spec_file import SPEC_SUFFIXES, load_spec_file, resolve_task, spec_from_dict
from .targets import encode_targets, label_indices, task_targets
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
from .training import (
    TRAINING_SPLITS,
    TrainingSplits,
    need_splits,
    read_training,
    train_subset,
)

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo"

__all__ = [
    "DATA_HELP",
    "DEMO_DATA_DIR",
    "FORMATS",
    "INT_MAX",
    "INT_MIN",
    "KINDS",
    "METRICS",
    "SPEC_SUFFIXES",
    "RELEASE_SPLITS",
    "PAUSE_HELP",
    "SELECT",
    "SELECTION_HELP",
    "STOP_HELP",
    "SELECTIONS",
    "SPLITS",
    "SplitRoles",
    "selection_slice",
    "split_roles",
    "TASKS",
    "TASK_NAMES",
    "TEXT_PATTERN",
    "TRAINING_SPLITS",
    "USER_FORMATS",
    "WORDS_PATTERN",
    "WORD_PATTERN",
    "Example",
    "Source",
    "TaskFields",
    "TaskListFields",
    "TaskReport",
    "TaskSpec",
    "TrainingSplits",
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
    "encode_targets",
    "epoch_batches",
    "epoch_rng",
    "evaluate",
    "example_length",
    "file_digest",
    "format_predictions",
    "get_task",
    "gold_of",
    "integral",
    "label_indices",
    "length_batches",
    "load_spec_file",
    "macro_f1",
    "matthews_corrcoef",
    "need_splits",
    "gold_text",
    "parse_predictions",
    "pearson",
    "read_key",
    "read_predictions",
    "read_source",
    "read_split",
    "read_text_file",
    "read_training",
    "resolve_task",
    "resolve_tasks",
    "span_scores",
    "spearman",
    "spec_from_dict",
    "spec_from_record",
    "split_path",
    "split_source",
    "tag_spans",
    "text_fault",
    "task_targets",
    "train_subset",
    "value_fault",
    "write_predictions",
]
