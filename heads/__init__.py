"""❄️ task heads trained on cached all-layer features (Peters, Ruder & Smith 2019).

    batch = collate(example_batch, targets, kind=task.kind)          # ragged store rows → padded
    head = build_head("esim", kind=..., pair=..., num_layers=L, dim=D, num_labels=K)
    output, loss = head(batch)                                        # loss None without targets
    head.predict(output) -> list                                      # classes | floats | tags

Dimension glossary: B batch, L layers, T words, S subword pieces (tokens), D hidden size,
K tags / classes; in the heads also Sa, Sb the pieces of text a and b of a pair, and H a head's
own hidden width (each LSTM direction).
"""

from .base import Head
from .batch import IGNORE_INDEX, KINDS, HeadBatch, collate
from .bcn import BCN
from .esim import ESIM
from .pooled import PooledHead
from .probe import Probe
from .registry import HEADS, HeadSpec, build_head
from .scalar_mix import ScalarMix
from .tagger import Tagger, TagScores
from .train import TrainConfig, train

__all__ = [
    "BCN",
    "ESIM",
    "HEADS",
    "IGNORE_INDEX",
    "KINDS",
    "Head",
    "HeadBatch",
    "HeadSpec",
    "PooledHead",
    "Probe",
    "ScalarMix",
    "TagScores",
    "Tagger",
    "TrainConfig",
    "build_head",
    "collate",
    "train",
]
