"""Biattentive Classification Network (McCann et al. 2017, "Learned in Translation", sec. 5),
for one text, which is attended by itself (X = Y), as in Peters, Ruder & Smith (2019) for SA.

    w_s = ScalarMix(h_s)                                   mixed features   (Peters et al. 2018)
    X   = BiLSTM(ReLU(W_f w + b_f))                        encoder          (B, S, 2H)
    A   = X X^T                                            affinities       (B, S, S)
    C   = softmax_keys(A) X                                context          (B, S, 2H)
    X_y = BiLSTM([X; X - C; X * C])                        integrate        (B, S, 2H)
    b   = softmax_s(X_y v)                                 self-attention   (B, S)
    x   = [max_s X_y; mean_s X_y; min_s X_y; X_y^T b]      pool             (B, 8H)
    z   = Maxout(x)                                        classifier       (B, K)

The self-attentive score has no bias: a constant added to every position leaves the softmax
unchanged (its gradient would be zero). Maxout (Goodfellow et al. 2013) keeps, for each output
unit, the largest of `pool_size` linear pieces; as in AllenNLP's BCN every layer, the last
included, is a maxout layer. Defaults follow AllenNLP's BCN configuration for SST.
"""

from __future__ import annotations

import torch
from torch import nn

from snowfire.nn import BiLSTM, ScalarMix, masked_max, masked_mean, masked_min, masked_softmax

from .base import Head
from .batch import HeadBatch


class Maxout(nn.Module):
    """Layers z_j = max_p (W_p x + b_p)_j, with dropout before each but the first."""

    def __init__(self, input_dim: int, dims: tuple[int, ...], pool_size: int, dropout: float):
        super().__init__()
        sizes = (input_dim, *dims[:-1])
        self.pool_size = pool_size
        self.layers = nn.ModuleList(
            nn.Linear(i, o * pool_size) for i, o in zip(sizes, dims, strict=True)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            if i:
                x = self.dropout(x)  # (B, O)
            pieces = layer(x)  # (B, O * P)
            x = pieces.view(*pieces.shape[:-1], -1, self.pool_size).max(dim=-1).values  # (B, O)
        return x


class BCN(Head):
    """Biattentive classification network over the scalar-mixed features of one text."""

    name = "bcn"
    kinds = ("classification", "regression")
    texts = "single"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str,
        ff_dim: int = 300,
        hidden: int = 300,
        maxout_dims: tuple[int, ...] = (1200, 600),
        pool_size: int = 4,
        dropout: float = 0.5,
        integrator_dropout: float = 0.1,
        output_dropout: float = 0.2,
    ):
        """ff_dim: pre-encoder feedforward width; hidden: each LSTM direction's width;
        maxout_dims: hidden maxout widths (a last maxout layer gives the K outputs);
        dropout: on the mixed features; integrator_dropout: on the integrator's input;
        output_dropout: between maxout layers."""
        super().__init__(num_layers, dim, num_labels, kind=kind)
        self.mix = ScalarMix(num_layers)
        self.dropout = nn.Dropout(dropout)
        self.feedforward = nn.Sequential(nn.Linear(dim, ff_dim), nn.ReLU())
        self.encoder = BiLSTM(ff_dim, hidden)
        self.integrator_dropout = nn.Dropout(integrator_dropout)
        self.integrator = BiLSTM(3 * 2 * hidden, hidden)
        self.attend = nn.Linear(2 * hidden, 1, bias=False)
        self.output = Maxout(4 * 2 * hidden, (*maxout_dims, num_labels), pool_size, output_dropout)

    def forward(self, batch: HeadBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        self.check_batch(batch)
        mask = batch.mask  # (B, S)
        w = self.dropout(self.mix(batch.features))  # (B, S, D)
        x = self.encoder(self.feedforward(w), mask)  # (B, S, 2H)

        a = torch.bmm(x, x.transpose(1, 2))  # (B, S, S) affinities, query x key
        c = torch.bmm(masked_softmax(a, mask[:, None, :]), x)  # (B, S, 2H)
        integrated = torch.cat([x, x - c, x * c], dim=-1)  # (B, S, 6H)
        xy = self.integrator(self.integrator_dropout(integrated), mask)  # (B, S, 2H)

        beta = masked_softmax(self.attend(xy).squeeze(-1), mask)  # (B, S)
        self_pool = torch.bmm(beta.unsqueeze(1), xy).squeeze(1)  # (B, 2H)
        pooled = torch.cat(
            [masked_max(xy, mask), masked_mean(xy, mask), masked_min(xy, mask), self_pool], dim=-1
        )  # (B, 8H)
        z = self.output(pooled)  # (B, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
        return z, self.example_loss(z, batch.labels)
