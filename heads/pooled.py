"""The smallest ❄️ heads: scalar mix, mean over tokens, then a linear layer or a small MLP.

    x_s = ScalarMix(h_s)                                  (Peters et al. 2018)
    v   = sum_s m_s x_s / sum_s m_s                       pool "mean": masked mean over the
                                                          real tokens
    v   = x_0                                             pool "cls": the [CLS] state (the
                                                          pooling of BERT recipes, TEI, ...)
    linear: z = W dropout(v) + b
    mlp:    z = W2 dropout(ReLU(W1 dropout(v) + b1)) + b2
    classification: K logits z, loss = -log softmax(z)_y;  regression: z in R, loss = (z - y)^2

A pair is pooled over its whole sequence (both texts, special tokens included), whichever way
it was encoded: the head adds no cross-sentence interaction (that is ESIM's job).
"""

from __future__ import annotations

import torch
from torch import nn

from snowfire.nn import ScalarMix, masked_mean

from .base import Head
from .batch import HeadBatch

#: How the sequence becomes one vector.
POOLS = ("mean", "cls")


def pool_tokens(x: torch.Tensor, batch: HeadBatch, pool: str) -> torch.Tensor:
    """(B, S, D) -> (B, D): the masked mean over the real tokens, or the [CLS] state (refused
    where the first token is a word piece: features of an encoder without special tokens)."""
    if pool == "mean":
        return masked_mean(x, batch.mask)
    if bool((batch.word_ids[:, 0] >= 0).any()):
        raise ValueError(
            "pool cls: an example's first token is a word piece, not [CLS] (features of "
            "an encoder without special tokens, e.g. ELMo): use pool mean"
        )
    return x[:, 0]


class PooledHead(Head):
    """Mean-pooled scalar mix into a linear layer (`hidden=0`) or a one-hidden-layer MLP."""

    name = "linear"
    kinds = ("classification", "regression")
    texts = "any"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str,
        hidden: int = 0,
        dropout: float = 0.1,
        pool: str = "mean",
    ):
        """hidden: width of the MLP's hidden layer; 0 gives the linear head.
        dropout: on the pooled vector (and on the hidden layer of the MLP).
        pool: "mean" over the tokens, or "cls": the first token, which must be a special token
        (word id -1: [CLS]; features of an encoder without one, e.g. ELMo, are refused)."""
        self.name = "mlp" if hidden else "linear"  # before the kind check names it
        super().__init__(num_layers, dim, num_labels, kind=kind)
        if hidden < 0:
            raise ValueError(f"hidden must be >= 0, got {hidden}")
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
        self.pool = pool
        self.mix = ScalarMix(num_layers)
        self.dropout = nn.Dropout(dropout)
        self.out: nn.Module
        if hidden:
            self.out = nn.Sequential(
                nn.Linear(dim, hidden),
                nn.ReLU(),
                nn.Dropout(dropout),
                nn.Linear(hidden, num_labels),
            )
        else:
            self.out = nn.Linear(dim, num_labels)

    def forward(self, batch: HeadBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        self.check_batch(batch)
        x = self.mix(batch.features)  # (B, S, D)
        v = pool_tokens(x, batch, self.pool)  # (B, D)
        z = self.out(self.dropout(v))  # (B, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
        return z, self.example_loss(z, batch.labels)
