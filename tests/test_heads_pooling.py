"""Masked pooling and ESIM's enhancement, shared by the ❄️ heads and the 🔥 ELMo model:
checked row by row against plain Python, including rows with no real position."""

from __future__ import annotations

import math

import torch

from snowfire.heads.esim import enhance
from snowfire.heads.sequence import masked_max, masked_mean, masked_softmax


def _case():
    torch.manual_seed(0)
    x = torch.randn(4, 5, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]).bool()
    return x, mask


def test_pooling_equals_a_loop_and_empty_rows_are_zero_not_nan():
    x, mask = _case()
    mean, top = masked_mean(x, mask), masked_max(x, mask)
    for b in range(4):
        real = [x[b, t] for t in range(5) if mask[b, t]]
        want_mean = sum(real) / len(real) if real else torch.zeros(3)
        want_max = torch.stack(real).max(0).values if real else torch.zeros(3)
        assert torch.allclose(mean[b], want_mean, atol=1e-6)
        assert torch.equal(top[b], want_max)
    probs = masked_softmax(x[..., 0], mask)  # (4, 5)
    for b in range(4):
        n = int(mask[b].sum())
        if n:
            e = [math.exp(x[b, t, 0]) if mask[b, t] else 0.0 for t in range(5)]
            assert torch.allclose(probs[b], torch.tensor([v / sum(e) for v in e]), atol=1e-6)
        else:
            assert torch.equal(probs[b], torch.zeros(5))
    assert not torch.isnan(probs).any()


def test_enhance_aligns_each_side_to_the_other():
    torch.manual_seed(1)
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 4)
    mask_a = torch.tensor([[1, 1, 0], [1, 1, 1]]).bool()
    mask_b = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0]]).bool()  # the second b is empty
    m_a, m_b = enhance(a, b, mask_a, mask_b)
    assert m_a.shape == (2, 3, 16) and m_b.shape == (2, 4, 16)
    for i in range(3):  # row 0, position i of a: softmax over b's 3 real positions
        w = torch.softmax(torch.stack([a[0, i] @ b[0, j] for j in range(3)]), 0)
        a_tilde = sum(w[j] * b[0, j] for j in range(3))
        want = torch.cat([a[0, i], a_tilde, a[0, i] - a_tilde, a[0, i] * a_tilde])
        assert torch.allclose(m_a[0, i], want, atol=1e-5)
    assert torch.isfinite(m_a).all() and torch.isfinite(m_b).all()  # an empty side: no NaN
    assert torch.equal(m_a[1, :, 4:8], torch.zeros(3, 4))  # nothing to align to
