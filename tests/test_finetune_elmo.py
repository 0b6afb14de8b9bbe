"""🔥 ELMo with the AllenNLP tiny biLM fixture: the weights file round trip, the output layers
(no parameters beyond the output layer and the scalar mix), batch independence under the fixed
state, and end-to-end runs (classification, pair with bi-attention, NER with a CRF) whose saved
encoder extracts the fine-tuned states.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from snowfire.tasks import Example, get_task, read_split
from tests.helpers import FIXTURES, need_shared
from tests.helpers.tasks import check_run, finetune_config, write_conll, write_sst2, write_stsb

ELMO = FIXTURES / "allennlp_elmo"


@pytest.fixture(scope="module")
def elmo_files():
    need_shared(ELMO)
    return ELMO / "options.json", ELMO / "lm_weights.hdf5"


def _bilm(elmo_files):
    from snowfire.extractor.elmo import ElmoBiLM

    return ElmoBiLM.from_files(*elmo_files)


def test_tf_arrays_equal_the_file_and_save_round_trips(elmo_files, tmp_path):
    from snowfire.extractor.elmo import ElmoBiLM, read_options, read_weights
    from snowfire.finetune import save_bilm, tf_arrays

    original = read_weights(elmo_files[1], read_options(elmo_files[0]))
    bilm = _bilm(elmo_files)
    arrays = tf_arrays(bilm)
    assert arrays.keys() == original.keys()
    for key, value in original.items():
        np.testing.assert_array_equal(arrays[key], value, err_msg=key)
    with torch.no_grad():  # change every weight, save, read back: bit-identical parameters
        for p in bilm.parameters():
            p.add_(0.01 * torch.randn_like(p))
        bilm.token_embedder.char_embedding.weight[0].zero_()  # the padding row is not stored
    options, weights = save_bilm(bilm, tmp_path / "enc")
    assert options.name == "options.json" and weights.name == "weights.hdf5"
    again = ElmoBiLM.from_files(options, weights)
    for (name, a), b in zip(bilm.state_dict().items(), again.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


@pytest.mark.parametrize(
    ("task", "bi_attention", "extra"),
    [("sst2", True, 1), ("stsb", True, 16), ("stsb", False, 2), ("conll2003", True, 1)],
)
def test_only_the_output_layer_and_mix_are_added(elmo_files, task, bi_attention, extra):
    from snowfire.finetune import ElmoFinetuner

    spec = get_task(task)
    k = 1 if spec.kind == "regression" else len(spec.labels)
    bilm = _bilm(elmo_files)
    model = ElmoFinetuner(
        bilm,
        kind=spec.kind,
        pair=spec.pair,
        num_labels=k,
        labels=spec.labels,
        bi_attention=bi_attention,
    )
    d, n_layers = bilm.output_dim, bilm.num_layers
    crf = (k + 2) * k if spec.kind == "tagging" else 0  # transitions, start, end
    added = sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in bilm.parameters())
    assert added == (extra * d + 1) * k + crf + n_layers + 1  # W, b, CRF, mix w (L,), gamma
    names = [name for name, _ in model.layer_groups()]
    assert names == ["output", "lstm1", "lstm0", "char_cnn"]


@pytest.mark.parametrize("task", ["sst2", "stsb", "conll2003"])
def test_a_batch_gives_what_each_example_gives_alone(elmo_files, task):
    """Fixed state + masking: padding and neighbours never change an example's output."""
    from snowfire.finetune import ElmoFinetuner

    spec = get_task(task)
    torch.manual_seed(0)
    model = ElmoFinetuner(
        _bilm(elmo_files),
        kind=spec.kind,
        pair=spec.pair,
        num_labels=1 if spec.kind == "regression" else len(spec.labels),
        labels=spec.labels,
    ).eval()
    words = [
        "the man plays guitar".split(),
        "a dog".split(),
        "some people eat food in the park".split(),
    ]
    examples = [
        Example(
            i,
            tuple(w),
            tuple(words[(i + 1) % 3]) if spec.pair else None,
            tags=tuple("O" for _ in w) if spec.kind == "tagging" else None,
        )
        for i, w in enumerate(words)
    ]
    with torch.no_grad():
        together, _ = model(model.collate(examples))
        alone = [model(model.collate([e]))[0] for e in examples]
    if spec.kind == "tagging":
        for b, (out, e) in enumerate(zip(alone, examples, strict=True)):
            n = len(e.words_a)
            torch.testing.assert_close(
                together.emissions[b, :n], out.emissions[0, :n], atol=1e-5, rtol=1e-5
            )
    else:
        torch.testing.assert_close(together, torch.cat(alone), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("task", "writer", "kw"),
    [
        ("sst2", write_sst2, {}),
        ("stsb", write_stsb, {"bi_attention": True}),
        (
            "conll2003",
            write_conll,
            {"crf": True, "gradual_unfreezing": True, "epochs": 3, "lr": 0.03},
        ),
    ],
)
def test_elmo_run_end_to_end(elmo_files, tmp_path, task, writer, kw):
    from snowfire.extractor import TextInput, load_encoder
    from snowfire.finetune import build_model, train

    data = writer(tmp_path / "data")
    cfg = finetune_config(f"elmo:{ELMO}", task, data, tmp_path / "run", **({"lr": 3e-3} | kw))
    metrics = train(cfg)
    run = tmp_path / "run"
    check_run(run, task, data, metrics)
    config = json.loads((run / "config.json").read_text())
    assert config["encoder"]["kind"] == "elmo" and config["encoder"]["state_policy"] == "fixed"

    # the saved encoder, loaded by the extractor with the fixed policy, gives our states
    model, _ = build_model(cfg, get_task(task))
    best = torch.load(run / "best.pt", weights_only=True)
    model.load_state_dict(best)
    model.eval().refresh_state()
    # the run evaluated (and saved) the best weights with their own warm-up state
    torch.testing.assert_close(best["warm_h"], model.warm_h, rtol=0, atol=0)
    torch.testing.assert_close(best["warm_c"], model.warm_c, rtol=0, atol=0)
    encoder = load_encoder(f"elmo:{run / 'encoder'}", device="cpu")
    for example in read_split(task, data, "dev")[:3]:
        got = encoder.encode([encoder.prepare(0, TextInput(example.words_a, example.words_b))])
        for words, offset in ((example.words_a, 0), (example.words_b, len(example.words_a))):
            if words is None:
                continue
            from snowfire.extractor.elmo import batch_to_ids

            with torch.no_grad():
                layers, _ = model.layers(batch_to_ids([list(words)]))  # (L, 1, T, D)
            ours = layers[:, 0].permute(1, 0, 2).numpy()  # (T, L, D)
            theirs = got[0].features[offset : offset + len(words)]
            np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-5)
    # fine-tuning moved the biLM, unless the best epoch was gradual unfreezing's first
    before = load_encoder(f"elmo:{ELMO}", device="cpu")
    text = TextInput(("the", "man"))
    old = before.encode([before.prepare(0, text)])[0].features
    new = encoder.encode([encoder.prepare(0, text)])[0].features
    gradual = config["recipe"]["settings"]["gradual_unfreezing"]  # the elmo recipe: sst2, NER
    assert gradual == (task != "stsb")
    if gradual and config["best_epoch"] == 1:
        np.testing.assert_array_equal(old, new)
    else:
        assert not np.allclose(old, new, atol=1e-6)
    if gradual:
        log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
        assert [r["trainable"] for r in log] == [
            ["output"],
            ["output", "lstm1"],
            ["output", "lstm1", "lstm0"],
        ][: len(log)]
