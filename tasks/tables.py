"""Reading a user task's file into columns, with the libraries made for each format.

    csv, tsv    pyarrow.csv: a header row; every column read as text (a label 1 stays "1");
                quoting on for csv (a field may hold the delimiter, quotes and newlines),
                off for tsv (GLUE-style files hold bare quotes); blank lines skipped
    jsonl       pyarrow.json: one object per line; blank lines skipped
    parquet     pyarrow.parquet
    hf-dataset  datasets.load_from_disk (a saved Dataset, or a DatasetDict and its split);
                a ClassLabel column gives its label names, not their numbers

`read_table` returns the wanted columns as Python lists and where each row came from (a line
of a text file, a row of a Parquet file or a dataset), so a bad row is named exactly. When a
library refuses a file, the file is scanned again with Python's own csv/json modules to name
the line (a diagnosis only: the data always comes from the library). Every text the table
holds keeps the text rule (tasks/text_rule.py): a NUL or an unpaired surrogate is refused naming
the file, the line (or row), the column and the character.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .lines import check_json_depth, json_line, malformed, numbered_lines
from .text_rule import dotted, text_fault, value_fault


@dataclass
class Table:
    """The wanted columns of one file: names present, values, and where row i came from."""

    path: Path
    names: list[str]
    columns: dict[str, list[Any]]
    where: Callable[[int], int | str]  # row index -> line number, or "row N"

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))


def read_table(path: Path, fmt: str, wanted: list[str], options: dict[str, Any]) -> Table:
    """The `wanted` columns present in file `path` of format `fmt` (absent ones are left out:
    the caller decides which it needs and names the columns present)."""
    readers = {
        "csv": _read_delimited,
        "tsv": _read_delimited,
        "jsonl": _read_jsonl,
        "parquet": _read_parquet,
        "hf-dataset": _read_dataset,
    }
    if fmt == "hf-dataset":
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: expected a directory saved by datasets' save_to_disk")
    elif not path.is_file():
        raise FileNotFoundError(f"expected the file {path}")
    table = readers[fmt](path, fmt, wanted, options)
    _keep_text_rule(table)
    return table


def _keep_text_rule(table: Table) -> None:
    """Every string of the table's columns (a tagging row's tokens and tags too) keeps the text
    rule; the first that does not is named by line (or row), column and character."""
    for name, values in table.columns.items():
        for row, value in enumerate(values):
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                fault = text_fault(item) if isinstance(item, str) else None
                if fault:
                    raise malformed(table.path, table.where(row), f"column {name!r}: {fault}")


def _missing_library(name: str, fmt: str) -> ImportError:
    extra = " (pip install -e '.[tasks]')" if name == "datasets" else ""
    return ImportError(f"reading {fmt} files needs the {name} package{extra}")


# -- csv / tsv

_FIELD_LIMIT = 2**31 - 1


def _dialect(fmt: str, options: dict[str, Any]) -> tuple[str, bool]:
    quoting = options.get("quoting", fmt == "csv")
    return ("," if fmt == "csv" else "\t"), bool(quoting)


def _read_delimited(path: Path, fmt: str, wanted: list[str], options: dict[str, Any]) -> Table:
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        raise _missing_library("pyarrow", fmt) from None
    delimiter, quoting = _dialect(fmt, options)
    parse = pacsv.ParseOptions(
        delimiter=delimiter, quote_char='"' if quoting else False, newlines_in_values=quoting
    )
    names = _header(path, delimiter, quoting)
    present = [n for n in wanted if n in names]
    convert = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in present},
        include_columns=present,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    try:
        table = pacsv.read_csv(path, parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _diagnose_delimited(path, delimiter, quoting, len(names), err) from None
    lines = _LazyLines(lambda: _record_lines(path, delimiter, quoting))
    columns = {n: table.column(n).to_pylist() for n in present}
    return Table(path, names, columns, lines.line_of)


def _csv_records(path: Path, delimiter: str, quoting: bool):
    """(first line, fields) of every record after the header, blank lines left out, read with
    Python's csv module in the dialect pyarrow was given; invalid UTF-8 names its line."""
    lines = (line + "\n" for _, line in numbered_lines(path, cr_ends=True))  # UTF-8, the rule
    if csv.field_size_limit() < _FIELD_LIMIT:  # csv's default 128 KiB; pyarrow reads more
        csv.field_size_limit(_FIELD_LIMIT)
    reader = csv.reader(
        lines,
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE,
        doublequote=True,
    )
    previous = 0
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # e.g. a field past csv's own size limit
            raise malformed(path, reader.line_num, f"could not be read as CSV: {err}") from None
        first, previous = previous + 1, reader.line_num
        if fields:
            yield first, fields


def _header(path: Path, delimiter: str, quoting: bool) -> list[str]:
    for _, fields in _csv_records(path, delimiter, quoting):
        return [f.strip() for f in fields]
    raise malformed(path, 1, "expected a header row naming the columns, got an empty file")


def _record_lines(path: Path, delimiter: str, quoting: bool) -> list[int]:
    return [line for line, _ in _csv_records(path, delimiter, quoting)][1:]


def _diagnose_delimited(path: Path, delimiter: str, quoting: bool, width: int, err) -> ValueError:
    """The line pyarrow refused, found again with Python's csv module."""
    records = _csv_records(path, delimiter, quoting)  # a UTF-8 error is raised from here
    next(records, None)
    sep = "comma" if delimiter == "," else "tab"
    for line, fields in records:
        if len(fields) != width:
            hint = "" if quoting or delimiter != "," else " (quoting is off)"
            return malformed(
                path,
                line,
                f"expected {width} {sep}-separated fields (as the header), got {len(fields)}{hint}",
            )
    return ValueError(f"{path}: could not read it as {sep}-separated values: {err}")


class _LazyLines:
    """Row index -> line number, computed (once) only when an error needs one."""

    def __init__(self, compute: Callable[[], list[int]]):
        self._compute = compute
        self._lines: list[int] | None = None

    def line_of(self, row: int) -> int:
        if self._lines is None:
            self._lines = self._compute()
        return self._lines[row]


# -- JSON lines


def _jsonl_lines(path: Path) -> list[int]:  # pyarrow's JSON reader ends lines at "\n" alone
    return [n for n, text in numbered_lines(path) if text.strip()]


def _read_jsonl(path: Path, fmt: str, wanted: list[str], options: dict[str, Any]) -> Table:
    try:
        import pyarrow as pa
        import pyarrow.json as pajson
    except ImportError:
        raise _missing_library("pyarrow", fmt) from None
    check_json_depth(path)  # before pyarrow, whose time grows with the square of the depth
    try:
        table = pajson.read_json(path)
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _diagnose_jsonl(path, wanted, err) from None
    names = list(table.column_names)
    present = [n for n in wanted if n in names]
    columns = {n: table.column(n).to_pylist() for n in present}
    return Table(path, names, columns, _LazyLines(lambda: _jsonl_lines(path)).line_of)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _diagnose_jsonl(path: Path, wanted: list[str], err) -> ValueError:
    """The line pyarrow refused: invalid JSON, not an object, or a column whose type changes."""
    first_seen: dict[str, tuple[str, int]] = {}
    for number, text in numbered_lines(path):  # a UTF-8 error is raised from here
        if not text.strip():
            continue
        try:
            record = json_line(path, number, text)
        except ValueError as bad:
            return bad
        if not isinstance(record, dict):
            return malformed(path, number, f"expected a JSON object, got {_json_type(record)}")
        fault = value_fault(record)
        if fault:
            return malformed(path, number, f"column {dotted(fault[0])!r}: {fault[1]}")
        for key, value in record.items():
            kinds = {_json_type(v) for v in value} if isinstance(value, list) else set()
            shown = _json_type(value) + (f" of {'/'.join(sorted(kinds))}" if kinds else "")
            if value is None:
                continue
            seen = first_seen.setdefault(key, (shown, number))
            if seen[0] != shown:
                return malformed(
                    path,
                    number,
                    f"column {key!r}: expected {seen[0]} as on line {seen[1]}, got {shown}",
                )
    return ValueError(f"{path}: could not read it as JSON lines: {err}")


# -- Parquet and saved datasets


def _rows(n: int) -> str:
    return f"row {n + 1}"


def _read_parquet(path: Path, fmt: str, wanted: list[str], options: dict[str, Any]) -> Table:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise _missing_library("pyarrow", fmt) from None
    try:
        names = list(pq.read_schema(path).names)
        present = [n for n in wanted if n in names]
        table = pq.read_table(path, columns=present)
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"{path}: could not read it as Parquet: {err}") from None
    return Table(path, names, {n: _values(path, n, table.column(n)) for n in present}, _rows)


def _values(path: Path, name: str, column) -> list:
    """A column's values as Python ones; a string that is not UTF-8 (Arrow's strings must be,
    but a Parquet file written by another tool may hold any bytes) named by row and column."""
    import pyarrow as pa

    try:
        return column.to_pylist()
    except UnicodeDecodeError as first:
        try:
            raws = column.cast(pa.binary()).to_pylist()
        except pa.ArrowException:  # a list of strings: named by column only
            raws = []
        for row, raw in enumerate(raws):
            try:
                (raw or b"").decode("utf-8")
            except UnicodeDecodeError as err:
                at = len(raw[: err.start].decode("utf-8")) + 1
                raise malformed(
                    path,
                    _rows(row),
                    f"column {name!r}: character {at}: expected UTF-8 text, got byte "
                    f"0x{raw[err.start]:02x} ({err.reason})",
                ) from None
        raise ValueError(f"{path}: column {name!r}: expected UTF-8 text ({first})") from None


def dataset_split(names: list[str], split: str, chosen: str | None) -> str | None:
    """The split of a DatasetDict to read for task split `split`: the spec's `split` option,
    else the split of that name (dev: also "validation", the Hub's name for it)."""
    if chosen is not None:
        return chosen if chosen in names else None
    for name in (split, "validation") if split == "dev" else (split,):
        if name in names:
            return name
    return None


def _read_dataset(path: Path, fmt: str, wanted: list[str], options: dict[str, Any]) -> Table:
    try:
        import datasets
    except ImportError:
        raise _missing_library("datasets", fmt) from None
    try:
        loaded = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as err:
        raise ValueError(f"{path}: not a directory saved by save_to_disk: {err}") from None
    if isinstance(loaded, datasets.DatasetDict):
        name = dataset_split(list(loaded), options["task_split"], options.get("split"))
        if name is None:
            wanted_split = options.get("split") or options["task_split"]
            raise ValueError(
                f"{path}: expected a split {wanted_split!r} in the saved DatasetDict (give "
                f"split: NAME), got splits {list(loaded)}"
            )
        loaded = loaded[name]
    names = list(loaded.column_names)
    present = [n for n in wanted if n in names]
    columns = loaded.select_columns(present).to_dict() if present else {}
    for name in present:
        columns[name] = _class_names(loaded.features[name], columns[name])
    return Table(path, names, columns, _rows)


def _class_names(feature, values: list) -> list:
    """Values of a ClassLabel column (or a sequence of them) as their names."""
    names = getattr(feature, "names", None)
    if names is not None:
        return [None if v is None or v < 0 else names[v] for v in values]
    inner = getattr(feature, "feature", None)
    inner_names = getattr(inner, "names", None)
    if inner_names is not None:
        return [None if seq is None else [inner_names[v] for v in seq] for seq in values]
    return values
