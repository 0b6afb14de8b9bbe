"""GET /v1/featuresets/{id}/layers (api/layers_routes.py): a sweep not computed yet is queued
as one `layers` job (202, the same job while it runs); once the job is done the answer is the
one `snowfire layers` gives for the same options, and a second request reads it from the
cache without training; the page draws it; the errors are the documented ones."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app
from snowfire.cli.main import main as snowfire
from snowfire.jobs import JOB_KINDS, Home, JobQueue
from tests.helpers.layers import planted

OPTIONS = {"seeds": 2, "epochs": 8}
SPEC = "tasks/planted/planted.json"  # the spec file, relative to HOME


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("home"))
    spec, _ = planted(home.tasks, 1, (("train", 240), ("dev", 120)), store_dir=home.store)
    return home, spec


@pytest.fixture
def client(home):
    with TestClient(create_app(settings=Settings(home=home[0].root))) as c:
        yield c


def _train_set(client) -> str:
    return next(fs["id"] for fs in client.get("/v1/featuresets").json() if fs["split"] == "train")


def _run(home: Home, job_id: str) -> dict:
    """What a layers worker does with the job, here in this process."""
    queue = JobQueue(home.queue)
    claim = queue.claim("layers", "test-worker", 60.0)
    assert claim is not None and claim.id == job_id
    result = JOB_KINDS["layers"].run(dict(claim.params))
    queue.finish(job_id, claim.lease, "done", metrics=result)
    return result


def test_a_sweep_is_queued_once_then_answered_as_the_cli_answers_then_read_from_cache(
    client, home, tmp_path, monkeypatch, capsys
):
    home, spec = home
    fs = _train_set(client)
    query = {"task_spec": SPEC, **OPTIONS}
    url = f"/v1/featuresets/{fs}/layers"
    first = client.get(url, params=query)
    assert first.status_code == 202, first.text
    body = first.json()
    job = body["job"]
    assert (body["status"], body["task"], body["featureset"], job["kind"]) == (
        "queued",
        "planted",
        fs,
        "layers",
    )
    assert first.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["params"]["out"] == str(home.layers / body["key"])
    assert (job["params"]["featureset"], job["params"]["seeds"]) == (fs, 2)
    again = client.get(url, params=query)
    assert again.status_code == 202 and again.json()["job"]["id"] == job["id"]  # one job a key
    assert len(client.get("/v1/jobs", params={"kind": "layers"}).json()) == 1

    summary = _run(home, job["id"])
    assert summary["out"] == job["params"]["out"] and summary["carrying"] == [1]
    done = client.get(url, params=query)
    assert done.status_code == 200, done.text
    answer = done.json()
    assert answer["status"] == "done" and answer["key"] == body["key"] and answer["job"] is None

    out = tmp_path / "cli"
    argv = ["layers", "--store", str(home.store), "--encoder", "planted", "--task-spec"]
    argv += [str(spec), "--out", str(out), "--seeds", "2", "--epochs", "8", "--quiet"]
    assert snowfire(argv) == 0
    capsys.readouterr()
    assert answer["result"] == json.loads((out / "layers.json").read_text())  # REST == CLI

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("snowfire.compare.layers.run._sweep", no_training)
    cached = client.get(url, params=query)
    assert cached.status_code == 200 and cached.json() == answer
    assert len(client.get("/v1/jobs", params={"kind": "layers"}).json()) == 1

    page = client.get("/").text
    assert "Which layer?" in page and answer["result"]["recommendation"] in page
    assert f'src="{answer["plot"]}"' in page
    png = client.get(answer["plot"])
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content[:4] == b"\x89PNG"
    assert client.get("/ui/layers/../layers.png").status_code == 404


def test_a_failed_sweep_is_409_until_retried(client, home):
    home, _ = home
    fs = _train_set(client)
    url = f"/v1/featuresets/{fs}/layers"
    query = {"task_spec": SPEC, "seeds": 1, "epochs": 1}
    job = client.get(url, params=query).json()["job"]
    queue = JobQueue(home.queue)
    claim = queue.claim("layers", "w", 60.0)
    queue.finish(job["id"], claim.lease, "failed", error="killed by the test")
    r = client.get(url, params=query)
    assert r.status_code == 409
    assert r.json()["detail"] == (
        f"the sweep's latest job {job['id']} failed: killed by the test; GET with retry=true "
        "to queue it again"
    )
    retried = client.get(url, params=query | {"retry": True})
    assert retried.status_code == 202 and retried.json()["job"]["id"] != job["id"]
    assert client.get(url, params=query).json()["job"]["id"] == retried.json()["job"]["id"]


@pytest.mark.parametrize(
    "query, status, detail",
    [
        ({}, 409, "params: give either 'task' (a registered task: "),
        ({"task": "nope"}, 422, "query.task: Input should be 'conll2003', "),
        ({"task_spec": SPEC, "seeds": 0}, 422, "query.seeds: Input should be greater than"),
        ({"task_spec": SPEC, "wat": 1}, 422, "query.wat: Extra inputs"),
        ({"task": "sst2"}, 404, "params: no train/dev split of sst2 in "),
        ({"task_spec": "/etc/x.json"}, 403, "params: path '/etc/x.json' is outside the data"),
    ],
)
def test_bad_queries_are_refused_with_their_status_and_reason(client, query, status, detail):
    """422 a query that breaks its schema; what fits it but not the sweep is 409 (params in
    conflict), 404 (task data missing) or 403 (a path outside HOME), as a submitted job's."""
    r = client.get(f"/v1/featuresets/{_train_set(client)}/layers", params=query)
    assert r.status_code == status, r.text
    assert r.json()["detail"].startswith(detail), r.json()["detail"]


def test_an_unknown_set_is_404_and_no_data_directory_503(client, home, tmp_path):
    r = client.get("/v1/featuresets/nope/layers", params={"task": "sst2"})
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    with TestClient(create_app(settings=Settings(store=home[0].store))) as bare:
        r = bare.get("/v1/featuresets/nope/layers", params={"task": "sst2"})
    assert r.status_code == 503 and "--home DIR" in r.json()["detail"]
