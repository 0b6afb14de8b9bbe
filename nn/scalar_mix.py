"""The learned scalar mix of all layers (Peters et al. 2018, "Deep contextualized word
representations", eq. 1), the first step of every ❄️ head:

    mix(h) = gamma * sum_l s_l h_l,    s = softmax(w),    w in R^L (init 0),  gamma in R (init 1)

At initialisation every layer weighs 1/L. Unlike AllenNLP's `ScalarMix` there is no layer
normalisation and no dropout on the weights (UDify's "layer dropout"): the paper used neither.
"""

from __future__ import annotations

import torch
from torch import nn


class ScalarMix(nn.Module):
    """Mix the L layers of (..., L, D) features into (..., D)."""

    def __init__(self, num_layers: int):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"ScalarMix needs at least 1 layer, got {num_layers}")
        self.num_layers = num_layers
        self.w = nn.Parameter(torch.zeros(num_layers))  # (L,)
        self.gamma = nn.Parameter(torch.ones(()))  # ()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if h.dim() < 2 or h.shape[-2] != self.num_layers:
            raise ValueError(
                f"ScalarMix expected features (..., L={self.num_layers}, D), got {tuple(h.shape)}"
            )
        s = torch.softmax(self.w, dim=0)  # (L,)
        return self.gamma * torch.einsum("...ld,l->...d", h, s)  # (..., D)

    def weights(self) -> torch.Tensor:
        """(L,) the normalised layer weights softmax(w), detached, for logs and plots."""
        with torch.no_grad():
            return torch.softmax(self.w, dim=0).cpu()  # (L,)

    def extra_repr(self) -> str:
        return f"num_layers={self.num_layers}"
