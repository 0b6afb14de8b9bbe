"""The shared `snowfire.nn` blocks (❄️ heads and 🔥 models): masked pooling, ESIM's
enhancement and pooling, the packed BiLSTM and the tag outputs, each checked row by row against
plain Python or brute force (the CRF: every tag path), including rows with no real position.
ScalarMix's hand computation is in tests/test_heads_contract.py."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torchcrf import CRF

from snowfire.nn import (
    IGNORE_INDEX,
    BiLSTM,
    ScalarMix,
    TagScores,
    decode_tags,
    enhance,
    masked_max,
    masked_mean,
    masked_min,
    masked_softmax,
    pool_pair,
    tag_loss,
)


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
        want_min = torch.stack(real).min(0).values if real else torch.zeros(3)
        assert torch.equal(masked_min(x, mask)[b], want_min)
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


def test_pool_pair_is_mean_and_max_of_each_side_over_its_real_positions():
    x, mask = _case()
    v = pool_pair(x[:2], x[2:], mask[:2], mask[2:])  # (2, 4 * 3)
    assert v.shape == (2, 12)
    for b in range(2):
        want = [
            masked_mean(x[b : b + 1], mask[b : b + 1])[0],
            masked_max(x[b : b + 1], mask[b : b + 1])[0],
            masked_mean(x[2 + b : 3 + b], mask[2 + b : 3 + b])[0],
            masked_max(x[2 + b : 3 + b], mask[2 + b : 3 + b])[0],
        ]
        torch.testing.assert_close(v[b], torch.cat(want), atol=0.0, rtol=0.0)


def test_bilstm_reads_a_padded_row_as_the_row_alone_and_zeros_its_padding():
    torch.manual_seed(2)
    lstm = BiLSTM(3, 4).eval()
    x, mask = _case()
    rows = [0, 1, 3]  # 3, 1 and 5 real positions
    out = lstm(x[rows], mask[rows])  # (3, 5, 8)
    assert out.shape == (3, 5, lstm.output_dim) and lstm.output_dim == 8
    for i, b in enumerate(rows):
        n = int(mask[b].sum())
        alone = lstm(x[b : b + 1, :n], mask[b : b + 1, :n])  # (1, n, 8)
        torch.testing.assert_close(out[i, :n], alone[0], atol=1e-6, rtol=1e-6)
        assert torch.equal(out[i, n:], torch.zeros(5 - n, 8))
    with torch.no_grad():  # the backward direction starts at the last real position
        _, (h, _) = lstm.lstm(x[0:1, :3])
    torch.testing.assert_close(out[0, 0, 4:], h[1, 0], atol=1e-6, rtol=1e-6)


# ------------------------------------------------------------------ tag outputs
def _path_score(crf, emissions: torch.Tensor, path: tuple[int, ...]) -> torch.Tensor:
    """s(y) = start_{y1} + sum_t e_{t,yt} + sum_{t>1} A_{y(t-1),yt} + end_{yT}, by hand."""
    score = crf.start_transitions[path[0]] + crf.end_transitions[path[-1]]
    score = score + sum(emissions[t, y] for t, y in enumerate(path))
    return score + sum(crf.transitions[a, b] for a, b in itertools.pairwise(path))


def _tag_case(k: int = 3):
    torch.manual_seed(4)
    lengths = [3, 1, 2]
    emissions = torch.randn(3, 3, k)  # (B, T, K)
    mask = torch.arange(3)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)
    tags = torch.randint(0, k, (3, 3)).masked_fill(~mask, IGNORE_INDEX)  # (B, T)
    return TagScores(emissions, mask), tags, lengths


def test_crf_loss_and_viterbi_match_brute_force_over_every_tag_path():
    scores, tags, lengths = _tag_case()
    crf = CRF(3, batch_first=True)
    with torch.no_grad():  # make the transitions matter
        for t in (crf.transitions, crf.start_transitions, crf.end_transitions):
            t.normal_(0.0, 1.0)
    expected, paths_found = 0.0, decode_tags(scores, crf)
    for i, n in enumerate(lengths):
        emissions, gold = scores.emissions[i, :n], tuple(tags[i, :n].tolist())
        paths = list(itertools.product(range(3), repeat=n))  # all K^n paths
        every = torch.stack([_path_score(crf, emissions, p) for p in paths])
        expected -= (_path_score(crf, emissions, gold) - torch.logsumexp(every, 0)) / len(lengths)
        assert paths_found[i] == list(paths[int(every.argmax())])
    torch.testing.assert_close(tag_loss(scores, tags, crf), expected, atol=1e-5, rtol=1e-5)


def test_softmax_tag_loss_is_cross_entropy_over_the_real_words_by_hand():
    scores, tags, lengths = _tag_case()
    nll = [
        -torch.log_softmax(scores.emissions[i, t], -1)[tags[i, t]]
        for i, n in enumerate(lengths)
        for t in range(n)
    ]
    torch.testing.assert_close(tag_loss(scores, tags, None), torch.stack(nll).mean())
    assert decode_tags(scores, None) == [
        scores.emissions[i, :n].argmax(-1).tolist() for i, n in enumerate(lengths)
    ]


@pytest.mark.parametrize("with_crf", [False, True])
def test_tag_loss_without_tags_is_none(with_crf):
    scores, _, _ = _tag_case()
    assert tag_loss(scores, None, CRF(3, batch_first=True) if with_crf else None) is None


def test_parameter_names_are_those_saved_runs_hold():
    """RUN/weights.safetensors and RUN/best.pt key tensors by these names (the blocks moved
    from heads/ to nn/ without renaming any)."""
    assert sorted(ScalarMix(3).state_dict()) == ["gamma", "w"]
    lstm = [
        f"lstm.{w}_l{layer}{d}"
        for layer in range(2)
        for d in ("", "_reverse")
        for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ]
    assert sorted(BiLSTM(3, 4, num_layers=2).state_dict()) == sorted(lstm)
