"""`make lint`'s type check: mypy on the library as the package it installs as.

pyproject.toml maps each top-level folder to a subpackage (package-dir: folder `cache/` is
module `snowfire.cache`), which mypy cannot follow: handed the folders, it would see `cache` and
`snowfire` as two unrelated top-level modules and could not resolve `from snowfire.cache import
Store`. So this builds a link tree, build/typecheck/snowfire/, with a symlink to each entry of
snowfire/ and one per folder that package-dir maps (read from pyproject.toml, so a package that
installs is a package that is checked), runs mypy on it with pyproject's [tool.mypy] settings,
and prints each error under the checkout's own path (`cache/store.py:12: error: ...`, not
`build/typecheck/snowfire/cache/store.py:12`), so editors and CI logs point at the real file.

Before mypy runs, every top-level folder of the repository holding an `__init__.py` must be
linked (or be one of NOT_LIBRARY): a new package folder that pyproject.toml does not map fails
here, naming the folder, instead of going unchecked.

    python -m scripts.typecheck [MYPY_ARGS...]      # exit status: mypy's (2: a folder unlinked)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: mypy itself depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
ROOT = "snowfire"  # the one import root
TREE = Path("build") / "typecheck"  # relative to the repository; build/ is ignored by git
#: top-level folders with an __init__.py that are not the library (tests are not type-checked)
NOT_LIBRARY = frozenset({"tests"})


def package_dirs(repo: Path = REPO) -> dict[str, str]:
    """The folder of each top-level subpackage, from pyproject's package-dir: {"cache": "cache",
    ...}. A nested package (snowfire.extractor.elmo) must sit in its parent's folder, where the
    parent's link already reaches it; mapped anywhere else, it could not be linked: ValueError."""
    config = tomllib.loads((repo / "pyproject.toml").read_text())
    mapping = config["tool"]["setuptools"].get("package-dir", {})
    out: dict[str, str] = {}
    for module, folder in mapping.items():
        parts = module.split(".")
        if parts[0] != ROOT or len(parts) < 2:
            raise ValueError(f"pyproject.toml package-dir: expected snowfire.X, got {module!r}")
        if len(parts) == 2:
            out[parts[1]] = folder
        elif folder != "/".join([mapping.get(".".join(parts[:2]), parts[1]), *parts[2:]]):
            raise ValueError(
                f"pyproject.toml package-dir: {module} maps to {folder!r}, outside its parent's "
                "folder: the type-check link tree cannot reach it"
            )
    return out


def build_tree(repo: Path = REPO, base: Path | None = None) -> dict[str, Path]:
    """Rebuild the link tree `base` (default repo/build/typecheck/snowfire/; stale links go) and
    return {link name: target}, targets relative to the repository: one link per entry of
    snowfire/ and per folder package-dir maps."""
    base = repo / TREE / ROOT if base is None else base
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    links = {
        entry.name: Path(ROOT) / entry.name
        for entry in sorted((repo / ROOT).iterdir())
        if entry.name != "__pycache__" and (entry.suffix == ".py" or entry.is_dir())
    }
    for name, folder in package_dirs(repo).items():
        if name in links:
            raise ValueError(f"snowfire/{name} and package-dir's snowfire.{name} both exist")
        links[name] = Path(folder)
    for name, target in links.items():
        (base / name).symlink_to(os.path.relpath(repo / target, base))
    return links


def unlinked(links: dict[str, Path], repo: Path = REPO) -> list[str]:
    """Top-level package folders (holding an __init__.py) that no link reaches: each one a
    package mypy would never see."""
    reached = {target.parts[0] for target in links.values()}
    return sorted(
        d.name
        for d in repo.iterdir()
        if d.is_dir()
        and (d / "__init__.py").is_file()
        and d.name not in reached
        and d.name not in NOT_LIBRARY
    )


def real_paths(output: str, links: dict[str, Path]) -> str:
    """mypy's output with each link-tree path replaced by the file's path in the checkout."""
    prefix = re.escape(f"{TREE.as_posix()}/{ROOT}/")

    def swap(m: re.Match[str]) -> str:
        target = links.get(m["name"])
        return m[0] if target is None else target.as_posix()

    return re.sub(prefix + r"(?P<name>[^/:\s]+)", swap, output)


def main(argv: list[str] | None = None) -> int:
    links = build_tree()
    missing = unlinked(links)
    if missing:
        print(
            f"type check: package folder(s) {missing} are not in pyproject.toml's package-dir, "
            "so the link tree (and mypy) would skip them: map them as snowfire.NAME",
            file=sys.stderr,
        )
        return 2
    args = sys.argv[1:] if argv is None else argv
    command = [sys.executable, "-m", "mypy", *args, (TREE / ROOT).as_posix()]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    sys.stdout.write(real_paths(done.stdout, links))
    sys.stderr.write(real_paths(done.stderr, links))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
