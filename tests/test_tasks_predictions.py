"""A run's predictions file read back: `parse_predictions` gives the rows as written (what
experiments/carry.py strips and restores), `read_predictions` what `tasks.evaluate` was given,
for every kind, and a broken file is refused naming its line."""

from __future__ import annotations

import re

import pytest

from snowfire.tasks import (
    Example,
    format_predictions,
    get_task,
    gold_text,
    parse_predictions,
    read_predictions,
    write_predictions,
)

#: A registered task of each kind (the format reads nothing else of a spec).
KINDS = {"classification": "sst2", "regression": "stsb", "tagging": "conll2003"}


def _spec(kind: str):
    return get_task(KINDS[kind])


def test_classification_and_regression_rows_come_back_as_written(tmp_path):
    examples = [Example(0, ("a",), None, "yes"), Example(1, ("b",), None, None)]  # 1: unlabelled
    text = format_predictions(_spec("classification"), examples, ["no", "yes"])
    assert text == "index\tgold\tpredicted\n0\tyes\tno\n1\t\tyes\n"
    assert parse_predictions(text, "classification") == [("0", "yes", "no"), ("1", "", "yes")]
    scores = [Example(0, ("a",), ("b",), 4.5), Example(1, ("c",), ("d",), 0.25)]
    path = tmp_path / "dev.tsv"
    write_predictions(path, _spec("regression"), scores, [0.1 + 0.2, 3.0])
    assert read_predictions(path, "regression") == ([4.5, 0.25], [0.1 + 0.2, 3.0])  # exact


def test_tagging_keeps_every_sentence_and_an_empty_one(tmp_path):
    examples = [
        Example(0, ("Ada", "Lovelace"), tags=("B-PER", "I-PER")),
        Example(1, (), tags=()),
        Example(2, ("in", "New York"), tags=("O", "B-LOC")),  # a token list's word, spaced
    ]
    preds = [["B-PER", "O"], [], ["O", "O"]]
    text = format_predictions(_spec("tagging"), examples, preds)
    assert text == "Ada B-PER B-PER\nLovelace I-PER O\n\n\nin O O\nNew York B-LOC O\n\n"
    assert parse_predictions(text, "tagging") == [
        [("Ada", "B-PER", "B-PER"), ("Lovelace", "I-PER", "O")],
        [],
        [("in", "O", "O"), ("New York", "B-LOC", "O")],
    ]
    path = tmp_path / "dev.tsv"
    path.write_text(text)
    assert read_predictions(path, "tagging") == ([list(e.tags) for e in examples], preds)
    assert parse_predictions("", "tagging") == []  # a split of no sentences


@pytest.mark.parametrize(
    ("kind", "text", "says"),
    [
        ("classification", "idx\tgold\tpredicted\n0\tyes\tno\n", "line 1: expected the header"),
        ("classification", "index\tgold\tpredicted\n0\tyes\tno", "line 2: the file ends without"),
        ("classification", "index\tgold\tpredicted\n0\tyes\n", "line 2: expected 3 fields"),
        ("tagging", "Ada B-PER B-PER\nLovelace I-PER\n\n", "line 2: expected 3 fields"),
        ("tagging", "Ada B-PER B-PER\n", "line 1: the last sentence has no blank line"),
    ],
)
def test_a_broken_file_is_refused_naming_its_line(tmp_path, kind, text, says):
    path = tmp_path / "dev.tsv"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: {says}")):
        read_predictions(path, kind)


def test_gold_is_written_as_the_example_holds_it():
    """gold_text: what both format_predictions and carry's stripping compare rows against."""
    words = ("EU", "rejects")
    assert gold_text("classification", Example(0, words, label="1")) == "1"
    assert gold_text("regression", Example(0, words, label=4.25)) == "4.25"
    assert gold_text("classification", Example(0, words)) == ""  # unlabelled test split
    assert gold_text("tagging", Example(0, words, tags=("I-ORG", "O"))) == ("I-ORG", "O")
    assert gold_text("tagging", Example(0, words)) == ("", "")
    text = format_predictions(_spec("regression"), [Example(3, words, label=4.25)], [4.0])
    assert text.splitlines()[1] == "3\t4.25\t4.0"
