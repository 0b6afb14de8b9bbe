"""The job system's processes: a worker and a runner load no web framework (a worker starts
light), and a folder named like one of the project's packages in a child's working directory
(HOME/tasks holds task data!) shadows nothing, since every package lives under snowfire.*."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.subprocess  # starts real processes


def test_a_folder_named_like_a_package_in_the_working_directory_shadows_nothing(tmp_path):
    for name in ("tasks", "jobs", "cache", "cli"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('shadowed {name}')\n")
    for module in ("snowfire.tasks.registry", "snowfire.jobs.runner"):
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0 and "shadowed" not in done.stderr, (module, done.stderr)
    assert "usage: snowfire.jobs.runner" in done.stdout


def test_a_worker_and_a_runner_load_no_web_framework():
    code = (
        "import json, sys; import snowfire.jobs.worker, snowfire.jobs.runner, "
        "snowfire.jobs.launcher; "
        "print(json.dumps(sorted({m for m in sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = {m.split(".")[0] for m in json.loads(done.stdout)}
    assert not loaded & {"fastapi", "starlette", "pydantic", "uvicorn", "torch"}, loaded
