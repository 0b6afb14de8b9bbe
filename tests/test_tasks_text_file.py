"""`read_text_file`: plain lines or JSON lines, and errors naming file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from snowfire.tasks import Example, read_text_file


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _raises_at(path: Path, line: int, message: str):
    return pytest.raises(ValueError, match=re.escape(f"{path} line {line}: {message}"))


def test_plain_lines(tmp_path):
    path = _write(tmp_path / "input.txt", "The cat sat .\n\n  two\tspaces  here \n{not json\n")
    assert read_text_file(path) == [
        Example(0, ("The", "cat", "sat", ".")),
        Example(1, ("two", "spaces", "here")),
        Example(2, ("{not", "json")),  # not every line opens with "{": plain text
    ]


def test_jsonl_by_content(tmp_path):
    records = [
        {"text": "A single sentence .", "label": "pos"},
        {"text_a": "Premise here .", "text_b": "Hypothesis .", "label": 1},
        {"tokens": ["New", "York", "City"], "label": 3.5},
        {"text": "No label"},
    ]
    path = _write(tmp_path / "input.txt", "\n".join(json.dumps(r) for r in records) + "\n\n")
    assert read_text_file(path) == [
        Example(0, ("A", "single", "sentence", "."), None, "pos"),
        Example(1, ("Premise", "here", "."), ("Hypothesis", "."), "1"),
        Example(2, ("New", "York", "City"), None, 3.5),
        Example(3, ("No", "label")),
    ]


def test_jsonl_by_extension_reports_bad_json(tmp_path):
    path = _write(tmp_path / "input.jsonl", '{"text": "ok"}\nplain words\n')
    with _raises_at(
        path, 2, "expected a JSON object, got invalid JSON (Expecting value at column 1)"
    ):
        read_text_file(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"sentence": "x"}',
            "expected a field 'text', 'text_a' and 'text_b', or 'tokens', got fields ['sentence']",
        ),
        (
            '{"text_a": "x"}',
            "expected a field 'text', 'text_a' and 'text_b', or 'tokens', got fields ['text_a']",
        ),
        ('{"text": "   "}', "expected a non-empty 'text', got '   '"),
        ('{"text_a": "x", "text_b": ""}', "expected a non-empty 'text_b', got ''"),
        ('{"text": 3}', "expected 'text' to be a string, got int"),
        ('{"tokens": "a b"}', "expected 'tokens' to be a list of strings"),
        (
            '{"tokens": []}',
            "expected 'tokens' to be non-empty, without empty or whitespace-holding tokens, got []",
        ),
        (
            '{"tokens": ["a b"]}',
            "expected 'tokens' to be non-empty, without empty or "
            "whitespace-holding tokens, got ['a b']",
        ),
        ('{"text": "x", "label": true}', "expected label to be a string or a number, got True"),
        ('{"text": "x", "label": [1]}', "expected label to be a string or a number, got list"),
        (
            '{"text": "x"} {"text": "y"}',
            "expected a JSON object, got invalid JSON (Extra data at column 15)",
        ),
    ],
)
def test_jsonl_errors(tmp_path, line, message):
    path = _write(tmp_path / "input.jsonl", '{"text": "fine"}\n\n' + line + "\n")
    with _raises_at(path, 3, message):
        read_text_file(path)


def test_json_value_that_is_not_an_object(tmp_path):
    path = _write(tmp_path / "input.jsonl", '["a", "b"]\n')
    with _raises_at(path, 1, "expected a JSON object, got list"):
        read_text_file(path)


def test_empty_and_missing_files(tmp_path):
    path = _write(tmp_path / "empty.txt", "\n  \n")
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: expected at least one non-empty line, got none")
    ):
        read_text_file(path)
    with pytest.raises(FileNotFoundError, match="input file .*missing.txt does not exist"):
        read_text_file(tmp_path / "missing.txt")
