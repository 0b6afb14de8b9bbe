"""`snowfire task check`: the report on a user's task (counts, labels, lengths, windows,
duplicates), and exit 1 with the error on a malformed spec or row."""

from __future__ import annotations

import json

import pytest

from snowfire.cli import main


def _write_task(tmp_path, dev_rows: str = "text,label\ngood film,pos\nnew text here,neg\n"):
    (tmp_path / "train.csv").write_text(
        "text,label\ngood film,pos\nbad film,neg\ngood film,pos\nfine,pos\n"
        + "a long one " * 30
        + ",neg\n"
    )
    (tmp_path / "dev.csv").write_text(dev_rows)
    spec = {
        "name": "films",
        "kind": "classification",
        "splits": {"train": "train.csv", "dev": "dev.csv"},
    }
    (tmp_path / "films.json").write_text(json.dumps(spec))
    return tmp_path / "films.json"


def test_report_words_only(tmp_path, capsys):
    spec = _write_task(tmp_path)
    assert main(["task", "check", str(spec), "--encoder", "none"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "task films: classification, metric accuracy (reported: accuracy, macro_f1)"
    assert out[1] == "labels (inferred from train): neg, pos"
    assert out[2] == f"train: 5 examples from {tmp_path / 'train.csv'}"
    assert out[3] == "  labels: neg 2 (40.0%), pos 3 (60.0%)"
    # words per example: 2, 2, 2, 1, 90 -> p50 2, p90 90 (the "higher" rank), max 90
    assert out[4] == "  words per example: p50 2, p90 90, p99 90, p100 90"
    assert out[5] == f"dev: 2 examples from {tmp_path / 'dev.csv'}"
    assert "duplicates within train: 1 (train.csv lines 4)" in out
    assert "duplicates of train in dev: 1 (dev.csv lines 2)" in out


def test_report_pieces_and_windows(tmp_path, capsys, tiny_bert_dir):
    from transformers import AutoTokenizer

    spec = _write_task(tmp_path)
    assert main(["task", "check", str(spec), "--encoder", f"hf:{tiny_bert_dir}", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    train = found["splits"]["train"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    long = len(tokenizer(["a", "long", "one"] * 30, is_split_into_words=True)["input_ids"])
    assert long == 92 > 64  # 90 words + [CLS] [SEP], over the tiny BERT's 64 positions
    assert train["pieces"] == {"50": 4, "90": long, "99": long, "100": long}
    assert (train["window"], train["windowed"]) == (64, 1)
    assert found["splits"]["dev"]["windowed"] == 0
    assert found["spec"]["labels"] == ["neg", "pos"]


@pytest.mark.parametrize(
    ("dev", "message"),
    [
        (
            "text,label\ngood,pos\nbad,meh\n",
            "dev.csv line 3: column 'label': label 'meh' never seen in the train split",
        ),
        (
            "body,label\ngood,pos\n",
            "dev.csv: expected a column 'text' (the text), got columns ['body', 'label']",
        ),
    ],
)
def test_malformed_rows_exit_1(tmp_path, capsys, dev, message):
    spec = _write_task(tmp_path, dev)
    assert main(["task", "check", str(spec), "--encoder", "none"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("snowfire task check: error: ") and message in err


def test_malformed_spec_exit_1(tmp_path, capsys):
    (tmp_path / "t.yaml").write_text("name: t\nkind: classification\nsplits: {train: a.csv}\n")
    assert main(["task", "check", str(tmp_path / "t.yaml"), "--encoder", "none"]) == 1
    assert "field 'splits': expected a dev split (train and dev are needed)" in (
        capsys.readouterr().err
    )


def test_registered_task_with_its_data(capsys):
    from snowfire.tasks import DEMO_DATA_DIR

    assert main(["task", "check", "sst2", "--data", str(DEMO_DATA_DIR), "--encoder", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("task sst2: classification, metric accuracy (reported: accuracy)")
    assert "labels: 0, 1" in out
