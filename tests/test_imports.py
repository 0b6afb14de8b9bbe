"""Public APIs that hold: every project file outside tests/ reaches another package only through
the names its `__init__.__all__` exports, uses no private (`_name`) object of another package,
and imports only along the data flow (docs/CONTRACTS.md). Every package lives under one import
root, `snowfire.*` (its folder is the repository's top-level one: `cache/` is `snowfire.cache`),
so no file anywhere, tests included, imports a package by its bare folder name. Read with
`ast`; nothing is imported.

    options, nn, cache → tasks, rundir → extractor → heads → finetune → serving, compare → jobs
    → api → snowfire → cli  (each package imports only from the floors before it: FLOW below);
    nn/ holds the torch blocks heads/ and finetune/ share; serving/ (predictions of saved runs)
    sits over heads/ and finetune/, under api/; jobs/ imports no web framework

A failure names file:line and the name. There is no allow-list: a name another package needs
is exported by it (a small, deliberate `__all__`); a private method called from another
package gets a public one. Unit tests (tests/) may test internals and are not read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.imports import (
    FLOW,
    PACKAGES,
    REPO,
    Rules,
    bare_imports,
    check,
    module_of,
    project_files,
)


# ---------------------------------------------------------------- the project
def test_every_import_holds_to_the_public_apis_and_the_data_flow():
    rules = Rules.of(REPO)
    files = project_files()
    assert len(files) > 100 and {Path(f).relative_to(REPO).parts[0] for f in files} >= set(FLOW)
    problems = [v for f in files for v in check(str(f.relative_to(REPO)), f.read_text(), rules)]
    assert not problems, f"{len(problems)} imports past a package's API:\n" + "\n".join(
        map(str, problems)
    )


def test_docs_contracts_states_the_flow_this_file_checks():
    """docs/CONTRACTS.md's floors line (`a, b → c → ...`) names every package once, and what
    each package may import (FLOW) lies on the floors before its own."""
    text = (REPO / "docs" / "CONTRACTS.md").read_text()
    (line,) = [s.strip() for s in text.splitlines() if s.startswith("    ") and s.count("→") > 5]
    floors = [[p.strip() for p in floor.split(",")] for floor in line.split("→")]
    assert sorted(p for floor in floors for p in floor) == sorted(PACKAGES), line
    below: set[str] = set()
    for floor in floors:
        for pkg in floor:
            above = FLOW[pkg] - below
            assert not above, (
                f"docs/CONTRACTS.md puts {pkg} below {sorted(above)}, which it imports"
            )
        below |= set(floor)


def test_every_package_exports_what_it_lists():
    """Each name of an `__all__` is defined or imported by its `__init__` (or loaded on first
    use by its `__getattr__`), so exporting it is not a promise the package cannot keep."""
    import importlib

    for pkg in PACKAGES:
        if not (REPO / pkg / "__init__.py").is_file():
            continue
        module = importlib.import_module(module_of(pkg))
        missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
        assert not missing, f"{pkg}/__init__.py: __all__ lists {missing}, which it lacks"


def test_nothing_anywhere_imports_a_package_by_its_bare_folder_name():
    """Tests, scripts and benchmarks too: every package is snowfire.X, so a checkout's folders
    never shadow (nor are shadowed by) another distribution's `api`, `tasks` or `jobs`."""
    files = sorted(p for p in REPO.rglob("*.py") if not {".venv", ".git"} & set(p.parts))
    assert len(files) > 200
    problems = [v for f in files for v in bare_imports(str(f.relative_to(REPO)), f.read_text())]
    assert not problems, "\n".join(map(str, problems))


# ---------------------------------------------------------------- the checker itself
RULES = Rules(
    exports={"cache": {"Store", "open_reader"}, "heads": {"train"}, "extractor": {"extract"}},
    privates={"cache": {"_committed_segments", "_info"}, "extractor": {"_plan"}, "cli": set()},
)


@pytest.mark.parametrize(
    "rel, source, expected",
    [
        (
            "heads/x.py",
            "from snowfire.cache.bucket import is_bucket",
            "heads/x.py:1: from snowfire.cache.bucket import is_bucket: reaches past cache's API",
        ),
        (
            "heads/x.py",
            "from snowfire.cache import is_bucket",
            "heads/x.py:1: from snowfire.cache import is_bucket: cache.__all__ does not export",
        ),
        (
            "heads/x.py",
            "import snowfire.cache.wire\nsnowfire.cache.wire.decode(b'')",
            "heads/x.py:1: import snowfire.cache.wire: reaches past cache's API",
        ),
        (
            "heads/x.py",
            "from snowfire import cache\n\ncache.wire.decode(b'')",
            "heads/x.py:3: cache.wire: cache.__all__ does not export wire",
        ),
        (
            "heads/x.py",
            "import snowfire.cache as c\nc._info({})",
            "heads/x.py:2: c._info: _info is private to cache",
        ),
        (
            "cli/main.py",
            "def f(store):\n    return store._committed_segments('p')",
            "cli/main.py:2: _committed_segments: private to cache, used from cli",
        ),
        (
            "cli/main.py",
            "getattr(store, '_committed_segments')",
            "cli/main.py:1: _committed_segments: private to cache, used from cli",
        ),
        (
            "benchmarks/b.py",
            "from snowfire.extractor.run import _plan",
            "benchmarks/b.py:1: from snowfire.extractor.run import _plan: reaches past extractor's",
        ),
        (
            "benchmarks/b.py",
            "from snowfire.extractor import _plan",
            "benchmarks/b.py:1: from snowfire.extractor import _plan: _plan is private to",
        ),
        (
            "cache/x.py",
            "def f():\n    from snowfire.heads import train",
            "cache/x.py:2: cache imports heads: against the data flow",
        ),
        (
            "cache/x.py",
            "from snowfire import heads",
            "cache/x.py:1: cache imports heads: against the data flow",
        ),
        (
            "extractor/x.py",
            "import importlib\nimportlib.import_module('snowfire.heads.trainer')",
            "extractor/x.py:2: extractor imports heads: against the data flow",
        ),
        (
            "jobs/x.py",
            "import importlib\nimportlib.import_module('snowfire.heads.trainer')",
            "jobs/x.py:2: import_module('snowfire.heads.trainer'): reaches past heads's API",
        ),
        (
            "jobs/x.py",
            "from fastapi import FastAPI",
            "jobs/x.py:1: jobs imports the web framework fastapi",
        ),
        (
            "cli/main.py",
            "command('train', 'snowfire.heads.config:TrainConfig')",
            "cli/main.py:1: 'snowfire.heads.config:TrainConfig': reaches past heads's API",
        ),
        (
            "cli/main.py",
            "command('train', 'snowfire.heads:Trainer')",
            "cli/main.py:1: 'snowfire.heads:Trainer': heads.__all__ does not export Trainer",
        ),
        (
            "cli/main.py",
            "from heads import train",
            "cli/main.py:1: heads: a bare package name (import it as snowfire.heads)",
        ),
        (
            "cli/main.py",
            "import cache",
            "cli/main.py:1: cache: a bare package name (import it as snowfire.cache)",
        ),
        (
            "cli/main.py",
            "command('train', 'heads:TrainConfig')",
            "cli/main.py:1: heads: a bare package name",
        ),
    ],
)
def test_the_checker_finds(rel, source, expected):
    assert any(str(v).startswith(expected) for v in check(rel, source, RULES)), check(
        rel, source, RULES
    )


@pytest.mark.parametrize(
    "rel, source",
    [
        (
            "heads/x.py",
            "from snowfire.cache import Store, open_reader\n"
            "from snowfire import cache\ncache.Store",
        ),
        ("cache/x.py", "from .store import _info\nfrom . import wire\nx._info"),
        ("cache/x.py", "from snowfire.cache.store import _info"),
        ("cli/main.py", "class A:\n    def f(self):\n        return self._committed_segments"),
        ("extractor/x.py", "import numpy as np\nnp._NoValue\nimport torch.nn"),
        ("api/x.py", "from fastapi import FastAPI"),
        ("cli/main.py", "command('train', 'snowfire.heads:train')\nurl = 'localhost:8000'"),
        ("cli/main.py", "from snowfire import __version__"),
    ],
)
def test_the_checker_lets_through(rel, source):
    assert check(rel, source, RULES) == []


@pytest.mark.parametrize(
    "source, expected, fixed",
    [
        ("import cache", "x.py:1: bare import of cache", "from snowfire import cache"),
        (
            "import cache.wire as w",
            "x.py:1: bare import of cache.wire",
            "import snowfire.cache.wire as w",
        ),
        (
            "from heads.trainer import train",
            "x.py:1: bare import of heads.trainer",
            "from snowfire.heads.trainer import train",
        ),
        (
            "import importlib\nimportlib.import_module('finetune')",
            "x.py:2: bare import of finetune",
            "import importlib\nimportlib.import_module('snowfire.finetune')",
        ),
        (
            "X = 'extractor:ExtractConfig'",
            "x.py:1: bare import of extractor",
            "X = 'snowfire.extractor:ExtractConfig'",
        ),
    ],
)
def test_bare_imports_are_found_everywhere(source, expected, fixed):
    assert [str(v) for v in bare_imports("x.py", source)] == [expected]
    assert bare_imports("x.py", fixed) == []
