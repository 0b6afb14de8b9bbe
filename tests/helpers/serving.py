"""Runs of every kind on the tiny BERT, under one HOME, for the prediction tests.

train_runs(home, bert, data)   HOME/runs/<name> for each of RUNS, HOME/store the features
RUNS                           name -> (side, task, head or method)
inputs_for(task, n, seed)      fresh examples in the task's form (no stored text)
write_input(path, form, values) the same as a `snowfire predict --input` file
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from . import WORDS

#: Every run kind the service serves: ❄️ heads (classification, regression, pairs, tagging)
#: and 🔥 methods (three on the shared encoder, one full).
RUNS = {
    "sst2-linear": ("snow", "sst2", "linear"),
    "sst2-bcn": ("snow", "sst2", "bcn"),
    "stsb-mlp": ("snow", "stsb", "mlp"),
    "stsb-esim": ("snow", "stsb", "esim"),
    "ner-tagger": ("snow", "conll2003", "bilstm-crf"),
    "stsb-adapter": ("fire", "stsb", "adapter"),
    "stsb-lora": ("fire", "stsb", "lora"),
    "stsb-bitfit": ("fire", "stsb", "bitfit"),
    "sst2-full": ("fire", "sst2", "full"),
}
_SMALL = {
    "bcn": {"ff_dim": 8, "hidden": 6, "maxout_dims": [8], "pool_size": 2},
    "esim": {"hidden": 6},
    "bilstm-crf": {"hidden": 6},
}


def train_runs(
    home: Path, bert: Path, data: Path, names=None, out: Path | None = None, **extra
) -> dict[str, Path]:
    """Extract the tasks into HOME/store, then train the runs `names` of RUNS (default all;
    1-2 epochs each) into HOME/runs/<name> (one run: `out` if given), with `extra` config
    fields (pause_at=1: a run paused after its first epoch)."""
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.finetune import FinetuneConfig
    from snowfire.finetune import train as finetune
    from snowfire.heads import TrainConfig
    from snowfire.heads import train as train_head

    encoder, store = f"hf:{bert}", str(home / "store")
    chosen = {n: RUNS[n] for n in (names or RUNS)}
    for task in sorted({task for _, task, _ in chosen.values()}):
        run_extract(
            ExtractConfig(encoder=encoder, task=task, data=str(data), store=store, progress=False)
        )
    runs = {}
    for name, (side, task, kind) in chosen.items():
        where = out or home / "runs" / name
        common = dict(encoder=encoder, task=task, data=str(data), out=str(where), progress=False)
        common |= extra
        if side == "snow":
            hparams = _SMALL.get(kind, {})
            train_head(TrainConfig(store=store, head=kind, epochs=2, hparams=hparams, **common))
        else:
            finetune(FinetuneConfig(method=kind, epochs=1, batch_size=8, lr=1e-3, **common))
        runs[name] = where
    return runs


def inputs_for(task: str, n: int = 5, seed: int = 0) -> tuple[str, list]:
    """(form, values): n fresh examples for `task` (texts, pairs or tokens)."""
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))

    if task == "stsb":
        return "pairs", [[sentence(), sentence()] for _ in range(n)]
    if task == "conll2003":
        return "tokens", [sentence().split() for _ in range(n)]
    return "texts", [sentence() for _ in range(n)]


def write_input(path: Path, form: str, values: list) -> Path:
    """A `snowfire predict --input` file holding the same examples."""
    if form == "texts":
        path.write_text("".join(f"{t}\n" for t in values))
    elif form == "pairs":
        path.write_text("".join(json.dumps({"text_a": a, "text_b": b}) + "\n" for a, b in values))
    else:
        path.write_text("".join(json.dumps({"tokens": t}) + "\n" for t in values))
    return path
