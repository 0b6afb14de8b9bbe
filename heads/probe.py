"""Diagnostic classifier on one layer (Peters, Ruder & Smith 2019, Figure 1; after Belinkov
et al. 2017 and Hupkes et al. 2018): how much of the task one layer holds, read off linearly.

    v = sum_s m_s h_{s,l} / sum_s m_s             pool "mean": layer l over the real tokens
    v = h_{0,l}                                   pool "cls": layer l at [CLS] (no mix either
                                                  way); what a BERT-family 🔥 output layer reads
                                                  at l = top, so LP-FT starts from it
    v_t = h_{first piece of word t, l}            pool "word" (tagging, and only it): layer l at
                                                  each word's first piece, what a BERT-family
                                                  🔥 tagger's output layer reads at l = top
    classification: logistic regression,  z = W v + b in R^K,  loss = -log softmax(z)_y
    regression:     linear regression,    z = w.v + b in R,    loss = (z - y)^2
    tagging:        per-word softmax,     e_t = W v_t + b,     loss = -sum_t log softmax(e_t)_{y_t}
                                                               / #words (argmax per word)

`layer` indexes the L axis of the batch's features (negative counts from the top), so a store
read with a subset of layers is probed by the position of the layer in that subset. `pool`
defaults to "mean", or "word" for tagging; the head's config records the one it used.
"""

from __future__ import annotations

from torch import nn

from snowfire.nn import TagScores, decode_tags, tag_loss

from .base import Head
from .batch import HeadBatch
from .pooled import POOLS, pool_tokens

#: What a tagging probe reads: each word at its first piece.
WORD = "word"
#: The pool of the probe that reads what a BERT-family 🔥 output layer reads, per task kind:
#: the top layer's [CLS] state, or a tagger's each word's first piece (LP-FT starts from it).
FIRE_POOL = {"classification": "cls", "regression": "cls", "tagging": WORD}


class Probe(Head):
    """Logistic (or linear) regression on one layer: its token mean or [CLS] state, or each
    word's first piece (tagging)."""

    name = "probe"
    kinds = ("classification", "regression", "tagging")
    texts = "any"
    models = "one label or score per example, or one tag per word"

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_labels: int,
        *,
        kind: str,
        layer: int = -1,
        pool: str | None = None,
    ):
        """layer: which of the L layers to probe; -1 is the top one. pool: "mean" over the
        tokens or "cls", the first token, which must be a special token (word id -1); "word"
        for tagging (its only pool). None: "word" for tagging, else "mean"."""
        super().__init__(num_layers, dim, num_labels, kind=kind)
        pools = (WORD,) if kind == "tagging" else POOLS
        pool = pools[0] if pool is None else pool
        if pool not in pools:
            raise ValueError(
                f"a {kind} probe's pool must be one of {', '.join(pools)}, got {pool!r}"
            )
        self.pool = pool
        if not -num_layers <= layer < num_layers:
            raise ValueError(f"probe layer must be in [{-num_layers}, {num_layers}), got {layer}")
        self.layer = layer % num_layers
        self.out = nn.Linear(dim, num_labels)

    def resolved(self) -> dict[str, str]:
        """The hyper-parameters __init__ chose where it was given None (the config records them)."""
        return {"pool": self.pool}

    def forward(self, batch: HeadBatch):
        self.check_batch(batch)
        if self.kind == "tagging":
            if batch.is_pair:
                raise ValueError("a tagging probe reads single texts, got pairs")
            if batch.word_features is None or batch.word_mask is None:
                raise ValueError(
                    "a tagging probe reads word-level batches: collate with kind='tagging'"
                )
            e = self.out(batch.word_features[:, :, self.layer])  # (B, T, K)
            scores = TagScores(e, batch.word_mask)
            return scores, tag_loss(scores, batch.labels, None)
        h = batch.features[:, :, self.layer]  # (B, S, D)
        v = pool_tokens(h, batch, self.pool)  # (B, D)
        z = self.out(v)  # (B, K)
        if self.kind == "regression":
            z = z.squeeze(-1)  # (B,)
        return z, self.example_loss(z, batch.labels)

    def predict(self, output) -> list:
        if self.kind == "tagging":
            return decode_tags(output, None)
        return super().predict(output)

    def extra_repr(self) -> str:
        return f"layer={self.layer}, pool={self.pool}"
