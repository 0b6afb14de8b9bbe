"""The task registry and `evaluate`: specs as documented, metrics per task, boundary errors."""

from __future__ import annotations

import pytest

from snowfire import tasks
from snowfire.tasks import TASKS, Source, TaskSpec, evaluate, get_task

CONLL_TAGS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]


def test_public_api_is_the_contract_plus_metrics():
    assert sorted(tasks.__all__) == sorted(
        [
            "TASKS",
            "TaskSpec",
            "Example",
            "get_task",
            "read_split",
            "available_splits",
            "read_text_file",
            "evaluate",
            "DEMO_DATA_DIR",
            "SPLITS",
            "accuracy",
            "binary_f1",
            "pearson",
            "spearman",
            "matthews_corrcoef",
            "span_scores",
            "tag_spans",
            "train_subset",
            "example_length",  # the batches of an epoch, ❄️ and 🔥 alike (tasks/batches.py)
            "length_batches",
            "epoch_rng",
            "epoch_batches",
            # what a trainer reads, ❄️ and 🔥 alike: splits, subsample, targets
            "TRAINING_SPLITS",
            "TrainingSplits",
            "need_splits",
            "read_training",
            "label_indices",
            "encode_targets",
            "task_targets",
            # how a config names its tasks (tasks/fields.py)
            "DATA_HELP",
            "TaskFields",
            "TaskListFields",
            "resolve_tasks",
            "decode",
            "gold_of",
            "read_predictions",
            "write_predictions",
            "format_predictions",  # its text, for what checks bytes before writing (carry)
            "parse_predictions",  # its rows as written, which carry strips and restores
            "gold_text",  # an example's gold as a file writes it (format_predictions, carry)
            # a user's own task (issue 25): specs, formats, checks, records
            "FORMATS",
            "KINDS",
            "METRICS",
            "SPEC_SUFFIXES",
            "TASK_NAMES",
            "USER_FORMATS",
            "Source",
            "TaskReport",
            "as_spec",
            "check_task",
            "config_task",
            "describe",
            "file_digest",
            "load_spec_file",
            "macro_f1",
            "read_key",
            "read_source",
            "resolve_task",
            "spec_from_dict",
            "spec_from_record",
            "split_path",
            "split_source",
            # the honest protocol (tasks/selection.py): the selection split, its roles
            "SELECT",
            "SELECTIONS",
            "SELECTION_HELP",
            "PAUSE_HELP",
            "STOP_HELP",
            "RELEASE_SPLITS",
            "SplitRoles",
            "selection_slice",
            "split_roles",
            # one rule for text at every entrance (tasks/text_rule.py, issue 45)
            "INT_MAX",
            "INT_MIN",
            "TEXT_PATTERN",
            "WORD_PATTERN",
            "WORDS_PATTERN",
            "dotted",
            "escaped",
            "integral",
            "text_fault",
            "value_fault",
        ]
    )
    for name in tasks.__all__:
        assert hasattr(tasks, name)


@pytest.mark.parametrize(
    ("name", "folder", "kind", "pair", "labels", "metric", "files"),
    [
        (
            "conll2003",
            "conll2003",
            "tagging",
            False,
            CONLL_TAGS,
            "span_f1",
            ("eng.train", "eng.testa", "eng.testb"),
        ),
        (
            "sst2",
            "sst2",
            "classification",
            False,
            ["0", "1"],
            "accuracy",
            ("train.tsv", "dev.tsv", "test.tsv"),
        ),
        (
            "mnli",
            "mnli",
            "classification",
            True,
            ["entailment", "neutral", "contradiction"],
            "accuracy",
            ("train.tsv", "dev_matched.tsv", "test_matched.tsv"),
        ),
        (
            "mrpc",
            "mrpc",
            "classification",
            True,
            ["0", "1"],
            "accuracy",
            ("train.tsv", "dev.tsv", "msr_paraphrase_test.txt"),
        ),
        (
            "stsb",
            "stsb",
            "regression",
            True,
            None,
            "pearson",
            ("sts-train.csv", "sts-dev.csv", "sts-test.csv"),
        ),
        (
            "sick-e",
            "sick",
            "classification",
            True,
            ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"],
            "accuracy",
            ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        ),
        (
            "sick-r",
            "sick",
            "regression",
            True,
            None,
            "pearson",
            ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"),
        ),
        (
            "cola",
            "cola",
            "classification",
            False,
            ["0", "1"],
            "matthews",
            ("in_domain_train.tsv", "in_domain_dev.tsv", "out_of_domain_dev.tsv"),
        ),
    ],
)
def test_spec(name, folder, kind, pair, labels, metric, files):
    spec = get_task(name)
    assert isinstance(spec, TaskSpec)
    assert (spec.name, spec.folder, spec.kind, spec.pair, spec.labels, spec.metric) == (
        name,
        folder,
        kind,
        pair,
        labels,
        metric,
    )
    assert {s: src.path for s, src in spec.splits.items()} == dict(
        zip(("train", "dev", "test"), files, strict=True)
    )
    assert spec.registered and spec.origin == "registered"


def test_registry_holds_exactly_the_eight_tasks_and_is_read_only():
    assert list(TASKS) == ["conll2003", "sst2", "mnli", "mrpc", "stsb", "sick-e", "sick-r", "cola"]
    with pytest.raises(TypeError, match="does not support item assignment"):
        TASKS["new"] = TASKS["sst2"]  # type: ignore[index]
    assert get_task("stsb").score_range == (0.0, 5.0)
    assert get_task("sick-r").score_range == (1.0, 5.0)


def test_get_task_unknown():
    with pytest.raises(ValueError, match=r"unknown task 'sst-2': expected one of conll2003, sst2"):
        get_task("sst-2")
    with pytest.raises(TypeError, match="task name: expected str, got int"):
        get_task(3)  # type: ignore[arg-type]


def test_spec_checks_its_fields():
    train = {"train": Source("t.csv", "csv")}
    with pytest.raises(ValueError, match="expected kind in"):
        TaskSpec("x", "ranking", False, ["a"], "accuracy", train)
    with pytest.raises(ValueError, match="labels must be None exactly for regression"):
        TaskSpec("x", "regression", False, ["a"], "pearson", train, (0.0, 1.0))
    with pytest.raises(ValueError, match="expected splits among"):
        TaskSpec("x", "classification", False, ["a"], "accuracy", {"validation": train["train"]})
    with pytest.raises(ValueError, match="expected a classification metric .* got 'pearson'"):
        TaskSpec("x", "classification", False, ["a"], "pearson", train)
    with pytest.raises(ValueError, match="a tagging task tags the words of one text"):
        TaskSpec("x", "tagging", True, ["O"], "span_f1", train)
    with pytest.raises(ValueError, match="expected format in"):
        Source("t.xlsx", "excel")


def test_evaluate_classification_by_hand():
    gold = ["1", "1", "0", "0", "1"]
    pred = ["1", "0", "0", "1", "1"]
    # TP = 2, FP = 1, FN = 1, TN = 1
    assert evaluate("sst2", gold, pred) == {"accuracy": pytest.approx(3 / 5)}
    mrpc = evaluate("mrpc", gold, pred)
    assert mrpc == {"accuracy": pytest.approx(3 / 5), "f1": pytest.approx(2 * 2 / (4 + 1 + 1))}
    cola = evaluate("cola", gold, pred)
    # (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (2 - 1) / sqrt(3 * 3 * 2 * 2)
    assert cola == {"matthews": pytest.approx(1 / 6), "accuracy": pytest.approx(3 / 5)}
    nli = evaluate("mnli", ["entailment", "neutral"], ["entailment", "contradiction"])
    assert nli == {"accuracy": 0.5}


def test_evaluate_regression_and_tagging_keys():
    result = evaluate("stsb", [0.0, 1.0, 2.0, 3.5], [0.1, 0.9, 2.5, 3.0])
    assert set(result) == {"pearson", "spearman"}
    assert result["spearman"] == pytest.approx(1.0)
    assert set(evaluate("sick-r", [1.0, 2.0], [2.0, 1.0])) == {"pearson", "spearman"}
    tagged = evaluate("conll2003", [["I-PER", "O"]], [["B-PER", "O"]])
    assert tagged == {"span_f1": 1.0, "precision": 1.0, "recall": 1.0}


@pytest.mark.parametrize("name", list(TASKS))
def test_evaluate_reports_the_primary_metric(name):
    spec = get_task(name)
    if spec.kind == "tagging":
        gold, pred = [["I-LOC", "O"], ["O"]], [["I-LOC", "O"], ["I-ORG"]]
    elif spec.kind == "regression":
        gold, pred = [1.0, 2.0, 3.0], [1.5, 2.0, 2.5]
    else:
        gold, pred = spec.labels[:2] * 2, spec.labels[:2] + spec.labels[1::-1]
    result = evaluate(name, gold, pred)
    assert spec.metric in result
    assert all(isinstance(v, float) for v in result.values())


def test_evaluate_errors():
    with pytest.raises(
        ValueError,
        match=r"evaluate\('mrpc'\): expected gold and pred of the "
        r"same length, got 2 and 1",
    ):
        evaluate("mrpc", ["0", "1"], ["0"])
    with pytest.raises(
        ValueError,
        match=r"evaluate\('mrpc'\): pred\[1\] = 1 is not a label of "
        r"the task \(expected one of '0', '1'\)",
    ):
        evaluate("mrpc", ["0", "1"], ["0", 1])
    with pytest.raises(ValueError, match=r"gold\[0\] = 'yes' is not a label"):
        evaluate("sick-e", ["yes"], ["NEUTRAL"])
    with pytest.raises(ValueError, match="accuracy: expected at least one example, got none"):
        evaluate("sst2", [], [])
    with pytest.raises(ValueError, match="unknown task"):
        evaluate("ner", [], [])
