"""❄️ task heads trained on cached all-layer features (Peters, Ruder & Smith 2019).

    batch = collate(example_batch, targets, kind=task.kind)          # ragged store rows → padded
    head = build_head("esim", kind=..., pair=..., num_layers=L, dim=D, num_labels=K)
    output, loss = head(batch)                                        # loss None without targets
    head.predict(output) -> list                                      # classes | floats | tags

Dimension glossary: B batch, L layers, T words, S subword pieces (tokens), D hidden size,
K tags / classes; in the heads also Sa, Sb the pieces of text a and b of a pair, and H a head's
own hidden width (each LSTM direction). The blocks they share with the 🔥 models (scalar mix,
BiLSTM, masked ops, ESIM's enhancement, CRF outputs) are `snowfire.nn`'s.
"""

_WHERE = {
    "Head": "base",
    "cosine_scores": "baseline",
    "collate": "batch",
    "HeadBatch": "batch",
    "KINDS": "batch",  # defined in tasks.registry
    "BCN": "bcn",
    "TrainConfig": "config",
    "FeatureSource": "data",
    "ESIM": "esim",
    "PredictConfig": "predict",
    "load_head": "predict",
    "run_predict": "predict",
    "task_targets": "data",
    "PooledHead": "pooled",
    "predict_featureset": "predict",
    "predict_texts": "predict",
    "Probe": "probe",
    "build_head": "registry",
    "HEADS": "registry",
    "HeadSpec": "registry",
    "Tagger": "tagger",
    "train": "trainer",
}

__all__ = [
    "BCN",
    "ESIM",
    "HEADS",
    "KINDS",
    "FeatureSource",
    "Head",
    "HeadBatch",
    "HeadSpec",
    "PooledHead",
    "PredictConfig",
    "Probe",
    "Tagger",
    "TrainConfig",
    "build_head",
    "collate",
    "cosine_scores",
    "load_head",
    "predict_featureset",
    "predict_texts",
    "run_predict",
    "task_targets",
    "train",
]


def __getattr__(name: str):
    # names load on first use: `from heads.config import TrainConfig` (the CLI) loads no torch
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
