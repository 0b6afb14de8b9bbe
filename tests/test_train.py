"""❄️ training from the store: run outputs, metrics recomputed independently, streaming, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snowfire.cache import Store
from snowfire.cli.main import main as run_cli
from snowfire.heads.data import FeatureSource
from tests.helpers.store import train_cli


@pytest.fixture(scope="module")
def store_dir(tiny_bert_dir, data_dir, tmp_path_factory):
    store = tmp_path_factory.mktemp("store") / "s"
    for task in ("sst2", "stsb", "conll2003", "sick-e"):
        assert (
            run_cli(
                [
                    "extract",
                    "--encoder",
                    f"hf:{tiny_bert_dir}",
                    "--task",
                    task,
                    "--data",
                    str(data_dir),
                    "--store",
                    str(store),
                    "--quiet",
                ]
            )
            == 0
        )
    return store


def _tsv(path):
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return [r[1] for r in rows], [r[2] for r in rows]


def test_classification_run_and_independent_metrics(tiny_bert_dir, data_dir, store_dir, tmp_path):
    from sklearn.metrics import accuracy_score

    metrics = train_cli(
        tiny_bert_dir,
        data_dir,
        store_dir,
        tmp_path / "run",
        "sst2",
        "linear",
        "--epochs",
        "40",
        "--patience",
        "40",
        "--lr",
        "0.03",
    )
    run = tmp_path / "run"
    for name in ("config.json", "log.jsonl", "scalar_mix.json", "weights.safetensors"):
        assert (run / name).is_file(), name
    mix = json.loads((run / "scalar_mix.json").read_text())
    assert len(next(iter(mix.values()))) == 3 and abs(sum(next(iter(mix.values()))) - 1) < 1e-5
    for split in ("train", "dev"):
        gold, pred = _tsv(run / "predictions" / f"{split}.tsv")
        assert metrics[split]["accuracy"] == pytest.approx(accuracy_score(gold, pred), abs=1e-12)
    assert metrics["train"]["accuracy"] > 0.6  # the label word is in every sentence


def test_regression_pairs_esim(tiny_bert_dir, data_dir, store_dir, tmp_path):
    from scipy.stats import pearsonr, spearmanr

    metrics = train_cli(tiny_bert_dir, data_dir, store_dir, tmp_path / "run", "stsb", "esim")
    gold, pred = _tsv(tmp_path / "run" / "predictions" / "dev.tsv")
    gold, pred = np.array(gold, float), np.array(pred, float)
    assert metrics["dev"]["pearson"] == pytest.approx(pearsonr(gold, pred)[0], abs=1e-6)
    assert metrics["dev"]["spearman"] == pytest.approx(spearmanr(gold, pred)[0], abs=1e-6)


@pytest.mark.parametrize(
    "head,extra", [("bilstm-crf", []), ("bilstm-softmax", ["--hparams", '{"over_pieces": true}'])]
)
def test_tagging_conll_output_and_seqeval(
    tiny_bert_dir, data_dir, store_dir, tmp_path, head, extra
):
    from seqeval.metrics import f1_score

    from snowfire.tasks.spans import iob1_to_iob2

    metrics = train_cli(
        tiny_bert_dir, data_dir, store_dir, tmp_path / "run", "conll2003", head, *extra
    )
    sents, cur = [], []
    for line in (tmp_path / "run" / "predictions" / "dev.tsv").read_text().splitlines():
        if line:
            cur.append(line.split(" "))
        else:
            sents.append(cur)
            cur = []
    gold = [iob1_to_iob2([t[1] for t in s]) for s in sents]
    pred = [iob1_to_iob2([t[2] for t in s]) for s in sents]
    assert len(sents) == 20
    assert metrics["dev"]["span_f1"] == pytest.approx(f1_score(gold, pred), abs=1e-9)


def test_sick_r_trains_on_the_features_extracted_for_sick_e(
    tiny_bert_dir, data_dir, store_dir, tmp_path
):
    assert not [fs for fs in Store(store_dir).list_featuresets() if fs.task == "sick-r"]
    metrics = train_cli(tiny_bert_dir, data_dir, store_dir, tmp_path / "run", "sick-r", "mlp")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["featureset"]["task"] == "sick-e"  # one extraction, two heads
    assert set(metrics["dev"]) == {"pearson", "spearman"}


@pytest.mark.parametrize("max_bytes", [0, 10**9], ids=["streaming", "in-memory"])
@pytest.mark.parametrize("capped", [False, True], ids=["all", "capped"])
@pytest.mark.parametrize("pool", [0, 2], ids=["random", "bucketed"])
def test_a_source_reads_each_of_its_examples_once(store_dir, max_bytes, capped, pool):
    from snowfire.tasks import train_subset

    store = Store(store_dir)
    info = store.find_featureset(
        encoder=store.list_featuresets()[0].encoder["spec"], task="sst2", split="train"
    )
    subset = train_subset(info.num_examples, info.num_examples // 3, seed=4) if capped else None
    src = FeatureSource(store, info, None, max_bytes=max_bytes, block_examples=16, subset=subset)
    assert src.streaming == (max_bytes == 0)
    want = subset or list(range(info.num_examples))
    assert src.num_examples == len(want)
    direct = store.read(info.id, indices=list(range(info.num_examples)))
    for rng in (None, np.random.default_rng(1)):
        seen = []
        for idx, eb in src.iterate(7, rng, pool):
            for j, i in enumerate(idx):
                np.testing.assert_array_equal(eb.example(j), direct.example(i))
            seen += idx
        assert sorted(seen) == want


@pytest.mark.parametrize("max_bytes", [0, 10**9], ids=["streaming", "in-memory"])
def test_pool_zero_serves_the_batches_of_runs_made_before_buckets(store_dir, data_dir, max_bytes):
    """bucket_pool 0 draws what the source drew before the field: per epoch (per streamed
    block) one permutation, cut into consecutive batches; a saved run reads as pool 0."""
    from snowfire.heads import TrainConfig
    from snowfire.rundir.reuse import config_changes

    store = Store(store_dir)
    info = store.find_featureset(
        encoder=store.list_featuresets()[0].encoder["spec"], task="sst2", split="train"
    )
    src = FeatureSource(store, info, None, max_bytes=max_bytes, block_examples=16)
    got = [idx for idx, _ in src.iterate(5, np.random.default_rng(9), 0)]
    rng, want = np.random.default_rng(9), []
    if src.streaming:
        blocks = [src.order[i : i + 16] for i in range(0, len(src.order), 16)]
        for block in [blocks[b] for b in rng.permutation(len(blocks))]:
            pos = rng.permutation(len(block))
            want += [[block[j] for j in pos[i : i + 5]] for i in range(0, len(block), 5)]
    else:
        order = rng.permutation(src.num_examples)
        want = [order[i : i + 5].tolist() for i in range(0, src.num_examples, 5)]
    assert got == want
    cfg = TrainConfig(
        store="s", encoder="minilm", head="esim", task="stsb", data=str(data_dir), out="o"
    )
    saved = cfg.to_json()
    del saved["bucket_pool"]
    assert config_changes(saved, cfg) == {"bucket_pool": ("(not saved)", 50)}


@pytest.mark.parametrize("max_bytes", [0, 10**9], ids=["streaming", "in-memory"])
def test_bucketed_batches_hold_examples_of_similar_length(store_dir, max_bytes):
    store = Store(store_dir)
    info = store.find_featureset(
        encoder=store.list_featuresets()[0].encoder["spec"], task="sst2", split="train"
    )
    src = FeatureSource(store, info, None, max_bytes=max_bytes, block_examples=32)
    lengths = np.diff(store.read(info.id, indices=list(range(info.num_examples))).offsets)

    def padded(pool):
        return sum(
            int(lengths[idx].max()) * len(idx)
            for idx, _ in src.iterate(4, np.random.default_rng(0), pool)
        )

    assert padded(8) < padded(0)
    # one pool holding a whole block (streaming) or the whole set (in memory): its batches are
    # cut from one sorted run, so their length ranges never overlap
    batches = [idx for idx, _ in src.iterate(4, np.random.default_rng(0), 1000)]
    groups = [batches[i : i + 8] for i in range(0, len(batches), 8)] if src.streaming else [batches]
    for group in groups:
        spans = sorted((int(lengths[b].min()), int(lengths[b].max())) for b in group)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    assert sorted(sum(batches, [])) == list(range(info.num_examples))


def test_a_capped_head_and_fire_train_on_the_same_examples(
    tiny_bert_dir, data_dir, store_dir, tmp_path
):
    """--max-train-examples draws one subset for ❄️ and 🔥 with the same seed (compare's quick
    budget relies on it): the head's run records the cap; 🔥 keeps exactly those examples."""
    from snowfire.finetune import FinetuneConfig
    from snowfire.finetune.trainer import _examples
    from snowfire.tasks import read_split, read_training, train_subset

    everything = read_split("sst2", str(data_dir), "train")
    drawn = train_subset(len(everything), 9, seed=3)
    assert len(drawn) == 9 == len(set(drawn)) and drawn == sorted(drawn)
    assert drawn != train_subset(len(everything), 9, seed=4)  # another seed, another draw
    assert train_subset(len(everything), len(everything), seed=3) is None
    data = read_training("sst2", str(data_dir), cap=9, seed=3)  # no test labels: a slice selects
    keep = data.keep
    assert len(keep) == 9 and keep == sorted(keep) and not set(keep) & set(data.carved)
    fire = FinetuneConfig(
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        data=str(data_dir),
        out=str(tmp_path / "fire"),
        seed=3,
        max_train_examples=9,
    )
    examples = _examples(fire).trained()
    assert [e.index for e in examples["train"]] == keep
    train_cli(
        tiny_bert_dir,
        data_dir,
        store_dir,
        tmp_path / "snow",
        "sst2",
        "linear",
        "--seed",
        "3",
        "--max-train-examples",
        "9",
        "--epochs",
        "1",
    )
    config = json.loads((tmp_path / "snow" / "config.json").read_text())
    assert config["train_examples"] == 9 and config["train"]["max_train_examples"] == 9


def test_wrong_encoder_and_wrong_head_are_refused(
    tiny_bert_dir, data_dir, store_dir, tmp_path, capsys
):
    args = [
        "train",
        "--store",
        str(store_dir),
        "--encoder",
        "minilm",
        "--task",
        "sst2",
        "--head",
        "linear",
        "--data",
        str(data_dir),
        "--out",
        str(tmp_path / "r"),
    ]
    assert run_cli(args) == 2
    err = capsys.readouterr().err
    assert "no feature set for encoder 'minilm', task 'sst2'" in err and "hf:" in err
    args = [
        "train",
        "--store",
        str(store_dir),
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task",
        "sst2",
        "--head",
        "esim",
        "--data",
        str(data_dir),
        "--out",
        str(tmp_path / "r"),
    ]
    assert run_cli(args) == 2
    assert "esim" in capsys.readouterr().err


def test_a_finished_head_run_is_returned_and_a_killed_one_cleared(
    tiny_bert_dir,
    data_dir,
    store_dir,
    tmp_path,
    monkeypatch,
):
    run = tmp_path / "run"
    # what a killed attempt leaves: a log, a stale prediction file, no metrics.json
    (run / "predictions").mkdir(parents=True)
    (run / "predictions" / "stale.tsv").write_text("half")
    (run / "log.jsonl").write_text('{"epoch": 1, "half')
    first = train_cli(tiny_bert_dir, data_dir, store_dir, run, "sst2", "linear")
    assert not (run / "predictions" / "stale.tsv").exists()
    assert all(json.loads(line) for line in (run / "log.jsonl").read_text().splitlines())
    stamp = (run / "weights.safetensors").stat().st_mtime_ns

    from snowfire import heads

    def no_fit(cfg):
        raise AssertionError("a finished run trained again")

    monkeypatch.setattr(heads.trainer, "_fit", no_fit)
    assert train_cli(tiny_bert_dir, data_dir, store_dir, run, "sst2", "linear") == first
    assert (run / "weights.safetensors").stat().st_mtime_ns == stamp
    from snowfire.cli.main import main as run_cli

    argv = [
        "train",
        "--store",
        str(store_dir),
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task",
        "sst2",
        "--head",
        "linear",
        "--data",
        str(data_dir),
        "--out",
        str(run),
        "--quiet",
        "--epochs",
        "3",
        "--lr",
        "0.5",
    ]
    assert run_cli(argv) == 2  # another config: refused, the finished run untouched
    assert (run / "weights.safetensors").stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("task", "head", "split"),
    [("sst2", "linear", "dev"), ("stsb", "esim", "dev"), ("conll2003", "bilstm-crf", "dev")],
)
def test_predict_from_a_saved_run_equals_the_runs_own_predictions(
    tiny_bert_dir, data_dir, store_dir, tmp_path, task, head, split
):
    from snowfire.cache import Store

    run = tmp_path / "run"
    train_cli(tiny_bert_dir, data_dir, store_dir, run, task, head)
    fs = Store(store_dir).find_featureset(encoder=f"hf:{tiny_bert_dir}", task=task, split=split)
    out = tmp_path / "again.tsv"
    argv = [
        "predict",
        "--run",
        str(run),
        "--store",
        str(store_dir),
        "--featureset",
        fs.id,
        "--out",
        str(out),
    ]
    assert run_cli(argv) == 0
    assert out.read_text() == (run / "predictions" / f"{split}.tsv").read_text()


def test_predict_on_a_text_file_runs_the_runs_encoder(tiny_bert_dir, data_dir, store_dir, tmp_path):
    from snowfire.tasks import read_split

    run = tmp_path / "run"
    train_cli(tiny_bert_dir, data_dir, store_dir, run, "sst2", "linear")
    texts = tmp_path / "dev.txt"
    texts.write_text(
        "".join(" ".join(e.words_a) + "\n" for e in read_split("sst2", data_dir, "dev"))
    )
    out = tmp_path / "texts.tsv"
    assert run_cli(["predict", "--run", str(run), "--input", str(texts), "--out", str(out)]) == 0
    _, want = _tsv(run / "predictions" / "dev.tsv")
    gold, got = _tsv(out)
    assert got == want and set(gold) == {""}  # the same predictions; a text file has no gold


def test_predict_needs_a_saved_head(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    argv = [
        "predict",
        "--run",
        str(tmp_path / "run"),
        "--store",
        "s",
        "--featureset",
        "x",
        "--out",
        str(tmp_path / "o.tsv"),
    ]
    assert run_cli(argv) == 2
    assert f"{tmp_path / 'run'}: no head.json" in capsys.readouterr().err
