"""What every ❄️ head shares: the input check, the kind check, the example-level losses.

The contract (the training loop never asks which head it holds):

    output, loss = head(batch)      # loss is None when batch.labels is None
    head.predict(output) -> list    # class indices | floats | one list of tag indices per example

    classification: output (B, K) logits,  loss = cross-entropy
    regression:     output (B,) scores,    loss = mean squared error
    tagging:        output TagScores(emissions (B, T, K), mask (B, T)), see snowfire.nn (crf.py)
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from .batch import KINDS, HeadBatch


class Head(nn.Module):
    """Base of the heads: holds L, D, K and the task kind, checks batches against them.

    Subclasses set `name`, `kinds` (the task kinds they can model), `texts` (the texts they read:
    "single", "pair" or "any") and `models` (what one prediction is, for refusals).
    """

    name: str = "head"  # the class's, or set per instance from its options (tagger, MLP)
    kinds: ClassVar[tuple[str, ...]] = ("classification", "regression")
    texts: ClassVar[str] = "any"
    models: ClassVar[str] = "one label or score per example"

    def __init__(self, num_layers: int, dim: int, num_labels: int, *, kind: str):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if kind not in self.kinds:
            raise ValueError(
                f"the {self.name} head cannot model a {kind} task: it predicts {self.models} "
                f"(kinds it models: {', '.join(self.kinds)})"
            )
        if num_layers < 1 or dim < 1:
            raise ValueError(f"num_layers and dim must be positive, got L={num_layers}, D={dim}")
        if kind == "regression" and num_labels != 1:
            raise ValueError(
                f"a regression head predicts one score: num_labels must be 1, got {num_labels}"
            )
        if kind == "classification" and num_labels < 2:
            raise ValueError(f"classification needs at least 2 labels, got {num_labels}")
        if kind == "tagging" and num_labels < 1:
            raise ValueError(f"tagging needs at least 1 tag, got {num_labels}")
        self.num_layers, self.dim, self.num_labels, self.kind = num_layers, dim, num_labels, kind
        self.config: dict[str, Any] = {}  # filled by build_head: what rebuilds this head

    def check_input(self, num_layers: int, dim: int) -> None:
        """Refuse features of another encoder (called by the trainer when it builds the head)."""
        if (num_layers, dim) != (self.num_layers, self.dim):
            raise ValueError(
                f"the {self.name} head was built for features of L={self.num_layers} layers, "
                f"D={self.dim}; got L={num_layers}, D={dim}"
            )

    def check_batch(self, batch: HeadBatch) -> None:
        """Refuse a batch this head cannot read (every forward calls it: cheap)."""
        _, _, num_layers, dim = batch.features.shape
        self.check_input(num_layers, dim)
        if batch.kind != self.kind:
            raise ValueError(
                f"the {self.name} head was built for a {self.kind} task, got a {batch.kind} batch"
            )
        if self.texts == "pair" and not batch.is_pair:
            raise ValueError(f"the {self.name} head reads a pair of texts, got single texts")
        if self.texts == "single" and batch.is_pair:
            raise ValueError(f"the {self.name} head reads single texts, got pairs")

    def example_loss(
        self, output: torch.Tensor, labels: torch.Tensor | None
    ) -> torch.Tensor | None:
        """Cross-entropy on (B, K) logits or squared error on (B,) scores; None without labels."""
        if labels is None:
            return None
        if self.kind == "classification":
            return F.cross_entropy(output, labels)  # ()
        return F.mse_loss(output, labels)  # ()

    def resolved(self) -> dict[str, Any]:
        """The hyper-parameters __init__ chose where it was given None (the config records
        them, so a rebuilt head is the same one)."""
        return {}

    def predict(self, output: Any) -> list:
        """Class indices (classification) or floats (regression), one per example."""
        if self.kind == "classification":
            return output.argmax(dim=-1).tolist()
        return output.tolist()
