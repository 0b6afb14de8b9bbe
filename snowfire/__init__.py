"""snowfire from Python: cached all-layer features, ❄️ heads, 🔥 fine-tuning and the comparison
of the two ("To Tune or Not to Tune?", Peters, Ruder & Smith 2019), as functions and a PyTorch
dataset. docs/python.md walks through it.

    import snowfire
    reader = snowfire.open_store("http://colleague:8000")     # or a directory, or s3://...
    info = reader.find_featureset(encoder="minilm", task="sst2", split="train")
    data = snowfire.FeatureDataset(reader, info, data="data/")  # features + labels, a Dataset
    run = snowfire.train(snowfire.TrainConfig(...))            # the commands: typed results
    cmp = snowfire.compare(snowfire.CompareConfig(...), export_mteb="mteb/")

The commands take the config objects the command line builds (`ExtractConfig`, `TrainConfig`,
`FinetuneConfig`, `CompareConfig`, `PredictConfig`), re-exported here. Every name loads on first
use, so `import snowfire` imports neither torch nor transformers, zarr or FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("snowfire")
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"

#: name -> "module:attribute" it is loaded from on first use
_WHERE = {
    "open_store": "snowfire.commands:open_store",
    "extract": "snowfire.commands:extract",
    "train": "snowfire.commands:train",
    "finetune": "snowfire.commands:finetune",
    "compare": "snowfire.commands:compare",
    "predict": "snowfire.commands:predict",
    "TrainResult": "snowfire.results:TrainResult",
    "FinetuneResult": "snowfire.results:FinetuneResult",
    "CompareResult": "snowfire.results:CompareResult",
    "TaskVerdict": "snowfire.results:TaskVerdict",
    "PredictResult": "snowfire.results:PredictResult",
    "ExtractConfig": "extractor:ExtractConfig",
    "TrainConfig": "heads:TrainConfig",
    "PredictConfig": "heads:PredictConfig",
    "FinetuneConfig": "finetune:FinetuneConfig",
    "CompareConfig": "compare:CompareConfig",
    "FeatureSetInfo": "cache:FeatureSetInfo",
    "ExampleBatch": "cache:ExampleBatch",
    "export_mteb": "compare:export_mteb",
    "FeatureDataset": "snowfire.dataset:FeatureDataset",
    "StreamingFeatureDataset": "snowfire.streaming:StreamingFeatureDataset",
    "LengthBucketSampler": "snowfire.sampler:LengthBucketSampler",
}

__all__ = sorted(_WHERE)  # and __version__


def __getattr__(name: str):
    if name in _WHERE:
        module, _, attr = _WHERE[name].partition(":")
        value = getattr(import_module(module), attr)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    raise AttributeError(f"module 'snowfire' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
