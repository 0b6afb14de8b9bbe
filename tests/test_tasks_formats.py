"""A user's task read from every format it may be kept in: each file, written here, reads into
the same examples as the hand-written expectation (and the same line numbers)."""

from __future__ import annotations

import json

import pytest

from snowfire.tasks import Example, read_split, resolve_task

# Hand-written expectations: what every format below holds.
SINGLE = [
    Example(0, ("Refund", "my", "order,", "please"), None, "billing"),
    Example(1, ("The", "app", "says", '"error', '42"'), None, "bug"),
    Example(2, ("Thanks!",), None, "other"),
]
PAIRS = [
    Example(0, ("A", "man", "plays."), ("Someone", "plays."), 4.5),
    Example(1, ("A", "cat", "sleeps."), ("Markets", "fell."), 0.25),
]
TAGGED = [
    Example(0, ("Ada", "Lovelace", "wrote"), tags=("B-PER", "I-PER", "O")),
    Example(1, ("in", "London"), tags=("O", "B-LOC")),
]


def _spec(tmp_path, files: dict, **fields) -> dict:
    """A spec whose train and dev are the same file (the reading is what is tested)."""
    spec = {"name": "t", "splits": {"train": files["train"], "dev": files["train"]}} | fields
    (tmp_path / "t.json").write_text(json.dumps(spec))
    return resolve_task(str(tmp_path / "t.json"))


def _rows_single():
    return [
        {"body": "Refund my order, please", "team": "billing"},
        {"body": 'The app says "error 42"', "team": "bug"},
        {"body": "Thanks!", "team": "other"},
    ]


def test_csv_quoted_fields_and_lines(tmp_path):
    (tmp_path / "t.csv").write_text(
        'id,body,team\n1,"Refund my order, please",billing\n\n'
        '2,"The app says ""error 42""",bug\n3,Thanks!,other\n'
    )
    spec = _spec(
        tmp_path,
        {"train": "t.csv"},
        kind="classification",
        columns={"text": "body", "label": "team"},
    )
    examples = read_split(spec, None, "train")
    assert examples == SINGLE
    assert [e.line for e in examples] == [2, 4, 5]  # the blank line 3 is skipped
    assert spec.labels == ["billing", "bug", "other"] and spec.inferred == ("labels",)


def test_csv_text_spanning_lines_and_int_labels(tmp_path):
    (tmp_path / "t.csv").write_text('text,label\n"first line\nsecond line",1\nplain,0\n')
    spec = _spec(tmp_path, {"train": "t.csv"}, kind="classification")
    examples = read_split(spec, None, "train")
    assert examples == [
        Example(0, ("first", "line", "second", "line"), None, "1"),
        Example(1, ("plain",), None, "0"),
    ]
    assert [e.line for e in examples] == [2, 4]
    assert spec.labels == ["0", "1"]  # numbers in a CSV are read as their text


def test_tsv_keeps_bare_quotes(tmp_path):
    (tmp_path / "t.tsv").write_text(
        'body\tteam\nRefund my order, please\tbilling\nThe app says "error 42"\tbug\n'
        "Thanks!\tother\n"
    )
    spec = _spec(
        tmp_path,
        {"train": "t.tsv"},
        kind="classification",
        columns={"text": "body", "label": "team"},
    )
    assert read_split(spec, None, "train") == SINGLE


def test_jsonl(tmp_path):
    (tmp_path / "t.jsonl").write_text(
        "\n".join(json.dumps(r) for r in _rows_single()[:2])
        + "\n\n"
        + json.dumps(_rows_single()[2])
        + "\n"
    )
    spec = _spec(
        tmp_path,
        {"train": "t.jsonl"},
        kind="classification",
        columns={"text": "body", "label": "team"},
    )
    examples = read_split(spec, None, "train")
    assert examples == SINGLE
    assert [e.line for e in examples] == [1, 2, 4]


def test_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(_rows_single()), tmp_path / "t.parquet")
    spec = _spec(
        tmp_path,
        {"train": "t.parquet"},
        kind="classification",
        columns={"text": "body", "label": "team"},
    )
    examples = read_split(spec, None, "train")
    assert examples == SINGLE
    assert [e.line for e in examples] == ["row 1", "row 2", "row 3"]


def test_saved_dataset_dict_with_class_labels(tmp_path):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "body": datasets.Value("string"),
            "team": datasets.ClassLabel(names=["billing", "bug", "other"]),
        }
    )
    rows = _rows_single()
    ds = datasets.Dataset.from_dict(
        {"body": [r["body"] for r in rows], "team": [0, 1, 2]}, features=features
    )
    datasets.DatasetDict({"train": ds, "validation": ds}).save_to_disk(str(tmp_path / "saved"))
    spec = {
        "name": "t",
        "kind": "classification",
        "columns": {"text": "body", "label": "team"},
        "splits": {"train": "saved", "dev": "saved"},
    }
    task = resolve_task(spec, base=tmp_path)
    assert task.splits["train"].format == "hf-dataset"  # a directory
    assert read_split(task, None, "train") == SINGLE  # ClassLabel numbers -> their names
    assert read_split(task, None, "dev") == SINGLE  # dev: the "validation" split
    spec["splits"]["test"] = {"path": "saved", "split": "held_out"}
    with pytest.raises(
        ValueError,
        match=r"expected a split 'held_out' in the saved DatasetDict "
        r"\(give split: NAME\), got splits \['train', 'validation'\]",
    ):
        read_split(resolve_task(spec, base=tmp_path), None, "test")


def test_pairs_regression_csv_and_jsonl(tmp_path):
    (tmp_path / "p.csv").write_text(
        "s1,s2,score\nA man plays.,Someone plays.,4.5\nA cat sleeps.,Markets fell.,0.25\n"
    )
    (tmp_path / "p.jsonl").write_text(
        '{"s1": "A man plays.", "s2": "Someone plays.", "score": 4.5}\n'
        '{"s1": "A cat sleeps.", "s2": "Markets fell.", "score": 0.25}\n'
    )
    for name in ("p.csv", "p.jsonl"):
        spec = _spec(
            tmp_path,
            {"train": name},
            kind="regression",
            pair=True,
            columns={"text_a": "s1", "text_b": "s2", "label": "score"},
        )
        assert read_split(spec, None, "train") == PAIRS
        assert spec.score_range == (0.25, 4.5) and spec.labels is None


def test_tagging_conll_columns(tmp_path):
    (tmp_path / "t.conll").write_text(
        "-DOCSTART- -X- O\n\nAda NNP B-PER\nLovelace NNP I-PER\nwrote VBD O\n\n"
        "in IN O\nLondon NNP B-LOC\n"
    )
    spec = _spec(tmp_path, {"train": "t.conll"}, kind="tagging", columns={"tokens": 0, "tags": 2})
    examples = read_split(spec, None, "train")
    assert examples == TAGGED
    assert [e.line for e in examples] == [3, 7]
    assert spec.labels == ["B-LOC", "B-PER", "I-PER", "O"]


def test_tagging_lists_and_space_separated(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"tokens": list(e.words_a), "tags": list(e.tags)} for e in TAGGED]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text(
        "".join(f"{' '.join(r['tokens'])},{' '.join(r['tags'])}\n" for r in rows).join(
            ["tokens,tags\n", ""]
        )
    )
    for name in ("t.jsonl", "t.parquet", "t.csv"):
        spec = _spec(tmp_path, {"train": name}, kind="tagging")
        assert read_split(spec, None, "train") == TAGGED, name


def test_saved_dataset_with_tag_class_labels(tmp_path):
    datasets = pytest.importorskip("datasets")
    names = ["O", "B-PER", "I-PER", "B-LOC"]
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
        }
    )
    ds = datasets.Dataset.from_dict(
        {
            "tokens": [list(e.words_a) for e in TAGGED],
            "ner_tags": [[names.index(t) for t in e.tags] for e in TAGGED],
        },
        features=features,
    )
    ds.save_to_disk(str(tmp_path / "ner"))
    spec = {
        "name": "ner",
        "kind": "tagging",
        "columns": {"tags": "ner_tags"},
        "splits": {"train": "ner", "dev": "ner"},
    }
    assert read_split(resolve_task(spec, base=tmp_path), None, "train") == TAGGED


def test_unlabelled_test_split(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\na b,x\nc,y\n")
    (tmp_path / "test.csv").write_text("text\nd e\n")
    spec = resolve_task(
        {
            "name": "u",
            "kind": "classification",
            "splits": {"train": "train.csv", "dev": "train.csv", "test": "test.csv"},
        },
        base=tmp_path,
    )
    assert read_split(spec, None, "test") == [Example(0, ("d", "e"))]
