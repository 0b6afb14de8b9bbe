"""❄️ task heads trained on cached all-layer features (Peters, Ruder & Smith 2019).

    batch = collate(example_batch, targets, kind=task.kind)          # ragged store rows → padded
    head = build_head("esim", kind=..., pair=..., num_layers=L, dim=D, num_labels=K)
    output, loss = head(batch)                                        # loss None without targets
    head.predict(output) -> list                                      # classes | floats | tags

Dimension glossary: B batch, L layers, T words, S subword pieces (tokens), D hidden size,
K tags / classes; in the heads also Sa, Sb the pieces of text a and b of a pair, and H a head's
own hidden width (each LSTM direction).
"""

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: TrainConfig (the CLI) loads no torch
_WHERE = {
    "Head": ".base:Head",
    "cosine_scores": ".baseline:cosine_scores",
    "collate": ".batch:collate",
    "HeadBatch": ".batch:HeadBatch",
    "IGNORE_INDEX": ".batch:IGNORE_INDEX",
    "KINDS": ".batch:KINDS",  # defined in tasks.registry
    "BCN": ".bcn:BCN",
    "TrainConfig": ".config:TrainConfig",
    "FeatureSource": ".data:FeatureSource",
    "enhance": ".esim:enhance",
    "ESIM": ".esim:ESIM",
    "pool_pair": ".esim:pool_pair",
    "PredictConfig": ".predict:PredictConfig",
    "load_head": ".predict:load_head",
    "run_predict": ".predict:run_predict",
    "task_targets": "snowfire.tasks:task_targets",  # ❄️ and 🔥 alike
    "PooledHead": ".pooled:PooledHead",
    "predict_featureset": ".predict:predict_featureset",
    "predict_texts": ".predict:predict_texts",
    "Probe": ".probe:Probe",
    "build_head": ".registry:build_head",
    "HEADS": ".registry:HEADS",
    "HeadSpec": ".registry:HeadSpec",
    "ScalarMix": ".scalar_mix:ScalarMix",
    "BiLSTM": ".sequence:BiLSTM",
    "masked_max": ".sequence:masked_max",
    "decode_tags": ".tagger:decode_tags",
    "tag_loss": ".tagger:tag_loss",
    "Tagger": ".tagger:Tagger",
    "TagScores": ".tagger:TagScores",
    "train": ".trainer:train",
}

__all__ = [
    "BCN",
    "ESIM",
    "HEADS",
    "IGNORE_INDEX",
    "KINDS",
    "BiLSTM",
    "FeatureSource",
    "Head",
    "HeadBatch",
    "HeadSpec",
    "PooledHead",
    "PredictConfig",
    "Probe",
    "ScalarMix",
    "TagScores",
    "Tagger",
    "TrainConfig",
    "build_head",
    "collate",
    "cosine_scores",
    "decode_tags",
    "enhance",
    "load_head",
    "masked_max",
    "pool_pair",
    "predict_featureset",
    "predict_texts",
    "run_predict",
    "tag_loss",
    "task_targets",
    "train",
]


__getattr__ = lazy_exports(__name__, _WHERE)
