"""Partial-method 🔥 runs switched onto one shared encoder (finetune/shared.py): each predicts
bitwise what its solo model predicts, whatever ran before it, and the shared encoder's own
tensors stay bitwise the pretrained ones."""

from __future__ import annotations

import pytest
import torch

from snowfire.finetune import SharedEncoder, load_run, load_shared_run, predict_outputs
from snowfire.finetune import train as finetune
from snowfire.tasks import read_split
from tests.helpers.tasks import finetune_config

METHODS = ("adapter", "lora", "bitfit")


@pytest.fixture(scope="module")
def runs(tiny_bert_dir, data_dir, tmp_path_factory):
    """One finished run per partial method (STS-B: floats show every bit), a LoRA run of
    another rank (two LoRA adapters on one encoder) and one on every linear map (all-linear:
    LoRA layers where the other runs have none, and around the biases BitFit swaps)."""
    root = tmp_path_factory.mktemp("shared-runs")
    made = {}
    for name, method, extra in (
        *((m, m, {}) for m in METHODS),
        ("lora-r4", "lora", {"lora_rank": 4, "lora_alpha": 16.0}),
        ("lora-all", "lora", {"lora_rank": 2, "lora_targets": "all-linear"}),
    ):
        cfg = finetune_config(
            f"hf:{tiny_bert_dir}", "stsb", data_dir, root / name, epochs=1, method=method, **extra
        )
        finetune(cfg)
        made[name] = root / name
    return made


def _solo(run, examples):
    model, _ = load_run(run, "cpu")
    return predict_outputs(model, examples, 8, torch.device("cpu"))[0]


def test_each_run_predicts_bitwise_what_it_predicts_alone(runs, tiny_bert_dir, data_dir):
    examples = read_split("stsb", data_dir, "dev")
    shared = SharedEncoder(f"hf:{tiny_bert_dir}", device="cpu")
    pretrained = {n: t.clone() for n, t in shared.base_state().items()}
    models = {name: load_shared_run(run, shared)[0] for name, run in runs.items()}
    # interleaved: each run after another run's variant was switched in and out
    for name in [*runs, *reversed(runs)]:
        got = predict_outputs(models[name], examples, 8, torch.device("cpu"))[0]
        assert got == _solo(runs[name], examples), name
    after = shared.base_state()
    assert after.keys() == pretrained.keys()
    assert all(torch.equal(after[n], pretrained[n]) for n in pretrained)
    # and the plain encoder, with no run active, is the pretrained one: its output unchanged
    from transformers import AutoModel

    fresh = AutoModel.from_pretrained(tiny_bert_dir).eval()
    ids = {"input_ids": torch.tensor([[2, 7, 9, 3]]), "attention_mask": torch.ones(1, 4).long()}
    with torch.inference_mode():
        assert torch.equal(shared.encoder(**ids).last_hidden_state, fresh(**ids).last_hidden_state)


def test_the_runs_share_one_encoder_and_count_only_their_own_bytes(runs, tiny_bert_dir):
    shared = SharedEncoder(f"hf:{tiny_bert_dir}", device="cpu")
    models = {name: load_shared_run(run, shared) for name, run in runs.items()}
    assert all(m.encoder is shared.encoder for m, _, _ in models.values())
    best = {name: torch.load(run / "best.pt", weights_only=True) for name, run in runs.items()}
    for name, (_, _, slot) in models.items():
        own = sum(
            t.numel() * t.element_size()
            for k, t in best[name].items()
            if not k.startswith("output.")
        )
        assert shared.slot_bytes(slot.name) == own, name
    assert shared.base_bytes() == sum(
        p.numel() * p.element_size() for p in shared.base_state().values()
    )


def test_a_run_of_another_encoder_or_a_full_run_is_refused(runs, tiny_bert_dir, data_dir, tmp_path):
    full = tmp_path / "full"
    finetune(finetune_config(f"hf:{tiny_bert_dir}", "stsb", data_dir, full, epochs=1))
    shared = SharedEncoder(f"hf:{tiny_bert_dir}", device="cpu")
    with pytest.raises(ValueError, match="a full run carries its whole encoder"):
        load_shared_run(full, shared)
    other = SharedEncoder("minilm", device="cpu")
    with pytest.raises(ValueError, match="is not the one the run trained on .weights_sha256"):
        load_shared_run(runs["lora"], other)
    with pytest.raises(ValueError, match="is BERT-family .minilm or hf:DIR., got 'elmo:x'"):
        SharedEncoder("elmo:x")


def test_a_tensor_that_fits_nowhere_is_named(tiny_bert_dir):
    shared = SharedEncoder(f"hf:{tiny_bert_dir}", device="cpu")
    bias = torch.zeros(3)
    with pytest.raises(ValueError, match=r"encoder.pooler.dense.bias: shape \(3,\), the shared"):
        shared.add("bitfit", {"encoder.pooler.dense.bias": bias}, **_SIZES)
    with pytest.raises(ValueError, match="encoder.nowhere.bias: no place for it on the shared"):
        shared.add("bitfit", {"encoder.nowhere.bias": bias}, **_SIZES)
    with pytest.raises(ValueError, match="the run's weights hold no encoder.layer.0"):
        shared.add("lora", {}, **_SIZES)
    with pytest.raises(KeyError, match="no run in slot 'run9'"):
        with shared.active("run9"):
            pass


_SIZES = {"adapter_size": 4, "lora_rank": 2, "lora_alpha": 2.0}
