"""ELMo's context-independent token representation (layer 0): char CNN, highway, projection.

Peters et al. (2018), after Kim et al. (2016) "Character-Aware Neural Language Models". For a
token with character ids c_1..c_50 (see `chars.py`) and embeddings e_k = E[c_k]:

    conv_i   = act( max_t ( sum_{s < w_i} e_{t+s} K_i[s] ) + b_i )      filter i, width w_i
    x        = [conv_1; ...; conv_m]                                     (F,)  F = sum n_i
    highway  g = sigmoid(x W_carry + b_carry),  t = relu(x W_transform + b_transform)
             x = g * t + (1 - g) * x                                     n_highway times
    emb      = x W_proj + b_proj                                         (P,)

(the bias is added before the max, which is the same as after it). Row 0 of E is the
all-zero padding embedding; padding tokens get an all-zero `emb` here.

Shapes: N tokens, C characters per token (50), E char_dim, F CNN features, P projection_dim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

import numpy as np
import torch
from torch import nn

from .options import ElmoOptions


class CharCNN(nn.Module):
    """Char ids (B, T, C) -> token embeddings (B, T, P), zero where there is no token."""

    def __init__(self, opt: ElmoOptions) -> None:
        super().__init__()
        f = opt.n_filters
        self.char_embedding = nn.Embedding(opt.n_characters, opt.char_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(opt.char_dim, n, width) for width, n in opt.filters)
        self.highway_carry = nn.ModuleList(nn.Linear(f, f) for _ in range(opt.n_highway))
        self.highway_transform = nn.ModuleList(nn.Linear(f, f) for _ in range(opt.n_highway))
        # bilm-tf has no projection when the CNN output is already P wide.
        self.projection = nn.Linear(f, opt.projection_dim) if f != opt.projection_dim else None
        self.activation = torch.relu if opt.activation == "relu" else torch.tanh
        self.output_dim = opt.projection_dim

    @torch.no_grad()
    def load_tf(self, w: Mapping[str, np.ndarray]) -> None:
        """Copy weights from the HDF5 arrays (TF orientation, see `weights.py`)."""

        def t(key: str) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(w[key]))

        self.char_embedding.weight.zero_()
        self.char_embedding.weight[1:] = t("char_embed")  # row 0 = padding stays zero
        for i, conv in enumerate(cast(Iterable[nn.Conv1d], self.convs)):  # ModuleList: Modules
            # TF (1, width, E, n) -> torch Conv1d (n, E, width)
            conv.weight.copy_(t(f"CNN/W_cnn_{i}")[0].permute(2, 1, 0))
            assert conv.bias is not None  # built with one
            conv.bias.copy_(t(f"CNN/b_cnn_{i}"))
        for k, (carry, transform) in enumerate(
            zip(
                cast(Iterable[nn.Linear], self.highway_carry),
                cast(Iterable[nn.Linear], self.highway_transform),
                strict=True,
            )
        ):
            carry.weight.copy_(t(f"CNN_high_{k}/W_carry").T)
            carry.bias.copy_(t(f"CNN_high_{k}/b_carry"))
            transform.weight.copy_(t(f"CNN_high_{k}/W_transform").T)
            transform.bias.copy_(t(f"CNN_high_{k}/b_transform"))
        if self.projection is not None:
            self.projection.weight.copy_(t("CNN_proj/W_proj").T)
            self.projection.bias.copy_(t("CNN_proj/b_proj"))

    def embed_tokens(self, char_ids: torch.Tensor) -> torch.Tensor:
        """(N, C) char ids of real tokens -> (N, P) embeddings (the equations above)."""
        e = self.char_embedding(char_ids).transpose(1, 2)  # (N, E, C)
        convs = [
            self.activation(conv(e).max(dim=2).values)  # (N, n_i)
            for conv in self.convs
        ]
        x = torch.cat(convs, dim=1)  # (N, F)
        for carry, transform in zip(self.highway_carry, self.highway_transform, strict=True):
            g = torch.sigmoid(carry(x))  # (N, F)
            x = g * torch.relu(transform(x)) + (1.0 - g) * x  # (N, F)
        if self.projection is not None:
            x = self.projection(x)  # (N, P)
        return x

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """(B, T, C) char ids -> (B, T, P); only real tokens go through the CNN."""
        mask = (char_ids > 0).any(dim=-1)  # (B, T)
        out = char_ids.new_zeros(*mask.shape, self.output_dim, dtype=self.dtype)  # (B, T, P)
        out[mask] = self.embed_tokens(char_ids[mask])  # (N, P) scattered into (B, T, P)
        return out

    @property
    def dtype(self) -> torch.dtype:
        return self.char_embedding.weight.dtype
