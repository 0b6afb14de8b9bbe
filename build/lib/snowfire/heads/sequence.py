"""Padded sequences: masked pooling, masked softmax and a packed BiLSTM.

Shapes: B batch, S positions, D features, I an LSTM's input width, H each direction's width.
Every function here gives for a padded row exactly what it gives for the same row alone:
padding never enters a sum, a max, a softmax or an LSTM state. Masks are (B, S) bool prefixes
(True on real positions), as `collate` builds them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, S, D) -> (B, D): sum_s m_s x_s / max(1, sum_s m_s)."""
    m = mask.unsqueeze(-1).to(x.dtype)  # (B, S, 1)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)  # (B, D)


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, S, D) -> (B, D): max over real positions (0 for a row without any)."""
    filled = x.masked_fill(~mask.unsqueeze(-1), float("-inf"))  # (B, S, D)
    return filled.max(dim=1).values.masked_fill(~mask.any(dim=1, keepdim=True), 0.0)  # (B, D)


def masked_min(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, S, D) -> (B, D): min over real positions (0 for a row without any)."""
    return -masked_max(-x, mask)  # (B, D)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, zero where `mask` (broadcastable) is False."""
    filled = scores.masked_fill(~mask, float("-inf"))  # (..., S)
    # a row with no real position would be all -inf (nan after softmax); it gets zeros
    probs = torch.softmax(filled.masked_fill(~mask.any(-1, keepdim=True), 0.0), dim=-1)
    return probs * mask  # (..., S)


class BiLSTM(nn.Module):
    """A bidirectional LSTM over padded (B, S, I) inputs, packed so padding is never read.

    Returns (B, S, 2H): forward ‖ backward states, zeros on padding.
    """

    def __init__(self, input_dim: int, hidden: int, num_layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.lstm = nn.LSTM(
            input_dim,
            hidden,
            num_layers=num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.output_dim = 2 * hidden

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).clamp(min=1).cpu()  # (B,)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # (B, S, 2H)
        return out * mask.unsqueeze(-1)  # (B, S, 2H)
