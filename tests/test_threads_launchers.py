"""The launchers split the cores (options/threads.py): `snowfire up` tells each of its children
it is one of them, a worker passes its own budget to the runner of each job, and the compose
stack gives every service that runs torch a share counting them all. No real process is
started: Popen is replaced by a stand-in that records the environment it was given."""

from __future__ import annotations

import os

import pytest

from snowfire.jobs import JOB_KINDS, Home, JobQueue
from snowfire.options import SHARE_ENV, THREADS_ENV, thread_budget
from tests.helpers.compose import SERVICES, load_compose

LIBRARY = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


class _Child:
    """A process that has already exited with `code`."""

    started: list[dict] = []

    def __init__(self, cmd, *, env=None, code: int = 0, **kw) -> None:
        self.cmd, self.env, self.returncode, self.pid = cmd, env, code, 0
        _Child.started.append({"cmd": cmd, "env": env})

    def poll(self) -> int:
        return self.returncode

    def wait(self, timeout=None) -> int:
        return self.returncode

    def terminate(self) -> None:
        pass


@pytest.fixture
def clean_env(monkeypatch):
    """No budget setting in this process's environment (each put back afterwards)."""
    for name in (THREADS_ENV, SHARE_ENV, *LIBRARY):
        monkeypatch.setenv(name, "1")
        monkeypatch.delenv(name)
    _Child.started = []


def test_up_gives_each_child_its_share_of_the_cores(clean_env, monkeypatch, tmp_path):
    from snowfire.jobs import launcher

    monkeypatch.setattr(launcher.subprocess, "Popen", _Child)
    assert launcher.run_up(tmp_path / "home", host="127.0.0.1", port=0, grace=0) == 0
    n = 1 + len(JOB_KINDS)  # the API (its embed encoder) and a worker per kind
    assert len(_Child.started) == n
    each = max(1, thread_budget().cores // n)
    for child in _Child.started:
        env = child["env"]
        assert env[SHARE_ENV] == str(n) and THREADS_ENV not in env
        assert [env[name] for name in LIBRARY] == [str(each)] * 2
        assert thread_budget(env=env).threads == each  # what the child then decides


def test_up_divides_an_override_among_its_children(clean_env, monkeypatch, tmp_path):
    from snowfire.jobs import launcher

    monkeypatch.setenv(THREADS_ENV, str(2 * (1 + len(JOB_KINDS))))
    monkeypatch.setattr(launcher.subprocess, "Popen", _Child)
    launcher.run_up(tmp_path / "home", host="127.0.0.1", port=0, grace=0)
    assert {c["env"][THREADS_ENV] for c in _Child.started} == {"2"}


def test_a_worker_gives_its_runner_its_own_budget(clean_env, monkeypatch, tmp_path):
    from snowfire.jobs import worker as worker_module

    monkeypatch.setenv(SHARE_ENV, "5")  # as the compose stack sets it
    monkeypatch.setattr(
        worker_module.subprocess, "Popen", lambda cmd, **kw: _Child(cmd, code=1, **kw)
    )
    home = Home(tmp_path / "home")
    queue = JobQueue(home.queue)
    queue.submit("train", {"out": str(tmp_path / "run")}, "j1")
    worker = worker_module.Worker(home, "train", poll=0.1)
    assert worker.threads == thread_budget()
    assert worker.run(once=True) == 1
    (child,) = _Child.started
    assert "snowfire.jobs.runner" in child["cmd"]
    assert child["env"][SHARE_ENV] == "5"  # one runner at a time: the worker's own share
    assert thread_budget(env=child["env"]) == worker.threads
    assert child["env"]["OMP_NUM_THREADS"] == str(worker.threads.threads)
    assert os.environ.get("OMP_NUM_THREADS") is None  # the worker's own environment untouched


def test_every_compose_service_runs_torch_and_counts_them_all():
    """The api (its embed encoder) and every worker run torch; the default share is their
    number, and a shell's SNOWFIRE_THREAD_SHARE (a scaled-up stack) replaces it for all."""
    services = load_compose()["services"]
    assert set(services) == set(SERVICES)
    assert services["api"]["environment"]["SNOWFIRE_ENCODER"]  # the api embeds: torch too
    for service in services.values():
        assert service["environment"][SHARE_ENV] == str(len(services))
    scaled = load_compose(env={SHARE_ENV: "6"})["services"]
    assert {s["environment"][SHARE_ENV] for s in scaled.values()} == {"6"}
