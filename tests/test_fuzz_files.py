"""Every data file format under generated input (hypothesis): a user task's CSV, TSV, JSON
lines, Parquet and saved datasets directory, the registered tasks' GLUE-style TSV and CoNLL,
and `--input` files (plain lines, JSON lines).

The property: a file is read with its documented meaning (each text's words are `str.split()`
of it; a BOM at the start of a file is dropped, one inside a text kept; CRLF is LF) or refused
with a ValueError naming the file and where in it (line or row, and column); never another
exception. Rows keeping the text rule read back as written; the first row that breaks it
(a NUL, or a lone surrogate: invalid UTF-8 in the file, a "\\ud83d" escape in JSON) is named.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snowfire.tasks import read_split, read_text_file, spec_from_dict, text_fault
from snowfire.tasks.readers import read_task_file
from tests.helpers.fuzz import LINE_ENDS, examples, texts

LABELS = ("pos", "neg")
ROWS = st.lists(
    st.tuples(texts(), st.sampled_from([*LABELS, *LABELS, *LABELS, "", "other"])),
    min_size=1,
    max_size=6,
)


def _bytes(text: str) -> bytes:
    """A text as a file holds it: a lone surrogate written as its (invalid) UTF-8 bytes, as a
    tool that does not check would write it."""
    return text.encode("utf-8", "surrogatepass")


def _first_refused(rows, holds_line_breaks: bool = False) -> int | None:
    """The 0-based index of the first row whose text or label breaks the rule."""
    for i, (text, label) in enumerate(rows):
        if text_fault(text) or text_fault(label):
            return i
    return None


def _clean(text: str, delimiters: str) -> bool:
    """A text the format carries as one field without quoting: no line break, no delimiter."""
    return not any(c in text for c in "\n\r" + delimiters)


def _expected(rows):
    return [(tuple(t.split()), label) for t, label in rows]


def _refused_or_read(read, path: Path, rows, where: str | None):
    """Read `path`; a ValueError must name the file (and `where` when given, e.g. "line 3").
    Returns the examples read, or None when it was refused."""
    try:
        got = read(path)
    except ValueError as err:
        assert str(path) in str(err), err
        if where is not None:
            assert where in str(err), err
        return None
    for e in got:  # what was read keeps the rule and is split as documented
        for word in (*e.words_a, *(e.words_b or ())):
            assert word and not text_fault(word) and word.split() == [word], e
    return got


def _user_spec(directory: Path, fmt: str, train: Path):
    return spec_from_dict(
        {
            "name": "fuzz",
            "kind": "classification",
            "format": fmt,
            "labels": list(LABELS),
            "splits": {"train": str(train), "dev": str(train)},
        },
        directory,
    )


# -- a user task's CSV and TSV (pyarrow, then Python's csv module names the line)


def _write_delimited(path: Path, rows, delimiter: str, quoting: bool, ends, bom: bool) -> None:
    out = io.StringIO()
    writer = csv.writer(
        out,
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE,
        escapechar=None if quoting else "\\",
        lineterminator="\n",
    )
    writer.writerow(["text", "label"])
    for text, label in rows:
        writer.writerow([text, label])
    lines = out.getvalue().split("\n")[:-1]
    data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + _bytes(data))


@given(
    rows=ROWS,
    fmt=st.sampled_from(["csv", "tsv"]),
    ends=st.lists(LINE_ENDS, min_size=1, max_size=3),
    bom=st.booleans(),
)
@example(rows=[("ok \ud83d x", "pos")], fmt="csv", ends=["\n"], bom=False)
@example(rows=[("ok", "pos"), ("a\x00b", "neg")], fmt="tsv", ends=["\r\n"], bom=True)
@example(rows=[("a\ufeffb c", "pos")], fmt="csv", ends=["\r"], bom=False)
@settings(max_examples=examples(60))
def test_a_user_csv_or_tsv_is_read_as_written_or_refused_naming_where(rows, fmt, ends, bom):
    delimiter = "," if fmt == "csv" else "\t"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"train.{fmt}"
        if fmt == "tsv" and any("\\" in t or "\t" in t for t, _ in rows):
            return  # no escaping in an unquoted TSV: not a row this writer can say
        _write_delimited(path, rows, delimiter, fmt == "csv", ends, bom)
        spec = _user_spec(Path(tmp), fmt, path)
        bad = _first_refused(rows)
        got = _refused_or_read(lambda p: read_split(spec, None, "train"), path, rows, None)
        simple = all(_clean(t, "") for t, _ in rows) and "\r" not in ends
        fine = all(t.split() and label in LABELS for t, label in rows)
        if bad is not None and simple and all(_clean(t, delimiter) for t, _ in rows[:bad]):
            assert got is None  # refused, naming the line the row is on (header: line 1)
        if bad is None and fine and simple:
            assert got is not None and [(e.words_a, e.label) for e in got] == _expected(rows)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet", "hf-dataset"])
@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("fine \x00x", r"(character|column) 6 is U\+0000 \(NUL\)"),
        ("fine \ud83dx", r"(character|column) 6(:| is U\+D83D).*(expected UTF-8 text|surrogate)"),
    ],
)
def test_a_refused_text_in_row_two_is_named_by_file_line_and_column(tmp_path, fmt, text, column):
    """The same texts in every user format: the error names the file, where the row is (line
    3 after the header of a text file; row 2 of a Parquet file or a dataset), the column or
    field, and the character."""
    rows = [("a good one", "pos"), (text, "neg")]
    path = tmp_path / f"train.{'parquet' if fmt == 'parquet' else fmt}"
    line = "line 3"
    if fmt in ("csv", "tsv"):
        _write_delimited(path, rows, "," if fmt == "csv" else "\t", fmt == "csv", ["\n"], False)
    elif fmt == "jsonl":
        body = "".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in rows)
        path.write_text(body)
        line = "line 2"
    elif fmt == "parquet":
        line = "row 2"
        _write_parquet(path, rows)
    else:
        line = "row 2"
        path = tmp_path / "train"
        if "\ud83d" in text:
            pytest.skip("a saved dataset cannot hold a lone surrogate: Arrow refuses to write it")
        _write_dataset(path, rows)
    spec = _user_spec(tmp_path, fmt, path)
    with pytest.raises(ValueError, match=re.escape(f"{path} {line}: ")) as err:
        read_split(spec, None, "train")
    assert re.search(column, str(err.value)), err.value
    if fmt in ("jsonl", "parquet", "hf-dataset"):  # the column by name; a text file's: its place
        assert "column 'text'" in str(err.value), err.value


# -- a user task's JSON lines


def _jsonl_line(text: str, label: str, hazard: str | None) -> str:
    record = json.dumps({"text": text, "label": label})  # "\ud83d" escaped as JSON writes it
    if hazard is not None:
        record = record[:-1] + f', "extra": {hazard}}}'
    return record


@given(
    rows=ROWS,
    hazard=st.one_of(
        st.none(),
        st.sampled_from(["NaN", "Infinity", "1e400", str(2**64), "[" * 5000 + "]" * 5000]),
    ),
    at=st.integers(0, 5),
    blank=st.booleans(),
)
@example(rows=[("ok \ud83d", "pos")], hazard=None, at=0, blank=False)
@example(rows=[("ok", "pos"), ("fine", "neg")], hazard="NaN", at=1, blank=True)
@example(rows=[("ok", "pos"), ("fine", "neg")], hazard="[" * 5000 + "]" * 5000, at=1, blank=False)
@settings(max_examples=examples(60))
def test_user_json_lines_are_read_as_written_or_refused_naming_the_line(rows, hazard, at, blank):
    rows = [(json.loads(json.dumps(t)), label) for t, label in rows]  # what JSON means:
    with tempfile.TemporaryDirectory() as tmp:  # "\ud83d\udc00" is one character, U+1F400
        path = Path(tmp) / "train.jsonl"
        lines = [
            _jsonl_line(t, label, hazard if i == at % len(rows) else None)
            for i, (t, label) in enumerate(rows)
        ]
        if blank:
            lines.insert(1, "   ")
        path.write_text("\n".join(lines) + "\n")
        spec = _user_spec(Path(tmp), "jsonl", path)
        got = _refused_or_read(lambda p: read_split(spec, None, "train"), path, rows, None)
        fine = all(t.split() and label in LABELS for t, label in rows)
        if hazard is None and fine and _first_refused(rows) is None:
            assert got is not None and [(e.words_a, e.label) for e in got] == _expected(rows)
        if _first_refused(rows) is not None:
            assert got is None


@pytest.mark.parametrize(
    ("depth", "found"),
    [(65, "a record nests 65 levels, the limit is 64"), (5000, "deeper than the parser reads")],
)
def test_a_json_lines_record_nested_too_deep_is_refused_naming_its_line(tmp_path, depth, found):
    """Found by the property test above: one line of 5,000 nested lists (in a column the task
    does not read) took pyarrow's reader 15 s; the depth is checked first. 64 levels pass."""
    path = tmp_path / "train.jsonl"
    lines = [  # a record is level 1, so its "x" holds 63 and depth - 1 nested lists
        f'{{"text": "{text}", "label": "{label}", "x": {"[" * n + "]" * n}}}'
        for text, label, n in [("a", "pos", 63), ("b", "neg", depth - 1)]
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{path} line 2: ") + ".*" + found):
        read_split(_user_spec(tmp_path, "jsonl", path), None, "train")
    path.write_text(lines[0] + "\n")  # 64 levels: read
    (example,) = read_split(_user_spec(tmp_path, "jsonl", path), None, "train")
    assert (example.words_a, example.label) == (("a",), "pos")


# -- Parquet and saved datasets: Arrow columns of any type


def _write_parquet(path: Path, rows, schema: dict | None = None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if schema is not None:
        pq.write_table(pa.table(schema), path)
        return
    # a lone surrogate cannot become an Arrow string: write its bytes under a string type, as
    # a tool that does not check UTF-8 would
    texts_ = pa.array([_bytes(t) for t, _ in rows], type=pa.binary())
    texts_ = pa.Array.from_buffers(pa.string(), len(rows), texts_.buffers())
    pq.write_table(pa.table({"text": texts_, "label": [label for _, label in rows]}), path)


def _write_dataset(path: Path, rows) -> None:
    import datasets

    datasets.Dataset.from_dict(
        {"text": [t for t, _ in rows], "label": [label for _, label in rows]}
    ).save_to_disk(str(path))


COLUMN_VALUES = st.one_of(
    st.lists(texts(allow_refused=False), min_size=2, max_size=2),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=2, max_size=2),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=2, max_size=2),
    st.lists(st.one_of(st.none(), st.sampled_from(LABELS)), min_size=2, max_size=2),
    st.lists(st.lists(st.sampled_from(["a", "b c", ""]), max_size=3), min_size=2, max_size=2),
    st.lists(st.booleans(), min_size=2, max_size=2),
)


@given(
    rows=st.lists(st.tuples(texts(), st.sampled_from(LABELS)), min_size=1, max_size=4),
    other=st.dictionaries(st.sampled_from(["text", "label", "sentence", "x"]), COLUMN_VALUES),
)
@example(rows=[("ok \ud83d", "pos")], other={})
@example(rows=[("ok", "pos")], other={"text": [1, 2], "label": ["pos", None]})
@settings(max_examples=examples(50))
def test_a_parquet_file_of_any_schema_is_read_or_refused_naming_the_column(rows, other):
    """Rows as written, or another schema altogether: a text column of numbers, lists or
    nulls, a missing column; each is refused naming the file, the row and the column."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.parquet"
        _write_parquet(path, rows, other or None)
        spec = _user_spec(Path(tmp), "parquet", path)
        got = _refused_or_read(lambda p: read_split(spec, None, "train"), path, rows, None)
        if not other and _first_refused(rows) is None and all(t.split() for t, _ in rows):
            assert got is not None and [(e.words_a, e.label) for e in got] == _expected(rows)
        if not other and _first_refused(rows) is not None:
            assert got is None


@given(rows=st.lists(st.tuples(texts(), st.sampled_from(LABELS)), min_size=1, max_size=3))
@example(rows=[("fine", "pos"), ("x\x00", "neg")])
@settings(max_examples=examples(8))
def test_a_saved_dataset_is_read_or_refused_naming_the_row(rows):
    pytest.importorskip("datasets")
    rows = [(t.encode("utf-8", "replace").decode(), label) for t, label in rows]  # Arrow's
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train"
        _write_dataset(path, rows)
        spec = _user_spec(Path(tmp), "hf-dataset", path)
        got = _refused_or_read(lambda p: read_split(spec, None, "train"), path, rows, None)
        if _first_refused(rows) is None and all(t.split() for t, _ in rows):
            assert got is not None and [(e.words_a, e.label) for e in got] == _expected(rows)
        else:
            assert got is None


# -- the registered tasks' formats: GLUE-style TSV (SST-2's layout) and CoNLL


@given(
    rows=st.lists(st.tuples(texts(), st.sampled_from(["0", "1", "1", "2", ""])), max_size=5),
    ends=st.lists(LINE_ENDS, min_size=1, max_size=2),
    bom=st.booleans(),
)
@example(rows=[("it is \x00 fine", "1")], ends=["\n"], bom=False)
@example(rows=[("good", "1"), ("\ufeffbad", "0")], ends=["\r\n"], bom=True)
@settings(max_examples=examples(60))
def test_a_glue_tsv_is_read_as_written_or_refused_naming_the_line(rows, ends, bom):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.tsv"
        lines = ["sentence\tlabel"] + [f"{t}\t{label}" for t, label in rows]
        data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + _bytes(data))
        bad = _first_refused(rows)
        clean = all(_clean(t, "\t") for t, _ in rows) and "\r" not in ends and "\n\n" not in ends
        before = rows[:bad] if bad is not None else []
        named = clean and all(t.split() and label in ("0", "1") for t, label in before)
        where = f"line {bad + 2}" if bad is not None and named else None
        got = _refused_or_read(lambda p: read_task_file("sst2", p), path, rows, where)
        fine = all(t.split() and label in ("0", "1") for t, label in rows)
        if bad is not None and clean:
            assert got is None
        if bad is None and clean and fine and rows:
            assert [(e.words_a, e.label) for e in got] == _expected(rows)


TAGS = st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "X", "B-"])
TOKENS = st.one_of(st.sampled_from(["EU", "rejects", "German", "-DOCSTART-", "."]), texts())


@given(
    sentences=st.lists(st.lists(st.tuples(TOKENS, TAGS), min_size=1, max_size=4), max_size=4),
    fields=st.integers(2, 5),
    ends=st.lists(LINE_ENDS, min_size=1, max_size=2),
)
@example(sentences=[[("EU", "B-ORG"), ("\x00", "O")]], fields=4, ends=["\n"])
@settings(max_examples=examples(60))
def test_a_conll_file_is_read_or_refused_naming_the_line(sentences, fields, ends):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        lines = ["-DOCSTART- -X- -X- O", ""]
        for sentence in sentences:
            for token, tag in sentence:
                lines.append(" ".join([token, *(["X"] * (fields - 2)), tag]))
            lines.append("")
        data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
        path.write_bytes(_bytes(data))
        got = _refused_or_read(lambda p: read_task_file("conll2003", p), path, [], None)
        if got is not None:
            for e in got:
                assert len(e.tags) == len(e.words_a)


# -- `--input` files: plain lines and JSON lines


@given(lines=st.lists(texts(), min_size=1, max_size=6), ends=st.lists(LINE_ENDS, min_size=1))
@example(lines=["ok \ud83d"], ends=["\n"])
@example(lines=["\ufeffhello there", "x\x00"], ends=["\r\n"])
@settings(max_examples=examples(60))
def test_an_input_text_file_is_read_as_written_or_refused_naming_line_and_column(lines, ends):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.txt"
        data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
        path.write_bytes(_bytes(data))
        got = _refused_or_read(read_text_file, path, [], None)
        simple = not any("\r" in t or "\n" in t for t in lines) and set(ends) <= {"\n", "\r\n"}
        if simple and any(text_fault(t) for t in lines):
            assert got is None
        lines = [lines[0].removeprefix("\ufeff"), *lines[1:]]  # a BOM opening the file: dropped
        if simple and not any(text_fault(t) for t in lines) and any(t.split() for t in lines):
            assert [e.words_a for e in got] == [tuple(t.split()) for t in lines if t.split()]


RECORDS = st.one_of(
    st.fixed_dictionaries({"text": texts()}, optional={"label": st.sampled_from(["a", 1, 2.5])}),
    st.fixed_dictionaries({"text_a": texts(), "text_b": texts()}),
    st.fixed_dictionaries({"tokens": st.lists(texts(), max_size=3)}),
    st.dictionaries(st.sampled_from(["text", "tokens", "label", "x"]), st.integers() | st.none()),
)


@given(
    records=st.lists(RECORDS, min_size=1, max_size=5),
    hazard=st.sampled_from([None, "NaN", "1e400", str(2**64), "[" * 3000 + "]" * 3000, "{"]),
)
@example(records=[{"text": "ok \ud83d"}], hazard=None)
@example(records=[{"text": "fine"}], hazard="Infinity")
@settings(max_examples=examples(60))
def test_an_input_json_lines_file_is_read_or_refused_naming_the_line(records, hazard):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.jsonl"
        lines = [json.dumps(r) for r in records]
        if hazard is not None:  # on the first line: refused there, whatever the record holds
            lines[0] = lines[0][:-1] + (", " if len(records[0]) else "") + f'"x": {hazard}}}'
        path.write_text("\n".join(lines) + "\n")
        line = "line 1" if hazard is not None else None
        got = _refused_or_read(read_text_file, path, [], line)
        if hazard is not None:
            assert got is None
