"""The arms between ❄️ and 🔥 on the tiny BERT (finetune/methods.py): each trains exactly what
it should, the rest of the encoder stays bitwise the pretrained one; the adapter is Houlsby's
definition; L2-SP's penalty is the hand computation; LP-FT starts at the probe; a sequential
run starts at its intermediate encoder; a saved partial run reloads and predicts the same."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from snowfire.finetune import Adapter, BertFinetuner, l2sp_penalty, load_run
from snowfire.finetune import train as finetune
from snowfire.rundir import RunConfigError
from snowfire.tasks import Example, read_predictions, read_split
from tests.helpers.store import train_cli
from tests.helpers.tasks import finetune_config


def _model(tiny_bert_dir, method, **kw):
    torch.manual_seed(0)
    return BertFinetuner(tiny_bert_dir, kind="regression", num_labels=1, method=method, **kw)


def _step(model, lr=1e-2):
    """One AdamW step over the model's layer groups on a pair batch; the names with a grad."""
    groups = model.layer_groups()
    for _, params in groups:
        for p in params:
            p.requires_grad_(True)
    batch = model.collate(
        [
            Example(0, ("a", "dog", "runs"), ("the", "cat"), label=3.5),
            Example(1, ("a", "man"), ("a", "woman"), label=1.0),
        ]
    )
    model.train()
    _, loss = model(batch)
    loss.backward()
    with_grad = {n for n, p in model.named_parameters() if p.grad is not None}
    torch.optim.AdamW([p for _, ps in groups for p in ps], lr=lr).step()
    return with_grad


@pytest.mark.parametrize("method", ["full", "bitfit", "adapter", "lora"])
def test_each_method_trains_exactly_its_parameters_and_leaves_the_rest_bitwise(
    tiny_bert_dir, method
):
    model = _model(tiny_bert_dir, method)
    before = {n: p.detach().clone() for n, p in model.encoder.named_parameters()}
    with_grad = _step(model)
    encoder = {n[len("encoder.") :] for n in with_grad if n.startswith("encoder.")}
    names = {n for n in before if not n.startswith("pooler.")}
    expected = {
        "full": names,
        "bitfit": {n for n in names if n.endswith(".bias")},
        "adapter": {n for n in names if "LayerNorm" in n},
        "lora": {n for n in model.encoder.state_dict() if ".lora_" in n},
    }[method]
    assert encoder == expected
    if method == "lora":  # rank 8 on query and value of each of the 2 layers: A (8, 32), B (32, 8)
        assert len(encoder) == 2 * 2 * 2
        assert sum(dict(model.encoder.named_parameters())[n].numel() for n in encoder) == (
            2 * 2 * (8 * 32 + 32 * 8)
        )
    if method == "adapter":  # two per layer, each W_down (64, 32) + b (64) + W_up (32, 64) + b (32)
        adapters = {n for n in with_grad if n.startswith("adapters.")}
        assert len(adapters) == 2 * 2 * 4
        assert sum(p.numel() for p in model.adapters.parameters()) == 4 * (2 * 32 * 64 + 64 + 32)
    assert {n for n in with_grad if n.startswith("output.")} == {
        "output.linear.weight",
        "output.linear.bias",
    }
    after = dict(model.encoder.named_parameters())
    for name, old in before.items():
        if name in expected:
            continue
        assert torch.equal(after[name], old), name  # untouched, bit for bit
    changed = [n for n in expected if n in before and not torch.equal(after[n], before[n])]
    assert method == "lora" or changed  # lora's B starts at 0, A moves only through B's update


def test_lora_on_every_linear_map_adapts_the_mlp_too(tiny_bert_dir):
    """lora_targets all-linear: query, key, value, the attention's output and both feed-forward
    maps of each of the 2 layers (6 × 2 = 12 maps), rank 8: A (8, in) and B (out, 8) each; the
    tiny BERT is 32 wide with a 64-wide feed-forward layer."""
    model = _model(tiny_bert_dir, "lora", lora_targets="all-linear")
    adapted = {n.rsplit(".lora_", 1)[0] for n in model.encoder.state_dict() if ".lora_A." in n}
    assert len(adapted) == 12
    assert {n.split("layer.0.", 1)[1] for n in adapted if "layer.0." in n} == {
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    }
    ffn = model.encoder.config.intermediate_size
    sizes = {"intermediate.dense": (32, ffn), "output.dense": (ffn, 32)}  # (in, out)
    expected = 2 * sum(8 * i + o * 8 for i, o in [*[(32, 32)] * 4, *sizes.values()])
    trained = [n for n in _step(model) if ".lora_" in n]
    assert sum(dict(model.named_parameters())[n].numel() for n in trained) == expected
    with pytest.raises(ValueError, match=r"lora targets: expected one of attention, all-linear"):
        _model(tiny_bert_dir, "lora", lora_targets="mlp")


def test_a_partial_method_counts_only_what_it_trains(tiny_bert_dir):
    full = sum(p.numel() for _, ps in _model(tiny_bert_dir, "full").layer_groups() for p in ps)
    for method in ("bitfit", "adapter", "lora"):
        model = _model(tiny_bert_dir, method)
        trained = sum(p.numel() for _, ps in model.layer_groups() for p in ps)
        assert 0 < trained < full
        for p in model.parameters():  # e.g. a caller that unfroze all: a getter changes nothing
            p.requires_grad_(True)
        kept = set(model.trained_state())
        assert all(p.requires_grad for p in model.parameters())
        assert kept == {
            n
            for n, p in model.named_parameters()
            if any(p is q for _, ps in model.layer_groups() for q in ps)
        }


def test_the_adapter_is_houlsbys_definition():
    torch.manual_seed(1)
    a = Adapter(6, 3)
    h = torch.randn(2, 4, 6)
    w_down, b_down = a.down.weight.detach().numpy(), a.down.bias.detach().numpy()
    w_up, b_up = a.up.weight.detach().numpy(), a.up.bias.detach().numpy()
    x = h.numpy()
    z = x @ w_down.T + b_down
    gelu = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    expected = x + gelu @ w_up.T + b_up
    np.testing.assert_allclose(a(h).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    # near-identity start: weights N(0, 0.01²) truncated at 2 sd, biases 0
    assert (
        float(a.down.weight.detach().abs().max()) <= 0.02
        and float(a.up.bias.detach().abs().max()) == 0.0
    )
    assert float((a(h) - h).detach().abs().max()) < 0.05


def test_adapters_sit_after_both_output_projections_of_every_layer(tiny_bert_dir):
    model = _model(tiny_bert_dir, "adapter")
    assert sorted(model.adapters) == [
        "layer0_attention",
        "layer0_ffn",
        "layer1_attention",
        "layer1_ffn",
    ]
    dense = model.encoder.encoder.layer[1].output.dense
    x = torch.randn(3, dense.in_features)
    plain = torch.nn.functional.linear(x, dense.weight, dense.bias)
    torch.testing.assert_close(dense(x), model.adapters["layer1_ffn"](plain))


def test_l2sp_penalty_is_the_hand_computation():
    torch.manual_seed(2)
    a, b = torch.nn.Parameter(torch.randn(3, 4)), torch.nn.Parameter(torch.randn(5))
    anchors = {"a": a.detach().clone(), "b": b.detach().clone()}
    assert float(l2sp_penalty([("a", a), ("b", b)], anchors).detach()) == 0.0
    with torch.no_grad():
        a[0, 1] += 0.5
        b[3] -= 2.0
    assert float(l2sp_penalty([("a", a), ("b", b)], anchors).detach()) == pytest.approx(0.25 + 4.0)
    b.requires_grad_(False)  # a frozen weight is not pulled
    assert float(l2sp_penalty([("a", a), ("b", b)], anchors).detach()) == pytest.approx(0.25)


def test_an_l2sp_run_adds_lambda_times_the_penalty(tiny_bert_dir, data_dir, tmp_path):
    """With λ huge the encoder barely moves from the pretrained weights; λ = 0 moves it."""
    moved = {}
    for lam in (0.0, 1e4):
        run = tmp_path / f"l2sp{lam:g}"
        finetune(
            finetune_config(
                f"hf:{tiny_bert_dir}", "stsb", data_dir, run, epochs=1, l2sp=lam, lr=1e-3
            )
        )
        model, _ = load_run(run, "cpu")
        start = _model(tiny_bert_dir, "full")
        moved[lam] = sum(
            float((p - q).pow(2).sum())
            for (_, p), (_, q) in zip(
                model.encoder.named_parameters(), start.encoder.named_parameters(), strict=True
            )
        )
        config = json.loads((run / "config.json").read_text())
        assert config["finetune"]["l2sp"] == lam
    assert moved[1e4] < moved[0.0] / 10


def test_lp_ft_starts_at_the_probes_weights(tiny_bert_dir, data_dir, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    from snowfire.cli.main import main as snowfire

    store, probe = tmp_path / "store", tmp_path / "probe"
    assert (
        snowfire(
            [
                "extract",
                "--encoder",
                f"hf:{tiny_bert_dir}",
                "--task",
                "stsb",
                "--data",
                str(data_dir),
                "--store",
                str(store),
                "--pair-encoding",
                "joint",
                "--quiet",
            ]
        )
        == 0
    )
    train_cli(
        tiny_bert_dir,
        data_dir,
        store,
        probe,
        "stsb",
        "probe",
        "--hparams",
        '{"pool": "cls"}',
        "--pair-encoding",
        "joint",
    )
    seen = {}

    def on_step(step, model):
        if step == 0:
            seen.update({k: v.clone() for k, v in model.output.linear.state_dict().items()})

    cfg = finetune_config(
        f"hf:{tiny_bert_dir}", "stsb", data_dir, tmp_path / "lpft", epochs=1, init_head=str(probe)
    )
    finetune(cfg, on_step=on_step)
    weights = load_file(str(probe / "weights.safetensors"))
    torch.testing.assert_close(seen["weight"], weights["out.weight"].float(), rtol=0, atol=0)
    torch.testing.assert_close(seen["bias"], weights["out.bias"].float(), rtol=0, atol=0)
    # the probe's weights are part of what the run is: a rerun reuses it while they are the
    # same, and refuses it once the probe was retrained in place (finished and checkpointed)
    reused = finetune(cfg, on_step=lambda s, m: pytest.fail("trained again"))
    assert reused == json.loads((tmp_path / "lpft" / "metrics.json").read_text())
    killed = finetune_config(
        f"hf:{tiny_bert_dir}",
        "stsb",
        data_dir,
        tmp_path / "killed",
        epochs=1,
        init_head=str(probe),
        checkpoint_every=1,
    )

    def kill(step, model):
        if step == 2:
            raise KeyboardInterrupt("Ctrl-C at step 2")

    with pytest.raises(KeyboardInterrupt, match="Ctrl-C at step 2"):
        finetune(killed, on_step=kill)
    assert (tmp_path / "killed" / "checkpoint.pt").is_file()
    retrained = {k: v + 0.5 for k, v in weights.items()}
    save_file(retrained, str(probe / "weights.safetensors"))
    with pytest.raises(
        RunConfigError,
        match="holds a finished run from other starting weights "
        r"\(init_head_sha256: saved \w{64}, now \w{64}\)",
    ):
        finetune(cfg)
    with pytest.raises(
        RunConfigError,
        match="checkpoint.pt was written by a run from other starting weights .init_head_sha256",
    ):
        finetune(killed)
    # asked to (a start trained again on another machine), the finished run is kept with the
    # start it recorded, its files untouched; a checkpoint still is not: it would go on from
    # one start with the other's head
    saved = {p.name: p.read_bytes() for p in (tmp_path / "lpft").iterdir() if p.is_file()}
    capsys.readouterr()
    keep = replace(cfg, keep_remade_start=True)
    assert finetune(keep, on_step=lambda s, m: pytest.fail("trained again")) == reused
    said = capsys.readouterr().out
    assert "holds a finished run from other starting weights (init_head_sha256: saved" in said
    assert said.rstrip().endswith("kept (--keep-remade-start)")
    assert saved == {p.name: p.read_bytes() for p in (tmp_path / "lpft").iterdir() if p.is_file()}
    with pytest.raises(RunConfigError, match="checkpoint.pt was written by a run from other"):
        finetune(replace(killed, keep_remade_start=True))
    mean_probe = tmp_path / "probe-mean"
    train_cli(tiny_bert_dir, data_dir, store, mean_probe, "stsb", "probe")
    with pytest.raises(ValueError, match="top layer's \\[CLS\\] state"):
        finetune(
            finetune_config(
                f"hf:{tiny_bert_dir}", "stsb", data_dir, tmp_path / "x", init_head=str(mean_probe)
            )
        )


def test_lp_ft_on_tagging_starts_where_the_word_probe_ends(tiny_bert_dir, data_dir, tmp_path):
    """A tagging probe reads each word's first piece on the top layer, what 🔥's tagger output
    layer reads: before its first step, the LP-FT model predicts dev exactly as the probe did."""
    from safetensors.torch import load_file

    from snowfire.cli.main import main as snowfire

    store, probe = tmp_path / "store", tmp_path / "probe"
    extract = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "conll2003"]
    extract += ["--data", str(data_dir), "--store", str(store), "--dtype", "float32", "--quiet"]
    assert snowfire(extract) == 0
    train_cli(tiny_bert_dir, data_dir, store, probe, "conll2003", "probe")
    assert json.loads((probe / "head.json").read_text())["head"]["pool"] == "word"
    cfg = finetune_config(
        f"hf:{tiny_bert_dir}",
        "conll2003",
        data_dir,
        tmp_path / "lpft",
        epochs=1,
        init_head=str(probe),
    )
    dev = read_split(cfg.spec, data_dir, "dev")
    seen: dict = {}

    def on_step(step, model):
        if step == 0:
            seen.update({k: v.clone() for k, v in model.output.linear.state_dict().items()})
            model.eval()
            with torch.no_grad():
                out, _ = model(model.collate(dev))
            seen["dev"] = [[cfg.spec.labels[t] for t in s] for s in model.predict(out)]
            model.train()

    finetune(cfg, on_step=on_step)
    weights = load_file(str(probe / "weights.safetensors"))
    torch.testing.assert_close(seen["weight"], weights["out.weight"].float(), rtol=0, atol=0)
    torch.testing.assert_close(seen["bias"], weights["out.bias"].float(), rtol=0, atol=0)
    _, probed = read_predictions(probe / "predictions" / "dev.tsv", "tagging")
    assert seen["dev"] == probed
    with pytest.raises(ValueError, match="this one has a CRF the probe never trained"):
        finetune_config(
            f"hf:{tiny_bert_dir}",
            "conll2003",
            data_dir,
            tmp_path / "c",
            init_head=str(probe),
            crf=True,
        )
    with pytest.raises(ValueError, match="a probe of a tagging task, this is regression"):
        finetune(
            finetune_config(
                f"hf:{tiny_bert_dir}", "stsb", data_dir, tmp_path / "s", init_head=str(probe)
            )
        )


def test_a_sequential_run_starts_from_the_intermediate_encoder(tiny_bert_dir, data_dir, tmp_path):
    first = tmp_path / "sst2"
    finetune(finetune_config(f"hf:{tiny_bert_dir}", "sst2", data_dir, first, epochs=1))
    seen = {}

    def on_step(step, model):
        if step == 0:
            seen.update({k: v.clone() for k, v in model.encoder.state_dict().items()})

    finetune(
        finetune_config(f"hf:{first / 'encoder'}", "stsb", data_dir, tmp_path / "then", epochs=1),
        on_step=on_step,
    )
    from safetensors.torch import save_file
    from transformers import AutoModel

    intermediate = AutoModel.from_pretrained(first / "encoder").state_dict()
    pretrained = AutoModel.from_pretrained(tiny_bert_dir).state_dict()
    assert seen.keys() == intermediate.keys()
    assert all(torch.equal(seen[k], intermediate[k]) for k in seen)
    assert not all(torch.equal(seen[k], pretrained[k]) for k in seen)
    # the intermediate run trained again in place: the run that started from it is not reused
    then = finetune_config(f"hf:{first / 'encoder'}", "stsb", data_dir, tmp_path / "then", epochs=1)
    assert finetune(then, on_step=lambda s, m: pytest.fail("trained again")) is not None
    save_file(
        {k: v + 0.01 for k, v in intermediate.items()}, str(first / "encoder" / "model.safetensors")
    )
    with pytest.raises(RunConfigError, match="encoder_weights_sha256: saved"):
        finetune(then)


@pytest.mark.parametrize("method", ["adapter", "lora", "bitfit"])
def test_a_saved_partial_run_reloads_and_predicts_the_same(
    tiny_bert_dir, data_dir, tmp_path, method
):
    from snowfire import predict
    from snowfire.heads import PredictConfig

    run = tmp_path / method
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "stsb", data_dir, run, method=method)
    metrics = finetune(cfg)
    assert not (run / "encoder").exists()  # it keeps what it trained, not the encoder
    best = torch.load(run / "best.pt", weights_only=True)
    assert not any(k.startswith("encoder.") and k.endswith("word_embeddings.weight") for k in best)
    config = json.loads((run / "config.json").read_text())
    cost = config["cost"]
    assert cost["trainable_params"] == sum(v.numel() for v in best.values())
    assert cost["saved_bytes"] == (run / "best.pt").stat().st_size
    assert cost["peak_rss_mb"] > 0 and cost["examples_per_s"] > 0
    # predict the dev texts from the saved run: the same as the run wrote at its end
    dev = read_split("stsb", data_dir, "dev")
    texts = tmp_path / "dev.jsonl"
    pairs = [{"text_a": " ".join(e.words_a), "text_b": " ".join(e.words_b)} for e in dev]
    texts.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    out = tmp_path / "pred.tsv"
    got = predict(PredictConfig(run=str(run), input=str(texts), out=str(out))).predictions
    _, saved = read_predictions(run / "predictions" / "dev.tsv", "regression")
    np.testing.assert_allclose(got, saved, rtol=0, atol=1e-4)  # the .tsv keeps 4-6 digits
    # a rerun recomputes nothing
    calls = []
    assert finetune(cfg, on_step=lambda s, m: calls.append(s)) == metrics and not calls


def test_methods_are_refused_where_they_do_not_apply(data_dir, tmp_path):
    with pytest.raises(ValueError, match="method lora is for BERT-family encoders"):
        finetune_config("elmo:a.json,b.hdf5", "stsb", data_dir, tmp_path / "e", method="lora")
    with pytest.raises(ValueError, match="init_head: a probe starts a per-word softmax"):
        finetune_config(
            "minilm", "conll2003", data_dir, tmp_path / "t", init_head="x", output_lstm=8
        )


def test_curve_points_within_an_epoch_leave_the_training_unchanged(
    tiny_bert_dir, data_dir, tmp_path
):
    """Dev scored twice inside each epoch: the log holds those points before the epoch's, at
    the batches' fractions, and the weights and metrics equal a run without them."""
    from snowfire.compare.convergence import read_curve

    plain = finetune(finetune_config(f"hf:{tiny_bert_dir}", "stsb", data_dir, tmp_path / "a"))
    run = tmp_path / "b"
    dense = finetune(finetune_config(f"hf:{tiny_bert_dir}", "stsb", data_dir, run, curve_points=2))
    assert dense == plain
    a = torch.load(tmp_path / "a" / "best.pt", weights_only=True)
    b = torch.load(run / "best.pt", weights_only=True)
    assert all(torch.equal(a[k], b[k]) for k in a)
    trained = json.loads((run / "config.json").read_text())["num_examples"]["train"]
    batches = -(-trained // 8)  # the pairs that train (a slice of train selects), batches of 8
    marks = [round(k * batches / 3) / batches for k in (1, 2)]
    assert [x for x, _ in read_curve(run, "pearson")] == [
        e + m for e in (0, 1) for m in (*marks, 1.0)
    ]
    with pytest.raises(ValueError, match="curve_points: for BERT-family"):
        finetune_config("elmo:a.json,b.hdf5", "stsb", data_dir, tmp_path / "e", curve_points=2)
