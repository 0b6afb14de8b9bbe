"""The task output layer: the only parameters a 🔥 model adds to its encoder.

    classification  z = W dropout(x) + b,  x (B, D) -> z (B, K),  loss = cross-entropy
    regression      y = w . dropout(x) + b,  x (B, D) -> y (B,),  loss = mean squared error
    tagging         e_t = W dropout(x_t) + b,  x (B, T, D) -> e (B, T, K), and either
        softmax  loss = -sum_t log softmax(e_t)_{y_t} / #words           (BERT: Devlin et al.)
        CRF      s(y) = start_{y_1} + sum_t e_{t,y_t} + sum_{t>1} A_{y_{t-1},y_t} + end_{y_T}
                 loss = -log softmax_y s(y), mean over sentences; Viterbi decoding (pytorch-crf)

Shapes: B batch, T words, D input width, K classes or tags. Losses are computed in float32
(also under fp16 autocast).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from snowfire.nn import IGNORE_INDEX, BiLSTM, TagScores, decode_tags, tag_loss
from snowfire.tasks import KINDS

__all__ = ["IGNORE_INDEX", "KINDS", "OutputLayer", "TagScores"]


class OutputLayer(nn.Module):
    """(dropout -> BiLSTM ->) dropout -> linear (-> CRF) for one task kind; `predict` decodes
    its output."""

    def __init__(
        self,
        in_dim: int,
        kind: str,
        num_labels: int,
        *,
        dropout: float = 0.1,
        crf: bool = False,
        lstm: int = 0,
        pad_tag: int = 0,
    ) -> None:
        """in_dim: D; num_labels: K (1 for regression); crf: tagging only; lstm: tagging only,
        a BiLSTM of this many units per direction between the encoder's word vectors and the
        linear layer (the paper's Table 5 "+BiLSTM"; 0: none); pad_tag: the tag predicted for
        words the encoder did not see (the index of "O")."""
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"OutputLayer: expected kind in {KINDS}, got {kind!r}")
        if kind == "regression" and num_labels != 1:
            raise ValueError(f"OutputLayer: regression has 1 output, got num_labels={num_labels}")
        if kind != "regression" and num_labels < 2:
            raise ValueError(f"OutputLayer: expected >= 2 labels for {kind}, got {num_labels}")
        if crf and kind != "tagging":
            raise ValueError(f"OutputLayer: a CRF is for tagging, not {kind}")
        if lstm and kind != "tagging":
            raise ValueError(f"OutputLayer: the BiLSTM is for tagging, not {kind}")
        self.kind, self.pad_tag = kind, pad_tag
        self.dropout = nn.Dropout(dropout)
        self.lstm: BiLSTM | None
        if lstm:
            self.lstm = BiLSTM(in_dim, lstm)
            in_dim = self.lstm.output_dim  # 2 * lstm
        else:
            self.lstm = None
        self.linear = nn.Linear(in_dim, num_labels)
        if crf:
            from torchcrf import CRF

            self.crf = CRF(num_labels, batch_first=True)
        else:
            self.crf = None

    def forward(
        self,
        x: torch.Tensor,  # (B, D) or (B, T, D)
        labels: torch.Tensor | None = None,  # (B,) long | (B,) float | (B, T) long
        mask: torch.Tensor | None = None,  # (B, T) bool, tagging
        lengths: torch.Tensor | None = None,  # (B,) long, tagging
    ) -> tuple[torch.Tensor | TagScores, torch.Tensor | None]:
        if self.lstm is not None:
            if mask is None:
                raise ValueError("OutputLayer: tagging needs the (B, T) word mask")
            x = self.lstm(self.dropout(x), mask)  # (B, T, 2H)
        z = self.linear(self.dropout(x)).float()  # (B, K) | (B, 1) | (B, T, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
            return z, None if labels is None else F.mse_loss(z, labels.float())
        if self.kind == "classification":
            return z, None if labels is None else F.cross_entropy(z, labels)
        if mask is None:
            raise ValueError("OutputLayer: tagging needs the (B, T) word mask")
        scores = TagScores(z, mask, mask.sum(dim=1) if lengths is None else lengths)
        return scores, tag_loss(scores, labels, self.crf)

    @torch.no_grad()
    def predict(self, output: torch.Tensor | TagScores) -> list:
        """Class indices, floats, or one list of tag indices per sentence (its full length)."""
        if isinstance(output, torch.Tensor):  # classification (B, K), regression (B,)
            return (
                output.argmax(dim=-1).tolist() if self.kind == "classification" else output.tolist()
            )
        assert output.lengths is not None  # forward gives every sentence's length
        paths = decode_tags(output, self.crf)  # the words the encoder saw
        return [
            p + [self.pad_tag] * (int(n) - len(p))
            for p, n in zip(paths, output.lengths.tolist(), strict=True)
        ]
