"""One config per analysis (compare/analyses/): the `snowfire analyze NAME` flags are its
fields, the command builds exactly that config, and a bad value is refused with the field
named. What each analysis computes and writes: tests/test_compare.py."""

from __future__ import annotations

import dataclasses

import pytest

from snowfire import compare
from snowfire.cli.main import build_parser, main
from snowfire.compare.analyses import ANALYSES, analysis_config
from snowfire.compare.analyses.elmo_biattention import ElmoBiattentionConfig
from snowfire.compare.analyses.ner_params import NerParamsConfig
from snowfire.compare.analyses.pairs import PAPER_PAIRS, PairsConfig
from snowfire.compare.analyses.probes import ProbesConfig

WHERE = {"encoder": "minilm", "data": "d", "out": "o"}


def _flags(name: str) -> set[str]:
    analyze = build_parser()._subparsers._group_actions[0].choices["analyze"]
    sub = analyze._subparsers._group_actions[0].choices[name]
    return {a.dest for a in sub._actions if a.dest not in ("help", "threads")}  # the process's


@pytest.mark.parametrize("name", ANALYSES)
def test_each_analysis_flags_are_its_config_fields(name):
    config = analysis_config(name)
    assert config.name == name and dataclasses.is_dataclass(config)
    assert _flags(name) == {f.name for f in dataclasses.fields(config)}
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'dims'"):
        analysis_config("mi")(**WHERE).dims = 3


def test_the_command_builds_the_config_and_runs_it(monkeypatch, tmp_path, capsys):
    ran = []

    def fake(config):
        ran.append(config)
        (tmp_path / f"{config.name}.md").write_text(f"# {config.name}\n")

    # the CLI's name first: its lazy export resolves to compare.analyses' attribute, so patched
    # second it would record the fake as the value to restore, and later tests would run it
    monkeypatch.setattr(compare, "run_analysis", fake)
    monkeypatch.setattr(compare.analyses, "run_analysis", fake)
    where = ["--encoder", "minilm", "--data", "d", "--out", str(tmp_path)]
    argv = ["analyze", "pairs", *where, "--tasks", "stsb,mrpc", "--tasks", "sick-e", "--seeds", "2"]
    assert main(argv) == 0
    probes = ["--finetuned", "sst2=runs/a", "--finetuned", "stsb=runs/b", "--epochs", "3"]
    assert main(["analyze", "probes", *where, *probes]) == 0
    out = {"encoder": "minilm", "data": "d", "out": str(tmp_path)}
    assert ran == [
        PairsConfig(**out, tasks=["stsb", "mrpc", "sick-e"], seeds=2),
        ProbesConfig(**out, finetuned=["sst2=runs/a", "stsb=runs/b"], epochs=3),
    ]
    assert ran[0].head == "esim" and ran[1].runs == {"sst2": "runs/a", "stsb": "runs/b"}
    assert capsys.readouterr().out.startswith("# pairs\n")


def test_defaults_are_the_papers():
    assert PairsConfig(**WHERE).tasks == list(PAPER_PAIRS) == ["sick-e", "sick-r", "stsb", "mrpc"]
    assert analysis_config("mi")(**WHERE).tasks == ["cola", "sst2", "mrpc", "stsb"]
    assert NerParamsConfig(**WHERE).tasks == ["conll2003"] and NerParamsConfig(**WHERE).lstm == 200
    assert PairsConfig(**WHERE).store_dir == "o/store"
    assert PairsConfig(**WHERE, store="s").store_dir == "s"
    assert PairsConfig(**WHERE, tasks=["stsb", "stsb"]).tasks == ["stsb"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: PairsConfig(**WHERE, tasks=["nope"]), "PairsConfig.tasks: expected one of"),
        (lambda: PairsConfig(**WHERE, tasks=[]), "PairsConfig.tasks: expected at least one"),
        (lambda: PairsConfig(**WHERE, seeds=0), "PairsConfig.seeds: expected >= 1, got 0"),
        (lambda: PairsConfig(**WHERE | {"out": ""}), "PairsConfig.out: expected a non-empty"),
        (
            lambda: ProbesConfig(**WHERE, finetuned=["sst2"]),
            "ProbesConfig.finetuned: expected TASK=RUN, got 'sst2'",
        ),
        (
            lambda: NerParamsConfig(**WHERE, tasks=["sst2"]),
            r"NerParamsConfig.tasks: expected one tagging task, got \['sst2'\]",
        ),
        (
            lambda: ElmoBiattentionConfig(**WHERE),
            "ElmoBiattentionConfig.encoder: elmo-biattention fine-tunes ELMo: --encoder elmo:",
        ),
        (
            lambda: ElmoBiattentionConfig(**WHERE | {"encoder": "elmo:/x"}, tasks=["sst2"]),
            "ElmoBiattentionConfig.tasks: elmo-biattention is about pairs: sst2 is a single-text",
        ),
    ],
)
def test_a_bad_analysis_config_is_refused_with_the_field(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_flags_an_analysis_does_not_have_are_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        main(["analyze", "mi", "--encoder", "minilm", "--data", "d", "--out", "o", "--seeds", "2"])
    assert refused.value.code == 2  # argparse's usage error
    assert "unrecognized arguments: --seeds 2" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown analysis 'nope': expected one of pairs, probes"):
        analysis_config("nope")
