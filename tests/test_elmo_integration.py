"""ELMo through the whole pipeline: CLI extraction into the store, reference equality, export."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from snowfire.cache import Store
from snowfire.cli.main import main as snowfire
from tests.helpers import FIXTURES, need_shared


@pytest.fixture(scope="module")
def fixture_dir():
    return need_shared(FIXTURES / "allennlp_elmo")


def _interleaved(fixture_dir):
    lists = json.loads((fixture_dir / "sentences.json").read_text())
    return [lists[k][i].split() for i in range(10) for k in range(3)], lists


def test_stateful_cli_extraction_matches_reference(fixture_dir, tmp_path):
    sentences, _ = _interleaved(fixture_dir)
    inp = tmp_path / "F.jsonl"
    inp.write_text("".join(json.dumps({"tokens": s}) + "\n" for s in sentences))
    spec = f"elmo:{fixture_dir / 'options.json'},{fixture_dir / 'lm_weights.hdf5'}"
    code = snowfire(
        [
            "extract",
            "--encoder",
            spec,
            "--elmo-state",
            "stateful",
            "--batch-size",
            "3",
            "--dtype",
            "float32",
            "--input",
            str(inp),
            "--store",
            str(tmp_path / "s"),
            "--quiet",
        ]
    )
    assert code == 0
    store = Store(tmp_path / "s")
    (info,) = store.list_featuresets()
    assert (info.num_examples, info.num_layers, info.dim) == (30, 3, 32)
    assert info.encoder["state_policy"] == "stateful"
    batch = store.read(info.id, indices=list(range(30)), layers=[2])
    for n in range(30):
        i, k = divmod(n, 3)
        with h5py.File(fixture_dir / f"lm_embeddings_{k}.hdf5") as f:
            ref = np.concatenate([f[str(i)][0], f[str(i)][1]], axis=-1)  # (T, 32)
        got = batch.example(n)[:, 0]  # (T, 32)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


def test_fixed_policy_export_hdf5_layout(fixture_dir, tmp_path):
    sentences, _ = _interleaved(fixture_dir)
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(" ".join(s) for s in sentences[:5]) + "\n")
    store_dir = tmp_path / "s"
    assert (
        snowfire(
            [
                "extract",
                "--encoder",
                f"elmo:{fixture_dir}",
                "--input",
                str(inp),
                "--store",
                str(store_dir),
                "--quiet",
            ]
        )
        == 0
    )
    (info,) = Store(store_dir).list_featuresets()
    assert info.encoder["state_policy"] == "fixed"
    out = tmp_path / "elmo.hdf5"
    assert (
        snowfire(
            ["export-hdf5", "--store", str(store_dir), "--featureset", info.id, "--out", str(out)]
        )
        == 0
    )
    stored = Store(store_dir).read(info.id, indices=list(range(5)))
    with h5py.File(out) as f:
        index = json.loads(f["sentence_to_index"][0])
        assert index[" ".join(sentences[3])] == "3"
        for i in range(5):
            assert f[str(i)].shape == (3, len(sentences[i]), 32)
            np.testing.assert_allclose(
                f[str(i)][()], stored.example(i).transpose(1, 0, 2).astype(np.float32)
            )


def test_elmo_features_served_over_rest_train_a_head(fixture_dir, data_dir, tmp_path):
    from snowfire.api import Settings
    from tests.helpers.service import Server

    spec = f"elmo:{fixture_dir}"
    store_dir = tmp_path / "s"
    assert (
        snowfire(
            [
                "extract",
                "--encoder",
                spec,
                "--task",
                "sst2",
                "--data",
                str(data_dir),
                "--store",
                str(store_dir),
                "--quiet",
            ]
        )
        == 0
    )
    with Server(Settings(store=store_dir)) as server:
        code = snowfire(
            [
                "train",
                "--store",
                server.url,
                "--encoder",
                spec,
                "--task",
                "sst2",
                "--head",
                "bcn",
                "--data",
                str(data_dir),
                "--out",
                str(tmp_path / "run"),
                "--epochs",
                "2",
                "--quiet",
                "--hparams",
                '{"ff_dim": 16, "hidden": 16, "maxout_dims": [32, 16]}',
            ]
        )
    assert code == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    # train, the selection slice carved from it (every choice), dev (reported, no choice seen)
    assert set(metrics) == {"train", "select", "dev"} and 0 <= metrics["dev"]["accuracy"] <= 1
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["featureset"]["encoder"]["kind"] == "elmo"
    assert (config["featureset"]["num_layers"], config["featureset"]["dim"]) == (3, 32)


def test_predict_input_on_a_stateful_run_of_another_batch_size(fixture_dir, data_dir, tmp_path):  # noqa: F811
    """A run on stateful ELMo features extracted 3 examples per batch: `predict --input`
    extracts the text file with the run's encoder, batch size included (its identity's), so it
    is accepted and predicts what the same file's stored feature set predicts."""
    spec = f"elmo:{fixture_dir}"
    store = tmp_path / "s"
    stateful = ["--encoder", spec, "--elmo-state", "stateful", "--batch-size", "3", "--quiet"]
    argv = ["extract", *stateful, "--task", "sst2", "--data", str(data_dir), "--store", str(store)]
    assert snowfire(argv) == 0
    run = tmp_path / "run"
    assert (
        snowfire(
            [
                "train",
                "--store",
                str(store),
                "--encoder",
                spec,
                "--task",
                "sst2",
                "--head",
                "linear",
                "--data",
                str(data_dir),
                "--out",
                str(run),
                "--epochs",
                "2",
                "--quiet",
            ]
        )
        == 0
    )
    head = json.loads((run / "head.json").read_text())
    assert (head["encoder"]["state_policy"], head["encoder"]["batch_size"]) == ("stateful", 3)
    texts = tmp_path / "texts.txt"
    texts.write_text(
        "".join(s + "\n" for s in json.loads((fixture_dir / "sentences.json").read_text())[0])
    )
    # the file's own feature set, extracted from a zero state as predict --input does
    assert snowfire(["extract", *stateful, "--input", str(texts), "--store", str(store)]) == 0
    (fs,) = [f for f in Store(store).list_featuresets() if f.task is None]
    stored, extracted = tmp_path / "stored.tsv", tmp_path / "extracted.tsv"
    assert (
        snowfire(
            [
                "predict",
                "--run",
                str(run),
                "--store",
                str(store),
                "--featureset",
                fs.id,
                "--out",
                str(stored),
            ]
        )
        == 0
    )
    assert (
        snowfire(["predict", "--run", str(run), "--input", str(texts), "--out", str(extracted)])
        == 0
    )
    assert extracted.read_text() == stored.read_text()
    assert len(stored.read_text().splitlines()) == 1 + fs.num_examples
