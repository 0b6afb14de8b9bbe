"""A user's task spec: the fields checked with errors naming the field, expected vs got; every
bad row named by file, line and column; the record an artifact keeps, and the spec back."""

from __future__ import annotations

import json
import re

import pytest

from snowfire.tasks import (
    Example,
    describe,
    evaluate,
    file_digest,
    read_split,
    resolve_task,
    spec_from_record,
)

YAML = """\
name: tickets
kind: classification
format: csv
columns: {text: body, label: team}
splits:
  train: data/train.csv
  dev: data/dev.csv
metric: macro_f1
"""


def _files(tmp_path, train: str, dev: str | None = None, name="t.csv"):
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / name).write_text(train)
    if dev is not None:
        (tmp_path / "data" / ("dev-" + name)).write_text(dev)
    return tmp_path / "data" / name


def _task(tmp_path, train: str, dev: str | None = None, name="t.csv", **fields):
    _files(tmp_path, train, dev, name)
    spec = {
        "name": "t",
        "kind": "classification",
        "splits": {"train": f"data/{name}", "dev": f"data/{'dev-' if dev else ''}{name}"},
    }
    return resolve_task(spec | fields, base=tmp_path)


def test_yaml_spec_resolves_relative_to_its_file(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("body,team\nrefund please,billing\nit broke,bug\n")
    (tmp_path / "data" / "dev.csv").write_text("body,team\nmoney back,billing\n")
    (tmp_path / "tickets.yaml").write_text(YAML)
    monkeypatch.chdir("/")  # relative paths are the spec file's, not the working directory's
    spec = resolve_task(str(tmp_path / "tickets.yaml"))
    assert (spec.name, spec.kind, spec.pair, spec.metric) == (
        "tickets",
        "classification",
        False,
        "macro_f1",
    )
    assert spec.labels == ["billing", "bug"] and spec.reported == ("macro_f1", "accuracy")
    assert spec.splits["dev"].path == str(tmp_path / "data" / "dev.csv")
    assert read_split(spec, None, "dev") == [Example(0, ("money", "back"), None, "billing")]
    assert evaluate(spec, ["billing", "bug"], ["billing", "billing"]) == {
        "macro_f1": pytest.approx((2 / 3 + 0) / 2),
        "accuracy": 0.5,
    }


SPEC_ERRORS = [
    ({"nam": "x"}, "field 'nam': expected fields among name, kind"),
    ({"name": "My Task"}, "field 'name': expected a name of [a-z0-9][a-z0-9_-]*, got 'My Task'"),
    (
        {"kind": "ranking"},
        "field 'kind': expected one of classification, regression, tagging, got 'ranking'",
    ),
    (
        {"splits": {"train": "data/t.csv"}},
        "field 'splits': expected a dev split (train and dev are needed), got ['train']",
    ),
    (
        {"splits": {"train": "data/t.csv", "dev": "data/t.csv", "validation": "v.csv"}},
        "field 'splits': expected splits among train, dev, test",
    ),
    (
        {"metric": "pearson"},
        "field 'metric': expected one of accuracy, macro_f1, matthews, got 'pearson'",
    ),
    ({"labels": "a,b"}, "field 'labels': expected a non-empty list of label names, got 'a,b'"),
    ({"labels": ["a", "a"]}, "field 'labels': expected label names without repeats"),
    ({"score_range": [0, 5]}, "field 'score_range': expected no score_range for a non-regression"),
    (
        {"kind": "regression", "score_range": [5, 0]},
        "field 'score_range': expected [low, high] with low < high, got [5, 0]",
    ),
    (
        {"columns": {"txt": "body"}},
        "field 'columns': expected columns for text, label (a classification task), got ['txt']",
    ),
    ({"pair": "yes"}, "field 'pair': expected true or false, got 'yes'"),
    ({"kind": "tagging", "pair": True}, "field 'pair': expected false for a tagging task"),
    (
        {"format": "excel"},
        "field 'splits.train.format': expected one of conll, csv, tsv, jsonl, "
        "parquet, hf-dataset, got 'excel'",
    ),
    (
        {"format": "conll"},
        "field 'format': expected a tagging task for conll files, got 'classification'",
    ),
    (
        {"format": "jsonl", "quoting": True},
        "field 'splits.train.quoting': expected true or false, for a csv or tsv file, got True",
    ),
    (
        {"splits": {"train": "data/t.xlsx", "dev": "data/t.csv"}},
        "field 'splits.train.format': expected a format (conll, csv, tsv, jsonl, parquet, "
        "hf-dataset): the suffix of 't.xlsx' does not say which, got None",
    ),
    (
        {"splits": {"train": {"file": "t.csv"}, "dev": "data/t.csv"}},
        "field 'splits.train': expected a path, or a mapping with a path",
    ),
]


@pytest.mark.parametrize(("change", "message"), SPEC_ERRORS, ids=[m[:30] for _, m in SPEC_ERRORS])
def test_bad_spec_names_the_field(tmp_path, change, message):
    _files(tmp_path, "text,label\na,x\nb,y\n")
    spec = {
        "name": "t",
        "kind": "classification",
        "splits": {"train": "data/t.csv", "dev": "data/t.csv"},
    } | change
    with pytest.raises(ValueError, match=re.escape(f"task spec inline: {message}")):
        resolve_task(spec, base=tmp_path)


def test_bad_spec_files(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: t\nkind: [classification\n")
    with pytest.raises(
        ValueError,
        match=re.escape(f"task spec {tmp_path / 'bad.yaml'} line 3 column 1: invalid YAML"),
    ):
        resolve_task(str(tmp_path / "bad.yaml"))
    (tmp_path / "bad.json").write_text('{"name": "t",\n "kind": }')
    with pytest.raises(
        ValueError,
        match=re.escape(f"task spec {tmp_path / 'bad.json'} line 2 column 10: invalid JSON"),
    ):
        resolve_task(str(tmp_path / "bad.json"))
    (tmp_path / "list.yaml").write_text("- name: t\n")
    with pytest.raises(ValueError, match="expected a mapping of fields, got list"):
        resolve_task(str(tmp_path / "list.yaml"))
    with pytest.raises(FileNotFoundError, match="task spec .*gone.yaml: no such file"):
        resolve_task(str(tmp_path / "gone.yaml"))
    with pytest.raises(
        ValueError,
        match=r"unknown task 'tickets': expected one of conll2003.*"
        r"\(or a spec file: --task-spec FILE\)",
    ):
        resolve_task("tickets")


def _raises_at(path, where, message):
    return pytest.raises(ValueError, match=re.escape(f"{path} {where}: {message}"))


def test_missing_column_names_the_columns_present(tmp_path):
    path = _files(tmp_path, "body,team\na,x\nb,y\n")
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}: expected a column 'text' (the text), got columns ['body', 'team']"
        ),
    ):
        _task(tmp_path, "body,team\na,x\nb,y\n")


ROW_ERRORS = [
    ("text,label\na,x\n,y\n", "line 3", "expected a non-empty text in column 'text', got ''"),
    ("text,label\na,x\nb,\n", "line 3", "column 'label': expected a label, got an empty field"),
    (
        "text,label\na,x\nb,y,z\n",
        "line 3",
        "expected 2 comma-separated fields (as the header), got 3",
    ),
    (
        'text,label\na,x\nb,y\n"c\nd",\n',
        "line 4",
        "column 'label': expected a label, got an empty field",
    ),
    (
        b"text,label\na,x\nb\xe9,y\n",
        "line 3",
        "column 2: expected UTF-8 text, got byte 0xe9 (invalid",
    ),
]


@pytest.mark.parametrize(("train", "where", "message"), ROW_ERRORS)
def test_bad_row_names_file_line_and_column(tmp_path, train, where, message):
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "t.csv"
    (path.write_bytes if isinstance(train, bytes) else path.write_text)(train)
    spec = {
        "name": "t",
        "kind": "classification",
        "splits": {"train": "data/t.csv", "dev": "data/t.csv"},
    }
    with _raises_at(path, where, message):
        resolve_task(spec, base=tmp_path)


def test_dev_label_never_seen_in_train(tmp_path):
    spec = _task(tmp_path, "text,label\na,x\nb,y\n", "text,label\nc,x\nd,z\n")
    dev = tmp_path / "data" / "dev-t.csv"
    with _raises_at(
        dev,
        "line 3",
        "column 'label': label 'z' never seen in the train split "
        "(train has x, y; list every label under labels: in the spec to allow it)",
    ):
        read_split(spec, None, "dev")
    given = _task(
        tmp_path, "text,label\na,x\nb,y\n", "text,label\nc,x\nd,z\n", labels=["x", "y", "z"]
    )
    assert [e.label for e in read_split(given, None, "dev")] == ["x", "z"]
    with _raises_at(
        tmp_path / "data" / "t.csv",
        "line 3",
        "column 'label': expected a label in ['x', 'w'], got 'y'",
    ):
        _task(tmp_path, "text,label\na,x\nb,y\n", labels=["x", "w"])


def test_regression_scores(tmp_path):
    pair = {"kind": "regression", "pair": True}
    spec = _task(
        tmp_path, "text_a,text_b,label\na,b,1\nc,d,3\n", "text_a,text_b,label\na,b,4\n", **pair
    )
    assert spec.score_range == (1.0, 3.0) and spec.inferred == ("score_range",)
    with _raises_at(
        tmp_path / "data" / "dev-t.csv",
        "line 2",
        "column 'label': expected a score "
        "in [1, 3] (the range of the train split's scores; give score_range in the "
        "spec to widen it), got '4'",
    ):
        read_split(spec, None, "dev")
    with _raises_at(
        tmp_path / "data" / "t.csv",
        "line 3",
        "column 'label': expected a numeric score, got 'high'",
    ):
        _task(tmp_path, "text_a,text_b,label\na,b,1\nc,d,high\n", **pair)
    with _raises_at(
        tmp_path / "data" / "t.csv", "line 3", "column 'label': expected a score in [0, 5], got '7'"
    ):
        _task(tmp_path, "text_a,text_b,label\na,b,1\nc,d,7\n", score_range=[0, 5], **pair)
    with pytest.raises(ValueError, match="every train score is 2: nothing to learn"):
        _task(tmp_path, "text_a,text_b,label\na,b,2\nc,d,2\n", **pair)


def test_one_label_in_train_is_refused(tmp_path):
    with pytest.raises(ValueError, match="every train example has the label 'x': nothing to learn"):
        _task(tmp_path, "text,label\na,x\nb,x\n")


def test_tagging_rows(tmp_path):
    rows = '{"tokens": ["a", "b"], "tags": ["B-X", "O"]}\n{"tokens": ["c"], "tags": ["O", "O"]}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 2",
        "column 'tags': expected one tag per token (1), got 2",
    ):
        _task(tmp_path, rows, name="t.jsonl", kind="tagging")
    rows = '{"tokens": ["a", "b"], "tags": ["B-X", "O"]}\n{"tokens": ["c"], "tags": ["NOUN"]}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 2",
        "column 'tags': expected a BIO/IOB tag (O, B-TYPE or I-TYPE: the span_f1 "
        "metric reads chunks; use metric: accuracy for other tags), got 'NOUN'",
    ):
        _task(tmp_path, rows, name="t.jsonl", kind="tagging")
    pos = _task(tmp_path, rows, name="t.jsonl", kind="tagging", metric="accuracy")
    assert pos.labels == ["B-X", "NOUN", "O"] and pos.reported == ("accuracy",)
    gold, pred = [["B-X", "O"], ["NOUN"]], [["B-X", "NOUN"], ["NOUN"]]
    assert evaluate(pos, gold, pred) == {"accuracy": pytest.approx(2 / 3)}
    rows = '{"tokens": ["a b"], "tags": ["O"]}\n{"tokens": ["c"], "tags": ["B-X"]}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 1",
        "column 'tokens': expected tokens without whitespace, got 'a b'",
    ):
        _task(tmp_path, rows, name="t.jsonl", kind="tagging")


def test_jsonl_rows_refused_by_line(tmp_path):
    rows = '{"text": "a", "label": "x"}\n{"text": "b", "label": 2}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 2",
        "column 'label': expected a string as on line 1, got a number",
    ):
        _task(tmp_path, rows, name="t.jsonl")
    rows = '{"text": "a", "label": "x"}\n\n{"text": "b" "label": "y"}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 3",
        "expected a JSON object, got invalid JSON (Expecting ',' delimiter",
    ):
        _task(tmp_path, rows, name="t.jsonl")
    rows = '{"text": "a", "label": "x"}\n{"text": ["b"], "label": "y"}\n'
    with _raises_at(
        tmp_path / "data" / "t.jsonl",
        "line 2",
        "column 'text': expected a string as on line 1, got a list of a string",
    ):
        _task(tmp_path, rows, name="t.jsonl")


def test_record_keeps_paths_and_digests_and_rebuilds_the_spec(tmp_path):
    spec = _task(tmp_path, "text,label\na,x\nb,y\n", "text,label\nc,x\n")
    record = json.loads(json.dumps(describe(spec)))  # what a config.json holds
    train = tmp_path / "data" / "t.csv"
    assert record["splits"]["train"] == {
        "path": str(train),
        "format": "csv",
        "columns": {"text": "text", "label": "label"},
        "sha256": file_digest(train),
    }
    assert (record["labels"], record["metrics"], record["registered"]) == (
        ["x", "y"],
        ["accuracy", "macro_f1"],
        False,
    )
    back = spec_from_record(record)
    assert (back.name, back.kind, back.pair, back.labels, back.metric, back.reported) == (
        spec.name,
        spec.kind,
        spec.pair,
        spec.labels,
        spec.metric,
        spec.reported,
    )
    assert read_split(back, None, "dev") == read_split(spec, None, "dev")
    inline = {k: v for k, v in record.items() if k not in ("metrics", "registered")}
    assert resolve_task(inline).labels == ["x", "y"]  # a record is a spec again
    train.write_text("text,label\na,x\nb,y\nc,y\n")
    with pytest.raises(
        ValueError,
        match=re.escape(f"field 'splits.train.sha256': expected the digest of {train} as recorded"),
    ):
        resolve_task(inline)
    registered = describe("sst2")
    assert spec_from_record(registered).registered and registered["splits"]["dev"]["sha256"] is None
