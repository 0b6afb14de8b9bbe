"""The tests' own layout and hygiene, read with `ast` (nothing is imported or run):

- shared helpers live in tests/helpers/ (plain functions) and tests/conftest.py (fixtures), so
  no test module imports another test module, conftest, or the demo's helpers (cli/demo.py:
  only a test of the demo imports it);
- a test that starts a process (itself, or through a fixture, a helper or a job worker) is
  marked `subprocess`, so `make test-fast` starts none;
- every `pytest.raises` checks the error (`match=`, or the `as` name read), not its type alone.

Each check has a test that feeds it wrong code, so it cannot pass by seeing nothing."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports(path: Path, code: str | None = None) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import in `path` (or in `code`, as if it were there),
    relative ones made absolute."""
    package = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text() if code is None else code, str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            out.append((node.lineno, module, [a.name for a in node.names]))
    return out


def _wrong(path: Path, module: str, names: list[str]) -> str | None:
    last = module.rsplit(".", 1)[-1]
    shared = "move what is shared to tests/helpers/ or tests/conftest.py"
    if module.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
        return f"a test module or conftest: {shared}"
    if module == "tests" and any(n.startswith("test_") or n == "conftest" for n in names):
        return f"a test module or conftest: {shared}"
    if module == "snowfire.cli.demo" and "demo" not in path.stem:
        return f"the demo's helpers, in a test not of the demo: {shared}"
    return None


def test_no_test_module_imports_another_or_a_private_helper():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, module, names in _imports(path):
            why = _wrong(path, module, names)
            if why:
                found.append(f"{path.relative_to(TESTS.parent)}:{line}: {module}: {why}")
    assert found == []


def test_the_check_sees_each_kind_of_wrong_import():
    bad = {
        "from tests.test_train import data_dir": "a test module",
        "from .test_api_service import build_featureset": "a test module",
        "from tests.conftest import WORDS": "conftest",
        "from tests import test_bucket": "a test module",
        "import tests.test_bucket": "a test module",
        "from snowfire.cli.demo import _free_port": "the demo's helpers",
    }
    probe = TESTS / "test_probe.py"  # parsed from the text: never written or imported
    for code, why in bad.items():
        ((_, module, names),) = _imports(probe, code)
        assert why in (_wrong(probe, module, names) or ""), code
    fine = "from tests.helpers.tasks import write_sst2\nfrom snowfire.cli.main import main\n"
    assert all(_wrong(probe, m, n) is None for _, m, n in _imports(probe, fine))
    ((_, module, names),) = _imports(
        TESTS / "test_demo.py", "from snowfire.cli.demo import run_demo"
    )
    assert _wrong(TESTS / "test_demo.py", module, names) is None


# ---------------------------------------------------------------- a process is marked
#: `module.attribute` that starts a process (sys.executable: an interpreter's path is only
#: ever taken to start one)
_SPAWNS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output"},
    "os": {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv"},
    "sys": {"executable"},
    "ray": {"init"},  # a Ray cluster here: a head node and its worker processes
}
_SPAWN_NAMES = {"Popen", "multiprocessing", "ProcessPoolExecutor", "run_worker", "run_up"}
#: the job workers: run / run_job start a runner process per job (jobs/worker.py)
_WORKERS = {"Worker", "RayWorker"}


def _spawn_in(node: ast.AST, workers: set[str]) -> str | None:
    """The first thing in `node` that starts a process, with its line, else None: a call or
    name above, `--ray` or `ray="local"` (a Ray cluster here), or `.run(` / `.run_job(` in a
    body that names a job worker class (threads and in-process servers start none)."""
    runs = named = False
    notes = {  # annotations name types (`proc: subprocess.Popen`), they start nothing
        id(s)
        for a in ast.walk(node)
        for ann in (getattr(a, "annotation", None), getattr(a, "returns", None))
        if ann is not None
        for s in ast.walk(ann)
    }
    for sub in ast.walk(node):
        if id(sub) in notes:
            continue
        line = f"line {getattr(sub, 'lineno', '?')}"
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            if sub.attr in _SPAWNS.get(sub.value.id, ()):
                return f"{sub.value.id}.{sub.attr}, {line}"
        if isinstance(sub, ast.Name) and sub.id in _SPAWN_NAMES:
            return f"{sub.id}, {line}"
        if isinstance(sub, ast.Constant) and sub.value == "--ray":
            return f"--ray, {line}"
        if (
            isinstance(sub, ast.keyword)
            and sub.arg == "ray"
            and isinstance(sub.value, ast.Constant)
        ):
            if isinstance(sub.value.value, str):
                return f"ray={sub.value.value!r}, line {sub.value.lineno}"
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            runs |= sub.func.attr in ("run", "run_job")
        named |= isinstance(sub, ast.Name) and sub.id in workers
    return "a job worker's run" if runs and named else None


def _is_subprocess_mark(node: ast.AST) -> bool:
    """`pytest.mark.subprocess` anywhere in `node` (a decorator, a pytestmark value)."""
    return any(
        isinstance(sub, ast.Attribute)
        and sub.attr == "subprocess"
        and isinstance(sub.value, ast.Attribute)
        and sub.value.attr == "mark"
        for sub in ast.walk(node)
    )


def _spawners(tree: ast.Module, known: dict[str, str]) -> dict[str, str]:
    """name -> why, for each module-level function or class of `tree` that starts a process,
    itself or through another one of them, a fixture it takes (`known`: conftest's and the
    helpers' too) or a helper it calls."""
    defs = {
        n.name: n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    workers = _WORKERS | {
        n.name
        for n in defs.values()
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") in _WORKERS for b in n.bases)
    }
    why = {name: w for name, n in defs.items() if (w := _spawn_in(n, workers))}
    uses = {
        name: {s.id for s in ast.walk(n) if isinstance(s, ast.Name)}
        | {a.arg for s in ast.walk(n) if isinstance(s, ast.arguments) for a in s.args}
        for name, n in defs.items()
    }
    changed = True
    while changed:
        changed = False
        for name in defs:
            if name in why:
                continue
            for used in sorted(uses[name] - {name}):
                found = why.get(used) or (known.get(used) if used not in defs else None)
                if found:
                    why[name], changed = f"{used}: {found}", True
                    break
    return why


def _tree(path: Path, code: str | None = None) -> ast.Module:
    return ast.parse(path.read_text() if code is None else code, str(path))


def _shared_spawners() -> dict[str, str]:
    """The fixtures of conftest.py and the functions of tests/helpers/ that start processes."""
    shared: dict[str, str] = {}
    for path in [TESTS / "conftest.py", *sorted((TESTS / "helpers").glob("*.py"))]:
        shared.update(_spawners(_tree(path), shared))
    return shared


def unmarked_processes(path: Path, code: str | None = None, shared=None) -> list[str]:
    """Tests of one module that start a process (`_spawn_in`, directly or through the
    module's functions, fixtures and helpers) without `pytest.mark.subprocess` on the module
    (pytestmark), their class or themselves; 'file:line: test: why' each."""
    tree = _tree(path, code)
    shared = _shared_spawners() if shared is None else shared
    why = _spawners(tree, shared)
    module = any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
        and _is_subprocess_mark(n.value)
        for n in tree.body
    )
    tests: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tests.append((node, module))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            marked = module or any(_is_subprocess_mark(d) for d in node.decorator_list)
            tests += [(m, marked) for m in node.body if isinstance(m, ast.FunctionDef)]
    found = []
    for test, marked in tests:
        if not test.name.startswith("test_"):
            continue
        if marked or any(_is_subprocess_mark(d) for d in test.decorator_list):
            continue
        reason = why.get(test.name) or _spawners(
            ast.Module(body=[test], type_ignores=[]), {**shared, **why}
        ).get(test.name)
        if reason:
            rel = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
            found.append(f"{rel}:{test.lineno}: {test.name}: {reason}")
    return found


def test_every_test_that_starts_a_process_is_marked_subprocess():
    """`make test-fast` (-m "not subprocess and not slow") must start no process."""
    shared = _shared_spawners()
    assert "snowfire_cli" in shared  # the helpers are read (sys.executable)
    modules = [p for p in sorted(TESTS.glob("test_*.py")) if p.name != Path(__file__).name]
    found = [f for p in modules for f in unmarked_processes(p, None, shared)]
    assert found == []


def test_the_process_check_sees_each_way_to_start_one():
    probe = TESTS / "test_probe.py"  # parsed from the text: never written or imported
    bad = {
        "import subprocess\ndef test_a():\n    subprocess.run(['ls'])": "subprocess.run",
        "import sys\ndef test_a():\n    cmd = [sys.executable, '-c', '']": "sys.executable",
        "from subprocess import Popen\ndef test_a():\n    Popen(['ls'])": "Popen",
        "import multiprocessing\ndef test_a():\n    multiprocessing.Process()": "multiprocessing",
        "def test_a(run):\n    run(['extract', '--ray', 'local'])": "--ray",
        "def test_a():\n    Settings(home='h', ray='local')": "ray='local'",
        "def test_a(home):\n    Worker(home, 'train').run(once=True)": "a job worker's run",
        "class StandIn(Worker):\n    pass\ndef test_a(home):\n    StandIn(home).run_job(j)": (
            "a job worker's run"
        ),
        "import os\ndef _child():\n    os.fork()\ndef test_a():\n    _child()": "_child: os.fork",
        "import subprocess, pytest\n@pytest.fixture\ndef service():\n    subprocess.Popen([])\n"
        "def test_a(service):\n    pass": "service: subprocess.Popen",
        "from tests.helpers import snowfire_cli\nimport subprocess\n"
        "def test_a():\n    snowfire_cli('ls')": "snowfire_cli: sys.executable",
    }
    shared = _shared_spawners()
    for code, why in bad.items():
        (found,) = unmarked_processes(probe, code, shared)
        assert found.startswith("tests/test_probe.py:") and why in found, (code, found)
    fine = [
        "import subprocess, pytest\npytestmark = pytest.mark.subprocess\n"
        "def test_a():\n    subprocess.run(['ls'])",
        "import subprocess, pytest\n@pytest.mark.subprocess\ndef test_a():\n    subprocess.run([])",
        "import subprocess, pytest\n@pytest.mark.subprocess\nclass TestA:\n"
        "    def test_a(self):\n        subprocess.run([])",
        "import threading\ndef test_a():\n    threading.Thread(target=print).start()",
        "def test_a(home):\n    with pytest.raises(ValueError, match='lease'):\n"
        "        Worker(home, 'train', lease=0)",
        "def test_a():\n    subprocess.PIPE",
    ]
    assert [f for code in fine for f in unmarked_processes(probe, code, shared)] == []


# ---------------------------------------------------------------- pytest.raises checks the error
def _is_raises(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "raises") or (
        isinstance(func, ast.Name) and func.id == "raises"
    )


def unchecked_raises(path: Path, code: str | None = None) -> list[str]:
    """`pytest.raises(...)` that checks only the type: neither `match=` nor `with ... as e`
    with `e` read afterwards in the same function (a test that passes on any error of that
    type, e.g. the wrong ValueError, cannot fail where it should); 'file:line: call' each."""
    tree = _tree(path, code)
    inspected: set[int] = set()  # ids of raises calls whose `as` name is read
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        read = {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for node in ast.walk(fn):
            for item in (
                getattr(node, "items", []) if isinstance(node, (ast.With, ast.AsyncWith)) else []
            ):
                var = item.optional_vars
                if _is_raises(item.context_expr) and isinstance(var, ast.Name) and var.id in read:
                    inspected.add(id(item.context_expr))
    rel = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
    return [
        f"{rel}:{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if _is_raises(node)
        and not any(k.arg == "match" for k in node.keywords)
        and id(node) not in inspected
    ]


def test_every_pytest_raises_checks_the_error_not_only_its_type():
    modules = [p for p in sorted(TESTS.rglob("*.py")) if p.name != Path(__file__).name]
    assert sum(p.read_text().count("pytest.raises(") for p in modules) > 300  # they are read
    assert [f for p in modules for f in unchecked_raises(p)] == []


def test_the_raises_check_sees_an_unchecked_one():
    probe = TESTS / "test_probe.py"  # parsed from the text: never written or imported
    bad = [
        "def test_a():\n    with pytest.raises(ValueError):\n        f()",
        "def test_a():\n    with pytest.raises(ValueError) as e:\n        f()",  # e never read
        "def test_a():\n    with raises(KeyError), open(p):\n        f()",
        "def _refused():\n    return pytest.raises(SystemExit)",
    ]
    for code in bad:
        (found,) = unchecked_raises(probe, code)
        assert found.startswith("tests/test_probe.py:") and "raises(" in found, code
    fine = [
        "def test_a():\n    with pytest.raises(ValueError, match='epochs'):\n        f()",
        "def test_a():\n    with pytest.raises(SystemExit) as e:\n        f()\n"
        "    assert e.value.code == 2",
        "def _refused(what):\n    return pytest.raises(ValueError, match=what)",
    ]
    assert [f for code in fine for f in unchecked_raises(probe, code)] == []
