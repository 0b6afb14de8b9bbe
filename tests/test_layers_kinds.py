"""`snowfire layers` end to end on features `snowfire extract` made (the tiny random BERT): a
tagging task (per-word probes, span F1, control labels per word type), a regression task (no
control task: no selectivity) and a pair classification task sharing another task's features
(SICK-R's pairs are SICK-E's file); the command prints the table and writes the sweep."""

from __future__ import annotations

import json

import pytest

from snowfire.cli.main import main as snowfire
from snowfire.compare import LayersConfig, run_layers
from snowfire.extractor import ExtractConfig, run_extract

QUICK = {"epochs": 2, "seeds": 2, "progress": False}


@pytest.fixture(scope="module")
def store(tiny_bert_dir, data_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("kinds") / "store"
    for task in ("conll2003", "stsb", "sick-e"):
        run_extract(
            ExtractConfig(
                encoder=f"hf:{tiny_bert_dir}",
                task=task,
                data=str(data_dir),
                store=str(path),
                progress=False,
            )
        )
    return path


def _config(tiny_bert_dir, data_dir, store, task, **kw) -> LayersConfig:
    return LayersConfig(
        store=str(store),
        encoder=f"hf:{tiny_bert_dir}",
        task=task,
        data=str(data_dir),
        **(QUICK | kw),
    )


def test_tagging_probes_words_and_scores_spans(tiny_bert_dir, data_dir, store):
    answer = run_layers(_config(tiny_bert_dir, data_dir, store, "conll2003"))
    assert answer["metric"] == "span_f1" and answer["num_layers"] == 3  # embeddings + 2
    assert answer["roles"] == {"selection": "select", "report": "dev", "carved": True}
    for row in answer["layers"]:
        assert 0 <= row["linear"]["score"] <= 1 and len(row["linear"]["seeds"]) == 2
        assert set(row["selectivity"]) == {"linear", "mlp"}  # per word type
        sel = row["selectivity"]["linear"]
        assert sel["delta"] == pytest.approx(row["accuracy"]["linear"] - row["control"]["linear"])
    assert answer["task"]["kind"] == "tagging" and set(answer["featuresets"]) == {"train", "dev"}
    from snowfire.compare.layers.words import recommendation

    assert "at random per word type" in recommendation(answer | {"carries": False})


def test_regression_has_no_control_task(tiny_bert_dir, data_dir, store):
    answer = run_layers(_config(tiny_bert_dir, data_dir, store, "stsb"))
    assert answer["metric"] == "pearson"
    assert all("selectivity" not in row and "control" not in row for row in answer["layers"])
    assert [c["top"] for c in answer["cumulative"]] == [0, 1, 2]
    assert answer["expected_layer"] == pytest.approx(
        sum(i * w for i, w in enumerate(answer["mix_weights"]))
    )


def test_the_command_on_features_extracted_for_another_task_of_the_same_file(
    tiny_bert_dir, data_dir, store, tmp_path, capsys
):
    out = tmp_path / "sweep"
    code = snowfire(
        [
            "layers",
            "--store",
            str(store),
            "--encoder",
            f"hf:{tiny_bert_dir}",
            "--task",
            "sick-r",
            "--data",
            str(data_dir),
            "--out",
            str(out),
            "--epochs",
            "2",
            "--seeds",
            "2",
            "--quiet",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    answer = json.loads((out / "layers.json").read_text())
    assert printed.startswith(f"# Which layer? sick-r on {answer['encoder']}\n\n")
    assert answer["recommendation"] in printed and f"sweep written to {out}" in printed
    sets = answer["featuresets"]
    assert "sick-e-train" in sets["train"]  # SICK-E's features of the same file
    assert (out / "layers.md").read_text() == printed.split(f"sweep written to {out}")[0][:-1]
