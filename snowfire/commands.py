"""The commands as functions: each takes the frozen config the command line builds from its
flags (and a job from its params), runs what `snowfire <command>` runs, and returns a typed
result (snowfire/results.py). A config is checked when it is built, so a bad field fails
before anything runs, with the field named.

    info = snowfire.extract(ExtractConfig(encoder="minilm", task="sst2", data=D, store=S))
    run = snowfire.train(TrainConfig(store=S, encoder="minilm", task="sst2", head="linear",
                                     data=D, out="runs/sst2"))
    run.score("dev"), run.metrics, run.scalar_mix
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snowfire.cache import FeatureSetInfo, Reader
    from snowfire.compare import CompareConfig, LayersConfig
    from snowfire.extractor import ExtractConfig
    from snowfire.finetune import FinetuneConfig
    from snowfire.heads import PredictConfig, TrainConfig

    from .results import (
        CompareResult,
        FinetuneResult,
        LayersResult,
        PredictResult,
        TrainResult,
    )


def _expect(config: object, cls: type, who: str) -> None:
    if not isinstance(config, cls):
        raise TypeError(
            f"snowfire.{who}: expected a {cls.__name__} (snowfire.{cls.__name__}(...)), "
            f"got {type(config).__name__}"
        )


def open_store(location: str | os.PathLike) -> Reader:
    """The features at `location`, to read: a store directory, an `s3://bucket/prefix` on
    object storage, or a snowfire service at `http(s)://host:port`. Every one answers the
    same `cache.Reader` methods (`list_featuresets`, `find_featureset`, `read`, ...) with the
    same bytes (tests/test_reader_contract.py)."""
    from snowfire.cache import open_reader

    if not isinstance(location, (str, os.PathLike)) or not str(location):
        raise TypeError(f"snowfire.open_store: expected a path or URL, got {location!r}")
    return open_reader(location)


def extract(config: ExtractConfig) -> list[FeatureSetInfo]:
    """`snowfire extract`: run the encoder once over the config's texts and store all layers.
    Every feature set made (or found complete in the store), one per split or input file."""
    from snowfire.extractor import ExtractConfig, run_extract

    _expect(config, ExtractConfig, "extract")
    return run_extract(config)


def train(config: TrainConfig) -> TrainResult:
    """`snowfire train`: fit a ❄️ head on cached features (the encoder never runs); writes
    the run directory `config.out`. A finished run of the same config there is returned as it
    is; one of another config is refused (rundir.RunConfigError naming the fields)."""
    from snowfire.heads import TrainConfig
    from snowfire.heads import train as train_head

    from .results import TrainResult

    _expect(config, TrainConfig, "train")
    return TrainResult.from_run(config.out, train_head(config))


def finetune(config: FinetuneConfig) -> FinetuneResult:
    """`snowfire finetune`: 🔥 fine-tune the whole encoder (the baseline); re-running the same
    config on the same `config.out` resumes it. With `grid` set, the grid and its chosen cell."""
    from snowfire.finetune import FinetuneConfig
    from snowfire.finetune import train as finetune_encoder

    from .results import FinetuneResult

    _expect(config, FinetuneConfig, "finetune")
    return FinetuneResult.from_run(config.out, finetune_encoder(config))


def compare(
    config: CompareConfig, *, export_mteb: str | os.PathLike | None = None
) -> CompareResult:
    """`snowfire compare`: per task the features, the ❄️ heads and 🔥 for every seed, the
    zero-training baseline and a verdict; OUT/results.json, table.md and plots. Finished cells
    are read back, so a rerun recomputes nothing. `export_mteb`: also write MTEB-shaped results
    there (`CompareResult.export_mteb`)."""
    from snowfire.compare import CompareConfig, run_compare

    from .results import CompareResult

    _expect(config, CompareConfig, "compare")
    run_compare(config)
    result = CompareResult.from_out(config.out)
    if export_mteb is not None:
        result.export_mteb(Path(export_mteb))
    return result


def layers(config: LayersConfig) -> LayersResult:
    """`snowfire layers`: which layer should I use? Per-layer and cumulative probes of the
    config's task on stored features (the encoder never runs), seeds with intervals, the
    expected layer, selectivity over a control task and the answer in words; written to
    `config.out` when given, where a finished sweep of the same content key is read back."""
    from snowfire.compare import LayersConfig, run_layers

    from .results import LayersResult

    _expect(config, LayersConfig, "layers")
    return LayersResult.from_answer(run_layers(config), config.out)


def predict(config: PredictConfig) -> PredictResult:
    """`snowfire predict`: a saved ❄️ run's head on a feature set of a store, or on a text
    file its encoder extracts first; a saved 🔥 run of any method (finetune/predict.py) on a
    text file. Writes `config.out` and returns the predictions."""
    import json

    from snowfire.heads import PredictConfig, run_predict
    from snowfire.rundir import CONFIG

    from .results import PredictResult

    _expect(config, PredictConfig, "predict")
    recorded = Path(config.run) / CONFIG
    if recorded.is_file() and "finetune" in json.loads(recorded.read_text()):
        from snowfire.finetune import predict_run_texts

        if config.input is None:
            raise ValueError(
                f"predict: {config.run} is a 🔥 run: it reads texts (--input FILE), "
                "not stored features (--featureset)"
            )
        labels = predict_run_texts(config.run, config.input, config.out, device=config.device)
        return PredictResult(out=Path(config.out), predictions=labels)
    return PredictResult(out=Path(config.out), predictions=run_predict(config))
