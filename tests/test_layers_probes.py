"""The layer sweep's batched probes (compare/layers/probes.py, fit.py): the batched forward and
losses against each probe computed alone by hand, each probe's initialisation independent of
the company it is built in, and the claim the sweep's cost rests on: training every probe
batched gives each one the weights it gets trained alone (same seed, same batches)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from snowfire.compare.layers.data import Probed
from snowfire.compare.layers.fit import fit
from snowfire.compare.layers.probes import GROUPS, LayerProbes, probe_seed

S, L, D, H, K = 3, 4, 6, 5, 3
TOL = 1e-5


def _probes(**kw) -> LayerProbes:
    args = dict(
        seeds=range(S),
        layers=range(L),
        tops=range(L),
        num_layers=L,
        dim=D,
        num_labels=K,
        hidden=H,
        kind="classification",
    )
    return LayerProbes(**(args | kw))


#: The linear map of layer 1 that decides the labels, the same in every split.
DECIDES = torch.randn(D, K, generator=torch.Generator().manual_seed(7))


def _data(n: int, seed: int) -> Probed:
    """Labels a linear map of layer 1 decides; control labels at random."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, L, D, generator=g)  # (N, L, D)
    y = (x[:, 1] @ DECIDES).argmax(-1)  # (N,)
    yc = torch.randint(0, K, (n,), generator=g)  # (N,)
    return Probed(x, y, yc, None)


def test_the_batched_forward_is_each_probe_by_hand():
    model = _probes()
    x = torch.randn(S, 7, L, D)  # (S, B, L, D)
    out = model(x)
    assert {g: tuple(z.shape) for g, z in out.items()} == {
        "linear": (S, L, 7, K),
        "mlp": (S, L, 7, K),
        "mix": (S, L, 7, K),
        "control-linear": (S, L, 7, K),
        "control-mlp": (S, L, 7, K),
    }
    lin, mlp, mix = model.probes["linear"], model.probes["mlp"], model.probes["mix"]
    with torch.no_grad():
        mix.w.normal_()  # away from the uniform start, so the mask matters
        mix.gamma.uniform_(0.5, 2)
        out = model(x)
        for s in range(S):
            for p in range(L):
                v = x[s, :, p]  # (B, D) layer p
                want = v @ lin.weight[s, p] + lin.bias[s, p]
                assert torch.allclose(out["linear"][s, p], want, atol=TOL)
                h = torch.relu(v @ mlp.weight[s, p] + mlp.bias[s, p])
                want = h @ mlp.out.weight[s, p] + mlp.out.bias[s, p]
                assert torch.allclose(out["mlp"][s, p], want, atol=TOL)
                weights = torch.softmax(mix.w[s, p, : p + 1], 0)  # layers 0..p only
                m = mix.gamma[s, p] * sum(weights[j] * x[s, :, j] for j in range(p + 1))
                want = m @ mix.out.weight[s, p] + mix.out.bias[s, p]
                assert torch.allclose(out["mix"][s, p], want, atol=TOL)
        assert torch.allclose(model.mix_weights()[:, 0, 1:], torch.zeros(S, L - 1))


def test_each_probes_loss_is_its_own():
    model = _probes()
    x, y, yc = torch.randn(S, 9, L, D), torch.randint(0, K, (S, 9)), torch.randint(0, K, (S, 9))
    out = model(x)
    losses = model.losses(out, y, yc)
    for g in GROUPS:
        target = yc if g.startswith("control") else y
        for s in range(S):
            for p in range(L):
                want = F.cross_entropy(out[g][s, p], target[s])
                assert losses[g][s, p].item() == pytest.approx(want.item(), abs=TOL)
    reg = _probes(num_labels=1, kind="regression", groups=("linear",))
    t = torch.randn(S, 9)
    z = reg(x)["linear"]  # (S, P, B, 1)
    want = ((z.squeeze(-1) - t[:, None]) ** 2).mean(-1)  # (S, P)
    assert torch.allclose(reg.losses({"linear": z}, t, None)["linear"], want)


def test_a_probes_start_does_not_depend_on_the_others_built_beside_it():
    full = _probes()
    alone = _probes(seeds=[2], layers=[1], tops=[3], groups=("mlp", "mix"))
    assert torch.equal(full.probes["mlp"].weight[2, 1], alone.probes["mlp"].weight[0, 0])
    assert torch.equal(full.probes["mlp"].out.bias[2, 1], alone.probes["mlp"].out.bias[0, 0])
    assert torch.equal(full.probes["mix"].out.weight[2, 3], alone.probes["mix"].out.weight[0, 0])
    assert not torch.equal(full.probes["linear"].weight[0, 0], full.probes["linear"].weight[1, 0])
    assert probe_seed(0, "linear", 1) == probe_seed(0, "linear", 1) != probe_seed(1, "linear", 1)
    bound = D**-0.5  # nn.Linear's default range
    assert float(full.probes["linear"].weight.detach().abs().max()) <= bound
    assert torch.equal(full.probes["mix"].gamma, torch.ones(S, L))


def _fit(model: LayerProbes, epochs: int = 6, **kw):
    train, selection, report = _data(96, 0), _data(40, 1), _data(30, 2)

    def accuracy(group, preds, data):
        target = data.yc if group.startswith("control") else data.y
        return float((preds == target).double().mean())

    return fit(
        model,
        train,
        selection,
        report,
        accuracy,
        **({"patience": 2, "check_every": 10**6} | kw),
        epochs=epochs,
        batch_size=16,
        lr=1e-2,
        device=torch.device("cpu"),
    )


@pytest.mark.parametrize(
    "group, seed, index",
    [
        ("linear", 1, 2),
        ("mlp", 2, 0),
        ("mix", 0, 3),
        ("control-linear", 0, 1),
        ("control-mlp", 1, 3),
    ],
)
def test_batched_training_gives_each_probe_the_weights_it_gets_alone(group, seed, index):
    """Same seed (initialisation and batch order), same batches: every parameter of the probe
    at its chosen epoch, its epoch and its report predictions match the probe trained alone."""
    torch.manual_seed(0)
    batched = _fit(_probes())
    per_layer = group != "mix"
    one = _probes(
        seeds=[seed],
        layers=[index] if per_layer else [0],
        tops=[index] if not per_layer else [0],
        groups=(group,),
    )
    alone = _fit(one)
    p = index  # the probe's position in the batched model: its layer (or top)
    assert batched.best_check[group][seed, p] == alone.best_check[group][0, 0] > 0
    names = [k for k in alone.state if k.startswith(f"probes.{group}.")]
    assert names
    for name in names:
        assert torch.allclose(batched.state[name][seed, p], alone.state[name][0, 0], atol=TOL), name
    assert (batched.report[group][seed, p] == alone.report[group][0, 0]).all()
    if group == "mix":
        assert torch.allclose(
            torch.from_numpy(batched.mix_weights[seed, p]),
            torch.from_numpy(alone.mix_weights[0, 0]),
            atol=TOL,
        )


def test_the_probes_learn_the_layer_that_decides_and_not_the_control():
    fitted = _fit(_probes(), epochs=20)
    report = _data(30, 2)
    right = (torch.from_numpy(fitted.report["linear"]) == report.y).double().mean(-1)  # (S, L)
    assert float(right[:, 1].min()) > 0.8  # layer 1 decides the labels
    assert float(right[:, [0, 2, 3]].max()) < 0.7
    control = (torch.from_numpy(fitted.report["control-linear"]) == report.yc).double().mean(-1)
    assert float(control.max()) < 0.7  # random labels of unseen examples: no better than luck


def test_checks_come_every_pass_or_every_check_every_examples():
    """96 training examples in batches of 16: six steps a pass; never stopping (patience
    100), two passes check twice, or six times when a check comes every 32 examples."""
    assert (_fit(_probes(), epochs=2, patience=100).checks, _fit(_probes(), 2).passes) == (2, 2.0)
    often = _fit(_probes(), epochs=2, patience=100, check_every=32)
    assert (often.checks, often.passes) == (6, 2.0)
    # probes of random labels stop early: their selection loss soon rises
    stops = _fit(_probes(groups=("control-linear",)), epochs=50, patience=1, check_every=32)
    assert stops.passes < 50 and stops.checks == stops.passes * 3  # stopped before the cap


def test_bad_probes_are_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown groups \['cubic'\]"):
        _probes(groups=("linear", "cubic"))
    with pytest.raises(ValueError, match=r"layers \[4\] outside 0..3"):
        _probes(layers=[0, 4])
