"""`make lint`'s type check sees the whole library: scripts/typecheck.py links every package
folder pyproject.toml maps (folder `cache/` is module `snowfire.cache`) under one `snowfire/`
tree for mypy, refuses a package folder it would leave out, and reports errors by the
checkout's paths. mypy itself runs in `make lint`, not here (a minute of CPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts.typecheck import ROOT, build_tree, package_dirs, real_paths, tomllib, unlinked
from tests.helpers import REPO


def test_the_link_tree_reaches_every_module_of_the_library(tmp_path):
    base = tmp_path / ROOT
    links = build_tree(REPO, base)
    assert unlinked(links) == []
    modules = sorted(
        p
        for folder in {t.parts[0] for t in links.values()}
        for p in (REPO / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    assert len(modules) > 150  # the check reads the tree (an empty walk would pass)
    reached = {  # what mypy finds walking the tree, through the folder links
        (Path(d) / name).resolve()
        for d, _, names in os.walk(base, followlinks=True)
        for name in names
        if name.endswith(".py")
    }
    missing = [str(p.relative_to(REPO)) for p in modules if p.resolve() not in reached]
    assert missing == []
    # each module sits where its import name says: snowfire/cache/store.py is snowfire.cache.store
    assert (base / "cache" / "store.py").resolve() == (REPO / "cache" / "store.py").resolve()
    assert (base / "dataset.py").resolve() == (REPO / "snowfire" / "dataset.py").resolve()
    assert all(not os.path.isabs(os.readlink(base / name)) for name in links)  # relative links


def _repo(tmp_path: Path, folders: list[str], mapped: list[str]) -> Path:
    repo = tmp_path / "repo"
    for folder in [ROOT, *folders]:
        (repo / folder).mkdir(parents=True)
        (repo / folder / "__init__.py").write_text("")
    rows = "\n".join(f'"snowfire.{m}" = "{m}"' for m in mapped)
    (repo / "pyproject.toml").write_text(f"[tool.setuptools.package-dir]\n{rows}\n")
    return repo


def test_a_package_folder_without_a_link_is_named(tmp_path):
    repo = _repo(tmp_path, ["cache", "nn", "tests"], mapped=["cache"])
    links = build_tree(repo, tmp_path / "tree" / ROOT)
    assert unlinked(links, repo) == ["nn"]  # tests/ is not the library
    (repo / "pyproject.toml").write_text(
        '[tool.setuptools.package-dir]\n"snowfire.cache" = "cache"\n"snowfire.nn" = "nn"\n'
    )
    assert unlinked(build_tree(repo, tmp_path / "tree" / ROOT), repo) == []
    assert sorted(p.name for p in (tmp_path / "tree" / ROOT).iterdir()) == [
        "__init__.py",
        "cache",
        "nn",
    ]


def test_a_nested_package_must_live_in_its_parents_folder(tmp_path):
    repo = _repo(tmp_path, ["extractor"], mapped=["extractor"])
    text = (repo / "pyproject.toml").read_text()
    (repo / "pyproject.toml").write_text(text + '"snowfire.extractor.elmo" = "extractor/elmo"\n')
    assert package_dirs(repo) == {"extractor": "extractor"}
    (repo / "pyproject.toml").write_text(text + '"snowfire.extractor.elmo" = "elmo"\n')
    with pytest.raises(ValueError, match="snowfire.extractor.elmo maps to 'elmo', outside"):
        package_dirs(repo)


def test_errors_name_the_files_of_the_checkout():
    links = {"cache": Path("cache"), "dataset.py": Path(ROOT) / "dataset.py"}
    output = (
        "build/typecheck/snowfire/cache/store.py:12: error: no  [x]\n"
        "build/typecheck/snowfire/dataset.py:3: note: see build/typecheck/snowfire/cache/wire.py\n"
        "Found 2 errors in 2 files (checked 166 source files)\n"
    )
    assert real_paths(output, links) == (
        "cache/store.py:12: error: no  [x]\n"
        "snowfire/dataset.py:3: note: see cache/wire.py\n"
        "Found 2 errors in 2 files (checked 166 source files)\n"
    )


def test_every_module_the_type_check_skips_exists():
    """pyproject's ignore_errors list names modules by their import names: one that moved or
    went must leave the list (else it silently skips nothing, and its successor is checked
    without anyone deciding so)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    skipped = [m for o in config["overrides"] if o.get("ignore_errors") for m in o["module"]]
    dirs = package_dirs(REPO)
    gone = []
    for module in skipped:
        _, package, *rest = module.split(".")
        path = REPO / dirs[package] / Path(*rest) if rest else REPO / dirs[package]
        if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
            gone.append(module)
    assert skipped and gone == []
