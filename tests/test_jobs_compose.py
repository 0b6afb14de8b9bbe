"""The compose stack as local processes: each service's command from docker-compose.yml, with
its environment, /data mapped to a temp dir, port 8000 to a free port and `snowfire` to this
checkout's executable. Jobs go through the REST API only: an extract job (tiny random BERT,
tiny sst2), a train job on the store it made, a fine-tune job; then everything stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from snowfire.jobs import free_port, stop_process, stop_processes, wait_healthy
from tests.helpers.compose import LOCAL_ENV, SERVICES, command, load_compose, local_command

pytestmark = pytest.mark.subprocess  # starts and kills real processes


class Stack:
    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.services = load_compose()["services"]
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        for name, service in self.services.items():
            env = {
                k: str(v).replace("/data", str(self.home))
                for k, v in service.get("environment", {}).items()
            }
            with (self.home / "logs" / f"{name}.log").open("wb") as log:
                self.procs[name] = subprocess.Popen(
                    local_command(command(service), self.home, self.port),
                    env={**os.environ, **env, **LOCAL_ENV},
                    cwd=self.home,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("/healthz")
                return
            except OSError:
                if time.monotonic() > deadline or self.procs["api"].poll() is not None:
                    raise AssertionError(self.logs("api")) from None
                time.sleep(0.3)

    def logs(self, name: str) -> str:
        return (self.home / "logs" / f"{name}.log").read_text(errors="replace")[-3000:]

    def get(self, path: str):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.loads(r.read())

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        req = urllib.request.Request(
            self.url + path, json.dumps(body).encode(), {"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def run_job(self, kind: str, params: dict, timeout: float = 300) -> dict:
        status, job = self.post("/v1/jobs", {"kind": kind, "params": params})
        assert status == 202, job
        deadline = time.monotonic() + timeout
        while job["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, f"{kind} job timed out: {job['log']}"
            time.sleep(0.5)
            job = self.get(f"/v1/jobs/{job['id']}?tail=40")
        assert job["status"] == "done", f"{job['error']}\n" + "\n".join(job["log"])
        return job

    def stop(self) -> dict[str, int | None]:
        stop_processes(self.procs.values(), grace=30)  # SIGTERM: what `docker compose stop` sends
        return {name: proc.returncode for name, proc in self.procs.items()}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, data_dir):
    home = tmp_path_factory.mktemp("compose") / "data"
    home.mkdir()
    (home / "tasks").symlink_to(data_dir)  # the default `data` of a job: HOME/tasks
    s = Stack(home)
    s.start()
    yield s
    s.stop()


def test_healthchecks_pass(stack):
    for name, service in stack.services.items():
        test = local_command(service["healthcheck"]["test"][1:], stack.home, stack.port)
        deadline = time.monotonic() + 60  # as Docker does, tried again until it passes: a
        while True:  # worker is healthy once it has beaten, which it does on start
            done = subprocess.run(test, capture_output=True, text=True, timeout=60)
            if done.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}\n{stack.logs(name)}"


def test_the_api_service_serves_the_page_and_embeds(stack):
    with urllib.request.urlopen(stack.url + "/", timeout=10) as r:
        page = r.read().decode()
    assert "<h2>Jobs</h2>" in page and "embed encoder" in page and "minilm" in page
    body = json.dumps({"texts": ["the dog runs"], "pool": "mean"}).encode()
    headers = {"content-type": "application/json", "accept": "application/json"}
    req = urllib.request.Request(stack.url + "/v1/embed", body, headers)
    with urllib.request.urlopen(req, timeout=60) as r:
        body = json.loads(r.read())
    assert body["cached"] == [False] and body["shape"] == [1, 7, 384]  # minilm, all layers


def test_extract_then_train_through_the_api(stack, tiny_bert_dir):
    encoder = f"hf:{tiny_bert_dir}"
    extract = stack.run_job("extract", {"encoder": encoder, "task": "sst2"})
    sets = {fs["split"]: fs for fs in extract["metrics"]["featuresets"]}
    assert sorted(sets) == ["dev", "train"]
    assert (sets["train"]["num_examples"], sets["dev"]["num_examples"]) == (120, 40)
    assert (sets["train"]["num_layers"], sets["train"]["dim"]) == (3, 32)  # embeddings + 2
    listed = {fs["id"] for fs in stack.get("/v1/featuresets")}
    assert {fs["id"] for fs in sets.values()} <= listed  # served from the same volume
    assert extract["log"] and extract["progress"] == 1.0

    train = stack.run_job(
        "train", {"encoder": encoder, "task": "sst2", "head": "linear", "epochs": 2}
    )
    run = stack.home / "runs" / train["id"]
    assert train["params"]["out"] == str(run)
    assert train["metrics"] == json.loads((run / "metrics.json").read_text())
    assert 0.0 <= train["metrics"]["dev"]["accuracy"] <= 1.0
    jobs = stack.get("/v1/jobs")
    assert [(j["id"], j["status"]) for j in jobs] == [
        (train["id"], "done"),
        (extract["id"], "done"),
    ]


def test_finetune_through_the_api(stack, tiny_bert_dir):
    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "task": "sst2",
        "epochs": 1,
        "batch_size": 16,
        "max_length": 32,
        "progress": False,
    }
    job = stack.run_job("finetune", params)
    run = Path(job["params"]["out"])
    assert run == stack.home / "runs" / job["id"]
    assert job["metrics"] == json.loads((run / "metrics.json").read_text())
    assert set(job["metrics"]) >= {"train", "dev"}


def test_a_key_set_for_compose_guards_job_submission(tmp_path):
    """SNOWFIRE_API_KEYS in compose's environment reaches the api: no key, no job."""
    key = "compose-check-key-0123"
    api = load_compose(env={"SNOWFIRE_API_KEYS": f"{key}:write"})["services"]["api"]
    env = {k: str(v).replace("/data", str(tmp_path)) for k, v in api["environment"].items()}
    port = free_port()
    with open(tmp_path / "api.log", "wb") as log:
        proc = subprocess.Popen(
            local_command(command(api), tmp_path, port),
            env={**os.environ, **env, **LOCAL_ENV},
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, tmp_path / "api.log")  # /healthz is open without a key
        body = json.dumps({"kind": "nope", "params": {}}).encode()
        for headers, want in (({}, 401), ({"authorization": f"Bearer {key}"}, 422)):
            req = urllib.request.Request(
                url + "/v1/jobs", body, {"content-type": "application/json", **headers}
            )
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(req, timeout=10)
            assert err.value.code == want  # 422: past the key, the kind is refused
    finally:
        stop_process(proc, grace=30)


def test_everything_stops_cleanly(stack):
    codes = stack.stop()
    # uvicorn shuts down gracefully, then re-raises the SIGTERM it caught (exit -15)
    assert codes.pop("api") in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in stack.logs("api")
    assert codes == {name: 0 for name in SERVICES if name != "api"}, {
        n: stack.logs(n) for n in codes
    }
    for name in codes:
        assert "stopped" in stack.logs(name)
