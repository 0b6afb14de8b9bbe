"""Predictions of a saved ❄️ run on other features: the head rebuilt from RUN/head.json and
RUN/weights.safetensors, never retrained.

    predict_featureset(run, store, featureset, out)   features already in a store
    predict_texts(run, texts, out, store=None)        a text file: the run's encoder extracts
                                                      it first (into `store`, or a temporary one)

The output has the run's `predictions/<split>.tsv` format (tasks/predictions.py); the gold
column is filled when the feature set is a split of the run's task and its data is at hand.
`PredictConfig` is `snowfire predict`'s config (its flags are its fields); `run_predict(config)`
runs either form.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snowfire.cache import identity_content, open_reader
from snowfire.options import check, option
from snowfire.rundir import CONFIG, HEAD, WEIGHTS
from snowfire.tasks import (
    Example,
    decode,
    get_task,
    read_split,
    spec_from_record,
    write_predictions,
)


@dataclass(frozen=True)
class PredictConfig:
    """One `snowfire predict`: a saved ❄️ run's head on a feature set or on a text file."""

    run: str = option(
        help="a finished `snowfire train` run directory, or a `snowfire finetune` "
        "one (any method; texts only: --input)"
    )
    out: str = option(help="predictions file (the run's .tsv format)")
    featureset: str | None = option(None, "feature-set id in --store (see snowfire ls)")
    input: str | None = option(None, "a text file: the run's encoder extracts it first")
    store: str | None = option(
        None,
        "store directory or http://HOST:PORT (with --featureset; with --input, where the "
        "extraction is kept: default a temporary store)",
    )
    data: str | None = option(None, "task data directory for the gold column (default: the run's)")
    device: str | None = option(None, "cpu, cuda (with --input: where the encoder runs)")

    def __post_init__(self) -> None:
        check(self)
        for name in ("run", "out"):
            if not getattr(self, name):
                raise ValueError(f"PredictConfig.{name}: expected a non-empty string")
        if (self.featureset is None) == (self.input is None):
            raise ValueError(
                "PredictConfig: expected exactly one of featureset (with store) and input, got "
                + ("both" if self.featureset is not None else "neither")
            )
        if self.featureset is not None and not self.store:
            raise ValueError(
                "PredictConfig.store: --featureset needs --store (the store that holds it)"
            )


def run_predict(config: PredictConfig) -> list:
    """`snowfire predict`: the decoded predictions, also written to `config.out`."""
    if not isinstance(config, PredictConfig):
        raise TypeError(f"run_predict: expected a PredictConfig, got {type(config).__name__}")
    if config.featureset is not None:
        assert config.store is not None  # __post_init__: a feature set comes with its store
        return predict_featureset(
            config.run, config.store, config.featureset, config.out, data=config.data
        )
    assert config.input is not None  # __post_init__: exactly one of featureset and input
    return predict_texts(
        config.run, config.input, config.out, store=config.store, device=config.device
    )


def load_head(run: str | Path):
    """(head in eval mode, the run's head.json) from a finished ❄️ run directory."""
    from safetensors.torch import load_file

    from .registry import build_head

    run = Path(run)
    meta_path = run / HEAD
    if not meta_path.is_file():
        raise FileNotFoundError(
            f"{run}: no head.json — not a finished ❄️ run, or one made before heads saved it "
            "(train it again to predict from it)"
        )
    meta = json.loads(meta_path.read_text())
    head = build_head(**meta["head"])
    head.load_state_dict(load_file(str(run / WEIGHTS)))
    return head.eval(), meta


def run_task(meta: dict[str, Any]):
    """The task a run was trained on, from its head.json alone: the recorded spec (a user's
    task: kind, labels, pair, where its files were), else the registered task of that name
    (runs made before the spec was recorded)."""
    if "task_spec" in meta:
        return spec_from_record(meta["task_spec"])
    return get_task(meta["task"])


def _examples(run: Path, meta: dict[str, Any], info, reader, data: str | None) -> list[Example]:
    """The examples behind a feature set: the task split's own (with gold) when it is one of
    the run's task and its file is found, else the stored words without gold."""
    if info.task == meta["task"] and info.split is not None:
        data = data or json.loads((run / CONFIG).read_text())["train"]["data"]
        try:
            examples = read_split(run_task(meta), data, info.split)
        except (OSError, ValueError):  # the data moved, or the file changed
            examples = None
        if examples is not None and len(examples) == info.num_examples:
            return examples
    texts = reader.featureset_texts(info.id)
    return [
        Example(index=i, words_a=tuple(t["a"]), words_b=None if t["b"] is None else tuple(t["b"]))
        for i, t in enumerate(texts)
    ]


def predict_featureset(
    run: str | Path,
    store: str,
    featureset: str,
    out: str | Path,
    *,
    data: str | None = None,
    batch_size: int = 64,
) -> list:
    """Predict every example of `featureset` in `store` with the run's head; write `out`."""
    import torch

    from .batch import collate
    from .data import FeatureSource

    run = Path(run)
    head, meta = load_head(run)
    spec = run_task(meta)
    reader = open_reader(store)
    info = reader.get_featureset(featureset)
    if identity_content(info.encoder) != identity_content(meta["encoder"]):
        raise ValueError(
            f"feature set {featureset} was made by another encoder than the run's head was "
            f"trained on ({info.encoder.get('spec')} vs {meta['encoder'].get('spec')}): "
            "extract the texts with the run's encoder"
        )
    source = FeatureSource(reader, info, meta["layers"], max_bytes=int(4e9))
    word_level = spec.kind == "tagging"
    preds: list = [None] * info.num_examples
    with torch.inference_mode():
        for idx, eb in source.iterate(batch_size):
            out_, _ = head(collate(eb, None, kind=spec.kind, word_level=word_level))
            for i, p in zip(idx, head.predict(out_), strict=True):
                preds[i] = p
    labels = decode(spec, preds)
    write_predictions(Path(out), spec, _examples(run, meta, info, reader, data), labels)
    return labels


def predict_texts(
    run: str | Path,
    texts: str | Path,
    out: str | Path,
    *,
    store: str | None = None,
    device: str | None = None,
) -> list:
    """Extract `texts` (a text file, as `snowfire extract --input` reads it) with the run's
    encoder (every option its identity records: `ExtractConfig.from_identity`), then predict
    them with the run's head."""
    from snowfire.extractor import ExtractConfig, run_extract

    _, meta = load_head(run)
    with tempfile.TemporaryDirectory(prefix="snowfire-predict-") as tmp:
        target = store or str(Path(tmp) / "store")
        try:
            config = ExtractConfig.from_identity(
                meta["encoder"],
                store=target,
                input=str(texts),
                dtype=meta["dtype"],
                device=device,
                progress=False,
            )
        except ValueError as err:
            raise ValueError(f"{run}/head.json: cannot extract {texts}: {err}") from err
        (info,) = run_extract(config)
        return predict_featureset(run, target, info.id, out)
