"""`import snowfire`: the Python API. It loads nothing heavy until used; the commands take the
configs the command line builds and return what the run directories hold."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import snowfire
from tests.helpers import REPO
from tests.helpers.tasks import finetune_config

HEAVY = ("torch", "transformers", "zarr", "fastapi", "pydantic", "starlette")


def _loaded_after(code: str) -> list[str]:
    """The heavy top-level packages a fresh interpreter holds after running `code`."""
    probe = code + f"\nimport sys; print([m for m in {HEAVY!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))


@pytest.mark.subprocess  # a fresh interpreter
def test_import_snowfire_loads_no_heavy_package_until_used():
    assert _loaded_after("import snowfire") == []
    # the configs and the store opener are light too: a notebook builds configs before it runs
    names = "ExtractConfig TrainConfig FinetuneConfig CompareConfig PredictConfig open_store"
    names += " LayersConfig"
    assert _loaded_after(f"import snowfire\nfor n in {names.split()!r}: getattr(snowfire, n)") == []
    # the check can fail: the dataset is torch, so using it loads torch
    assert "torch" in _loaded_after("import snowfire\nsnowfire.FeatureDataset")


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    (declared,) = re.findall(r'^version = "(.+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert snowfire.__version__ == version("snowfire") == declared


def test_every_public_name_resolves_and_unknown_ones_fail():
    for name in snowfire.__all__:
        assert getattr(snowfire, name) is not None, name
    assert snowfire.TrainConfig.__module__ == "snowfire.heads.config"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        snowfire.nope  # noqa: B018


def test_the_commands_refuse_anything_but_their_config(tmp_path):
    with pytest.raises(TypeError, match=r"snowfire.train: expected a TrainConfig .* got dict"):
        snowfire.train({"task": "sst2"})
    with pytest.raises(TypeError, match="snowfire.extract: expected a ExtractConfig"):
        snowfire.extract(None)
    with pytest.raises(TypeError, match="snowfire.open_store: expected a path or URL, got 3"):
        snowfire.open_store(3)


def test_open_store_opens_a_directory_and_a_service_url(tmp_path):
    from snowfire.cache import RemoteStore, Store

    assert isinstance(snowfire.open_store(tmp_path / "s"), Store)
    remote = snowfire.open_store("http://127.0.0.1:9")
    assert isinstance(remote, RemoteStore)
    remote.close()


@pytest.fixture(scope="module")
def extracted(tiny_bert_dir, data_dir, tmp_path_factory):
    """sst2 extracted with the tiny BERT through `snowfire.extract`: (store, infos)."""
    store = tmp_path_factory.mktemp("api") / "store"
    config = snowfire.ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        data=str(data_dir),
        store=str(store),
        progress=False,
    )
    return store, snowfire.extract(config)


def test_extract_returns_the_feature_sets_it_made(extracted):
    store, infos = extracted
    assert sorted(i.split for i in infos) == ["dev", "train"]  # the data_dir fixture's splits
    listed = {i.id: i for i in snowfire.open_store(store).list_featuresets()}
    assert all(listed[i.id] == i for i in infos)


def test_train_and_predict_return_what_the_run_directory_holds(
    extracted, tiny_bert_dir, data_dir, tmp_path
):
    store, infos = extracted
    config = snowfire.TrainConfig(
        store=str(store),
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        head="linear",
        data=str(data_dir),
        out=str(tmp_path / "run"),
        epochs=2,
        progress=False,
    )
    result = snowfire.train(config)
    assert isinstance(result, snowfire.TrainResult)
    assert result.metrics == json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert result.score("dev") == result.metrics["dev"]["accuracy"]
    assert result.featureset == next(i.id for i in infos if i.split == "train")
    weights = result.scalar_mix["mix"]  # the linear head's one mix: softmax(w) over 3 layers
    assert len(weights) == 3 and sum(weights) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(KeyError, match="no 'f1' on dev; metrics: accuracy"):
        result.score("dev", "f1")
    again = snowfire.train(config)  # a finished run of the same config: read back, not rerun
    assert again == result

    dev = next(i for i in infos if i.split == "dev")
    out = tmp_path / "again.tsv"
    pred = snowfire.predict(
        snowfire.PredictConfig(
            run=str(result.run), store=str(store), featureset=dev.id, out=str(out)
        )
    )
    assert isinstance(pred, snowfire.PredictResult) and len(pred.predictions) == dev.num_examples
    assert out.read_text() == (result.run / "predictions" / "dev.tsv").read_text()


def test_predict_config_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one of featureset .* and input, got neither"):
        snowfire.PredictConfig(run="r", out="o")
    with pytest.raises(ValueError, match="got both"):
        snowfire.PredictConfig(run="r", out="o", featureset="f", store="s", input="t.txt")
    with pytest.raises(ValueError, match="PredictConfig.store: --featureset needs --store"):
        snowfire.PredictConfig(run="r", out="o", featureset="f")


def test_finetune_returns_the_runs_metrics(tiny_bert_dir, data_dir, tmp_path):
    config = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data_dir, tmp_path / "ft", epochs=1)
    result = snowfire.finetune(config)
    assert isinstance(result, snowfire.FinetuneResult) and result.chosen is None
    assert result.metrics == json.loads((tmp_path / "ft" / "metrics.json").read_text())
    assert result.score("dev") == result.metrics["dev"]["accuracy"]
    assert (Path(result.run) / "encoder" / "config.json").is_file()  # hf:RUN/encoder
