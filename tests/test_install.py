"""The distribution adds one top-level module, `snowfire`: every package is snowfire.X, built
from the repository's top-level folders (extractor/, cache/, heads/, api/, ... stay where the
data flow puts them; pyproject.toml maps them). Checked on a built wheel installed into a fresh
interpreter's path, and on the checkout's own editable install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # builds a wheel and starts interpreters

REPO = Path(__file__).resolve().parents[1]
FOLDERS = (
    "options",
    "nn",
    "tasks",
    "cache",
    "rundir",
    "extractor",
    "heads",
    "finetune",
    "compare",
    "jobs",
    "api",
    "cli",
)


def test_the_card_folders_are_top_level_folders_of_the_repository():
    for name in ("extractor", "cache", "heads", "api", "tests"):
        assert (REPO / name).is_dir(), name
    assert (REPO / "docker-compose.yml").is_file() and (REPO / "pyproject.toml").is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = out / "src"  # a copy: setuptools builds in the source tree (build/, *.egg-info)
    skip = (".venv", ".git", "build", "*.egg-info", "__pycache__", "wheelhouse")
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*skip))
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    done = subprocess.run([*pip, "-w", str(out), str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("snowfire-*.whl")
    return built


def test_the_wheel_holds_snowfire_alone_with_every_package_under_it(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"snowfire"}, tops
    for folder in FOLDERS:
        assert f"snowfire/{folder}/__init__.py" in names, folder
    assert "snowfire/tasks/demo/sst2/train.tsv" in names  # the demo sample ships
    modules = {p.relative_to(REPO).as_posix() for f in FOLDERS for p in (REPO / f).rglob("*.py")}
    missing = [m for m in modules if f"snowfire/{m}" not in names and "/demo/" not in m]
    assert not missing, f"modules left out of the wheel: {sorted(missing)}"


def test_installed_only_snowfire_imports_and_the_bare_names_do_not(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel installs by unpacking
    code = (
        "import importlib.util as u, sys; sys.path.insert(0, sys.argv[1]);"
        "import snowfire; assert snowfire.__file__.startswith(sys.argv[1]), snowfire.__file__;"
        "spec = u.find_spec('snowfire.cache');"
        "assert spec.origin.startswith(sys.argv[1]), spec.origin;"
        "bare = [n for n in sys.argv[2:] if u.find_spec(n) is not None];"
        "assert not bare, bare"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(site), *FOLDERS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_the_editable_install_adds_no_bare_name_either(tmp_path):
    """The checkout's own install (`make setup`: pip install -e .), outside the checkout."""
    code = "import importlib.util as u, sys; print([n for n in sys.argv[1:] if u.find_spec(n)])"
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, *FOLDERS], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)
    done = subprocess.run(
        [sys.executable, "-I", "-c", "import cache"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 1 and "No module named 'cache'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-I", "-c", "import snowfire.cache.store"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
