"""The compose check's own logic, without Docker (`make compose-check` runs it for real): the
commands outside containers are the jobs' configs, the cut of the demo sample, the broken copy
of the compose file, how results are compared, how a service that cannot start is named, and
where the base image's recipe and mirror come from."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import pytest

from scripts.compose_check.base_image import apt_mirror, recipe_key
from scripts.compose_check.stack import Stack, break_command
from scripts.compose_check.steps import StepFailed
from scripts.compose_check.workload import (
    CUT,
    JOBS,
    THREADS,
    command,
    differences,
    digest,
    share_env,
    threads_report,
    write_cut,
)
from snowfire.tasks import DEMO_DATA_DIR
from tests.helpers import REPO
from tests.helpers.compose import command as compose_command
from tests.helpers.compose import load_yaml


@pytest.mark.parametrize("name", sorted(JOBS))
def test_the_command_outside_is_the_jobs_config(name, tmp_path):
    """The flags the check runs outside containers build the very config the job runs."""
    from snowfire.cli.flags import config_from_args
    from snowfire.cli.main import build_parser
    from snowfire.jobs import JOB_KINDS, Home, validate_params

    job = JOBS[name]
    home = Home(tmp_path / "home")
    write_cut(DEMO_DATA_DIR, home.root / "tasks")
    resolved = validate_params(job.kind, dict(job.params), home, "j1")
    argv = command(job, data=home.root / "tasks", store=home.store, out=home.runs / "j1")
    cls = JOB_KINDS[job.kind].config()
    outside = config_from_args(cls, build_parser().parse_args(argv))
    assert dataclasses.asdict(outside) == dataclasses.asdict(cls(**resolved))
    assert argv[0] == job.kind and ("--store" in argv) == ("store" in resolved)


def test_the_cut_is_the_first_lines_of_the_demo_sample(tmp_path):
    write_cut(DEMO_DATA_DIR, tmp_path)
    for (task, name), lines in CUT.items():
        got = (tmp_path / task / name).read_bytes()
        assert got.count(b"\n") == lines
        assert (DEMO_DATA_DIR / task / name).read_bytes().startswith(got)
    with pytest.raises(ValueError, match="expected at least 401 lines"):
        (tmp_path / "short" / "sst2").mkdir(parents=True)
        (tmp_path / "short" / "sst2" / "train.tsv").write_text("sentence\tlabel\na\t1\n")
        write_cut(tmp_path / "short", tmp_path / "out")


def test_break_command_breaks_one_service_and_nothing_else():
    text = (REPO / "docker-compose.yml").read_text()
    broken = load_yaml(break_command(text, "trainer"))["services"]
    services = load_yaml(text)["services"]
    assert compose_command(broken["trainer"]) == ["snowfire", "no-such-command"]
    for name in services:
        if name != "trainer":
            assert broken[name] == services[name]
    with pytest.raises(ValueError, match="no one-line `command:` under service 'nginx'"):
        break_command(text, "nginx")


def test_differences_name_each_difference_and_skip_timings_and_places():
    got = {"dev": {"accuracy": 0.71}, "seconds": 3.0, "run": "/data/runs/j1/seed0", "rows": [1, 2]}
    got["scoring_seconds"] = {"dev": 0.08}  # a timing per split, as a run's config records
    want = {
        "dev": {"accuracy": 0.71},
        "seconds": 9.0,
        "scoring_seconds": {"dev": 0.09},
        "run": "/tmp/ref/runs/x/seed0",
        "rows": [1, 2],
    }
    places = {"/data/runs/j1": "/tmp/ref/runs/x"}
    assert list(differences(got, want, places)) == []
    want["dev"]["accuracy"] = 0.7100000000000001  # the last bit only: the same result
    assert list(differences(got, want, places)) == []
    want["dev"]["accuracy"] = 0.710001  # the 6th digit: a different result
    want["run"] = "/tmp/ref/runs/x/seed1"
    want["only"] = 1
    assert list(differences(got, want, places)) == [
        "/dev/accuracy: container 0.71, outside 0.710001",
        "/only: only in outside",
        "/run: container '/data/runs/j1/seed0', outside '/tmp/ref/runs/x/seed1'",
    ]
    # a path that is not the job's compares as written
    assert list(differences("/data/runs/j2", "/tmp/ref/runs/x", places)) != []


def _safetensors(path: Path, metadata: dict, payload: bytes) -> None:
    header = json.dumps(
        {"__metadata__": metadata, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    ).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + payload)


def test_digest_reads_safetensors_by_content_not_by_metadata_order(tmp_path):
    for run, meta in (
        ("a", {"task": "sst2", "head": "linear"}),
        ("b", {"head": "linear", "task": "sst2"}),
    ):
        (tmp_path / run / "predictions").mkdir(parents=True)
        _safetensors(tmp_path / run / "weights.safetensors", meta, struct.pack("<f", 1.5))
        (tmp_path / run / "predictions" / "dev.tsv").write_text("0\n1\n")
    a, b = digest(tmp_path / "a"), digest(tmp_path / "b")
    assert a == b and sorted(a) == ["predictions/dev.tsv", "weights.safetensors"]
    _safetensors(tmp_path / "b" / "weights.safetensors", {}, struct.pack("<f", 2.5))
    assert digest(tmp_path / "b")["weights.safetensors"] != a["weights.safetensors"]


def test_the_mirror_is_apts_and_names_the_base_image(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    assert apt_mirror(tmp_path) == "http://mirror.example/debian"
    other = tmp_path / "other"
    other.mkdir()
    (other / "sources.list").write_text(
        "# x\ndeb [arch=amd64] http://old.example/debian bookworm main\n"
    )
    assert apt_mirror(other) == "http://old.example/debian"
    assert apt_mirror(tmp_path / "none") == "http://deb.debian.org/debian"
    assert recipe_key("http://a") != recipe_key("http://b")
    assert recipe_key("http://a") == recipe_key("http://a")


class _Stub(Stack):
    """A Stack whose containers are given, as `docker inspect` shows them."""

    def __init__(self, states: list[dict[str, list[dict]]]) -> None:
        self.states = states

    def containers(self) -> dict[str, list[dict]]:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    def _why(self, c: dict) -> str:
        return f"{c['Name']} is {c['State']['Status']}"


def _c(name: str, status: str = "running", health: str = "healthy", restarts: int = 0) -> dict:
    return {
        "Name": name,
        "RestartCount": restarts,
        "State": {"Status": status, "Health": {"Status": health}},
    }


def test_a_service_that_cannot_start_is_named_with_the_step():
    starting = {"api": [_c("api", health="starting")], "trainer": [_c("t1"), _c("t2")]}
    ok = {"api": [_c("api")], "trainer": [_c("t1"), _c("t2")]}
    _Stub([starting, ok]).wait_healthy({"api": 1, "trainer": 2}, "up")  # healthy: returns
    restarting = {"api": [_c("api")], "trainer": [_c("t1"), _c("t2", "restarting", restarts=1)]}
    with pytest.raises(StepFailed) as err:
        _Stub([starting, restarting]).wait_healthy({"api": 1, "trainer": 2}, "up: health")
    assert (err.value.service, err.value.step) == ("trainer", "up: health")
    assert (
        str(err.value)
        == "compose check failed (service trainer, step: up: health): t2 is restarting"
    )
    unhealthy = {"api": [_c("api", health="unhealthy")], "trainer": [_c("t1"), _c("t2")]}
    with pytest.raises(StepFailed, match=r"service api, step: up"):
        _Stub([unhealthy]).wait_healthy({"api": 1, "trainer": 2}, "up")
    with pytest.raises(StepFailed, match=r"not healthy after 0 s: trainer \(1/2 healthy\)"):
        _Stub([{"api": [_c("api")], "trainer": [_c("t1")]}]).wait_healthy(
            {"api": 1, "trainer": 2}, "up", timeout=0
        )


def test_the_runs_outside_stop_with_the_check(tmp_path):
    """A check that ends early leaves no command of its own running."""
    import time

    from scripts.compose_check.workload import Reference

    fake = tmp_path / "snowfire"
    fake.write_text(
        f'#!/bin/sh\necho "$1" >> {tmp_path}/ran\necho $$ > {tmp_path}/pid\nexec sleep 60\n'
    )
    fake.chmod(0o755)
    ref = Reference(str(fake), tmp_path / "data", tmp_path / "ref")
    ref.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "pid").is_file():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = time.monotonic()
    ref.stop()
    assert time.monotonic() - started < 15 and not ref.thread.is_alive()
    assert ref.proc.poll() is not None
    assert (tmp_path / "ran").read_text() == "extract\n"  # the first command only


class _Execs:
    """A stack whose `python -c THREADS` in each service prints the budget given."""

    def __init__(self, budgets: dict[str, dict]) -> None:
        self.budgets = budgets

    def exec(self, service: str, *cmd: str, step: str) -> str:
        assert cmd == ("python", "-c", THREADS), cmd
        return json.dumps(self.budgets[service])


@pytest.mark.subprocess  # a fresh interpreter takes the share
def test_the_report_names_the_threads_each_service_chose_and_a_service_that_would_thrash():
    """Each container counts all six, and the runs outside take the same share (their numbers
    are compared exactly: the same threads give the same sums)."""
    import subprocess
    import sys

    from snowfire.options import SHARE_ENV, thread_budget

    scale = {"api": 1, "trainer": 2}
    assert share_env(scale) == {SHARE_ENV: "3"}
    ran = subprocess.run(
        [sys.executable, "-c", THREADS],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **share_env(scale)},
        capture_output=True,
        text=True,
        check=True,
    )
    inside = json.loads(ran.stdout)  # what a container prints, here
    assert inside == thread_budget(env=share_env(scale)).to_json()
    line = threads_report(_Execs({"api": inside, "trainer": inside}), scale)
    assert line == f"torch threads: api {inside['why']}; trainer {inside['why']}"
    alone = {**inside, "share": 1, "why": "2 threads: 2 cores available (...)"}
    with pytest.raises(StepFailed, match=r"service trainer, .*expected a share of 3 containers"):
        threads_report(_Execs({"api": inside, "trainer": alone}), scale)
    fixed = {**inside, "override": "SNOWFIRE_THREADS=8", "why": "8 threads: SNOWFIRE_THREADS=8"}
    with pytest.raises(StepFailed, match=r"service api, .*got 8 threads: SNOWFIRE_THREADS=8"):
        threads_report(_Execs({"api": fixed, "trainer": inside}), scale)
    assert list(differences({"threads": inside}, {"threads": alone})) == []  # as versions


class _PredictApi:
    """POST /v1/predict answering `labels` per run."""

    def __init__(self, labels: dict[str, list[str]]) -> None:
        self.labels, self.asked = labels, []

    def request(self, method, path, body=None):
        self.asked.append((method, path, body))
        runs = [
            {"run": r, "predictions": [{"label": x} for x in self.labels[r]]} for r in body["runs"]
        ]
        return 200, {"runs": runs}


def test_the_predict_step_holds_the_services_labels_to_snowfire_predicts(tmp_path):
    from scripts.compose_check.workload import PREDICT_TEXTS, Reference, predictions

    fake = tmp_path / "snowfire"  # `snowfire predict --run R --input F --out O`: label 1 each
    fake.write_text(
        '#!/bin/sh\nprintf "index\\tgold\\tpredicted\\n0\\t\\t1\\n1\\t\\t1\\n2\\t\\t0\\n" > "$7"\n'
    )
    fake.chmod(0o755)
    ref = Reference(str(fake), tmp_path / "data", tmp_path / "ref")
    ref.root.mkdir()
    jobs = {"train": {"id": "j1"}, "finetune": {"id": "j2"}}
    api = _PredictApi({"j1": ["1", "1", "0"], "j2": ["1", "1", "0"]})
    assert predictions(api, jobs, ref, str(fake)) == (
        'predict: {"j1": ["1", "1", "0"], "j2": ["1", "1", "0"]} = snowfire predict outside'
    )
    assert api.asked == [
        ("POST", "/v1/predict", {"runs": ["j1", "j2"], "texts": list(PREDICT_TEXTS)})
    ]
    api.labels["j2"] = ["0", "1", "0"]
    with pytest.raises(
        StepFailed, match=r"run j2: service \['0', '1', '0'\], snowfire predict \['1', '1', '0'\]"
    ):
        predictions(api, jobs, ref, str(fake))
