"""`snowfire compare --export mteb DIR` and `snowfire.compare(..., export_mteb=DIR)`: MTEB's
results layout, every seed in `scores_per_experiment`, snowfire's fields in their own block;
checked against a JSON schema written from MTEB's documentation of its result files, and read
back by mteb itself where it is installed (`pip install -e '.[mteb]'`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import snowfire

#: MTEB's TaskResult file, from its documentation (mteb.results.TaskResult: dataset_revision,
#: task_name, mteb_version, scores {split: [ScoresDict]}, evaluation_time, kg_co2_emissions;
#: a ScoresDict holds main_score, hf_subset, languages and the metrics, and for tasks run
#: several times scores_per_experiment, a list of dicts of scores).
TASK_RESULT_SCHEMA = {
    "type": "object",
    "required": ["dataset_revision", "task_name", "mteb_version", "scores", "evaluation_time"],
    "properties": {
        "dataset_revision": {"type": "string"},
        "task_name": {"type": "string"},
        "mteb_version": {"type": ["string", "null"]},
        "evaluation_time": {"type": ["number", "null"]},
        "kg_co2_emissions": {"type": ["number", "null"]},
        "scores": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["main_score", "hf_subset", "languages"],
                    "properties": {
                        "main_score": {"type": "number"},
                        "hf_subset": {"type": "string"},
                        "languages": {
                            "type": "array",
                            "items": {"type": "string", "pattern": "^[a-z]{3}-[A-Z][a-z]{3}$"},
                        },
                        "scores_per_experiment": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": {"type": "number"},
                            },
                        },
                    },
                },
            },
        },
    },
}
#: MTEB's ModelMeta as model_meta.json holds it (name "organization/model_name").
MODEL_META_SCHEMA = {
    "type": "object",
    "required": ["name", "revision", "languages", "framework"],
    "properties": {
        "name": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
        "revision": {"type": ["string", "null"]},
        "languages": {"type": ["array", "null"], "items": {"type": "string"}},
        "n_parameters": {"type": ["integer", "null"]},
        "framework": {"type": "array", "items": {"type": "string"}},
        "adapted_from": {"type": ["string", "null"]},
    },
}


@pytest.fixture(scope="module")
def exported(tiny_bert_dir, data_dir, tmp_path_factory):
    """A comparison on the tiny stsb (2 ❄️ linear seeds, 1 🔥 seed) exported by the CLI:
    (compare out, export dir, argv, the model names' stem: the encoder folder's name)."""
    from snowfire.cli.main import main

    root = tmp_path_factory.mktemp("mteb")
    argv = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "stsb",
        "--data",
        str(data_dir),
        "--out",
        str(root / "cmp"),
        "--heads",
        "linear",
        "--seeds",
        "2",
        "--fire-seeds",
        "1",
        "--quiet",
    ]
    assert main([*argv, "--export", "mteb", str(root / "mteb")]) == 0
    return root / "cmp", root / "mteb", argv, Path(tiny_bert_dir).name


def _files(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*.json"))}


def test_the_layout_is_mtebs_one_model_per_arm(exported):
    _, mteb_dir, _, stem = exported
    names = sorted(_files(mteb_dir))
    models = sorted({n.split("/")[1] for n in names})
    assert models == [f"snowfire__{stem}-fire", f"snowfire__{stem}-snow-linear"]
    for model in models:
        (revision,) = {n.split("/")[2] for n in names if n.split("/")[1] == model}
        folder = f"results/{model}/{revision}"
        assert sorted(n for n in names if n.startswith(folder)) == [
            f"{folder}/model_meta.json",
            f"{folder}/stsb.json",
        ]
        meta = json.loads((mteb_dir / folder / "model_meta.json").read_text())
        assert meta["name"].replace("/", "__") == model and meta["revision"] == revision


def test_every_seed_is_an_experiment_and_the_score_their_mean(exported):
    out, mteb_dir, _, stem = exported
    (snow,) = mteb_dir.glob(f"results/snowfire__{stem}-snow-linear/*/stsb.json")
    result = json.loads(snow.read_text())
    runs = [
        json.loads((out / "snow/stsb/linear" / f"seed{k}/metrics.json").read_text()) for k in (0, 1)
    ]
    assert set(result["scores"]) == {"dev", "test"} & set(runs[0]) and "dev" in result["scores"]
    for split in result["scores"]:
        (entry,) = result["scores"][split]
        assert [e["seed"] for e in entry["scores_per_experiment"]] == [0, 1]
        for e, metrics in zip(entry["scores_per_experiment"], runs, strict=True):
            assert e["pearson"] == metrics[split]["pearson"] == e["main_score"]
            assert e["spearman"] == metrics[split]["spearman"]
        mean = (runs[0][split]["pearson"] + runs[1][split]["pearson"]) / 2
        assert entry["main_score"] == pytest.approx(mean, abs=1e-12) == entry["pearson"]
        assert (entry["hf_subset"], entry["languages"]) == ("default", ["eng-Latn"])
    (fire,) = mteb_dir.glob(f"results/snowfire__{stem}-fire/*/stsb.json")
    fire_dev = json.loads(fire.read_text())["scores"]["dev"][0]
    assert len(fire_dev["scores_per_experiment"]) == 1


def test_snowfires_own_fields_are_in_their_block(exported):
    out, mteb_dir, _, stem = exported
    (snow,) = mteb_dir.glob(f"results/snowfire__{stem}-snow-linear/*/stsb.json")
    block = json.loads(snow.read_text())["snowfire"]
    assert (block["arm"], block["head"], block["budget"], block["metric"]) == (
        "snow",
        "linear",
        "quick",
        "pearson",
    )
    assert block["caps"] == {"epochs": 3, "patience": 2, "max_train_examples": 2000}
    assert block["layers"] == [0, 1, 2] and block["dtype"] == "float16"
    for k, mix in enumerate(block["mix_weights"]):
        saved = json.loads((out / "snow/stsb/linear" / f"seed{k}/scalar_mix.json").read_text())
        assert mix == {"seed": k, **saved}
    assert block["encoder"]["spec"].startswith("hf:") and block["seeds"] == [0, 1]
    (fire,) = mteb_dir.glob(f"results/snowfire__{stem}-fire/*/stsb.json")
    fire_block = json.loads(fire.read_text())["snowfire"]
    assert (fire_block["arm"], fire_block["head"], fire_block["caps"]) == (
        "fire",
        None,
        {"epochs": 2, "max_train_examples": 2000, "curve_points": 2},
    )


def test_the_files_match_mtebs_documented_schema(exported):
    import jsonschema

    _, mteb_dir, _, _ = exported
    for path in mteb_dir.rglob("*.json"):
        schema = MODEL_META_SCHEMA if path.name == "model_meta.json" else TASK_RESULT_SCHEMA
        jsonschema.validate(json.loads(path.read_text()), schema)
    # the schema can fail: a score entry without main_score is refused
    (task_file,) = mteb_dir.glob("results/*-fire/*/stsb.json")
    broken = json.loads(task_file.read_text())
    del broken["scores"]["dev"][0]["main_score"]
    with pytest.raises(jsonschema.ValidationError, match="'main_score' is a required property"):
        jsonschema.validate(broken, TASK_RESULT_SCHEMA)


def test_mtebs_own_loader_reads_the_export(exported):
    mteb = pytest.importorskip("mteb", reason="pip install -e '.[mteb]' to read back with it")
    from mteb.models.model_meta import ModelMeta
    from mteb.results import TaskResult

    _, mteb_dir, _, stem = exported
    for path in mteb_dir.rglob("stsb.json"):
        result = TaskResult.from_disk(path)
        assert result.task_name == "stsb" and set(result.scores) == set(
            json.loads(path.read_text())["scores"]
        )
        saved = json.loads(path.read_text())["scores"]["dev"][0]
        assert result.scores["dev"][0]["main_score"] == saved["main_score"]
        assert result.scores["dev"][0]["scores_per_experiment"] == saved["scores_per_experiment"]
    for path in mteb_dir.rglob("model_meta.json"):  # fields ModelMeta has (extra: forbidden)
        meta = ModelMeta.model_validate(json.loads(path.read_text()))
        assert meta.adapted_from.endswith(stem) and meta.languages == ["eng-Latn"]
    loaded = mteb.ResultCache(mteb_dir).load_results(include_remote=False)
    by_model = {m.model_name: m for m in loaded.model_results}
    assert sorted(by_model) == [f"snowfire/{stem}-fire", f"snowfire/{stem}-snow-linear"]
    (task,) = by_model[f"snowfire/{stem}-snow-linear"].task_results
    assert len(task.scores["dev"][0]["scores_per_experiment"]) == 2


def test_the_python_export_writes_the_same_files(exported, tmp_path):
    from snowfire.cli.flags import config_from_args
    from snowfire.cli.main import build_parser

    out, mteb_dir, argv, _ = exported
    config = config_from_args(snowfire.CompareConfig, build_parser().parse_args(argv))
    result = snowfire.compare(config, export_mteb=tmp_path / "again")  # finished: read back
    assert isinstance(result, snowfire.CompareResult) and result.out == out
    assert result.tasks["stsb"].best_head == "linear"
    verdict = result.results["tasks"]["stsb"]["verdict"]
    assert result.tasks["stsb"].verdict == verdict["verdict"]
    assert result.tasks["stsb"].interval == (verdict["delta"]["low"], verdict["delta"]["high"])
    assert _files(tmp_path / "again") == _files(mteb_dir)


def test_an_unknown_format_is_refused_before_anything_runs(tmp_path, capsys):
    from snowfire.cli.main import main

    argv = [
        "compare",
        "--encoder",
        "minilm",
        "--tasks",
        "stsb",
        "--data",
        str(tmp_path),
        "--out",
        str(tmp_path / "cmp"),
        "--export",
        "csv",
        str(tmp_path / "x"),
    ]
    assert main(argv) == 2
    assert "--export: expected a format of ('mteb',), got 'csv'" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()


def test_exporting_where_no_comparison_ran_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.json"):
        snowfire.export_mteb(tmp_path, tmp_path / "mteb")
