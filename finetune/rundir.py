"""The files of a fine-tuning run directory, laid out like a ❄️ head run (`heads/trainer.py`):

RUN/config.json             the FinetuneConfig, resolved learning rates, encoder identity,
                            versions, example counts, seconds
RUN/metrics.json            {split: {metric: value}} for every split with gold labels
RUN/log.jsonl               one line per epoch: train loss, dev metrics, trainable groups
RUN/predictions/<split>.tsv `index gold predicted` (tab-separated, with that header), or
                            for tagging CoNLL lines `token gold predicted`, a blank line
                            after each sentence
RUN/encoder/                the fine-tuned encoder (HF folder, or ELMo options + HDF5)
RUN/checkpoint.pt           everything needed to resume (written atomically; removed when
                            the run finishes)
RUN/best.pt                 model weights of the best dev epoch (evaluated and saved)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from tasks.predictions import decode, gold_of, read_predictions, write_predictions

__all__ = ["BEST", "CHECKPOINT", "atomic_save", "decode", "gold_of", "read_predictions",
           "write_json", "write_log", "write_predictions"]  # fmt: skip

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temporary file, then rename: a kill never leaves half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)


def write_log(path: Path, history: list[dict]) -> None:
    """The whole per-epoch log (rewritten, so a resumed run never repeats an epoch)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in history))
    os.replace(tmp, path)
