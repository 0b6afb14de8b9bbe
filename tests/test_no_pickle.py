"""No pickle anywhere in the project: files from a store, a run or a request are data, never
code. torch files are read with weights_only=True (tensors and plain containers only)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "api",
    "cache",
    "cli",
    "compare",
    "extractor",
    "finetune",
    "heads",
    "jobs",
    "nn",
    "options",
    "tasks",
    "benchmarks",
    "experiments",
)
UNSAFE_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}


def _sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _is_torch_load(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "load"
        and getattr(node.func.value, "id", "") == "torch"
    )


def test_no_pickle_import_and_every_torch_load_is_weights_only():
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                names = set()
            if names & UNSAFE_MODULES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {names}")
            if _is_torch_load(node):
                safe = any(
                    k.arg == "weights_only" and getattr(k.value, "value", None) is True
                    for k in node.keywords
                )
                if not safe:
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno}: torch.load without "
                        "weights_only=True"
                    )
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "load"
                and any(
                    k.arg == "allow_pickle" and getattr(k.value, "value", None) is True
                    for k in node.keywords
                )
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: allow_pickle=True")
    assert not found, "\n".join(found)
    assert sum(1 for _ in _sources()) > 50  # the scan saw the project
