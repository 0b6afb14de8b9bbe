"""FinetuneConfig: checked fields with expected-vs-got errors, and the CLI flags built from it."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

import pytest

from snowfire.cli.flags import add_config_arguments, config_from_args
from snowfire.finetune import RECIPES, FinetuneConfig, RecipeSettings

BASE = dict(encoder="minilm", task="sst2", data="data", out="run")


def test_defaults_follow_the_family_recipe():
    cfg = FinetuneConfig(**BASE)
    assert cfg.family == "hf" and cfg.recipe_name == "bert" and cfg.peak_lr == 5e-5
    assert cfg.settings() == RecipeSettings(
        lr=5e-5, warmup=0.1, schedule="linear", discriminative=1.0, gradual_unfreezing=False
    )
    assert cfg.bi_attention and cfg.crf is None and cfg.output_lstm == 0  # family defaults
    elmo = FinetuneConfig(**(BASE | {"encoder": "elmo:/x"}))
    assert elmo.family == "elmo" and elmo.recipe_name == "elmo" and elmo.peak_lr == 1e-3
    assert elmo.settings() == RecipeSettings(
        lr=1e-3,
        warmup=0.1,
        schedule="slanted",
        discriminative=0.4,
        gradual_unfreezing=True,  # sst2: a single-text task, as in the paper
    )
    # the paper unfroze gradually on SST-2 and NER only, not on the sentence-pair tasks
    pairs = FinetuneConfig(**(BASE | {"encoder": "elmo:/x", "task": "stsb"})).settings()
    assert not pairs.gradual_unfreezing
    ner = FinetuneConfig(**(BASE | {"encoder": "elmo:/x", "task": "conll2003"})).settings()
    assert ner.gradual_unfreezing
    assert FinetuneConfig(**(BASE | {"lr": 0.5})).peak_lr == 0.5
    assert FinetuneConfig.from_json(cfg.to_json()) == cfg


def test_explicit_options_override_one_value_of_the_recipe():
    cfg = FinetuneConfig(**(BASE | {"discriminative": 0.4, "lr": 2e-5}))
    assert cfg.settings() == replace(RECIPES["bert"].settings(), discriminative=0.4, lr=2e-5)
    record = cfg.recipe_record()
    assert record["name"] == "bert" and record["overrides"] == {"discriminative": 0.4, "lr": 2e-5}
    # RUN/config.json's record keeps the keys and order it had when settings were a dict
    assert json.dumps(record["settings"]) == json.dumps(
        {
            "lr": 2e-5,
            "warmup": 0.1,
            "schedule": "linear",
            "discriminative": 0.4,
            "gradual_unfreezing": False,
        }
    )
    other = FinetuneConfig(**(BASE | {"recipe": "elmo"}))  # the ELMo tricks on a BERT encoder
    assert other.settings() == RECIPES["elmo"].settings()
    with pytest.raises(
        ValueError, match=r"FinetuneConfig.recipe: expected one of bert, elmo, got 'ulmfit'"
    ):
        FinetuneConfig(**(BASE | {"recipe": "ulmfit"}))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"encoder": "bert"}, "FinetuneConfig.encoder: unknown encoder spec 'bert': expected"),
        ({"epochs": 0}, r"FinetuneConfig.epochs: expected >= 1, got 0"),
        ({"lr": -1.0}, r"FinetuneConfig.lr: expected > 0, got -1.0"),
        ({"warmup": 1.0}, r"FinetuneConfig.warmup: expected < 1, got 1.0"),
        ({"warmup": -0.1}, r"FinetuneConfig.warmup: expected >= 0, got -0.1"),
        ({"schedule": "cosine"}, r"expected one of linear, slanted, got 'cosine'"),
        ({"discriminative": 0.0}, r"FinetuneConfig.discriminative: expected > 0, got 0.0"),
        ({"discriminative": 1.5}, r"FinetuneConfig.discriminative: expected <= 1, got 1.5"),
        ({"patience": 0}, "FinetuneConfig.patience: expected >= 1, got 0"),
        ({"max_train_examples": 0}, "FinetuneConfig.max_train_examples: expected >= 1, got 0"),
        ({"dropout": 1.0}, "FinetuneConfig.dropout: expected < 1, got 1.0"),
    ],
)
def test_bad_fields_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        FinetuneConfig(**(BASE | change))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": "3"}, r"FinetuneConfig.epochs: expected int, got '3' \(str\)"),
        ({"epochs": 2.0}, r"FinetuneConfig.epochs: expected int, got 2.0 \(float\)"),
        ({"crf": 1}, r"FinetuneConfig.crf: expected bool, got 1 \(int\)"),
        ({"task_spec": 3}, r"FinetuneConfig.task_spec: expected str \| dict, got 3 \(int\)"),
    ],
)
def test_wrong_types_are_refused(change, message):
    with pytest.raises(TypeError, match=message):
        FinetuneConfig(**(BASE | change))


def test_one_task_exactly():
    with pytest.raises(ValueError, match=r"FinetuneConfig: give either 'task' .* not neither"):
        FinetuneConfig(**(BASE | {"task": None}))
    with pytest.raises(ValueError, match=r"FinetuneConfig.data: task 'sst2' needs its data"):
        FinetuneConfig(**(BASE | {"data": None}))


def test_from_json_names_unknown_fields():
    with pytest.raises(ValueError, match=r"unknown fields \['colour'\]"):
        FinetuneConfig.from_json(FinetuneConfig(**BASE).to_json() | {"colour": "red"})


def test_cli_flags_round_trip():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, FinetuneConfig)
    args = parser.parse_args(
        "--encoder elmo:/w --task stsb --data d --out r --seed 3 --lr 0.001 --epochs 5 "
        "--discriminative 1.0 --gradual-unfreezing --no-bi-attention --max-train-examples 100 "
        "--schedule slanted".split()
    )
    cfg = config_from_args(FinetuneConfig, args)
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
    assert config_from_args(
        FinetuneConfig, parser.parse_args("--encoder minilm --task sst2 --data d --out r".split())
    ) == FinetuneConfig(encoder="minilm", task="sst2", data="d", out="r")
    text = " ".join(parser.format_help().split())
    assert "--gradual-unfreezing" in text and "factor times the rate" in text
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["--task", "sst2"])  # --encoder and --out are required
    assert refused.value.code == 2  # argparse's usage error


def test_flags_not_given_keep_the_config_defaults_and_bad_values_are_refused():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, FinetuneConfig)
    args = parser.parse_args("--encoder minilm --task sst2 --data data --out run --quiet".split())
    args.func, args.verbose = print, False  # what cli/main.py adds
    assert config_from_args(FinetuneConfig, args) == FinetuneConfig(**BASE, progress=False)
    with pytest.raises(SystemExit) as refused:  # a choice argparse knows from the field
        parser.parse_args("--encoder minilm --task sst2 --data d --out r --recipe x".split())
    assert refused.value.code == 2
    args = parser.parse_args("--encoder minilm --task sst2 --data d --out r --epochs 0".split())
    with pytest.raises(ValueError, match="FinetuneConfig.epochs: expected >= 1, got 0"):
        config_from_args(FinetuneConfig, args)
