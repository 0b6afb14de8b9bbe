"""FinetuneConfig: checked fields with expected-vs-got errors, and the CLI flags built from it."""

from __future__ import annotations

import argparse

import pytest

from finetune import RECIPES, FinetuneConfig, add_arguments, from_args

BASE = dict(encoder="minilm", task="sst2", data="data", out="run")


def test_defaults_follow_the_family_recipe():
    cfg = FinetuneConfig(**BASE)
    assert cfg.family == "hf" and cfg.recipe_name == "bert" and cfg.peak_lr == 5e-5
    assert cfg.settings() == {
        "lr": 5e-5,
        "warmup": 0.1,
        "schedule": "linear",
        "discriminative": 1.0,
        "gradual_unfreezing": False,
    }
    assert cfg.bi_attention and cfg.crf
    elmo = FinetuneConfig(**(BASE | {"encoder": "elmo:/x"}))
    assert elmo.family == "elmo" and elmo.recipe_name == "elmo" and elmo.peak_lr == 1e-3
    assert elmo.settings() == {
        "lr": 1e-3,
        "warmup": 0.1,
        "schedule": "slanted",
        "discriminative": 0.4,
        "gradual_unfreezing": True,  # sst2: a single-text task, as in the paper
    }
    # the paper unfroze gradually on SST-2 and NER only, not on the sentence-pair tasks
    assert not FinetuneConfig(**(BASE | {"encoder": "elmo:/x", "task": "stsb"})).settings()[
        "gradual_unfreezing"
    ]
    assert FinetuneConfig(**(BASE | {"encoder": "elmo:/x", "task": "conll2003"})).settings()[
        "gradual_unfreezing"
    ]
    assert FinetuneConfig(**(BASE | {"lr": 0.5})).peak_lr == 0.5
    assert FinetuneConfig.from_json(cfg.to_json()) == cfg


def test_explicit_options_override_one_value_of_the_recipe():
    cfg = FinetuneConfig(**(BASE | {"discriminative": 0.4, "lr": 2e-5}))
    assert cfg.settings() == RECIPES["bert"].settings() | {"discriminative": 0.4, "lr": 2e-5}
    record = cfg.recipe_record()
    assert record["name"] == "bert" and record["overrides"] == {"discriminative": 0.4, "lr": 2e-5}
    assert record["settings"]["schedule"] == "linear"
    other = FinetuneConfig(**(BASE | {"recipe": "elmo"}))  # the ELMo tricks on a BERT encoder
    assert other.settings() == RECIPES["elmo"].settings()
    with pytest.raises(
        ValueError, match=r"FinetuneConfig.recipe: expected one of \('bert', 'elmo'\)"
    ):
        FinetuneConfig(**(BASE | {"recipe": "ulmfit"}))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"encoder": "bert"}, "expected 'minilm', 'hf:NAME_OR_DIR' or 'elmo:...', got 'bert'"),
        ({"epochs": 0}, r"FinetuneConfig.epochs: expected an int >= 1, got 0"),
        ({"lr": -1.0}, r"FinetuneConfig.lr: expected > 0 or None, got -1.0"),
        ({"warmup": 1.0}, r"FinetuneConfig.warmup: expected in \[0, 1\), got 1.0"),
        ({"schedule": "cosine"}, r"expected one of \('linear', 'slanted'\), got 'cosine'"),
        ({"discriminative": 0.0}, r"FinetuneConfig.discriminative: expected in \(0, 1\], got 0.0"),
        ({"patience": 0}, "FinetuneConfig.patience: expected >= 1, got 0"),
        ({"max_train_examples": 0}, "expected >= 1 or None, got 0"),
    ],
)
def test_bad_fields_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        FinetuneConfig(**(BASE | change))


def test_from_json_names_unknown_fields():
    with pytest.raises(ValueError, match=r"unknown fields \['colour'\]"):
        FinetuneConfig.from_json(FinetuneConfig(**BASE).to_json() | {"colour": "red"})


def test_cli_flags_round_trip():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        "--encoder elmo:/w --task stsb --data d --out r --seed 3 --lr 0.001 --epochs 5 "
        "--discriminative 1.0 --gradual-unfreezing --no-bi-attention --max-train-examples 100 "
        "--schedule slanted".split()
    )
    cfg = from_args(args)
    assert cfg == FinetuneConfig(
        encoder="elmo:/w",
        task="stsb",
        data="d",
        out="r",
        seed=3,
        lr=0.001,
        epochs=5,
        discriminative=1.0,
        gradual_unfreezing=True,
        bi_attention=False,
        max_train_examples=100,
        schedule="slanted",
    )
    assert from_args(
        parser.parse_args("--encoder minilm --task sst2 --data d --out r".split())
    ) == FinetuneConfig(encoder="minilm", task="sst2", data="d", out="r")
    text = parser.format_help()
    assert "--gradual-unfreezing" in text and "factor times the rate" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["--task", "sst2"])  # --encoder, --data, --out are required


def test_from_args_keeps_defaults_for_suppressed_flags():
    """The CLI may declare flags with argument_default=SUPPRESS: defaults stay in the config."""
    parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS)
    for flag in ("--encoder", "--task", "--data", "--out"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--quiet", dest="progress", action="store_false")
    args = parser.parse_args("--encoder minilm --task sst2 --data data --out run --quiet".split())
    args.func, args.verbose = print, False  # what cli/main.py adds
    assert from_args(args) == FinetuneConfig(**BASE, progress=False)
