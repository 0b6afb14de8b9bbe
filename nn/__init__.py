"""The `nn` blocks the ❄️ heads (heads/) and the 🔥 models (finetune/) share, each as its paper
writes it (after AllenNLP's `modules/`): plain torch modules and functions, no task logic.

    ScalarMix        gamma sum_l softmax(w)_l h_l             (Peters et al. 2018, eq. 1)
    BiLSTM           a packed bidirectional LSTM: padding never read
    masked_*         mean, max, min, softmax over the real positions of padded rows
    enhance          ESIM's local inference [x; x~; x - x~; x * x~]     (Chen et al. 2017)
    pool_pair        ESIM's pooling [mean a; max a; mean b; max b]
    TagScores        per-word emissions + word mask (+ lengths) of a tagger
    tag_loss         CRF negative log-likelihood or per-word cross-entropy
    decode_tags      Viterbi paths or per-word argmax

Dimension glossary: B batch, L layers, S positions (pieces or words), T words, D hidden size,
K tags, H each LSTM direction's width. Imports only torch (and pytorch-crf's objects are
passed in). Parameter names (`w`, `gamma`, `lstm.*`) are those saved runs' state dicts hold.
"""

from .bilstm import BiLSTM
from .crf import IGNORE_INDEX, TagScores, decode_tags, tag_loss
from .esim import enhance, pool_pair
from .masked import masked_max, masked_mean, masked_min, masked_softmax
from .scalar_mix import ScalarMix

__all__ = [
    "IGNORE_INDEX",
    "BiLSTM",
    "ScalarMix",
    "TagScores",
    "decode_tags",
    "enhance",
    "masked_max",
    "masked_mean",
    "masked_min",
    "masked_softmax",
    "pool_pair",
    "tag_loss",
]
