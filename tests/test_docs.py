"""The docs cite what exists: every test a doc names (`tests/test_x.py`, `::name`, a fragment
`..._part_...`) is in the file it names, and no doc holds one machine's paths (the data and
work directories are placeholders: DATA, WORK, DIR)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers import REPO

DOCS = [REPO / "README.md", REPO / "benchmarks" / "README.md", *sorted(REPO.glob("docs/*.md"))]
#: a test file, optionally with ::name (and a parametrisation); or a later `::name` or
#: `..._fragment_...` in the same line, which belongs to the last file named before it
_CITE = re.compile(
    r"(?P<file>tests/[\w/]+\.py)(?:::(?P<name>\w+))?"
    r"|`::(?P<more>\w+)(?:\[[^\]`]*\])?`"
    r"|`\.\.\.(?P<part>_\w+_)\.\.\.`"
)
#: absolute paths of one machine: the checkout's parents, temporary and home directories
_MACHINE_PATH = re.compile(r"(?<![\w.~$])/(?:work|tmp|root|home|Users|mnt)/\S*")


def defined_names(path: Path) -> set[str]:
    """The names of the functions and classes defined in a test file (nested ones too)."""
    tree = ast.parse(path.read_text(), str(path))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in ast.walk(tree) if isinstance(node, kinds)}


def missing_citations(text: str, root: Path = REPO) -> tuple[list[str], int]:
    """(what `text` cites that does not exist, as 'line N: what', and how many citations)."""
    missing, count = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        current: Path | None = None
        for m in _CITE.finditer(line):
            count += 1
            if m["file"]:
                current = root / m["file"]
                if not current.is_file():
                    missing.append(f"line {number}: {m['file']} (no such file)")
                    current = None
                elif m["name"] and m["name"] not in defined_names(current):
                    missing.append(f"line {number}: {m['file']}::{m['name']}")
                continue
            if current is None:
                missing.append(f"line {number}: {m[0]} follows no test file")
                continue
            names = defined_names(current)
            if m["more"] and m["more"] not in names:
                missing.append(f"line {number}: {current.relative_to(root)}::{m['more']}")
            if m["part"] and not any(m["part"] in n for n in names):
                missing.append(f"line {number}: no test in {current.relative_to(root)} has {m[0]}")
    return missing, count


def test_every_test_a_doc_cites_exists():
    found, counts = [], {}
    for doc in DOCS:
        missing, counts[str(doc.relative_to(REPO))] = missing_citations(doc.read_text())
        found += [f"{doc.relative_to(REPO)}: {m}" for m in missing]
    assert found == []
    # the check reads the citations (a pattern that matched nothing would pass vacuously)
    assert counts["docs/reliability.md"] >= 40 and counts["README.md"] >= 2, counts


def test_no_doc_holds_a_machines_paths():
    found = [
        f"{doc.relative_to(REPO)}:{number}: {m[0]}"
        for doc in DOCS
        for number, line in enumerate(doc.read_text().splitlines(), 1)
        for m in _MACHINE_PATH.finditer(line)
    ]
    assert found == []


def test_the_checks_see_what_is_wrong():
    real = "tests/test_runs.py::test_holding_a_run_removes_what_a_killed_writer_left"
    assert missing_citations(f"| a | {real} |") == ([], 1)
    text = "\n".join(
        [
            "| x | `tests/test_runs.py::test_no_such_test` |",
            "| x | `tests/test_no_such_file.py` |",
            "| x | `tests/test_jobs_queue.py` (`..._loses_its_lease_...`, `..._never_there_...`) |",
            f"| x | {real}, `::test_gone[bucket]` |",
            "| x | `::test_orphan` |",
        ]
    )
    missing, count = missing_citations(text)
    assert count == 8
    assert missing == [
        "line 1: tests/test_runs.py::test_no_such_test",
        "line 2: tests/test_no_such_file.py (no such file)",
        "line 3: no test in tests/test_jobs_queue.py has `..._never_there_...`",
        "line 4: tests/test_runs.py::test_gone",
        "line 5: `::test_orphan` follows no test file",
    ]
    paths = "--data /work/shared/data, /tmp/x, /root/.cache, ~/snowfire, HOME/runs, `/tmp` probe"
    assert [m[0] for m in _MACHINE_PATH.finditer(paths)] == [
        "/work/shared/data,",
        "/tmp/x,",
        "/root/.cache,",
    ]
