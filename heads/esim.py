"""ESIM, the Enhanced Sequential Inference Model (Chen et al. 2017, "Enhanced LSTM for Natural
Language Inference", sec. 3.1-3.3), over the two texts of a pair, as in Peters, Ruder & Smith
(2019) for NLI, paraphrase detection and STS.

    a_i = BiLSTM(ScalarMix(h^a))_i,  b_j = BiLSTM(ScalarMix(h^b))_j      input encoding (eq. 1-2)
    e_ij = a_i . b_j                                                     (eq. 11)
    ã_i = sum_j softmax_j(e_ij) b_j,   b̃_j = sum_i softmax_i(e_ij) a_i     local inference (12-13)
    m_a = [a; ã; a - ã; a * ã],        m_b = [b; b̃; b - b̃; b * b̃]           enhancement (14-15)
    v_a = BiLSTM(ReLU(F m_a)),         v_b = BiLSTM(ReLU(F m_b))         composition (eq. 17)
    v = [mean v_a; max v_a; mean v_b; max v_b]                            pooling (eq. 18-20)
    z = W_2 dropout(ReLU(W_1 dropout(v)))                                 MLP classifier

F is the projection to H before the composition BiLSTM (sec. 3.3); the same BiLSTMs read both
texts. With `pooled=True` the MLP also sees sentence-embedding features of the frozen inputs,
as a bi-encoder user would compute them (InferSent / Sentence-BERT style):

    u, w = mean ScalarMix(h^a), mean ScalarMix(h^b);   c = cos(mean h^a_top, mean h^b_top)
    v' = [v; u * w; |u - w|; c],   z = MLP(v') + A c

the last term a learned linear read-out of the cosine that bypasses the MLP's dropout, so the
head starts from what a cosine of mean-pooled embeddings knows and learns the rest.
Classification: K logits, cross-entropy; regression (STS): one score, squared error.
Where ESIM used tanh in the MLP we use ReLU, as AllenNLP's ESIM does. Defaults follow AllenNLP.
"""

from __future__ import annotations

import torch
from torch import nn

from snowfire.nn import BiLSTM, ScalarMix, enhance, masked_mean, pool_pair

from .base import Head
from .batch import HeadBatch


class ESIM(Head):
    """ESIM over the scalar-mixed features of text a and text b."""

    name = "esim"
    kinds = ("classification", "regression")
    texts = "pair"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str,
        hidden: int = 300,
        dropout: float = 0.5,
        pooled: bool = False,
    ):
        """hidden: each LSTM direction's width, the projection and the MLP's hidden layer;
        dropout: on the mixed features, before the composition and in the MLP;
        pooled: add the pooled sentence-embedding features v' above to the MLP's input."""
        super().__init__(num_layers, dim, num_labels, kind=kind)
        self.mix = ScalarMix(num_layers)
        self.dropout = nn.Dropout(dropout)
        self.encoder = BiLSTM(dim, hidden)
        self.projection = nn.Sequential(nn.Linear(4 * 2 * hidden, hidden), nn.ReLU())
        self.composition = BiLSTM(hidden, hidden)
        self.pooled = pooled
        extra = 2 * dim + 1 if pooled else 0
        self.cosine_readout = nn.Linear(1, num_labels) if pooled else None
        self.classifier = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(4 * 2 * hidden + extra, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_labels),
        )

    def forward(self, batch: HeadBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        self.check_batch(batch)
        mask_a, mask_b = batch.mask_a, batch.mask_b  # (B, Sa), (B, Sb)
        assert batch.features_a is not None and batch.features_b is not None  # check_batch:
        assert mask_a is not None and mask_b is not None  # a pair batch has both texts
        x_a, x_b = self.mix(batch.features_a), self.mix(batch.features_b)  # (B, Sa|Sb, D)
        a = self.encoder(self.dropout(x_a), mask_a)  # (B, Sa, 2H)
        b = self.encoder(self.dropout(x_b), mask_b)  # (B, Sb, 2H)

        m_a, m_b = enhance(a, b, mask_a, mask_b)  # (B, Sa, 8H), (B, Sb, 8H)

        v_a = self.composition(self.dropout(self.projection(m_a)), mask_a)  # (B, Sa, 2H)
        v_b = self.composition(self.dropout(self.projection(m_b)), mask_b)  # (B, Sb, 2H)
        v = pool_pair(v_a, v_b, mask_a, mask_b)  # (B, 8H)
        if self.pooled:
            u, w = masked_mean(x_a, mask_a), masked_mean(x_b, mask_b)  # (B, D), (B, D)
            top_a = masked_mean(batch.features_a[:, :, -1], mask_a)  # (B, D)
            top_b = masked_mean(batch.features_b[:, :, -1], mask_b)  # (B, D)
            c = nn.functional.cosine_similarity(top_a, top_b, dim=-1)[:, None]  # (B, 1)
            v = torch.cat([v, u * w, (u - w).abs(), c], dim=-1)  # (B, 8H + 2D + 1)
        z = self.classifier(v)  # (B, K)
        if self.cosine_readout is not None:
            z = z + self.cosine_readout(c)  # (B, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
        return z, self.example_loss(z, batch.labels)
