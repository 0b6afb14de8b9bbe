"""Sequence taggers for NER (Peters, Ruder & Smith 2019, sec. 3 and Table 5; after Lample et al.
2016 and Peters et al. 2018): one tag per word, each word read at its first piece.

    w_t = ScalarMix(h_t)                                  mixed features, one row per word
    x_t = BiLSTM_2(w)_t            (bilstm-*)             two-layer BiLSTM, or x_t = w_t (crf)
    e_t = W dropout(x_t) + b                              emissions         (B, T, K)
    (dropout on the mixed features, and again on the BiLSTM states when there is a BiLSTM)

    softmax output: p(y_t | x) = softmax(e_t),   loss = -sum_t log p(y_t | x) / #words
    CRF output (Lafferty et al. 2001):
        s(y) = start_{y_1} + sum_t e_{t, y_t} + sum_{t>1} A_{y_{t-1}, y_t} + end_{y_T}
        p(y | x) = exp s(y) / sum_{y'} exp s(y'),   loss = -log p(y | x), mean over sentences
        prediction: argmax_y s(y) by Viterbi (pytorch-crf)

Word-piece variant (`over_pieces=True`, the paper's BERT setup): the BiLSTM runs over every
piece of the sentence, then each word takes the BiLSTM state at its first piece.
"""

from __future__ import annotations

import torch
from torch import nn
from torchcrf import CRF

from snowfire.nn import BiLSTM, ScalarMix, TagScores, decode_tags, tag_loss

from .base import Head
from .batch import HeadBatch

OUTPUTS = ("crf", "softmax")


class Tagger(Head):
    """(BiLSTM →) linear → CRF or softmax over the scalar-mixed first pieces of the words."""

    name = "tagger"
    kinds = ("tagging",)
    texts = "single"
    models = "one tag per word"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str = "tagging",
        output: str = "crf",
        lstm_layers: int = 2,
        hidden: int = 200,
        dropout: float = 0.5,
        over_pieces: bool = False,
    ):
        """output: "crf" or "softmax"; lstm_layers: 0 for no BiLSTM (linear → output);
        hidden: each LSTM direction's width (unused without one); dropout: on the mixed
        features, between LSTM layers and on the BiLSTM states; over_pieces: run the BiLSTM
        over all pieces."""
        self.name = f"{'bilstm-' if lstm_layers else ''}{output}"  # before the kind check
        super().__init__(num_layers, dim, num_labels, kind=kind)
        if output not in OUTPUTS:
            raise ValueError(f"tagger output must be one of {OUTPUTS}, got {output!r}")
        if lstm_layers < 0:
            raise ValueError(f"lstm_layers must be >= 0, got {lstm_layers}")
        if over_pieces and lstm_layers == 0:
            raise ValueError(
                "over_pieces needs a BiLSTM (lstm_layers > 0): without one each "
                "word's first piece is all the tagger reads anyway"
            )
        self.output, self.over_pieces = output, over_pieces
        self.mix = ScalarMix(num_layers)
        self.dropout = nn.Dropout(dropout)
        self.encoder = BiLSTM(dim, hidden, lstm_layers, dropout) if lstm_layers else None
        self.emit = nn.Linear(self.encoder.output_dim if self.encoder else dim, num_labels)
        self.crf = CRF(num_labels, batch_first=True) if output == "crf" else None

    def forward(self, batch: HeadBatch) -> tuple[TagScores, torch.Tensor | None]:
        self.check_batch(batch)
        if not batch.is_word_level:
            raise ValueError("the tagger reads word-level batches: collate with kind='tagging'")
        mask = batch.word_mask  # (B, T)
        assert mask is not None and batch.first_piece_index is not None  # word-level
        if self.over_pieces:
            assert self.encoder is not None  # __init__: over_pieces needs a BiLSTM
            x = self.encoder(self.dropout(self.mix(batch.features)), batch.mask)  # (B, S, 2H)
            index = batch.first_piece_index.unsqueeze(-1).expand(-1, -1, x.shape[-1])  # (B, T, 2H)
            x = torch.gather(x, 1, index) * mask.unsqueeze(-1)  # (B, T, 2H)
        else:
            x = self.dropout(self.mix(batch.word_features))  # (B, T, D)
            if self.encoder is not None:
                x = self.encoder(x, mask)  # (B, T, 2H)
        if self.encoder is not None:  # (without one, x is already dropped out)
            x = self.dropout(x)  # (B, T, 2H)
        emissions = self.emit(x)  # (B, T, K)
        scores = TagScores(emissions, mask)
        return scores, self.tag_loss(scores, batch.labels)

    def tag_loss(self, scores: TagScores, tags: torch.Tensor | None) -> torch.Tensor | None:
        """CRF negative log-likelihood (mean over sentences) or token cross-entropy."""
        return tag_loss(scores, tags, self.crf)

    def predict(self, output: TagScores) -> list[list[int]]:
        """One list of tag indices per example, as long as its number of words."""
        return decode_tags(output, self.crf)
