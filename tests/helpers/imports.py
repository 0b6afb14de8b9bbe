"""The import checker tests/test_imports.py runs: the packages and their floors (FLOW), the
rules read from every package's `__all__`, and the `ast` walks that find an import past a
package's API, a private name of another package, or a package imported by its bare folder
name (the test module's docstring says what it holds the project to)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
    "serving",
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
    "serving": {"options", "nn", "tasks", "cache", "rundir", "extractor", "heads", "finetune"},
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
    "api": {"options", "nn", "tasks", "cache", "rundir", "extractor", "heads", "jobs", "serving"},
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
