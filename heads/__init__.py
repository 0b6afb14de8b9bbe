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

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: TrainConfig (the CLI) loads no torch
_WHERE = {
    "Head": ".base:Head",
    "cosine_scores": ".baseline:cosine_scores",
    "collate": ".batch:collate",
    "HeadBatch": ".batch:HeadBatch",
    "KINDS": ".batch:KINDS",  # defined in tasks.registry
    "BCN": ".bcn:BCN",
    "TrainConfig": ".config:TrainConfig",
    "FeatureSource": ".data:FeatureSource",
    "ESIM": ".esim:ESIM",
    "PredictConfig": ".predict:PredictConfig",
    "load_head": ".predict:load_head",
    "run_predict": ".predict:run_predict",
    "task_targets": "snowfire.tasks:task_targets",  # ❄️ and 🔥 alike
    "PooledHead": ".pooled:PooledHead",
    "predict_featureset": ".predict:predict_featureset",
    "predict_texts": ".predict:predict_texts",
    "Probe": ".probe:Probe",
    "FIRE_POOL": ".probe:FIRE_POOL",
    "build_head": ".registry:build_head",
    "HEADS": ".registry:HEADS",
    "HeadSpec": ".registry:HeadSpec",
    "Tagger": ".tagger:Tagger",
    "train": ".trainer:train",
    "continue_from": ".continuation:continue_from",
    "batches_in_order": ".data:batches_in_order",
    "PREDICT_BATCH": ".predict:PREDICT_BATCH",
    "head_predictions": ".predict:head_predictions",
    "run_task": ".predict:run_task",
}

__all__ = [
    "BCN",
    "FIRE_POOL",
    "PREDICT_BATCH",
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
    "batches_in_order",
    "build_head",
    "collate",
    "continue_from",
    "cosine_scores",
    "head_predictions",
    "load_head",
    "predict_featureset",
    "predict_texts",
    "run_predict",
    "run_task",
    "task_targets",
    "train",
]


__getattr__ = lazy_exports(__name__, _WHERE)
