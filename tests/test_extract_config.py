"""The one extraction config: encoder options rebuilt from a stored identity (hf and ELMo) load
the very encoder that made it, and `extract` refuses a plan its stateful encoder did not make."""

from __future__ import annotations

import pytest

from snowfire.cache import Store, identity_content
from snowfire.extractor import ExtractConfig, TextInput, extract, load_encoder
from tests.helpers import FIXTURES, need_shared


def _round_trip(spec: str, **options):
    """(identity of the encoder `options` load, the config rebuilt from it, its identity)."""
    made = load_encoder(spec, device="cpu", **options).identity
    config = ExtractConfig.from_identity(made, store="s", device="cpu")
    again = load_encoder(config.encoder, **config.encoder_options()).identity
    return made, config, again


@pytest.mark.parametrize(
    ("options", "fields"),
    [
        ({}, {"pair_encoding": "joint", "max_length": 64}),  # the tiny model's limit, recorded
        (
            {"pair_encoding": "separate", "max_length": 16},
            {"pair_encoding": "separate", "max_length": 16},
        ),
    ],
)
def test_an_hf_identity_rebuilds_the_options_that_made_it(tiny_bert_dir, options, fields):
    made, config, again = _round_trip(f"hf:{tiny_bert_dir}", **options)
    assert again == made
    assert {k: getattr(config, k) for k in fields} == fields
    assert (config.encoder, config.store, config.device) == (f"hf:{tiny_bert_dir}", "s", "cpu")


@pytest.mark.parametrize(
    ("options", "fields"),
    [
        ({}, {"elmo_state": "fixed", "pair_encoding": "separate"}),
        ({"elmo_state": "stateful", "batch_size": 3}, {"elmo_state": "stateful", "batch_size": 3}),
    ],
)
def test_an_elmo_identity_rebuilds_the_options_that_made_it(options, fields):
    model = need_shared(FIXTURES / "allennlp_elmo")
    made, config, again = _round_trip(f"elmo:{model}", **options)
    assert again == made
    assert identity_content(again) == identity_content(made)
    assert {k: getattr(config, k) for k in fields} == fields


def test_an_identity_without_a_spec_is_refused_naming_it():
    with pytest.raises(ValueError, match="names no spec to load it from .*'hf', name 'x'"):
        ExtractConfig.from_identity({"kind": "hf", "name": "x"}, store="s")


def test_a_stateful_encoder_refuses_a_plan_of_another_batch_size(tmp_path):
    """Its identity records the batch size its carried state runs on; a config planning other
    batches would store features that identity does not describe."""
    model = need_shared(FIXTURES / "allennlp_elmo")
    enc = load_encoder(f"elmo:{model}", elmo_state="stateful", batch_size=3, device="cpu")
    config = ExtractConfig(
        encoder=f"elmo:{model}", store=str(tmp_path / "s"), progress=False, elmo_state="stateful"
    )
    with pytest.raises(ValueError, match="across batches of 3 examples .* batches of 32"):
        extract(
            enc,
            [TextInput(("a", "dog"))],
            Store(tmp_path / "s"),
            task=None,
            split=None,
            config=config,
        )
    assert not (tmp_path / "s").exists()
