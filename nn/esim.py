"""ESIM's local inference and pooling (Chen et al. 2017, "Enhanced LSTM for Natural Language
Inference", sec. 3.2-3.3), over the two texts of a pair; the ❄️ ESIM head and the 🔥 ELMo
model's bi-attention both use them.

    e_ij = a_i . b_j                                                      (eq. 11)
    ã_i = sum_j softmax_j(e_ij) b_j,   b̃_j = sum_i softmax_i(e_ij) a_i      (eq. 12-13)
    m_a = [a; ã; a - ã; a * ã],        m_b = [b; b̃; b - b̃; b * b̃]            (eq. 14-15)
    v = [mean v_a; max v_a; mean v_b; max v_b]                             (eq. 18-20)

Softmaxes, means and maxes run over the other side's (or its own) real positions only.
Shapes: B batch, Sa and Sb the positions of text a and text b, E the width of a position.
"""

from __future__ import annotations

import torch

from .masked import masked_max, masked_mean, masked_softmax


def enhance(
    a: torch.Tensor, b: torch.Tensor, mask_a: torch.Tensor, mask_b: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """ESIM's local inference: each position of a attends over b and vice versa (e = a b^T,
    softmax over the other side's real positions), then [x; x~; x - x~; x * x~].

    a (B, Sa, E), b (B, Sb, E), masks (B, Sa), (B, Sb) -> m_a (B, Sa, 4E), m_b (B, Sb, 4E)."""
    e = torch.bmm(a, b.transpose(1, 2))  # (B, Sa, Sb)
    a_tilde = torch.bmm(masked_softmax(e, mask_b[:, None, :]), b)  # (B, Sa, E)
    b_tilde = torch.bmm(masked_softmax(e.transpose(1, 2), mask_a[:, None, :]), a)  # (B, Sb, E)
    m_a = torch.cat([a, a_tilde, a - a_tilde, a * a_tilde], dim=-1)  # (B, Sa, 4E)
    m_b = torch.cat([b, b_tilde, b - b_tilde, b * b_tilde], dim=-1)  # (B, Sb, 4E)
    return m_a, m_b


def pool_pair(
    v_a: torch.Tensor, v_b: torch.Tensor, mask_a: torch.Tensor, mask_b: torch.Tensor
) -> torch.Tensor:
    """ESIM's pooling: [mean(v_a); max(v_a); mean(v_b); max(v_b)] over the real positions.
    (B, Sa, E), (B, Sb, E) -> (B, 4E)."""
    parts = [masked_mean(v_a, mask_a), masked_max(v_a, mask_a)]
    parts += [masked_mean(v_b, mask_b), masked_max(v_b, mask_b)]
    return torch.cat(parts, dim=-1)  # (B, 4E)
