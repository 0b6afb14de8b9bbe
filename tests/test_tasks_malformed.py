"""Readers on small hand-written files: each format's quirks, and every error message."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from snowfire.tasks import available_splits, read_split
from snowfire.tasks.readers import read_task_file


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def _raises_at(path: Path, line: int, message: str):
    """pytest.raises for a ValueError naming `path`, `line` and then `message`."""
    return pytest.raises(ValueError, match=re.escape(f"{path} line {line}: {message}"))


STSB_OK = "main-captions\tMSRvid\t2012test\t0001\t{score}\tA man is here.\tA man is there.\n"


def test_stsb_too_few_fields(tmp_path):
    path = _write(
        tmp_path / "stsb" / "sts-dev.csv", STSB_OK.format(score="5.000") * 2 + "a\tb\tc\td\t2.5\n"
    )
    with _raises_at(path, 3, "expected at least 7 tab-separated fields, got 5"):
        read_split("stsb", tmp_path, "dev")


def test_stsb_extra_columns_and_quotes(tmp_path):
    path = _write(
        tmp_path / "sts-train.csv",
        'g\tf\ty\t1\t3.5\tHe said "hi.\tShe "said" hi .  \tsrc\tlicence\n',
    )
    (example,) = read_task_file("stsb", path)
    assert example.words_a == ("He", "said", '"hi.')
    assert example.words_b == ("She", '"said"', "hi", ".")
    assert example.label == 3.5


@pytest.mark.parametrize(
    ("score", "shown"), [("5.5", "'5.5'"), ("x", "'x'"), ("nan", "'nan'"), ("", "''")]
)
def test_stsb_bad_score(tmp_path, score, shown):
    path = _write(tmp_path / "sts-train.csv", STSB_OK.format(score=score))
    with _raises_at(path, 1, f"expected a score in [0, 5], got {shown}"):
        read_task_file("stsb", path)


def test_sick_r_score_range_and_crlf(tmp_path):
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
    path = _write(
        tmp_path / "SICK_train.txt",
        header + "1\tA b\tC d\t4.5\tNEUTRAL\r\n2\tE f\tG h\t0.5\tNEUTRAL\r\n",
    )
    assert read_task_file("sick-e", path)[1].label == "NEUTRAL"  # no "\r" left on the label
    with _raises_at(path, 3, "expected a score in [1, 5], got '0.5'"):
        read_task_file("sick-r", path)


def test_sick_e_label_outside_the_set(tmp_path):
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    path = _write(tmp_path / "SICK_trial.txt", header + "1\tA b\tC d\t4.5\tneutral\n")
    with _raises_at(
        path, 2, "expected a label in ['ENTAILMENT', 'NEUTRAL', 'CONTRADICTION'], got 'neutral'"
    ):
        read_task_file("sick-e", path)


def test_sst2_label_and_empty_sentence(tmp_path):
    path = _write(tmp_path / "train.tsv", "sentence\tlabel\ngood fun \t1\nbad \t2\n")
    with _raises_at(path, 3, "expected a label in ['0', '1'], got '2'"):
        read_task_file("sst2", path)
    path = _write(tmp_path / "dev.tsv", "sentence\tlabel\ngood \t1\n   \t0\n")
    with _raises_at(path, 3, "expected a non-empty first sentence, got '   '"):
        read_task_file("sst2", path)


def test_sst2_field_count_and_blank_line(tmp_path):
    path = _write(tmp_path / "train.tsv", "sentence\tlabel\ngood \t1\tx\n")
    with _raises_at(path, 2, "expected 2 tab-separated fields, got 3"):
        read_task_file("sst2", path)
    path = _write(tmp_path / "dev.tsv", "sentence\tlabel\ngood \t1\n\nbad \t0\n")
    with _raises_at(path, 3, "expected 2 tab-separated fields, got an empty line"):
        read_task_file("sst2", path)


def test_unlabelled_test_file_reads_labels_as_none(tmp_path):
    # GLUE's SST-2 test.tsv: "index<TAB>sentence", no label column.
    _write(tmp_path / "sst2" / "test.tsv", "index\tsentence\n0\tit 's fine .\n")
    (example,) = read_split("sst2", tmp_path, "test")
    assert (example.words_a, example.label) == (("it", "'s", "fine", "."), None)


MNLI_HEADER = "index\tgenre\tsentence1\tsentence2\tlabel1\tgold_label\n"


def test_mnli_columns_by_name_and_no_consensus_rows(tmp_path, caplog):
    rows = [
        "0\tfiction\tA b .\tC d .\tneutral\tneutral",
        "1\tfiction\tE f .\tG h .\tneutral\t-",
        "2\tslate\tI j .\tK l .\tentailment\tentailment",
        "3\tslate\tM n .\tO p .\tneutral\t-",
    ]
    path = _write(tmp_path / "mnli" / "dev_matched.tsv", MNLI_HEADER + "\n".join(rows) + "\n")
    with caplog.at_level(logging.WARNING, logger="snowfire.tasks.tsv"):
        examples = read_split("mnli", tmp_path, "dev")
    assert [(e.index, e.words_a[0], e.label) for e in examples] == [
        (0, "A", "neutral"),
        (1, "I", "entailment"),
    ]
    assert f"{path}: skipped 2 rows whose label is '-' (lines 3, 5); read 2 examples" in caplog.text


def test_mnli_missing_column_and_bad_label(tmp_path):
    path = _write(tmp_path / "train.tsv", "id\tpremise\thypothesis\tlabel\n")
    with _raises_at(
        path,
        1,
        "expected a header with column 'sentence1', got columns "
        "['id', 'premise', 'hypothesis', 'label']",
    ):
        read_task_file("mnli", path)
    path = _write(tmp_path / "dev_matched.tsv", MNLI_HEADER + "0\tg\tA .\tB .\tx\tunknown\n")
    with _raises_at(
        path, 2, "expected a label in ['entailment', 'neutral', 'contradiction'], got 'unknown'"
    ):
        read_task_file("mnli", path)


def test_mrpc_bom_header_and_quotes(tmp_path):
    text = (
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        '1\t1\t2\tHe said "yes\tShe said "no"\n0\t3\t4\tA "b" c\tD\n'
    )
    _write(tmp_path / "mrpc" / "train.tsv", text)
    examples = read_split("mrpc", tmp_path, "train")
    assert [e.label for e in examples] == ["1", "0"]  # a quote does not swallow the next line
    assert examples[0].words_b == ("She", "said", '"no"')


def test_cola_tab_in_sentence(tmp_path):
    path = _write(tmp_path / "in_domain_train.tsv", "gj04\t1\t\tFine .\ngj04\t0\t*\tA\tB\n")
    with _raises_at(path, 2, "expected 4 tab-separated fields, got 5"):
        read_task_file("cola", path)
    path = _write(tmp_path / "in_domain_dev.tsv", "gj04\t1\t\tFine .\ngj04\t?\t*\tA B\n")
    with _raises_at(path, 2, "expected a label in ['0', '1'], got '?'"):
        read_task_file("cola", path)


CONLL = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O

-DOCSTART- -X- O O
Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER"""


def test_conll_documents_sentences_and_no_final_blank(tmp_path):
    _write(tmp_path / "conll2003" / "eng.train", CONLL)
    examples = read_split("conll2003", tmp_path, "train")
    assert [(e.index, e.words_a, e.tags) for e in examples] == [
        (0, ("EU", "rejects"), ("I-ORG", "O")),
        (1, ("Peter", "Blackburn"), ("I-PER", "I-PER")),
    ]


def test_conll_bad_columns_and_tag(tmp_path):
    path = _write(tmp_path / "eng.testa", "EU NNP I-ORG\n")
    with _raises_at(path, 1, "expected 4 whitespace-separated fields, got 3"):
        read_task_file("conll2003", path)
    path = _write(tmp_path / "eng.testb", "EU NNP I-NP I-ORG\n\nrejects VBZ I-VP B-PERSON\n")
    with _raises_at(
        path,
        3,
        "field 3: expected a tag in ['B-LOC', 'B-MISC', 'B-ORG', 'B-PER', "
        "'I-LOC', 'I-MISC', 'I-ORG', 'I-PER', 'O'], got 'B-PERSON'",
    ):
        read_task_file("conll2003", path)


def test_invalid_utf8(tmp_path):
    path = _write(tmp_path / "in_domain_train.tsv", b"gj04\t1\t\tFine .\ngj04\t1\t\tCaf\xe9 .\n")
    with _raises_at(path, 2, "column 12: expected UTF-8 text, got byte 0xe9 (invalid"):
        read_task_file("cola", path)


def test_empty_files(tmp_path):
    path = _write(tmp_path / "train.tsv", "")
    with _raises_at(path, 1, "expected a header line, got an empty file"):
        read_task_file("sst2", path)
    path = _write(tmp_path / "dev.tsv", "sentence\tlabel\n")
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: expected at least one sst2 example, got none")
    ):
        read_task_file("sst2", path)


def test_split_and_directory_errors(tmp_path):
    _write(tmp_path / "sick" / "SICK_train.txt", "x")
    assert available_splits("sick-r", tmp_path) == ["train"]
    assert available_splits("cola", tmp_path) == []
    with pytest.raises(
        FileNotFoundError,
        match=re.escape(f"sick-r dev: expected the file {tmp_path / 'sick' / 'SICK_trial.txt'}"),
    ):
        read_split("sick-r", tmp_path, "dev")
    with pytest.raises(
        ValueError, match="split: expected one of train, dev, test, select, got 'valid'"
    ):
        read_split("sick-r", tmp_path, "valid")
    missing = tmp_path / "nowhere"
    with pytest.raises(
        FileNotFoundError, match=re.escape(f"data directory {missing} does not exist")
    ):
        available_splits("sst2", missing)
    with pytest.raises(ValueError, match="unknown task 'sick'"):
        read_split("sick", tmp_path, "train")
