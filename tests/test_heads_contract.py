"""The contract every head fulfils, run over every head × the task kinds and texts it models.

A new head adds one entry to `heads.HEADS` (and, if it has big defaults, one to `TINY` in
tests/helpers/heads.py, where the hand-built batches are made).
Numeric parts are checked by hand (ScalarMix) or by brute force (the CRF: every tag path).
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import torch

from snowfire.heads import BCN, ESIM, Tagger, build_head
from snowfire.nn import ScalarMix, TagScores
from tests.helpers.heads import (
    CASES,
    IDS,
    NUM_LABELS,
    D,
    L,
    batch_for,
    examples_for,
    make_example,
    make_head,
    targets_for,
)


def rows(output, i: int) -> torch.Tensor:
    """Example i's part of a head's output (a tagger's real words only)."""
    if isinstance(output, TagScores):
        return output.emissions[i, : int(output.mask[i].sum())]
    return output[i]


# ------------------------------------------------------------------ the contract
@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_shapes_loss_and_predictions(name, kind, pair):
    torch.manual_seed(0)
    head = make_head(name, kind, pair)
    examples = examples_for(pair)
    out, loss = head(batch_for(kind, examples, targets_for(kind, examples)))
    b, k = len(examples), NUM_LABELS[kind]
    if kind == "tagging":
        assert out.emissions.shape == (b, 5, k) and out.mask.shape == (b, 5)
    else:
        assert out.shape == ((b, k) if kind == "classification" else (b,))
    assert loss.shape == () and torch.isfinite(loss)
    preds = head.predict(out)
    assert len(preds) == b
    if kind == "classification":
        assert all(isinstance(p, int) and 0 <= p < k for p in preds)
    elif kind == "regression":
        assert all(isinstance(p, float) for p in preds)
    else:
        assert [len(p) for p in preds] == [3, 5, 2]
        assert all(0 <= t < k for p in preds for t in p)
    _, no_loss = head(batch_for(kind, examples))
    assert no_loss is None


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_gradients_reach_every_parameter(name, kind, pair):
    torch.manual_seed(0)
    head = make_head(name, kind, pair).eval()  # no dropout: a zero gradient is a real bug
    examples = examples_for(pair)
    _, loss = head(batch_for(kind, examples, targets_for(kind, examples)))
    loss.backward()
    # below 1e-7 is float noise: e.g. a bias under a softmax gets ~1e-9, real gradients >= 1e-5
    dead = [n for n, p in head.named_parameters() if p.grad is None or p.grad.abs().max() < 1e-7]
    assert dead == []


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_padding_does_not_change_outputs(name, kind, pair):
    torch.manual_seed(0)
    head = make_head(name, kind, pair).eval()
    short, long_, _ = examples_for(pair, sizes=((1, 2), (2, 1, 1, 3, 1, 1), (1,)))
    with torch.no_grad():
        alone, _ = head(batch_for(kind, [short]))
        first, _ = head(batch_for(kind, [short, long_]))
        second, _ = head(batch_for(kind, [long_, short]))
    torch.testing.assert_close(rows(first, 0), rows(alone, 0), atol=1e-5, rtol=0)
    torch.testing.assert_close(rows(second, 1), rows(alone, 0), atol=1e-5, rtol=0)
    if kind == "tagging":
        assert head.predict(first)[0] == head.predict(alone)[0]


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_state_dict_round_trip(name, kind, pair):
    torch.manual_seed(0)
    head = make_head(name, kind, pair).eval()
    torch.manual_seed(1)
    again = build_head(**head.config).eval()  # the config travels with the weights
    again.load_state_dict(head.state_dict())
    batch = batch_for(kind, examples_for(pair))
    with torch.no_grad():
        torch.testing.assert_close(
            rows(again(batch)[0], 1), rows(head(batch)[0], 1), atol=0, rtol=0
        )


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_deterministic_under_manual_seed(name, kind, pair):
    examples = examples_for(pair)
    batch = batch_for(kind, examples, targets_for(kind, examples))
    results = []
    for _ in range(2):
        torch.manual_seed(7)
        head = make_head(name, kind, pair).train()  # dropout on: the seed fixes its masks too
        out, loss = head(batch)
        results.append((rows(out, 1), loss))
    torch.testing.assert_close(results[0], results[1], atol=0, rtol=0)


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_wrong_feature_size_fails_with_expected_and_got(name, kind, pair):
    head = make_head(name, kind, pair)
    expected = f"built for features of L={L} layers, D={D}; got L={L}, D={D + 1}"
    with pytest.raises(ValueError, match=expected):
        head.check_input(L, D + 1)
    rng = np.random.default_rng(0)
    wider = [make_example(rng, [1, 2], [2] if pair else None, dim=D + 1)]
    with pytest.raises(ValueError, match=expected):
        head(batch_for(kind, wider))
    other = "regression" if kind == "classification" else "classification"
    if kind != "tagging":
        with pytest.raises(ValueError, match=f"built for a {kind} task, got a {other} batch"):
            head(batch_for(other, examples_for(pair)))


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    ("name", "kind", "pair", "message"),
    [
        (
            "bilstm-crf",
            "classification",
            False,
            "head 'bilstm-crf' cannot model a classification task: it predicts one tag per word; "
            "heads for classification on single texts: linear, mlp, probe, bcn",
        ),
        ("crf", "regression", True, "head 'crf' cannot model a regression task"),
        (
            "linear",
            "tagging",
            False,
            "head 'linear' cannot model a tagging task: it predicts one label or score per "
            "example; "
            "heads for tagging on single texts: probe, bilstm-crf, bilstm-softmax, crf, softmax",
        ),
        (
            "esim",
            "classification",
            False,
            "head 'esim' reads pair texts but the task has single texts; "
            "heads for classification on single texts: linear, mlp, probe, bcn",
        ),
        (
            "bcn",
            "regression",
            True,
            "head 'bcn' reads single texts but the task has pair texts; "
            "heads for regression on pair texts: linear, mlp, probe, esim",
        ),
        (
            "probe",
            "tagging",
            True,
            "head 'probe': a tagging task labels the words of single texts, not pairs",
        ),
        ("lstm", "classification", False, "unknown head 'lstm'; known heads: linear, mlp, probe"),
        ("linear", "ranking", False, "kind must be one of"),
    ],
)
def test_build_head_refuses_with_the_reason(name, kind, pair, message):
    with pytest.raises(ValueError, match=_literal(message)):
        build_head(name, kind=kind, pair=pair, num_layers=L, dim=D, num_labels=3)


@pytest.mark.parametrize(
    ("name", "kind", "num_labels", "hparams", "error", "message"),
    [
        (
            "linear",
            "regression",
            3,
            {},
            ValueError,
            "a regression head predicts one score: num_labels must be 1, got 3",
        ),
        (
            "bcn",
            "classification",
            1,
            {},
            ValueError,
            "classification needs at least 2 labels, got 1",
        ),
        (
            "esim",
            "classification",
            3,
            {"hiden": 4},
            TypeError,
            "unknown hyper-parameter(s) ['hiden'] for head 'esim'; "
            "it takes: hidden, dropout, pooled",
        ),
        (
            "crf",
            "tagging",
            3,
            {"output": "softmax"},
            TypeError,
            "unknown hyper-parameter(s) ['output'] for head 'crf'",
        ),
        (
            "crf",
            "tagging",
            3,
            {"over_pieces": True},
            ValueError,
            "over_pieces needs a BiLSTM (lstm_layers > 0)",
        ),
        ("mlp", "classification", 3, {"hidden": 0}, ValueError, "the mlp head needs hidden >= 1"),
        (
            "probe",
            "classification",
            3,
            {"layer": 3},
            ValueError,
            "probe layer must be in [-3, 3), got 3",
        ),
        (
            "probe",
            "tagging",
            3,
            {"pool": "cls"},
            ValueError,
            "a tagging probe's pool must be one of word, got 'cls'",
        ),
        (
            "probe",
            "regression",
            1,
            {"pool": "word"},
            ValueError,
            "a regression probe's pool must be one of mean, cls, got 'word'",
        ),
    ],
)
def test_bad_sizes_and_hyper_parameters_are_refused(
    name, kind, num_labels, hparams, error, message
):
    pair = name == "esim"
    with pytest.raises(error, match=_literal(message)):
        build_head(
            name, kind=kind, pair=pair, num_layers=L, dim=D, num_labels=num_labels, **hparams
        )


def test_heads_refuse_unfit_kinds_and_batches_when_built_directly():
    with pytest.raises(
        ValueError,
        match="the bilstm-crf head cannot model a classification "
        "task: it predicts one tag per word",
    ):
        Tagger(L, D, 3, kind="classification")
    with pytest.raises(ValueError, match="the esim head cannot model a tagging task"):
        ESIM(L, D, 3, kind="tagging")
    single = batch_for("classification", examples_for(False))
    with pytest.raises(ValueError, match="the esim head reads a pair of texts, got single texts"):
        ESIM(L, D, 3, kind="classification", hidden=4)(single)
    pairs = batch_for("classification", examples_for(True))
    with pytest.raises(ValueError, match="the bcn head reads single texts, got pairs"):
        BCN(L, D, 3, kind="classification", ff_dim=4, hidden=4, maxout_dims=(4,))(pairs)


def _literal(text: str) -> str:
    return re.escape(text)


# ------------------------------------------------------------------ ScalarMix by hand
def test_scalar_mix_matches_a_hand_computation():
    mix = ScalarMix(2)
    h = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])  # (B=1, L=2, D=2)
    torch.testing.assert_close(mix(h), torch.tensor([[2.0, 3.0]]))  # w = 0: the plain mean
    torch.testing.assert_close(mix.weights(), torch.tensor([0.5, 0.5]))
    with torch.no_grad():
        mix.w.copy_(torch.tensor([0.0, math.log(3.0)]))  # softmax -> (1/4, 3/4)
        mix.gamma.fill_(2.0)
    # 2 * (1/4 * [1, 2] + 3/4 * [3, 4]) = 2 * [2.5, 3.5]
    torch.testing.assert_close(mix(h), torch.tensor([[5.0, 7.0]]), atol=1e-6, rtol=0)
    torch.testing.assert_close(mix.weights(), torch.tensor([0.25, 0.75]), atol=1e-6, rtol=0)
    message = "expected features (..., L=2, D), got (1, 3, 2)"
    with pytest.raises(ValueError, match=_literal(message)):
        mix(torch.zeros(1, 3, 2))
    with pytest.raises(ValueError, match="ScalarMix needs at least 1 layer, got 0"):
        ScalarMix(0)


# ------------------------------------------------------------------ CRF against brute force
def _path_score(crf, emissions: torch.Tensor, path: tuple[int, ...]) -> torch.Tensor:
    """s(y) = start_{y1} + sum_t e_{t,yt} + sum_{t>1} A_{y(t-1),yt} + end_{yT}, by hand."""
    score = crf.start_transitions[path[0]] + crf.end_transitions[path[-1]]
    score = score + sum(emissions[t, y] for t, y in enumerate(path))
    return score + sum(crf.transitions[a, b] for a, b in itertools.pairwise(path))


@pytest.mark.parametrize("name", ["crf", "bilstm-crf", "bilstm-crf-pieces"])
def test_crf_matches_brute_force_over_every_tag_path(name):
    torch.manual_seed(0)
    head = make_head(name, "tagging", False).eval()
    with torch.no_grad():  # make the transitions matter
        head.crf.transitions.normal_(0.0, 1.0)
    k = NUM_LABELS["tagging"]
    examples = examples_for(False, sizes=((1, 2, 1), (2, 1), (1,)))  # 3, 2 and 1 words
    tags = targets_for("tagging", examples, seed=3)
    out, loss = head(batch_for("tagging", examples, tags))
    expected_loss = 0.0
    for i, gold in enumerate(tags):
        emissions = out.emissions[i, : len(gold)]  # (T_i, K)
        paths = list(itertools.product(range(k), repeat=len(gold)))  # all K^T_i paths
        scores = torch.stack([_path_score(head.crf, emissions, p) for p in paths])
        log_z = torch.logsumexp(scores, dim=0)
        expected_loss -= (_path_score(head.crf, emissions, tuple(gold)) - log_z) / len(tags)
        assert head.predict(out)[i] == list(paths[int(scores.argmax())])
    torch.testing.assert_close(loss, expected_loss, atol=1e-5, rtol=1e-5)


def test_softmax_tagger_loss_is_token_cross_entropy_by_hand():
    torch.manual_seed(0)
    head = make_head("softmax", "tagging", False).eval()
    examples = examples_for(False)
    tags = targets_for("tagging", examples)
    out, loss = head(batch_for("tagging", examples, tags))
    nll = [
        -torch.log_softmax(out.emissions[i, t], -1)[y]
        for i, gold in enumerate(tags)
        for t, y in enumerate(gold)
    ]
    torch.testing.assert_close(loss, torch.stack(nll).mean(), atol=1e-6, rtol=1e-6)
    assert head.predict(out) == [
        out.emissions[i, : len(g)].argmax(-1).tolist() for i, g in enumerate(tags)
    ]


@pytest.mark.parametrize("layer", [0, -1])
def test_tagging_probe_is_a_softmax_of_one_layer_at_each_words_first_piece_by_hand(layer):
    """e_t = W h_{first piece of t, layer} + b; loss: token cross-entropy over the real words."""
    torch.manual_seed(0)
    head = build_head(
        "probe",
        kind="tagging",
        pair=False,
        num_layers=L,
        dim=D,
        num_labels=NUM_LABELS["tagging"],
        layer=layer,
    )
    assert head.config["pool"] == "word" and head.pool == "word"  # the default, recorded
    examples = examples_for(False)
    tags = targets_for("tagging", examples)
    batch = batch_for("tagging", examples, tags)
    out, loss = head(batch)
    w, b = head.out.weight.detach(), head.out.bias.detach()
    nll = []
    for i, gold in enumerate(tags):
        firsts = batch.first_piece_index[i, : len(gold)]  # (T_i,) each word's first piece
        h = batch.features[i, firsts, layer % L]  # (T_i, D)
        want = h @ w.T + b  # (T_i, K)
        torch.testing.assert_close(out.emissions[i, : len(gold)], want, atol=1e-6, rtol=1e-6)
        nll += [-torch.log_softmax(want[t], -1)[y] for t, y in enumerate(gold)]
        assert head.predict(out)[i] == want.argmax(-1).tolist()
    torch.testing.assert_close(loss, torch.stack(nll).mean(), atol=1e-6, rtol=1e-6)
