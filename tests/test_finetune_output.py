"""The 🔥 output layer (finetune/output.py) against brute force: every kind it builds —
classification, regression, tagging with softmax or CRF, with or without its BiLSTM — and
what it predicts, recomputed with explicit loops in float64 numpy from the layer's own
weights. Pairs reach the layer as one vector per pair (the [CLS] of a joint encoding, or the
2D/16D pooled pair features of the ELMo model), so they are the same maths at another width:
each sentence-level kind runs at a single text's width and at a pair's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from snowfire.finetune import OutputLayer, TagScores

B, T, D, K = 4, 5, 6, 3  # batch, words, input width, classes / tags
PAIR_D = 16 * D  # the ELMo pair model's input with bi-attention (finetune/elmo.py)
WORDS = [5, 3, 1, 4]  # real words of each sentence (the mask's prefix)
TOL = 1e-5  # float32 forward vs float64 brute force


def layer(kind, num_labels, in_dim=D, seed=0, **kw) -> OutputLayer:
    """An output layer in eval mode (dropout off) with weights far from their init, so a
    wrong index or a missed term shows."""
    torch.manual_seed(seed)
    out = OutputLayer(in_dim, kind, num_labels, **kw).eval()
    with torch.no_grad():
        for p in out.parameters():
            p.normal_(0.0, 0.7)
    return out


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


def logsumexp(v) -> float:
    v = np.asarray(v, dtype=np.float64)
    m = v.max()
    return float(m + np.log(np.exp(v - m).sum()))


def linear(out: OutputLayer, x: np.ndarray) -> np.ndarray:
    """W x + b, one dot product per output: (..., I) -> (..., K)."""
    w, b = np_(out.linear.weight), np_(out.linear.bias)  # (K, I), (K,)
    z = np.zeros(x.shape[:-1] + (w.shape[0],))
    for idx in np.ndindex(*x.shape[:-1]):
        for k in range(w.shape[0]):
            z[idx + (k,)] = sum(w[k, i] * x[idx + (i,)] for i in range(w.shape[1])) + b[k]
    return z


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_direction(lstm: torch.nn.LSTM, suffix: str, xs: np.ndarray) -> np.ndarray:
    """One LSTM direction over the rows of xs (n, I), step by step (PyTorch's gate order
    i, f, g, o): c_t = f c_{t-1} + i g, h_t = o tanh(c_t), from zero state."""
    w_ih = np_(getattr(lstm, f"weight_ih_l0{suffix}"))  # (4H, I)
    w_hh = np_(getattr(lstm, f"weight_hh_l0{suffix}"))  # (4H, H)
    bias = np_(getattr(lstm, f"bias_ih_l0{suffix}")) + np_(getattr(lstm, f"bias_hh_l0{suffix}"))
    hidden = w_hh.shape[1]
    h, c, out = np.zeros(hidden), np.zeros(hidden), []
    for x in xs:
        a = w_ih @ x + w_hh @ h + bias  # (4H,)
        i, f = sigmoid(a[:hidden]), sigmoid(a[hidden : 2 * hidden])
        g, o = np.tanh(a[2 * hidden : 3 * hidden]), sigmoid(a[3 * hidden :])
        c = f * c + i * g
        h = o * np.tanh(c)
        out.append(h)
    return np.array(out).reshape(len(xs), hidden)


def bilstm(out: OutputLayer, x: np.ndarray) -> np.ndarray:
    """(B, T, I) -> (B, T, 2H): forward ‖ backward over each sentence's real words only,
    zeros past them."""
    lstm = out.lstm.lstm
    y = np.zeros(x.shape[:2] + (2 * lstm.hidden_size,))
    for b, n in enumerate(WORDS):
        fwd = lstm_direction(lstm, "", x[b, :n])
        bwd = lstm_direction(lstm, "_reverse", x[b, :n][::-1])[::-1]
        y[b, :n] = np.concatenate([fwd, bwd], axis=1)
    return y


def crf_score(crf, e: np.ndarray, path) -> float:
    """s(y) = start_{y_1} + sum_t e_{t,y_t} + sum_{t>1} A_{y_{t-1},y_t} + end_{y_n}."""
    start, end, trans = np_(crf.start_transitions), np_(crf.end_transitions), np_(crf.transitions)
    s = start[path[0]] + end[path[-1]] + sum(e[t, y] for t, y in enumerate(path))
    return float(s + sum(trans[a, b] for a, b in itertools.pairwise(path)))


@pytest.fixture
def words() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Word vectors (B, T, D), the word mask (B, T) and gold tags (B, T), padding -100."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, T, D, generator=g)  # (B, T, D)
    mask = torch.arange(T)[None, :] < torch.tensor(WORDS)[:, None]  # (B, T)
    tags = torch.randint(0, K, (B, T), generator=g).masked_fill(~mask, -100)  # (B, T)
    return x, mask, tags


# ---------------------------------------------------------------- sentence-level kinds
@pytest.mark.parametrize("in_dim", [D, PAIR_D], ids=["single", "pair"])
def test_classification_is_a_linear_map_and_cross_entropy(in_dim):
    out = layer("classification", K, in_dim)
    x = torch.randn(B, in_dim, generator=torch.Generator().manual_seed(2))  # (B, I)
    y = torch.tensor([0, 2, 1, 2])
    z, loss = out(x, y)
    want = linear(out, np_(x))  # (B, K)
    assert z.shape == (B, K) and z.dtype == torch.float32
    np.testing.assert_allclose(np_(z), want, rtol=0, atol=TOL)
    ce = np.mean([logsumexp(want[b]) - want[b, int(y[b])] for b in range(B)])
    np.testing.assert_allclose(loss.item(), ce, rtol=0, atol=TOL)
    assert out.predict(z) == [int(np.argmax(want[b])) for b in range(B)]
    assert out(x)[1] is None  # no labels, no loss


@pytest.mark.parametrize("in_dim", [D, PAIR_D], ids=["single", "pair"])
def test_regression_is_one_output_and_mean_squared_error(in_dim):
    out = layer("regression", 1, in_dim)
    x = torch.randn(B, in_dim, generator=torch.Generator().manual_seed(3))  # (B, I)
    y = torch.tensor([0.5, -1.0, 2.0, 3.25])
    pred, loss = out(x, y)
    want = linear(out, np_(x))[:, 0]  # (B,)
    assert pred.shape == (B,) and pred.dtype == torch.float32
    np.testing.assert_allclose(np_(pred), want, rtol=0, atol=TOL)
    mse = np.mean([(want[b] - float(y[b])) ** 2 for b in range(B)])
    np.testing.assert_allclose(loss.item(), mse, rtol=1e-6, atol=TOL)
    np.testing.assert_allclose(out.predict(pred), want, rtol=0, atol=TOL)
    whole = torch.tensor([0, -1, 2, 3])  # int labels are read as floats
    assert out(x, whole)[1].item() == out(x, whole.float())[1].item()


# ---------------------------------------------------------------- tagging
def test_softmax_tagging_averages_over_the_real_words(words):
    x, mask, tags = words
    out = layer("tagging", K)
    scores, loss = out(x, tags, mask=mask)
    assert isinstance(scores, TagScores) and scores.emissions.shape == (B, T, K)
    e = linear(out, np_(x))  # (B, T, K)
    np.testing.assert_allclose(np_(scores.emissions), e, rtol=0, atol=TOL)
    gold = tags.tolist()
    nll = [logsumexp(e[b, t]) - e[b, t, gold[b][t]] for b in range(B) for t in range(WORDS[b])]
    np.testing.assert_allclose(loss.item(), np.mean(nll), rtol=0, atol=TOL)
    assert out.predict(scores) == [
        [int(np.argmax(e[b, t])) for t in range(n)] for b, n in enumerate(WORDS)
    ]


def test_crf_tagging_against_every_path(words):
    """loss = mean over sentences of log sum_y exp s(y) - s(gold), over all K^n paths of
    each sentence; prediction = the best of them."""
    x, mask, tags = words
    out = layer("tagging", K, crf=True)
    scores, loss = out(x, tags, mask=mask)
    e = linear(out, np_(x))  # (B, T, K)
    np.testing.assert_allclose(np_(scores.emissions), e, rtol=0, atol=TOL)
    nll, best = [], []
    for b, n in enumerate(WORDS):
        paths = list(itertools.product(range(K), repeat=n))
        s = [crf_score(out.crf, e[b], p) for p in paths]
        nll.append(logsumexp(s) - crf_score(out.crf, e[b], tags[b, :n].tolist()))
        best.append(list(paths[int(np.argmax(s))]))
    np.testing.assert_allclose(loss.item(), np.mean(nll), rtol=0, atol=TOL)
    assert out.predict(scores) == best


@pytest.mark.parametrize("crf", [False, True])
def test_the_bilstm_runs_over_the_real_words_only(words, crf):
    """Table 5's "+BiLSTM": each direction reads a sentence's real words only (padding never
    enters the backward direction's state), then the linear layer, then the loss."""
    x, mask, tags = words
    out = layer("tagging", K, lstm=4, crf=crf)
    scores, loss = out(x, tags, mask=mask)
    h = bilstm(out, np_(x))  # (B, T, 8)
    e = linear(out, h)  # (B, T, K)
    for b, n in enumerate(WORDS):  # padded rows: the linear layer's bias, never read
        np.testing.assert_allclose(np_(scores.emissions)[b, :n], e[b, :n], rtol=0, atol=TOL)
    if crf:
        nll = [
            logsumexp([crf_score(out.crf, e[b], p) for p in itertools.product(range(K), repeat=n)])
            - crf_score(out.crf, e[b], tags[b, :n].tolist())
            for b, n in enumerate(WORDS)
        ]
    else:
        nll = [
            logsumexp(e[b, t]) - e[b, t, tags[b, t].item()]
            for b, n in enumerate(WORDS)
            for t in range(n)
        ]
    np.testing.assert_allclose(loss.item(), np.mean(nll), rtol=0, atol=TOL)


@pytest.mark.parametrize("crf", [False, True])
def test_words_the_encoder_did_not_see_are_predicted_as_the_pad_tag(words, crf):
    """BERT truncation: a sentence longer than the mask gets `pad_tag` for its unseen words,
    and they add nothing to the loss."""
    x, mask, tags = words
    out = layer("tagging", K, crf=crf, pad_tag=2)
    lengths = torch.tensor(WORDS) + torch.tensor([0, 2, 4, 0])  # (B,) words of each sentence
    scores, loss = out(x, tags, mask=mask, lengths=lengths)
    seen = out.predict(out(x, mask=mask)[0])
    unseen = [0, 2, 4, 0]
    assert out.predict(scores) == [p + [2] * n for p, n in zip(seen, unseen, strict=True)]
    assert loss.item() == pytest.approx(out(x, tags, mask=mask)[1].item(), abs=0)


# ---------------------------------------------------------------- dropout and precision
def test_dropout_is_inverted_dropout_on_the_input_in_training_only():
    """With one input feature, z_b = w (m_b x_b / (1 - p)) + b with m_b in {0, 1}: every
    row is one of the two, both occur, and eval mode is the plain linear map."""
    out = layer("classification", K, in_dim=1, dropout=0.5)
    x = torch.randn(400, 1, generator=torch.Generator().manual_seed(4))  # (N, 1)
    w, bias = np_(out.linear.weight)[:, 0], np_(out.linear.bias)  # (K,), (K,)
    np.testing.assert_allclose(np_(out(x)[0]), np_(x) * w + bias, rtol=0, atol=TOL)
    out.train()
    torch.manual_seed(5)
    z = np_(out(x)[0])  # (N, K)
    dropped = np.abs(z - bias).max(axis=1) < TOL
    kept = np.abs(z - (2 * np_(x) * w + bias)).max(axis=1) < TOL
    assert (dropped | kept).all()
    assert 100 < dropped.sum() < 300  # about half of 400


def test_the_loss_is_float32_under_autocast():
    out = layer("classification", K)
    x = torch.randn(B, D, generator=torch.Generator().manual_seed(6))  # (B, D)
    y = torch.tensor([1, 0, 2, 1])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z, loss = out(x, y)
    assert z.dtype == torch.float32 and loss.dtype == torch.float32
    want = linear(out, np_(x))
    np.testing.assert_allclose(np_(z), want, rtol=0, atol=0.05)  # bfloat16: ~3 digits


# ---------------------------------------------------------------- what it refuses
@pytest.mark.parametrize(
    "kind, num_labels, kw, message",
    [
        ("ranking", 2, {}, "expected kind in .*got 'ranking'"),
        ("regression", 2, {}, "regression has 1 output, got num_labels=2"),
        ("classification", 1, {}, "expected >= 2 labels for classification, got 1"),
        ("tagging", 1, {}, "expected >= 2 labels for tagging, got 1"),
        ("classification", 3, {"crf": True}, "a CRF is for tagging, not classification"),
        ("regression", 1, {"lstm": 4}, "the BiLSTM is for tagging, not regression"),
    ],
)
def test_what_it_refuses(kind, num_labels, kw, message):
    with pytest.raises(ValueError, match=message):
        OutputLayer(D, kind, num_labels, **kw)


@pytest.mark.parametrize("lstm", [0, 4])
def test_tagging_needs_the_word_mask(words, lstm):
    x, _, tags = words
    with pytest.raises(ValueError, match=r"tagging needs the \(B, T\) word mask"):
        layer("tagging", K, lstm=lstm)(x, tags)
