"""The tests' own layout: shared helpers live in tests/helpers/ (plain functions) and
tests/conftest.py (fixtures), so no test module imports another test module, conftest, or the
demo's helpers (cli/demo.py: only a test of the demo imports it)."""

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
