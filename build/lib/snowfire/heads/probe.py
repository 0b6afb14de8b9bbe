"""Diagnostic classifier on one layer (Peters, Ruder & Smith 2019, Figure 1; after Belinkov
et al. 2017 and Hupkes et al. 2018): how much of the task one layer holds, read off linearly.

    v = sum_s m_s h_{s,l} / sum_s m_s             pool "mean": layer l over the real tokens
    v = h_{0,l}                                   pool "cls": layer l at [CLS] (no mix either
                                                  way); what a BERT-family 🔥 output layer reads
                                                  at l = top, so LP-FT starts from it
    classification: logistic regression,  z = W v + b in R^K,  loss = -log softmax(z)_y
    regression:     linear regression,    z = w.v + b in R,    loss = (z - y)^2

`layer` indexes the L axis of the batch's features (negative counts from the top), so a store
read with a subset of layers is probed by the position of the layer in that subset.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import Head
from .batch import HeadBatch
from .pooled import POOLS, pool_tokens


class Probe(Head):
    """Logistic (or linear) regression on the token mean of one layer."""

    name = "probe"
    kinds = ("classification", "regression")
    texts = "any"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str,
        layer: int = -1,
        pool: str = "mean",
    ):
        """layer: which of the L layers to probe; -1 is the top one. pool: "mean" over the
        tokens or "cls", the first token, which must be a special token (word id -1)."""
        super().__init__(num_layers, dim, num_labels, kind=kind)
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
        self.pool = pool
        if not -num_layers <= layer < num_layers:
            raise ValueError(f"probe layer must be in [{-num_layers}, {num_layers}), got {layer}")
        self.layer = layer % num_layers
        self.out = nn.Linear(dim, num_labels)

    def forward(self, batch: HeadBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        self.check_batch(batch)
        h = batch.features[:, :, self.layer]  # (B, S, D)
        v = pool_tokens(h, batch, self.pool)  # (B, D)
        z = self.out(v)  # (B, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
        return z, self.example_loss(z, batch.labels)

    def extra_repr(self) -> str:
        return f"layer={self.layer}, pool={self.pool}"
