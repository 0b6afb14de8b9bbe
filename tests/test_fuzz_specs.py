"""Task spec files and job params under generated input (hypothesis).

A spec file (YAML or JSON: anchors and aliases, tags, merge keys, NaN, huge integers, deep
nesting, a NUL or a lone surrogate anywhere) resolves to a checked TaskSpec or is refused with
a ValueError (FileNotFoundError for a split file that is not there) naming the spec file, or
the data file and where in it. Job params of every kind are resolved or refused with the
job system's InvalidJobError naming the param; neither writes anything.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snowfire.tasks import TaskSpec, resolve_task, text_fault, value_fault
from tests.helpers import tree_bytes
from tests.helpers.fuzz import BAD_NUMBERS, examples, texts

TRAIN = "text,label\nthe dog runs,pos\na cat sleeps,neg\n"
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    texts(),
    st.sampled_from(["t", "classification", "regression", "tagging", "csv", "jsonl", "text"]),
    st.sampled_from(["train.csv", "macro_f1", "accuracy", "pos", "neg"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["path", "text", "label", "x", "format"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
FIELDS = "pair format columns quoting splits metric labels score_range description extra".split()
NAMED = {"name": "fuzz", "kind": "classification"}


def _spec_text(fields: dict, suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(fields)  # NaN, Infinity as Python writes them; "\ud83d" escaped
    import yaml

    return yaml.safe_dump(fields, allow_unicode=False)  # surrogates escaped as YAML says them


def _resolved_or_refused(path: Path) -> TaskSpec | None:
    try:
        spec = resolve_task(str(path))
    except (ValueError, FileNotFoundError) as err:
        assert str(path) in str(err) or str(path.parent) in str(err), err
        assert not text_fault(str(err)), err  # the message keeps the rule: it can be shown
        return None
    assert isinstance(spec, TaskSpec) and spec.labels and value_fault(spec.to_json()) is None
    return spec


@given(
    fields=st.fixed_dictionaries(
        {"name": st.just("fuzz"), "kind": st.sampled_from(["classification", "regression"])},
        optional={f: VALUES for f in FIELDS},
    ),
    splits=st.sampled_from(["ok", "generated"]),
    suffix=st.sampled_from([".yaml", ".json"]),
)
@example(fields={**NAMED, "labels": ["a\ud83d"]}, splits="ok", suffix=".yaml")
@example(
    fields={**NAMED, "kind": "regression", "score_range": [0, 1e400]}, splits="ok", suffix=".json"
)
@example(fields={**NAMED, "description": "\x00"}, splits="ok", suffix=".json")
@settings(max_examples=examples(80))
def test_a_spec_file_resolves_or_is_refused_naming_it(fields, splits, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "train.csv").write_text(TRAIN)
        if splits == "ok" or "splits" not in fields:
            fields = {**fields, "splits": {"train": "train.csv", "dev": "train.csv"}}
        path = Path(tmp) / f"spec{suffix}"
        path.write_text(_spec_text(fields, suffix))
        before = tree_bytes(Path(tmp))
        spec = _resolved_or_refused(path)
        assert tree_bytes(Path(tmp)) == before  # resolving writes nothing
        plain = {k: v for k, v in fields.items() if k not in ("splits",)}
        if value_fault(plain) is not None:
            assert spec is None  # a NUL, a lone surrogate, NaN or 2**70 anywhere: refused


YAML_HAZARDS = [
    # anchors and aliases: a billion laughs, walked once
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nlabels: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
    "base: &base {kind: classification}\n<<: *base\n",  # a merge key
    "labels: !!python/object/apply:os.system [echo hi]\n",  # a tag safe_load refuses
    "labels: !!binary aGVsbG8=\n",  # bytes, not names
    "labels: [!!timestamp 2001-12-14, !!set {a, b}]\n",
    "score_range: [.nan, .inf]\nkind: regression\n",
    "labels: [" + "9" * 5000 + "]\n",  # more digits than Python reads by default
    "labels: " + "[" * 1200 + "]" * 1200 + "\n",  # deeper than Python's recursion limit
    "labels: " + "[" * 10**5 + "]" * 10**5 + "\n",  # refused at once (was: quadratic time)
    'labels: ["a\\0b"]\n',  # a NUL escape
    'labels: ["a\\ud83d"]\n',  # a lone surrogate escape
    "? [a, b]\n: c\n",  # an unhashable key
    "null: x\n1: y\n",  # keys that are not strings
    "labels: [a, b]\r\nmetric: accuracy\r",  # CRLF and a lone CR
    "\ufefflabels: [a, b]\n",  # a BOM at the start
    "labels: [a, \ufeffb]\n",  # a BOM inside
]


@pytest.mark.parametrize("extra", YAML_HAZARDS)
def test_a_yaml_spec_with_anchors_tags_or_odd_values_resolves_or_is_refused(tmp_path, extra):
    (tmp_path / "train.csv").write_text(TRAIN)
    head = "name: fuzz\nsplits: {train: train.csv, dev: train.csv}\n"
    if "kind:" not in extra and "<<" not in extra:
        head += "kind: classification\n"
    path = tmp_path / "spec.yaml"
    path.write_text(head + extra, encoding="utf-8", errors="surrogatepass")
    _resolved_or_refused(path)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "1e400", str(2**64), "9" * 5000])
def test_a_json_spec_with_a_number_json_has_not_is_refused_naming_the_field(tmp_path, number):
    (tmp_path / "train.csv").write_text("text,label\na,1\nb,2\n")
    path = tmp_path / "spec.json"
    path.write_text(
        '{"name": "fuzz", "kind": "regression", "splits": {"train": "train.csv", "dev": '
        f'"train.csv"}}, "score_range": [0, {number}]}}'
    )
    with pytest.raises(ValueError, match=f"task spec {path}") as err:
        resolve_task(str(path))
    assert "score_range" in str(err.value) or "cannot read" in str(err.value), err.value


# -- job params


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from snowfire.jobs import Home
    from tests.helpers.tasks import write_sst2

    root = tmp_path_factory.mktemp("home")
    write_sst2(root / "tasks")
    (root / "texts.txt").write_text("the dog runs\n")
    return Home(root.resolve())


def _param_values(kind: str):
    from snowfire.jobs import params_model

    names = [*params_model(kind).model_fields, "extra"]
    typed = st.one_of(
        VALUES,
        BAD_NUMBERS.map(json.loads),
        st.sampled_from(["minilm", "hf:x", "sst2", "linear", "mean", "texts.txt", "../x", "/etc"]),
        st.fixed_dictionaries(
            {"name": st.just("t"), "kind": st.just("classification")},
            optional={"splits": VALUES, "labels": VALUES},
        ),
    )
    return st.dictionaries(st.sampled_from(names), typed, max_size=5)


@given(kind=st.sampled_from(["extract", "train", "finetune", "compare", "layers"]), data=st.data())
@example(kind="train", data=None)
@settings(max_examples=examples(120))
def test_job_params_of_any_kind_are_resolved_or_refused_naming_the_param(home, kind, data):
    from snowfire.jobs import InvalidJobError, validate_params

    if data is None:  # the case: a train job on a home with no such task data
        params = {"encoder": "minilm", "task": "mnli", "head": "linear"}
    else:
        params = data.draw(_param_values(kind))
        if data.draw(st.booleans()):  # mostly complete, to reach the command's own checks
            params = {"encoder": "minilm", "task": "sst2", "head": "linear", **params}
    before = tree_bytes(home.root)
    try:
        resolved = validate_params(kind, params, home, "job-1")
    except InvalidJobError as err:
        assert str(err).startswith("params"), err
        assert not text_fault(str(err)), err
        if data is None:
            assert type(err).__name__ == "JobInputNotFoundError", err  # a 404, not a 422
    else:
        assert value_fault(resolved) is None  # what the queue stores keeps the rule
        json.dumps(resolved, allow_nan=False)
    assert tree_bytes(home.root) == before  # a refused or resolved job wrote nothing
