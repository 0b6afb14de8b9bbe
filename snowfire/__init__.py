"""snowfire from Python: cached all-layer features, ❄️ heads, 🔥 fine-tuning and the comparison
of the two ("To Tune or Not to Tune?", Peters, Ruder & Smith 2019), as functions and a PyTorch
dataset. docs/python.md walks through it.

    import snowfire
    reader = snowfire.open_store("http://colleague:8000")     # or a directory, or s3://...
    info = reader.find_featureset(encoder="minilm", task="sst2", split="train")
    data = snowfire.FeatureDataset(reader, info, data="data/")  # features + labels, a Dataset
    run = snowfire.train(snowfire.TrainConfig(...))            # the commands: typed results
    cmp = snowfire.compare(snowfire.CompareConfig(...), export_mteb="mteb/")
    sweep = snowfire.layers(snowfire.LayersConfig(...))       # which layer? .recommendation

The commands take the config objects the command line builds (`ExtractConfig`, `TrainConfig`,
`FinetuneConfig`, `CompareConfig`, `PredictConfig`, `LayersConfig`), re-exported here. Every
name loads on first use, so `import snowfire` imports neither torch nor transformers, zarr or
FastAPI.

Every package of the project lives under this root (`snowfire.cache`, `snowfire.heads`, ...).
Two of them share their name with a command: `snowfire.compare` and `snowfire.finetune` are the
packages, and calling one runs the command (`snowfire.compare(config)`), so both the package's
names and the function keep working whichever was imported first.
"""

from __future__ import annotations

import sys
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from snowfire.options import lazy_exports

try:
    __version__ = version("snowfire")
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"

#: name -> "module:attribute" it is loaded from on first use ("module": the module itself)
_WHERE = {
    "open_store": "snowfire.commands:open_store",
    "extract": "snowfire.commands:extract",
    "train": "snowfire.commands:train",
    "finetune": "snowfire.finetune",  # the package, callable: the command (below)
    "compare": "snowfire.compare",
    "predict": "snowfire.commands:predict",
    "layers": "snowfire.commands:layers",
    "TrainResult": "snowfire.results:TrainResult",
    "FinetuneResult": "snowfire.results:FinetuneResult",
    "CompareResult": "snowfire.results:CompareResult",
    "TaskVerdict": "snowfire.results:TaskVerdict",
    "PredictResult": "snowfire.results:PredictResult",
    "LayersResult": "snowfire.results:LayersResult",
    "ExtractConfig": "snowfire.extractor:ExtractConfig",
    "TrainConfig": "snowfire.heads:TrainConfig",
    "PredictConfig": "snowfire.heads:PredictConfig",
    "FinetuneConfig": "snowfire.finetune:FinetuneConfig",
    "CompareConfig": "snowfire.compare:CompareConfig",
    "LayersConfig": "snowfire.compare:LayersConfig",
    "FeatureSetInfo": "snowfire.cache:FeatureSetInfo",
    "ExampleBatch": "snowfire.cache:ExampleBatch",
    "export_mteb": "snowfire.compare:export_mteb",
    "FeatureDataset": "snowfire.dataset:FeatureDataset",
    "StreamingFeatureDataset": "snowfire.streaming:StreamingFeatureDataset",
    "LengthBucketSampler": "snowfire.sampler:LengthBucketSampler",
}

__all__ = sorted(_WHERE)  # and __version__

__getattr__ = lazy_exports(__name__, _WHERE)  # once loaded, a plain attribute


class _CommandPackage(ModuleType):
    """A package that is also its command: `snowfire.compare(config)` is
    `snowfire.commands.compare(config)`."""

    def __call__(self, *args, **kwargs):
        command = getattr(import_module("snowfire.commands"), self.__name__.rpartition(".")[2])
        return command(*args, **kwargs)


class _Root(ModuleType):
    """The `snowfire` module: the import system binds each subpackage here once loaded; the two
    named like a command become callable as it is bound."""

    def __setattr__(self, name: str, value) -> None:
        if name in ("compare", "finetune") and type(value) is ModuleType:
            value.__class__ = _CommandPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Root


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
