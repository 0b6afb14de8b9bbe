"""Predictions of a saved 🔥 run of any method on new texts, never retrained.

model, spec = load_run(RUN)                  the run's model: its recorded config rebuilds
                                             the architecture (a partial method: on the
                                             pretrained encoder of the recorded identity),
                                             RUN/best.pt fills what it trained
predict_run_texts(RUN, TEXTS, OUT)           a text file (`snowfire extract --input`'s
                                             formats) -> OUT, the run's .tsv format
"""

from __future__ import annotations

import json
from pathlib import Path

from snowfire.extractor import default_device
from snowfire.rundir import BEST, CONFIG, METRICS


def load_run(run: str | Path, device: str | None = None):
    """(the model in eval mode, the task spec) of a finished 🔥 run."""
    import torch

    from snowfire.tasks import spec_from_record

    from .config import FinetuneConfig
    from .model import build_model

    run = Path(run)
    if not (run / METRICS).is_file() or not (run / BEST).is_file():
        raise FileNotFoundError(f"{run}: not a finished 🔥 run (no {METRICS} or {BEST})")
    record = json.loads((run / CONFIG).read_text())
    if "finetune" not in record:
        raise ValueError(f"{run}/{CONFIG}: not a 🔥 run (no 'finetune' section)")
    if "grid" in record:  # a grid: its chosen run
        return load_run(record["grid"]["chosen"]["run"], device)
    spec = spec_from_record(record["task"])
    cfg = FinetuneConfig.from_json(record["finetune"] | {"init_head": None})
    model, identity = build_model(cfg, spec)
    recorded = record["encoder"]
    for key in ("weights_sha256", "options_sha256"):  # the encoder it trained on, unchanged
        if key in recorded and recorded[key] != identity.get(key):
            raise ValueError(
                f"{run}: the encoder {cfg.encoder} is not the one the run trained "
                f"on ({key} {identity.get(key)} vs {recorded[key]})"
            )
    target = default_device(device)
    model.load_trained(torch.load(run / BEST, map_location=target, weights_only=True))
    return model.to(target).eval(), spec


def predict_run_texts(
    run: str | Path,
    texts: str | Path,
    out: str | Path,
    *,
    device: str | None = None,
    batch_size: int = 32,
) -> list:
    """Predict every text of `texts` with the 🔥 run; write `out`; the decoded labels."""
    from snowfire.tasks import decode, read_text_file, write_predictions

    from .model import predict

    model, spec = load_run(run, device)
    examples = read_text_file(texts)
    if spec.pair and any(e.words_b is None for e in examples):
        raise ValueError(f"{texts}: {spec.name} is a pair task: every line needs two texts")
    device_used = next(model.parameters()).device
    labels = decode(spec, predict(model, examples, batch_size, device_used))
    write_predictions(Path(out), spec, examples, labels)
    return labels
