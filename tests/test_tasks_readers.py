"""Every reader on the real release files, against the counts in shared/data/SOURCES.md."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np
import pytest

from snowfire.tasks import TASKS, available_splits, evaluate, get_task, read_split, split_path
from snowfire.tasks.answers import Answers
from snowfire.tasks.readers import read_task_file
from snowfire.tasks.tsv import LAYOUTS, read_tsv

pytestmark = pytest.mark.slow

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not DATA_DIR.is_dir():
        pytest.skip(
            f"real task data not found: expected the shared data folder at {DATA_DIR} "
            "(next to the repository); it is not redistributed with the project"
        )
    return DATA_DIR


@functools.cache
def _read(task: str, split: str) -> list:
    return read_split(task, DATA_DIR, split)


def _data_rows(path: Path, header: bool) -> int:
    return len(path.read_bytes().splitlines()) - int(header)


# (task, split, examples) from SOURCES.md; cola dev: in_domain_dev.tsv has 527 lines.
COUNTS = [
    ("conll2003", "train", 14_041),
    ("conll2003", "dev", 3_250),
    ("sst2", "train", 67_349),
    ("sst2", "dev", 872),
    ("mnli", "train", 9_000),
    ("mnli", "dev", 999),
    ("mrpc", "train", 3_668),
    ("mrpc", "dev", 408),
    ("stsb", "train", 5_749),
    ("stsb", "dev", 1_500),
    ("sick-e", "train", 4_500),
    ("sick-e", "dev", 500),
    ("sick-r", "train", 4_500),
    ("sick-r", "dev", 500),
    ("cola", "train", 8_551),
    ("cola", "dev", 527),
]


@pytest.mark.parametrize(("task", "split", "count"), COUNTS)
def test_counts(data_dir, task, split, count):
    examples = _read(task, split)
    assert len(examples) == count
    assert [e.index for e in examples] == list(range(count))
    spec = get_task(task)
    for e in examples:
        assert e.words_a and all(e.words_a)
        assert (e.words_b is not None) == spec.pair
        if spec.pair:
            assert e.words_b and all(e.words_b)
        if spec.kind == "classification":
            assert e.label in spec.labels and e.tags is None
        elif spec.kind == "regression":
            low, high = spec.score_range
            assert isinstance(e.label, float) and low <= e.label <= high
        else:
            assert e.label is None and len(e.tags) == len(e.words_a)
            assert set(e.tags) <= set(spec.labels)


@pytest.mark.parametrize("task", list(TASKS))
def test_available_splits(data_dir, task):
    # The official test splits are held back: train and dev only, in order.
    assert available_splits(task, data_dir) == ["train", "dev"]


@pytest.mark.parametrize(
    ("split", "sentences", "tokens"),
    [
        ("train", 14_041, 203_621),
        ("dev", 3_250, 51_362),
    ],
)
def test_conll_tokens(data_dir, split, sentences, tokens):
    examples = _read("conll2003", split)
    assert sum(len(e.words_a) for e in examples) == tokens
    assert examples[0].words_a[:3] == (
        ("EU", "rejects", "German") if split == "train" else ("CRICKET", "-", "LEICESTERSHIRE")
    )
    assert examples[0].tags[:3] == (
        ("I-ORG", "O", "I-MISC") if split == "train" else ("O", "O", "I-ORG")
    )
    assert not any(w == "-DOCSTART-" for e in examples for w in e.words_a)


def test_conll_train_keeps_the_b_misc_variant(data_dir):
    tags = [t for e in _read("conll2003", "train") for t in e.tags]
    assert tags.count("B-MISC") == 37


def test_conll_span_f1_matches_seqeval_on_perturbed_dev(data_dir):
    """A golden check on real IOB1 data: gold vs a corrupted copy, ours vs seqeval on IOB2."""
    from seqeval.metrics import f1_score

    from snowfire.tasks.spans import iob1_to_iob2

    gold = [list(e.tags) for e in _read("conll2003", "dev")]
    rng = np.random.default_rng(0)
    labels = get_task("conll2003").labels
    pred = [
        [labels[rng.integers(len(labels))] if rng.random() < 0.05 else t for t in s] for s in gold
    ]
    ours = evaluate("conll2003", gold, pred)
    expected = f1_score([iob1_to_iob2(s) for s in gold], [iob1_to_iob2(s) for s in pred])
    assert ours["span_f1"] == pytest.approx(expected, abs=1e-12)
    assert evaluate("conll2003", gold, gold)["span_f1"] == 1.0


@pytest.mark.parametrize(("split", "file"), [("train", "train.tsv"), ("dev", "dev_matched.tsv")])
def test_mnli_skips_no_consensus_rows_and_counts_them(data_dir, split, file, caplog):
    path = data_dir / "mnli" / file
    spec = get_task("mnli")
    with caplog.at_level(logging.WARNING, logger="snowfire.tasks.tsv"):
        examples, skipped = read_tsv(Answers.of(spec), LAYOUTS["mnli"], path)
    rows = _data_rows(path, header=True)
    print(f"mnli {split}: {rows} rows, {len(examples)} examples, {skipped} '-' labels skipped")
    assert len(examples) + skipped == rows == {"train": 9_000, "dev": 999}[split]
    assert skipped == 0  # the sample holds consensus labels only
    assert ("skipped" in caplog.text) == (skipped > 0)


def test_mnli_glue_layout(data_dir):
    """GLUE's 12-column MNLI train.tsv: columns found by name, not position."""
    path = data_dir / "mnli" / "glue_format_train_rows.tsv"
    examples = read_task_file("mnli", path)
    assert len(examples) == _data_rows(path, header=True) == 480
    first = examples[0]
    assert first.words_a == ("Well,", "he", "showed", "them.")
    assert first.words_b == ("He", "beat", "them", "up.")
    assert first.label == "neutral"
    labels = [e.label for e in examples]
    assert {label: labels.count(label) for label in set(labels)} == {
        "entailment": 160,
        "neutral": 160,
        "contradiction": 160,
    }


def test_sst2_trailing_space_is_not_a_word(data_dir):
    first = _read("sst2", "train")[0]
    assert first.words_a == ("hide", "new", "secretions", "from", "the", "parental", "units")
    assert first.label == "0"


def test_mrpc_bom_and_quotes(data_dir):
    first = _read("mrpc", "train")[0]
    assert first.label == "1"
    assert first.words_a[:2] == ("Amrozi", "accused")
    assert '"the' in first.words_a  # quoting off: the quote stays inside the word
    original = read_task_file("mrpc", data_dir / "mrpc" / "msr_paraphrase_train.txt")
    assert len(original) == 4_076 == 3_668 + 408
    assert sum(e.label == "1" for e in original) == 2_753


def test_stsb_lines_with_extra_columns(data_dir):
    """197 train / 22 dev lines carry 2 trailing columns; the sentences stay columns 6 and 7."""
    for split, extra in (("train", 197), ("dev", 22)):
        path = split_path("stsb", data_dir, split)
        lines = path.read_text(encoding="utf-8").splitlines()
        long = [i for i, line in enumerate(lines) if len(line.split("\t")) == 9]
        assert len(long) == extra
        examples = _read("stsb", split)
        for i in long:
            fields = lines[i].split("\t")
            assert examples[i].words_a == tuple(fields[5].split())
            assert examples[i].words_b == tuple(fields[6].split())
            assert examples[i].label == float(fields[4])


def test_sick_e_and_r_read_the_same_pairs(data_dir):
    e, r = _read("sick-e", "train"), _read("sick-r", "train")
    assert [x.words_a for x in e] == [x.words_a for x in r]
    assert (e[0].label, r[0].label) == ("NEUTRAL", 4.5)
    labels = [x.label for x in e]
    assert {k: labels.count(k) for k in set(labels)} == {
        "NEUTRAL": 2_536,
        "ENTAILMENT": 1_299,
        "CONTRADICTION": 665,
    }


def test_sick_full_release_with_crlf_and_other_column_names(data_dir):
    path = data_dir / "sick" / "SICK_full.train_trial.txt"
    assert len(read_task_file("sick-e", path)) == len(read_task_file("sick-r", path)) == 4_934


def test_cola_labels(data_dir):
    train = _read("cola", "train")
    assert train[0].words_a[:2] == ("Our", "friends")
    dev = _read("cola", "dev")
    assert sum(e.label == "1" for e in train) + sum(e.label == "1" for e in dev) == 6_388
