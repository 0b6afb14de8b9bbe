"""Masked operations over padded sequences: pooling and softmax that never read padding.

Shapes: B batch, S positions, D features. Every function here gives for a padded row exactly
what it gives for the same row alone: padding never enters a sum, a max or a softmax. Masks
are (B, S) bool prefixes (True on real positions), as `heads.collate` builds them; a row with
no real position pools to 0 and gets softmax weights 0 (never NaN).
"""

from __future__ import annotations

import torch


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
