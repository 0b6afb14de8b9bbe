"""A user's own task, described in a spec file (YAML or JSON) or an inline object (a job's
`params.task_spec`), and `resolve_task`, the one way from a task reference to a `TaskSpec`.

    name: tickets                       # [a-z0-9][a-z0-9_-]*
    kind: classification                # classification | regression | tagging
    pair: false                         # two texts per example?
    format: csv                         # csv | tsv | jsonl | parquet | hf-dataset | conll
    columns: {text: body, label: team}  # pair: text_a, text_b, label; tagging: tokens, tags
    splits:
      train: data/train.csv             # relative to the spec file; or {path, format, columns,
      dev: data/dev.csv                 #   quoting, split (hf-dataset)}
      test: data/test.csv               # optional
    metric: macro_f1                    # optional: the kind's first metric (tasks.METRICS)
    labels: [billing, bug, other]       # optional: inferred from train (sorted)
    score_range: [0, 5]                 # regression, optional: train's (min, max)

Defaults: `format` from the file's suffix (.csv, .tsv, .jsonl/.ndjson, .parquet; a directory:
hf-dataset); `columns` named after their roles (text, label, ...; CoNLL: tokens 0, tags the
last field); `quoting` on for csv, off for tsv. Every field is checked with an error naming
the spec, the field, what was expected and what was given.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .answers import Answers
from .lines import numbered_lines
from .registry import TASKS, get_task
from .rows import roles
from .spec import KINDS, METRICS, SPLITS, USER_FORMATS, Source, TaskSpec
from .text_rule import dotted, value_fault

SPEC_SUFFIXES = (".yaml", ".yml", ".json")
NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_FIELDS = (
    "name",
    "kind",
    "pair",
    "format",
    "columns",
    "quoting",
    "splits",
    "metric",
    "labels",
    "score_range",
    "description",
)
_SPLIT_FIELDS = ("path", "format", "columns", "quoting", "split", "sha256")
_SUFFIX_FORMAT = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".conll": "conll",
}


class _Checker:
    """Errors that name the spec and the field."""

    def __init__(self, where: str):
        self.where = where

    def error(self, field: str, expected: str, got: Any) -> ValueError:
        return ValueError(
            f"task spec {self.where}: field {field!r}: expected {expected}, got {got!r}"
        )

    def one_of(self, field: str, value: Any, choices) -> Any:
        if value not in choices:
            raise self.error(field, f"one of {', '.join(map(str, choices))}", value)
        return value


def load_spec_file(path: Path | str) -> dict[str, Any]:
    """The object a spec file holds (YAML or JSON, by its suffix)."""
    path = Path(path)
    if path.suffix.lower() not in SPEC_SUFFIXES:
        raise ValueError(
            f"task spec {path}: expected a {', '.join(SPEC_SUFFIXES)} file, got {path.name!r}"
        )
    if not path.is_file():
        raise FileNotFoundError(f"task spec {path}: no such file")
    text = "".join(t + "\n" for _, t in numbered_lines(path))  # UTF-8, the text rule: by line
    if path.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"task spec {path} line {err.lineno} column {err.colno}: invalid JSON ({err.msg})"
            ) from None
        except (RecursionError, ValueError) as err:  # nesting, an integer of 4300+ digits
            raise ValueError(f"task spec {path}: JSON it cannot read ({_why(err)})") from None
    else:
        import yaml

        # libyaml's loader where installed: a nesting limit (1,000 levels) and linear time, where
        # the pure-Python loader takes seconds, quadratically, to reach its recursion limit
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            raw = yaml.load(text, Loader=loader)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
            raise ValueError(f"task spec {path}{at}: invalid YAML ({err})") from None
        except (RecursionError, ValueError) as err:
            raise ValueError(f"task spec {path}: YAML it cannot read ({_why(err)})") from None
    if not isinstance(raw, dict):
        raise ValueError(
            f"task spec {path}: expected a mapping of fields, got {type(raw).__name__}"
        )
    return raw


def _why(err: Exception) -> str:
    return "nesting too deep" if isinstance(err, RecursionError) else str(err)


def _format_of(check: _Checker, field: str, path: Path, given: Any) -> str:
    if given is not None:
        return check.one_of(field, given, USER_FORMATS)
    if path.is_dir():
        return "hf-dataset"
    fmt = _SUFFIX_FORMAT.get(path.suffix.lower())
    if fmt is None:
        raise check.error(
            field,
            f"a format ({', '.join(USER_FORMATS)}): the suffix of {path.name!r} does not say which",
            None,
        )
    return fmt


def _columns(check: _Checker, field: str, given: Any, kind: str, pair: bool, fmt: str) -> dict:
    text_roles, answer_role = roles(pair, kind == "tagging")
    wanted = (*text_roles, answer_role)
    if fmt == "conll":
        if kind != "tagging":
            raise check.error("format", "a tagging task for conll files", kind)
        defaults: dict[str, Any] = {"tokens": 0, "tags": -1}
    else:
        defaults = {role: role for role in wanted}
    if given is None:
        return defaults
    if not isinstance(given, dict):
        raise check.error(field, f"a mapping of {', '.join(wanted)} to columns", given)
    unknown = sorted(set(given) - set(wanted))
    if unknown:
        raise check.error(
            field,
            f"columns for {', '.join(wanted)} (a {kind} task{', pairs' if pair else ''})",
            unknown,
        )
    columns = defaults | given
    for role, column in columns.items():
        if fmt == "conll":
            if isinstance(column, bool) or not isinstance(column, int):
                raise check.error(f"{field}.{role}", "a 0-based field index (conll)", column)
        elif not isinstance(column, str) or not column:
            raise check.error(f"{field}.{role}", "a column name", column)
    return columns


def _source(check: _Checker, raw: dict, split: str, value: Any, base: Path, kind, pair) -> Source:
    field = f"splits.{split}"
    entry = {"path": value} if isinstance(value, str) else value
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or not entry["path"]:
        raise check.error(field, "a path, or a mapping with a path", value)
    unknown = sorted(set(entry) - set(_SPLIT_FIELDS))
    if unknown:
        raise check.error(field, f"fields among {', '.join(_SPLIT_FIELDS)}", unknown)
    path = Path(entry["path"]).expanduser()
    path = path if path.is_absolute() else (base / path)
    path = Path(*path.parts).resolve() if path.exists() else path.absolute()
    fmt = _format_of(check, f"{field}.format", path, entry.get("format", raw.get("format")))
    columns = _columns(
        check,
        f"{field}.columns" if "columns" in entry else "columns",
        entry.get("columns", raw.get("columns")),
        kind,
        pair,
        fmt,
    )
    options: dict[str, Any] = {}
    quoting = entry.get("quoting", raw.get("quoting"))
    if quoting is not None:
        if fmt not in ("csv", "tsv") or not isinstance(quoting, bool):
            raise check.error(f"{field}.quoting", "true or false, for a csv or tsv file", quoting)
        options["quoting"] = quoting
    if "split" in entry:
        if fmt != "hf-dataset" or not isinstance(entry["split"], str):
            raise check.error(f"{field}.split", "a split name, for an hf-dataset", entry["split"])
        options["split"] = entry["split"]
    if "sha256" in entry:  # a recorded spec: the file must still be the one it was
        from .describe import file_digest

        now = file_digest(path) if path.exists() else None
        if now != entry["sha256"]:
            raise check.error(
                f"{field}.sha256",
                f"the digest of {path} as recorded (the file changed or is gone)",
                now,
            )
    return Source(str(path), fmt, columns, options)


def spec_from_dict(raw: Any, base: Path | str, where: str = "inline") -> TaskSpec:
    """The TaskSpec a spec object describes (paths relative to `base`), its fields checked;
    labels and score_range still as given (`resolve_task` infers the missing ones)."""
    check = _Checker(where)
    if not isinstance(raw, dict):
        raise ValueError(f"task spec {where}: expected a mapping of fields, got {raw!r}")
    fault = value_fault(raw)  # the text rule on every string; numbers JSON has
    if fault:
        field = dotted(fault[0]) or "(the spec)"
        raise ValueError(f"task spec {where}: field {field!r}: {fault[1]}")
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise check.error(unknown[0], f"fields among {', '.join(_FIELDS)}", unknown[0])
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise check.error("name", "a name of [a-z0-9][a-z0-9_-]*", name)
    kind = check.one_of("kind", raw.get("kind"), KINDS)
    pair = raw.get("pair", False)
    if not isinstance(pair, bool):
        raise check.error("pair", "true or false", pair)
    if pair and kind == "tagging":
        raise check.error("pair", "false for a tagging task (it tags the words of one text)", pair)
    splits = raw.get("splits")
    if not isinstance(splits, dict):
        raise check.error("splits", "a mapping of train, dev (and test) to files", splits)
    for split in ("train", "dev"):
        if split not in splits:
            raise check.error(
                "splits", f"a {split} split (train and dev are needed)", sorted(splits)
            )
    if set(splits) - set(SPLITS):
        raise check.error("splits", f"splits among {', '.join(SPLITS)}", sorted(splits))
    base = Path(base)
    sources = {
        s: _source(check, raw, s, splits[s], base, kind, pair) for s in SPLITS if s in splits
    }
    metric = check.one_of("metric", raw.get("metric", METRICS[kind][0]), METRICS[kind])
    labels = raw.get("labels")
    if kind == "regression" and labels is not None:
        raise check.error("labels", "no labels for a regression task", labels)
    if labels is not None:
        names = labels if isinstance(labels, list) else []
        if not names or not all(
            isinstance(x, (str, int)) and not isinstance(x, bool) for x in names
        ):
            raise check.error("labels", "a non-empty list of label names", labels)
        labels = [str(x).strip() for x in labels]
        if len(set(labels)) != len(labels):
            raise check.error("labels", "label names without repeats", labels)
    score_range = raw.get("score_range")
    if score_range is not None:
        if kind != "regression":
            raise check.error(
                "score_range", "no score_range for a non-regression task", score_range
            )
        ok = (
            isinstance(score_range, list)
            and len(score_range) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in score_range)
            and score_range[0] < score_range[1]
        )
        if not ok:
            raise check.error("score_range", "[low, high] with low < high", score_range)
        score_range = (float(score_range[0]), float(score_range[1]))
    return _spec(name, kind, pair, labels, metric, sources, score_range, where, ())


def _spec(name, kind, pair, labels, metric, sources, score_range, where, inferred) -> TaskSpec:
    extra = ("macro_f1",) if kind == "classification" else ()  # beside accuracy, for skew
    provisional = labels if labels is not None or kind == "regression" else []
    return TaskSpec(
        name=name,
        kind=kind,
        pair=pair,
        labels=provisional,
        metric=metric,
        splits=sources,
        score_range=score_range,
        extra_metrics=extra,
        origin=where,
        inferred=inferred,
    )


def _infer(spec: TaskSpec, given_labels: bool) -> TaskSpec:
    """`spec` with the labels (or tags) and score range the train split implies, where the
    spec does not give them; a train split with one label or one score is refused."""
    from .readers import read_file, split_path

    path = split_path(spec, None, "train")
    answers = Answers(
        kind=spec.kind,
        labels=tuple(spec.labels or ()) if given_labels else None,
        score_range=spec.score_range,
        bio=spec.kind == "tagging" and spec.metric == "span_f1",
    )
    train = read_file(spec, "train", path, answers)
    inferred = []
    labels, score_range = spec.labels, spec.score_range
    if spec.kind == "regression":
        scores = [float(e.label) for e in train]
        if score_range is None:
            score_range, inferred = (min(scores), max(scores)), ["score_range"]
        if min(scores) == max(scores):
            raise ValueError(f"{path}: every train score is {scores[0]:g}: nothing to learn")
        return _with(spec, labels=None, score_range=score_range, inferred=tuple(inferred))
    seen = sorted({t for e in train for t in (e.tags if spec.kind == "tagging" else [e.label])})
    if not given_labels:
        labels, inferred = seen, ["labels"]
    if len(seen) < 2:
        what = "tag" if spec.kind == "tagging" else "label"
        raise ValueError(
            f"{path}: every train example has the {what} {seen[0]!r}: nothing to learn"
        )
    return _with(spec, labels=labels, score_range=None, inferred=tuple(inferred))


def _with(spec: TaskSpec, **changes) -> TaskSpec:
    from dataclasses import replace

    return replace(spec, **changes)


_RESOLVED: dict[str, tuple[tuple, TaskSpec]] = {}


def _stamp(spec: TaskSpec) -> tuple:
    """What the resolved spec depends on besides the spec object: the train file's state."""
    path = Path(spec.splits["train"].path)
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def resolve_task(ref: TaskSpec | str | dict, base: Path | str | None = None) -> TaskSpec:
    """The checked TaskSpec a reference names: a registered task's name, a spec file (.yaml,
    .yml, .json), or a spec object (a job's `task_spec`: relative paths against `base`, the
    current directory by default). A user task's missing labels and score range are inferred
    from its train split (read once per process while the file is unchanged)."""
    if isinstance(ref, TaskSpec):
        return ref
    if isinstance(ref, str) and ref in TASKS:
        return get_task(ref)
    if isinstance(ref, str):
        if Path(ref).suffix.lower() not in SPEC_SUFFIXES:
            get_task(ref)  # the error naming the registered tasks and --task-spec
        raw, where, base = load_spec_file(ref), ref, Path(ref).resolve().parent
    elif isinstance(ref, dict):
        raw, where, base = ref, "inline", Path(base or ".").resolve()
    else:
        raise TypeError(f"task: expected a task name, a spec file or a spec object, got {ref!r}")
    spec = spec_from_dict(raw, base, where)
    key = json.dumps([spec.to_json(), where], sort_keys=True, default=str)
    cached = _RESOLVED.get(key)
    if cached is not None and cached[0] == _stamp(spec) and cached[0]:
        return cached[1]
    resolved = _infer(spec, given_labels=raw.get("labels") is not None)
    _RESOLVED[key] = (_stamp(spec), resolved)
    return resolved
