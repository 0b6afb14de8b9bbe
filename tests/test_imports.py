"""Public APIs that hold: every project file outside tests/ reaches another package only through
the names its `__init__.__all__` exports, uses no private (`_name`) object of another package,
and imports only along the data flow (docs/CONTRACTS.md). Every package lives under one import
root, `snowfire.*` (its folder is the repository's top-level one: `cache/` is `snowfire.cache`),
so no file anywhere, tests included, imports a package by its bare folder name. Read with
`ast`; nothing is imported.

    options, nn, cache → tasks, rundir → extractor → heads → finetune → compare → jobs → api
    → snowfire → cli  (each package imports only from the floors before it: FLOW below);
    nn/ holds the torch blocks heads/ and finetune/ share; jobs/ imports no web framework

A failure names file:line and the name. There is no allow-list: a name another package needs
is exported by it (a small, deliberate `__all__`); a private method called from another
package gets a public one. Unit tests (tests/) may test internals and are not read.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = (
    "options",
    "nn",
    "tasks",
    "extractor",
    "cache",
    "heads",
    "api",
    "jobs",
    "finetune",
    "compare",
    "cli",
    "rundir",
    "snowfire",
)
SCRIPTS = ("benchmarks", "experiments")  # may import any package, through its API
# The packages each package may import: the data flow. Nothing imports cli/; only cli/
# imports snowfire/ (the Python API over the others).
FLOW = {
    "options": set(),
    "nn": set(),  # torch modules only: the blocks heads/ and finetune/ share
    "cache": set(),
    "rundir": {"options", "cache"},
    "tasks": {"options"},
    "extractor": {"options", "nn", "tasks", "cache"},
    "heads": {"options", "nn", "tasks", "cache", "rundir", "extractor"},
    "finetune": {"options", "nn", "tasks", "cache", "rundir", "extractor", "heads"},
    "compare": {"options", "nn", "tasks", "cache", "rundir", "extractor", "heads", "finetune"},
    "jobs": {
        "options",
        "nn",
        "tasks",
        "cache",
        "rundir",
        "extractor",
        "heads",
        "finetune",
        "compare",
    },
    "api": {"options", "nn", "tasks", "cache", "rundir", "extractor", "heads", "jobs"},
    "snowfire": set(PACKAGES) - {"cli", "snowfire", "api", "jobs"},
    "cli": set(PACKAGES) - {"cli"},
}
WEB = ("fastapi", "starlette", "uvicorn")  # jobs/ imports none: a worker starts light
ROOT = "snowfire"  # the one import root: folder `cache/` imports as snowfire.cache
BARE = set(PACKAGES) - {ROOT}  # the folders' names, never imported bare


def package_of(module: str) -> str:
    """The project package (its folder) of a dotted module name: snowfire.cache.store -> cache,
    snowfire.dataset -> snowfire (the Python API's own folder); else the module's top name."""
    parts = module.split(".")
    if parts[0] != ROOT:
        return parts[0]
    return parts[1] if len(parts) > 1 and parts[1] in BARE else ROOT


def module_of(pkg: str) -> str:
    """The import name of a project package: cache -> snowfire.cache."""
    return ROOT if pkg == ROOT else f"{ROOT}.{pkg}"


ENTRY = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<name>[A-Za-z_]\w*)")  # "pkg.mod:Name"


@dataclass(frozen=True)
class Violation:
    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


@dataclass
class Rules:
    """Each package's `__all__` and the private names it defines."""

    exports: dict[str, set[str]] = field(default_factory=dict)
    privates: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Path) -> Rules:
        rules = cls()
        for pkg in PACKAGES + SCRIPTS:
            if (root / pkg).is_dir():
                rules.exports[pkg] = _all(root / pkg / "__init__.py")
                rules.privates[pkg] = set().union(
                    *(_defined(p.read_text()) for p in (root / pkg).rglob("*.py"))
                )
        return rules


def _all(init: Path) -> set[str]:
    """The names of `__all__` in `init` (none when it has none): a literal, or `sorted(NAME)` /
    `list(NAME)` of a literal (e.g. a lazy package's name -> module table) bound before it."""
    if not init.is_file():
        return set()
    literals: dict[str, ast.expr] = {}
    for node in ast.parse(init.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if "__all__" not in names:
            literals.update(dict.fromkeys(names, node.value) if names else {})
            continue
        value = node.value
        if (
            isinstance(value, ast.Call)
            and getattr(value.func, "id", None) in ("sorted", "list", "set", "tuple")
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Name)
        ):
            value = literals[value.args[0].id]
        return set(ast.literal_eval(value))
    return set()


def _defined(source: str) -> set[str]:
    """Private names a module defines: functions, classes, methods, variables, attributes."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if _private(n)}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def check(rel: str, source: str, rules: Rules) -> list[Violation]:
    """What in one file (`rel`: its path in the repository) breaks a rule."""
    me = Path(rel).parts[0]
    tree = ast.parse(source, filename=rel)
    found: list[Violation] = []
    bound: dict[str, str] = {}  # a name `import pkg [as name]` bound -> pkg

    def flag(node: ast.AST, what: str) -> None:
        found.append(Violation(rel, node.lineno, what))

    def other(module: str, node: ast.AST) -> str | None:
        """The other project package `module` belongs to (None: ours or not the project's);
        flags an import against the data flow, and any by a bare folder name."""
        top = package_of(module)
        if me == "jobs" and top in WEB:
            flag(node, f"jobs imports the web framework {top}")
        if module.split(".")[0] in BARE:
            flag(node, f"{module}: a bare package name (import it as snowfire.{module})")
            return None
        if top not in PACKAGES or top == me:
            return None
        if me in FLOW and top not in FLOW[me]:
            flag(node, f"{me} imports {top}: against the data flow (docs/CONTRACTS.md)")
        return top

    def use(node: ast.AST, pkg: str, name: str, how: str) -> None:
        if _private(name):
            flag(node, f"{how}: {name} is private to {pkg}")
        elif name not in rules.exports.get(pkg, ()):
            flag(node, f"{how}: {pkg}.__all__ does not export {name}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == ROOT:
            for alias in node.names:  # `from snowfire import cache`: a package, bound
                if (
                    alias.name in PACKAGES
                    and alias.name != me
                    and other(module_of(alias.name), node)
                ):
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pkg = other(node.module, node)
            for alias in node.names if pkg else ():
                how = f"from {node.module} import {alias.name}"
                if node.module != module_of(pkg):
                    flag(node, f"{how}: reaches past {pkg}'s API (import it from {module_of(pkg)})")
                else:
                    use(node, pkg, alias.name, how)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                pkg = other(alias.name, node)
                if pkg and alias.name != module_of(pkg):
                    flag(node, f"import {alias.name}: reaches past {pkg}'s API")
                elif pkg and alias.asname:
                    bound[alias.asname] = pkg
        elif isinstance(node, ast.Call) and (module := _imported_by_name(node)):
            pkg = other(module, node)
            if pkg and module != module_of(pkg):
                flag(node, f"import_module({module!r}): reaches past {pkg}'s API")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (entry := ENTRY.fullmatch(node.value))
        ):  # "package.module:Name", imported by whoever reads it
            module, name = entry["module"], entry["name"]
            pkg = other(module, node)
            if pkg and module != module_of(pkg):
                flag(
                    node, f"{node.value!r}: reaches past {pkg}'s API (name {module_of(pkg)}:{name})"
                )
            elif pkg:
                use(node, pkg, name, repr(node.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            pkg = bound[node.value.id]
            use(node, pkg, node.attr, f"{node.value.id}.{node.attr}")
        elif (name := _private_use(node)) and name not in rules.privates.get(me, ()):
            owners = sorted(p for p in PACKAGES if p != me and name in rules.privates.get(p, ()))
            if owners:
                flag(node, f"{name}: private to {' and '.join(owners)}, used from {me}")
    return found


def _imported_by_name(node: ast.Call) -> str | None:
    """The literal module of `importlib.import_module("pkg.mod")` / `__import__("pkg.mod")`."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value[:1] != ".":
        return arg.value
    return None


def _private_use(node: ast.AST) -> str | None:
    """`x._name`, or `getattr(x, "_name")`, on anything but self or cls."""
    if isinstance(node, ast.Attribute) and _private(node.attr):
        mine = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        return None if mine else node.attr
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and _private(node.args[1].value)
    ):
        return node.args[1].value
    return None


def project_files() -> list[Path]:
    roots = [REPO / p for p in PACKAGES + SCRIPTS if (REPO / p).is_dir()]
    return sorted(f for root in roots for f in root.rglob("*.py"))


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


def bare_imports(rel: str, source: str) -> list[Violation]:
    """Imports (statements, import_module, "module:Name" strings) of a package by its bare
    folder name: `import cache`, `from heads.trainer import x`, "extractor:ExtractConfig"."""
    found = []
    for node in ast.walk(ast.parse(source, filename=rel)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Call) and (module := _imported_by_name(node)):
            names = [module]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (entry := ENTRY.fullmatch(node.value))
        ):
            names = [entry["module"]]
        else:
            continue
        found += [
            Violation(rel, node.lineno, f"bare import of {n}")
            for n in names
            if n.split(".")[0] in BARE
        ]
    return found


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
