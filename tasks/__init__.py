"""Task datasets and metrics: readers for each release's own format, and scoring.

    from tasks import get_task, read_split, evaluate
    examples = read_split("stsb", data_dir, "dev")   # list[Example], index = position
    scores = evaluate("stsb", gold, pred)            # {"pearson": ..., "spearman": ...}

`DEMO_DATA_DIR` is a small sample (SST-2, STS-B) laid out like a data directory.
"""

from pathlib import Path

from .example import Example
from .metrics import accuracy, binary_f1, matthews_corrcoef, pearson, spearman
from .predictions import decode, gold_of, read_predictions, write_predictions
from .readers import available_splits, read_split
from .registry import KINDS, SPLITS, TASK_NAMES, TASKS, TaskSpec, evaluate, get_task
from .spans import span_scores, tag_spans
from .subset import train_subset
from .text_file import read_text_file

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo"

__all__ = [
    "DEMO_DATA_DIR",
    "KINDS",
    "SPLITS",
    "TASK_NAMES",
    "TASKS",
    "Example",
    "TaskSpec",
    "accuracy",
    "available_splits",
    "binary_f1",
    "decode",
    "evaluate",
    "get_task",
    "gold_of",
    "matthews_corrcoef",
    "pearson",
    "read_predictions",
    "read_split",
    "read_text_file",
    "span_scores",
    "spearman",
    "tag_spans",
    "train_subset",
    "write_predictions",
]
