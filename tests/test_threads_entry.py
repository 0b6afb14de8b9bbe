"""Every entry point that loads torch goes through the one thread budget (options/threads.py):
each command of the CLI, the job runner, the API's lifespan (its embed encoder), a job's Ray
task, compare's cells on Ray and Ray extraction's actors call `use_threads`; the launchers
(`snowfire up`, a worker starting its runner) give each child its share with `threads_env`.
Read with `ast` (a function's calls, and the functions of its module it calls or hands on, to
any depth). Then one real process: `snowfire finetune` with SNOWFIRE_THREADS=1 runs torch with
one thread and its run records it."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from snowfire.cli.main import THREADED, build_parser, main
from snowfire.compare import ANALYSES
from snowfire.options import THREADS_ENV, thread_budget
from tests.helpers import REPO, snowfire_cli
from tests.helpers.tasks import write_sst2

#: Commands that run torch in their own process: each must reach use_threads.
IN_PROCESS = {"compare", "extract", "train", "finetune", "predict", "fsck", "demo", "task check"}
IN_PROCESS |= {"layers"}
IN_PROCESS |= {f"analyze {name}" for name in ANALYSES}
#: Commands that start what runs torch: command -> (module, function) that must reach `name`.
LAUNCH = {
    "serve": ("snowfire.api.app", "lifespan", "use_threads"),
    "worker": ("snowfire.jobs.worker", "Worker.run_job", "threads_env"),
    "up": ("snowfire.jobs.launcher", "run_up", "threads_env"),
}
#: Commands that never load torch (numpy, h5py, zarr only).
TORCH_FREE = {"ls", "export-hdf5", "migrate", "baseline"}
#: The other processes that run torch, each of which must call use_threads.
OTHER_ENTRIES = (
    ("snowfire.jobs.runner", "main"),  # a worker's child: runs one job
    ("snowfire.jobs.ray_jobs", "run_task"),  # a job as a Ray task (serve --ray)
    ("snowfire.compare.dispatch", "on_ray"),  # compare --ray: its cells as Ray tasks
    ("snowfire.extractor.ray_run", "SegmentWorker.__init__"),  # extract --ray: an actor
    ("snowfire.api.app", "lifespan"),  # the API's embed encoder
)


def _functions(source: str) -> dict[str, ast.AST]:
    """Top-level functions by name and methods as Class.method, of a module's source."""
    out: dict[str, ast.AST] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{node.name}.{item.name}"] = item
    return out


def reaches(source: str, start: str, target: str) -> bool:
    """Whether function `start` of the module calls `target`, itself or through functions of
    the same module it calls or hands on (ray.remote(f), a thread's target), to any depth."""
    funcs = _functions(source)
    if start not in funcs:
        raise KeyError(f"no function {start} in the module")
    cls = start.split(".")[0] if "." in start else None
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        for node in ast.walk(funcs[name]):
            if isinstance(node, ast.Call):
                called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if called == target:
                    return True
                todo += [called, f"{cls}.{called}"]
            elif isinstance(node, ast.Name):
                todo.append(node.id)  # a function handed on, to run elsewhere
    return False


def _source(module: str) -> str:
    return Path(importlib.util.find_spec(module).origin).read_text()


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, object]:
    """'command' (or 'command sub') -> the function the parser runs for it."""
    out: dict[str, object] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix}{name} ")
                out.update(nested or {f"{prefix}{name}": sub.get_default("func")})
    return out


def test_the_walker_finds_a_call_at_any_depth_and_misses_an_absent_one():
    source = (
        "def entry():\n    helper()\n\n"
        "def helper():\n    import ray\n    ray.remote(task)\n\n"
        "def task():\n    use_threads(1)\n\n"
        "def other():\n    use_threads\n\n"  # named, never called
        "class A:\n    def run(self):\n        self.start()\n"
        "    def start(self):\n        threads_env(2)\n"
    )
    assert reaches(source, "entry", "use_threads")
    assert not reaches(source, "other", "use_threads")
    assert reaches(source, "A.run", "threads_env")
    assert not reaches(source, "A.run", "use_threads")
    with pytest.raises(KeyError, match="no function missing in the module"):
        reaches(source, "missing", "use_threads")


def test_every_command_is_classified_and_each_reaches_the_budget():
    commands = _commands(build_parser())
    assert set(commands) == IN_PROCESS | set(LAUNCH) | TORCH_FREE, (
        "a command is new or gone: say whether it runs torch (IN_PROCESS, LAUNCH, TORCH_FREE)"
    )
    for name, func in commands.items():
        if name in TORCH_FREE:
            continue
        source = _source(func.__module__)
        if name.split()[0] in LAUNCH:  # the CLI hands over to the launcher
            module, start, target = LAUNCH[name]
            assert reaches(_source(module), start, target), f"{module}.{start}: no {target}"
            continue
        assert reaches(source, func.__qualname__, "use_threads"), (
            f"`snowfire {name}` ({func.__module__}.{func.__qualname__}) runs torch without "
            "calling use_threads"
        )
    # --threads is offered exactly where a command runs torch or starts what does
    assert set(THREADED) == {c.split()[0] for c in IN_PROCESS} | set(LAUNCH)


@pytest.mark.parametrize(("module", "function"), OTHER_ENTRIES)
def test_every_other_torch_process_applies_the_budget(module, function):
    assert reaches(_source(module), function, "use_threads"), f"{module}.{function}"


def test_a_compare_cells_process_takes_its_parents_budget():
    """compare/cellproc.py's child runs torch: it applies the budget its parent applied (the
    same threads and why in its runs' records), not one of its own."""
    assert reaches(_source("snowfire.compare.cellproc"), "_child", "apply_threads")


def test_the_launchers_hand_their_share_to_the_cli_they_start():
    cli = _source("snowfire.cli.main")
    assert reaches(cli, "_serve", "serve") and reaches(cli, "_up", "run_up")
    assert reaches(cli, "_worker", "run_worker")


def test_only_the_budget_sets_torchs_threads():
    """One place decides: no project file outside tests/ calls torch.set_num_threads or
    set_num_interop_threads but options/threads.py."""
    setters = {"set_num_threads", "set_num_interop_threads"}
    found = []
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        if rel.parts[0] in ("tests", ".venv", "build") or rel == Path("options/threads.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in setters:
                found.append(f"{rel}:{node.lineno}")
    assert found == []


def test_the_threads_flag_sets_the_variable_for_the_process_and_its_children(monkeypatch, capsys):
    monkeypatch.setenv(THREADS_ENV, "1")  # recorded: put back after the test
    monkeypatch.delenv(THREADS_ENV)
    monkeypatch.setattr("snowfire.jobs.check_worker", lambda config: 0)
    assert main(["--threads", "2", "worker", "--kind", "train", "--check"]) == 0
    assert os.environ[THREADS_ENV] == "2"
    assert main(["worker", "--kind", "train", "--check", "--threads", "3"]) == 0
    assert os.environ[THREADS_ENV] == "3"
    with pytest.raises(SystemExit) as refused:
        main(["worker", "--kind", "train", "--threads", "0"])
    assert refused.value.code == 2  # argparse's usage error
    assert "--threads: expected a whole number of threads >= 1, got '0'" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as refused:
        main(["ls", "--store", "s", "--threads", "2"])  # a command without torch: no flag
    assert refused.value.code == 2
    assert "unrecognized arguments: --threads 2" in capsys.readouterr().err


@pytest.mark.subprocess
def test_snowfire_with_snowfire_threads_1_runs_torch_with_one_thread(tiny_bert_dir, tmp_path):
    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env |= {THREADS_ENV: "1", "PYTHONPATH": str(REPO)}
    argv = snowfire_cli(
        "-v",
        "finetune",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task",
        "sst2",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "run"),
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--quiet",
    )
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "torch threads: 1 thread: SNOWFIRE_THREADS=1 (" in done.stderr
    threads = json.loads((tmp_path / "run" / "config.json").read_text())["cost"]["threads"]
    assert (threads["intra_op"], threads["inter_op"]) == (1, 1)
    assert threads["budget"]["override"] == "SNOWFIRE_THREADS=1"
    assert threads["budget"]["threads"] == 1


@pytest.mark.subprocess
def test_the_suites_workers_share_the_cores(tmp_path):
    """`make test` runs pytest-xdist workers side by side: each, and each process a test
    starts, runs torch with its share of the cores (tests/conftest.py), so the workers' threads
    together are no more than the cores (or one each)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        pytest.skip("the suite runs in one process (no pytest-xdist workers to share the cores)")
    child = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    threads = int(child.stdout)
    assert threads == int(os.environ["OMP_NUM_THREADS"])
    assert threads * int(workers) <= max(thread_budget().cores, int(workers))
