"""Discriminative rates, schedules and gradual unfreezing, checked against hand computation;
and which parameters move in which epoch of a real (tiny) run."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from snowfire.finetune import (
    BertFinetuner,
    group_rates,
    lr_multiplier,
    param_groups,
    trainable_depth,
    unfreeze,
)
from tests.helpers.tasks import finetune_config, write_sst2


def test_group_rates_multiply_by_the_factor_per_depth():
    assert group_rates(4, 1e-3, 0.4) == pytest.approx([1e-3, 4e-4, 1.6e-4, 6.4e-5], rel=1e-12)
    assert group_rates(3, 2e-5, 1.0) == [2e-5, 2e-5, 2e-5]
    with pytest.raises(ValueError, match=r"expected a factor in \(0, 1\], got 1.5"):
        group_rates(2, 1e-3, 1.5)
    with pytest.raises(ValueError, match="expected >= 1 group, got 0"):
        group_rates(0, 1e-3, 0.4)


@pytest.fixture
def bert(tiny_bert_dir):
    return BertFinetuner(tiny_bert_dir, kind="classification", num_labels=2, labels=["0", "1"])


def test_bert_layer_groups_hold_the_right_parameters(bert):
    groups = bert.layer_groups()
    assert [name for name, _ in groups] == ["output", "layer1", "layer0", "embeddings"]
    names = {id(p): n for n, p in bert.named_parameters()}
    members = {g: {names[id(p)] for p in params} for g, params in groups}
    assert members["output"] == {"output.linear.weight", "output.linear.bias"}
    for i in (0, 1):
        assert members[f"layer{i}"] and all(
            n.startswith(f"encoder.encoder.layer.{i}.") for n in members[f"layer{i}"]
        )
    assert all(n.startswith("encoder.embeddings.") for n in members["embeddings"])
    pooler = {n for n in names.values() if ".pooler." in n}
    grouped = set().union(*members.values())
    assert grouped | pooler == set(names.values()) and not grouped & pooler  # pooler: no group
    assert all(not p.requires_grad for n, p in bert.named_parameters() if n in pooler)


def test_param_groups_rates_and_weight_decay(bert):
    groups = bert.layer_groups()
    opt_groups = param_groups(groups, 1e-3, 0.4, 0.01)
    by_name = {g["name"]: g for g in opt_groups}
    assert list(by_name) == [
        "output",
        "output/no_decay",
        "layer1",
        "layer1/no_decay",
        "layer0",
        "layer0/no_decay",
        "embeddings",
        "embeddings/no_decay",
    ]
    for g in opt_groups:
        assert g["lr"] == pytest.approx(1e-3 * 0.4 ** g["depth"], rel=1e-12)
        assert g["weight_decay"] == (0.0 if g["name"].endswith("no_decay") else 0.01)
        assert all((p.ndim < 2) == g["name"].endswith("no_decay") for p in g["params"])
    # AdamW keeps them, and the scheduler scales every group by the same f(t)
    opt = torch.optim.AdamW(opt_groups)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_multiplier("linear", 10, 0.2))
    peak = [1e-3 * 0.4 ** g["depth"] for g in opt.param_groups]
    assert [g["initial_lr"] for g in opt.param_groups] == pytest.approx(peak, rel=1e-12)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.5 * r for r in peak])
    opt.step()
    sched.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx(peak, rel=1e-12)
    flat = param_groups(groups, 1e-3, 1.0, 0.0)
    assert {g["lr"] for g in flat} == {1e-3}


def test_param_groups_refuses_a_parameter_twice():
    p = nn.Parameter(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="a parameter of group 'b' is listed twice"):
        param_groups([("a", [p]), ("b", [p])], 1e-3, 0.4, 0.0)


def test_linear_schedule_by_hand():
    f = lr_multiplier("linear", 10, 0.2)  # W = 2: up in 2 steps, then down to 1/8
    assert [f(t) for t in range(10)] == pytest.approx(
        [0.5, 1.0, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8], abs=1e-12
    )
    g = lr_multiplier("linear", 4, 0.0)  # no warm-up: straight decay
    assert [g(t) for t in range(4)] == pytest.approx([1.0, 0.75, 0.5, 0.25], abs=1e-12)


def test_slanted_triangular_schedule_by_hand():
    f = lr_multiplier("slanted", 20, 0.1)  # W = cut = 2, ratio 32
    expected = [1 / 32, (1 + 0.5 * 31) / 32, 1.0]  # p = 0, 1/2, 1
    expected += [(1 + (1 - (t - 2) / 18) * 31) / 32 for t in range(3, 20)]
    assert [f(t) for t in range(20)] == pytest.approx(expected, abs=1e-12)
    assert f(11) == pytest.approx((1 + 0.5 * 31) / 32, abs=1e-12)  # halfway down
    assert min(f(t) for t in range(20)) >= 1 / 32


def test_schedule_errors():
    with pytest.raises(ValueError, match="expected kind 'linear' or 'slanted', got 'cosine'"):
        lr_multiplier("cosine", 10, 0.1)
    with pytest.raises(ValueError, match="expected total_steps >= 1, got 0"):
        lr_multiplier("linear", 0, 0.1)
    with pytest.raises(ValueError, match=r"expected warmup in \[0, 1\), got 1.0"):
        lr_multiplier("linear", 10, 1.0)


def test_unfreeze_by_epoch():
    groups = [(f"g{d}", [nn.Parameter(torch.zeros(1))]) for d in range(3)]
    assert [trainable_depth(e, 3, True) for e in (1, 2, 3, 4, 9)] == [1, 2, 3, 3, 3]
    assert trainable_depth(1, 3, False) == 3
    assert unfreeze(groups, 1, True) == ["g0"]
    assert [p.requires_grad for _, (p,) in groups] == [True, False, False]
    assert unfreeze(groups, 2, True) == ["g0", "g1"]
    assert [p.requires_grad for _, (p,) in groups] == [True, True, False]
    assert unfreeze(groups, 1, False) == ["g0", "g1", "g2"]
    assert all(p.requires_grad for _, (p,) in groups)
    with pytest.raises(ValueError, match="epochs count from 1, got 0"):
        trainable_depth(0, 3, True)


def test_gradual_unfreezing_moves_exactly_the_unfrozen_groups(tiny_bert_dir, tmp_path):
    """Snapshots at each epoch boundary: frozen groups bit-identical, unfrozen ones changed."""
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    steps_per_epoch = 2  # 16 examples, batch 8
    snapshots: dict[int, dict[str, dict[str, torch.Tensor]]] = {}

    def on_step(step, model):
        if step % steps_per_epoch == 0:
            snapshots[step // steps_per_epoch] = {
                group: {str(i): p.detach().clone() for i, p in enumerate(params)}
                for group, params in model.layer_groups()
            }

    cfg = finetune_config(
        f"hf:{tiny_bert_dir}",
        "sst2",
        data,
        tmp_path / "run",
        epochs=5,
        lr=1e-2,
        gradual_unfreezing=True,
        discriminative=0.5,
        patience=10,
    )
    train(cfg, on_step=on_step)
    order = ["output", "layer1", "layer0", "embeddings"]
    assert sorted(snapshots) == [0, 1, 2, 3, 4, 5]
    for epoch in range(1, 6):
        for depth, group in enumerate(order):
            before, after = snapshots[epoch - 1][group], snapshots[epoch][group]
            for key in before:
                same = torch.equal(before[key], after[key])
                if depth < epoch:
                    assert not same, f"epoch {epoch}: {group}[{key}] should have moved"
                else:
                    assert same, f"epoch {epoch}: {group}[{key}] should be frozen"
    assert math.isfinite(snapshots[5]["output"]["0"].sum().item())


def _peak_rates(optimizer) -> dict[str, float]:
    """Each layer group's peak rate (the decayed and no-decay halves share it)."""
    rates: dict[str, float] = {}
    for g in optimizer.param_groups:
        name = g["name"].removesuffix("/no_decay")
        assert rates.setdefault(name, g["initial_lr"]) == g["initial_lr"]
    return rates


def test_default_recipe_bert_family_trains_every_layer_at_one_rate(bert):
    """Issue #16: the ELMo-only discriminative rates are not the BERT-family default."""
    from snowfire.finetune import FinetuneConfig, build_optimizer

    cfg = FinetuneConfig(encoder="minilm", task="stsb", data="d", out="r")
    optimizer, scheduler = build_optimizer(bert, cfg, total_steps=100)
    rates = _peak_rates(optimizer)
    assert list(rates) == ["output", "layer1", "layer0", "embeddings"]
    assert set(rates.values()) == {5e-5}
    # linear warm-up over 10% of the steps, then linear decay (the same factor for all groups)
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx(
        [5e-5 / 10] * len(optimizer.param_groups), rel=1e-12
    )
    assert all(p.requires_grad for _, params in bert.layer_groups() for p in params)


def test_default_recipe_elmo_decays_by_0_4_per_layer():
    from snowfire.extractor.elmo import ElmoBiLM
    from snowfire.finetune import ElmoFinetuner, FinetuneConfig, build_optimizer
    from tests.helpers import FIXTURES, need_shared

    folder = need_shared(FIXTURES / "allennlp_elmo")
    bilm = ElmoBiLM.from_files(folder / "options.json", folder / "lm_weights.hdf5")
    model = ElmoFinetuner(bilm, kind="classification", pair=False, num_labels=2, labels=["0", "1"])
    cfg = FinetuneConfig(encoder=f"elmo:{folder}", task="sst2", data="d", out="r")
    optimizer, _ = build_optimizer(model, cfg, total_steps=100)
    rates = _peak_rates(optimizer)
    assert list(rates) == ["output", "lstm1", "lstm0", "char_cnn"]
    top = rates["output"]
    assert top == 1e-3
    assert [rates[n] / top for n in rates] == pytest.approx([1.0, 0.4, 0.16, 0.064], rel=1e-12)
    assert cfg.settings().schedule == "slanted" and cfg.settings().gradual_unfreezing
