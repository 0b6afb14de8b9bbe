"""The 🔥 model contract: everything the trainer (finetune/trainer.py), the run helpers
(finetune/model.py) and a saved run's reload (finetune/predict.py) ask of a model, whatever
encoder it fine-tunes. The loop never asks which model it holds:

    batch = model.collate(examples)        tasks.Example list -> {name: (B, ...) tensor}, with
                                           "labels" when every example has its gold answer
    output, loss = model(batch)            loss None without labels
    model.predict(output) -> list          class indices | floats | one tag list per example
    model.layer_groups() -> [(name, [p])]  top-down: the output layer first, the embeddings last
                                           (finetune/optim.py: discriminative rates, gradual
                                           unfreezing); each trained parameter in exactly one
    model.refresh_state()                  recompute what the model derives from its weights
                                           outside the gradient (ELMo's warm-up LSTM state);
                                           called before each epoch and each evaluation
    model.trained_state() -> {name: t}     what RUN/best.pt keeps: the whole state dict, or a
    model.load_trained(state)              partial method's trained tensors only
    model.encoder_parameters()             the pretrained encoder's (name, p): L2-SP's θ₀
    model.save_encoder(folder)             the fine-tuned encoder, extractable (method full)
    model.method, model.output             what trains besides the output layer (recipe.METHODS);
                                           the task's `OutputLayer` (LP-FT starts its linear)

Implementations: `BertFinetuner` (finetune/bert.py) and `ElmoFinetuner` (finetune/elmo.py);
tests/test_fire_model_contract.py holds each to this contract, so a new encoder family is one
class here and one entry there.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .optim import LayerGroup
from .output import OutputLayer, TagScores


class FireModel(nn.Module, metaclass=ABCMeta):
    """Base of the 🔥 models: a pretrained encoder + the task's `OutputLayer`.

    Subclasses set `output` and, for a partial method, `method`; they implement `collate`,
    `forward`, `layer_groups`, `pretrained` and `save_encoder`, and override `refresh_state`
    when they derive state from their weights, `trained_state` when a method trains part of
    the encoder.
    """

    method: str = "full"  # what trains besides the output layer (finetune/methods.py)
    output: OutputLayer

    @abstractmethod
    def collate(self, examples: Sequence[Any]) -> dict[str, torch.Tensor]:
        """Padded tensors of a list of `tasks.Example`; "labels" when all have gold."""

    @abstractmethod
    def forward(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor | TagScores, torch.Tensor | None]:
        """(output, loss) of a collated batch; loss None without "labels"."""

    @abstractmethod
    def layer_groups(self) -> list[LayerGroup]:
        """(name, parameters) top-down, each trained parameter in exactly one group; a
        parameter the method does not train is in none (and frozen here)."""

    @property
    @abstractmethod
    def pretrained(self) -> nn.Module:
        """The pretrained encoder this model fine-tunes (its weights start as the hub's/file's)."""

    @abstractmethod
    def save_encoder(self, folder: str | Path) -> None:
        """Write the fine-tuned encoder as `extractor.load_encoder` reads it."""

    def predict(self, output: torch.Tensor | TagScores) -> list:
        """The output layer's decoding: class indices, floats or one tag list per example."""
        return self.output.predict(output)

    def refresh_state(self) -> None:
        """Recompute the state derived from the current weights outside the gradient; a model
        without such state (the BERT family) has nothing to do."""

    def trained_state(self) -> dict[str, torch.Tensor]:
        """What RUN/best.pt keeps: every tensor of the state dict (method full)."""
        return self.state_dict()

    def load_trained(self, state: dict[str, torch.Tensor]) -> None:
        """Load `trained_state`'s tensors; a partial state must cover every trained tensor."""
        if self.method == "full":
            self.load_state_dict(state)
            return
        expected = set(self.trained_state())
        if set(state) != expected:
            missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
            raise ValueError(
                f"trained weights of method {self.method}: missing {missing[:5]}, "
                f"unexpected {extra[:5]}"
            )
        self.load_state_dict(state, strict=False)

    def encoder_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """The pretrained encoder's parameters by their names in this model's state dict
        (L2-SP pulls them towards their starting values θ₀)."""
        mine = {id(p) for p in self.pretrained.parameters()}
        return [(n, p) for n, p in self.named_parameters() if id(p) in mine]
