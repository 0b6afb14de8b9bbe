"""The job system's processes: a folder in a child's working directory never shadows a snowfire
package (HOME/tasks holds task data!), and a worker loads no web framework."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jobs import python_command

pytestmark = pytest.mark.subprocess  # starts and kills real processes


def _shadowing_dir(root):
    """A working directory with fake `tasks` and `jobs` packages that fail on import."""
    for name in ("tasks", "jobs"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(f"raise ImportError('shadowed {name}')\n")
    return root


def test_plain_python_m_is_shadowed_by_the_working_directory(tmp_path):
    """The hazard itself: `python -m` imports the folder in the working directory."""
    cwd = _shadowing_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "tasks.registry"], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode != 0 and "shadowed tasks" in done.stderr


def test_python_command_never_imports_from_the_working_directory(tmp_path):
    cwd = _shadowing_dir(tmp_path)
    done = subprocess.run(python_command("tasks.registry"), cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        python_command("jobs.runner", "--help"), cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "usage: jobs.runner" in done.stdout


def test_a_worker_and_a_runner_load_no_web_framework():
    code = (
        "import json, sys; import jobs.worker, jobs.runner, jobs.launcher; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert not loaded & {"fastapi", "starlette", "pydantic", "uvicorn", "torch"}, loaded
