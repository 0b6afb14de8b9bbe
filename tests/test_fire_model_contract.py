"""One contract every 🔥 model passes (`finetune.FireModel`, finetune/base.py): the tiny random
BERT (full fine-tuning and each partial method, classification, pairs, tagging with a BiLSTM
and a CRF) and ELMo from the AllenNLP tiny biLM in ../shared/fixtures.

Each is checked for: the base class; `collate` giving tensors with one row per example (ELMo's
pairs: a row per text) and labels only when every example has its gold answer; forward's
(output, loss) shapes and `predict`'s one answer per example (a tag per word); layer groups,
the output layer first, that hold every trainable parameter exactly once; `trained_state`
saved and loaded into a fresh model giving the same outputs; `refresh_state` idempotent; the
pretrained encoder's parameters named as in the state dict; a full model's encoder saved so
`extractor.load_encoder` reads it. A new model (or option) is one entry in `MODELS`.
"""

from __future__ import annotations

import random

import pytest
import torch

from snowfire.finetune import BertFinetuner, ElmoFinetuner, FireModel, TagScores
from snowfire.tasks import Example, get_task
from tests.helpers import FIXTURES, WORDS, need_shared

ELMO = FIXTURES / "allennlp_elmo"
MODELS = {  # id -> (family, task, model options)
    "bert-sst2": ("bert", "sst2", {}),
    "bert-stsb-pairs": ("bert", "stsb", {}),
    "bert-ner-bilstm-crf": ("bert", "conll2003", {"crf": True, "lstm": 4}),
    "bert-ner-softmax": ("bert", "conll2003", {}),
    "bert-sst2-bitfit": ("bert", "sst2", {"method": "bitfit"}),
    "bert-stsb-adapter": ("bert", "stsb", {"method": "adapter", "adapter_size": 4}),
    "bert-ner-lora": ("bert", "conll2003", {"method": "lora", "lora_rank": 2}),
    "elmo-sst2": ("elmo", "sst2", {}),
    "elmo-stsb-bi-attention": ("elmo", "stsb", {}),
    "elmo-stsb-max-pool": ("elmo", "stsb", {"bi_attention": False}),
    "elmo-ner-crf": ("elmo", "conll2003", {"crf": True}),
}
# A saved and reloaded model computes the same floats in the same order.
RELOAD_TOL = 0.0


def build(name: str, tiny_bert_dir, seed: int = 0) -> FireModel:
    """A fresh model of entry `name`; `seed` draws its new (output layer, adapter) weights."""
    family, task, options = MODELS[name]
    spec = get_task(task)
    k = 1 if spec.kind == "regression" else len(spec.labels)
    torch.manual_seed(seed)
    if family == "bert":
        return BertFinetuner(
            tiny_bert_dir, kind=spec.kind, num_labels=k, labels=spec.labels, **options
        )
    from snowfire.extractor import ElmoBiLM

    need_shared(ELMO)
    bilm = ElmoBiLM.from_files(ELMO / "options.json", ELMO / "lm_weights.hdf5")
    return ElmoFinetuner(
        bilm, kind=spec.kind, pair=spec.pair, num_labels=k, labels=spec.labels, **options
    )


def examples(name: str, gold: bool = True) -> list[Example]:
    """Three examples of the entry's task (1 to 6 words, pairs for a pair task)."""
    spec = get_task(MODELS[name][1])
    rng = random.Random(7)
    out = []
    for i, n in enumerate((4, 1, 6)):
        words = tuple(rng.choice(WORDS) for _ in range(n))
        other = tuple(rng.choice(WORDS) for _ in range(7 - n)) if spec.pair else None
        label = tags = None
        if gold and spec.kind == "tagging":
            tags = tuple(rng.choice(spec.labels) for _ in words)
        elif gold:
            label = rng.uniform(0, 5) if spec.kind == "regression" else spec.labels[i % 2]
        out.append(Example(i, words, other, label=label, tags=tags))
    return out


@pytest.fixture(params=list(MODELS))
def case(request, tiny_bert_dir):
    """(entry name, a fresh model in eval mode)."""
    return request.param, build(request.param, tiny_bert_dir).eval()


def outputs(model: FireModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    with torch.no_grad():
        out, _ = model(batch)
    return out.emissions if isinstance(out, TagScores) else out


def perturb_trained(model: FireModel) -> None:
    """What an optimiser step does to the weights the method trains (and nothing else)."""
    model.layer_groups()  # freezes what the method does not train
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))


def test_is_a_fire_model(case):
    name, model = case
    assert isinstance(model, FireModel)
    assert model.method == MODELS[name][2].get("method", "full")


def test_collate_forward_and_predict_shapes(case):
    name, model = case
    spec = get_task(MODELS[name][1])
    exs = examples(name)
    batch = model.collate(exs)
    assert batch and all(isinstance(v, torch.Tensor) for v in batch.values())
    rows = 2 * len(exs) if isinstance(model, ElmoFinetuner) and spec.pair else len(exs)
    for key, value in batch.items():
        want = len(exs) if key == "labels" else rows
        assert value.shape[0] == want, (key, tuple(value.shape))
    with torch.no_grad():
        out, loss = model(batch)
    assert loss is not None and loss.shape == () and torch.isfinite(loss)
    answers = model.predict(out)
    assert len(answers) == len(exs)
    if spec.kind == "tagging":
        assert isinstance(out, TagScores)
        assert out.emissions.shape[:1] + out.emissions.shape[2:] == (3, len(spec.labels))
        assert [len(a) for a in answers] == [len(e.words_a) for e in exs]
        assert batch["labels"].shape == (3, out.emissions.shape[1])
    else:
        assert out.shape == ((3,) if spec.kind == "regression" else (3, len(spec.labels)))
        assert batch["labels"].shape == (3,)
    unlabelled = model.collate(examples(name, gold=False))
    assert "labels" not in unlabelled
    with torch.no_grad():
        assert model(unlabelled)[1] is None


def test_layer_groups_hold_every_trainable_parameter_exactly_once(case):
    name, model = case
    groups = model.layer_groups()
    assert groups[0][0] == "output" and len({g for g, _ in groups}) == len(groups)
    listed = [id(p) for _, params in groups for p in params]
    assert len(listed) == len(set(listed)), f"{name}: a parameter in two groups"
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert set(listed) == trainable, (
        f"{name}: {len(trainable - set(listed))} trainable parameters in no group, "
        f"{len(set(listed) - trainable)} grouped but frozen"
    )
    assert {id(p) for p in model.output.parameters()} <= {id(p) for p in groups[0][1]}


def test_encoder_parameters_are_the_pretrained_ones_by_state_dict_name(case):
    _, model = case
    named = model.encoder_parameters()
    assert {id(p) for _, p in named} == {id(p) for p in model.pretrained.parameters()}
    state = model.state_dict()
    for n, p in named:
        assert state[n].data_ptr() == p.data_ptr(), n
    output = {id(p) for p in model.output.parameters()}
    assert not output & {id(p) for _, p in named}


def test_trained_state_round_trips_to_equal_outputs(case, tiny_bert_dir, tmp_path):
    name, model = case
    batch = model.collate(examples(name))
    before = outputs(model, batch)
    perturb_trained(model)
    model.refresh_state()
    trained = outputs(model, batch)
    assert not torch.equal(trained, before)  # the round trip below has something to carry
    torch.save(model.trained_state(), tmp_path / "best.pt")
    fresh = build(name, tiny_bert_dir, seed=1).eval()  # other random new weights
    assert not torch.equal(outputs(fresh, batch), trained)
    fresh.load_trained(torch.load(tmp_path / "best.pt", weights_only=True))
    fresh.refresh_state()
    torch.testing.assert_close(outputs(fresh, batch), trained, atol=RELOAD_TOL, rtol=RELOAD_TOL)
    if model.method != "full":  # a partial state is refused unless it covers what trained
        partial = model.trained_state()
        partial.pop(next(iter(partial)))
        with pytest.raises(ValueError, match=f"trained weights of method {model.method}: miss"):
            fresh.load_trained(partial)


def test_refresh_state_is_idempotent(case):
    name, model = case
    perturb_trained(model)  # weights the refreshed state (if any) must follow
    batch = model.collate(examples(name))
    model.refresh_state()
    once = {k: v.clone() for k, v in model.state_dict().items()}
    out = outputs(model, batch)
    model.refresh_state()
    for k, v in model.state_dict().items():
        assert torch.equal(v, once[k]), k
    assert torch.equal(outputs(model, batch), out)


def test_a_full_model_saves_an_encoder_the_extractor_loads(case, tmp_path):
    name, model = case
    if model.method != "full":
        pytest.skip("a partial method keeps what it trained, not an encoder")
    if MODELS[name][1] != "sst2":
        pytest.skip("one task per family is enough: the encoder does not depend on it")
    from snowfire.extractor import load_encoder

    model.save_encoder(tmp_path / "encoder")
    family = "hf" if isinstance(model, BertFinetuner) else "elmo"
    encoder = load_encoder(f"{family}:{tmp_path / 'encoder'}", device="cpu")
    layers = model.num_layers if isinstance(model, BertFinetuner) else model.bilm.num_layers
    assert encoder.num_layers == layers
